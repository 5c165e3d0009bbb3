#!/bin/bash
# Export benchmark: makes one large trace (about HMTT_EXPORT_RECORDS
# references, default 100 M, from `hmtt sim --workload quicksort --cache
# off`), merges it into a trace and packs it into a .hmttz archive, then
# runs, from the same input (HMTT_EXPORT_INPUT: `archive`, the default, or
# `trace`), `hmtt export` to every format and `hmtt dump --csv`, and prints
# per command the rows it wrote (records for CSV, Parquet and the dump,
# references for the simulator formats, every record read for Perfetto),
# the CPU seconds of the process (user + system, which a shared machine
# disturbs less than the wall clock), the M rows per CPU-second and per
# wall second, and the peak resident memory (`/usr/bin/time -v`; the input
# is read block by block, so the peak is the writer's own memory plus one
# block and the mapped input). The load average before and after is
# printed: the host is shared. Each output is deleted after it is measured.
#
# HMTT_BENCH_DIR keeps the files (default: a temporary directory, removed);
# HMTT_EXPORT_RECORDS sets the trace size; HMTT_EXPORT_FORMATS the
# commands (formats of `hmtt export`, and `dump-csv`).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench/export.sh: /usr/bin/time (package time) is needed" >&2; exit 1; }
records=${HMTT_EXPORT_RECORDS:-100000000}
formats=${HMTT_EXPORT_FORMATS:-"dramsim3 ramulator2 gem5 perfetto csv dump-csv parquet"}
input=${HMTT_EXPORT_INPUT:-archive}
. bench/scratch-dir.sh
cargo build --release -q -p hmtt
hmtt=$PWD/target/release/hmtt

# quicksort of n keys makes about 70 references per key at n = 2.23 M
# (156 M records), a little fewer for fewer keys (n log n).
n=$((records / 65))
if [ ! -f "$dir/big.hmtttrace" ] || [ ! -f "$dir/big.hmttz" ]; then
    rm -rf "$dir/big"
    "$hmtt" sim --workload quicksort --n "$n" --cache off --out "$dir/big" >"$dir/sim.log"
    "$hmtt" merge "$dir/big" -o "$dir/big.hmtttrace" -q >"$dir/merge.log"
    "$hmtt" pack "$dir/big.hmtttrace" -o "$dir/big.hmttz" >"$dir/pack.log"
    rm -rf "$dir/big"
fi
case $input in
archive) in_file=$dir/big.hmttz ;;
trace) in_file=$dir/big.hmtttrace ;;
*) echo "bench/export.sh: HMTT_EXPORT_INPUT is archive or trace" >&2; exit 1 ;;
esac
grep -h "records" "$dir/merge.log" | head -1
echo "input: $in_file ($(stat -c %s "$in_file") bytes); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

printf '%-11s %12s %10s %10s %14s %12s %12s\n' command rows wall_s cpu_s 'M rows/cpu-s' 'M rows/s' 'peak RSS MB'
for f in $formats; do
    out="$dir/out.$f"
    if [ "$f" = dump-csv ]; then
        /usr/bin/time -v -o "$dir/time.$f.log" "$hmtt" dump "$in_file" --csv >"$out"
        # Every record is a line after the header line.
        n=$(($(wc -l <"$out") - 1))
    else
        /usr/bin/time -v -o "$dir/time.$f.log" "$hmtt" export "$in_file" --format "$f" -o "$out" \
            2>"$dir/export.$f.log" >/dev/null
        # The simulator formats write a row per reference, the others per record.
        case $f in
        dramsim3 | ramulator2 | gem5) n=$(sed -n 's/.*records, \([0-9]*\) references, .*/\1/p' "$dir/export.$f.log") ;;
        *) n=$(sed -n 's/.*: \([0-9]*\) records, .*/\1/p' "$dir/export.$f.log") ;;
        esac
    fi
    secs=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$dir/time.$f.log")
    cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { print s }' "$dir/time.$f.log")
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 / 1024 }' "$dir/time.$f.log")
    size=$(stat -c %s "$out")
    rm -f "$out"
    awk -v f="$f" -v n="$n" -v s="$secs" -v c="$cpu" -v r="$rss" -v b="$size" 'BEGIN {
        printf "%-11s %12d %10.2f %10.2f %14.2f %12.2f %12.1f   (%.0f MB written)\n",
            f, n, s, c, n / c / 1e6, n / s / 1e6, r, b / 1e6 }'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
