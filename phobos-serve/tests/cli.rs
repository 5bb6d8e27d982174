//! The `phobos` binary end to end on a tiny GGUF written here: `inspect`
//! prints metadata and tensor counts, `tokenize` prints ids as one JSON array
//! with BOS as the metadata asks.

use std::path::PathBuf;
use std::process::Command;

use phobos_models::gguf::GgufWriter;
use phobos_models::quant::GgmlType;

fn tiny_model(dir: &std::path::Path) -> PathBuf {
    let mut tokens = vec!["<unk>".to_owned(), "<s>".into(), "</s>".into()];
    let mut types = vec![2i32, 3, 3];
    for byte in 0..=255u8 {
        tokens.push(format!("<0x{byte:02X}>"));
        types.push(6);
    }
    let mut scores = vec![0.0f32; tokens.len()];
    for (text, score) in [
        ("▁hi", -1.0f32),
        ("▁", -2.0),
        ("h", -3.0),
        ("i", -3.0),
        ("▁h", -2.5),
    ] {
        tokens.push(text.to_owned());
        types.push(1);
        scores.push(score);
    }
    let mut writer = GgufWriter::new();
    writer.add("general.architecture", "llama").unwrap();
    writer.add("tokenizer.ggml.model", "llama").unwrap();
    writer
        .add_array(
            "tokenizer.ggml.tokens",
            tokens.iter().map(String::as_str).collect::<Vec<_>>(),
        )
        .unwrap();
    writer.add_array("tokenizer.ggml.scores", scores).unwrap();
    writer
        .add_array("tokenizer.ggml.token_type", types)
        .unwrap();
    writer.add("tokenizer.ggml.bos_token_id", 1u32).unwrap();
    writer.add("tokenizer.ggml.eos_token_id", 2u32).unwrap();
    writer.add("tokenizer.ggml.add_bos_token", true).unwrap();
    let weights: Vec<u8> = (0..8).flat_map(|i| (i as f32).to_le_bytes()).collect();
    writer
        .add_tensor("output.weight", &[4, 2], GgmlType::F32, weights)
        .unwrap();
    let path = dir.join("tiny.gguf");
    writer.write_file(&path).unwrap();
    path
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

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("phobos-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn tokenize_prints_json_ids_with_bos() {
    let dir = temp_dir("tokenize");
    let model = tiny_model(&dir);
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
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn inspect_reports_metadata_and_tensors() {
    let dir = temp_dir("inspect");
    let model = tiny_model(&dir);
    let (ok, stdout, stderr) = phobos(&["inspect", model.to_str().unwrap(), "--tensors"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("tokenizer.ggml.model"), "{stdout}");
    assert!(
        stdout.contains("tensors: 1 (8 parameters, 32 bytes)"),
        "{stdout}"
    );
    assert!(stdout.contains("output.weight"), "{stdout}");
    std::fs::remove_dir_all(dir).unwrap();
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
