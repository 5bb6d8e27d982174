// Outside reference for phobos-rt's quantized matmul: reads records
// (u32 ggml type, u32 n, one weight row, n f32 activations) from stdin and
// writes ggml's own result for each (from_float + vec_dot of the CPU
// backend this is linked against) as f32 to stdout.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "ggml.h"
#include "ggml-cpu.h"

int main(void) {
    ggml_cpu_init();
    uint32_t head[2];
    while (fread(head, sizeof head, 1, stdin) == 1) {
        enum ggml_type type = (enum ggml_type) head[0];
        int n = (int) head[1];
        size_t w_bytes = ggml_row_size(type, n);
        const struct ggml_type_traits_cpu * traits = ggml_get_type_traits_cpu(type);
        size_t a_bytes = ggml_row_size(traits->vec_dot_type, n);
        void * w = malloc(w_bytes);
        float * x = malloc(sizeof(float) * n);
        void * a = malloc(a_bytes);
        if (fread(w, 1, w_bytes, stdin) != w_bytes || fread(x, sizeof(float), n, stdin) != (size_t) n) {
            return 2;
        }
        ggml_get_type_traits_cpu(traits->vec_dot_type)->from_float(x, a, n);
        float s = 0.0f;
        traits->vec_dot(n, &s, 0, w, 0, a, 0, 1);
        fwrite(&s, sizeof s, 1, stdout);
        free(w); free(x); free(a);
    }
    return 0;
}
