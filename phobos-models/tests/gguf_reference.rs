//! Reads a file written by gguf-py's GGUFWriter and compares everything
//! with what gguf-py's GGUFReader saw in it (tests/golden/gguf/, made by
//! `python3 scripts/gen_gguf_goldens.py`).

use phobos_models::gguf::{Array, Gguf, Value, ValueType};
use serde_json::{Value as Json, json};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/golden/gguf");

fn type_name(ty: ValueType) -> &'static str {
    match ty {
        ValueType::U8 => "UINT8",
        ValueType::I8 => "INT8",
        ValueType::U16 => "UINT16",
        ValueType::I16 => "INT16",
        ValueType::U32 => "UINT32",
        ValueType::I32 => "INT32",
        ValueType::F32 => "FLOAT32",
        ValueType::Bool => "BOOL",
        ValueType::String => "STRING",
        ValueType::Array => "ARRAY",
        ValueType::U64 => "UINT64",
        ValueType::I64 => "INT64",
        ValueType::F64 => "FLOAT64",
    }
}

fn array_json(array: &Array) -> Json {
    let n = array.len();
    match array {
        Array::F32(v) => json!(v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>()),
        Array::F64(v) => json!(v),
        Array::Bool(v) => json!(v),
        Array::String(v) => json!(v),
        Array::Array(v) => Json::Array(v.iter().map(array_json).collect()),
        other => Json::Array(
            (0..n)
                .map(|i| {
                    let x = other.integer_at(i).unwrap();
                    if x < 0 {
                        json!(x as i64)
                    } else {
                        json!(x as u64)
                    }
                })
                .collect(),
        ),
    }
}

fn value_json(value: &Value) -> Json {
    match value {
        Value::F32(x) => json!(f64::from(*x)),
        Value::F64(x) => json!(x),
        Value::Bool(b) => json!(b),
        Value::String(s) => json!(s),
        Value::Array(a) => array_json(a),
        other => {
            let x = other.as_integer().unwrap();
            if x < 0 {
                json!(x as i64)
            } else {
                json!(x as u64)
            }
        }
    }
}

#[test]
fn matches_gguf_py_reader() {
    let expected: Json =
        serde_json::from_str(&std::fs::read_to_string(format!("{DIR}/reference.json")).unwrap())
            .unwrap();
    let g = Gguf::open(format!("{DIR}/reference.gguf")).unwrap();
    assert_eq!(
        u64::from(g.version()),
        expected["version"].as_u64().unwrap()
    );
    assert_eq!(g.alignment(), expected["alignment"].as_u64().unwrap());
    assert_eq!(g.data_offset(), expected["data_offset"].as_u64().unwrap());

    let want_keys = expected["metadata"].as_array().unwrap();
    let got: Vec<(&str, &Value)> = g.metadata().collect();
    assert_eq!(got.len(), want_keys.len());
    for ((key, value), want) in got.iter().zip(want_keys) {
        assert_eq!(*key, want["key"].as_str().unwrap());
        let types = want["types"].as_array().unwrap();
        assert_eq!(type_name(value.value_type()), types[0], "{key}");
        if let Value::Array(a) = value {
            assert_eq!(type_name(a.element_type()), types[1], "{key}");
        }
        assert_eq!(value_json(value), want["value"], "{key}");
    }
    assert_eq!(g.arch().unwrap(), "llama");
    assert_eq!(g.arch_u32("block_count").unwrap(), 18);

    let want_tensors = expected["tensors"].as_array().unwrap();
    assert_eq!(g.tensors().len(), want_tensors.len());
    for (info, want) in g.tensors().iter().zip(want_tensors) {
        let name = want["name"].as_str().unwrap();
        assert_eq!(info.name, name);
        // gguf-py's ReaderTensor.shape is in ggml order, innermost first.
        let dims: Vec<u64> = want["dims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(info.dims, dims, "{name}");
        assert_eq!(info.ty.name(), want["type"].as_str().unwrap(), "{name}");
        assert_eq!(info.offset, want["offset"].as_u64().unwrap(), "{name}");
        assert_eq!(info.n_bytes, want["n_bytes"].as_u64().unwrap(), "{name}");
        let hex = want["dequant_f32"].as_str().unwrap();
        let want_bits: Vec<u32> = (0..hex.len())
            .step_by(8)
            .map(|i| {
                let b = u32::from_str_radix(&hex[i..i + 8], 16).unwrap();
                b.swap_bytes()
            })
            .collect();
        let got_bits: Vec<u32> = g
            .dequantize_tensor(name)
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect();
        assert_eq!(got_bits, want_bits, "{name}");
    }
}

#[test]
fn version_2_header_reads_the_same() {
    let mut bytes = std::fs::read(format!("{DIR}/reference.gguf")).unwrap();
    bytes[4..8].copy_from_slice(&2u32.to_le_bytes());
    let g = Gguf::from_vec(bytes).unwrap();
    assert_eq!(g.version(), 2);
    assert_eq!(g.get_str("v.str").unwrap(), "Grüße, 世界 🦀");
}
