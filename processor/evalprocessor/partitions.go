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

// partitionWatch remembers when this collector first saw each partition.
// Its size is the number of partitions it ever consumed.
type partitionWatch struct {
	mu    sync.Mutex
	first map[string]time.Time
}

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
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.first == nil {
		w.first = map[string]time.Time{}
	}
	t, ok := w.first[key]
	if !ok {
		w.first[key] = now
		return true
	}
	return now.Sub(t) < window
}
