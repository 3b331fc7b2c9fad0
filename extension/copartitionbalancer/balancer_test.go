package copartitionbalancer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
)

// testMember is one consumer of the group: a collector's traces or logs receiver.
type testMember struct {
	collector string
	topics    []string
	held      map[string][]int32 // what it was assigned last time
}

func newTestBalancer(t *testing.T, collector string, reader sdkmetric.Reader) *balancer {
	t.Helper()
	set := componenttest.NewNopTelemetrySettings()
	if reader != nil {
		set.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	}
	set.Logger = zap.NewNop()
	b, err := newBalancer(collector, set, component.MustNewID("copartition_balancer"))
	require.NoError(t, err)
	return b
}

// balanceOnce runs what the group leader runs, with every member's join
// metadata built by that member's own balancer, and returns member index =>
// topic => partitions.
func balanceOnce(t *testing.T, leader *balancer, members []testMember, partitions map[string]int32) []map[string][]int32 {
	t.Helper()
	joined := make([]kmsg.JoinGroupResponseMember, len(members))
	for i, m := range members {
		joined[i] = kmsg.NewJoinGroupResponseMember()
		joined[i].MemberID = fmt.Sprintf("member-%02d", i)
		b := &balancer{collector: m.collector}
		joined[i].ProtocolMetadata = b.JoinGroupMetadata(m.topics, m.held, 1)
	}
	mb, topics, err := leader.MemberBalancer(joined)
	require.NoError(t, err)
	for topic := range topics {
		require.Contains(t, partitions, topic)
	}
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(partitions)
	require.NoError(t, err)
	out := make([]map[string][]int32, len(members))
	for _, a := range into.IntoSyncAssignment() {
		var idx int
		_, err := fmt.Sscanf(a.MemberID, "member-%02d", &idx)
		require.NoError(t, err)
		got, err := leader.ParseSyncAssignment(a.MemberAssignment)
		require.NoError(t, err)
		out[idx] = got
	}
	return out
}

// fleet is n collectors, each with a traces and a logs consumer.
func fleet(ids ...string) []testMember {
	var ms []testMember
	for _, id := range ids {
		ms = append(ms, testMember{collector: id, topics: []string{"traces"}}, testMember{collector: id, topics: []string{"logs"}})
	}
	return ms
}

// slotsOf returns collector => partition numbers it got, checking on the way
// that every partition of every topic went to exactly one member and that
// each partition number of traces and logs went to the same collector.
func slotsOf(t *testing.T, members []testMember, got []map[string][]int32, partitions map[string]int32) map[string][]int32 {
	t.Helper()
	owner := map[string]map[int32]string{} // topic => partition => collector
	for i, m := range members {
		for topic, ps := range got[i] {
			require.Contains(t, m.topics, topic, "member %d got a topic it does not consume", i)
			for _, p := range ps {
				if owner[topic] == nil {
					owner[topic] = map[int32]string{}
				}
				prev, dup := owner[topic][p]
				require.False(t, dup, "%s/%d assigned twice (%s and %s)", topic, p, prev, m.collector)
				owner[topic][p] = m.collector
			}
		}
	}
	slots := map[string][]int32{}
	for topic, n := range partitions {
		require.Len(t, owner[topic], int(n), "every partition of %s assigned", topic)
	}
	for p := range partitions["traces"] {
		require.Equal(t, owner["traces"][p], owner["logs"][p], "partition %d of traces and logs on different collectors", p)
		c := owner["traces"][p]
		slots[c] = append(slots[c], p)
	}
	return slots
}

func TestCoPartitionsTracesAndLogs(t *testing.T) {
	parts := map[string]int32{"traces": 12, "logs": 12}
	members := fleet("tier2-b", "tier2-a", "tier2-c")
	got := balanceOnce(t, newTestBalancer(t, "tier2-a", nil), members, parts)
	slots := slotsOf(t, members, got, parts)
	require.Len(t, slots, 3)
	for c, s := range slots {
		require.Len(t, s, 4, "collector %s: exact balance", c)
	}
}

func TestStickyAcrossMembershipChanges(t *testing.T) {
	parts := map[string]int32{"traces": 10, "logs": 10}
	leader := newTestBalancer(t, "x", nil)
	members := fleet("a", "b", "c")
	slots := slotsOf(t, members, balanceOnce(t, leader, members, parts), parts)
	holdAll := func(ms []testMember, slots map[string][]int32) {
		for i := range ms {
			ms[i].held = map[string][]int32{ms[i].topics[0]: slots[ms[i].collector]}
		}
	}

	// c leaves: a and b keep all they had and share c's slots.
	two := fleet("a", "b")
	holdAll(two, slots)
	after := slotsOf(t, two, balanceOnce(t, leader, two, parts), parts)
	for _, c := range []string{"a", "b"} {
		require.Subset(t, after[c], slots[c], "%s keeps its slots", c)
		require.Len(t, after[c], 5)
	}

	// c comes back empty-handed (its consumers restarted): only as many slots
	// move as c needs, and the slots a and b keep are theirs from before.
	three := fleet("a", "b", "c")
	holdAll(three, after)
	three[4].held, three[5].held = nil, nil
	again := slotsOf(t, three, balanceOnce(t, leader, three, parts), parts)
	moved := 0
	for _, c := range []string{"a", "b"} {
		require.Subset(t, after[c], again[c])
		moved += len(after[c]) - len(again[c])
	}
	require.Equal(t, len(again["c"]), moved)
	require.Len(t, again["c"], 3) // 10 = 4 + 3 + 3; the extra goes to a collector that held most
}

func TestPlanWithoutHistoryIsDeterministic(t *testing.T) {
	parts := map[string]int32{"traces": 16, "logs": 16}
	leader := newTestBalancer(t, "x", nil)
	members := fleet("a", "b", "c", "d")
	first := slotsOf(t, members, balanceOnce(t, leader, members, parts), parts)
	slices.Reverse(members) // join order does not matter
	second := slotsOf(t, members, balanceOnce(t, leader, members, parts), parts)
	require.Equal(t, first, second)
}

func TestCollectorWithoutLogsConsumerIsCountedUnpaired(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	leader := newTestBalancer(t, "a", reader)
	parts := map[string]int32{"traces": 4, "logs": 4}
	members := []testMember{
		{collector: "a", topics: []string{"traces"}},
		{collector: "a", topics: []string{"logs"}},
		{collector: "b", topics: []string{"traces"}}, // b runs no logs pipeline
	}
	got := balanceOnce(t, leader, members, parts)
	var traces, logs int
	for i, m := range members {
		traces += len(got[i]["traces"])
		logs += len(got[i]["logs"])
		if m.collector == "b" {
			require.Empty(t, got[i]["logs"])
		}
	}
	require.Equal(t, 4, traces)
	require.Equal(t, 4, logs, "b's logs partitions still get consumed, by a")

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	require.Equal(t, int64(2), sumCounter(t, rm, "otelcol_copartition_balancer_unpaired_partitions"))
}

func TestForeignMemberMetadataIsRefused(t *testing.T) {
	leader := newTestBalancer(t, "a", nil)
	foreign := kmsg.NewJoinGroupResponseMember()
	foreign.MemberID = "m1"
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"traces"}
	foreign.ProtocolMetadata = meta.AppendTo(nil) // no user data: not one of ours
	_, _, err := leader.MemberBalancer([]kmsg.JoinGroupResponseMember{foreign})
	require.ErrorContains(t, err, "member m1")
}

func TestConfig(t *testing.T) {
	require.NoError(t, (&Config{CollectorID: "tier2-0"}).Validate())
	require.Error(t, (&Config{CollectorID: " tier2-0"}).Validate())
	id, err := (&Config{}).collectorID()
	require.NoError(t, err)
	require.NotEmpty(t, id, "the host name by default")

	ext, err := NewFactory().Create(context.Background(),
		extensionSettings(), &Config{CollectorID: "tier2-0"})
	require.NoError(t, err)
	_, ok := ext.(kgo.GroupBalancer)
	require.True(t, ok, "the kafka receiver looks the extension up as a kgo.GroupBalancer")
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, ext.Shutdown(context.Background()))
}

// TestWithARealGroup runs two collectors' traces and logs consumers (four
// franz-go group members, as contrib's kafka receiver creates them) against
// an in-process Kafka and checks the assignment the group converges to.
func TestWithARealGroup(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, "traces", "logs"))
	require.NoError(t, err)
	defer cluster.Close()

	type key struct{ collector, topic string }
	var mu sync.Mutex
	assigned := map[key][]int32{}
	var clients []*kgo.Client
	for _, c := range []string{"tier2-0", "tier2-1"} {
		b := newTestBalancer(t, c, nil)
		for _, topic := range []string{"traces", "logs"} {
			k := key{c, topic}
			cl, err := kgo.NewClient(
				kgo.SeedBrokers(cluster.ListenAddrs()...),
				kgo.ConsumerGroup("evalbridge"),
				kgo.ConsumeTopics(topic),
				kgo.Balancers(b),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
					mu.Lock()
					assigned[k] = slices.Sorted(slices.Values(m[topic]))
					mu.Unlock()
				}),
				kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) {
					mu.Lock()
					delete(assigned, k)
					mu.Unlock()
				}),
			)
			require.NoError(t, err)
			clients = append(clients, cl)
		}
	}
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	// Group management runs while the clients poll.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
	}
	defer wg.Wait()
	defer cancel()

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		total := 0
		for _, ps := range assigned {
			total += len(ps)
		}
		return len(assigned) == 4 && total == 12
	}, 30*time.Second, 50*time.Millisecond, "all 12 partitions assigned to the 4 members")
	mu.Lock()
	defer mu.Unlock()
	for _, c := range []string{"tier2-0", "tier2-1"} {
		require.Equal(t, assigned[key{c, "traces"}], assigned[key{c, "logs"}], "collector %s: same partitions of both topics (%v)", c, maps.Collect(maps.All(assigned)))
		require.Len(t, assigned[key{c, "traces"}], 3)
	}
}
