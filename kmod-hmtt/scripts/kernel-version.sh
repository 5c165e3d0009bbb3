#!/bin/sh
# Print the kernel ABI version (e.g. 6.1.0-56-amd64) that the installed
# linux-headers-amd64 package points at. The running kernel (`uname -r`) is
# irrelevant: the module is built for, and tested on, this version.
set -eu
if [ -n "${HMTT_KVER:-}" ]; then
	echo "$HMTT_KVER"
	exit 0
fi
dep=$(dpkg-query -W -f='${Depends}' linux-headers-amd64 2>/dev/null || true)
ver=$(printf '%s\n' "$dep" | tr ',' '\n' | sed -n 's/^ *linux-headers-\([^ ]*\).*/\1/p' | head -n1)
if [ -z "$ver" ]; then
	echo "kernel-version.sh: linux-headers-amd64 is not installed (apt-get install linux-headers-amd64)" >&2
	exit 1
fi
echo "$ver"
