#!/bin/bash
# Merge throughput with the trace checksums (trace format version 2,
# docs/format.md §11.1) against the release before them, in one run (issue
# 41: at most 5 % slower). Builds this tree's hmtt and the reference
# commit's (HMTT_REF_COMMIT, default 53cb6f3, the last one without
# checksums) in its own target directory, simulates one run of captures,
# then merges it with each binary in turn, HMTT_BENCH_ROUNDS times each
# (default 7), alternating, every output removed before the next run.
# Prints each binary's median wall and CPU seconds, its MB/s of capture
# input, and the ratio of the medians (this build / reference; above 1 is
# slower).
#
# HMTT_BENCH_DIR keeps the files (default: a temporary directory);
# HMTT_REF_BIN uses an already built reference binary instead;
# HMTT_BENCH_SIM overrides the `hmtt sim` arguments of the run (default: a
# sequential read of 2 GiB, 32 M lines, with the cache off on 2 boards of 3
# ports).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/scratch-dir.sh
rounds=${HMTT_BENCH_ROUNDS:-7}
ref_commit=${HMTT_REF_COMMIT:-53cb6f3}
sim_args=${HMTT_BENCH_SIM:---workload seq-read --n 2G --unit 64 --cache off --boards 2 --ports 3}

. bench/reference-build.sh
cargo build --release -q -p hmtt
new=${CARGO_TARGET_DIR:-$PWD/target}/release/hmtt

rm -rf "$dir/run"
# shellcheck disable=SC2086
"$new" sim $sim_args --out "$dir/run" >"$dir/sim.log"
input=$(cat "$dir"/run/*.hmttcap | wc -c)

# One merge with binary $1; appends "wall cpu" seconds to $2.
merge_once() {
    rm -f "$dir/out.hmtttrace"
    /usr/bin/time -f '%e %U %S' -o "$dir/time.txt" \
        "$1" merge "$dir/run" -o "$dir/out.hmtttrace" --quiet >/dev/null
    awk '{ print $1, $2 + $3 }' "$dir/time.txt" >>"$2"
}

: >"$dir/new.txt"
: >"$dir/ref.txt"
merge_once "$new" /dev/null # warms the page cache with the captures
for _ in $(seq "$rounds"); do
    merge_once "$ref" "$dir/ref.txt"
    merge_once "$new" "$dir/new.txt"
done
rm -f "$dir/out.hmtttrace"

median() { # column of file
    sort -g -k"$1" "$2" | awk -v c="$1" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}
ref_wall=$(median 1 "$dir/ref.txt")
ref_cpu=$(median 2 "$dir/ref.txt")
new_wall=$(median 1 "$dir/new.txt")
new_cpu=$(median 2 "$dir/new.txt")
awk -v mb="$input" -v rw="$ref_wall" -v rc="$ref_cpu" -v nw="$new_wall" -v nc="$new_cpu" \
    -v r="$rounds" -v c="$ref_commit" 'BEGIN {
    mb /= 1e6
    printf "merge of %.0f MB of captures, median of %d runs each, alternating\n", mb, r
    printf "%-28s %8s %8s %10s %10s\n", "build", "wall s", "cpu s", "MB/s wall", "MB/s cpu"
    printf "%-28s %8.2f %8.2f %10.0f %10.0f\n", "reference (" c ")", rw, rc, mb / rw, mb / rc
    printf "%-28s %8.2f %8.2f %10.0f %10.0f\n", "this build (checksums)", nw, nc, mb / nw, mb / nc
    printf "ratio this/reference: wall %.3f, cpu %.3f (target: at most 1.05)\n", nw / rw, nc / rc
}'
