// ggml's own MUL_MAT speed on the CPU backend this is linked against, at a
// chosen thread count (test-backend-ops fixes it at half the CPUs): reads
// cases "TYPE_ID N K M" (one a line) from stdin and prints one line
// "TYPE_ID N K M WALL_US CPU_US" per case: the median wall-clock and the
// median process CPU time (all threads) of one mul_mat (activation
// quantization included) over at least MIN_MS of repeats. Medians, as
// phobos-kbench reports them, so a shared machine's stalls do not decide
// the number; CPU time is the work done, whatever the machine's load.
// A persistent threadpool (as llama.cpp's CLI attaches one) so thread
// start-up is not timed; plain CPU buffers, so no weight repacking
// (llama.cpp's --no-repack numerics).
// POOL_MIB (default 0: one copy, cache-warm) fills that many MiB with copies
// of the weight tensor and points the mul_mat at the next copy before each
// call, as phobos-kbench rotates its own copies, so with a pool larger than
// the caches both sides stream their weights from memory.
// Usage: ggml-mulmat-bench THREADS MIN_MS [POOL_MIB] < cases
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ggml.h"
#include "ggml-cpu.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void * a, const void * b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int main(int argc, char ** argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s THREADS MIN_MS [POOL_MIB] < cases\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]);
    double min_s = atof(argv[2]) / 1000.0;
    size_t pool_bytes = argc == 4 ? (size_t) strtoull(argv[3], NULL, 10) << 20 : 0;
    ggml_cpu_init();
    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
    struct ggml_threadpool * pool = ggml_threadpool_new(&tpp);
    unsigned type_id, n, k, m;
    while (scanf("%u %u %u %u", &type_id, &n, &k, &m) == 4) {
        enum ggml_type type = (enum ggml_type) type_id;
        size_t w_bytes = ggml_row_size(type, k) * n;
        size_t ctx_bytes = w_bytes + sizeof(float) * ((size_t) k * m + (size_t) n * m) + 16 * 1024 * 1024;
        struct ggml_init_params params = { ctx_bytes, NULL, false };
        struct ggml_context * ctx = ggml_init(params);
        struct ggml_tensor * w = ggml_new_tensor_2d(ctx, type, k, n);
        struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, m);
        // Weights: 64 distinct random rows quantized by ggml, tiled.
        size_t seed_rows = n < 64 ? n : 64;
        float * floats = malloc(sizeof(float) * seed_rows * k);
        uint64_t state = 0x9E3779B97F4A7C15ull ^ type_id;
        for (size_t i = 0; i < seed_rows * k; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            floats[i] = ((float) (state >> 40) / (float) (1 << 24) - 0.5f) * 0.1f;
        }
        size_t row_bytes = ggml_row_size(type, k);
        ggml_quantize_chunk(type, floats, w->data, 0, seed_rows, k, NULL);
        for (size_t r = seed_rows; r < n; r++) {
            memcpy((char *) w->data + r * row_bytes, (char *) w->data + (r % seed_rows) * row_bytes, row_bytes);
        }
        free(floats);
        // Copies as phobos-kbench sizes them: ceil(pool / tensor), 1..=4096.
        size_t copies = (pool_bytes + w_bytes - 1) / w_bytes;
        copies = copies < 1 ? 1 : copies > 4096 ? 4096 : copies;
        size_t stride = (w_bytes + 63) / 64 * 64;
        char * pool_data = NULL;
        if (copies > 1) {
            pool_data = aligned_alloc(64, stride * copies);
            if (pool_data == NULL) {
                fprintf(stderr, "cannot allocate %zu weight copies of %zu bytes\n", copies, w_bytes);
                return 1;
            }
            for (size_t c = 0; c < copies; c++) {
                memcpy(pool_data + c * stride, w->data, w_bytes);
            }
        }
        void * own_data = w->data;
        size_t next_copy = 0;
        for (size_t i = 0; i < (size_t) k * m; i++) {
            ((float *) x->data)[i] = (float) ((i * 7919) % 2001) / 1000.0f - 1.0f;
        }
        struct ggml_tensor * out = ggml_mul_mat(ctx, w, x);
        struct ggml_cgraph * graph = ggml_new_graph(ctx);
        ggml_build_forward_expand(graph, out);
        struct ggml_cplan plan = ggml_graph_plan(graph, threads, pool);
        uint8_t * work = malloc(plan.work_size + 1);
        plan.work_data = work;
        ggml_graph_compute(graph, &plan);
        size_t calls = 0, cap = 1024;
        double * times = malloc(sizeof(double) * cap);
        double * cpu = malloc(sizeof(double) * cap);
        double start = now_s();
        while (calls < 3 || now_s() - start < min_s) {
            if (pool_data != NULL) {
                w->data = pool_data + next_copy * stride;
                next_copy = (next_copy + 1) % copies;
            }
            double t0 = now_s(), c0 = cpu_s();
            ggml_graph_compute(graph, &plan);
            if (calls == cap) {
                cap *= 2;
                times = realloc(times, sizeof(double) * cap);
                cpu = realloc(cpu, sizeof(double) * cap);
            }
            cpu[calls] = cpu_s() - c0;
            times[calls++] = now_s() - t0;
        }
        qsort(times, calls, sizeof(double), cmp_double);
        qsort(cpu, calls, sizeof(double), cmp_double);
        printf("%u %u %u %u %.3f %.3f\n", type_id, n, k, m, times[calls / 2] * 1e6, cpu[calls / 2] * 1e6);
        free(times);
        free(cpu);
        fflush(stdout);
        free(work);
        w->data = own_data;
        free(pool_data);
        ggml_free(ctx);
    }
    ggml_threadpool_free(pool);
    return 0;
}
