//! The `phobos` binary on hostile GGUF files: `inspect` and `tokenize` exit
//! with status 1 and a message naming what is wrong, never a panic (101)
//! or an abort.

use std::path::Path;
use std::process::Command;

use phobos_models::gguf::GgufWriter;
use phobos_models::quant::GgmlType;

/// A fresh directory, removed when the guard drops.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("phobos-hostile-{name}-"))
        .tempdir()
        .unwrap()
}

/// A file with a working vocabulary, so `tokenize` would succeed but for
/// the damage, and one empty tensor of dims [0, 3, 5, 7].
fn good_model() -> Vec<u8> {
    let mut tokens = vec!["<unk>".to_owned(), "<s>".into(), "</s>".into()];
    tokens.extend((0..=255u8).map(|b| format!("<0x{b:02X}>")));
    let mut types = vec![2i32, 3, 3];
    types.extend([6; 256]);
    let mut w = GgufWriter::new();
    w.add("general.architecture", "llama").unwrap();
    w.add("tokenizer.ggml.model", "llama").unwrap();
    w.add_array(
        "tokenizer.ggml.tokens",
        tokens.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .unwrap();
    w.add_array("tokenizer.ggml.token_type", types).unwrap();
    w.add("tokenizer.ggml.bos_token_id", 1u32).unwrap();
    w.add_tensor(
        "blk.0.attn_q.weight",
        &[0, 3, 5, 7],
        GgmlType::F32,
        Vec::new(),
    )
    .unwrap();
    w.to_bytes()
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap()
}

/// The good model with the tensor's dims rewritten to [0, 2^62, 2^62, 2^62]:
/// zero elements, but rows and planes that overflow any 64-bit product.
fn overflowing_dims() -> Vec<u8> {
    let mut bytes = good_model();
    let dims: Vec<u8> = [3u64, 5, 7].iter().flat_map(|d| d.to_le_bytes()).collect();
    let at = find(&bytes, &dims);
    for i in 0..3 {
        bytes[at + 8 * i..at + 8 * (i + 1)].copy_from_slice(&(1u64 << 62).to_le_bytes());
    }
    bytes
}

/// Metadata arrays nested 30 deep, each claiming all the remaining bytes.
fn nested_counts() -> Vec<u8> {
    const LEN: usize = 1 << 16;
    let mut b = b"GGUF\x03\0\0\0".to_vec();
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes());
    b.push(b'k');
    b.extend_from_slice(&9u32.to_le_bytes());
    for _ in 0..30 {
        b.extend_from_slice(&9u32.to_le_bytes());
        let after = LEN - b.len() - 8;
        b.extend_from_slice(&(after as u64 / 12).to_le_bytes());
    }
    b.resize(LEN, 0xFF);
    b
}

/// The good model with its tensor made non-empty (dims [1, 3, 5, 7]) and
/// its data offset moved 1 TiB past the start of the data section.
fn offset_past_end() -> Vec<u8> {
    let mut bytes = good_model();
    let dims: Vec<u8> = [3u64, 5, 7].iter().flat_map(|d| d.to_le_bytes()).collect();
    let at = find(&bytes, &dims);
    bytes[at - 8..at].copy_from_slice(&1u64.to_le_bytes());
    // After the dims: the type id (4 bytes), then the data offset.
    let offset_at = at + dims.len() + 4;
    bytes[offset_at..offset_at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    bytes
}

fn run_phobos(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Both commands on `bytes`: exit status 1, every `expected` fragment in
/// the message, no panic.
fn refused(name: &str, bytes: &[u8], expected: &[&str]) {
    let tmp = temp_dir(name);
    let dir = tmp.path();
    let path = dir.join(format!("{name}.gguf"));
    std::fs::write(&path, bytes).unwrap();
    let path = path.to_str().unwrap();
    for args in [
        vec!["inspect", path, "--tensors"],
        vec!["tokenize", path, "hello"],
    ] {
        let (code, stderr) = run_phobos(&args);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(stderr.contains(path), "{args:?} names the file: {stderr}");
        for fragment in expected {
            assert!(
                stderr.contains(fragment),
                "{args:?}: no {fragment:?} in {stderr}"
            );
        }
    }
}

#[test]
fn the_undamaged_model_works() {
    let tmp = temp_dir("good");
    let dir = tmp.path();
    let path = dir.join("good.gguf");
    std::fs::write(&path, good_model()).unwrap();
    let path = path.to_str().unwrap();
    let (code, stderr) = run_phobos(&["inspect", path, "--tensors"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = run_phobos(&["tokenize", path, "hi"]);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn overflowing_dims_exit_1_naming_the_tensor() {
    refused(
        "overflow",
        &overflowing_dims(),
        &[
            "tensor 'blk.0.attn_q.weight'",
            "[0, 4611686018427387904, 4611686018427387904, 4611686018427387904]",
            "2^63-1",
        ],
    );
}

#[test]
fn nested_counts_exit_1() {
    refused("nested", &nested_counts(), &["array elements cannot fit"]);
}

#[test]
fn tensor_data_past_the_end_exits_1() {
    refused(
        "past-end",
        &offset_past_end(),
        &["tensor 'blk.0.attn_q.weight'", "past the end of the file"],
    );
}

#[test]
fn truncated_and_foreign_files_exit_1() {
    let good = good_model();
    // Cut inside the tensor directory (the data section is empty, and the
    // padding before it is under 32 bytes).
    refused("truncated", &good[..good.len() - 40], &["truncated GGUF"]);
    refused("foreign", b"\x7fELF\x02\x01\x01\0", &["not a GGUF file"]);
    refused("empty", b"", &["truncated GGUF"]);
}

#[test]
fn a_missing_file_exits_1() {
    let path = Path::new("/nonexistent/phobos/model.gguf");
    let (code, stderr) = run_phobos(&["inspect", path.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("cannot open GGUF file"), "{stderr}");
}
