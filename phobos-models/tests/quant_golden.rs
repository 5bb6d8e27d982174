//! Every quant type against gguf-py's numpy implementation: dequantize must
//! match bit for bit, and where the golden blocks were produced by
//! quantizing stored inputs, Phobos's quantizer must produce the same bytes.
//! Goldens: tests/golden/quant/dequant.json, made by
//! `python3 scripts/gen_quant_goldens.py`.

use phobos_models::quant::{GgmlType, can_quantize, dequantize, quantize};
use serde_json::Value;

fn golden() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/golden/quant/dequant.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2));
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn dequantize_matches_gguf_py_bit_for_bit() {
    let doc = golden();
    let cases = doc["cases"].as_array().unwrap();
    let mut report = Vec::new();
    for case in cases {
        let name = case["type"].as_str().unwrap();
        let ty = GgmlType::from_name(name).unwrap_or_else(|| panic!("unknown type {name}"));
        let blocks = unhex(case["blocks"].as_str().unwrap());
        let expected = f32s(&unhex(case["dequant_f32"].as_str().unwrap()));
        let mut got = vec![f32::NAN; expected.len()];
        dequantize(ty, &blocks, &mut got).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mismatches: Vec<usize> = (0..expected.len())
            .filter(|&i| got[i].to_bits() != expected[i].to_bits())
            .collect();
        assert!(
            mismatches.is_empty(),
            "{name}: {} of {} values differ, first at {}: got {} expected {}",
            mismatches.len(),
            expected.len(),
            mismatches[0],
            got[mismatches[0]],
            expected[mismatches[0]]
        );
        report.push(format!("{name}: {} values", expected.len()));
    }
    println!("{}", report.join("\n"));
    assert!(cases.len() >= 27, "every type has a golden case");
}

#[test]
fn quantize_reproduces_reference_bytes() {
    let doc = golden();
    let mut checked = Vec::new();
    for case in doc["cases"].as_array().unwrap() {
        let Some(input) = case["input_f32"].as_str() else {
            continue;
        };
        let name = case["type"].as_str().unwrap();
        let ty = GgmlType::from_name(name).unwrap();
        assert!(
            can_quantize(ty),
            "{name}: the golden has inputs but Phobos cannot quantize it"
        );
        let input = f32s(&unhex(input));
        let expected = unhex(case["blocks"].as_str().unwrap());
        let mut got = Vec::new();
        quantize(ty, &input, &mut got).unwrap();
        assert_eq!(got.len(), expected.len(), "{name}");
        let first_diff = got.iter().zip(&expected).position(|(a, b)| a != b);
        assert!(
            first_diff.is_none(),
            "{name}: bytes differ first at {first_diff:?}"
        );
        checked.push(name.to_owned());
    }
    for required in [
        "Q8_0", "Q8_1", "Q8_K", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "BF16", "F16",
    ] {
        assert!(
            checked.iter().any(|c| c == required),
            "{required} quantize not checked"
        );
    }
}
