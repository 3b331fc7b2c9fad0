#!/usr/bin/env bash
# Checks what evalbridge ships for deployment (contract §22, docs/deploy.md):
#   1. the image: deploy/image/build.sh writes the OCI layout tarball; a test reads
#      it back (config, labels, files), runs the binary from its layer on the image's
#      default config and waits for health_check; the Dockerfile states the same;
#   2. the Helm chart: helm lint and helm template for the defaults and every
#      example values file (and the PrometheusRule), each object decoded strictly into
#      its Kubernetes API type, each collector config validated by the binary; the
#      chart packaged with the version; the Operator resources and the upstream
#      chart's values likewise;
#   3. the GoReleaser snapshot (linux/amd64 only): archives, checksums, SBOM, deb and
#      rpm inspected (file list, unit file, the packaged binary runs --version).
# Tools (helm, goreleaser, cyclonedx-gomod) are Go programs, installed once into
# EVALBRIDGE_TOOLS_DIR (default /tmp/evalbridge-tools) with `go install`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"

HELM_VERSION=v3.22.0
GORELEASER_VERSION=v2.15.1 # v2.16+ need an msix module the proxy does not serve, v2.18 needs go 1.27
CYCLONEDX_GOMOD_VERSION=v1.10.0
tools=${EVALBRIDGE_TOOLS_DIR:-/tmp/evalbridge-tools}
mkdir -p "$tools"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
step() { echo "--- deploy-check: $* ($((SECONDS - start))s)"; }

install_tool() { # name module@version
  if [[ ! -x "$tools/$1" || ! -f "$tools/$1.version" || "$(cat "$tools/$1.version")" != "$2" ]]; then
    GOBIN="$tools" GOFLAGS= go install "$2" && echo "$2" >"$tools/$1.version"
  fi
}

# DEPLOY_CHECK_TOOLS_ONLY=1: install the tools and stop (.ci/run starts this in
# the background at its beginning, so the builds overlap the tests).
if [[ "${DEPLOY_CHECK_TOOLS_ONLY:-}" == 1 ]]; then
  install_tool helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  install_tool goreleaser "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
  install_tool cyclonedx-gomod "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_GOMOD_VERSION"
  exit 0
fi

version=$(deploy/version.sh)
step "version $version"

# --- 1. the image -----------------------------------------------------------------
step "image: deploy/image/build.sh"
deploy/image/build.sh "$tmp/image.tar"
echo "image tarball: $(du -h "$tmp/image.tar" | cut -f1) ($(stat -c %s "$tmp/image.tar") bytes); layout:"
tar tvf "$tmp/image.tar"
step "image: read back, run, health check"
EVALBRIDGE_IMAGE_TAR="$tmp/image.tar" EVALBRIDGE_IMAGE_VERSION="$version" \
  go test -count=1 -v -run 'TestImage$|TestDockerfileMatchesBuilder' ./deploy/image/ | grep -v '^=== RUN'
go test -count=1 -run 'TestImageConfig' ./cmd/otelcol-evalbridge/

# --- 2. Helm chart, Operator resources ----------------------------------------------
step "helm $HELM_VERSION"
install_tool helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
helm="$tools/helm"
# The chart as it is in the tree: no link inside it (helm warns about one, and
# packages what it points to), its rules/ a copy of deploy/prometheus/rules.yaml
# (go test ./deploy/prometheus checks the copy).
if find deploy/helm/evalbridge -type l | grep -q .; then
  echo "deploy-check: a symbolic link inside the chart: $(find deploy/helm/evalbridge -type l)"; exit 1
fi
cp -r deploy/helm/evalbridge "$tmp/chart"
rendered="$tmp/rendered"
mkdir -p "$rendered"
"$helm" lint --strict "$tmp/chart"
"$helm" template evalbridge "$tmp/chart" >"$rendered/defaults.yaml"
# A gateway that runs eval on several pods splits traces unless each trace
# comes from one client: the chart refuses it, naming the tier-1/tier-2 pair.
for set in replicaCount=2 autoscaling.enabled=true; do
  if out=$("$helm" template evalbridge "$tmp/chart" --set "$set" 2>&1); then
    echo "deploy-check: the chart rendered a gateway running eval with $set"; exit 1
  fi
  grep -q 'tier-1/tier-2' <<<"$out" || { echo "deploy-check: the refusal does not name the tier-1/tier-2 pair: $out"; exit 1; }
  echo "refused ($set): $(grep -o 'a gateway that runs eval on [^:]*' <<<"$out")"
  "$helm" template evalbridge "$tmp/chart" --set "$set" --set traceAffinity=perClient >/dev/null
done
for f in deploy/helm/evalbridge/examples/*.yaml; do
  name=$(basename "$f" .yaml)
  "$helm" lint --strict "$tmp/chart" -f "$f"
  "$helm" template evalbridge "$tmp/chart" -f "$f" >"$rendered/$name.yaml"
done
"$helm" template evalbridge "$tmp/chart" -f deploy/helm/evalbridge/examples/tier2-statefulset.yaml \
  --set prometheusRule.enabled=true >"$rendered/tier2-statefulset-with-rules.yaml"
for f in "$rendered"/*.yaml; do
  echo "rendered $(basename "$f"): $(grep '^kind:' "$f" | awk '{print $2}' | paste -sd' ')"
done
"$helm" package deploy/helm/evalbridge --version "$version" --app-version "$version" -d "$tmp" >"$tmp/package.log" 2>&1 ||
  { cat "$tmp/package.log"; exit 1; }
if grep -i 'warn\|symlink' "$tmp/package.log"; then echo "deploy-check: helm package warned"; exit 1; fi
tar -xzOf "$tmp/evalbridge-$version.tgz" evalbridge/Chart.yaml | grep -E "^(version|appVersion): $version\$" | wc -l | grep -qx 2 ||
  { echo "deploy-check: the packaged chart does not carry version $version"; exit 1; }
if tar -tzf "$tmp/evalbridge-$version.tgz" | grep -v -E '^evalbridge/(Chart.yaml|values.yaml|README.md|\.helmignore|templates/[^/]+\.(yaml|tpl|txt)|rules/rules.yaml)$'; then
  echo "deploy-check: the packaged chart carries files that are not the chart's"; exit 1
fi
echo "chart packaged: evalbridge-$version.tgz: $(tar -tzf "$tmp/evalbridge-$version.tgz" | paste -sd' ')"

step "strict decoding into k8s.io/api types; Operator resources; upstream chart values"
EVALBRIDGE_RENDERED_DIR="$rendered" go test -tags deploycheck -count=1 -v -run 'TestRenderedChart|TestOperatorResources|TestUpstreamChartValues' \
  ./internal/deploycheck/ | grep -v '^=== RUN'

step "every collector config validates against the distribution"
CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=$version" -o "$tmp/otelcol-evalbridge" ./cmd/otelcol-evalbridge
for c in "$rendered"/*.config.yaml; do
  EVALBRIDGE_COLLECTOR_ID=evalbridge-0 POD_NAME=evalbridge-0 MY_POD_IP=127.0.0.1 OPENAI_API_KEY=unused \
    "$tmp/otelcol-evalbridge" validate --config="$c"
  echo "valid: $(basename "$c")"
done

step "every rendered deployment runs, is scraped, and answers the dashboard"
# Each config runs under the built binary with a fake backend, a fake judge and
# an in-process Kafka; the example agent's runs go through; every dashboard
# query is evaluated on the scrapes (its series count per deployment is printed).
EVALBRIDGE_RENDERED_DIR="$rendered" EVALBRIDGE_BINARY="$tmp/otelcol-evalbridge" \
  go test -tags deploycheck -count=1 -v -timeout 20m -run 'TestRenderedDeploymentsAnswerTheDashboard' ./internal/deploycheck/ |
  grep -v '^=== RUN'

# --- 3. GoReleaser snapshot, packages --------------------------------------------------
step "goreleaser $GORELEASER_VERSION, cyclonedx-gomod $CYCLONEDX_GOMOD_VERSION"
install_tool goreleaser "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
skip=publish,announce,validate
install_tool cyclonedx-gomod "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_GOMOD_VERSION"
export PATH="$tools:$PATH" # goreleaser runs cyclonedx-gomod for the SBOMs
# linux/amd64 only, into a temporary dist.
sed -e 's/^    targets: .*/    targets: [linux_amd64_v1]/' .goreleaser.yaml >"$tmp/goreleaser.yaml"
echo "dist: $tmp/dist" >>"$tmp/goreleaser.yaml"
step "goreleaser release --snapshot"
"$tools/goreleaser" release --snapshot --clean --skip="$skip" --config "$tmp/goreleaser.yaml" >"$tmp/goreleaser.log" 2>&1 ||
  { cat "$tmp/goreleaser.log"; exit 1; }
grep -E 'git state|version=|building |sbom|packag|archiv|checksum' "$tmp/goreleaser.log" | head -n 20 || true
dist="$tmp/dist"
ls -la "$dist"
snapver=$(sed -n 's/.*otelcol-evalbridge_\(.*\)_linux_amd64\.tar\.gz$/\1/p' "$dist/checksums.txt" | head -1)
archive="$dist/otelcol-evalbridge_${snapver}_linux_amd64.tar.gz"
[[ -f "$archive" ]] || { echo "deploy-check: no linux/amd64 archive"; exit 1; }
echo "archive $(basename "$archive"): $(tar tzf "$archive" | paste -sd' ')"
(cd "$dist" && sha256sum -c checksums.txt)
for sbom in "$dist"/*.cdx.json; do
  grep -q '"bomFormat": *"CycloneDX"' "$sbom" || { echo "deploy-check: $sbom is not a CycloneDX document"; exit 1; }
  grep -q 'pkg:golang/go.opentelemetry.io/collector/otelcol@' "$sbom" || [[ $sbom == *evalctl* ]] ||
    { echo "deploy-check: $sbom does not list the collector's modules"; exit 1; }
  echo "SBOM $(basename "$sbom"): $(grep -c '"purl"' "$sbom") components"
done
ls "$dist"/otelcol-evalbridge_*.cdx.json >/dev/null

deb=$(ls "$dist"/*.deb)
rpm=$(ls "$dist"/*.rpm)
echo "deb $(basename "$deb"):"
dpkg-deb -c "$deb"
mkdir -p "$tmp/deb" "$tmp/rpm"
dpkg-deb -x "$deb" "$tmp/deb"
dpkg-deb -e "$deb" "$tmp/deb/DEBIAN"
grep -q '^/etc/otelcol-evalbridge/config.yaml$' "$tmp/deb/DEBIAN/conffiles"
for s in preinst postinst prerm; do # the service user; enable and start; stop
  [[ -x "$tmp/deb/DEBIAN/$s" ]] || { echo "deploy-check: the deb has no $s script"; exit 1; }
done
for p in usr/bin/otelcol-evalbridge lib/systemd/system/otelcol-evalbridge.service etc/otelcol-evalbridge/config.yaml; do
  [[ -f "$tmp/deb/$p" ]] || { echo "deploy-check: the deb lacks /$p"; exit 1; }
done
cmp "$tmp/deb/etc/otelcol-evalbridge/config.yaml" deploy/packaging/config.yaml
grep -q '^ExecStart=/usr/bin/otelcol-evalbridge \$OTELCOL_OPTIONS$' "$tmp/deb/lib/systemd/system/otelcol-evalbridge.service"
grep -q '^User=otelcol-evalbridge$' "$tmp/deb/lib/systemd/system/otelcol-evalbridge.service"
if command -v systemd-analyze >/dev/null 2>&1; then
  systemd-analyze verify "$tmp/deb/lib/systemd/system/otelcol-evalbridge.service" 2>&1 | grep -v 'otelcol-evalbridge: No such file\|not executable' || true
fi
"$tmp/deb/usr/bin/otelcol-evalbridge" --version
"$tmp/deb/usr/bin/otelcol-evalbridge" validate --config="$tmp/deb/etc/otelcol-evalbridge/config.yaml"

if ! command -v rpm2cpio >/dev/null 2>&1 || ! command -v cpio >/dev/null 2>&1 || ! command -v rpm >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq rpm2cpio cpio rpm >/dev/null
fi
echo "rpm $(basename "$rpm"):"
# Debian's rpm2cpio exits 1 after writing a complete archive: cpio checks the stream.
rpm2cpio "$rpm" >"$tmp/rpm.cpio" || true
(cd "$tmp/rpm" && cpio -idmv --no-absolute-filenames <"$tmp/rpm.cpio" 2>&1 | sed 's/^/  /')
for p in usr/bin/otelcol-evalbridge lib/systemd/system/otelcol-evalbridge.service etc/otelcol-evalbridge/config.yaml; do
  [[ -f "$tmp/rpm/$p" ]] || { echo "deploy-check: the rpm lacks /$p"; exit 1; }
done
cmp "$tmp/rpm/lib/systemd/system/otelcol-evalbridge.service" deploy/packaging/otelcol-evalbridge.service
"$tmp/rpm/usr/bin/otelcol-evalbridge" --version

step "package scripts: install, upgrade (enabled and running; disabled and stopped), remove; dpkg into a scratch root"
deploy/packaging/scripts_test.sh "$deb" "$rpm"

step "ok"
