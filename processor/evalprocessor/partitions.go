package evalprocessor

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/client"
)

// Kafka trace affinity (README "Fleets on Kafka"): the kafka receiver puts
// the topic and partition of every batch in its client metadata. A
// membership change that moves a partition while its traces are held splits
// them: the new owner gets only their remainders. A collector cannot see
// the revocation, but it can see that a trace began on a partition it has
// consumed for less than `wait`: such a trace may have had spans sent to the
// previous owner. partitionWatch counts those traces.
const (
	metadataKafkaPartition = "kafka.partition"
	metadataKafkaTopic     = "kafka.topic"
)

// partitionWatch remembers when this collector first and last saw each
// partition. The keys come from client metadata, which a receiver other
// than Kafka's may fill from request headers (`include_metadata`): an entry
// not seen for forgetAfter is forgotten (a partition consumed again after
// so long is a new assignment anyway), and at most maxPartitions are kept
// (beyond, a new key counts as new without being remembered).
type partitionWatch struct {
	mu        sync.Mutex
	seen      map[string]partitionSeen
	lastSweep time.Time
}

type partitionSeen struct{ first, last time.Time }

const (
	maxPartitions  = 4096
	minForgetAfter = 10 * time.Minute
)

func forgetAfter(window time.Duration) time.Duration { return max(10*window, minForgetAfter) }

// recent says whether the batch in ctx came from a Kafka partition first
// seen within window before now; false for batches not from Kafka.
func (w *partitionWatch) recent(ctx context.Context, now time.Time, window time.Duration) bool {
	md := client.FromContext(ctx).Metadata
	part := md.Get(metadataKafkaPartition)
	if len(part) == 0 {
		return false
	}
	key := part[0]
	if topic := md.Get(metadataKafkaTopic); len(topic) > 0 {
		key = topic[0] + "/" + key
	}
	forget := forgetAfter(window)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]partitionSeen{}
	}
	if since := now.Sub(w.lastSweep); since >= forget/2 || (len(w.seen) >= maxPartitions && since >= time.Second) {
		w.sweep(now, forget)
	}
	e, ok := w.seen[key]
	if !ok || now.Sub(e.last) >= forget {
		if len(w.seen) < maxPartitions {
			w.seen[key] = partitionSeen{first: now, last: now}
		}
		return true
	}
	e.last = now
	w.seen[key] = e
	return now.Sub(e.first) < window
}

func (w *partitionWatch) sweep(now time.Time, forget time.Duration) {
	w.lastSweep = now
	for k, e := range w.seen {
		if now.Sub(e.last) >= forget {
			delete(w.seen, k)
		}
	}
}

func (w *partitionWatch) size() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}
