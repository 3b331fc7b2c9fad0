package evalmetricsconnector

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Scores from other producers that are not finite or absurdly large are
// counted as rejected, not recorded: the histogram's _sum stays the sum of
// the sane scores, and every result is still counted (§18).
func TestScoresRejected(t *testing.T) {
	h := newHarness(t, createDefaultConfig(), nil)
	ctx := context.Background()
	require.NoError(t, h.c.ConsumeLogs(ctx, resultLogs("1",
		result{name: "r", label: "pass", score: f(1e308), trace: 1},
		result{name: "r", label: "pass", score: f(math.NaN()), trace: 2},
		result{name: "r", label: "pass", score: f(math.Inf(1)), trace: 3},
		result{name: "r", label: "fail", score: f(math.Inf(-1)), trace: 4},
		result{name: "r", label: "fail", score: f(-2e6), trace: 5},
		result{name: "r", label: "pass", score: f(1e6), trace: 6}, // at the bound: recorded
		result{name: "r", label: "pass", score: f(0.5), trace: 7},
	)))
	require.NoError(t, h.c.Shutdown(ctx))

	var results int64
	for _, n := range counts(t, h.last(t, metricResults)) {
		results += n
	}
	require.Equal(t, int64(7), results, "every result is counted")
	dp := h.last(t, metricScore).Histogram().DataPoints().At(0)
	require.Equal(t, uint64(2), dp.Count())
	require.Equal(t, 1e6+0.5, dp.Sum())
	require.Equal(t, 0.5, dp.Min())
	require.Equal(t, 1e6, dp.Max())
	require.Equal(t, int64(3), h.sum(t, "otelcol_connector_evalmetrics_scores_rejected", "reason", reasonNotFinite))
	require.Equal(t, int64(2), h.sum(t, "otelcol_connector_evalmetrics_scores_rejected", "reason", reasonTooLarge))
}

// max_abs_score is configurable.
func TestMaxAbsScore(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxAbsScore = 10
	h := newHarness(t, cfg, nil)
	require.NoError(t, h.c.ConsumeLogs(context.Background(), resultLogs("1",
		result{name: "r", label: "pass", score: f(11), trace: 1},
		result{name: "r", label: "pass", score: f(-10), trace: 2})))
	require.NoError(t, h.c.Shutdown(context.Background()))
	dp := h.last(t, metricScore).Histogram().DataPoints().At(0)
	require.Equal(t, uint64(1), dp.Count())
	require.Equal(t, -10.0, dp.Sum())
	require.Equal(t, int64(1), h.sum(t, "otelcol_connector_evalmetrics_scores_rejected", "reason", reasonTooLarge))
}
