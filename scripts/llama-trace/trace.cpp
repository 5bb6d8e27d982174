// llama.cpp's view of one token sequence, for finding where Phobos's
// numerics part from llama.cpp's: feeds the prompt as one batch, then each
// continuation token alone (as llama-server's greedy decode does), prints
// the top-2 probabilities after every step, and dumps the graph tensors
// whose names start with one of the given prefixes (raw f32, one file per
// step and tensor) for the chosen steps.
//
// usage: trace MODEL FA(on|off) REPACK(0|1) OUTDIR STEPS PREFIXES -- PROMPT_IDS... -- CONT_IDS...
//   STEPS: comma list of decode steps to dump (0 = the prompt batch), or "none"
//   PREFIXES: comma list of tensor-name prefixes ("l_out-,kqv_out-")
#include "llama.h"
#include "ggml.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

struct DumpState {
    std::string dir;
    std::vector<std::string> prefixes;
    std::set<int> steps;
    int step = 0;
};

static bool wanted(const DumpState & st, const char * name) {
    if (!st.steps.count(st.step)) return false;
    for (auto & p : st.prefixes) {
        if (strncmp(name, p.c_str(), p.size()) == 0) return true;
    }
    return false;
}

static bool on_tensor(struct ggml_tensor * t, bool ask, void * user) {
    auto * st = (DumpState *) user;
    if (ask) return wanted(*st, t->name);
    if (!wanted(*st, t->name)) return true;
    if (t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t)) {
        fprintf(stderr, "skip %s (type %d, contiguous %d)\n", t->name, t->type, ggml_is_contiguous(t));
        return true;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/s%d_%s_%lldx%lldx%lld.f32", st->dir.c_str(), st->step, t->name,
             (long long) t->ne[0], (long long) t->ne[1], (long long) t->ne[2]);
    FILE * f = fopen(path, "wb");
    if (f) {
        fwrite(t->data, 1, ggml_nbytes(t), f);
        fclose(f);
    }
    return true;
}

static std::vector<std::string> split(const std::string & s) {
    std::vector<std::string> out;
    size_t a = 0;
    while (a <= s.size()) {
        size_t b = s.find(',', a);
        if (b == std::string::npos) b = s.size();
        if (b > a) out.push_back(s.substr(a, b - a));
        a = b + 1;
    }
    return out;
}

static void report(llama_context * ctx, int n_vocab, int step, int want) {
    const float * logits = llama_get_logits_ith(ctx, -1);
    int i1 = 0, i2 = -1;
    for (int i = 1; i < n_vocab; i++) {
        if (logits[i] > logits[i1]) { i2 = i1; i1 = i; }
        else if (i2 < 0 || logits[i] > logits[i2]) i2 = i;
    }
    double m = logits[i1], z = 0;
    for (int i = 0; i < n_vocab; i++) z += exp((double) logits[i] - m);
    double p1 = 1.0 / z, p2 = exp((double) logits[i2] - m) / z;
    printf("step %d top1 %d %.6f (logit %.6f) top2 %d %.6f (logit %.6f) gap %.4f next %d%s\n", step, i1, p1,
           logits[i1], i2, p2, logits[i2], p1 - p2, want, (want >= 0 && want != i1) ? "  <-- differs" : "");
}

int main(int argc, char ** argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: trace MODEL FA REPACK OUTDIR STEPS PREFIXES -- PROMPT... -- CONT...\n");
        return 1;
    }
    DumpState st;
    st.dir = argv[4];
    if (strcmp(argv[5], "none") != 0) for (auto & s : split(argv[5])) st.steps.insert(atoi(s.c_str()));
    st.prefixes = split(argv[6]);
    std::vector<llama_token> prompt, cont;
    int sep = 0;
    for (int i = 7; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) { sep++; continue; }
        (sep <= 1 ? prompt : cont).push_back(atoi(argv[i]));
    }
    llama_backend_init();
    auto mp = llama_model_default_params();
    mp.use_extra_bufts = atoi(argv[3]) != 0;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    auto cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_batch = 2048;
    cp.n_ubatch = 512;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    cp.flash_attn_type = strcmp(argv[2], "on") == 0 ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                         : strcmp(argv[2], "off") == 0 ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                       : LLAMA_FLASH_ATTN_TYPE_AUTO;
    cp.cb_eval = on_tensor;
    cp.cb_eval_user_data = &st;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    st.step = 0;
    if (llama_decode(ctx, llama_batch_get_one(prompt.data(), (int) prompt.size()))) return 1;
    report(ctx, n_vocab, 0, cont.empty() ? -1 : cont[0]);
    for (size_t i = 0; i < cont.size(); i++) {
        st.step = (int) i + 1;
        llama_token t = cont[i];
        if (llama_decode(ctx, llama_batch_get_one(&t, 1))) return 1;
        report(ctx, n_vocab, st.step, i + 1 < cont.size() ? cont[i + 1] : -1);
    }
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
