//! The AVX-512 K-quant prompt tile (`x86/k_512_tile.rs`) bit for bit
//! against the portable level, on random valid blocks (every byte of the
//! levels, scales and high bits random; finite block scales) and ragged
//! activation counts: 1..40 rows, so whole 16-row groups, a short last
//! group, odd rows (a half-empty pair) and the single-row path all run.
//! Activation levels reach +-127 and the block sums are either the levels'
//! or arbitrary (for bytes a caller hands `QActivations::from_blocks`),
//! within -16384..16384: the decode kernel, like ggml's AVX2 one, adds two
//! sums in i16, and the tile must agree with it wherever it does. Skipped, saying so, where the CPU
//! lacks AVX-512 VNNI.

use phobos_quant::{GgmlType, QK_K};
use proptest::prelude::*;

use super::activations::Q8_K_BYTES;
use super::kernels::{KernelLevel, level_supported};
use super::schedule::run;
use super::tests::bits;
use super::{QActivations, QMatrixRef};

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }

    /// A finite f16 of moderate magnitude, either sign.
    fn f16_bytes(&mut self) -> [u8; 2] {
        let unit = (self.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
        half::f16::from_f32(unit * 0.05).to_bits().to_le_bytes()
    }
}

/// `rows` weight rows of `blocks` random blocks of `ty`.
fn random_weights(ty: GgmlType, rows: usize, blocks: usize, rng: &mut Rng) -> Vec<u8> {
    let info = ty.info();
    let mut w = vec![0u8; rows * blocks * info.block_bytes];
    for block in w.chunks_exact_mut(info.block_bytes) {
        block.iter_mut().for_each(|b| *b = rng.byte());
        // The f16 scales: d and dmin lead Q4_K/Q5_K, d ends Q6_K.
        let scales = if ty == GgmlType::Q6_K { 208..210 } else { 0..4 };
        for at in scales.step_by(2) {
            block[at..at + 2].copy_from_slice(&rng.f16_bytes());
        }
    }
    w
}

/// `m_rows` Q8_K rows of `blocks` random blocks (levels in -127..=127).
fn random_acts(
    m_rows: usize,
    blocks: usize,
    extreme: bool,
    arbitrary_sums: bool,
    rng: &mut Rng,
) -> QActivations {
    let mut bytes = vec![0u8; m_rows * blocks * Q8_K_BYTES];
    for block in bytes.chunks_exact_mut(Q8_K_BYTES) {
        let d = ((rng.next() >> 40) as f32 / (1u64 << 24) as f32 + 0.01) * 0.02;
        block[..4].copy_from_slice(&d.to_le_bytes());
        for level in &mut block[4..4 + QK_K] {
            let v = if extreme {
                if rng.next() & 1 == 0 { 127 } else { -127 }
            } else {
                (rng.next() % 255) as i32 - 127
            };
            *level = v as i8 as u8;
        }
        for g in 0..16 {
            let sum: i32 = if arbitrary_sums {
                (rng.next() % 32768) as i32 - 16384
            } else {
                block[4 + 16 * g..4 + 16 * (g + 1)]
                    .iter()
                    .map(|&q| i32::from(q as i8))
                    .sum()
            };
            let at = 4 + QK_K + 2 * g;
            block[at..at + 2].copy_from_slice(&(sum as i16).to_le_bytes());
        }
    }
    QActivations::from_blocks(GgmlType::Q8_K, m_rows, blocks * QK_K, bytes)
        .expect("whole Q8_K blocks, no -128 level")
}

fn check(
    ty: GgmlType,
    rows: usize,
    blocks: usize,
    m_rows: usize,
    extreme: bool,
    arbitrary_sums: bool,
    seed: u64,
) {
    let mut rng = Rng(seed);
    let w = random_weights(ty, rows, blocks, &mut rng);
    let acts = random_acts(m_rows, blocks, extreme, arbitrary_sums, &mut rng);
    let matrix = QMatrixRef {
        ty,
        rows,
        cols: blocks * QK_K,
        data: &w,
    };
    let at = |level, threaded| {
        let mut out = vec![f32::NAN; m_rows * rows];
        run(&matrix, &acts, &mut out, threaded, level).expect("valid shapes");
        bits(&out)
    };
    let portable = at(KernelLevel::Portable, false);
    for threaded in [false, true] {
        assert_eq!(
            at(KernelLevel::Avx512Vnni, threaded),
            portable,
            "{ty} {rows}x{} m={m_rows} extreme={extreme} arbitrary_sums={arbitrary_sums} threaded={threaded}",
            blocks * QK_K
        );
    }
}

fn vnni_or_skip(test: &str) -> bool {
    let ok = level_supported(KernelLevel::Avx512Vnni);
    if !ok {
        eprintln!("{test}: skipped, this CPU lacks AVX-512 VNNI");
    }
    ok
}

/// Every row count 1..=40 once per format (so every pair count of the
/// tile and every group split), random blocks; and Q6_K's 8-row groups.
#[test]
fn every_row_count_equals_portable() {
    if !vnni_or_skip("every_row_count_equals_portable") {
        return;
    }
    for ty in [GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K] {
        for m_rows in 1..=40 {
            check(ty, 3, 2, m_rows, false, false, 1000 + m_rows as u64);
        }
    }
    // Rows wider than four blocks: Q6_K then packs 8-row groups.
    for m_rows in 1..=20 {
        check(
            GgmlType::Q6_K,
            2,
            6,
            m_rows,
            false,
            false,
            2000 + m_rows as u64,
        );
    }
}

/// Activation levels all +-127 against random weights (Q6_K levels up to
/// 63, scales down to -128): the largest `vpdpbusd` sums the i16 packing
/// must carry exactly.
#[test]
fn extreme_levels_equal_portable() {
    if !vnni_or_skip("extreme_levels_equal_portable") {
        return;
    }
    for ty in [GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K] {
        for m_rows in [2, 16, 17, 33] {
            check(ty, 4, 3, m_rows, true, false, 7 + m_rows as u64);
            check(ty, 4, 3, m_rows, true, true, 9 + m_rows as u64);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random_shapes_equal_portable(
        format in 0usize..3,
        rows in 1usize..7,
        blocks in 1usize..7,
        m_rows in 1usize..41,
        arbitrary_sums in any::<bool>(),
        seed in any::<u64>(),
    ) {
        if vnni_or_skip("random_shapes_equal_portable") {
            let ty = [GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K][format];
            check(ty, rows, blocks, m_rows, false, arbitrary_sums, seed);
        }
    }
}
