#!/usr/bin/env python3
"""Writes tests/golden/quant/ggml.json: goldens for the quant types gguf-py
cannot produce (Q1_0, Q8_1, Q8_K), made by llama.cpp's own ggml C code.

    # the pinned sdist (pip needs scikit-build-core and cmake to prepare it;
    # scripts/fetch_llama_vocabs.sh shows the throwaway-venv way):
    pip download --no-deps --no-binary :all: --no-build-isolation \
        llama-cpp-python==0.3.36 -d /tmp/sdist
    python3 scripts/gen_ggml_quant_goldens.py /tmp/sdist/llama_cpp_python-0.3.36.tar.gz

ggml-quants.c from the sdist is compiled with gcc (no cmake) together with a
tiny driver that reads float rows, runs ggml's reference quantizers
(quantize_row_q1_0_ref, quantize_row_q8_1_ref, quantize_row_q8_K_ref) and
dequantizers (dequantize_row_q1_0, dequantize_row_q8_K). ggml has no
dequantize_row_q8_1 (Q8_1 is an activation type only read by the dot
products, which use d * q); for it the driver computes d * q with ggml's own
GGML_FP16_TO_FP32, which is how ggml's vec_dot kernels read the block.
The input rows come from a seeded numpy generator, as in
scripts/gen_quant_goldens.py.
"""
import json
import pathlib
import subprocess
import sys
import tarfile
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/golden/quant/ggml.json"
PREFIX = "llama_cpp_python-0.3.36/vendor/llama.cpp/ggml/"

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml-common.h"
#include "ggml-impl.h"
#include "ggml-quants.h"

/* ggml.c symbols ggml-quants.c links against; unused by the functions called here. */
void ggml_abort(const char * file, int line, const char * fmt, ...) { (void)file; (void)line; (void)fmt; abort(); }
size_t ggml_row_size(enum ggml_type type, int64_t ne) { (void)type; (void)ne; abort(); }
const char * ggml_type_name(enum ggml_type type) { (void)type; return "?"; }
size_t ggml_type_size(enum ggml_type type) { (void)type; abort(); }

/* argv: type name, number of floats k; stdin: k little-endian f32;
   stdout: the blocks, then k dequantized f32. */
int main(int argc, char ** argv) {
    if (argc != 3) return 2;
    long k = atol(argv[2]);
    float * x = malloc(k * sizeof(float));
    float * y = malloc(k * sizeof(float));
    if (fread(x, sizeof(float), k, stdin) != (size_t)k) return 3;
    if (!strcmp(argv[1], "Q1_0")) {
        block_q1_0 * b = malloc((k / QK1_0) * sizeof(block_q1_0));
        quantize_row_q1_0_ref(x, b, k);
        dequantize_row_q1_0(b, y, k);
        fwrite(b, sizeof(block_q1_0), k / QK1_0, stdout);
    } else if (!strcmp(argv[1], "Q8_1")) {
        block_q8_1 * b = malloc((k / QK8_1) * sizeof(block_q8_1));
        quantize_row_q8_1_ref(x, b, k);
        for (long i = 0; i < k; i++) {
            y[i] = GGML_FP16_TO_FP32(b[i / QK8_1].d) * b[i / QK8_1].qs[i % QK8_1];
        }
        fwrite(b, sizeof(block_q8_1), k / QK8_1, stdout);
    } else if (!strcmp(argv[1], "Q8_K")) {
        block_q8_K * b = malloc((k / QK_K) * sizeof(block_q8_K));
        quantize_row_q8_K_ref(x, b, k);
        dequantize_row_q8_K(b, y, k);
        fwrite(b, sizeof(block_q8_K), k / QK_K, stdout);
    } else {
        return 4;
    }
    fwrite(y, sizeof(float), k, stdout);
    return 0;
}
"""

BLOCK = {"Q1_0": (128, 2 + 16), "Q8_1": (32, 4 + 32), "Q8_K": (256, 4 + 256 + 32)}


def random_rows(rng, n_rows, row_len):
    scale = np.exp(rng.normal(0, 1.5, size=(n_rows, 1))).astype(np.float32)
    return (rng.standard_normal((n_rows, row_len)) * scale).astype(np.float32)


def edge_rows(row_len):
    rows = [np.zeros(row_len, np.float32)]
    # Values halfway between quantization levels, so the rounding mode shows.
    halves = (np.arange(row_len) % 9 - 4 + 0.5).astype(np.float32)
    halves[0] = 127.0
    rows.append(halves)
    rows.append(-halves)
    return np.stack(rows)


def main():
    sdist = pathlib.Path(sys.argv[1])
    rng = np.random.default_rng(20261201)
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(PREFIX)
                       and (m.name.endswith(".h") or m.name.endswith("ggml-quants.c"))]
            tar.extractall(work, members=members, filter="data")
        src = work / PREFIX / "src"
        (work / "driver.c").write_text(DRIVER)
        exe = work / "driver"
        subprocess.run(["gcc", "-O0", "-std=c11", "-o", str(exe), str(work / "driver.c"),
                        str(src / "ggml-quants.c"), "-I", str(src), "-I",
                        str(work / PREFIX / "include"), "-lm"], check=True)
        cases = []
        for name, (block_len, block_bytes) in BLOCK.items():
            n_random = 6 if block_len <= 128 else 2
            x = np.concatenate([random_rows(rng, n_random, block_len), edge_rows(block_len)])
            x = x.astype("<f4")
            out = subprocess.run([str(exe), name, str(x.size)], input=x.tobytes(),
                                 capture_output=True, check=True).stdout
            n_blocks = x.size // block_len
            blocks, values = out[:n_blocks * block_bytes], out[n_blocks * block_bytes:]
            assert len(values) == 4 * x.size, name
            source = ("ggml quantize_row_%s_ref + %s (llama.cpp from llama-cpp-python 0.3.36)"
                      % (name.lower().replace("q8_k", "q8_K"),
                         "d * q with GGML_FP16_TO_FP32 (ggml has no Q8_1 dequantizer)"
                         if name == "Q8_1" else "dequantize_row_" + name.lower().replace("q8_k", "q8_K")))
            cases.append({"type": name, "source": source, "input_f32": x.tobytes().hex(),
                          "blocks": blocks.hex(), "dequant_f32": values.hex()})
    doc = {
        "generated_by": "python3 scripts/gen_ggml_quant_goldens.py llama_cpp_python-0.3.36.tar.gz",
        "numpy_version": np.__version__,
        "cases": cases,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(cases)} cases)")


if __name__ == "__main__":
    main()
