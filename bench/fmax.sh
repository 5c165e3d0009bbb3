#!/usr/bin/env bash
# fmax and utilisation per FPGA target, printed next to the previous
# recorded figures so regressions show; each run is appended to the history.
#
#   bench/fmax.sh [board...]          (default: ecp5-85f ice40-hx8k)
#
# Environment: TOP=board|flow-probe (default board), UNITS=none|statistics
# (default none; statistics: the ECP5 with the Statistic Unit), SEED (default 1),
# OUT (default build/fmax), HISTORY (default bench/fmax-history.jsonl),
# RECORD=0 to compare without appending.
set -euo pipefail

cd "$(dirname "$0")/.."
top=${TOP:-board}
units=()
[ -n "${UNITS:-}" ] && units=(--units "$UNITS")
seed=${SEED:-1}
out=${OUT:-build/fmax}
history=${HISTORY:-bench/fmax-history.jsonl}
record=${RECORD:-1}
boards=("$@")
[ ${#boards[@]} -eq 0 ] && boards=(ecp5-85f ice40-hx8k)

cargo build -q -p hmtt
target_dir=${CARGO_TARGET_DIR:-target}
hmtt="$target_dir/debug/hmtt"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git diff --quiet HEAD -- hdl firmware constraints 2>/dev/null; then
    commit="$commit+dirty"
fi

record_flag=()
[ "$record" = 1 ] && record_flag=(--record)
status=0
for board in "${boards[@]}"; do
    echo "== $board (top $top${UNITS:+, units $UNITS}, seed $seed)"
    start=$(date +%s)
    # A missed clock makes `build` exit non-zero after writing its report;
    # the figures are still recorded, and the script's status says so.
    if ! "$hmtt" firmware build --board "$board" --top "$top" "${units[@]}" --seed "$seed" --out "$out/$board" >/dev/null; then
        status=1
    fi
    if [ ! -f "$out/$board/$board.report.json" ]; then
        echo "$board: no report (the flow failed before place and route)" >&2
        status=1
        continue
    fi
    "$hmtt" firmware report --board "$board" --out "$out/$board" \
        --history "$history" --commit "$commit" "${record_flag[@]}"
    echo "   wall time $(( $(date +%s) - start )) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    # CPU time of this script's children so far (yosys, nextpnr, packer):
    # the figure that means something on a loaded machine.
    echo "   CPU time of the flows so far (user, system): $(times | tail -n 1)"
done
exit $status
