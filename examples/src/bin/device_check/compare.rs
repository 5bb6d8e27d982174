//! Device output against the host oracle: within the per-element
//! tolerance, or bit for bit (any NaN matching any NaN) for exact outputs.

use anyhow::{Result, bail, ensure};

use crate::case::Output;

pub enum Verdict {
    /// Largest `|device - oracle| / tolerance` (0 for exact outputs).
    Pass {
        worst_ratio: f64,
    },
    Fail(String),
}

/// Element `i` of little-endian `bytes` of type `dtype` as f64, and whether
/// it is a NaN.
fn element(dtype: &str, bytes: &[u8], i: usize) -> Result<f64> {
    let at = |n: usize| -> Result<&[u8]> {
        bytes
            .get(i * n..(i + 1) * n)
            .ok_or_else(|| anyhow::anyhow!("element {i} past {} bytes", bytes.len()))
    };
    Ok(match dtype {
        "f32" => f64::from(f32::from_le_bytes(at(4)?.try_into()?)),
        "f64" => f64::from_le_bytes(at(8)?.try_into()?),
        "f16" => phobos::f16::from_bits(u16::from_le_bytes(at(2)?.try_into()?)).to_f64(),
        "bf16" => phobos::bf16::from_bits(u16::from_le_bytes(at(2)?.try_into()?)).to_f64(),
        "i32" => f64::from(i32::from_le_bytes(at(4)?.try_into()?)),
        "u32" => f64::from(u32::from_le_bytes(at(4)?.try_into()?)),
        "i64" => i64::from_le_bytes(at(8)?.try_into()?) as f64,
        "i16" => f64::from(i16::from_le_bytes(at(2)?.try_into()?)),
        "u16" => f64::from(u16::from_le_bytes(at(2)?.try_into()?)),
        "i8" => f64::from(at(1)?[0] as i8),
        "u8" | "bool" => f64::from(at(1)?[0]),
        other => bail!("output of type {other}"),
    })
}

fn is_float(dtype: &str) -> bool {
    matches!(dtype, "f16" | "bf16" | "f32" | "f64")
}

/// Compares `got` (the device buffer's bytes) with the oracle.
pub fn compare(output: &Output, got: &[u8]) -> Result<Verdict> {
    let oracle = &output.oracle;
    ensure!(
        got.len() == oracle.bytes.len(),
        "device buffer is {} bytes, the oracle {}",
        got.len(),
        oracle.bytes.len()
    );
    let size = oracle.bytes.len() / output.tolerance.len().max(1);
    let count = output.tolerance.len();
    let mut worst: f64 = 0.0;
    for i in 0..count {
        let want = element(oracle.dtype, &oracle.bytes, i)?;
        let have = element(oracle.dtype, got, i)?;
        if output.exact {
            let same_bits = got[i * size..(i + 1) * size] == oracle.bytes[i * size..(i + 1) * size];
            let both_nan = is_float(oracle.dtype) && want.is_nan() && have.is_nan();
            if !(same_bits || both_nan) {
                return Ok(Verdict::Fail(format!(
                    "element {i}: {have} (device) vs {want} (host), exact expected"
                )));
            }
            continue;
        }
        let tolerance = f64::from(output.tolerance[i]);
        if want.is_nan() || have.is_nan() || !have.is_finite() && have != want {
            if !(want.is_nan() && have.is_nan()) {
                return Ok(Verdict::Fail(format!(
                    "element {i}: {have} (device) vs {want} (host)"
                )));
            }
            continue;
        }
        let error = (have - want).abs();
        if error > tolerance {
            return Ok(Verdict::Fail(format!(
                "element {i}: {have} (device) vs {want} (host), |error| {error:.3e} > tolerance {tolerance:.3e}"
            )));
        }
        if tolerance > 0.0 {
            worst = worst.max(error / tolerance);
        }
    }
    Ok(Verdict::Pass { worst_ratio: worst })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Buffer;

    fn output(values: &[f32], tolerance: f32, exact: bool) -> Output {
        Output {
            name: "y",
            oracle: Buffer::new(values, &[values.len()]).unwrap(),
            tolerance: vec![if exact { 0.0 } else { tolerance }; values.len()],
            rule: "test",
            exact,
        }
    }

    fn bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn tolerance_and_exactness_are_applied() {
        let out = output(&[1.0, 2.0], 0.1, false);
        assert!(
            matches!(compare(&out, &bytes(&[1.05, 2.0])).unwrap(), Verdict::Pass { worst_ratio } if worst_ratio > 0.4)
        );
        assert!(matches!(
            compare(&out, &bytes(&[1.2, 2.0])).unwrap(),
            Verdict::Fail(_)
        ));
        assert!(matches!(
            compare(&out, &bytes(&[f32::NAN, 2.0])).unwrap(),
            Verdict::Fail(_)
        ));
        assert!(compare(&out, &bytes(&[1.0])).is_err());
        let exact = output(&[f32::NAN, -0.0], 0.0, true);
        let other_nan = f32::from_bits(f32::NAN.to_bits() | 1);
        assert!(matches!(
            compare(&exact, &bytes(&[other_nan, -0.0])).unwrap(),
            Verdict::Pass { .. }
        ));
        assert!(matches!(
            compare(&exact, &bytes(&[f32::NAN, 0.0])).unwrap(),
            Verdict::Fail(_)
        ));
    }
}
