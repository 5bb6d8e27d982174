// Outside reference for phobos-rt's quantized matmul in ggml's batch order:
// reads records (u32 ggml type, u32 n weight rows, u32 k columns, u32 m
// activation rows, the n weight rows' bytes, m * k f32 activations) from
// stdin and writes ggml's own MUL_MAT result for each (m rows of n f32) to
// stdout. Run with GGML_CPU_TILED_MM_FORCE=1 so the K-quants take ggml's
// `ggml-cpu/tiled` kernels at any m, as ggml does by itself from m = 8.
// Plain CPU buffers, so no weight repacking. build-check.sh links it
// against an AVX2 + FMA build of ggml, the numerics reference; the native
// AVX-512 build gave the same bits on a Zen 4 (GCC contracts its tiled
// kernels' separate multiply and add into the FMA the AVX2 code spells).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-cpu.h"

int main(void) {
    ggml_cpu_init();
    uint32_t head[4];
    while (fread(head, sizeof head, 1, stdin) == 1) {
        enum ggml_type type = (enum ggml_type) head[0];
        size_t n = head[1], k = head[2], m = head[3];
        size_t w_bytes = ggml_row_size(type, k) * n;
        // The context holds w, x, the result and ggml's graph bookkeeping.
        size_t ctx_bytes = w_bytes + sizeof(float) * (k * m + n * m) + 16 * 1024 * 1024;
        struct ggml_init_params params = { ctx_bytes, NULL, false };
        struct ggml_context * ctx = ggml_init(params);
        struct ggml_tensor * w = ggml_new_tensor_2d(ctx, type, (int64_t) k, (int64_t) n);
        struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, (int64_t) k, (int64_t) m);
        if (fread(w->data, 1, w_bytes, stdin) != w_bytes
            || fread(x->data, sizeof(float), k * m, stdin) != k * m) {
            return 2;
        }
        struct ggml_tensor * out = ggml_mul_mat(ctx, w, x);
        struct ggml_cgraph * graph = ggml_new_graph(ctx);
        ggml_build_forward_expand(graph, out);
        if (ggml_graph_compute_with_ctx(ctx, graph, 1) != GGML_STATUS_SUCCESS) {
            return 3;
        }
        fwrite(out->data, sizeof(float), n * m, stdout);
        fflush(stdout);
        ggml_free(ctx);
    }
    return 0;
}
