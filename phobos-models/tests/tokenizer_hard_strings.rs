//! The differential check against llama.cpp: every hard string of
//! tests/golden/tokenizer/hard_strings/strings.json (scripts, emoji and ZWJ
//! sequences, whitespace runs, special-token look-alikes, ...) on every
//! vocabulary in models/llama-vocabs and on Gemma 3 270M gives exactly the
//! ids `llama-tokenize` (pinned sdist) gives, in both modes of
//! scripts/gen_hard_string_goldens.py:
//!   special: `encode(text, adds_bos(), true)`, llama-tokenize's defaults;
//!   plain:   `encode(text, false, false)`, `--no-parse-special --no-bos`.
//! The special-token ids and the end-of-generation set must equal what
//! llama.cpp's loader settled on. The goldens are committed; the model files
//! are fetched (scripts/fetch_test_data.sh) and their absence is reported as
//! the other fetched-data tests do (a failure under PHOBOS_REQUIRE_TEST_DATA=1).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use phobos_models::gguf::Gguf;
use phobos_models::tokenizer::{SpecialIds, Tokenizer, TokenizerError};
use serde_json::Value;

/// Vocabularies whose tokenizer model Phobos does not implement, with why.
/// Each must still fail to load with `UnsupportedModel`, so this list cannot
/// go stale silently.
const UNSUPPORTED: &[(&str, &str, &str)] = &[(
    "nomic-bert-moe",
    "t5",
    "tokenizer.ggml.model 't5' is SentencePiece Unigram (UGM) with a precompiled \
     normalization charsmap; Phobos implements llama/gpt2/gemma4/bert only",
)];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn golden_dir() -> PathBuf {
    root().join("tests/golden/tokenizer/hard_strings")
}

fn vocab_dir() -> PathBuf {
    std::env::var_os("PHOBOS_LLAMA_VOCABS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("models/llama-vocabs"))
}

fn ids(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .map(|id| id.parse().expect("golden ids are integers"))
        .collect()
}

fn strings() -> Vec<String> {
    let raw = std::fs::read_to_string(golden_dir().join("strings.json")).unwrap();
    let value: Value = serde_json::from_str(&raw).unwrap();
    value["strings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// The special ids and EOG set as the generator recorded them.
fn expected_specials(info: &Value) -> (SpecialIds, Vec<u32>) {
    let get = |key: &str| info.get(key).and_then(Value::as_u64).map(|v| v as u32);
    let special = SpecialIds {
        bos: get("bos"),
        eos: get("eos"),
        eot: get("eot"),
        eom: get("eom"),
        unk: get("unk"),
        sep: get("sep"),
        pad: get("pad"),
        mask: get("mask"),
        fim_pre: get("fim_pre"),
        fim_suf: get("fim_suf"),
        fim_mid: get("fim_mid"),
        fim_pad: get("fim_pad"),
        fim_rep: get("fim_rep"),
        fim_sep: get("fim_sep"),
    };
    let eog = info["eog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    (special, eog)
}

/// Compares one model with its golden; returns the differences.
fn check(model: &Path, golden: &Value, strings: &[String]) -> Vec<String> {
    let name = model.file_name().unwrap().to_string_lossy().into_owned();
    let gguf = Gguf::open(model).unwrap();
    let info = &golden["llama_cpp"];
    assert!(
        info.get("load_error").is_none(),
        "{name}: llama.cpp could not load it: {info}"
    );
    let tokenizer = match Tokenizer::from_gguf(&gguf) {
        Err(TokenizerError::UnsupportedModel(kind)) => {
            let entry = UNSUPPORTED
                .iter()
                .find(|(vocab, _, _)| name == format!("ggml-vocab-{vocab}.gguf"));
            let Some((_, expected_kind, why)) = entry else {
                return vec![format!("{name}: unsupported model '{kind}' not listed")];
            };
            assert_eq!(&kind, expected_kind, "{name}");
            eprintln!("NOT COMPARED {name}: {why}");
            return Vec::new();
        }
        other => other.unwrap(),
    };
    let mut diffs = Vec::new();
    if let Some((vocab, _, _)) = UNSUPPORTED
        .iter()
        .find(|(vocab, _, _)| name == format!("ggml-vocab-{vocab}.gguf"))
    {
        diffs.push(format!("{name}: listed as unsupported ({vocab}) but loads"));
    }
    let (special, eog) = expected_specials(info);
    if tokenizer.special_ids() != special {
        diffs.push(format!(
            "{name}: special ids\n    llama.cpp {special:?}\n    phobos    {:?}",
            tokenizer.special_ids()
        ));
    }
    if tokenizer.end_of_generation_ids() != eog {
        diffs.push(format!(
            "{name}: end-of-generation ids\n    llama.cpp {eog:?}\n    phobos    {:?}",
            tokenizer.end_of_generation_ids()
        ));
    }
    for (mode, add_special, parse_special) in [
        ("special", tokenizer.adds_bos(), true),
        ("plain", false, false),
    ] {
        let expected = golden[mode].as_array().unwrap();
        assert_eq!(expected.len(), strings.len(), "{name} {mode}: golden size");
        for (text, want) in strings.iter().zip(expected) {
            let want = ids(want.as_str().unwrap());
            let got = tokenizer.encode(text, add_special, parse_special);
            if got.as_ref().ok() != Some(&want) {
                diffs.push(format!(
                    "{name} {mode} {text:?}\n    llama.cpp {want:?}\n    phobos    {got:?}"
                ));
            }
        }
    }
    diffs
}

#[test]
fn every_vocab_matches_llama_tokenize_on_hard_strings() {
    let strings = strings();
    assert!(strings.len() >= 100, "only {} hard strings", strings.len());
    let vocabs = vocab_dir();
    let gemma = root().join("models/gemma-3-270m-q4_k_m.gguf");
    if !vocabs.is_dir() || !gemma.is_file() {
        common::missing_test_data("models/llama-vocabs and models/gemma-3-270m-q4_k_m.gguf");
        return;
    }
    // Every vocabulary present has a golden and every golden a vocabulary.
    let mut models: Vec<PathBuf> = std::fs::read_dir(&vocabs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
        .collect();
    models.sort();
    models.push(gemma);
    let goldens: BTreeSet<String> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && n != "strings.json")
        .collect();
    let golden_name = |model: &Path| {
        let stem = model.file_stem().unwrap().to_string_lossy();
        format!("{}.json", stem.trim_start_matches("ggml-vocab-"))
    };
    let wanted: BTreeSet<String> = models.iter().map(|m| golden_name(m)).collect();
    assert_eq!(wanted, goldens, "vocab files vs committed goldens");
    assert!(models.len() >= 20, "only {} vocabularies", models.len());

    let mut diffs = Vec::new();
    for model in &models {
        let raw = std::fs::read_to_string(golden_dir().join(golden_name(model))).unwrap();
        let golden: Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(
            golden["model_bytes"].as_u64(),
            Some(std::fs::metadata(model).unwrap().len()),
            "{model:?} is not the file the goldens were made from"
        );
        let found = check(model, &golden, &strings);
        eprintln!(
            "{:<36} {}",
            model.file_name().unwrap().to_string_lossy(),
            if found.is_empty() { "ok" } else { "DIFFERS" }
        );
        diffs.extend(found);
    }
    for diff in diffs.iter().take(40) {
        eprintln!("{diff}");
    }
    assert!(
        diffs.is_empty(),
        "{} differences from llama.cpp",
        diffs.len()
    );
}
