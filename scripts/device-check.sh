#!/usr/bin/env bash
# Every GPU check in one run, on the device machine (driver, cuBLAS,
# PyTorch; no Rust, no network), in under 5 minutes:
#  1. the Rust check (.device/bin/device_check): every embedded PTX variant
#     of every example kernel and of SPEC.md's edge-case table launched
#     through phobos_rt::cuda (the runtime users get) against the host
#     oracle, the quantized matmuls of every format bit for bit, then the kbench CUDA rows (saxpy, GEMMs next to cuBLAS, flash
#     attention): $OUT/rust_check.csv, rust_bench.csv, rust_summary.txt;
#  2. the Python check, an independent second opinion driving the same PTX
#     from PyTorch through ctypes (scripts/device_check.py): $OUT/
#     device_check.csv, device_bench.csv;
# then $OUT/summary.txt with both verdicts; exits 1 when either fails.
#
# Prepare here: bash scripts/build-device-bundle.sh (fills .device/, checks
# it fits 64 MiB). Validate without a GPU:
#   bash scripts/device-check.sh --dry-run
# (the Rust check packs every variant against its ABI at stand-in
# addresses, the Python check validates the dump; no driver needed).
# Run there, carrying .device:  bash scripts/device-check.sh
# Further options go to device_check.py (--only gemm_f32, --no-bench, ...).
set -euo pipefail

cd "$(dirname "$0")/.."
DRY_RUN=0
if [[ "${1:-}" == "--dry-run" ]]; then
  DRY_RUN=1
  shift
fi
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
# Each part's wall-clock budget; together well under 5 minutes.
RUST_BUDGET_S="${RUST_BUDGET_S:-150}"
PYTHON_BUDGET_S="${PYTHON_BUDGET_S:-110}"

missing=()
[[ -f .device/manifest.json ]] || missing+=(".device/manifest.json")
[[ -x .device/bin/device_check ]] || missing+=(".device/bin/device_check")
if (( ${#missing[@]} )); then
  echo "missing ${missing[*]}: run scripts/build-device-bundle.sh first" >&2
  exit 2
fi

{
  rust_status=0
  python_status=0
  if (( DRY_RUN )); then
    echo "dry run: no GPU used"
    timeout "$RUST_BUDGET_S" .device/bin/device_check --dry-run --out "$OUT" || rust_status=$?
    PYTHONUNBUFFERED=1 timeout "$PYTHON_BUDGET_S" \
      python3 scripts/device_check.py .device --dry-run "$@" || python_status=$?
  else
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true
    timeout "$RUST_BUDGET_S" .device/bin/device_check --out "$OUT" || rust_status=$?
    PYTHONUNBUFFERED=1 timeout "$PYTHON_BUDGET_S" \
      python3 scripts/device_check.py .device --out "$OUT" "$@" || python_status=$?
  fi
  verdict() { if (( $1 == 0 )); then echo pass; elif (( $1 == 124 )); then echo "timed out"; else echo "FAIL ($1)"; fi; }
  {
    echo "device check $(date -u +%Y-%m-%dT%H:%M:%SZ)$( (( DRY_RUN )) && echo ' (dry run)')"
    echo "rust (phobos_rt::cuda): $(verdict "$rust_status")"
    echo "python (PyTorch + ctypes): $(verdict "$python_status")"
    if [[ -f "$OUT/rust_summary.txt" ]]; then sed 's/^/  /' "$OUT/rust_summary.txt"; fi
  } > "$OUT/summary.txt"
  cat "$OUT/summary.txt"
  (( rust_status == 0 && python_status == 0 ))
} 2>&1 | tee "$OUT/device_check.log"
