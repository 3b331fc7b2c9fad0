package webhookexporter

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// window is the rolling period of max_alerts_per_minute.
const window = time.Minute

// digest summarises suppressed alerts: how many, and how many per evaluator.
type digest struct {
	count       int
	byEvaluator map[string]int
}

func (d *digest) add(alerts []Alert) {
	for _, a := range alerts {
		d.addN(a.Evaluator, 1)
	}
}

func (d *digest) addN(name string, n int) {
	if n == 0 {
		return
	}
	if d.byEvaluator == nil {
		d.byEvaluator = map[string]int{}
	}
	d.byEvaluator[name] += n
	d.count += n
}

func (d *digest) merge(o digest) {
	for name, n := range o.byEvaluator {
		d.addN(name, n)
	}
}

// String renders the digest as "a=3, b=1" (sorted by name).
func (d digest) String() string {
	names := make([]string, 0, len(d.byEvaluator))
	for n := range d.byEvaluator {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(d.byEvaluator[n]))
	}
	return b.String()
}

// limiter counts alerts per rolling minute. Alerts beyond the limit are not
// sent; they accumulate in pending and are folded into the next request that
// is allowed to send at least one alert.
//
// The push function runs under exporterhelper's retry, so a reservation is
// undone when the send fails: the tokens are given back and the suppressed
// counts that were folded into the failed request return to pending. A retry
// of the same data then decides afresh, so nothing is counted twice.
type limiter struct {
	max int // 0 = unlimited
	now func() time.Time

	mu      sync.Mutex
	sent    []time.Time // one entry per alert sent within the window, ascending
	pending digest      // suppressed, not yet reported
}

func newLimiter(maxPerMinute int, now func() time.Time) *limiter {
	return &limiter{max: maxPerMinute, now: now}
}

// reservation is one push's claim on the limiter.
type reservation struct {
	l       *limiter
	at      time.Time
	n       int    // tokens taken (alerts being sent)
	carried digest // pending taken from earlier pushes
	excess  digest // suppressed from this push
}

// folded is what the request carries as `suppressed`.
func (r *reservation) folded() digest {
	var d digest
	d.merge(r.carried)
	d.merge(r.excess)
	return d
}

// reserve splits alerts into those to send now and the excess. When nothing
// may be sent the excess goes straight to pending and send is empty (the
// reservation is then already settled).
func (l *limiter) reserve(alerts []Alert) (send []Alert, res *reservation, newlySuppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	res = &reservation{l: l, at: now}
	if l.max <= 0 {
		res.n = len(alerts)
		res.carried, l.pending = l.pending, digest{}
		return alerts, res, 0
	}
	cutoff := now.Add(-window)
	drop := 0
	for drop < len(l.sent) && !l.sent[drop].After(cutoff) {
		drop++
	}
	l.sent = l.sent[drop:]
	n := min(l.max-len(l.sent), len(alerts))
	n = max(n, 0)
	res.excess.add(alerts[n:])
	if n == 0 {
		l.pending.merge(res.excess)
		return nil, res, res.excess.count
	}
	for range n {
		l.sent = append(l.sent, now)
	}
	res.n = n
	res.carried, l.pending = l.pending, digest{}
	return alerts[:n], res, 0
}

// cancel undoes a reservation whose request failed. The tokens come back
// and the carried suppressed counts return to pending. With keepExcess
// (a permanent failure: the data will not be retried) this push's excess is
// added to pending too; otherwise a retry will suppress it again.
func (r *reservation) cancel(keepExcess bool) (kept int) {
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	for left, i := r.n, len(l.sent)-1; left > 0 && i >= 0; i-- {
		if l.sent[i].Equal(r.at) {
			l.sent = append(l.sent[:i], l.sent[i+1:]...)
			left--
		}
	}
	l.pending.merge(r.carried)
	if keepExcess {
		l.pending.merge(r.excess)
		return r.excess.count
	}
	return 0
}

// drain returns and clears the pending digest (at shutdown).
func (l *limiter) drain() digest {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.pending
	l.pending = digest{}
	return d
}
