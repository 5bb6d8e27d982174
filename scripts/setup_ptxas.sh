#!/usr/bin/env bash
# Installs NVIDIA's ptxas from PyPI (nvidia-cuda-nvcc-cu12; shared/VERIFY.md)
# into a fixed directory, so tests can assemble the PTX the build embeds.
# Idempotent: when ptxas is there it only checks. Prints the path to export
# as PHOBOS_PTXAS.
set -euo pipefail

target="${PHOBOS_PTXAS_DIR:-$HOME/.cache/phobos/ptxas-py}"
ptxas="$target/nvidia/cuda_nvcc/bin/ptxas"
if [ ! -x "$ptxas" ]; then
    echo "setup_ptxas: installing nvidia-cuda-nvcc-cu12 into $target" >&2
    mkdir -p "$target"
    python3 -m pip install --quiet --disable-pip-version-check --no-deps \
        --target "$target" --upgrade nvidia-cuda-nvcc-cu12 >&2
fi
if ! "$ptxas" --version >/dev/null 2>&1; then
    echo "setup_ptxas: $ptxas does not run after install" >&2
    exit 1
fi
echo "$ptxas"
