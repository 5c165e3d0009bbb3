#!/usr/bin/env bash
# The picture gallery of docs/guide.md: every picture `hmtt analyze --plot`
# draws of a simulated quicksort, as PNG, into OUT (default docs/gallery),
# and the program's own addresses from its virtual trace (`hmtt replay`):
# address_time_program.png; and the board's own statistics of the same
# run (`hmtt board --reuse-unit` on its DDR commands): board_*.png.
#
#   scripts/gallery.sh [OUT] [N]      N: elements sorted (default 100000)
#
# HMTT names the hmtt binary (default: hmtt on PATH).
set -euo pipefail

out=${1:-docs/gallery}
n=${2:-100000}
hmtt=${HMTT:-hmtt}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$hmtt" sim --workload quicksort --n "$n" --cache off --out "$work/qs" >/dev/null
"$hmtt" merge "$work/qs" -o "$work/qs.hmtttrace" >/dev/null
"$hmtt" analyze "$work/qs.hmtttrace" --window quicksort_begin,quicksort_end \
    --plot "$work/plots" >/dev/null 2>&1
"$hmtt" replay "$work/qs.hmtttrace" --log "$work/qs/pagetable.hmttlog" \
    --out "$work/qs.hmttvtrace" >/dev/null 2>&1
"$hmtt" analyze "$work/qs.hmttvtrace" --window quicksort_begin,quicksort_end \
    --plot "$work/virtual" >/dev/null 2>&1
# The quicksort workload runs one process: the one picture of a pid.
pictures=("$work"/virtual/address_time_pid*.png)
[ ${#pictures[@]} -eq 1 ] || {
    echo "gallery.sh: expected one process picture, found ${#pictures[@]}" >&2
    exit 1
}
program=${pictures[0]}
cp "$program" "$work/plots/address_time_program.png"
"$hmtt" board --commands "$work/qs/commands-b0.txt" --stats-interval 16 --stats-share 4 \
    --reuse-unit --out "$work/board" -q >/dev/null
"$hmtt" merge "$work/board" -o "$work/board.hmtttrace" -q >/dev/null
"$hmtt" analyze "$work/board.hmtttrace" --plot "$work/board-plots" >/dev/null 2>&1
cp "$work"/board-plots/board_*.png "$work/plots/"

mkdir -p "$out"
for png in "$work"/plots/*.png; do
    name=$(basename "$png")
    # Written under a temporary name and renamed: no cut picture is left.
    cp "$png" "$out/.$name.tmp"
    mv "$out/.$name.tmp" "$out/$name"
done
echo "wrote $(ls "$work"/plots/*.png | wc -l) pictures into $out"
