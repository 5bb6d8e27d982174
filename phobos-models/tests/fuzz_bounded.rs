//! A bounded run of every fuzz target in fuzz/ on the stable toolchain:
//! the same bodies (tests/fuzz_bodies) on the committed seeds in
//! fuzz/seeds/<target>/, on mutations of them and on random bytes. The
//! long runs need nightly and cargo-fuzz (fuzz/README.md); this keeps a
//! regression any of them would catch failing `make test`.

mod common;
mod fuzz_bodies;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use phobos_models::tokenizer::Tokenizer;
use proptest::prelude::*;

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    assert!(paths.len() >= 3, "expected seeds in {}", dir.display());
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// The real vocabularies, or `None` (reported through
/// `common::missing_test_data`) when they were not fetched.
fn vocabs() -> Option<&'static [Tokenizer]> {
    static VOCABS: OnceLock<Option<Vec<Tokenizer>>> = OnceLock::new();
    VOCABS
        .get_or_init(|| {
            let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
            match fuzz_bodies::load_real_vocabs(&models) {
                Ok(vocabs) => Some(vocabs),
                Err(e) => {
                    common::missing_test_data(&format!("a real vocabulary ({e})"));
                    None
                }
            }
        })
        .as_deref()
}

/// A seed with a few bytes overwritten.
fn mutate(seed: &[u8], edits: &[(prop::sample::Index, u8)]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    if bytes.is_empty() {
        return bytes;
    }
    for (index, value) in edits {
        let i = index.index(bytes.len());
        bytes[i] = *value;
    }
    bytes
}

fn edits() -> impl Strategy<Value = Vec<(prop::sample::Index, u8)>> {
    prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)
}

#[test]
fn every_seed_runs_through_its_target() {
    for seed in seeds("gguf_reader") {
        fuzz_bodies::gguf_reader(&seed);
    }
    for seed in seeds("dequant") {
        fuzz_bodies::dequant(&seed);
    }
    for seed in seeds("chat") {
        fuzz_bodies::chat(&seed);
    }
    let tokenizer_seeds = seeds("tokenizer");
    // The text seeds pick each vocabulary at least once.
    if let Some(vocabs) = vocabs() {
        assert!(
            (15..=20).contains(&vocabs.len()),
            "{} vocabularies",
            vocabs.len()
        );
        for seed in &tokenizer_seeds {
            fuzz_bodies::tokenizer(vocabs, seed);
        }
    }
    for seed in tokenizer_seeds.iter().filter(|s| s.first() == Some(&1)) {
        fuzz_bodies::tokenizer(&[], seed);
    }
}

#[test]
fn seeded_chat_templates_render() {
    // The seeds are real templates: they must get past parsing and render
    // the conversation, or the chat target would fuzz only the parser.
    use phobos_models::chat::{ChatMessage, ChatRequest, ChatTemplate};
    for seed in seeds("chat") {
        let split = seed.iter().position(|&b| b == 0).unwrap();
        let template = ChatTemplate::new(String::from_utf8(seed[..split].to_vec()).unwrap());
        let request = ChatRequest {
            messages: vec![ChatMessage::new("user", "hi there")],
            add_generation_prompt: true,
            ..ChatRequest::default()
        };
        let text = template.unwrap().render(&request).unwrap();
        assert!(text.contains("hi there"), "{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn gguf_reader_on_mutated_seeds(pick in any::<prop::sample::Index>(), edits in edits()) {
        let seeds = seeds("gguf_reader");
        fuzz_bodies::gguf_reader(&mutate(pick.get::<Vec<u8>>(&seeds), &edits));
    }

    #[test]
    fn dequant_on_random_bytes(data in prop::collection::vec(any::<u8>(), 0..2048)) {
        fuzz_bodies::dequant(&data);
    }

    #[test]
    fn tokenizer_meta_on_random_bytes(data in prop::collection::vec(any::<u8>(), 0..1024)) {
        let mut input = vec![1];
        input.extend(data);
        fuzz_bodies::tokenizer(&[], &input);
    }

    #[test]
    fn chat_on_mutated_seeds(pick in any::<prop::sample::Index>(), edits in edits()) {
        let seeds = seeds("chat");
        fuzz_bodies::chat(&mutate(pick.get::<Vec<u8>>(&seeds), &edits));
    }

    #[test]
    fn chat_on_random_templates(
        source in r"(\{\{|\}\}|\{%|%\}|[a-z_ .()|'\[\]=+0-9-]|for |in |if |endfor|endif|messages|loop){0,40}",
        rest in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut input = source.into_bytes();
        input.push(0);
        input.extend(rest);
        fuzz_bodies::chat(&input);
    }
}

proptest! {
    // Fewer cases: each runs on one of the real vocabularies (up to 262k
    // tokens), and the seeds above already visit every one of them.
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn tokenizer_text_on_random_text(vocab in any::<u8>(), flags in 0u8..4, text in ".{0,200}") {
        if let Some(vocabs) = vocabs() {
            let mut input = vec![0, vocab, flags];
            input.extend(text.as_bytes());
            fuzz_bodies::tokenizer(vocabs, &input);
        }
    }

    #[test]
    fn tokenizer_text_on_mutated_seeds(pick in any::<prop::sample::Index>(), edits in edits()) {
        if let Some(vocabs) = vocabs() {
            let seeds: Vec<Vec<u8>> =
                seeds("tokenizer").into_iter().filter(|s| s[0] == 0).collect();
            let mut input = mutate(pick.get::<Vec<u8>>(&seeds), &edits);
            input[0] = 0;
            fuzz_bodies::tokenizer(vocabs, &input);
        }
    }
}
