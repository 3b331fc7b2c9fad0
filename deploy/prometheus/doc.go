// Package prometheus holds evalbridge's Prometheus rules (rules.yaml) and
// their tests (rules_test.yaml, in the format of `promtool test rules`).
// Its Go test runs those tests through Prometheus' own rule engine and
// PromQL (github.com/prometheus/prometheus/rules, promql), so `go test`
// checks them without promtool.
package prometheus
