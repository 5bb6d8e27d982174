//! The bar on real weights: slices of Gemma 3 270M Q4_K_M's tensors (Q8_0,
//! Q5_0, Q4_K, Q6_K) against the plain reference (bit for bit, every level)
//! and dequantize + f64 (derived bound). phobos-rt cannot depend on
//! phobos-models (it sits below it), so a minimal GGUF directory reader
//! finds the tensors here. Skips when the model file is absent.

use std::path::PathBuf;

use phobos_quant::GgmlType;

use super::tests::{check_close_on, check_exact_on};

struct TensorEntry {
    name: String,
    dims: Vec<u64>,
    ty: u32,
    offset: u64,
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        out
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().unwrap())
    }
    fn string(&mut self) -> String {
        let len = self.u64() as usize;
        String::from_utf8_lossy(self.take(len)).into_owned()
    }
    /// Skips one metadata value of GGUF type `ty`.
    fn skip_value(&mut self, ty: u32) {
        match ty {
            0 | 1 | 7 => self.pos += 1,
            2 | 3 => self.pos += 2,
            4..=6 => self.pos += 4,
            10..=12 => self.pos += 8,
            8 => {
                self.string();
            }
            9 => {
                let (elem, len) = (self.u32(), self.u64());
                for _ in 0..len {
                    self.skip_value(elem);
                }
            }
            other => panic!("unknown GGUF value type {other}"),
        }
    }
}

fn model_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/gemma-3-270m-q4_k_m.gguf")
}

/// Tensor directory and data-section start of a GGUF file.
fn directory(bytes: &[u8]) -> (Vec<TensorEntry>, usize) {
    let mut r = Reader { bytes, pos: 0 };
    assert_eq!(r.take(4), b"GGUF");
    let _version = r.u32();
    let (n_tensors, n_kv) = (r.u64(), r.u64());
    let mut alignment = 32u64;
    for _ in 0..n_kv {
        let key = r.string();
        let ty = r.u32();
        if key == "general.alignment" && ty == 4 {
            alignment = u64::from(r.u32());
        } else {
            r.skip_value(ty);
        }
    }
    let tensors: Vec<TensorEntry> = (0..n_tensors)
        .map(|_| {
            let name = r.string();
            let n_dims = r.u32();
            let dims = (0..n_dims).map(|_| r.u64()).collect();
            let ty = r.u32();
            let offset = r.u64();
            TensorEntry {
                name,
                dims,
                ty,
                offset,
            }
        })
        .collect();
    let data = (r.pos as u64).div_ceil(alignment) * alignment;
    (tensors, data as usize)
}

#[test]
fn gemma_tensors_match_reference_and_bound() {
    let path = model_path();
    let Ok(bytes) = std::fs::read(&path) else {
        eprintln!("skipping: {} not found", path.display());
        return;
    };
    let (tensors, data) = directory(&bytes);
    let wanted = [
        "blk.0.attn_q.weight",
        "blk.0.attn_v.weight",
        "blk.0.attn_output.weight",
        "blk.0.ffn_down.weight",
        "blk.1.ffn_down.weight",
        "token_embd.weight",
    ];
    let mut seen = Vec::new();
    for name in wanted {
        let t = tensors.iter().find(|t| t.name == name).unwrap();
        let ty = GgmlType::from_id(t.ty).unwrap();
        let cols = t.dims[0] as usize;
        let row_bytes = cols / ty.info().block_len * ty.info().block_bytes;
        // 24 rows of each tensor keep the plain reference quick.
        let rows = 24;
        let start = data + t.offset as usize;
        let w = &bytes[start..start + rows * row_bytes];
        for m_rows in [1, 5] {
            check_exact_on(ty, w, rows, cols, m_rows, 3);
        }
        check_close_on(ty, w, rows, cols, 4, 9);
        seen.push(ty);
    }
    for ty in [
        GgmlType::Q8_0,
        GgmlType::Q5_0,
        GgmlType::Q4_K,
        GgmlType::Q6_K,
    ] {
        assert!(seen.contains(&ty), "{ty} not covered");
    }
}
