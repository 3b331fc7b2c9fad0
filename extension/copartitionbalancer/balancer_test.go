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
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/evalbridge/evalbridge/internal/testkit"
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
		b := &balancer{collector: m.collector, held: map[string][]int32{}}
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
	var unpaired metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "otelcol_copartition_balancer_unpaired_partitions" {
				unpaired = m
			}
		}
	}
	require.Equal(t, int64(2), testkit.PointsSum(t, unpaired))
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

// realGroup runs collectors' traces and logs consumers (two franz-go group
// members per collector, as contrib's kafka receiver creates them) against an
// in-process Kafka and records what each is assigned.
type realGroup struct {
	t       *testing.T
	addrs   []string
	mu      sync.Mutex
	held    map[[2]string][]int32 // {collector, topic} => partitions
	clients []*kgo.Client
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func newRealGroup(t *testing.T, partitions int32) *realGroup {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "traces", "logs"))
	require.NoError(t, err)
	g := &realGroup{t: t, addrs: cluster.ListenAddrs(), held: map[[2]string][]int32{}}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() {
		g.cancel()
		for _, cl := range g.clients {
			cl.Close()
		}
		g.wg.Wait()
		cluster.Close()
	})
	return g
}

func (g *realGroup) join(collector string) {
	b := newTestBalancer(g.t, collector, nil)
	for _, topic := range []string{"traces", "logs"} {
		k := [2]string{collector, topic}
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(g.addrs...),
			kgo.ConsumerGroup("evalbridge"),
			kgo.ConsumeTopics(topic),
			kgo.Balancers(b),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				g.mu.Lock()
				g.held[k] = slices.Sorted(slices.Values(m[topic]))
				g.mu.Unlock()
			}),
			kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) {
				g.mu.Lock()
				delete(g.held, k)
				g.mu.Unlock()
			}),
		)
		require.NoError(g.t, err)
		g.clients = append(g.clients, cl)
		// Group management runs while the client polls.
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for g.ctx.Err() == nil {
				cl.PollFetches(g.ctx)
			}
		}()
	}
}

// settled waits until every partition of both topics is held by the
// members of collectors, and returns collector => partition numbers after
// checking that each collector holds the same numbers of both topics.
func (g *realGroup) settled(partitions int32, collectors ...string) map[string][]int32 {
	require.Eventually(g.t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		total := 0
		for _, ps := range g.held {
			total += len(ps)
		}
		return len(g.held) == 2*len(collectors) && total == 2*int(partitions)
	}, 30*time.Second, 50*time.Millisecond, "all partitions assigned to the %d members", 2*len(collectors))
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string][]int32{}
	for _, c := range collectors {
		traces, logs := g.held[[2]string{c, "traces"}], g.held[[2]string{c, "logs"}]
		require.Equal(g.t, traces, logs, "collector %s: same partitions of both topics (%v)", c, maps.Collect(maps.All(g.held)))
		out[c] = traces
	}
	return out
}

// TestWithARealGroup checks the assignment a real group converges to, and
// that a collector joining later takes partitions from the others without
// moving any between them.
func TestWithARealGroup(t *testing.T) {
	g := newRealGroup(t, 6)
	g.join("tier2-0")
	g.join("tier2-1")
	before := g.settled(6, "tier2-0", "tier2-1")
	require.Len(t, before["tier2-0"], 3)

	g.join("tier2-2")
	after := g.settled(6, "tier2-0", "tier2-1", "tier2-2")
	for _, c := range []string{"tier2-0", "tier2-1"} {
		require.Len(t, after[c], 2)
		require.Subset(t, before[c], after[c], "%s keeps part of what it held", c)
	}
	require.Len(t, after["tier2-2"], 2)
}

// assignment returns topic => partition => collector, checking that every
// partition of every topic went to exactly one member consuming it.
func assignment(t *testing.T, members []testMember, got []map[string][]int32, partitions map[string]int32) map[string]map[int32]string {
	t.Helper()
	owner := map[string]map[int32]string{}
	for i, m := range members {
		for topic, ps := range got[i] {
			require.Contains(t, m.topics, topic)
			for _, p := range ps {
				if owner[topic] == nil {
					owner[topic] = map[int32]string{}
				}
				_, dup := owner[topic][p]
				require.False(t, dup, "%s/%d assigned twice", topic, p)
				owner[topic][p] = m.collector
			}
		}
	}
	for topic, n := range partitions {
		require.Len(t, owner[topic], int(n), "every partition of %s assigned", topic)
	}
	return owner
}

// spread is max - min of the partitions of one topic per collector.
func spread(owner map[int32]string, collectors []string) (counts map[string]int, maxMinusMin int) {
	counts = map[string]int{}
	for _, c := range collectors {
		counts[c] = 0
	}
	for _, c := range owner {
		counts[c]++
	}
	lo, hi := -1, 0
	for _, n := range counts {
		hi = max(hi, n)
		if lo < 0 || n < lo {
			lo = n
		}
	}
	return counts, hi - lo
}

// Unequal partition counts where one is a multiple of the other: partition
// k of the larger topic holds only traces of partition k mod n of the
// smaller (tier 1 partitions by hash modulo the count), so it goes to the
// same collector; the smaller topic is spread evenly, the larger one by
// groups of larger/n. (Before: traces 6 / logs 24 over 4 put all six
// traces partitions on one collector; 6/12 over 3 split traces 0/2/4.)
func TestCoPartitionsMultiplePartitionCounts(t *testing.T) {
	for _, tc := range []struct {
		traces, logs int32
		collectors   []string
		// each topic's max - min partitions per collector: with 6/24 over 4
		// a collector with two traces partitions has eight logs ones, so
		// logs cannot be within 1 while staying co-partitioned.
		tracesSpread, logsSpread int
	}{
		{traces: 6, logs: 24, collectors: []string{"a", "b", "c", "d"}, tracesSpread: 1, logsSpread: 4},
		{traces: 6, logs: 12, collectors: []string{"a", "b", "c"}, tracesSpread: 0, logsSpread: 0},
		{traces: 24, logs: 6, collectors: []string{"a", "b", "c", "d"}, tracesSpread: 4, logsSpread: 1},
		{traces: 8, logs: 16, collectors: []string{"a", "b", "c", "d"}, tracesSpread: 0, logsSpread: 0},
	} {
		t.Run(fmt.Sprintf("%d_%d_over_%d", tc.traces, tc.logs, len(tc.collectors)), func(t *testing.T) {
			parts := map[string]int32{"traces": tc.traces, "logs": tc.logs}
			members := fleet(tc.collectors...)
			owner := assignment(t, members, balanceOnce(t, newTestBalancer(t, "a", nil), members, parts), parts)
			n := min(tc.traces, tc.logs)
			big := "logs"
			small := "traces"
			if tc.traces > tc.logs {
				big, small = "traces", "logs"
			}
			tc1, ts := spread(owner["traces"], tc.collectors)
			lc, ls := spread(owner["logs"], tc.collectors)
			t.Logf("traces per collector %v, logs per collector %v", tc1, lc)
			for k := range max(tc.traces, tc.logs) {
				require.Equal(t, owner[small][k%n], owner[big][k], "%s/%d goes with %s/%d", big, k, small, k%n)
			}
			require.Equal(t, tc.tracesSpread, ts, "traces spread")
			require.Equal(t, tc.logsSpread, ls, "logs spread")
		})
	}
}

// Counts that are not multiples: co-partitioning is impossible; the log says
// so once, and each topic is spread evenly on its own.
func TestNonMultiplePartitionCountsSpreadEvenlyAndSaySo(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	leader := newTestBalancer(t, "a", nil)
	leader.logger = zap.New(core)
	parts := map[string]int32{"traces": 5, "logs": 7}
	members := fleet("a", "b")
	for range 2 {
		owner := assignment(t, members, balanceOnce(t, leader, members, parts), parts)
		tc, ts := spread(owner["traces"], []string{"a", "b"})
		lc, ls := spread(owner["logs"], []string{"a", "b"})
		t.Logf("traces per collector %v, logs per collector %v", tc, lc)
		require.LessOrEqual(t, ts, 1)
		require.LessOrEqual(t, ls, 1)
	}
	errs := logs.FilterLevelExact(zapcore.ErrorLevel).FilterMessageSnippet("Co-partitioning is impossible").All()
	require.Len(t, errs, 1, "said once, not at every rebalance")
}
