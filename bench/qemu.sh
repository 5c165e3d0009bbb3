#!/bin/sh
# hmtt qemu benchmark: guest accesses traced per second (the plugin and the
# memory path together, as hmtt qemu prints it) with the cache model on and
# off, and the slowdown of the traced command against plain TCG, measured
# round by round in the same run: each round, for each vCPU count, boots
# plain TCG, then the traced modes, on `hmtt_sort 4096` (QEMU runs every
# vCPU on one thread, with the plugin or without). Prints every run and the
# medians.
#
# Environment: HMTT_BENCH_RUNS rounds (default 5); HMTT_BENCH_SMP the vCPU
# counts (default "1 2"); HMTT_BENCH_TRUTH_CSV=1
# adds both modes with --truth-csv; HMTT_BENCH_DIR keeps the runs' output
# directories there (default: a temporary directory, removed).
# Needs what hmtt qemu needs (scripts/setup.sh installs it).
set -eu
cd "$(dirname "$0")/.."
runs=${HMTT_BENCH_RUNS:-5}
smps=${HMTT_BENCH_SMP:-1 2}
. bench/scratch-dir.sh
cargo build --release -q -p hmtt
kmod-hmtt/scripts/qemu-kit.sh target/qemu-kit >/dev/null
hmtt=target/release/hmtt
kit=target/qemu-kit
modes="on off"
if [ "${HMTT_BENCH_TRUTH_CSV:-}" = 1 ]; then
	modes="$modes on+csv off+csv"
fi
results=$dir/results.txt
: >"$results"

# One traced run at $smp vCPUs: "<mode> <M accesses/s> <command s>".
traced() {
	mode=$1
	cache=${mode%+csv}
	csv=
	[ "$cache" = "$mode" ] || csv=--truth-csv
	out=$dir/$mode
	rm -rf "$out"
	# shellcheck disable=SC2086
	"$hmtt" qemu --kit "$kit" --out "$out" --smp "$smp" --cache "$cache" $csv \
		--add "$kit/hmtt_sort" --events "$kit/hmtt_sort.events.toml" \
		-- hmtt_sort 4096 >"$dir/$mode.log" 2>&1
	rate=$(sed -n 's/.*of streaming: \([0-9.]*\) M accesses\/s.*/\1/p' "$dir/$mode.log")
	secs=$(sed -n 's/^guest: .*command took \([0-9.]*\) s.*/\1/p' "$dir/$mode.log")
	[ -n "$rate" ] && [ -n "$secs" ] || {
		echo "bench/qemu.sh: no figures from the $mode run:" >&2
		tail -5 "$dir/$mode.log" >&2
		exit 1
	}
	echo "$mode $rate $secs"
}

round=1
while [ "$round" -le "$runs" ]; do
	for smp in $smps; do
		rm -rf "$dir/plain"
		"$hmtt" qemu --kit "$kit" --out "$dir/plain" --plain --smp "$smp" \
			--add "$kit/hmtt_sort" -- hmtt_sort 4096 >"$dir/plain.log" 2>&1
		plain=$(sed -n 's/^plain TCG: command took \([0-9.]*\) s.*/\1/p' "$dir/plain.log")
		[ -n "$plain" ] || { echo "bench/qemu.sh: no figure from the plain run" >&2; exit 1; }
		for mode in $modes; do
			line=$(traced "$mode")
			# shellcheck disable=SC2086
			set -- $line
			slowdown=$(awk -v a="$3" -v b="$plain" 'BEGIN { printf "%.1f", a / b }')
			printf 'round %d  vCPUs %d  cache %-7s %6.2f M accesses/s  command %.3f s  plain %.3f s  slowdown %sx\n' \
				"$round" "$smp" "$1" "$2" "$3" "$plain" "$slowdown"
			echo "$smp $1 $2 $slowdown" >>"$results"
		done
	done
	round=$((round + 1))
done

echo "medians over $runs rounds (slowdown: the traced command over plain TCG's in the same round):"
for smp in $smps; do
	for mode in $modes; do
		for col in 3 4; do
			awk -v n="$smp" -v m="$mode" -v c="$col" '$1 == n && $2 == m { print $c }' "$results" | sort -n |
				awk '{ v[NR] = $1 } END { printf "%s ", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
		done | awk -v n="$smp" -v m="$mode" '{ printf "  vCPUs %d  cache %-7s %6.2f M accesses/s  slowdown %.1fx\n", n, m, $1, $2 }'
	done
done
