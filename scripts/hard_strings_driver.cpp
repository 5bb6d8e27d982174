// Batch driver for scripts/gen_hard_string_goldens.py: loads a vocabulary
// once, the way llama-tokenize does (vocab_only), and tokenizes every string
// of a length-prefixed input file with the calls llama-tokenize makes:
// add_special = llama_vocab_get_add_bos(vocab) && !no_bos, then
// llama_tokenize(text, add_special, parse_special). One process per vocabulary
// instead of one per string; the script spot-checks it against llama-tokenize.
//
//   hard_strings_driver MODEL INPUT   (INPUT: u32 LE length + UTF-8 bytes, repeated)
// Prints, per string, a "special" line (parse_special, add BOS as the model
// asks) then a "plain" line (--no-parse-special --no-bos): ids, space separated.
#include "llama.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

static std::vector<llama_token> tokenize(const llama_vocab * vocab, const std::string & text,
                                         bool add_special, bool parse_special) {
    std::vector<llama_token> ids(text.size() + 2 * add_special);
    int n = llama_tokenize(vocab, text.data(), (int32_t) text.size(), ids.data(), (int32_t) ids.size(),
                           add_special, parse_special);
    if (n < 0) {
        ids.resize(-n);
        n = llama_tokenize(vocab, text.data(), (int32_t) text.size(), ids.data(), (int32_t) ids.size(),
                           add_special, parse_special);
    }
    ids.resize(n < 0 ? 0 : n);
    return ids;
}

static void print(const std::vector<llama_token> & ids) {
    for (size_t i = 0; i < ids.size(); i++) {
        std::printf(i ? " %d" : "%d", ids[i]);
    }
    std::printf("\n");
}

int main(int argc, char ** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s MODEL INPUT\n", argv[0]);
        return 2;
    }
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model_params params = llama_model_default_params();
    params.vocab_only = true;
    llama_model * model = llama_model_load_from_file(argv[1], params);
    if (!model) {
        std::fprintf(stderr, "could not load %s\n", argv[1]);
        return 1;
    }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const bool add_bos = llama_vocab_get_add_bos(vocab);
    std::ifstream in(argv[2], std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = 0;
    while (at + 4 <= bytes.size()) {
        uint32_t len = (uint8_t) bytes[at] | (uint8_t) bytes[at + 1] << 8 | (uint8_t) bytes[at + 2] << 16 |
                       (uint32_t) (uint8_t) bytes[at + 3] << 24;
        std::string text = bytes.substr(at + 4, len);
        at += 4 + len;
        print(tokenize(vocab, text, add_bos, true));
        print(tokenize(vocab, text, false, false));
    }
    llama_model_free(model);
    return 0;
}
