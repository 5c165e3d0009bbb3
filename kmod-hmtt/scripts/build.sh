#!/bin/sh
# Build hmtt.ko (and, with --test, the test module hmtt_dmatest.ko, hmtt
# qemu's hmtt_qemu_pid.ko and the static guest test program) out of tree in OUT_DIR, so that the source tree
# stays clean and concurrent builds do not collide.
#
# Usage: build.sh OUT_DIR [--test]
# Needs: make, gcc, linux-headers-amd64 (the version it depends on is used).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
out=${1:?usage: build.sh OUT_DIR [--test]}
with_test=${2:-}
kver=$("$here/kernel-version.sh")
kdir=/lib/modules/$kver/build
if [ ! -d "$kdir" ]; then
	echo "build.sh: $kdir missing: apt-get install linux-headers-amd64" >&2
	exit 1
fi
jobs=${HMTT_BUILD_JOBS:-2}

mkdir -p "$out"
rm -rf "$out/module" "$out/include" "$out/test"
cp -r "$src/module" "$src/include" "$out/"
rm -f "$out"/module/*.o "$out"/module/*.ko "$out"/module/.*.cmd
make -s -j"$jobs" -C "$kdir" M="$out/module" modules
echo "build.sh: $out/module/hmtt.ko ($kver)"

if [ "$with_test" = "--test" ]; then
	mkdir -p "$out/test"
	cp -r "$src/test/dmatest" "$out/test/"
	make -s -j"$jobs" -C "$kdir" M="$out/test/dmatest" \
		KBUILD_EXTRA_SYMBOLS="$out/module/Module.symvers" modules
	cp -r "$src/test/qemu/pid" "$out/test/"
	make -s -j"$jobs" -C "$kdir" M="$out/test/pid" modules
	gcc -static -O2 -Wall -Werror -I"$src/include" \
		-o "$out/test/hmtt_guest_test" "$src/test/guest/hmtt_guest_test.c"
	echo "build.sh: $out/test/dmatest/hmtt_dmatest.ko $out/test/pid/hmtt_qemu_pid.ko $out/test/hmtt_guest_test"
fi
