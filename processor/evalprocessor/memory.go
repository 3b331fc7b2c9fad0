package evalprocessor

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// traceState is what the processor knows of a trace id: nothing (absent),
// held, or released at the time bucket it names (any value >= stateDone).
type traceState uint32

const (
	stateUnknown traceState = iota
	// stateHeld: the trace's spans are being held.
	stateHeld
	// stateDone and above: the trace was released (scored, or forwarded
	// unscored); further spans are late. The value tags the bucket that
	// remembers the id, so a bucket that expires removes only its own ids.
	stateDone
)

func (s traceState) done() bool { return s >= stateDone }

const (
	// decisionMargin is added to `wait` + `timeout` to give how long a
	// released trace id is remembered: spans arriving within that time after
	// the release are late (forwarded as they are), not a new trace.
	decisionMargin = time.Minute
	// decisionBuckets is how many time buckets the retention is cut into:
	// an id is forgotten between retention and retention + retention/8
	// after its release.
	decisionBuckets = 8
	// maxRememberedIDs is the hard cap on released ids remembered (about 40
	// bytes each: 16-byte id and 4-byte tag in the map, 16 bytes in its
	// bucket, so ~40 MiB at the cap). Beyond it the oldest bucket is
	// forgotten early, counted in otelcol_processor_eval_decisions_forgotten.
	maxRememberedIDs = 1 << 20
)

// doneBucket holds the ids released within one time slice.
type doneBucket struct {
	start time.Time
	tag   traceState
	ids   []pcommon.TraceID
}

// decisions remembers released trace ids by time. It lives in the held
// set's dir map (one lookup per run of items in a consume call); the
// buckets only say when each id is forgotten. Only the loop writes it, under
// heldSet.dirMu.
type decisions struct {
	retention time.Duration
	width     time.Duration
	maxIDs    int
	buckets   []*doneBucket // oldest first
	nextTag   traceState
	total     int
	spare     []pcommon.TraceID // ids slice of an expired bucket, reused
}

func newDecisions(wait, timeout time.Duration, maxIDs int) *decisions {
	r := wait + timeout + decisionMargin
	return &decisions{retention: r, width: max(r/decisionBuckets, time.Millisecond), maxIDs: maxIDs, nextTag: stateDone}
}

// markDone records id as released at now. dir must be locked for writing.
// It returns how many ids had to be forgotten early (the cap).
func (d *decisions) markDone(dir map[pcommon.TraceID]traceState, id pcommon.TraceID, now time.Time) (forgotten int) {
	for d.total >= d.maxIDs && len(d.buckets) > 0 {
		forgotten += d.dropOldest(dir)
	}
	var b *doneBucket
	if n := len(d.buckets); n > 0 && now.Before(d.buckets[n-1].start.Add(d.width)) {
		b = d.buckets[n-1]
	} else {
		b = &doneBucket{start: now, tag: d.nextTag, ids: d.spare[:0]}
		d.spare = nil
		d.nextTag++
		if d.nextTag < stateDone { // wrapped (after 4 billion buckets)
			d.nextTag = stateDone
		}
		d.buckets = append(d.buckets, b)
	}
	dir[id] = b.tag
	b.ids = append(b.ids, id)
	d.total++
	return forgotten
}

// current says whether markDone at now would put an id into the bucket
// tagged tag, where it is already: the newest, still open at now.
func (d *decisions) current(tag traceState, now time.Time) bool {
	n := len(d.buckets)
	return n > 0 && d.buckets[n-1].tag == tag && now.Before(d.buckets[n-1].start.Add(d.width))
}

// expire forgets the buckets whose retention has passed at now.
func (d *decisions) expire(dir map[pcommon.TraceID]traceState, now time.Time) {
	for len(d.buckets) > 0 && !now.Before(d.buckets[0].start.Add(d.retention+d.width)) {
		d.dropOldest(dir)
	}
}

// needsExpiry tells, without the lock, whether expire has work to do.
func (d *decisions) needsExpiry(now time.Time) bool {
	return len(d.buckets) > 0 && !now.Before(d.buckets[0].start.Add(d.retention+d.width))
}

func (d *decisions) dropOldest(dir map[pcommon.TraceID]traceState) int {
	b := d.buckets[0]
	d.buckets[0] = nil
	d.buckets = d.buckets[1:]
	for _, id := range b.ids {
		// Only if no later release re-tagged it (a trace held again after
		// it was forgotten, or one whose id was reused).
		if dir[id] == b.tag {
			delete(dir, id)
		}
	}
	d.total -= len(b.ids)
	if cap(b.ids) <= 1<<16 {
		clear(b.ids)
		d.spare = b.ids[:0]
	}
	return len(b.ids)
}
