#!/bin/sh
# The cost of hmtt.ko's context-switch hook (sched_switch -> SWITCH
# records): boots the QEMU test guest with an /init that only runs
# "hmtt_guest_test switch-cost" and prints its figures: a pipe ping-pong's
# round trip with nothing traced, with an unrelated process traced (the
# hook's filter tests only) and with both sides traced (a SWITCH record per
# switch). Emulated CPUs: the ratios matter, not the times.
#
# Usage: switch-bench.sh [OUT_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${TMPDIR:-/tmp}/hmtt-switch-bench}
HMTT_GUEST_INIT="$here/../test/guest/switch-bench" "$here/qemu-test.sh" "$out" >/dev/null
grep -E '^(INFO switch-cost|FAIL)' "$out/console.log"
