#!/bin/sh
# Boot Debian's kernel (the version linux-headers-amd64 points at) under
# qemu-system-x86_64 with software emulation and memmap=8M$0x10000000, load
# hmtt.ko from a busybox initramfs and run the guest checks
# (test/guest/init). Guest RAM is a file, so the host can afterwards check
# what landed at which physical address.
#
# Usage: [HMTT_PREBUILT=DIR] [HMTT_GUEST_INIT=FILE] qemu-test.sh OUT_DIR
# HMTT_GUEST_INIT replaces the guest's /init (default test/guest/init; the
# bench scripts/switch-bench.sh uses test/guest/switch-bench).
# Leaves OUT_DIR/console.log (serial console) and OUT_DIR/guest-ram (guest
# physical memory, sparse). Exit status 0 when the guest reached its end
# marker, whatever the PASS/FAIL lines say.
# Needs: qemu-system-x86, busybox-static, cpio, gcc, make,
# linux-headers-amd64, and the kernel image from fetch-kernel.sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
repo=$(cd "$src/.." && pwd)
out=${1:?usage: qemu-test.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
kver=$("$here/kernel-version.sh")
cache=${HMTT_KMOD_CACHE:-$repo/target/kmod-cache}
kernel="$cache/vmlinuz-$kver"

need() {
	command -v "$1" >/dev/null 2>&1 || {
		echo "qemu-test.sh: $1 not found: apt-get install $2" >&2
		exit 2
	}
}
need qemu-system-x86_64 qemu-system-x86
need cpio cpio
need gcc gcc
need make make
if [ ! -s "$kernel" ]; then
	echo "qemu-test.sh: kernel image $kernel missing: run kmod-hmtt/scripts/fetch-kernel.sh (scripts/setup.sh does)" >&2
	exit 2
fi
busybox=${HMTT_BUSYBOX:-/bin/busybox}
if ! file -L "$busybox" 2>/dev/null | grep -q 'statically linked'; then
	if [ ! -x "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
		echo "qemu-test.sh: $busybox is not a static busybox: apt-get install busybox-static" >&2
		exit 2
	fi
fi

# HMTT_PREBUILT: a directory already filled by "build.sh DIR --test".
build=${HMTT_PREBUILT:-$out/build}
if [ -z "${HMTT_PREBUILT:-}" ]; then
	"$here/build.sh" "$build" --test
fi

# The initramfs.
root="$out/initramfs"
rm -rf "$root"
mkdir -p "$root/bin" "$root/etc" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
cp "$busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "${HMTT_GUEST_INIT:-$src/test/guest/init}" "$root/init"
chmod +x "$root/init"
cp "$build/module/hmtt.ko" "$root/hmtt.ko"
cp "$build/test/dmatest/hmtt_dmatest.ko" "$root/hmtt_dmatest.ko"
cp "$build/test/hmtt_guest_test" "$root/bin/hmtt_guest_test"
hmtt_gid=777
printf 'root:x:0:0:root:/:/bin/sh\ntester:x:1000:1000:tester:/:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nhmtt:x:%s:\ntester:x:1000:\n' "$hmtt_gid" >"$root/etc/group"
# /etc/mdev.conf from the udev rule shipped in the repository: the same
# group and mode for the same device names.
rules="$src/udev/60-hmtt.rules"
grep '^KERNEL==' "$rules" | while IFS= read -r rule; do
	name=$(printf '%s' "$rule" | sed -n 's/.*KERNEL=="\([^"]*\)".*/\1/p')
	group=$(printf '%s' "$rule" | sed -n 's/.*GROUP="\([^"]*\)".*/\1/p')
	mode=$(printf '%s' "$rule" | sed -n 's/.*MODE="\([^"]*\)".*/\1/p')
	gid=$(sed -n "s/^$group:[^:]*:\([0-9]*\):.*/\1/p" "$root/etc/group")
	echo "^$name\$ 0:$gid $mode"
done >"$root/etc/mdev.conf"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out/initramfs.cpio.gz"

# Boot. Guest RAM in a file: the host test reads the configuration space
# from it after the guest has powered off.
ram="$out/guest-ram"
rm -f "$ram"
# About 35 s of guest time on an idle 2-core host; allow for a busy one.
timeout_s=${HMTT_QEMU_TIMEOUT:-240}
status=0
timeout "$timeout_s" qemu-system-x86_64 \
	-machine pc,accel=tcg,memory-backend=ram -cpu max -smp 2 -m 512M \
	-object memory-backend-file,id=ram,size=512M,mem-path="$ram",share=on \
	-kernel "$kernel" -initrd "$out/initramfs.cpio.gz" \
	-append 'console=ttyS0 memmap=8M$0x10000000 panic=-1 oops=panic loglevel=4' \
	-nic none -nographic -no-reboot -serial mon:stdio \
	</dev/null >"$out/console.log" 2>&1 || status=$?
if ! grep -q 'HMTT-GUEST-END' "$out/console.log"; then
	echo "qemu-test.sh: the guest did not finish (qemu status $status); console: $out/console.log" >&2
	tail -n 40 "$out/console.log" >&2
	exit 1
fi
echo "qemu-test.sh: done, console: $out/console.log"
