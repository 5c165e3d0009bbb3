#!/usr/bin/env bash
# The whole test suite: formatting, lints, and every crate's tests (HDL
# simulation and lint, FPGA flows, the kernel module under QEMU, capture over
# loopback and namespaces, end-to-end simulation → capture → merge).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
