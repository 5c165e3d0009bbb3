#!/usr/bin/env bash
# Runs two hmtt builds on the same inputs and compares what they print and
# write, for changes that must not change outputs (restructuring):
#
#   bash scripts/compare-outputs.sh REF_HMTT NEW_HMTT [WORK_DIR]
#
# For the quicksort and mix workloads (2 boards, checked against the ground
# truth): sim, merge, stats, replay (with its failure paths), analyze
# (trace, virtual trace, archive with pictures, --combine, --window), pack,
# dump, every export format and board (every option family, and bad
# values); then a demo run (its trace and checks; capture rates and
# durations print differently from run to run). Prints each stdout or stderr that differs, with
# the first lines of the diff (DIFFLINES, default 10), and each written
# file that differs; nothing else when the two builds agree. Durations and
# rates in the printed lines differ from run to run: read the diffs.
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 REF_HMTT NEW_HMTT [WORK_DIR]" >&2
    exit 2
fi
ref_bin=$(realpath "$1")
new_bin=$(realpath "$2")
work=${3:-$(mktemp -d -t hmtt-compare-XXXXXX)}
rm -rf "$work"
mkdir -p "$work/ref" "$work/new"
cd "$work" || exit 2
export RUST_BACKTRACE=0 RUST_LIB_BACKTRACE=0 NO_COLOR=1

run() { # name, hmtt arguments...
    local name=$1 v bin
    shift
    for v in ref new; do
        bin=$ref_bin
        [ "$v" = new ] && bin=$new_bin
        (cd "$v" && "$bin" "$@" >"../$name.$v.out" 2>"../$name.$v.err"; echo "exit $?" >>"../$name.$v.out")
    done
    for s in out err; do
        if ! cmp -s "$name.ref.$s" "$name.new.$s"; then
            echo "== $name.$s differs"
            diff "$name.ref.$s" "$name.new.$s" | head -"${DIFFLINES:-10}"
        fi
    done
}

echo 'not toml [' >ref/bad.toml
cp ref/bad.toml new/
for wl in quicksort mix; do
    run "sim-$wl" sim --workload "$wl" --out "run-$wl" --boards 2 --check
    # The runs' files hold the wall-clock time: both builds read the
    # reference's from here on.
    rm -rf "new/run-$wl"
    cp -a "ref/run-$wl" new/
    commands=run-$wl/commands-b0.txt
    run "merge-$wl" merge "run-$wl" --events "run-$wl/events.toml" -o "run-$wl.hmtttrace"
    run "stats-$wl" stats "run-$wl.hmtttrace"
    run "stats-intervals-$wl" stats "run-$wl.hmtttrace" --interval-ms 0.01 --max-rows 3
    run "replay-$wl" replay "run-$wl.hmtttrace" --log "run-$wl/pagetable.hmttlog" --out "run-$wl.hmttvtrace" --csv refs.csv
    run "replay-limit-$wl" replay "run-$wl.hmtttrace" --log "run-$wl/pagetable.hmttlog" --max-unattributed 0 --pid 2
    run "replay-fail-$wl" replay "run-$wl.hmtttrace" --log "run-$wl/pagetable.hmttlog" --max-unattributed 0.001
    run "analyze-$wl" analyze "run-$wl.hmtttrace" --json a.json
    run "analyze-virtual-$wl" analyze "run-$wl.hmttvtrace" --reuse sampled
    run "analyze-combine-$wl" analyze --combine a.json
    run "analyze-window-$wl" analyze "run-$wl.hmtttrace" --window 0,1
    run "pack-$wl" pack "run-$wl.hmtttrace" -o "run-$wl.hmttz" --block-records 65536
    run "analyze-archive-$wl" analyze "run-$wl.hmttz" --json z.json --threads 2 --plot "plot-$wl"
    run "dump-$wl" dump "run-$wl.hmttz" --csv
    run "dump-virtual-$wl" dump "run-$wl.hmttvtrace" --csv --limit 5000
    for fmt in dramsim3 ramulator2 gem5 csv parquet perfetto; do
        run "export-$fmt-$wl" export "run-$wl.hmttz" --format "$fmt" -o "export-$wl.$fmt"
    done
    run "export-virtual-$wl" export "run-$wl.hmttvtrace" --format parquet -o "export-virtual-$wl.parquet"
    run "board-$wl" board --commands "$commands" --out "board-$wl"
    run "board-stats-$wl" board --commands "$commands" --out "board-stats-$wl" --stats-interval 10 --geometry ddr3-8g --lanes 4
    run "board-core-$wl" board --commands "$commands" --out "board-core-$wl" --core ice40-hx8k --ports 3
    run "board-bytes-$wl" board --commands "$commands" --out "board-bytes-$wl" --geometry ddr-512m --config-bytes 1G
    run "board-ports-$wl" board --commands "$commands" --out "board-ports-$wl" --config-bytes 64 --ports 2
    run "board-drain-$wl" board --commands "$commands" --out "board-drain-$wl" --drain 7/7
    run "board-no-mapping-$wl" board --commands "$commands" --out "board-no-mapping-$wl" --mapping /nonexistent
    run "board-bad-mapping-$wl" board --commands "$commands" --out "board-bad-mapping-$wl" --mapping bad.toml
done
# The demo captures over loopback: its captures hold arrival times and its
# summary durations, so what is compared is its exit status and its trace.
for v in ref new; do
    bin=$ref_bin
    [ "$v" = new ] && bin=$new_bin
    (cd "$v" && "$bin" demo --workload mix --keep demo-run -q >/dev/null 2>&1; echo "exit $?" >"../demo.$v.exit")
done
cmp -s demo.ref.exit demo.new.exit || echo "== demo exit status differs: $(cat demo.ref.exit) / $(cat demo.new.exit)"
run "demo-trace" dump demo-run/demo.hmtttrace --csv
run "demo-stats" stats demo-run/demo.hmtttrace

for f in $(cd ref && find . -type f -not -path './demo-run/*' | sort); do
    cmp -s "ref/$f" "new/$f" || echo "file differs: $f"
done
