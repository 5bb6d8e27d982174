//! Writer -> reader round trip over every metadata type, and the typed
//! errors of the reader on hand-made bad files.

use phobos_models::gguf::{Array, Gguf, GgufError, GgufWriter, Value, ValueType};
use phobos_models::quant::GgmlType;

fn sample_writer() -> GgufWriter {
    let mut w = GgufWriter::new();
    w.add("general.architecture", "llama").unwrap();
    w.add("llama.block_count", 18u32).unwrap();
    w.add("t.u8", 200u8).unwrap();
    w.add("t.i8", -100i8).unwrap();
    w.add("t.u16", 60000u16).unwrap();
    w.add("t.i16", -30000i16).unwrap();
    w.add("t.i32", -5i32).unwrap();
    w.add("t.u64", u64::MAX).unwrap();
    w.add("t.i64", i64::MIN).unwrap();
    w.add("t.f32", 1.5f32).unwrap();
    w.add("t.f64", 0.1f64).unwrap();
    w.add("t.bool", true).unwrap();
    w.add("t.str", "héllo").unwrap();
    w.add_array("t.strs", vec!["a", "", "ü"]).unwrap();
    w.add_array("t.f32s", vec![0.5f32, -1.0]).unwrap();
    w.add_array("t.i32s", vec![1i32, 2, 3]).unwrap();
    w.add_array("t.bools", vec![true, false]).unwrap();
    w.add_array("t.u8s", vec![1u8, 2]).unwrap();
    w.add_array("t.empty", Vec::<u64>::new()).unwrap();
    let nested = Array::Array(vec![
        Array::from(vec![1u16, 2]),
        Array::from(vec!["x"]),
        Array::Array(vec![Array::from(vec![7i64])]),
    ]);
    w.add_array("t.nested", nested).unwrap();
    let f32s: Vec<u8> = (0..12).flat_map(|i| (i as f32).to_le_bytes()).collect();
    w.add_tensor("a", &[4, 3], GgmlType::F32, f32s).unwrap();
    w.add_tensor("b", &[32], GgmlType::Q8_0, vec![0u8; 34])
        .unwrap();
    w.add_tensor("empty", &[0, 5], GgmlType::F16, Vec::new())
        .unwrap();
    w
}

#[test]
fn round_trip_preserves_every_value_type() {
    let bytes = sample_writer().to_bytes();
    let g = Gguf::from_bytes(&bytes).unwrap();
    assert_eq!(g.version(), 3);
    assert_eq!(g.alignment(), 32);
    assert_eq!(g.arch().unwrap(), "llama");
    assert_eq!(g.arch_u32("block_count").unwrap(), 18);
    assert_eq!(g.get_u8("t.u8").unwrap(), 200);
    assert_eq!(g.get_i8("t.i8").unwrap(), -100);
    assert_eq!(g.get_u16("t.u16").unwrap(), 60000);
    assert_eq!(g.get_i16("t.i16").unwrap(), -30000);
    assert_eq!(g.get_i32("t.i32").unwrap(), -5);
    assert_eq!(g.get_u64("t.u64").unwrap(), u64::MAX);
    assert_eq!(g.get_i64("t.i64").unwrap(), i64::MIN);
    assert_eq!(g.get_f32("t.f32").unwrap(), 1.5);
    assert_eq!(g.get_f64("t.f64").unwrap(), 0.1);
    assert!(g.get_bool("t.bool").unwrap());
    assert_eq!(g.get_str("t.str").unwrap(), "héllo");
    assert_eq!(g.get_str_array("t.strs").unwrap(), ["a", "", "ü"]);
    assert_eq!(g.get_f32_array("t.f32s").unwrap(), [0.5, -1.0]);
    assert_eq!(g.get_i32_array("t.i32s").unwrap(), [1, 2, 3]);
    assert_eq!(
        g.get_array("t.bools").unwrap().as_bool().unwrap(),
        [true, false]
    );
    assert_eq!(g.get_array("t.u8s").unwrap().as_u8().unwrap(), [1, 2]);
    let empty = g.get_array("t.empty").unwrap();
    assert_eq!((empty.element_type(), empty.len()), (ValueType::U64, 0));
    let nested = g.get_array("t.nested").unwrap().as_arrays().unwrap();
    assert_eq!(nested[0].as_u16().unwrap(), [1, 2]);
    assert_eq!(nested[1].as_strings().unwrap(), ["x"]);
    assert_eq!(nested[2].as_arrays().unwrap()[0].as_i64().unwrap(), [7]);
    let keys: Vec<&str> = g.metadata().map(|(k, _)| k).collect();
    assert_eq!(keys[0], "general.architecture");
    assert_eq!(keys.len(), 20);

    let a = g.tensor("a").unwrap();
    assert_eq!(
        (a.ty(), a.dims(), a.n_elements()),
        (GgmlType::F32, &[4u64, 3][..], 12)
    );
    assert_eq!(
        g.dequantize_tensor("a").unwrap(),
        (0..12).map(|i| i as f32).collect::<Vec<_>>()
    );
    assert_eq!(g.tensor("b").unwrap().data, &[0u8; 34][..]);
    assert_eq!(g.tensor("empty").unwrap().data.len(), 0);
    assert_eq!(g.data_offset() % 32, 0);
    // Tensor bytes are borrowed from the file buffer, not copied.
    let whole = bytes.as_ptr_range();
    let g_map = Gguf::from_vec(bytes.clone()).unwrap();
    let a_ptr = g_map.tensor("a").unwrap().data.as_ptr();
    assert!(!whole.contains(&a_ptr), "from_vec owns its own buffer");
    assert_eq!(
        g_map.tensor("a").unwrap().data,
        &bytes[g.data_offset() as usize..][..48]
    );
}

#[test]
fn typed_accessors_report_missing_and_wrong_types() {
    let g = Gguf::from_bytes(&sample_writer().to_bytes()).unwrap();
    assert!(matches!(g.get_u32("nope"), Err(GgufError::MissingKey { key }) if key == "nope"));
    let err = g.get_str("t.f32").unwrap_err();
    assert!(
        err.to_string().contains("t.f32") && err.to_string().contains("f32"),
        "{err}"
    );
    let err = g.get_u8("t.u16").unwrap_err();
    assert!(matches!(err, GgufError::OutOfRange { .. }), "{err}");
    assert_eq!(g.get_u64("t.u16").unwrap(), 60000, "integers widen");
    let err = g.get_str_array("t.f32s").unwrap_err();
    assert!(err.to_string().contains("array of f32"), "{err}");
    assert!(matches!(
        g.tensor("zz"),
        Err(GgufError::NoSuchTensor { .. })
    ));
    assert_eq!(g.get("t.bool"), Some(&Value::Bool(true)));
}

#[test]
fn version_2_and_custom_alignment_read_back() {
    let mut w = GgufWriter::new().with_version(2);
    w.set_alignment(64).unwrap();
    w.add_tensor("x", &[3], GgmlType::F32, vec![0; 12]).unwrap();
    w.add_tensor("y", &[1], GgmlType::F32, 7f32.to_le_bytes().to_vec())
        .unwrap();
    let g = Gguf::from_bytes(&w.to_bytes()).unwrap();
    assert_eq!((g.version(), g.alignment()), (2, 64));
    assert_eq!(g.data_offset() % 64, 0);
    assert_eq!(g.tensor_info("y").unwrap().offset, 64);
    assert_eq!(g.dequantize_tensor("y").unwrap(), [7.0]);
}

#[test]
fn open_maps_a_file_from_disk() {
    let tmp = tempfile::Builder::new()
        .prefix("phobos-gguf-")
        .tempdir()
        .unwrap();
    let path = tmp.path().join("t.gguf");
    sample_writer().write_file(&path).unwrap();
    let g = Gguf::open(&path).unwrap();
    assert_eq!(g.get_str("t.str").unwrap(), "héllo");
    assert_eq!(g.tensors().len(), 3);
    let err = Gguf::open(tmp.path().join("missing.gguf")).unwrap_err();
    assert!(matches!(err, GgufError::Io { .. }), "{err}");
}

/// A little-endian header with the given counts and nothing else.
fn header(version: u32, n_tensors: u64, n_kv: u64) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&n_tensors.to_le_bytes());
    b.extend_from_slice(&n_kv.to_le_bytes());
    b
}

fn push_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u64).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

#[test]
fn header_errors_are_typed() {
    assert!(matches!(
        Gguf::from_bytes(b"GGML\x03\0\0\0"),
        Err(GgufError::BadMagic { .. })
    ));
    let err = Gguf::from_bytes(&header(1, 0, 0)).unwrap_err();
    assert!(err.to_string().contains("version 1"), "{err}");
    let err = Gguf::from_bytes(&header(3u32.swap_bytes(), 0, 0)).unwrap_err();
    assert!(err.to_string().contains("big-endian"), "{err}");
    let err = Gguf::from_bytes(&header(3, 0, 0)[..20]).unwrap_err();
    assert!(
        matches!(&err, GgufError::Truncated { field, offset: 16, .. } if field == "metadata count"),
        "{err}"
    );
    let err = Gguf::from_bytes(&header(3, 0, u64::MAX)).unwrap_err();
    assert!(
        matches!(err, GgufError::CountTooLarge { offset: 16, .. }),
        "{err}"
    );
    let err = Gguf::from_bytes(&header(3, 1 << 60, 0)).unwrap_err();
    assert!(
        matches!(err, GgufError::CountTooLarge { offset: 8, .. }),
        "{err}"
    );
}

#[test]
fn metadata_errors_name_key_and_offset() {
    let mut b = header(3, 0, 1);
    push_str(&mut b, "k.bad");
    b.extend_from_slice(&13u32.to_le_bytes());
    let err = Gguf::from_bytes(&b).unwrap_err();
    assert!(
        matches!(&err, GgufError::UnknownValueType { field, offset: 37, type_id: 13 } if field.contains("k.bad")),
        "{err}"
    );

    let mut b = header(3, 0, 1);
    push_str(&mut b, "k.s");
    b.extend_from_slice(&8u32.to_le_bytes());
    b.extend_from_slice(&(1u64 << 40).to_le_bytes());
    b.extend_from_slice(b"abc");
    let err = Gguf::from_bytes(&b).unwrap_err();
    assert!(
        matches!(&err, GgufError::Truncated { field, .. } if field.contains("k.s")),
        "{err}"
    );

    let mut b = header(3, 0, 1);
    push_str(&mut b, "k.arr");
    b.extend_from_slice(&9u32.to_le_bytes());
    b.extend_from_slice(&8u32.to_le_bytes());
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    let err = Gguf::from_bytes(&b).unwrap_err();
    assert!(
        matches!(&err, GgufError::CountTooLarge { field, .. } if field.contains("k.arr")),
        "{err}"
    );

    // An array nested past the depth limit: every level is a one-element array of arrays.
    let mut b = header(3, 0, 1);
    push_str(&mut b, "k.deep");
    b.extend_from_slice(&9u32.to_le_bytes());
    for _ in 0..1000 {
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&1u64.to_le_bytes());
    }
    let err = Gguf::from_bytes(&b).unwrap_err();
    assert!(matches!(err, GgufError::NestingTooDeep { .. }), "{err}");

    let mut b = header(3, 0, 2);
    for _ in 0..2 {
        push_str(&mut b, "k.dup");
        b.extend_from_slice(&7u32.to_le_bytes());
        b.push(1);
    }
    assert!(matches!(
        Gguf::from_bytes(&b),
        Err(GgufError::DuplicateKey { offset: 42, .. })
    ));

    let mut b = header(3, 0, 1);
    push_str(&mut b, "k.b");
    b.extend_from_slice(&7u32.to_le_bytes());
    b.push(2);
    assert!(matches!(
        Gguf::from_bytes(&b),
        Err(GgufError::InvalidBool { byte: 2, .. })
    ));

    let mut w = GgufWriter::new();
    w.add("general.alignment", 48u32).unwrap();
    let err = Gguf::from_bytes(&w.to_bytes()).unwrap_err();
    assert!(
        matches!(
            err,
            GgufError::BadAlignment {
                offset: 24,
                value: 48
            }
        ),
        "{err}"
    );
}

/// One tensor directory entry followed by nothing.
fn with_tensor(name: &str, dims: &[u64], type_id: u32, offset: u64) -> Vec<u8> {
    let mut b = header(3, 1, 0);
    push_str(&mut b, name);
    b.extend_from_slice(&(dims.len() as u32).to_le_bytes());
    for d in dims {
        b.extend_from_slice(&d.to_le_bytes());
    }
    b.extend_from_slice(&type_id.to_le_bytes());
    b.extend_from_slice(&offset.to_le_bytes());
    b
}

#[test]
fn tensor_directory_errors_name_the_tensor() {
    let err = Gguf::from_bytes(&with_tensor("w", &[32], 143, 0)).unwrap_err();
    assert!(
        matches!(&err, GgufError::TensorType { tensor, .. } if tensor == "w"),
        "{err}"
    );
    let err = Gguf::from_bytes(&with_tensor("w", &[32], 5, 0)).unwrap_err();
    assert!(err.to_string().contains("Q4_3"), "{err}");
    let err = Gguf::from_bytes(&with_tensor("w", &[1 << 40, 1 << 40], 0, 0)).unwrap_err();
    assert!(matches!(err, GgufError::ShapeOverflow { .. }), "{err}");
    let err = Gguf::from_bytes(&with_tensor("w", &[1, 1, 1, 1, 1], 0, 0)).unwrap_err();
    assert!(
        matches!(err, GgufError::TooManyDims { n_dims: 5, .. }),
        "{err}"
    );
    let err = Gguf::from_bytes(&with_tensor("w", &[33], 8, 0)).unwrap_err();
    assert!(
        matches!(err, GgufError::RowNotBlockMultiple { row_len: 33, .. }),
        "{err}"
    );
    let err = Gguf::from_bytes(&with_tensor("w", &[4], 0, 0)).unwrap_err();
    assert!(
        matches!(&err, GgufError::TensorOutOfRange { tensor, .. } if tensor == "w"),
        "{err}"
    );
    let err = Gguf::from_bytes(&with_tensor("w", &[4], 0, 8)).unwrap_err();
    assert!(
        matches!(err, GgufError::MisalignedTensor { data_offset: 8, .. }),
        "{err}"
    );
    let err = Gguf::from_bytes(&with_tensor("w", &[4], 0, u64::MAX - 31)).unwrap_err();
    assert!(matches!(err, GgufError::TensorOutOfRange { .. }), "{err}");

    // Two tensors whose data overlap: rewrite the second offset to the first's.
    let mut w = GgufWriter::new();
    w.add_tensor("p", &[16], GgmlType::F32, vec![0; 64])
        .unwrap();
    w.add_tensor("q", &[8], GgmlType::F32, vec![0; 32]).unwrap();
    let mut bytes = w.to_bytes();
    let q_offset_pos = bytes
        .windows(9)
        .position(|s| s == b"\x01\0\0\0\0\0\0\0q")
        .unwrap()
        + 9
        + 4
        + 8
        + 4;
    bytes[q_offset_pos..q_offset_pos + 8].copy_from_slice(&32u64.to_le_bytes());
    let err = Gguf::from_bytes(&bytes).unwrap_err();
    assert!(
        matches!(&err, GgufError::TensorOverlap { tensor, other, .. } if tensor == "q" && other == "p"),
        "{err}"
    );
}

#[test]
fn writer_rejects_inconsistent_tensors() {
    let mut w = GgufWriter::new();
    assert!(
        w.add_tensor("t", &[32], GgmlType::Q8_0, vec![0; 33])
            .is_err()
    );
    assert!(
        w.add_tensor("t", &[31], GgmlType::Q8_0, vec![0; 34])
            .is_err()
    );
    w.add_tensor("t", &[32], GgmlType::Q8_0, vec![0; 34])
        .unwrap();
    assert!(
        w.add_tensor("t", &[32], GgmlType::Q8_0, vec![0; 34])
            .is_err()
    );
    w.add("k", 1u8).unwrap();
    assert!(w.add("k", 2u8).is_err());
    assert!(w.set_alignment(3).is_err());
}

#[test]
fn gguf_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Gguf>();
    let g = std::sync::Arc::new(Gguf::from_bytes(&sample_writer().to_bytes()).unwrap());
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let g = g.clone();
            std::thread::spawn(move || g.tensor("a").unwrap().data.len())
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 48);
    }
}
