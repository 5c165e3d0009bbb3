#!/bin/bash
# The Spark job's overhead at scale: on one archive, alternating, ROUNDS
# times each,
#
# - `hmtt analyze ARCHIVE --threads CORES --json` (wall seconds, CPU
#   seconds, peak RSS: GNU time);
# - `spark-submit --master local[CORES] contrib/spark/hmtt_spark.py` on the
#   same archive, one task per core (wall seconds of the whole command,
#   the JVM's start included; the job alone by the driver's own timer);
#
# then the medians, the ratio of the Spark command's wall time to
# `hmtt analyze`'s, and whether every Spark JSON is the same bytes as
# `hmtt analyze --threads 1`'s (run once, first).
#
# The archive: HMTT_BENCH_ARCHIVE, or else quicksort with the cache off at
# HMTT_BENCH_N elements (default 14,000,000: about 1 G references) run by
# `hmtt sim --captures-only` and merged straight into an archive
# (HMTT_BENCH_DIR keeps it; about 5 bytes a reference of captures while
# it is made, 0.3 in the archive).
#
# HMTT_BENCH_PLOT=1 draws the pictures in every run (`--plot`: for Spark a
# second stage of tasks, docs/format.md §15.1) and compares them too.
#
# HMTT_BENCH_ROUNDS (default 3); HMTT_SPARK_MASTER (default local[CORES]);
# HMTT_SPARK_TASKS (default CORES). Needs GNU time, pyspark and java.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "bench/spark.sh: GNU time (/usr/bin/time) is needed" >&2; exit 1; }
python3 -c 'import pyspark' 2>/dev/null && java -version >/dev/null 2>&1 ||
    { echo "bench/spark.sh: pyspark and java are needed (scripts/setup.sh installs both)" >&2; exit 1; }
n=${HMTT_BENCH_N:-14000000}
rounds=${HMTT_BENCH_ROUNDS:-3}
cores=$(nproc)
master=${HMTT_SPARK_MASTER:-local[$cores]}
tasks=${HMTT_SPARK_TASKS:-$cores}
plot=${HMTT_BENCH_PLOT:-0}
. bench/scratch-dir.sh
cargo build --release -q -p hmtt
hmtt=$PWD/target/release/hmtt
archive=${HMTT_BENCH_ARCHIVE:-$dir/quicksort.hmttz}
if [ ! -f "$archive" ]; then
    "$hmtt" sim --workload quicksort --n "$n" --cache off --captures-only --out "$dir/sim" -q >"$dir/sim.log"
    "$hmtt" merge "$dir/sim" -o "$archive" -q >"$dir/merge.log"
    rm -rf "$dir/sim"
fi
records=$("$hmtt" stats "$archive" | awk '/^references:/ { print $2 }')
echo "archive: $archive, $records references, $(du -h "$archive" | cut -f1)"
echo "machine: $cores cores, load average $(cut -d' ' -f1-3 /proc/loadavg) (before the runs)"

name=$(basename "${archive%.*}")
plot_one=() plot_all=() plot_spark=()
if [ "$plot" = 1 ]; then
    plot_one=(--plot "$dir/t1.plots") plot_all=(--plot "$dir/all.plots") plot_spark=(--plot)
    echo "with the pictures (--plot)"
fi
rm -rf "$dir/t1.plots"
"$hmtt" analyze "$archive" --top 32 --threads 1 --json "$dir/t1.json" "${plot_one[@]}" >/dev/null
same=yes
for r in $(seq "$rounds"); do
    rm -rf "$dir/all.plots"
    /usr/bin/time -f '%e %U %S %M' -o "$dir/hmtt.$r.time" \
        "$hmtt" analyze "$archive" --top 32 --threads "$cores" --json "$dir/all.$r.json" "${plot_all[@]}" >/dev/null
    cmp -s "$dir/all.$r.json" "$dir/t1.json" || same=NO
    [ "$plot" != 1 ] || diff -rq "$dir/all.plots" "$dir/t1.plots" >/dev/null || same=NO
    rm -rf "$dir/spark"
    /usr/bin/time -f '%e %U %S %M' -o "$dir/spark.$r.time" \
        spark-submit --master "$master" --conf spark.ui.enabled=false --files "$hmtt" \
        contrib/spark/hmtt_spark.py --hmtt hmtt --out "$dir/spark" --tasks "$tasks" "${plot_spark[@]}" \
        "$archive" -- --top 32 >"$dir/spark.$r.log" 2>&1
    cmp -s "$dir/spark/$name.json" "$dir/t1.json" || same=NO
    [ "$plot" != 1 ] || diff -rq "$dir/spark/$name" "$dir/t1.plots" >/dev/null || same=NO
    job=$(sed -n 's/^hmtt_spark: [0-9]* archives, [0-9]* tasks, \([0-9.]*\) s$/\1/p' "$dir/spark.$r.log")
    read -r hw hu hs hm <"$dir/hmtt.$r.time"
    read -r sw su ss sm <"$dir/spark.$r.time"
    printf 'round %d: hmtt analyze --threads %d %.2f s wall (%.2f CPU s); spark-submit %.2f s wall, job %s s\n' \
        "$r" "$cores" "$hw" "$(awk -v u="$hu" -v s="$hs" 'BEGIN { print u + s }')" "$sw" "${job:-?}"
    echo "$hw $sw ${job:-0}" >>"$dir/rounds"
done
sort -n -k1 "$dir/rounds" | awk -v n="$rounds" -v c="$cores" -v m="$master" -v t="$tasks" -v recs="$records" '
    { h[NR] = $1 } END { mid = int((n + 1) / 2); printf "median hmtt analyze --threads %d: %.2f s wall, %.1f M references per wall second\n", c, h[mid], recs / h[mid] / 1e6 }'
sort -n -k2 "$dir/rounds" | awk -v n="$rounds" -v m="$master" -v t="$tasks" '
    { s[NR] = $2 } END { mid = int((n + 1) / 2); printf "median spark-submit --master %s, %d tasks: %.2f s wall\n", m, t, s[mid] }'
sort -n -k3 "$dir/rounds" | awk -v n="$rounds" '
    { j[NR] = $3 } END { mid = int((n + 1) / 2); printf "median Spark job by the driver (SparkContext to combine): %.2f s\n", j[mid] }'
awk '{ print $2 / $1 }' "$dir/rounds" | sort -n | awk '{ r[NR] = $1 } END {
    printf "ratio spark-submit wall / hmtt analyze wall, per round: median %.2f (min %.2f, max %.2f)\n", r[int((NR + 1) / 2)], r[1], r[NR] }'
echo "every JSON$([ "$plot" = 1 ] && echo ' and picture') (Spark's and --threads $cores's) the same bytes as --threads 1's: $same"
rm -f "$dir/rounds"
