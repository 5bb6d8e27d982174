//! The tokenizer on arbitrary input. An even first byte: arbitrary text on
//! a real vocabulary (llama.cpp's vocab files and Gemma 3 in models/, from
//! scripts/fetch_test_data.sh). An odd one: an arbitrary vocabulary written
//! as `tokenizer.ggml.*` metadata into an in-memory GGUF, then text on it.
#![no_main]

use std::sync::OnceLock;

use phobos_models::tokenizer::Tokenizer;

#[path = "../../phobos-models/tests/fuzz_bodies/mod.rs"]
mod fuzz_bodies;

static VOCABS: OnceLock<Vec<Tokenizer>> = OnceLock::new();

fn vocabs() -> &'static [Tokenizer] {
    VOCABS.get_or_init(|| {
        let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");
        // A run without the real vocabularies would fuzz half a target.
        match fuzz_bodies::load_real_vocabs(std::path::Path::new(models)) {
            Ok(vocabs) => vocabs,
            Err(e) => panic!("{e}: run scripts/fetch_test_data.sh"),
        }
    })
}

libfuzzer_sys::fuzz_target!(
    // Loading the vocabularies (Gemma's 262k tokens among them) is set-up,
    // not the first input's time.
    init: {
        vocabs();
    },
    |data: &[u8]| fuzz_bodies::tokenizer(vocabs(), data)
);
