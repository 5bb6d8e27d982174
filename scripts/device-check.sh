#!/usr/bin/env bash
# Every GPU check in one run (on the device machine: driver, PyTorch, no
# Rust, no network): every embedded PTX variant of every example kernel
# and of SPEC.md's edge-case table (examples/kernels/edge, compared bit for
# bit) against the host back end's outputs, then GEMM throughput against
# cuBLAS (torch.matmul). Writes $OUT/device_check.csv, device_bench.csv
# and device_check.log; exits 1 when any variant fails.
#
# Prepare here (LLVM 22; the `ptx` feature is on by default and PHOBOS_CHIPS,
# when set, must include sm_90 (unset: sm_75,sm_80,sm_90); about
# 1.5 min to build warm, 8 s to run; fills .device/, ~14 MB, git-ignored):
#   cargo run -p phobos-examples --example device_dump -- .device sm_90
# Check the dump and the checker without a GPU (the selftest plants faults
# in a fake GPU and needs numpy only):
#   python3 scripts/device_check.py .device --dry-run
#   python3 scripts/device_check_selftest.py .device
# Optional, for @pipeline's copy paths on strided/misaligned layouts (runs
# when .device/mlir exists; default config of each gemm on every chip):
#   PHOBOS_DUMP_PTX_DIR=.device/mlir PHOBOS_CHIPS=sm_75,sm_80,sm_90 \
#     cargo test -p phobos-build --features ptx --test mlir_ptx example_kernels_at_default_config
# Run on the device (budgets end it within about 3 minutes), carrying .device:
#   bash scripts/device-check.sh            # carry=[".device"]
# Options after the script name go to device_check.py (--only gemm_f32,
# --no-bench, --check-budget-s N, --bench-budget-s N, --top N).
set -euo pipefail

cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
if [[ ! -f .device/manifest.json ]]; then
  echo "no .device/manifest.json: prepare it first (see the top of $0)" >&2
  exit 2
fi
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true
  status=0
  PYTHONUNBUFFERED=1 python3 scripts/device_check.py .device --out "$OUT" "$@" || status=1
  if [[ -d .device/mlir ]]; then
    PYTHONUNBUFFERED=1 python3 scripts/pipeline_device_check.py .device/mlir || status=1
  fi
  exit "$status"
} 2>&1 | tee "$OUT/device_check.log"
