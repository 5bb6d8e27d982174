//! The tiny GGUF model the `phobos` binary's end-to-end tests run on: a
//! SentencePiece (llama) vocabulary with byte fallback, so any text
//! tokenizes, and one small f32 tensor.

use std::path::{Path, PathBuf};

use phobos_models::gguf::GgufWriter;
use phobos_models::quant::GgmlType;

/// Normal pieces every tiny model carries after `<unk>`, `<s>`, `</s>` and
/// the 256 byte tokens: enough for `hi` to merge.
const PIECES: [(&str, f32); 5] = [
    ("▁hi", -1.0),
    ("▁", -2.0),
    ("h", -3.0),
    ("i", -3.0),
    ("▁h", -2.5),
];

/// Writes `dir/NAME.gguf`; `extra` adds the metadata a test is about (a
/// chat template, `add_bos_token`, ...).
pub fn tiny_model(dir: &Path, name: &str, extra: impl FnOnce(&mut GgufWriter)) -> PathBuf {
    let mut tokens = vec!["<unk>".to_owned(), "<s>".into(), "</s>".into()];
    let mut types = vec![2i32, 3, 3];
    for byte in 0..=255u8 {
        tokens.push(format!("<0x{byte:02X}>"));
        types.push(6);
    }
    let mut scores = vec![0.0f32; tokens.len()];
    for (text, score) in PIECES {
        tokens.push(text.to_owned());
        types.push(1);
        scores.push(score);
    }
    let mut writer = GgufWriter::new();
    writer.add("general.architecture", "llama").unwrap();
    writer.add("tokenizer.ggml.model", "llama").unwrap();
    let texts: Vec<&str> = tokens.iter().map(String::as_str).collect();
    writer.add_array("tokenizer.ggml.tokens", texts).unwrap();
    writer.add_array("tokenizer.ggml.scores", scores).unwrap();
    writer
        .add_array("tokenizer.ggml.token_type", types)
        .unwrap();
    writer.add("tokenizer.ggml.bos_token_id", 1u32).unwrap();
    writer.add("tokenizer.ggml.eos_token_id", 2u32).unwrap();
    extra(&mut writer);
    let weights: Vec<u8> = (0..8).flat_map(|i| (i as f32).to_le_bytes()).collect();
    writer
        .add_tensor("output.weight", &[4, 2], GgmlType::F32, weights)
        .unwrap();
    let path = dir.join(format!("{name}.gguf"));
    writer.write_file(&path).unwrap();
    path
}
