#!/usr/bin/env bash
# Checks that builder-config.yaml (the ocb manifest) and cmd/otelcol-evalbridge
# describe the same distribution:
#   1. ocb v0.165.0 generates components.go from builder-config.yaml into a temp
#      dir; its component factories (kind, import path) must equal those of
#      cmd/otelcol-evalbridge/components.go;
#   2. ocb's main registers internal/defaultconfig, so the ocb binary started
#      without --config runs the embedded default config (checked by running it
#      with OCB_COMPILE=1);
#   3. every module version in builder-config.yaml (and the otelcol/service
#      versions ocb pins) must equal the version in go.mod.
# With OCB_COMPILE=1 it also lets ocb fetch modules and compile the binary
# (about 2.5 minutes with a warm module cache; needs the module proxy).
# Exit 0 when in step, 1 with a diff otherwise.
set -euo pipefail

OCB_VERSION=v0.165.0
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- install ocb (cached in OCB_BIN_DIR between runs) -------------------------
bindir=${OCB_BIN_DIR:-${TMPDIR:-/tmp}/evalbridge-ocb-$OCB_VERSION}
if ! "$bindir/builder" version 2>/dev/null | grep -q "$OCB_VERSION"; then
  mkdir -p "$bindir"
  GOBIN="$bindir" GOFLAGS= go install "go.opentelemetry.io/collector/cmd/builder@$OCB_VERSION"
fi

# --- generate the distribution from the manifest into a temp dir --------------
manifest="$tmp/builder-config.yaml"
sed -e "s#^\([[:space:]]*output_path:\).*#\1 $tmp/dist#" \
    -e "s#^\([[:space:]]*path:\)[[:space:]]*\./\{0,1\}[[:space:]]*\$#\1 $root#" \
    builder-config.yaml >"$manifest"
flags=(--skip-compilation --skip-get-modules)
if [[ "${OCB_COMPILE:-0}" == 1 ]]; then flags=(); fi
if ! "$bindir/builder" --config "$manifest" "${flags[@]}" >"$tmp/ocb.log" 2>&1; then
  cat "$tmp/ocb.log" >&2
  echo "check-builder: ocb failed on builder-config.yaml" >&2
  exit 1
fi

fail=0

# --- 1. the component sets -----------------------------------------------------
# Prints "<kind> <import path>" for every factory a components.go registers.
factories() {
  awk '
    # import lines:  alias "path"
    /^[[:space:]]*[A-Za-z0-9_]+[[:space:]]+"[^"]+"[[:space:]]*$/ {
      gsub(/"/, "", $2); imp[$1] = $2
    }
    /Telemetry:[[:space:]]*[A-Za-z0-9_]+\.NewFactory\(\)/ {
      s = $0; sub(/^[[:space:]]*Telemetry:[[:space:]]*/, "", s); sub(/\..*/, "", s)
      print "telemetry " imp[s]
    }
    /factories\.(Extensions|Receivers|Exporters|Processors|Connectors), err =/ {
      kind = $1; sub(/^factories\./, "", kind); sub(/,$/, "", kind); next
    }
    kind != "" && /^[[:space:]]*\)/ { kind = ""; next }
    kind != "" && /^[[:space:]]*[A-Za-z0-9_]+\.NewFactory\(\),[[:space:]]*$/ {
      s = $1; sub(/\..*/, "", s)
      print tolower(kind) " " (s in imp ? imp[s] : "?" s)
    }
  ' "$1" | sort
}
factories "$tmp/dist/components.go" >"$tmp/want"
factories cmd/otelcol-evalbridge/components.go >"$tmp/got"
if [[ ! -s "$tmp/want" ]]; then
  echo "check-builder: found no factories in ocb's components.go" >&2
  exit 1
fi
if ! diff -u --label "builder-config.yaml (ocb)" --label "cmd/otelcol-evalbridge/components.go" "$tmp/want" "$tmp/got"; then
  echo "check-builder: the component sets differ (above: - only in the manifest, + only in components.go)" >&2
  fail=1
fi

# --- the default config: ocb's main registers internal/defaultconfig's provider,
# which gives a start with no --config the embedded default (as go run does).
if ! grep -q 'defaultconfig.NewFactory()' "$tmp/dist/main.go"; then
  echo "check-builder: ocb's main.go does not register internal/defaultconfig (the default config)" >&2
  fail=1
fi
if [[ "${OCB_COMPILE:-0}" == 1 ]]; then
  # The compiled binary, started with no flags, runs the embedded default.
  "$tmp/dist/otelcol-evalbridge" >"$tmp/run.log" 2>&1 &
  pid=$!
  for _ in $(seq 60); do
    grep -q 'Everything is ready' "$tmp/run.log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if ! grep -q 'starting on the embedded default config' "$tmp/run.log" || ! grep -q 'Everything is ready' "$tmp/run.log"; then
    cat "$tmp/run.log" >&2
    echo "check-builder: the ocb binary did not start on the embedded default config" >&2
    fail=1
  fi
fi

# --- 2. module versions ---------------------------------------------------------
self=$(go list -m)
{
  # gomod: <module> <version> entries of the manifest
  sed -n 's/^[[:space:]]*-\{0,1\}[[:space:]]*gomod:[[:space:]]*\([^[:space:]]*\)[[:space:]]\{1,\}\([^[:space:]#]*\).*/\1 \2/p' builder-config.yaml
  # what ocb pins by itself: otelcol and the telemetry module
  echo "go.opentelemetry.io/collector/otelcol $OCB_VERSION"
  echo "go.opentelemetry.io/collector/service $OCB_VERSION"
} | sort -u >"$tmp/mods"
while read -r mod ver; do
  [[ "$mod" == "$self" ]] && continue # the local module, replaced by path
  have=$(go list -m -f '{{.Version}}' "$mod" 2>/dev/null || true)
  if [[ -z "$have" ]]; then
    echo "check-builder: $mod $ver is in builder-config.yaml but not in go.mod" >&2
    fail=1
  elif [[ "$have" != "$ver" ]]; then
    echo "check-builder: $mod: builder-config.yaml has $ver, go.mod has $have" >&2
    fail=1
  fi
done <"$tmp/mods"

if [[ $fail == 0 ]]; then
  echo "check-builder: ok ($(wc -l <"$tmp/got") factories, $(grep -vc "^$self " "$tmp/mods") module versions match go.mod)"
fi
exit $fail
