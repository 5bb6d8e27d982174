//! Truncated and corrupted GGUF files: the reader returns an error (or a
//! consistent file when the damage happens to be harmless), never panics.

use phobos_models::gguf::{Array, Gguf, GgufWriter, Value, dequantize_view};
use phobos_models::quant::{GgmlType, quantize};
use proptest::prelude::*;

const REFERENCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/golden/gguf/reference.gguf"
);

/// A file with every value type, nested arrays and tensors of several
/// types, built once (quantizing IQ2_XS is a search).
fn sample() -> Vec<u8> {
    static SAMPLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    SAMPLE.get_or_init(build_sample).clone()
}

fn build_sample() -> Vec<u8> {
    let mut w = GgufWriter::new();
    w.add("general.architecture", "llama").unwrap();
    w.add("llama.block_count", 2u32).unwrap();
    w.add("k.f64", 1.25f64).unwrap();
    w.add("k.b", true).unwrap();
    w.add_array("k.strs", vec!["a", "bcd", ""]).unwrap();
    w.add_array("k.i16", vec![-1i16, 2]).unwrap();
    w.add_array(
        "k.nested",
        Array::Array(vec![Array::from(vec![1u8]), Array::from(vec!["z"])]),
    )
    .unwrap();
    let x: Vec<f32> = (0..256).map(|i| (i as f32 * 0.37).sin()).collect();
    for (name, ty) in [
        ("q8", GgmlType::Q8_0),
        ("q4k", GgmlType::Q4_K),
        ("iq2", GgmlType::IQ2_XS),
    ] {
        let mut bytes = Vec::new();
        quantize(ty, &x, &mut bytes).unwrap();
        w.add_tensor(name, &[256], ty, bytes).unwrap();
    }
    let f32_bytes: Vec<u8> = x[..64].iter().flat_map(|v| v.to_le_bytes()).collect();
    w.add_tensor("f", &[16, 4], GgmlType::F32, f32_bytes)
        .unwrap();
    w.to_bytes()
}

/// Reads everything a consumer could read; panics only on inconsistency.
fn walk(g: &Gguf) {
    for (key, value) in g.metadata() {
        let _ = (key.len(), value.to_string());
        if let Value::Array(a) = value {
            let _ = (0..a.len()).filter_map(|i| a.integer_at(i)).count();
        }
    }
    for view in g.tensor_views() {
        assert_eq!(view.data.len() as u64, view.info.n_bytes);
        let values = dequantize_view(&view).unwrap();
        assert_eq!(values.len() as u64, view.n_elements());
    }
}

/// End of the last tensor's data: prefixes at least this long stay valid.
fn data_end(bytes: &[u8]) -> usize {
    let g = Gguf::from_bytes(bytes).unwrap();
    let end = g
        .tensors()
        .iter()
        .map(|t| t.offset + t.n_bytes)
        .max()
        .unwrap_or(0);
    (g.data_offset() + end) as usize
}

#[test]
fn every_truncated_prefix_is_an_error() {
    for bytes in [sample(), std::fs::read(REFERENCE).unwrap()] {
        let needed = data_end(&bytes);
        for len in 0..bytes.len() {
            match Gguf::from_bytes(&bytes[..len]) {
                Ok(g) => {
                    assert!(len >= needed, "prefix of {len} bytes (< {needed}) parsed");
                    walk(&g);
                }
                Err(e) => {
                    assert!(len < needed, "prefix of {len} bytes failed: {e}");
                    assert!(!e.to_string().is_empty());
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn bit_flips_never_panic(
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..8),
        use_reference in any::<bool>(),
    ) {
        let mut bytes =
            if use_reference { std::fs::read(REFERENCE).unwrap() } else { sample() };
        for (index, bit) in &flips {
            let i = index.index(bytes.len());
            bytes[i] ^= 1 << bit;
        }
        if let Ok(g) = Gguf::from_bytes(&bytes) {
            walk(&g);
        }
    }

    #[test]
    fn overwritten_header_fields_never_panic(
        offset in 0usize..400,
        value in prop_oneof![
            Just(u64::MAX), Just(0u64), Just(1u64 << 32), Just(u64::MAX / 2), any::<u64>(),
        ],
        width in prop_oneof![Just(4usize), Just(8usize)],
    ) {
        let mut bytes = sample();
        let end = (offset + width).min(bytes.len());
        let patch = value.to_le_bytes();
        bytes[offset..end].copy_from_slice(&patch[..end - offset]);
        if let Ok(g) = Gguf::from_bytes(&bytes) {
            walk(&g);
        }
    }

    #[test]
    fn random_bytes_after_magic_never_panic(tail in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut bytes = b"GGUF\x03\0\0\0".to_vec();
        bytes.extend(tail);
        if let Ok(g) = Gguf::from_bytes(&bytes) {
            walk(&g);
        }
    }
}
