//! The AMX level (`x86/amx.rs`) bit for bit against the plain reference,
//! the portable level and the AVX-512 level, on shapes around its edges:
//! ragged weight groups (N not a multiple of 16), odd activation rows,
//! tiles on both sides of `AMX_MIN_ROWS`, K up to 4096. Skipped, saying
//! so, where the CPU or Linux gives no AMX.

use phobos_quant::GgmlType;
use proptest::prelude::*;

use super::QMatrixRef;
use super::kernels::{AMX_MIN_ROWS, KernelLevel, level_supported};
use super::schedule::run;
use super::tests::{bits, floats, reference_acts, reference_matmul, weight_bytes};

/// The formats the AMX kernel covers.
const FORMATS: [GgmlType; 4] = [
    GgmlType::Q8_0,
    GgmlType::Q4_0,
    GgmlType::Q5_0,
    GgmlType::IQ4_NL,
];

fn amx_or_skip(test: &str) -> bool {
    let ok = level_supported(KernelLevel::Amx);
    if !ok {
        eprintln!("{test}: skipped, this CPU (or its kernel) gives no AMX-INT8 tiles");
    }
    ok
}

/// AMX, threaded and not, against the portable and AVX-512 levels (and,
/// when `with_reference`, the plain element-by-element reference).
fn check_amx_on(
    ty: GgmlType,
    w: &[u8],
    rows: usize,
    cols: usize,
    m_rows: usize,
    seed: u64,
    with_reference: bool,
) {
    let x = floats(seed, m_rows * cols);
    let acts = reference_acts(ty, &x, m_rows, cols);
    let matrix = QMatrixRef {
        ty,
        rows,
        cols,
        data: w,
    };
    let mut portable = vec![f32::NAN; m_rows * rows];
    run(&matrix, &acts, &mut portable, false, KernelLevel::Portable).unwrap();
    if with_reference {
        let expected = reference_matmul(ty, w, rows, cols, &acts, &x);
        assert_eq!(
            bits(&portable),
            bits(&expected),
            "{ty} {rows}x{cols} m={m_rows} portable"
        );
    }
    for level in [KernelLevel::Amx, KernelLevel::Avx512Vnni] {
        for threaded in [false, true] {
            let mut out = vec![f32::NAN; m_rows * rows];
            run(&matrix, &acts, &mut out, threaded, level).unwrap();
            assert_eq!(
                bits(&out),
                bits(&portable),
                "{ty} {rows}x{cols} m={m_rows} {level:?} threaded={threaded}"
            );
        }
    }
}

fn check_amx(ty: GgmlType, rows: usize, cols: usize, m_rows: usize, seed: u64) {
    let w = weight_bytes(ty, &floats(seed, rows * cols));
    check_amx_on(
        ty,
        &w,
        rows,
        cols,
        m_rows,
        seed + 1,
        rows * cols * m_rows <= 1 << 18,
    );
}

#[test]
fn amx_equals_the_reference_on_fixed_shapes() {
    if !amx_or_skip("amx_equals_the_reference_on_fixed_shapes") {
        return;
    }
    for ty in FORMATS {
        for (rows, blocks, m_rows) in [
            (16, 1, AMX_MIN_ROWS),
            (17, 3, 5),
            (31, 2, 8),
            (48, 5, 9),
            (33, 4, 16),
            (5, 2, 40),
            (70, 20, 64),
            (40, 128, 7),
        ] {
            check_amx(
                ty,
                rows,
                32 * blocks,
                m_rows,
                rows as u64 * 7 + blocks as u64,
            );
        }
    }
}

/// Q8_0 weight levels of -128 (which ggml's quantizer never writes but a
/// file may hold) are multiplied exactly on every level.
#[test]
fn amx_takes_any_q8_0_level() {
    if !amx_or_skip("amx_takes_any_q8_0_level") {
        return;
    }
    let (rows, blocks, m_rows) = (35, 6, 11);
    let mut w = Vec::new();
    let mut state = 0x9E37_79B9_u32;
    for _ in 0..rows * blocks {
        // d = 0.0123 as f16, then arbitrary bytes, -128 included.
        w.extend_from_slice(&half::f16::from_f32(0.0123).to_bits().to_le_bytes());
        for _ in 0..32 {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            w.push((state >> 24) as u8);
        }
    }
    assert!(w.contains(&0x80));
    check_amx_on(GgmlType::Q8_0, &w, rows, 32 * blocks, m_rows, 3, true);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// Random shapes: N ragged against the 16-row groups and the split, M
    /// from 1 to 40 (both sides of the AMX threshold, odd pairs), K up to
    /// 4096.
    #[test]
    fn amx_shapes_match_the_portable_level(
        format in 0usize..FORMATS.len(),
        rows in 1usize..80,
        blocks in prop_oneof![1usize..9, Just(20usize), Just(128usize)],
        m_rows in 1usize..41,
        seed in 0u64..1000,
    ) {
        if !amx_or_skip("amx_shapes_match_the_portable_level") {
            return Ok(());
        }
        check_amx(FORMATS[format], rows, 32 * blocks, m_rows, seed);
    }
}

#[test]
fn level_names_parse() {
    assert_eq!(KernelLevel::parse("amx"), Some(KernelLevel::Amx));
    assert_eq!(
        KernelLevel::parse(" AVX512 "),
        Some(KernelLevel::Avx512Vnni)
    );
    assert_eq!(KernelLevel::parse("avx2"), Some(KernelLevel::Avx2));
    assert_eq!(KernelLevel::parse("portable"), Some(KernelLevel::Portable));
    assert_eq!(KernelLevel::parse("sse"), None);
    // The cap compares levels in this order.
    assert!(KernelLevel::Portable < KernelLevel::Avx2);
    assert!(KernelLevel::Avx512Vnni < KernelLevel::Amx);
}
