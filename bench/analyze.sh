#!/bin/bash
# `hmtt analyze` benchmark, side by side in one run on one trace:
#
# - `hmtt analyze` on the archive (.hmttz) at 1 thread and at all threads,
#   with the exact reuse distances and with `--reuse sampled` (1 %), and
#   on the trace file: CPU seconds (user + system), M references per
#   CPU-second, wall seconds, peak resident memory (GNU time);
# - each figure group alone (`cargo bench --bench analyze_groups`: one
#   pass per group over the archive's blocks, decoding included);
# - DuckDB (Python package `duckdb`) on the trace's Parquet export, computing
#   the figures SQL can express: the read/write mix per board, references
#   per bandwidth interval (the interval `hmtt analyze` chose), references
#   per rank and bank (the trace's geometry, linear mapping) and the 32
#   hottest pages. DuckDB's time counts its Parquet read, not the export.
#   Its CPU seconds are its process' (all its threads);
# - contrib/spark/hmtt_spark.py on the same archive in Spark's local mode
#   (HMTT_SPARK_MASTER, default local[CORES]; one task per block range,
#   HMTT_SPARK_TASKS per archive, default CORES): its wall time, JVM start
#   included, against `hmtt analyze --threads 1` and at all threads, and
#   whether its JSON is the same bytes as theirs (skipped with a note
#   without pyspark and java);
# - the ratios.
#
# The trace: quicksort with the cache off (about 70 memory references per
# element, so the default 2,230,000 elements make about 156 M references),
# merged, then packed. The machine's load average is printed: CPU seconds
# are what count on a shared machine.
#
# HMTT_BENCH_N sets the elements (e.g. 22000 for about 1.5 M references);
# HMTT_BENCH_DIR keeps the files (default: a temporary directory, removed).
# Needs GNU time (/usr/bin/time, Debian package `time`) and, for the
# DuckDB rows, python3 with duckdb (skipped with a note without).
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
cores=$(nproc)
echo "trace: hmtt sim --workload quicksort --n $n --cache off, merged: $records references"
echo "machine: $cores cores, load average $(cut -d' ' -f1-3 /proc/loadavg) (before the runs)"
echo

row() { # label, cpu s, wall s, peak MiB
    awk -v label="$1" -v r="$records" -v c="$2" -v w="$3" -v m="$4" \
        'BEGIN { printf "%-34s %9.2f %12.1f %9.2f %10.1f\n", label, c, r / c / 1e6, w, m }'
}
measure() { # label, file, analyze arguments...
    local label=$1 file=$2
    shift 2
    /usr/bin/time -v "$hmtt" analyze "$file" "$@" >"$dir/$label.txt" 2>"$dir/$label.time"
    read -r cpu wall mib < <(awk -F': ' '
        /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { m = $2 }
        /Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
        END { print u + s, w, m / 1024 }' "$dir/$label.time")
    row "hmtt analyze $label" "$cpu" "$wall" "$mib"
    eval "cpu_${label//[^a-z0-9]/_}=$cpu; wall_${label//[^a-z0-9]/_}=$wall"
}

printf '%-34s %9s %12s %9s %10s\n' run cpu_s 'M refs/cpu-s' wall_s peak_MiB
measure hmttz-t1 "$dir/quicksort.hmttz" --top 32 --threads 1 --json "$dir/t1.json"
measure hmttz-all "$dir/quicksort.hmttz" --top 32 --threads "$cores" --json "$dir/all.json"
measure trace-t1 "$trace" --top 32 --threads 1
measure hmttz-t1-sampled "$dir/quicksort.hmttz" --top 32 --threads 1 --reuse sampled:0.01
cmp -s "$dir/t1.json" "$dir/all.json" && same=yes || same=NO
echo "JSON of $cores threads the same bytes as 1 thread: $same"
awk -v a="$wall_hmttz_t1" -v b="$wall_hmttz_all" -v n="$cores" \
    'BEGIN { printf "threads speedup (wall, 1 -> %d threads): %.2fx\n", n, a / b }'

echo
echo "figure groups alone, 1 thread (one pass each over the archive, decoding included):"
cargo bench -q -p hmtt-analyze --bench analyze_groups -- "$dir/quicksort.hmttz" 2>/dev/null

if python3 -c 'import duckdb' 2>/dev/null; then
    [ -f "$dir/quicksort.parquet" ] ||
        "$hmtt" export "$dir/quicksort.hmttz" --format parquet -o "$dir/quicksort.parquet" >/dev/null 2>&1
    echo
    /usr/bin/time -v python3 bench/analyze_duckdb.py "$dir/quicksort.parquet" "$dir/t1.json" \
        >"$dir/duckdb.txt" 2>"$dir/duckdb.time"
    read -r dcpu dwall dmib < <(awk -F': ' '
        /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { m = $2 }
        /Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
        END { print u + s, w, m / 1024 }' "$dir/duckdb.time")
    cat "$dir/duckdb.txt"
    printf '%-34s %9s %12s %9s %10s\n' run cpu_s 'M refs/cpu-s' wall_s peak_MiB
    row "duckdb (process, import included)" "$dcpu" "$dwall" "$dmib"
    qcpu=$(awk '/^duckdb queries:/ { print $3 }' "$dir/duckdb.txt")
    qwall=$(awk '/^duckdb queries:/ { print $5 }' "$dir/duckdb.txt")
    awk -v h="$cpu_hmttz_t1" -v ha="$cpu_hmttz_all" -v hw="$wall_hmttz_all" -v q="$qcpu" -v qw="$qwall" 'BEGIN {
        printf "ratio DuckDB query CPU s / hmtt analyze CPU s (1 thread, every figure): %.2f\n", q / h
        printf "ratio DuckDB query CPU s / hmtt analyze CPU s (all threads): %.2f\n", q / ha
        printf "ratio DuckDB query wall s / hmtt analyze wall s (all threads): %.2f\n", qw / hw }'
else
    echo "DuckDB rows skipped: python3 -c 'import duckdb' fails"
fi

spark_master=${HMTT_SPARK_MASTER:-local[$cores]}
spark_tasks=${HMTT_SPARK_TASKS:-$cores}
if python3 -c 'import pyspark' 2>/dev/null && java -version >/dev/null 2>&1; then
    echo
    rm -rf "$dir/spark"
    start=$(date +%s.%N)
    spark-submit --master "$spark_master" --conf spark.ui.enabled=false --files "$hmtt" \
        contrib/spark/hmtt_spark.py --hmtt hmtt --out "$dir/spark" --tasks "$spark_tasks" \
        "$dir/quicksort.hmttz" -- --top 32 >"$dir/spark.log" 2>&1
    swall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { print e - s }')
    cmp -s "$dir/spark/quicksort.json" "$dir/t1.json" && same=yes || same=NO
    grep -h '^hmtt_spark: [0-9]* archives' "$dir/spark.log" || true
    printf '%-34s %9s %12s %9.2f\n' "spark $spark_master, $spark_tasks tasks" - - "$swall"
    echo "Spark job's JSON the same bytes as hmtt analyze --threads 1's: $same"
    awk -v s="$swall" -v a="$wall_hmttz_t1" -v b="$wall_hmttz_all" -v n="$cores" 'BEGIN {
        printf "ratio Spark job wall s / hmtt analyze wall s (1 thread): %.2f\n", s / a
        printf "ratio Spark job wall s / hmtt analyze wall s (%d threads): %.2f\n", n, s / b }'
else
    echo "Spark rows skipped: pyspark or java missing (scripts/setup.sh installs both)"
fi
