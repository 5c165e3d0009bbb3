#!/bin/bash
# `hmtt analyze` benchmark: simulates quicksort with the cache off (about
# 45 memory references per element, so the default 2,230,000 elements make
# about 100 M records), merges it into a trace, then runs `hmtt analyze`
# on it (and on its archive, `hmtt pack`) without and with `--plot` under
# GNU time, and prints references per second (per wall second and per CPU
# second, user + system) and the peak resident memory of each run. The
# trace is mapped, so the peak of a run on the trace file counts the
# file's pages it has read (the kernel may drop them at will); the archive
# is decoded block by block, so its runs show the analysis' own memory.
#
# HMTT_BENCH_N sets the elements (e.g. 22000 for about 1 M records);
# HMTT_BENCH_DIR keeps the files (default: a temporary directory, removed).
# The simulation's ground truth and command files (about 50 bytes per
# record) are deleted once the trace is merged. Needs GNU time
# (/usr/bin/time, Debian package `time`).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench/analyze.sh: GNU time (/usr/bin/time) is needed" >&2; exit 1; }
n=${HMTT_BENCH_N:-2230000}
. bench/scratch-dir.sh
cargo build --release -q -p hmtt
hmtt=$PWD/target/release/hmtt
trace=$dir/quicksort.hmtttrace
if [ ! -f "$trace" ]; then
    "$hmtt" sim --workload quicksort --n "$n" --cache off --out "$dir/sim" >"$dir/sim.log"
    rm -f "$dir"/sim/truth.hmtttruth "$dir"/sim/commands-b*.txt
    "$hmtt" merge "$dir/sim" -o "$trace" -q >"$dir/merge.log"
    rm -rf "$dir/sim"
fi
[ -f "$dir/quicksort.hmttz" ] || "$hmtt" pack "$trace" -o "$dir/quicksort.hmttz" >"$dir/pack.log" 2>&1
records=$("$hmtt" stats "$trace" | awk '/^references:/ { print $2 }')

measure() { # label, file, analyze arguments...
    local label=$1 file=$2
    shift 2
    /usr/bin/time -v "$hmtt" analyze "$file" "$@" >"$dir/$label.txt" 2>"$dir/$label.time"
    awk -v label="$label" -v r="$records" -F': ' '
        /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { m = $2 }
        /Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
        END { printf "%-16s %12d %9.2f %9.2f %12.2f %12.2f %10.1f\n", label, r, w, u + s, r / w / 1e6, r / (u + s) / 1e6, m / 1024 }' \
        "$dir/$label.time"
}

printf '%-16s %12s %9s %9s %12s %12s %10s\n' run references wall_s cpu_s 'M refs/s' 'M refs/cpu-s' peak_MiB
measure trace "$trace"
measure hmttz "$dir/quicksort.hmttz"
measure hmttz+plot "$dir/quicksort.hmttz" --plot "$dir/plots" --json "$dir/analysis.json"
