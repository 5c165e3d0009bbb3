#!/bin/sh
# What `hmtt capture --live` costs: the same board stream (a quicksort run
# through the golden model with both statistics units, sent over loopback
# by `hmtt board --send` at a fixed rate) captured with and without
# `--live --live-jsonl FILE`, alternating, each capture's CPU seconds (user
# + system, GNU time) side by side, and whether both merged to the same
# trace and statistics. Environment: HMTT_BENCH_N (quicksort elements,
# default 100000), HMTT_BENCH_K (the statistics interval's log2, default
# 12: many records), HMTT_BENCH_RATE (Gb/s, default 1), HMTT_BENCH_ROUNDS
# (default 3), HMTT_BENCH_DIR (kept scratch directory).
set -eu
cd "$(dirname "$0")/.."
. bench/scratch-dir.sh
n=${HMTT_BENCH_N:-100000}
k=${HMTT_BENCH_K:-12}
rate=${HMTT_BENCH_RATE:-1}
rounds=${HMTT_BENCH_ROUNDS:-3}
cargo build -q --release --bin hmtt
hmtt=$PWD/target/release/hmtt
cd "$dir"
"$hmtt" sim --workload quicksort --n "$n" --cache off --out sim -q >/dev/null
board() { # port0, the board's output directory
	"$hmtt" board --commands sim/commands-b0.txt --stats-interval "$k" --reuse-unit \
		--out "$2" -q --rate "$rate" \
		--send "127.0.0.1:$1,127.0.0.1:$(($1 + 1)),127.0.0.1:$(($1 + 2))" >/dev/null
}
capture() { # name, port0, extra options...
	name=$1 port=$2
	shift 2
	rm -rf "cap-$name"
	/usr/bin/time -f '%U %S' -o "time-$name" "$hmtt" capture -q --name c \
		--udp-ports "$port-$((port + 2))" --bind 127.0.0.1 -o "cap-$name" \
		"$@" 2>"err-$name" &
	pid=$!
	sleep 1
	board "$port" "board-$name"
	# The board sent everything: a second for the last packets, then the
	# capture (GNU time's child) stops as on a SIGTERM.
	sleep 1
	pkill -TERM -P "$pid"
	wait "$pid"
	"$hmtt" merge "cap-$name" -o "t-$name.hmtttrace" -q >/dev/null
}
"$hmtt" board --commands sim/commands-b0.txt --stats-interval "$k" --reuse-unit \
	--out probe-board -q >/dev/null
bytes=$(cat probe-board/board0-port*.hmttcap | wc -c)
records=$(grep -o '"records_sent": [0-9]*' probe-board/board0-summary.json | grep -o '[0-9]*$')
printf 'quicksort of %s elements, statistics interval 2^%s ticks, %s records, %s bytes of packets at %s Gb/s\n' \
	"$n" "$k" "$records" "$bytes" "$rate"
printf '%-6s %-22s %-10s %-10s %s\n' round capture "CPU s" ratio "same trace and statistics"
port=47300
for r in $(seq 1 "$rounds"); do
	capture plain "$port"
	port=$((port + 3))
	capture live "$port" --live --live-jsonl live.jsonl
	port=$((port + 3))
	plain=$(awk '{ print $1 + $2 }' time-plain)
	live=$(awk '{ print $1 + $2 }' time-live)
	same=no
	if [ "$("$hmtt" dump t-plain.hmtttrace --csv | md5sum)" = "$("$hmtt" dump t-live.hmtttrace --csv | md5sum)" ] &&
		cmp -s t-plain.hmtttrace.stats.jsonl t-live.hmtttrace.stats.jsonl &&
		[ "$(sort live.jsonl | md5sum)" = "$(sort t-live.hmtttrace.stats.jsonl | md5sum)" ]; then
		same=yes
	fi
	printf '%-6s %-22s %-10s %-10s\n' "$r" "plain" "$plain" ""
	printf '%-6s %-22s %-10s %-10s %s\n' "$r" "--live --live-jsonl" "$live" \
		"$(awk -v a="$live" -v b="$plain" 'BEGIN { printf "%.2f", a / b }')" "$same"
done
