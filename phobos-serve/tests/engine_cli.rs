//! `phobos run` and `phobos bench` on bad input: a clear error naming what
//! is wrong, exit status 1, never a panic.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn phobos(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("phobos-engine-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn gemma() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/gemma-3-270m-q4_k_m.gguf");
    path.exists().then_some(path)
}

fn assert_clean_failure(args: &[&str], needle: &str) {
    let (code, stdout, stderr) = phobos(args);
    assert_eq!(code, Some(1), "{args:?}: stderr {stderr}");
    assert!(stdout.is_empty(), "{args:?}: stdout {stdout}");
    assert!(stderr.contains(needle), "{args:?}: stderr {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
}

#[test]
fn missing_tensor_is_named() {
    // The shared tiny model is a llama vocabulary with no layers.
    let dir = temp_dir("missing");
    let model = common::tiny_model(&dir, "tiny", |w| {
        w.add("llama.block_count", 1u32).unwrap();
        w.add("llama.embedding_length", 4u32).unwrap();
        w.add("llama.feed_forward_length", 4u32).unwrap();
        w.add("llama.attention.head_count", 1u32).unwrap();
        w.add("llama.attention.layer_norm_rms_epsilon", 1e-5f32)
            .unwrap();
    });
    assert_clean_failure(&["run", model.to_str().unwrap(), "hi"], "token_embd.weight");
}

#[test]
fn unknown_arch_lists_the_supported_ones() {
    let dir = temp_dir("arch");
    let path = dir.join("unknown.gguf");
    let mut w = phobos_models::gguf::GgufWriter::new();
    w.add("general.architecture", "mamba9").unwrap();
    w.write_file(&path).unwrap();
    assert_clean_failure(&["run", path.to_str().unwrap(), "hi"], "gemma3");
}

#[test]
fn truncated_file_is_an_error() {
    let Some(gemma) = gemma() else { return };
    let dir = temp_dir("truncated");
    let path = dir.join("truncated.gguf");
    let bytes = std::fs::read(&gemma).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let (code, _, stderr) = phobos(&["run", path.to_str().unwrap(), "hi"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn prompt_over_the_context_is_an_error() {
    let Some(gemma) = gemma() else { return };
    let long = "word ".repeat(100);
    assert_clean_failure(
        &["run", gemma.to_str().unwrap(), "--raw", "-c", "16", &long],
        "context",
    );
}
