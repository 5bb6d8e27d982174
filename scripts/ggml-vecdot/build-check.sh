#!/usr/bin/env bash
# Builds ggml's MUL_MAT check harness (mulmat_check.c) against an AVX2 + FMA
# build of the pinned llama.cpp's ggml (no AVX-512: that build is the
# numerics reference, see phobos-rt's qmatmul module docs), configured by
#   cmake -S "$LCP_SRC" -B "$GGML_AVX2" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
#     -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
#     -DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_VBMI=OFF \
#     -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF \
#     -DGGML_AMX_INT8=OFF -DGGML_OPENMP=OFF -DGGML_BLAS=OFF -DBUILD_SHARED_LIBS=ON \
#     -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
#     -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF
#   cmake --build "$GGML_AVX2" -j2 --target ggml-cpu ggml-base
# which this script runs when the libraries are missing. phobos-rt's
# qmatmul::tests_ggml runs the harness when PHOBOS_GGML_MULMAT names it.
# Usage: scripts/ggml-vecdot/build-check.sh OUT_BINARY
set -euo pipefail
LCP_SRC=${LCP_SRC:-/tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp}
GGML_AVX2=${GGML_AVX2:-/var/tmp/ggml-avx2}
out=${1:?output path}
if [ ! -e "$GGML_AVX2/bin/libggml-cpu.so" ]; then
  cmake -S "$LCP_SRC" -B "$GGML_AVX2" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
    -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_VBMI=OFF \
    -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF \
    -DGGML_AMX_INT8=OFF -DGGML_OPENMP=OFF -DGGML_BLAS=OFF -DBUILD_SHARED_LIBS=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF
  cmake --build "$GGML_AVX2" -j2 --target ggml-cpu ggml-base
fi
cc -O2 -o "$out" "$(dirname "$0")/mulmat_check.c" -I"$LCP_SRC/ggml/include" \
   -L"$GGML_AVX2/bin" -lggml-cpu -lggml-base -Wl,-rpath,"$GGML_AVX2/bin"
