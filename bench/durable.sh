#!/usr/bin/env bash
# bench/durable.sh: what the durable store costs. The eval processor of the
# working tree with `storage: file_storage` against the same processor
# without it, on the same traces (BenchmarkGenAIEndToEnd, sub-benchmarks
# eval and eval_storage in processor/evalprocessor).
#
#   bench/durable.sh [-rounds 8] [-benchtime 1s]
#
# It builds the package's test binary once, then runs both sub-benchmarks N
# rounds, -count 1 each, the one that goes first alternating. It prints
# every run, the median CPU time per span of each, the ratio of the medians
# and the median of the per-round ratios (the figure docs/performance.md
# reports: at most 1.3 is the target).
set -euo pipefail

rounds=8 benchtime=1s
while [ $# -gt 0 ]; do
	case "$1" in
	-rounds) rounds=$2; shift 2 ;;
	-benchtime) benchtime=$2; shift 2 ;;
	-h|-help|--help) sed -n '2,13p' "$0"; exit 0 ;;
	*) echo "unknown argument $1 (try -h)" >&2; exit 2 ;;
	esac
done

root=$(git rev-parse --show-toplevel)
cd "$root"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/evalbridge-durable.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

echo "# building processor/evalprocessor's benchmark ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo '+changes'))"
go test -c -o "$tmp/proc.test" ./processor/evalprocessor

results="$tmp/results"
: >"$results"
runone() { # sub round
	(cd "$root/processor/evalprocessor" && "$tmp/proc.test" -test.run '^$' -test.bench "^BenchmarkGenAIEndToEnd/$1\$" \
		-test.benchtime "$benchtime" -test.count 1 -test.benchmem) |
		awk -v sub_="$1" -v round="$2" '/^BenchmarkGenAIEndToEnd\// {
			cpu = bytes = 0
			for (i = 2; i < NF; i++) { if ($(i+1) == "cpu-µs/span") cpu = $i; if ($(i+1) == "B/op") bytes = $i }
			printf "%s %s %.3f %.0f\n", round, sub_, cpu, bytes
		}' | tee -a "$results"
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, -benchtime $benchtime, $rounds rounds; load average:$(uptime | sed 's/.*load average://')"
echo "# round benchmark cpu-µs/span B/op"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then order="eval eval_storage"; else order="eval_storage eval"; fi
	for sub in $order; do runone "$sub" "$r"; done
done
echo "# load average after:$(uptime | sed 's/.*load average://')"

awk '
function median(arr, n,    i, j, t) {
	for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
	return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
$2 == "eval"         { e[$1] = $3; eb[$1] = $4 }
$2 == "eval_storage" { s[$1] = $3; sb[$1] = $4 }
END {
	for (r in e) if (r in s && e[r] > 0 && s[r] > 0) { n++; ec[n] = e[r]; sc[n] = s[r]; rr[n] = s[r] / e[r]; ea[n] = eb[r]; sa[n] = sb[r] }
	if (n == 0) { print "no results"; exit 1 }
	me = median(ec, n); ms = median(sc, n)
	printf "median cpu-µs/span:  eval %.2f, eval_storage %.2f (%d rounds)\n", me, ms, n
	printf "cost of storage:     ratio of the medians %.3f, median of the per-round ratios %.3f\n", ms / me, median(rr, n)
	printf "median B/op:         eval %.2f MB, eval_storage %.2f MB\n", median(ea, n) / 1e6, median(sa, n) / 1e6
}' "$results"
