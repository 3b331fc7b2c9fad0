package webhookexporter

import "time"

// windowBuckets is the number of buckets a monitor's window is cut into: the
// window slides by window/windowBuckets, so the figure covers between
// (1 - 1/windowBuckets) and 1 times the window.
const windowBuckets = 60

// bucket holds the cases of one slice of a window. Counts, not cases: the
// memory of a group does not grow with its traffic.
type bucket struct {
	epoch    int64 // slice number (unix nanos / width) this bucket holds
	cases    uint32
	failed   uint32
	scored   uint32
	scoreSum float64
	scoreSq  float64 // sum of squared scores (the interval of the mean)
}

// slidingWindow is a ring of buckets; a bucket whose epoch is not one of the
// last windowBuckets slices is stale and counts as empty.
type slidingWindow struct {
	buckets [windowBuckets]bucket
}

// windowTotals is what a window holds at one instant.
type windowTotals struct {
	cases, failed, scored int
	scoreSum, scoreSq     float64
}

func (t windowTotals) passRate() float64 {
	if t.cases == 0 {
		return 0
	}
	return float64(t.cases-t.failed) / float64(t.cases)
}

// meanScore is nil when no case carried a score.
func (t windowTotals) meanScore() *float64 {
	if t.scored == 0 {
		return nil
	}
	m := t.scoreSum / float64(t.scored)
	return &m
}

func epochOf(t time.Time, width time.Duration) int64 {
	return t.UnixNano() / int64(width)
}

// add counts one case at t.
func (w *slidingWindow) add(t time.Time, width time.Duration, failed bool, score float64, hasScore bool) {
	e := epochOf(t, width)
	b := &w.buckets[uint64(e)%windowBuckets]
	if b.epoch != e {
		*b = bucket{epoch: e}
	}
	b.cases++
	if failed {
		b.failed++
	}
	if hasScore {
		b.scored++
		b.scoreSum += score
		b.scoreSq += score * score
	}
}

// totals sums the buckets of the windowBuckets slices ending with now's.
func (w *slidingWindow) totals(now time.Time, width time.Duration) windowTotals {
	cur := epochOf(now, width)
	var t windowTotals
	for i := range w.buckets {
		b := &w.buckets[i]
		if b.cases == 0 || b.epoch > cur || b.epoch <= cur-windowBuckets {
			continue
		}
		t.cases += int(b.cases)
		t.failed += int(b.failed)
		t.scored += int(b.scored)
		t.scoreSum += b.scoreSum
		t.scoreSq += b.scoreSq
	}
	return t
}
