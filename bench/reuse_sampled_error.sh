#!/bin/bash
# The error of `hmtt analyze --reuse sampled` (SHARDS) against the exact
# reuse distances, on three traces: quicksort with the cache off, the mix
# workload, and valgrind lackey's trace of a real program (`ls -lR /usr/lib`,
# instruction fetches kept), each simulated and merged. Prints, per trace and
# sampling mode, the mean absolute error of the reuse CDF (the share of
# references with a distance at most each power-of-two bucket's top, first
# uses counted as infinite; as `reuse_sampled::cdf_mean_absolute_error`),
# over all buckets and over those from 1/R lines on (the distances a sample
# at rate R tells apart), and the CPU seconds of both runs.
#
# HMTT_BENCH_N: quicksort elements (default 600000); HMTT_BENCH_DIR keeps
# the files. Needs valgrind for the lackey trace (skipped without).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${HMTT_BENCH_N:-600000}
. bench/scratch-dir.sh
cargo build --release -q -p hmtt
hmtt=$PWD/target/release/hmtt

make_trace() { # name, sim arguments...
    local name=$1
    shift
    [ -f "$dir/$name.hmtttrace" ] && return
    "$hmtt" sim "$@" --cache off --out "$dir/$name" >/dev/null
    "$hmtt" merge "$dir/$name" -o "$dir/$name.hmtttrace" -q >/dev/null
    rm -rf "${dir:?}/$name"
}
make_trace quicksort --workload quicksort --n "$n"
make_trace mix --workload mix --n 64M --processes 4
if command -v valgrind >/dev/null; then
    [ -f "$dir/ls.lackey" ] || valgrind --tool=lackey --trace-mem=yes --log-file="$dir/ls.lackey" \
        ls -lR /usr/lib >/dev/null 2>&1
    make_trace lackey --workload trace --trace "$dir/ls.lackey" --trace-format lackey --instructions
else
    echo "lackey trace skipped: no valgrind"
fi

cpu() { awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { print u + s }' "$1"; }
printf '%-10s %12s %-20s %10s %14s %12s %14s\n' trace references mode mae_all mae_from_1/R exact_cpu_s sampled_cpu_s
for t in quicksort mix lackey; do
    [ -f "$dir/$t.hmtttrace" ] || continue
    refs=$("$hmtt" stats "$dir/$t.hmtttrace" | awk '/^references:/ { print $2 }')
    /usr/bin/time -v "$hmtt" analyze "$dir/$t.hmtttrace" --threads 1 --json "$dir/$t.exact.json" \
        >/dev/null 2>"$dir/$t.exact.time"
    for mode in sampled:0.01 sampled-size:8192; do
        /usr/bin/time -v "$hmtt" analyze "$dir/$t.hmtttrace" --threads 1 --reuse "$mode" \
            --json "$dir/$t.$mode.json" >/dev/null 2>"$dir/$t.$mode.time"
        mae=$(python3 - "$dir/$t.exact.json" "$dir/$t.$mode.json" <<'EOF'
import json, sys
def cdf(r):
    total = r["cold"] + sum(b[2] for b in r["buckets"])
    acc, out = 0, []
    for b in r["buckets"]:
        acc += b[2]
        out.append(acc / max(total, 1))
    return out
exact = json.load(open(sys.argv[1]))["reuse"]
est = json.load(open(sys.argv[2]))["reuse"]
a, b = cdf(exact), cdf(est)
n = max(len(a), len(b))
at = lambda c, k: c[k] if k < len(c) else (c[-1] if c else 0.0)
top = lambda k: 0 if k == 0 else (1 << k) - 1
def mae(frm):
    ks = [k for k in range(n) if top(k) >= frm]
    return sum(abs(at(a, k) - at(b, k)) for k in ks) / max(len(ks), 1)
print(f"{mae(0):.4f} {mae(1 / est['sampling']['rate']):.4f}")
EOF
)
        read -r all from <<<"$mae"
        printf '%-10s %12d %-20s %10s %14s %12.2f %14.2f\n' "$t" "$refs" "$mode" "$all" "$from" \
            "$(cpu "$dir/$t.exact.time")" "$(cpu "$dir/$t.$mode.time")"
    done
done
