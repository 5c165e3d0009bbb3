#!/bin/bash
# Export benchmark: makes one large trace (about HMTT_EXPORT_RECORDS
# references, default 100 M, from `hmtt sim --workload quicksort --cache
# off`), merges it into a trace and packs it into a .hmttz archive, then
# runs, from the same input (HMTT_EXPORT_INPUT: `archive`, the default, or
# `trace`), `hmtt export` to every format and `hmtt dump --csv`, each with
# this tree's build and then with a reference build, and prints per command
# and build the rows it wrote (records for CSV, Parquet and the dump,
# references for the simulator formats, every record read for Perfetto),
# the CPU seconds of the process (user + system, which a shared machine
# disturbs less than the wall clock), the M rows per CPU-second and per
# wall second, the peak resident memory (`/usr/bin/time -v`; the input is
# read block by block, so the peak is the writer's own memory plus one
# block and the mapped input), the ratio of the rates (this build /
# reference, above 1 is faster), the rate against issue 36's target, and
# whether the two builds wrote the same bytes (Parquet: the encodings may
# differ; compare its values instead). First `hmtt stats` reads, decodes
# and counts the same input: near the floor every command pays. The load average
# before and after is printed: the host is shared.
#
# The reference: HMTT_REF_BIN, an already built binary, or else the
# commit HMTT_REF_COMMIT (default 661e7e1, the exports before issue 36's
# work) built apart in its own target directory (slow: a full release
# build). HMTT_REF_BIN=none skips it.
#
# Each command runs HMTT_BENCH_ROUNDS times (default 3) per build, the
# builds alternating; the medians are printed.
#
# `parquet-dataset` is `--format parquet --partition-ms
# HMTT_EXPORT_PARTITION_MS` (default 10) into a directory; this build
# only (the reference has no --partition-ms); its row count is every
# record, like the single file's.
#
# HMTT_EXPORT_READ=1 then weighs the Parquet files of both builds on the
# read side: `bench/export_read_duckdb.py` prints DuckDB's CPU seconds (one
# thread, HMTT_BENCH_ROUNDS rounds, the files alternating) to read every
# column and some columns alone, and each file's size.
#
# HMTT_BENCH_DIR keeps the files (default: a temporary directory, removed);
# HMTT_EXPORT_RECORDS sets the trace size; HMTT_EXPORT_FORMATS the
# commands (formats of `hmtt export`, `parquet-dataset` and `dump-csv`).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench/export.sh: /usr/bin/time (package time) is needed" >&2; exit 1; }
records=${HMTT_EXPORT_RECORDS:-100000000}
formats=${HMTT_EXPORT_FORMATS:-"dramsim3 ramulator2 gem5 perfetto csv dump-csv parquet parquet-dataset"}
partition_ms=${HMTT_EXPORT_PARTITION_MS:-10}
input=${HMTT_EXPORT_INPUT:-archive}
ref_commit=${HMTT_REF_COMMIT:-661e7e1}
rounds=${HMTT_BENCH_ROUNDS:-3}
. bench/scratch-dir.sh
cargo build --release -q -p hmtt
hmtt=${CARGO_TARGET_DIR:-$PWD/target}/release/hmtt
. bench/reference-build.sh
builds="this"
[ "$ref" = none ] || builds="this ref"

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
[ -f "$dir/merge.log" ] && grep -h "records" "$dir/merge.log" | head -1
echo "input: $in_file ($(stat -L -c %s "$in_file") bytes); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "this build: $hmtt; reference: $ref"

# Issue 36's target of a command, M rows per CPU-second.
target() {
    case $1 in
    csv | dump-csv) echo 20 ;;
    *) echo 30 ;;
    esac
}

# Runs command $1 with binary $2 into $3; prints "rows wall cpu rss_mb".
measure() {
    local f=$1 bin=$2 out=$3 rows
    if [ "$f" = dump-csv ]; then
        /usr/bin/time -v -o "$dir/time.log" "$bin" dump "$in_file" --csv >"$out"
        # Every record is a line after the header line.
        rows=$(($(wc -l <"$out") - 1))
    elif [ "$f" = parquet-dataset ]; then
        /usr/bin/time -v -o "$dir/time.log" "$bin" export "$in_file" --format parquet \
            --partition-ms "$partition_ms" -o "$out" 2>"$dir/export.log" >/dev/null
        rows=$(sed -n 's/.*: \([0-9]*\) records, .*/\1/p' "$dir/export.log")
    elif [ "$f" = stats ]; then
        /usr/bin/time -v -o "$dir/time.log" "$bin" stats "$in_file" >"$out"
        rows=$(awk '/records, / { print $3; exit }' "$out")
    else
        /usr/bin/time -v -o "$dir/time.log" "$bin" export "$in_file" --format "$f" -o "$out" \
            2>"$dir/export.log" >/dev/null
        # The simulator formats write a row per reference, the others per record.
        case $f in
        dramsim3 | ramulator2 | gem5) rows=$(sed -n 's/.*records, \([0-9]*\) references, .*/\1/p' "$dir/export.log") ;;
        *) rows=$(sed -n 's/.*: \([0-9]*\) records, .*/\1/p' "$dir/export.log") ;;
        esac
    fi
    awk -F': ' -v n="$rows" '
        /Elapsed \(wall clock\)/ { k = split($2, t, ":"); w = 0; for (i = 1; i <= k; i++) w = w * 60 + t[i] }
        /User time|System time/ { c += $2 }
        /Maximum resident set size/ { r = $2 / 1024 }
        END { print n, w, c, r }' "$dir/time.log"
}

# The median of the numbers given, one per line.
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-10s %-5s %12s %8s %8s %13s %10s %8s %11s %10s %6s\n' \
    command build rows wall_s cpu_s 'M rows/cpu-s' 'M rows/s' 'RSS MB' 'this/ref' '/target' same
for f in stats $formats; do
    : >"$dir/runs.txt"
    same=-
    # Rounds alternate the builds so that a change of the host's load
    # falls on both; the medians are printed.
    these=$builds
    [ "$f" = parquet-dataset ] && these=this
    for ((round = 1; round <= rounds; round++)); do
        for b in $these; do
            bin=$hmtt
            [ "$b" = ref ] && bin=$ref
            read -r rows wall cpu rss < <(measure "$f" "$bin" "$dir/out.$f.$b")
            echo "$b $rows $wall $cpu $rss $(du -sb "$dir/out.$f.$b" | cut -f1)" >>"$dir/runs.txt"
        done
        if [ "$these" != this ] && [ "$f" != parquet ] && [ "$same" != NO ]; then
            if cmp -s "$dir/out.$f.this" "$dir/out.$f.ref"; then same=yes; else same=NO; fi
        fi
        if [ "$f" = parquet ] && [ "${HMTT_EXPORT_READ:-0}" = 1 ] && [ "$round" = "$rounds" ]; then
            mv "$dir/out.$f.this" "$dir/read.this.parquet"
            [ "$these" = this ] || mv "$dir/out.$f.ref" "$dir/read.ref.parquet"
        fi
        rm -rf "$dir/out.$f.this" "$dir/out.$f.ref"
    done
    for b in $these; do
        rows=$(awk -v b="$b" '$1 == b { print $2; exit }' "$dir/runs.txt")
        size=$(awk -v b="$b" '$1 == b { print $6; exit }' "$dir/runs.txt")
        wall=$(awk -v b="$b" '$1 == b { print $3 }' "$dir/runs.txt" | median)
        cpu=$(awk -v b="$b" '$1 == b { print $4 }' "$dir/runs.txt" | median)
        rss=$(awk -v b="$b" '$1 == b { print $5 }' "$dir/runs.txt" | median)
        rate=$(awk -v n="$rows" -v c="$cpu" 'BEGIN { printf "%.4f", n / c / 1e6 }')
        ratio=-
        [ "$b" = ref ] && ratio=$(awk -v a="$this_rate" -v b="$rate" 'BEGIN { printf "%.2f", a / b }')
        [ "$b" = this ] && this_rate=$rate
        goal=-
        [ "$f" = stats ] || goal=$(awk -v a="$rate" -v t="$(target "$f")" 'BEGIN { printf "%.2f", a / t }')
        shown=-
        [ "$b" = ref ] && shown=$same
        awk -v f="$f" -v b="$b" -v n="$rows" -v s="$wall" -v c="$cpu" -v r="$rss" -v x="$ratio" \
            -v g="$goal" -v m="$shown" -v sz="$size" 'BEGIN {
            printf "%-10s %-5s %12d %8.2f %8.2f %13.2f %10.2f %8.1f %11s %10s %6s   (%.0f MB written)\n",
                f, b, n, s, c, n / c / 1e6, n / s / 1e6, r, x, g, m, sz / 1e6 }'
    done
done
if [ -f "$dir/read.this.parquet" ]; then
    echo "DuckDB reading the Parquet files:"
    # shellcheck disable=SC2046
    python3 bench/export_read_duckdb.py "$rounds" "$dir/read.this.parquet" \
        $([ -f "$dir/read.ref.parquet" ] && echo "$dir/read.ref.parquet")
    rm -f "$dir/read.this.parquet" "$dir/read.ref.parquet"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
