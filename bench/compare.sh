#!/usr/bin/env bash
# bench/compare.sh: the eval processor of an earlier commit against the
# working tree's, and both against contrib's groupbytrace, on the same traces.
#
#   bench/compare.sh [-prev COMMIT] [-rounds N] [-benchtime 200x] [-cpu 2] [-profile DIR] [-bench Compare]
#
# It checks COMMIT (default ea86f1b, the previous stage) out in a temporary
# git worktree, copies bench/procbench/ into it (the same benchmark file on
# both sides), builds both test binaries, then runs BenchmarkCompare N rounds,
# alternating which side goes first, -count 1 each. It prints every run, the
# medians of both sides, and the ratios now/prev, now/groupbytrace and
# prev/groupbytrace (groupbytrace pooled over both sides' runs). With -profile
# it keeps a CPU profile of the working tree's eval runs in DIR. -bench
# CompareConcurrent feeds the processors from four goroutines at once.
set -euo pipefail

prev=ea86f1b rounds=6 benchtime=200x cpu=2 profile="" bench=Compare
while [ $# -gt 0 ]; do
	case "$1" in
	-prev) prev=$2; shift 2 ;;
	-rounds) rounds=$2; shift 2 ;;
	-benchtime) benchtime=$2; shift 2 ;;
	-cpu) cpu=$2; shift 2 ;;
	-profile) profile=$2; shift 2 ;;
	-bench) bench=$2; shift 2 ;;
	-h|-help|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "unknown argument $1 (try -h)" >&2; exit 2 ;;
	esac
done

root=$(git rev-parse --show-toplevel)
cd "$root"
prevrev=$(git rev-parse --short "$prev^{commit}")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/evalbridge-compare.XXXXXX")
cleanup() {
	git worktree remove --force "$tmp/prev" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

git worktree add --detach "$tmp/prev" "$prevrev" >/dev/null 2>&1
if ! diff -r -q bench/procbench "$tmp/prev/bench/procbench" >/dev/null 2>&1; then
	echo "# bench/procbench differs at $prevrev (or is absent): copied from the working tree"
	rm -rf "$tmp/prev/bench/procbench"
	mkdir -p "$tmp/prev/bench"
	cp -r bench/procbench "$tmp/prev/bench/procbench"
	# resultfloor (BenchmarkStream's floor) builds against this tree's packages only
	rm -f "$tmp/prev/bench/procbench/floor_test.go"
fi
echo "# building the benchmark at $prevrev and in the working tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo '+changes'))"
(cd "$tmp/prev" && go test -c -o "$tmp/prev.test" ./bench/procbench)
go test -c -o "$tmp/now.test" ./bench/procbench

results="$tmp/results"
: >"$results"
runone() { # side round
	local args=(-test.run '^$' -test.bench "^Benchmark$bench\$" -test.benchtime "$benchtime" -test.count 1 -test.cpu "$cpu")
	if [ "$1" = now ] && [ -n "$profile" ]; then
		mkdir -p "$profile"
		args+=(-test.cpuprofile "$profile/now-$2.pprof")
	fi
	(cd "$root/bench/procbench" && "$tmp/$1.test" "${args[@]}") |
		awk -v side="$1" -v round="$2" '/^BenchmarkCompare[A-Za-z]*\// {
			name = $1; sub(/^BenchmarkCompare[A-Za-z]*\//, "", name); sub(/-[0-9]+$/, "", name)
			sps = cpu = 0
			for (i = 2; i < NF; i++) { if ($(i+1) == "spans/s") sps = $i; if ($(i+1) == "cpu-µs/span") cpu = $i }
			printf "%s %s %s %.0f %.2f\n", round, side, name, sps, cpu
		}' | tee -a "$results"
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, Benchmark$bench, -cpu $cpu, -benchtime $benchtime, $rounds rounds; load average:$(uptime | sed 's/.*load average://')"
echo "# round side benchmark spans/s cpu-µs/span"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then order="prev now"; else order="now prev"; fi
	for side in $order; do runone "$side" "$r"; done
done
echo "# load average after:$(uptime | sed 's/.*load average://')"

awk -v prev="$prevrev" '
function median(arr, n,    i, j, t) {
	for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
	return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
$2 == "prev" && $3 == "eval" { p[++np] = $4; pc[np] = $5 }
$2 == "now"  && $3 == "eval" { c[++nc] = $4; cc[nc] = $5 }
$3 == "groupbytrace"         { g[++ng] = $4; gc[ng] = $5 }
END {
	if (np == 0 || nc == 0 || ng == 0) { print "no results"; exit 1 }
	mp = median(p, np); mc = median(c, nc); mg = median(g, ng)
	printf "median spans/s:      prev (%s) eval %.0f, now eval %.0f, groupbytrace %.0f (%d, %d, %d runs)\n", prev, mp, mc, mg, np, nc, ng
	printf "throughput ratios:   now/prev %.3f   now/groupbytrace %.3f   prev/groupbytrace %.3f\n", mc / mp, mc / mg, mp / mg
	mp = median(pc, np); mc = median(cc, nc); mg = median(gc, ng)
	printf "median cpu-µs/span:  prev eval %.2f, now eval %.2f, groupbytrace %.2f\n", mp, mc, mg
	printf "CPU-cost ratios:     prev/now %.3f   groupbytrace/now %.3f   groupbytrace/prev %.3f (above 1: cheaper than the other)\n", mp / mc, mg / mc, mg / mp
}' "$results"
