// Package deploycheck holds the checks of the Kubernetes objects evalbridge
// ships (the Helm chart's rendered examples, the Operator resources). Its test
// is built only with -tags deploycheck, by .ci/deploy-check.sh, which renders
// the chart with helm first: k8s.io/api then stays out of `go test ./...`.
package deploycheck
