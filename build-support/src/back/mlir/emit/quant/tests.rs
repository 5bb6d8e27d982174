//! The decoding trees against phobos-quant (dequant, bit for bit) and
//! against the ggml reference of phobos-rt's tests (the block terms, bit
//! for bit; the host back end is tested against the same reference), on
//! random blocks from phobos-quant's quantizers. The partner operand is
//! quantized here by phobos-quant; the emitted MLIR quantizes it with the
//! same operations (checked on a GPU by the device check only).

use phobos_quant::GgmlType;

#[path = "../../../../../../phobos-rt/tests/support/ggml_reference.rs"]
mod ggml_reference;

use super::format::{Format, Partner, Q, Term, format};
use super::interp::eval;
use super::lowering;
use crate::ir::QuantType;

fn ggml_type(q: QuantType) -> GgmlType {
    GgmlType::from_name(q.name()).unwrap_or_else(|| panic!("no ggml type named {q}"))
}

/// Deterministic values of mixed sign and magnitude (an LCG: no crate).
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    (0..n)
        .map(|i| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let unit = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            // Some rows have an outlier, some are tiny.
            let scale = match (seed + i as u64 / 32) % 4 {
                0 => 0.01,
                1 => 1.0,
                2 => 30.0,
                _ => 3.0,
            };
            if i % 97 == 13 {
                unit * scale * 40.0
            } else {
                unit * scale
            }
        })
        .collect()
}

/// Blocks of `q`'s format made by phobos-quant from several value sets,
/// including an all-zero block.
fn blocks(f: &Format) -> Vec<Vec<u8>> {
    let ty = ggml_type(f.quant);
    let len = f.block_len as usize;
    let mut out = Vec::new();
    for seed in 0..12u64 {
        let mut x = values(seed, len);
        if seed == 0 {
            x.iter_mut().for_each(|v| *v = 0.0);
        }
        let mut bytes = Vec::new();
        phobos_quant::quantize(ty, &x, &mut bytes).unwrap();
        assert_eq!(bytes.len(), f.block_bytes as usize, "{}", f.quant);
        out.push(bytes);
    }
    out
}

fn lowered() -> Vec<Format> {
    QuantType::ALL.iter().filter_map(|&q| format(q)).collect()
}

#[test]
fn block_geometry_matches_phobos_quant() {
    for f in lowered() {
        let info = ggml_type(f.quant).info();
        assert_eq!(f.block_len, info.block_len as i64, "{}", f.quant);
        assert_eq!(f.block_bytes, info.block_bytes as i64, "{}", f.quant);
        assert_eq!(f.block_len, f.quant.block_len(), "{}", f.quant);
    }
}

#[test]
fn every_lowered_format_dequantizes_bit_exact_with_phobos_quant() {
    let formats = lowered();
    assert_eq!(
        formats.len(),
        12,
        "the lowered formats changed: update SPEC §14"
    );
    for f in formats {
        for block in blocks(&f) {
            let mut expected = vec![0f32; f.block_len as usize];
            phobos_quant::dequantize(ggml_type(f.quant), &block, &mut expected).unwrap();
            for (e, want) in expected.iter().enumerate() {
                let got = eval(&f.value, &block, e as i32, 0).float();
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{} element {e}: tree {got}, phobos-quant {want}",
                    f.quant
                );
            }
        }
    }
}

#[test]
fn formats_without_a_lowering_are_errors_naming_them() {
    for q in [
        QuantType::Iq1S,
        QuantType::Iq1M,
        QuantType::Iq2Xxs,
        QuantType::Iq2Xs,
        QuantType::Iq2S,
        QuantType::Iq3Xxs,
        QuantType::Iq3S,
        QuantType::Tq1_0,
        QuantType::Tq2_0,
    ] {
        let err = lowering(q, "parameter `W`").unwrap_err().to_string();
        assert!(err.contains(q.name()) && err.contains("`W`"), "{err}");
    }
}

fn partner_type(p: Partner) -> GgmlType {
    match p {
        Partner::Q8_0 => GgmlType::Q8_0,
        Partner::Q8_1 => GgmlType::Q8_1,
        Partner::Q8K => GgmlType::Q8_K,
    }
}

fn f16_at(b: &[u8], at: usize) -> f32 {
    half::f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

/// The partner block's fields as the emitter's shared tiles hold them:
/// levels, `d`, q8_1's stored sum, q8_K's sixteen sums.
struct PartnerBlock {
    levels: Vec<i32>,
    d: f32,
    s: f32,
    bsums: Vec<i32>,
}

fn partner_block(p: Partner, bytes: &[u8]) -> PartnerBlock {
    match p {
        Partner::Q8_0 => PartnerBlock {
            levels: bytes[2..34].iter().map(|&b| i32::from(b as i8)).collect(),
            d: f16_at(bytes, 0),
            s: 0.0,
            bsums: Vec::new(),
        },
        Partner::Q8_1 => PartnerBlock {
            levels: bytes[4..36].iter().map(|&b| i32::from(b as i8)).collect(),
            d: f16_at(bytes, 0),
            s: f16_at(bytes, 2),
            bsums: Vec::new(),
        },
        Partner::Q8K => PartnerBlock {
            levels: bytes[4..260].iter().map(|&b| i32::from(b as i8)).collect(),
            d: f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            s: 0.0,
            bsums: bytes[260..292]
                .chunks_exact(2)
                .map(|c| i32::from(i16::from_le_bytes([c[0], c[1]])))
                .collect(),
        },
    }
}

/// The term the emitter's `block_term` computes, step for step, with the
/// trees evaluated on the host.
fn tree_term(f: &Format, term: &Term, w: &[u8], x: &PartnerBlock) -> f32 {
    let at_group = |q: &Q, g: i32| eval(q, w, 0, g).int();
    let scale = match term {
        Term::KMin { scale, .. } | Term::KScaled { scale } => Some(scale),
        _ => None,
    };
    let (groups, group_len) = match scale {
        Some(_) => (f.block_len / f.group_len, f.group_len),
        None => (1, f.block_len),
    };
    let mut sumi = 0i32;
    for g in 0..groups {
        let mut dot = 0i32;
        for j in 0..group_len {
            let e = (g * group_len + j) as i32;
            let level = eval(&f.level, w, e, 0).int();
            dot = dot.wrapping_add(level.wrapping_mul(x.levels[e as usize]));
        }
        let sc = scale.map_or(1, |s| at_group(s, g as i32));
        sumi = sumi.wrapping_add(sc.wrapping_mul(dot));
    }
    let d = eval(&f.d, w, 0, 0).float();
    let ddx = d * x.d;
    match term {
        Term::Signed => sumi as f32 * ddx,
        Term::Offset { m } => ddx * sumi as f32 + eval(m, w, 0, 0).float() * x.s,
        Term::KScaled { .. } => ddx * sumi as f32,
        Term::KMin { min, dmin, .. } => {
            let per = (f.group_len / 16) as i32;
            let mins: i32 = (0..16)
                .map(|g16| x.bsums[g16 as usize] * at_group(min, g16 / per))
                .sum();
            ddx * sumi as f32 - (eval(dmin, w, 0, 0).float() * x.d) * mins as f32
        }
    }
}

#[test]
fn ggml_block_terms_match_the_reference_bit_exact() {
    let mut checked = 0;
    for f in lowered() {
        let Some((partner, term)) = f.ggml.clone() else {
            continue;
        };
        let ty = ggml_type(f.quant);
        assert_eq!(
            ggml_reference::partner(ty),
            Some(partner_type(partner)),
            "{}",
            f.quant
        );
        for seed in 100..104u64 {
            let x = values(seed, f.block_len as usize);
            let mut xq = Vec::new();
            phobos_quant::quantize(partner_type(partner), &x, &mut xq).unwrap();
            for w in blocks(&f) {
                let want = ggml_reference::block_term(ty, &w, &xq);
                let got = tree_term(&f, &term, &w, &partner_block(partner, &xq));
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{} seed {seed}: tree {got}, reference {want}",
                    f.quant
                );
                checked += 1;
            }
        }
    }
    assert_eq!(
        checked,
        11 * 4 * 12,
        "every format with a partner, every block"
    );
}
