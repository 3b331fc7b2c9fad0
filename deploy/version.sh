#!/usr/bin/env bash
# The version of this tree: the git tag without its "v" (`git describe
# --tags`, so v1.2.0-3-gabc1234 between tags), else 0.0.0-dev. The binary
# (-ldflags -X main.version), the image labels, the chart and the packages
# all take it from here.
set -euo pipefail
cd "$(dirname "$0")/.."
v=$(git describe --tags 2>/dev/null || true)
echo "${v#v}" | grep . || echo 0.0.0-dev
