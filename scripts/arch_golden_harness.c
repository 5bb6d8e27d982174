/* Runs llama.cpp (libllama) on one GGUF and prints what
 * scripts/gen_arch_goldens.py records: per prompt the token ids, the full
 * logits of the first and last prompt positions (raw little-endian f32,
 * appended to LOGITS_OUT), and N greedy steps with each step's argmax and
 * the gap between its two largest logits.
 *
 * usage: arch_golden_harness MODEL.gguf LOGITS_OUT N_PREDICT PROMPT...
 * Output on stdout: one JSON object per prompt, one per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void silent(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static void top2(const float *logits, int n, int *best, float *gap) {
    int b = 0;
    for (int i = 1; i < n; i++) if (logits[i] > logits[b]) b = i;
    float second = -1e30f;
    for (int i = 0; i < n; i++) if (i != b && logits[i] > second) second = logits[i];
    *best = b;
    *gap = logits[b] - second;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s MODEL LOGITS_OUT N_PREDICT PROMPT...\n", argv[0]);
        return 2;
    }
    llama_log_set(silent, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    const int n_predict = atoi(argv[3]);
    FILE *logits_out = fopen(argv[2], "wb");
    if (!logits_out) { fprintf(stderr, "cannot write %s\n", argv[2]); return 1; }

    for (int p = 4; p < argc; p++) {
        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 256;
        cp.n_batch = 256;
        cp.n_ubatch = 256;
        cp.n_threads = 2;
        cp.n_threads_batch = 2;
        cp.no_perf = true;
        struct llama_context *ctx = llama_init_from_model(model, cp);
        if (!ctx) { fprintf(stderr, "cannot make a context\n"); return 1; }

        const char *text = argv[p];
        llama_token ids[256];
        int n = llama_tokenize(vocab, text, (int)strlen(text), ids, 256, true, true);
        if (n <= 0) { fprintf(stderr, "tokenize failed for %s\n", text); return 1; }

        struct llama_batch batch = llama_batch_init(256, 0, 1);
        batch.n_tokens = n;
        for (int i = 0; i < n; i++) {
            batch.token[i] = ids[i];
            batch.pos[i] = i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = 1;
        }
        if (llama_decode(ctx, batch)) { fprintf(stderr, "decode failed\n"); return 1; }
        fwrite(llama_get_logits_ith(ctx, 0), sizeof(float), n_vocab, logits_out);
        fwrite(llama_get_logits_ith(ctx, n - 1), sizeof(float), n_vocab, logits_out);

        printf("{\"prompt_ids\": [");
        for (int i = 0; i < n; i++) printf("%s%d", i ? ", " : "", ids[i]);
        printf("], \"generated\": [");
        const float *last = llama_get_logits_ith(ctx, n - 1);
        int pos = n;
        for (int step = 0; step < n_predict; step++) {
            int best;
            float gap;
            top2(last, n_vocab, &best, &gap);
            printf("%s[%d, %.9g]", step ? ", " : "", best, gap);
            batch.n_tokens = 1;
            batch.token[0] = best;
            batch.pos[0] = pos++;
            batch.n_seq_id[0] = 1;
            batch.seq_id[0][0] = 0;
            batch.logits[0] = 1;
            if (llama_decode(ctx, batch)) { fprintf(stderr, "decode failed\n"); return 1; }
            last = llama_get_logits_ith(ctx, 0);
        }
        printf("]}\n");
        llama_batch_free(batch);
        llama_free(ctx);
    }
    fclose(logits_out);
    llama_model_free(model);
    return 0;
}
