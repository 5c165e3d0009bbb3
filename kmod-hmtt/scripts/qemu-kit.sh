#!/bin/sh
# Fill OUT_DIR with what `hmtt qemu --kit OUT_DIR` boots and loads: Debian's
# kernel (fetch-kernel.sh) unpacked to its ELF vmlinux, booted through its
# PVH entry (the xz decompressor would run under the plugin's callbacks for
# minutes), hmtt.ko (build.sh), the static guest helper hmtt_qemu_guest,
# hmtt_qemu_pid.ko (the current process as a store address for the
# plugin), the I-code example hmtt_sort with its events file, the DMA test
# module hmtt_dmatest.ko (debug info stripped, since its loading is traced)
# with its events file, the workloads of tests/qemu_workloads.rs (hmtt_wl_*
# and their driver script hmtt_workloads), and the TCG plugin (crate
# qemu-plugin-hmtt, release build in its own target directory so it can be
# built while another cargo holds the main one).
#
# Usage: qemu-kit.sh OUT_DIR
# Needs: what build.sh needs, gcc with static libc, python3, cargo.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
repo=$(cd "$src/.." && pwd)
out=${1:?usage: qemu-kit.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
kver=$("$here/kernel-version.sh")
cache=${HMTT_KMOD_CACHE:-$repo/target/kmod-cache}

"$here/fetch-kernel.sh" "$cache" >/dev/null
python3 - "$cache/vmlinuz-$kver" "$out/vmlinux" <<'PY'
import lzma, sys
image = open(sys.argv[1], "rb").read()
start = image.find(b"\xfd7zXZ\x00")
if start < 0:
    sys.exit("qemu-kit.sh: no xz payload in " + sys.argv[1])
elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(image[start:])
if not elf.startswith(b"\x7fELF"):
    sys.exit("qemu-kit.sh: the payload of " + sys.argv[1] + " is not an ELF")
open(sys.argv[2], "wb").write(elf)
PY
"$here/build.sh" "$out/kbuild" --test >/dev/null
cp "$out/kbuild/module/hmtt.ko" "$out/hmtt.ko"
strip --strip-debug -o "$out/hmtt_dmatest.ko" "$out/kbuild/test/dmatest/hmtt_dmatest.ko"
strip --strip-debug -o "$out/hmtt_qemu_pid.ko" "$out/kbuild/test/pid/hmtt_qemu_pid.ko"
cp "$src/test/dmatest/hmtt_dmatest.events.toml" "$out/"
for prog in hmtt_qemu_guest hmtt_sort; do
	gcc -static -O2 -Wall -Werror -I"$src/include" \
		-o "$out/$prog" "$src/test/qemu/$prog.c"
done
cp "$src/test/qemu/hmtt_sort.events.toml" "$out/"
for prog in hmtt_wl_shared hmtt_wl_threads hmtt_wl_cow hmtt_wl_file \
	hmtt_wl_gen hmtt_wl_sum; do
	gcc -static -O2 -Wall -Werror -pthread \
		-o "$out/$prog" "$src/test/qemu/$prog.c"
done
cp "$src/test/qemu/hmtt_workloads" "$out/"
plugin_target=${HMTT_PLUGIN_TARGET:-$repo/target/qemu-plugin}
CARGO_TARGET_DIR="$plugin_target" cargo build --quiet --release \
	--manifest-path "$repo/Cargo.toml" -p qemu-plugin-hmtt
# Replaced, not overwritten: a QEMU running from this kit has the library
# mapped, and copying over it in place corrupts that QEMU's plugin.
cp "$plugin_target/release/libqemu_plugin_hmtt.so" "$out/libqemu_plugin_hmtt.so.tmp"
mv "$out/libqemu_plugin_hmtt.so.tmp" "$out/libqemu_plugin_hmtt.so"
echo "qemu-kit.sh: $out"
