//! `phobos run` and `phobos bench` on bad input: a clear error naming what
//! is wrong, exit status 1, never a panic.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn phobos(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(args)
        // As a user's shell may have it: errors must still print no backtrace.
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh directory, removed when the guard drops.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("phobos-engine-cli-{name}-"))
        .tempdir()
        .unwrap()
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
    assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    assert!(!stderr.contains("backtrace"), "{args:?}: {stderr}");
}

#[test]
fn missing_tensor_is_named() {
    // The shared tiny model is a llama vocabulary with no layers.
    let tmp = temp_dir("missing");
    let dir = tmp.path();
    let model = common::tiny_model(dir, "tiny", |w| {
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
    let tmp = temp_dir("arch");
    let dir = tmp.path();
    let path = dir.join("unknown.gguf");
    let mut w = phobos_models::gguf::GgufWriter::new();
    w.add("general.architecture", "mamba9").unwrap();
    w.write_file(&path).unwrap();
    assert_clean_failure(&["run", path.to_str().unwrap(), "hi"], "gemma3");
}

/// The tiny model cut inside its tensor data: a few kilobytes show the
/// same check a half-copied multi-gigabyte model hits.
#[test]
fn truncated_file_is_an_error() {
    let tmp = temp_dir("truncated");
    let dir = tmp.path();
    let model = common::tiny_model(dir, "whole", |_| {});
    let bytes = std::fs::read(&model).unwrap();
    let path = dir.join("truncated.gguf");
    // The last 16 of output.weight's 32 data bytes are missing.
    std::fs::write(&path, &bytes[..bytes.len() - 16]).unwrap();
    assert_clean_failure(
        &["run", path.to_str().unwrap(), "hi"],
        "tensor 'output.weight': data at file offset",
    );
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
