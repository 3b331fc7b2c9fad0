package copartitionbalancer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/evalbridge/evalbridge/extension/copartitionbalancer/internal/metadata"
)

// ProtocolName is the group protocol every member advertises. Kafka picks a
// protocol all members support, so every collector of the group must list
// this extension in group_rebalance_strategies (a member without it makes
// the join fail with INCONSISTENT_GROUP_PROTOCOL rather than silently
// falling back to a non-co-partitioning strategy, unless a built-in strategy
// is listed after it in every member).
const ProtocolName = "evalbridge-copartition"

// userData is what each member puts in its join metadata: the collector it
// belongs to and the partition numbers it held, so that the leader keeps
// slots where they were (a moved slot splits the traces held for it).
type userData struct {
	V         int     `json:"v"`
	Collector string  `json:"collector"`
	Slots     []int32 `json:"slots,omitempty"`
}

// balancer is both the extension and the kgo.GroupBalancer the kafka receiver
// looks up by the extension's id.
type balancer struct {
	collector string
	// held is what this collector's members were last assigned, by topic.
	// franz-go clears the current assignment before an eager rejoin (it
	// passes an empty one to JoinGroupMetadata), so the balancer, shared by
	// the collector's members, remembers it from ParseSyncAssignment.
	mu   sync.Mutex
	held map[string][]int32

	logger   *zap.Logger
	told     string // the partition counts last explained in the log
	unpaired metric.Int64Counter
	attrs    metric.MeasurementOption
}

var (
	_ kgo.GroupBalancer           = (*balancer)(nil)
	_ kgo.ConsumerBalancerBalance = (*balancer)(nil)
)

func newBalancer(collector string, set component.TelemetrySettings, id component.ID) (*balancer, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	return &balancer{
		collector: collector,
		held:      map[string][]int32{},
		logger:    set.Logger,
		unpaired:  tb.CopartitionBalancerUnpairedPartitions,
		attrs:     metric.WithAttributeSet(attribute.NewSet(attribute.String("extension", id.String()))),
	}, nil
}

func (*balancer) Start(context.Context, component.Host) error { return nil }
func (*balancer) Shutdown(context.Context) error              { return nil }

func (*balancer) ProtocolName() string { return ProtocolName }

// IsCooperative is false: an eager rebalance revokes everything and the plan
// is recomputed; the plan itself is sticky, so partitions come back to the
// collector that held them.
func (*balancer) IsCooperative() bool { return false }

// JoinGroupMetadata is consumer metadata version 0 (no generation, no owned
// partitions: eager) with the collector id and its slots as user data.
func (b *balancer) JoinGroupMetadata(topics []string, current map[string][]int32, _ int32) []byte {
	var slots []int32
	for _, ps := range current {
		slots = append(slots, ps...)
	}
	b.mu.Lock()
	for _, t := range topics {
		slots = append(slots, b.held[t]...)
	}
	b.mu.Unlock()
	slices.Sort(slots)
	slots = slices.Compact(slots)
	ud, _ := json.Marshal(userData{V: 1, Collector: b.collector, Slots: slots}) // cannot fail: plain types
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 0
	meta.Topics = topics
	meta.UserData = ud
	return meta.AppendTo(nil)
}

func (b *balancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	m, err := kgo.ParseConsumerSyncAssignment(assignment)
	if err != nil {
		return nil, err
	}
	// An empty assignment leaves the last one in place: the member's topic is
	// not known here. At worst the collector then claims a partition number
	// it lost, and the leader gives a number claimed twice to one claimant.
	b.mu.Lock()
	for t, ps := range m {
		b.held[t] = slices.Sorted(slices.Values(ps))
	}
	b.mu.Unlock()
	return m, nil
}

func (b *balancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	if err != nil {
		return nil, nil, err
	}
	// Every member must speak this protocol's metadata; a member without a
	// collector id cannot be paired, so refuse to balance rather than guess.
	var errs error
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		if _, err := parseUserData(meta.UserData); err != nil {
			errs = errors.Join(errs, fmt.Errorf("member %s: %w", m.MemberID, err))
		}
	})
	if errs != nil {
		return nil, nil, errs
	}
	return cb, cb.MemberTopics(), nil
}

func parseUserData(raw []byte) (userData, error) {
	var ud userData
	if err := json.Unmarshal(raw, &ud); err != nil {
		return ud, fmt.Errorf("join metadata is not from %s: %w", ProtocolName, err)
	}
	if ud.V != 1 || ud.Collector == "" {
		return ud, fmt.Errorf("join metadata of %s version %d without a collector id", ProtocolName, ud.V)
	}
	return ud, nil
}

type member struct {
	id     string
	topics []string
}

type collectorInfo struct {
	id      string
	members []*member
	prior   map[int32]bool // slots its members held before this rebalance
	quota   int
	slots   int
}

// Balance is called on the group leader only: it deals partition numbers to
// collectors (sticky, exactly balanced), then gives each member the
// partitions of its collector's slots in the topics that member consumes.
func (b *balancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	byID := map[string]*collectorInfo{}
	joined := map[string]*kmsg.JoinGroupResponseMember{}
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		ud, _ := parseUserData(meta.UserData) // checked in MemberBalancer
		c := byID[ud.Collector]
		if c == nil {
			c = &collectorInfo{id: ud.Collector, prior: map[int32]bool{}}
			byID[ud.Collector] = c
		}
		c.members = append(c.members, &member{id: m.MemberID, topics: slices.Clone(meta.Topics)})
		for _, s := range ud.Slots {
			c.prior[s] = true
		}
		joined[m.MemberID] = m
	})
	owner := b.plan(byID, topics)
	plan := cb.NewPlan()
	unpaired := assignPartitions(byID, owner, topics, func(memberID, topic string, p int32) {
		plan.AddPartition(joined[memberID], topic, p)
	}, b.logger)
	if unpaired > 0 {
		b.unpaired.Add(context.Background(), int64(unpaired), b.attrs)
	}
	return plan
}

// ownerFunc names the collector that gets partition p of topic.
type ownerFunc func(topic string, p int32) string

// plan decides which collector gets each partition of each topic.
//
// Tier 1 keys a trace's spans and log records alike, and the partition is
// the key's hash modulo the topic's partition count. When the smallest
// count n divides every other count, partition k of any topic holds only
// traces of partition k mod n of the smallest one: the slots are the n
// partition numbers of the smallest topic, dealt evenly, and partition k
// of every topic goes with slot k mod n (equal counts are the case where
// k mod n = k). When n does not divide some count, a trace's records land
// in partition numbers that share no such rule: co-partitioning is
// impossible; each topic's partitions are then dealt evenly on their own
// and the log says why.
func (b *balancer) plan(byID map[string]*collectorInfo, topics map[string]int32) ownerFunc {
	var n int32
	for _, c := range topics {
		if c > 0 && (n == 0 || c < n) {
			n = c
		}
	}
	divides := true
	for _, c := range topics {
		divides = divides && (c == 0 || c%n == 0)
	}
	b.explain(topics, n, divides)
	if divides {
		owner := planSlots(byID, n)
		return func(_ string, p int32) string { return owner[p%n] }
	}
	owners := make(map[string][]string, len(topics))
	for t, c := range topics {
		owners[t] = planSlots(byID, c)
	}
	return func(t string, p int32) string { return owners[t][p] }
}

// explain logs, once per set of partition counts, how unequal counts are
// handled.
func (b *balancer) explain(topics map[string]int32, n int32, divides bool) {
	counts := map[int32]bool{}
	for _, c := range topics {
		counts[c] = true
	}
	if len(counts) < 2 {
		return
	}
	key := fmt.Sprint(topics) // fmt sorts map keys
	b.mu.Lock()
	told := b.told == key
	b.told = key
	b.mu.Unlock()
	if told {
		return
	}
	if divides {
		b.logger.Info("The consumed topics have different partition counts, each a multiple of the smallest: partition k of every topic goes to the collector of partition k mod n of the smallest topic, so a trace's spans and log records still meet",
			zap.Any("partitions", topics), zap.Int32("n", n))
		return
	}
	b.logger.Error("Co-partitioning is impossible: the consumed topics' partition counts are not multiples of the smallest, so a trace's spans and log records land on unrelated partition numbers and rarely meet on one collector. "+
		"Each topic's partitions are spread evenly on their own. Give the topics equal partition counts (or counts that are multiples of the smallest)",
		zap.Any("partitions", topics))
}

// planSlots returns, for every slot below nslots, the collector that gets
// it. Quotas are exact (the collectors that held the most slots get the
// extra ones); a slot stays with the collector that held it while that
// collector is under quota; the rest go by rendezvous hash, so a plan
// without history is stable too.
func planSlots(byID map[string]*collectorInfo, nslots int32) []string {
	cs := make([]*collectorInfo, 0, len(byID))
	for _, c := range byID {
		c.quota, c.slots = 0, 0
		cs = append(cs, c)
	}
	if len(cs) == 0 || nslots == 0 {
		return nil
	}
	sort.Slice(cs, func(i, j int) bool {
		if len(cs[i].prior) != len(cs[j].prior) {
			return len(cs[i].prior) > len(cs[j].prior)
		}
		return cs[i].id < cs[j].id
	})
	base, extra := int(nslots)/len(cs), int(nslots)%len(cs)
	for i, c := range cs {
		c.quota = base
		if i < extra {
			c.quota++
		}
	}
	owner := make([]string, nslots)
	for s := range nslots {
		// Two collectors may both claim a slot after a partial rebalance:
		// the first in the order above keeps it.
		for _, c := range cs {
			if c.prior[s] && c.slots < c.quota {
				owner[s] = c.id
				c.slots++
				break
			}
		}
	}
	for s := range nslots {
		if owner[s] != "" {
			continue
		}
		var best *collectorInfo
		var bestHash uint64
		for _, c := range cs {
			if c.slots >= c.quota {
				continue
			}
			if h := rendezvous(c.id, s); best == nil || h > bestHash {
				best, bestHash = c, h
			}
		}
		owner[s] = best.id // quotas add up to nslots, so someone is under quota
		best.slots++
	}
	return owner
}

func rendezvous(collector string, slot int32) uint64 {
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%s/%d", collector, slot)
	return h.Sum64()
}

// assignPartitions gives each partition of each topic to a member of the
// collector owning its slot that consumes the topic. It returns how many
// partitions could not be paired that way (and were given to another
// collector consuming the topic, so that nothing goes unconsumed).
func assignPartitions(byID map[string]*collectorInfo, ownerOf ownerFunc, topics map[string]int32,
	add func(memberID, topic string, p int32), logger *zap.Logger,
) int {
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)

	unpaired := 0
	for _, topic := range names {
		// consumers[collector] = its members consuming topic, in member id order.
		consumers := map[string][]string{}
		var anyConsumer []string
		for _, id := range ids {
			for _, m := range byID[id].members {
				if slices.Contains(m.topics, topic) {
					consumers[id] = append(consumers[id], m.id)
					anyConsumer = append(anyConsumer, m.id)
				}
			}
			slices.Sort(consumers[id])
			if n := len(consumers[id]); n > 1 {
				logger.Warn("Several members of one collector consume the same topic, so its partitions cannot be co-partitioned: give every collector its own collector_id",
					zap.String("collector_id", id), zap.String("topic", topic), zap.Int("members", n))
			}
		}
		if len(anyConsumer) == 0 {
			continue
		}
		next := map[string]int{}
		fallback := 0
		for p := range topics[topic] {
			owner := ownerOf(topic, p)
			ms := consumers[owner]
			if len(ms) == 0 {
				// The slot's collector does not consume this topic: keep the
				// partition consumed, but say so.
				add(anyConsumer[fallback%len(anyConsumer)], topic, p)
				fallback++
				unpaired++
				continue
			}
			if len(ms) > 1 {
				unpaired++
			}
			add(ms[next[owner]%len(ms)], topic, p)
			next[owner]++
		}
		if fallback > 0 {
			logger.Warn("Some partitions went to a collector that does not hold the same partition numbers of the other topics: a collector of the group does not consume this topic",
				zap.String("topic", topic), zap.Int("partitions", fallback))
		}
	}
	return unpaired
}
