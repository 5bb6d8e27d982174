//! Hostile GGUF files: shapes whose sizes overflow, directories that lie,
//! and tokenizer metadata of the wrong type or size. Each is refused at
//! open (or at tokenizer build) with a typed error naming what is wrong.

use phobos_models::gguf::{Array, Gguf, GgufError, GgufWriter, TensorInfo, Value};
use phobos_models::quant::GgmlType;
use phobos_models::tokenizer::{Tokenizer, TokenizerError};

fn header(n_tensors: u64, n_kv: u64) -> Vec<u8> {
    let mut b = b"GGUF\x03\0\0\0".to_vec();
    b.extend_from_slice(&n_tensors.to_le_bytes());
    b.extend_from_slice(&n_kv.to_le_bytes());
    b
}

fn push_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u64).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

/// One tensor directory entry, then `data_len` zero bytes after alignment.
fn with_tensor(name: &str, dims: &[u64], ty: GgmlType, data_len: usize) -> Vec<u8> {
    let mut b = header(1, 0);
    push_str(&mut b, name);
    b.extend_from_slice(&(dims.len() as u32).to_le_bytes());
    for d in dims {
        b.extend_from_slice(&d.to_le_bytes());
    }
    b.extend_from_slice(&ty.id().to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b.resize(b.len().div_ceil(32) * 32 + data_len, 0);
    b
}

fn shape_error(dims: &[u64], ty: GgmlType) -> String {
    let err = Gguf::from_bytes(&with_tensor("blk.0.w", dims, ty, 64)).unwrap_err();
    let GgufError::ShapeOverflow {
        tensor, dims: d, ..
    } = &err
    else {
        panic!("{dims:?} {ty}: expected ShapeOverflow, got {err}");
    };
    assert_eq!(tensor, "blk.0.w");
    assert_eq!(d, dims);
    err.to_string()
}

#[test]
fn dims_whose_products_overflow_fail_at_open() {
    // The element count is 0, but rows and planes overflow u64.
    let message = shape_error(&[0, 1 << 62, 1 << 62, 1 << 62], GgmlType::F32);
    assert!(message.contains("'blk.0.w'"), "{message}");
    assert!(message.contains("2^63-1"), "{message}");
    shape_error(&[1 << 62, 0, 4], GgmlType::F32);
    shape_error(&[0, 1 << 40, 1 << 40], GgmlType::Q4_K);
    shape_error(&[u64::MAX], GgmlType::F32);
    shape_error(&[1 << 63], GgmlType::F32);
    // The element count fits in i64 but the bytes do not.
    let message = shape_error(&[1 << 61, 2], GgmlType::F64);
    assert!(message.contains("F64 data"), "{message}");
    shape_error(&[0, 1 << 61, 2], GgmlType::F64);
    shape_error(&[256, 1 << 56], GgmlType::Q8_K);
}

#[test]
fn empty_tensors_with_small_dims_still_open() {
    let g = Gguf::from_bytes(&with_tensor("e", &[0, 3, 5], GgmlType::Q4_K, 0)).unwrap();
    let info = g.tensor_info("e").unwrap();
    assert_eq!((info.n_elements, info.n_bytes, info.n_rows()), (0, 0, 15));
    assert!(g.tensor("e").unwrap().data.is_empty());
}

#[test]
fn n_rows_of_a_hand_built_entry_saturates() {
    let info = TensorInfo {
        name: "x".into(),
        dims: vec![0, 1 << 62, 1 << 62],
        ty: GgmlType::F32,
        offset: 0,
        n_elements: 0,
        n_bytes: 0,
        entry_offset: 0,
    };
    assert_eq!(info.n_rows(), u64::MAX);
}

#[test]
fn writer_refuses_shapes_the_reader_refuses() {
    let mut w = GgufWriter::new();
    assert!(
        w.add_tensor("w", &[0, 1 << 62, 1 << 62], GgmlType::F32, Vec::new())
            .is_err()
    );
    w.add_tensor("w", &[0, 1 << 20, 1 << 20], GgmlType::F32, Vec::new())
        .unwrap();
    assert!(Gguf::from_bytes(&w.to_bytes()).is_ok());
}

#[test]
fn tensor_data_past_the_end_is_refused() {
    // 4 f32 need 16 bytes; only 15 follow the directory.
    let err = Gguf::from_bytes(&with_tensor("t", &[4], GgmlType::F32, 15)).unwrap_err();
    assert!(
        matches!(&err, GgufError::TensorOutOfRange { tensor, .. } if tensor == "t"),
        "{err}"
    );
    assert!(Gguf::from_bytes(&with_tensor("t", &[4], GgmlType::F32, 16)).is_ok());
}

#[test]
fn duplicate_tensor_names_are_refused() {
    let mut w = GgufWriter::new();
    w.add_tensor("a", &[4], GgmlType::F32, vec![0; 16]).unwrap();
    w.add_tensor("b", &[4], GgmlType::F32, vec![0; 16]).unwrap();
    let mut bytes = w.to_bytes();
    let b_name = bytes
        .windows(9)
        .position(|s| s == b"\x01\0\0\0\0\0\0\0b")
        .unwrap();
    bytes[b_name + 8] = b'a';
    let err = Gguf::from_bytes(&bytes).unwrap_err();
    assert!(
        matches!(&err, GgufError::DuplicateTensor { tensor, .. } if tensor == "a"),
        "{err}"
    );
}

#[test]
fn absurd_string_lengths_are_refused() {
    for len in [u64::MAX, 1 << 63, 1 << 40, 100] {
        let mut b = header(0, 1);
        push_str(&mut b, "k");
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(b"short");
        let err = Gguf::from_bytes(&b).unwrap_err();
        assert!(
            matches!(&err, GgufError::Truncated { field, needed, .. } if field.contains("'k'") && *needed == len),
            "{err}"
        );
    }
    // A key length past the end.
    let mut b = header(0, 1);
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    b.extend_from_slice(&[0; 16]);
    assert!(matches!(
        Gguf::from_bytes(&b),
        Err(GgufError::Truncated { .. })
    ));
}

#[test]
fn counts_leave_room_for_the_tensor_directory() {
    // Two tensor entries need 48 bytes at least; the metadata array claims
    // all but 12 of the bytes after its header, so it cannot fit beside them.
    let mut b = header(2, 1);
    push_str(&mut b, "k");
    b.extend_from_slice(&9u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&100u64.to_le_bytes());
    b.resize(b.len() + 112, 0);
    let err = Gguf::from_bytes(&b).unwrap_err();
    assert!(
        matches!(
            &err,
            GgufError::CountTooLarge {
                count: 100,
                available: 64,
                ..
            }
        ),
        "{err}"
    );
}

/// A vocabulary file with the given entries replacing the good ones.
fn vocab_file(edit: impl FnOnce(&mut Vec<(&'static str, Value)>)) -> Vec<u8> {
    let tokens: Vec<String> = ["<unk>", "<s>", "</s>", "a", "b", "ab"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut entries: Vec<(&'static str, Value)> = vec![
        ("tokenizer.ggml.model", "gpt2".into()),
        ("tokenizer.ggml.pre", "default".into()),
        ("tokenizer.ggml.tokens", Array::String(tokens).into()),
        (
            "tokenizer.ggml.token_type",
            Array::I32(vec![2, 3, 3, 1, 1, 1]).into(),
        ),
        ("tokenizer.ggml.merges", Array::from(vec!["a b"]).into()),
        ("tokenizer.ggml.bos_token_id", 1u32.into()),
        ("tokenizer.ggml.add_bos_token", false.into()),
    ];
    edit(&mut entries);
    let mut w = GgufWriter::new();
    for (key, value) in entries {
        w.add(key, value).unwrap();
    }
    w.to_bytes()
}

fn set(entries: &mut Vec<(&'static str, Value)>, key: &'static str, value: Value) {
    match entries.iter_mut().find(|(k, _)| *k == key) {
        Some(entry) => entry.1 = value,
        None => entries.push((key, value)),
    }
}

fn tokenizer_error(edit: impl FnOnce(&mut Vec<(&'static str, Value)>)) -> TokenizerError {
    let g = Gguf::from_bytes(&vocab_file(edit)).unwrap();
    Tokenizer::from_gguf(&g).unwrap_err()
}

#[test]
fn the_unedited_vocabulary_builds() {
    let g = Gguf::from_bytes(&vocab_file(|_| {})).unwrap();
    let t = Tokenizer::from_gguf(&g).unwrap();
    assert_eq!(t.encode("abab", false, false).unwrap(), vec![5, 5]);
}

#[test]
fn wrong_typed_tokenizer_metadata_is_a_typed_error() {
    let wrong_type = |key: &'static str, value: Value| {
        let err = tokenizer_error(|e| set(e, key, value));
        assert!(
            matches!(&err, TokenizerError::Gguf(GgufError::WrongType { key: k, .. }) if k == key),
            "{key}: {err}"
        );
    };
    wrong_type("tokenizer.ggml.model", 3u32.into());
    wrong_type("tokenizer.ggml.pre", Array::from(vec!["x"]).into());
    wrong_type("tokenizer.ggml.tokens", 6u32.into());
    wrong_type("tokenizer.ggml.tokens", Array::U32(vec![1, 2]).into());
    wrong_type("tokenizer.ggml.token_type", Array::F32(vec![1.0; 6]).into());
    wrong_type("tokenizer.ggml.merges", Array::U8(vec![1]).into());
    wrong_type("tokenizer.ggml.bos_token_id", "1".into());
    wrong_type("tokenizer.ggml.add_bos_token", 1u8.into());
    let err = tokenizer_error(|e| set(e, "tokenizer.ggml.eos_token_id", (-1i64).into()));
    assert!(
        matches!(&err, TokenizerError::Gguf(GgufError::OutOfRange { .. })),
        "{err}"
    );
    // A special id past the vocabulary is not an error: llama.cpp warns and
    // keeps the model's default, and so does the load (tokenizer/load_rules).
    let g = Gguf::from_bytes(&vocab_file(|e| {
        set(e, "tokenizer.ggml.unknown_token_id", 6u32.into())
    }))
    .unwrap();
    let t = Tokenizer::from_gguf(&g).unwrap();
    assert_ne!(t.special_ids().unk, Some(6));
    let err = tokenizer_error(|e| {
        set(
            e,
            "tokenizer.ggml.token_type",
            Array::I32(vec![1, 1]).into(),
        )
    });
    assert!(
        matches!(&err, TokenizerError::LengthMismatch { found: 2, .. }),
        "{err}"
    );
    let err = tokenizer_error(|e| set(e, "tokenizer.ggml.merges", Array::from(vec!["ab"]).into()));
    assert!(matches!(&err, TokenizerError::BadMerge { .. }), "{err}");
}

#[test]
fn merges_naming_unknown_tokens_fall_back_like_llama_cpp() {
    // llama.cpp keeps such merges; a merged piece that is no token falls
    // back to its bytes. Nothing here may panic or leave the vocabulary.
    let g = Gguf::from_bytes(&vocab_file(|e| {
        set(
            e,
            "tokenizer.ggml.merges",
            Array::from(vec!["x y", "a b", "ab ab", "zz q"]).into(),
        )
    }))
    .unwrap();
    let t = Tokenizer::from_gguf(&g).unwrap();
    // "ab ab" makes "abab", which is no token: its bytes are.
    assert_eq!(t.encode("abab", false, false).unwrap(), vec![3, 4, 3, 4]);
    // "xy" is no token and neither are its bytes: dropped, as llama.cpp does.
    assert_eq!(t.encode("xyab", false, false).unwrap(), vec![5]);
}

#[test]
fn a_vocabulary_claiming_2_pow_31_tokens_fails_before_allocating() {
    let mut b = header(0, 2);
    push_str(&mut b, "tokenizer.ggml.model");
    b.extend_from_slice(&8u32.to_le_bytes());
    push_str(&mut b, "gpt2");
    push_str(&mut b, "tokenizer.ggml.tokens");
    b.extend_from_slice(&9u32.to_le_bytes());
    b.extend_from_slice(&8u32.to_le_bytes());
    b.extend_from_slice(&(1u64 << 31).to_le_bytes());
    b.resize(b.len() + 4096, 0);
    let err = Gguf::from_bytes(&b).unwrap_err();
    assert!(
        matches!(&err, GgufError::CountTooLarge { field, count, .. }
            if field.contains("tokenizer.ggml.tokens") && *count == 1 << 31),
        "{err}"
    );
}
