#!/bin/sh
# Receiver benchmark: this receiver vs tcpdump -w on loopback at rising
# rates, 1500- and 9000-byte packets. Needs root (tcpdump on lo, large
# socket buffers) and tcpdump. Options through the environment, see
# receiver/benches/receiver.rs (HMTT_BENCH_DIR, HMTT_BENCH_SECONDS, ...).
# HMTT_BENCH_BOARDS=4 adds 4 simulated boards x 3 ports into one capture,
# each capture's merge compared with the merge of the boards' own files;
# HMTT_BENCH_SIZES= (empty) runs that scenario alone.
# The bench runs in a network namespace of its own; HMTT_BENCH_SENDER=udp
# sends from a UDP socket instead of AF_PACKET frames (udp,packet: both).
# HMTT_BENCH_PATH=veth-rps: the sender and the capture each on a CPU of
# their own (a veth pair between two namespaces, receive packet steering
# to the capture's CPU), the capture's CPU counted from /proc/stat.
set -eu
cd "$(dirname "$0")/.."
command -v tcpdump >/dev/null || { echo "bench/receiver.sh: tcpdump is needed" >&2; exit 1; }
exec cargo bench -p hmtt-receiver --bench receiver "$@"
