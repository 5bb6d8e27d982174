//! `sum` of an elementwise expression is generated as one loop that adds
//! the elements as it computes them (`back/host/fused_reduce.rs`), without
//! the expression's tile. Its promise is the unfused sum's bits: here each
//! program sums the same expression both ways (`sum(tree)`, and
//! `sum(t)` of a `let t = tree` tile) and every pair must be bit-equal, in
//! `f32`, `f16` (summed in `f32`, rounded once) and `i32` (wrapping), for
//! blocks on both sides of `host::sum`'s switch to wide partials (256
//! elements), ragged and masked, in rank 1 and rank 2.

use phobos::f16;
use phobos_examples::random::SplitMix64;
use proptest::prelude::*;

phobos::kernel! {
    @autotune(BLOCK in [1, 512])
    @grid(R)
    kernel sums_f32(A: tensor<f32>[R, C], B: tensor<f32>[R, C], Y: tensor<f32>[R, 2]) {
      let r = program_id(0)
      var fused: f32 = 0.0
      var plain: f32 = 0.0
      for c in range(0, C, BLOCK) {
        let a = load(A[r, c :+ BLOCK], 0.5)
        let b = B[r, c :+ BLOCK]
        fused += sum(a * b - exp(a) / (b * b + 1.0))
        let t = a * b - exp(a) / (b * b + 1.0)
        plain += sum(t)
      }
      Y[r, 0 :+ 1] = fused
      Y[r, 1 :+ 1] = plain
    }

    @autotune(ROWS in [1, 4], BLOCK in [8, 512])
    @grid(cdiv(R, ROWS))
    kernel sums_2d(A: tensor<f32>[R, C], Y: tensor<f32>[R, 2]) {
      let r0 = program_id(0) * ROWS
      let a = A[r0 :+ ROWS, 0 :+ BLOCK]
      let fused = sum(a * a - a)
      let t = a * a - a
      Y[r0, 0 :+ 1] = fused
      Y[r0, 1 :+ 1] = sum(t)
    }

    @autotune(BLOCK in [4, 512])
    @grid(R)
    kernel sums_f16(A: tensor<f16>[R, C], Y: tensor<f32>[R, 2]) {
      let r = program_id(0)
      let a = A[r, 0 :+ BLOCK]
      let t = a * a + a
      Y[r, 0 :+ 1] = f32(sum(a * a + a))
      Y[r, 1 :+ 1] = f32(sum(t))
    }

    @autotune(BLOCK in [4, 512])
    @grid(R)
    kernel sums_i32(A: tensor<i32>[R, C], Y: tensor<i32>[R, 2]) {
      let r = program_id(0)
      let a = A[r, 0 :+ BLOCK]
      let t = a * a - a * 3
      Y[r, 0 :+ 1] = sum(a * a - a * 3)
      Y[r, 1 :+ 1] = sum(t)
    }
}

/// Pairs `(fused, plain)` of a `[rows, 2]` output, checked bit-equal.
fn pairs_equal<T: Copy + std::fmt::Debug>(
    what: &str,
    y: &[T],
    bits: impl Fn(T) -> u64,
) -> Result<(), String> {
    for (row, pair) in y.chunks_exact(2).enumerate() {
        if bits(pair[0]) != bits(pair[1]) {
            return Err(format!(
                "{what} row {row}: fused {:?} vs plain {:?}",
                pair[0], pair[1]
            ));
        }
    }
    Ok(())
}

fn check_f32(config: &sums_f32::Config, rows: usize, cols: usize, seed: u64) -> Result<(), String> {
    let d = crate::host();
    let mut rng = SplitMix64::new(seed);
    let a = d
        .tensor_from(&rng.vec(rows * cols, -3.0, 3.0), [rows, cols])
        .unwrap();
    let b = d
        .tensor_from(&rng.vec(rows * cols, -3.0, 3.0), [rows, cols])
        .unwrap();
    let mut y = d.full([rows, 2], f32::NAN).unwrap();
    sums_f32::launch_with(&d, config, &a, &b, &mut y).unwrap();
    pairs_equal(
        &format!("f32 {config:?} {rows}x{cols}"),
        &y.to_vec().unwrap(),
        |v| u64::from(v.to_bits()),
    )
}

#[test]
fn fused_sums_have_the_unfused_bits_in_every_config() {
    crate::every_config(sums_f32::CONFIGS, |i, c| {
        check_f32(c, 3, crate::ragged(c.BLOCK, i), i as u64)
    });
    crate::every_config(sums_2d::CONFIGS, |i, c| {
        let d = crate::host();
        let (rows, cols) = (crate::ragged(c.ROWS, i), c.BLOCK as usize);
        let a = SplitMix64::new(i as u64).vec(rows * cols, -2.0, 2.0);
        let a = d.tensor_from(&a, [rows, cols]).unwrap();
        let mut y = d.full([rows, 2], f32::NAN).unwrap();
        sums_2d::launch_with(&d, c, &a, &mut y).unwrap();
        // Only each program's first row is written.
        let y = y.to_vec().unwrap();
        let firsts: Vec<f32> = y
            .chunks_exact(2)
            .step_by(c.ROWS as usize)
            .flatten()
            .copied()
            .collect();
        pairs_equal(&format!("2d {c:?}"), &firsts, |v| u64::from(v.to_bits()))
    });
    crate::every_config(sums_f16::CONFIGS, |i, c| {
        let d = crate::host();
        let (rows, cols) = (3, c.BLOCK as usize);
        let a: Vec<f16> = SplitMix64::new(i as u64)
            .vec(rows * cols, -8.0, 8.0)
            .into_iter()
            .map(f16::from_f32)
            .collect();
        let a = d.tensor_from(&a, [rows, cols]).unwrap();
        let mut y = d.full([rows, 2], f32::NAN).unwrap();
        sums_f16::launch_with(&d, c, &a, &mut y).unwrap();
        pairs_equal(&format!("f16 {c:?}"), &y.to_vec().unwrap(), |v| {
            u64::from(v.to_bits())
        })
    });
    crate::every_config(sums_i32::CONFIGS, |i, c| {
        let d = crate::host();
        let (rows, cols) = (3, c.BLOCK as usize);
        let a: Vec<i32> = (0..rows * cols)
            .map(|k| ((k * 2_654_435_761 + i) % 200_003) as i32 * 1_000 - 100_000_000)
            .collect();
        let a = d.tensor_from(&a, [rows, cols]).unwrap();
        let mut y = d.full([rows, 2], -1i32).unwrap();
        sums_i32::launch_with(&d, c, &a, &mut y).unwrap();
        pairs_equal(&format!("i32 {c:?}"), &y.to_vec().unwrap(), |v| {
            v as u32 as u64
        })
    });
}

proptest! {
    #![proptest_config(crate::cases(24))]
    #[test]
    fn fused_sums_have_the_unfused_bits_on_random_shapes(
        config in 0..sums_f32::CONFIGS.len(),
        rows in 1usize..4,
        cols in 0usize..1_300,
        seed in any::<u64>(),
    ) {
        let result = check_f32(&sums_f32::CONFIGS[config], rows, cols, seed);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}
