//! Quantized operands in a crate that only depends on `phobos`: a Q8_0
//! weight built by hand, contracted in ggml's form (checked against a plain
//! Rust transcription of ggml's Q8_0 x Q8_0 dot) and in the exact form, and
//! the mixed-sign `u8 x i8` dot. Prints `ok` when every value matches.

use phobos::quant::Q8_0;
use phobos::{Device, QTensor, Result, f16};

phobos::kernel! {
    @grid(cdiv(N, 4))
    kernel q8_matvec(X: tensor<f32>[2, K], W: tensor<q8_0>[N, K], Y: tensor<f32>[2, N], Z: tensor<f32>[2, N]) {
      let n = program_id(0) * 4
      var acc: tile<f32>[2, 4] = 0.0
      var exact: tile<f32>[2, 4] = 0.0
      for k in range(0, K, 32) {
        let w = W[n :+ 4, k :+ 32]
        acc += dot_t(X[:, k :+ 32], w)
        exact += dot_t(X[:, k :+ 32], dequant(w))
      }
      Y[:, n :+ 4] = acc
      Z[:, n :+ 4] = exact
    }

    kernel mixed_sign(U: tensor<u8>[4, 8], I: tensor<i8>[3, 8], Y: tensor<i32>[4, 3]) {
      Y[:, :] = dot_t(U[:, :], I[:, :])
    }
}

/// ggml's `quantize_row_q8_0_ref` for one block: scale `amax / 127`,
/// levels `round(x / d)` (ties away from zero), `d` stored as f16.
fn quantize_q8_0(x: &[f32]) -> (f32, Vec<i32>) {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if d == 0.0 { 0.0 } else { 1.0 / d };
    let levels = x.iter().map(|v| (v * id).round() as i32).collect();
    (f16::from_f32(d).to_f32(), levels)
}

fn main() -> Result<()> {
    let d = Device::host();
    let (n, k) = (6usize, 64usize);
    // Weight rows: f16 scale then 32 i8 levels per block.
    let mut bytes = Vec::new();
    let mut weights = Vec::new();
    for row in 0..n {
        for block in 0..k / 32 {
            let scale = f16::from_f32(0.01 * (row + block + 1) as f32);
            bytes.extend_from_slice(&scale.to_le_bytes());
            for j in 0..32 {
                let level = ((row * 37 + block * 11 + j * 5) % 255) as i32 - 127;
                bytes.push(level as i8 as u8);
                weights.push((scale.to_f32(), level));
            }
        }
    }
    let w = QTensor::<Q8_0>::borrowed(&bytes, [n, k])?;
    let xs: Vec<f32> = (0..2 * k)
        .map(|i| ((i * 7919) % 201) as f32 / 50.0 - 2.0)
        .collect();
    let x = d.tensor_from(&xs, [2, k])?;
    let mut y = d.zeros::<f32>([2, n])?;
    let mut z = d.zeros::<f32>([2, n])?;
    q8_matvec::launch(&d, &x, &w, &mut y, &mut z)?;
    let (y, z) = (y.to_vec()?, z.to_vec()?);
    for m in 0..2 {
        for row in 0..n {
            let mut sum = 0f32;
            let (mut exact, mut abs) = (0f64, 0f64);
            for block in 0..k / 32 {
                let x_block = &xs[m * k + block * 32..m * k + block * 32 + 32];
                let (dx, xq) = quantize_q8_0(x_block);
                let mut sumi = 0i32;
                let mut dw = 0f32;
                for j in 0..32 {
                    let (scale, level) = weights[row * k + block * 32 + j];
                    dw = scale;
                    sumi += level * xq[j];
                    let p = f64::from(x_block[j]) * f64::from(scale * level as f32);
                    exact += p;
                    abs += p.abs();
                }
                // One term per block, added to the accumulator (SPEC §14).
                sum += sumi as f32 * (dw * dx);
            }
            assert_eq!(
                y[m * n + row].to_bits(),
                sum.to_bits(),
                "ggml form [{m},{row}]"
            );
            let ku = (k + 2) as f64 * f64::powi(2.0, -24);
            let error = (f64::from(z[m * n + row]) - exact).abs();
            assert!(error <= ku / (1.0 - ku) * abs, "exact form [{m},{row}]");
        }
    }

    let us: Vec<u8> = (0..32).map(|i| (i * 29 % 256) as u8).collect();
    let is: Vec<i8> = (0..24).map(|i| (i * 53 % 256) as u8 as i8).collect();
    let (u, i) = (d.tensor_from(&us, [4, 8])?, d.tensor_from(&is, [3, 8])?);
    let mut out = d.zeros::<i32>([4, 3])?;
    mixed_sign::launch(&d, &u, &i, &mut out)?;
    let out = out.to_vec()?;
    for r in 0..4 {
        for c in 0..3 {
            let want: i32 = (0..8)
                .map(|e| i32::from(us[r * 8 + e]) * i32::from(is[c * 8 + e]))
                .sum();
            assert_eq!(out[r * 3 + c], want, "u8 x i8 [{r},{c}]");
        }
    }
    println!("ok");
    Ok(())
}
