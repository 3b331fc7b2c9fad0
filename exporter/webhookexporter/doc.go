// Package webhookexporter implements the `webhook` exporter: it picks the
// failed evaluations (`eval.failed` and the per-evaluator `eval.<name>.*`
// attributes written by the eval processor) out of the traces it receives and
// POSTs them as alerts to an HTTP endpoint (docs/contract.md §9), signed with
// an HMAC when a secret is configured and rate limited per rolling minute.
// Its monitors (docs/contract.md §13) alert on an evaluator's pass rate or
// mean score over a sliding window per group; their notifications go through
// the same sending queue (see docs/monitors.md).
package webhookexporter // import "github.com/evalbridge/evalbridge/exporter/webhookexporter"
