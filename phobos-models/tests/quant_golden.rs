//! Every quant type against an outside reference: dequantize must match bit
//! for bit, and where the golden blocks were produced by quantizing stored
//! inputs, Phobos's quantizer must produce the same bytes. Goldens:
//! tests/golden/quant/dequant.json (gguf-py's numpy code, made by
//! `python3 scripts/gen_quant_goldens.py`) and tests/golden/quant/ggml.json
//! (Q1_0, Q8_1 and Q8_K, which gguf-py lacks: llama.cpp's ggml C code, made
//! by `python3 scripts/gen_ggml_quant_goldens.py SDIST`).

use phobos_models::quant::{GgmlType, can_quantize, dequantize, quantize};
use serde_json::Value;

/// The cases of both golden files, in one list.
fn golden() -> Value {
    let mut cases = Vec::new();
    for file in ["dequant.json", "ggml.json"] {
        let path = format!(
            "{}/../tests/golden/quant/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let doc: Value = serde_json::from_str(&text).unwrap();
        cases.extend(doc["cases"].as_array().unwrap().iter().cloned());
    }
    serde_json::json!({ "cases": cases })
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
    assert!(cases.len() >= 28, "every type has a golden case");
    for required in ["Q1_0", "Q8_1", "Q8_K"] {
        let source = cases
            .iter()
            .find(|c| c["type"] == required)
            .and_then(|c| c["source"].as_str())
            .unwrap_or_else(|| panic!("{required}: no golden case"));
        assert!(source.starts_with("ggml "), "{required}: {source}");
    }
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
        "Q8_0", "Q8_1", "Q8_K", "Q1_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "BF16", "F16",
    ] {
        assert!(
            checked.iter().any(|c| c == required),
            "{required} quantize not checked"
        );
    }
}
