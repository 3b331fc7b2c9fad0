package judge

import (
	"sync"
	"time"
)

const minutesPerDay = 24 * 60

// budget counts tokens in one-minute slots over the last day, so the hourly
// and daily sums roll: tokens spent 61 minutes ago no longer count against
// the hour. No goroutine: slots are reset lazily when reused.
type budget struct {
	mu sync.Mutex
	// what is counted, naming the windows: "tokens" (the default) or
	// "cost" (in nano units of the price's currency, see nanos).
	what    string
	perHour int64
	perDay  int64
	slots   [minutesPerDay]int64
	minute  [minutesPerDay]int64 // the minute (unix/60) a slot holds
}

func (b *budget) enabled() bool { return b.perHour > 0 || b.perDay > 0 }

// window names a window as in the config: tokens_per_hour, cost_per_day …
func (b *budget) window(w string) string {
	if b.what == "" {
		return "tokens_per_" + w
	}
	return b.what + "_per_" + w
}

func (b *budget) addLocked(now time.Time, n int64) {
	m := now.Unix() / 60
	i := m % minutesPerDay
	if b.minute[i] != m {
		b.minute[i], b.slots[i] = m, 0
	}
	b.slots[i] += n
}

func (b *budget) sumLocked(now time.Time, minutes int64) int64 {
	m := now.Unix() / 60
	var s int64
	for k := int64(0); k < minutes; k++ {
		mm := m - k
		i := mm % minutesPerDay
		if b.minute[i] == mm {
			s += b.slots[i]
		}
	}
	return s
}

// reserve books n tokens when they fit in both windows. When they do not, it
// returns the window that is spent, its limit and what it has used.
func (b *budget) reserve(now time.Time, n int64) (ok bool, window string, used, limit int64) {
	if !b.enabled() {
		return true, "", 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.perHour > 0 {
		if u := b.sumLocked(now, 60); u+n > b.perHour {
			return false, b.window("hour"), u, b.perHour
		}
	}
	if b.perDay > 0 {
		if u := b.sumLocked(now, minutesPerDay); u+n > b.perDay {
			return false, b.window("day"), u, b.perDay
		}
	}
	b.addLocked(now, n)
	return true, "", 0, 0
}

// adjust corrects a reservation by delta tokens (negative to refund).
func (b *budget) adjust(now time.Time, delta int64) {
	if !b.enabled() || delta == 0 {
		return
	}
	b.mu.Lock()
	b.addLocked(now, delta)
	b.mu.Unlock()
}

// remaining returns what is left in each window (-1 when unlimited).
func (b *budget) remaining(now time.Time) (hour, day int64) {
	hour, day = -1, -1
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.perHour > 0 {
		hour = max(0, b.perHour-b.sumLocked(now, 60))
	}
	if b.perDay > 0 {
		day = max(0, b.perDay-b.sumLocked(now, minutesPerDay))
	}
	return hour, day
}
