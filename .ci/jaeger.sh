#!/usr/bin/env bash
# Builds a real Jaeger v2 (the all-in-one program, v1.76.0 from the Go module
# proxy) for evalctl's --jaeger end-to-end test, and prints the binary's path.
# Jaeger's go.mod has replace directives, so `go install pkg@version` refuses
# it: it is built as a tool of a throwaway module outside the repository
# (the repository keeps one go.mod, docs/contract.md §1).
#   EVALBRIDGE_JAEGER_BIN=$(.ci/jaeger.sh) go test -run TestJaegerEndToEnd ./cmd/evalctl/
set -euo pipefail
version="${JAEGER_VERSION:-v1.76.0}"
out="${JAEGER_OUT:-${TMPDIR:-/tmp}/evalbridge-jaeger-$version/jaeger}"
if [ -x "$out" ]; then
  echo "$out"
  exit 0
fi
mod=$(mktemp -d)
trap 'rm -rf "$mod"' EXIT
(
  cd "$mod"
  go mod init evalbridge.local/jaegertool >/dev/null 2>&1
  go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$version" >/dev/null 2>&1
  mkdir -p "$(dirname "$out")"
  CGO_ENABLED=0 go build -trimpath -o "$out" github.com/jaegertracing/jaeger/cmd/jaeger
) >&2
echo "$out"
