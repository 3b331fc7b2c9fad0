#!/usr/bin/env bash
# Builds the otelcol-evalbridge container image without a container daemon and
# writes it as an OCI image layout in a tarball (oci-layout, index.json,
# blobs/): the same image as the Dockerfile (docs/deploy.md).
#
#   deploy/image/build.sh OUTPUT.tar
#
# Load it with any OCI tool, e.g. `skopeo copy oci-archive:OUTPUT.tar
# docker://REGISTRY/otelcol-evalbridge:VERSION` or `podman load -i OUTPUT.tar`.
# Environment: VERSION (default: git describe --tags, else 0.0.0-dev), GOARCH
# (default amd64), CA_BUNDLE (default /etc/ssl/certs/ca-certificates.crt, the
# build machine's Debian/Alpine bundle), SOURCE_DATE_EPOCH (default: the
# commit's time; the same tree gives the same image).
set -euo pipefail
out=${1:?usage: deploy/image/build.sh OUTPUT.tar}
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

version=${VERSION:-$(deploy/version.sh)}
arch=${GOARCH:-amd64}
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
if [[ ! -s "$ca" ]]; then
  echo "build.sh: no CA bundle at $ca (apt-get install ca-certificates, or set CA_BUNDLE)" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath \
  -ldflags "-s -w -X main.version=$version" \
  -o "$tmp/otelcol-evalbridge" ./cmd/otelcol-evalbridge
go run ./deploy/image -binary "$tmp/otelcol-evalbridge" -config deploy/image/config.yaml -ca "$ca" \
  -version "$version" -revision "$revision" -arch "$arch" -created "$epoch" -out "$out"
