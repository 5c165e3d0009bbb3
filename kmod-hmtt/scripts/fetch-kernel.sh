#!/bin/sh
# Download Debian's kernel image that matches the installed
# linux-headers-amd64 and unpack only its vmlinuz into the cache directory,
# so the QEMU test can boot the exact kernel the module was built against.
# The image is not installed on the host.
#
# Usage: fetch-kernel.sh [CACHE_DIR]
#   CACHE_DIR defaults to $HMTT_KMOD_CACHE, else <repo>/target/kmod-cache.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${1:-${HMTT_KMOD_CACHE:-$repo/target/kmod-cache}}
ver=$("$here/kernel-version.sh")
image="$cache/vmlinuz-$ver"

if [ -s "$image" ]; then
	echo "fetch-kernel.sh: $image already present"
	exit 0
fi
mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# The unsigned image is the same kernel without the Secure Boot signature;
# fall back to the signed package when a mirror lacks it.
if ! apt-get download "linux-image-$ver-unsigned" >/dev/null 2>&1; then
	apt-get download "linux-image-$ver"
fi
deb=$(ls ./*.deb | head -n1)
dpkg-deb --fsys-tarfile "$deb" | tar -x "./boot/vmlinuz-$ver"
mv "./boot/vmlinuz-$ver" "$image.tmp"
mv "$image.tmp" "$image"
echo "fetch-kernel.sh: $image"
