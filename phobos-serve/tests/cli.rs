//! The `phobos` binary end to end on a tiny GGUF written here: `inspect`
//! prints metadata and tensor counts, `tokenize` prints ids as one JSON array
//! with BOS as the metadata asks.

use std::path::PathBuf;
use std::process::Command;

mod common;

fn tiny_model(dir: &std::path::Path) -> PathBuf {
    common::tiny_model(dir, "tiny", |w| {
        w.add("tokenizer.ggml.add_bos_token", true).unwrap();
    })
}

fn phobos(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A fresh directory, removed when the guard drops.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("phobos-cli-{name}-"))
        .tempdir()
        .unwrap()
}

#[test]
fn tokenize_prints_json_ids_with_bos() {
    let tmp = temp_dir("tokenize");
    let dir = tmp.path();
    let model = tiny_model(dir);
    let model = model.to_str().unwrap();
    let hi = 3 + 256; // "▁hi", the first token after the byte tokens
    let (ok, stdout, stderr) = phobos(&["tokenize", model, "hi"]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), format!("[1,{hi}]"));
    let (ok, stdout, _) = phobos(&["tokenize", model, "hi", "--no-bos"]);
    assert!(ok);
    assert_eq!(stdout.trim(), format!("[{hi}]"));
    let (ok, stdout, _) = phobos(&["tokenize", model, "hi", "--pieces"]);
    assert!(ok);
    assert_eq!(stdout.trim(), r#"["<s>"," hi"]"#);
    // "é" has no token: its two UTF-8 bytes fall back to <0xC3> <0xA9>.
    let (ok, stdout, _) = phobos(&["tokenize", model, "é", "--no-bos"]);
    assert!(ok);
    assert_eq!(
        stdout.trim(),
        format!("[{},{},{}]", hi + 1, 3 + 0xC3, 3 + 0xA9)
    );
}

#[test]
fn inspect_reports_metadata_and_tensors() {
    let tmp = temp_dir("inspect");
    let dir = tmp.path();
    let model = tiny_model(dir);
    let (ok, stdout, stderr) = phobos(&["inspect", model.to_str().unwrap(), "--tensors"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("tokenizer.ggml.model"), "{stdout}");
    assert!(
        stdout.contains("tensors: 1 (8 parameters, 32 bytes)"),
        "{stdout}"
    );
    assert!(stdout.contains("output.weight"), "{stdout}");
}

#[test]
fn a_missing_file_is_a_clear_error() {
    let (ok, _, stderr) = phobos(&["tokenize", "/nonexistent/model.gguf", "hi"]);
    assert!(!ok);
    assert!(
        stderr.contains("opening /nonexistent/model.gguf"),
        "{stderr}"
    );
}
