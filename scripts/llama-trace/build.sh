#!/usr/bin/env bash
# Builds the llama.cpp trace harness against the pinned llama.cpp build.
# Usage: scripts/llama-trace/build.sh OUT_BINARY
set -euo pipefail
LCP_SRC=${LCP_SRC:-/tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp}
LCP_BIN=${LCP_BIN:-/tmp/lcp/build/bin}
out=${1:?output path}
c++ -O2 -std=c++17 -o "$out" "$(dirname "$0")/trace.cpp" -I"$LCP_SRC/include" -I"$LCP_SRC/ggml/include" \
   -L"$LCP_BIN" -lllama -lggml -lggml-base -Wl,-rpath,"$LCP_BIN"
