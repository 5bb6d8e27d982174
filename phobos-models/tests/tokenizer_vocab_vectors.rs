//! llama.cpp's tokenizer test vectors: every `ggml-vocab-*.gguf` that has
//! `.inp`/`.out` files must tokenize every input to exactly the expected
//! ids (no BOS/EOS, special tokens not parsed: how llama.cpp's
//! test-tokenizer-0 runs them).
//!
//! The vectors are the committed copies under
//! tests/golden/tokenizer/llama-vocab-vectors/ (pinned to the llama.cpp the
//! sdist of scripts/fetch_llama_vocabs.sh ships; one vocabulary per `.inp`
//! there); the `.gguf` vocabularies are the fetched ones, from
//! models/llama-vocabs/ or `PHOBOS_LLAMA_VOCABS`. Without them the test
//! says so and skips, or fails under `PHOBOS_REQUIRE_TEST_DATA=1`.
//! `PHOBOS_VOCAB_FILTER=NAME` checks only the vocabularies whose name
//! contains NAME; one that selects none is a failure, never a pass.

mod common;

use std::path::{Path, PathBuf};

use phobos_models::gguf::Gguf;
use phobos_models::tokenizer::Tokenizer;

fn vocab_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("PHOBOS_LLAMA_VOCABS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("models")
                .join("llama-vocabs")
        });
    dir.is_dir().then_some(dir)
}

/// Inputs are separated by a line `__ggml_vocab_test__`.
fn parse_inputs(raw: &str) -> Vec<String> {
    let separator = "\n__ggml_vocab_test__\n";
    let mut inputs = Vec::new();
    let mut rest = raw;
    while !rest.is_empty() {
        match rest.find(separator) {
            Some(at) => {
                inputs.push(rest[..at].to_owned());
                rest = &rest[at + separator.len()..];
            }
            None => {
                inputs.push(rest.to_owned());
                break;
            }
        }
    }
    inputs
}

fn parse_outputs(raw: &str) -> Vec<Vec<u32>> {
    raw.lines()
        .map(|line| {
            line.split_whitespace()
                .map(|id| id.parse().expect("ids are integers"))
                .collect()
        })
        .collect()
}

struct VocabResult {
    name: String,
    passed: usize,
    total: usize,
    failures: Vec<String>,
}

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests")
        .join("golden")
        .join("tokenizer")
        .join("llama-vocab-vectors")
}

fn check_vocab(gguf_path: &Path) -> VocabResult {
    let name = gguf_path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .trim_start_matches("ggml-vocab-")
        .trim_end_matches(".gguf")
        .to_owned();
    let committed = |extension: &str| {
        let path = vectors_dir().join(format!("ggml-vocab-{name}.gguf.{extension}"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let inputs = parse_inputs(&committed("inp"));
    let outputs = parse_outputs(&committed("out"));
    assert_eq!(inputs.len(), outputs.len(), "{name}: inputs vs outputs");
    let gguf = Gguf::open(gguf_path).unwrap();
    let tokenizer = Tokenizer::from_gguf(&gguf).unwrap();
    let mut passed = 0;
    let mut failures = Vec::new();
    for (input, expected) in inputs.iter().zip(&outputs) {
        let got = tokenizer.encode(input, false, false).unwrap();
        if &got == expected {
            passed += 1;
        } else {
            failures.push(format!(
                "{input:?}\n    expected {expected:?}\n    got      {got:?}"
            ));
        }
    }
    VocabResult {
        name,
        passed,
        total: inputs.len(),
        failures,
    }
}

/// The vocabularies under `dir` that have committed vectors and whose name
/// contains `filter`, sorted; an error when the filter selects none, so a
/// mistyped filter can never pass by checking nothing.
fn select(dir: &Path, filter: &str) -> Result<Vec<PathBuf>, String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(vectors_dir())
        .map_err(|e| format!("{}: {e}", vectors_dir().display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.strip_suffix(".inp")?.to_owned();
            name.contains(filter).then(|| dir.join(name))
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!(
            "PHOBOS_VOCAB_FILTER={filter:?} selects none of the vocabularies with vectors in {}",
            vectors_dir().display()
        ));
    }
    Ok(paths)
}

#[test]
fn a_filter_that_selects_nothing_is_an_error() {
    let dir = Path::new("unused");
    let error = select(dir, "no-such-vocab").unwrap_err();
    assert!(error.contains("selects none"), "{error}");
    let qwen = select(dir, "qwen2").unwrap();
    assert_eq!(qwen, [dir.join("ggml-vocab-qwen2.gguf")]);
    assert_eq!(select(dir, "").unwrap().len(), 15);
}

#[test]
fn llama_cpp_vocab_vectors() {
    let Some(dir) = vocab_dir() else {
        common::missing_test_data(
            "llama.cpp vocab files (models/llama-vocabs or PHOBOS_LLAMA_VOCABS)",
        );
        return;
    };
    let filter = std::env::var("PHOBOS_VOCAB_FILTER").unwrap_or_default();
    let paths = select(&dir, &filter).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !filter.is_empty() || paths.len() >= 15,
        "expected 15 vector sets, found {}",
        paths.len()
    );
    for path in &paths {
        assert!(
            path.exists(),
            "{path:?} missing: rerun scripts/fetch_llama_vocabs.sh"
        );
    }
    let mut all_pass = true;
    let mut vectors = 0;
    for path in &paths {
        let result = check_vocab(path);
        eprintln!("{:<16} {}/{}", result.name, result.passed, result.total);
        for failure in result.failures.iter().take(5) {
            eprintln!("  FAIL {failure}");
        }
        assert!(result.total > 0, "{}: no vectors", result.name);
        vectors += result.total;
        all_pass &= result.passed == result.total;
    }
    assert!(all_pass, "some vocab vectors failed (see above)");
    eprintln!("{vectors} vectors over {} vocabularies", paths.len());
}
