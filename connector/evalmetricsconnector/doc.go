// Package evalmetricsconnector implements the `evalmetrics` connector
// (docs/contract.md §18): it turns `gen_ai.evaluation.result` log records
// (logs → metrics) and span events (traces → metrics), from evalbridge's
// `eval` processor or any other producer, into two cumulative metrics: the
// counter gen_ai.evaluation.results and the histogram
// gen_ai.evaluation.score, with configurable dimensions, a series cap with
// an overflow series, and exemplars that link a score to its trace.
package evalmetricsconnector // import "github.com/evalbridge/evalbridge/connector/evalmetricsconnector"
