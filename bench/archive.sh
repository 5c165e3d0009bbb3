#!/bin/bash
# Trace archive benchmark (issue 18). Makes three traces in one run -- the
# demo's quicksort (50000 elements, 2 boards, 3 ports), a Valgrind lackey
# trace of `sort -n` on 2000 numbers simulated with the cache off, and
# `hmtt sim --workload mix` at the demo's size -- and prints, for each, the
# bits per record of the .hmttz archive, of `zstd -19` on the run's capture
# files, of `zstd -19` and `xz -9` on the trace, the archive's size as a
# fraction of zstd -19 on the captures, and the archive's per-core
# compression and decompression speeds (bench/archive.rs).
#
# Needs zstd and xz; valgrind for the lackey trace (skipped without it).
# HMTT_BENCH_DIR keeps the files (default: a temporary directory);
# HMTT_ARCHIVE_LEVEL / HMTT_ARCHIVE_BLOCK_RECORDS / HMTT_ARCHIVE_ROUNDS
# as bench/archive.rs says.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in zstd xz; do
    command -v "$tool" >/dev/null || { echo "bench/archive.sh: $tool is needed" >&2; exit 1; }
done
dir=${HMTT_BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
cargo build --release -q -p hmtt
hmtt=$PWD/target/release/hmtt

run() { # name, sim arguments...
    local name=$1
    shift
    rm -rf "${dir:?}/$name"
    "$hmtt" sim "$@" --out "$dir/$name" >"$dir/$name.sim.log"
    "$hmtt" merge "$dir/$name" -o "$dir/$name.hmtttrace" -q >"$dir/$name.merge.log"
}

names=(quicksort)
run quicksort --workload quicksort --n 50000 --boards 2 --ports 3
if command -v valgrind >/dev/null; then
    awk 'BEGIN { srand(1); for (i = 0; i < 2000; i++) print int(rand() * 1000000) }' >"$dir/numbers.txt"
    valgrind --tool=lackey --trace-mem=yes --log-file="$dir/sort.lackey" sort -n "$dir/numbers.txt" >/dev/null
    run lackey --workload trace --trace "$dir/sort.lackey" --trace-format lackey --cache off
    names+=(lackey)
else
    echo "bench/archive.sh: no valgrind, the lackey trace is skipped" >&2
fi
run mix --workload mix --n 64K
names+=(mix)

traces=""
for n in "${names[@]}"; do traces="$traces:$dir/$n.hmtttrace"; done
HMTT_ARCHIVE_TRACES=${traces#:} cargo bench -q -p hmtt-merge --bench archive 2>/dev/null | grep '^archive ' >"$dir/archive.txt"

printf '%-10s %10s %8s %10s %10s %8s %12s %12s %12s\n' trace records hmttz zstd19cap zstd19trc xz9trc vs_zstd19cap compress decompress
printf '%-10s %10s %8s %10s %10s %8s %12s %12s %12s\n' '' '' 'bits/rec' 'bits/rec' 'bits/rec' 'bits/rec' '(<= 0.7)' 'M rec/s/core' 'M rec/s/core'
for n in "${names[@]}"; do
    read -r _ _ _ records _ bytes _ _ _ cmp _ dec _ < <(grep "^archive $n " "$dir/archive.txt")
    cap=$(cat "$dir/$n"/*.hmttcap | zstd -19 -T1 -q -c | wc -c)
    trc=$(zstd -19 -T1 -q -c "$dir/$n.hmtttrace" | wc -c)
    xz9=$(xz -9 -T1 -c "$dir/$n.hmtttrace" | wc -c)
    awk -v n="$n" -v r="$records" -v a="$bytes" -v c="$cap" -v t="$trc" -v x="$xz9" -v cs="$cmp" -v ds="$dec" 'BEGIN {
        printf "%-10s %10d %8.3f %10.3f %10.3f %8.3f %12.3f %12.1f %12.1f\n",
            n, r, a * 8 / r, c * 8 / r, t * 8 / r, x * 8 / r, a / c, cs, ds }'
done
echo "files in $dir"
