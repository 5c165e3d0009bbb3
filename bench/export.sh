#!/bin/bash
# Export benchmark: makes one large trace (HMTT_EXPORT_RECORDS references,
# default 100 M, from `hmtt sim --workload read-after-write --cache off`:
# half writes, half reads), merges it straight into a .hmttz archive, then
# runs `hmtt export` to every format from the archive and prints, per
# format, the records per second (wall clock, and per CPU-second of the
# export process, user + system, which a shared machine disturbs less) and
# the peak resident memory
# of the export process (`/usr/bin/time -v`; the archive input is decoded
# block by block, so the peak is the writer's own memory plus one block and
# the mapped compressed input). Each output is deleted after it is measured.
#
# HMTT_BENCH_DIR keeps the files (default: a temporary directory, removed);
# HMTT_EXPORT_RECORDS sets the trace size; HMTT_EXPORT_FORMATS the formats.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench/export.sh: /usr/bin/time (package time) is needed" >&2; exit 1; }
records=${HMTT_EXPORT_RECORDS:-100000000}
formats=${HMTT_EXPORT_FORMATS:-"dramsim3 ramulator2 gem5 csv parquet perfetto"}
. bench/scratch-dir.sh
cargo build --release -q -p hmtt
hmtt=$PWD/target/release/hmtt

# read-after-write writes each 64-byte unit and reads it back: two
# references per unit.
bytes=$((records * 32))
if [ ! -f "$dir/big.hmttz" ]; then
    rm -rf "$dir/big"
    "$hmtt" sim --workload read-after-write --n "$bytes" --cache off --boards 1 --ports 3 \
        --out "$dir/big" >"$dir/sim.log"
    "$hmtt" merge "$dir/big" -o "$dir/big.hmttz" -q >"$dir/merge.log"
    rm -rf "$dir/big"
fi
grep -h "records" "$dir/merge.log" | head -1

printf '%-11s %12s %10s %10s %12s %14s %12s\n' format records seconds cpu_s 'M rec/s' 'M rec/cpu-s' 'peak RSS MB'
for f in $formats; do
    out="$dir/out.$f"
    /usr/bin/time -v "$hmtt" export "$dir/big.hmttz" --format "$f" -o "$out" \
        2>"$dir/export.$f.log" >/dev/null
    n=$(sed -n 's/.*: \([0-9]*\) records, .*/\1/p' "$dir/export.$f.log")
    secs=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$dir/export.$f.log")
    cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { print s }' "$dir/export.$f.log")
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 / 1024 }' "$dir/export.$f.log")
    size=$(stat -c %s "$out")
    rm -f "$out"
    awk -v f="$f" -v n="$n" -v s="$secs" -v c="$cpu" -v r="$rss" -v b="$size" 'BEGIN {
        printf "%-11s %12d %10.2f %10.2f %12.2f %14.2f %12.1f   (%.0f MB written)\n",
            f, n, s, c, n / s / 1e6, n / c / 1e6, r, b / 1e6 }'
done
