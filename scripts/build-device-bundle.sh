#!/usr/bin/env bash
# Builds, here (LLVM 22, Rust), everything scripts/device-check.sh needs on
# the GPU machine (driver, cuBLAS, PyTorch; no Rust, no network), into the
# git-ignored .device/, and checks it fits the 64 MiB the device tool
# carries:
#   .device/manifest.json + inputs, oracles, PTX   (device_dump: the Python check)
#   .device/bin/device_check                       (the Rust check and CUDA bench rows)
# PTX is built for sm_90 only (PHOBOS_CHIPS), which keeps the binary small.
# Then: bash scripts/device-check.sh --dry-run   (here, no GPU)
#       bash scripts/device-check.sh             (there; carry [".device"])
set -euo pipefail

cd "$(dirname "$0")/.."
export PHOBOS_CHIPS="${PHOBOS_CHIPS:-sm_90}"
TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
LIMIT_BYTES=$((64 * 1024 * 1024))

# The dump first: it empties a previous .device (bin/ included).
cargo run --release -p phobos-examples --example device_dump -- .device sm_90
cargo build --release -p phobos-examples --bin device_check
mkdir -p .device/bin
cp "$TARGET_DIR/release/device_check" .device/bin/device_check
strip .device/bin/device_check 2>/dev/null || true

size_bytes=$(du -sb .device | cut -f1)
echo "bundle: .device is $((size_bytes / 1024 / 1024)) MiB ($size_bytes bytes; limit $LIMIT_BYTES)"
if (( size_bytes > LIMIT_BYTES )); then
  echo "bundle too large for the device tool's 64 MiB carry" >&2
  exit 1
fi
