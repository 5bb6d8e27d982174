//! Every operator SPEC.md allows, in kernels of a crate that only depends on
//! `phobos` (default features): built, run on the host, and checked against
//! plain Rust. Prints `ok` when every value matches.

use phobos::quant::Q8_0;
use phobos::{Device, QTensor, Result, f16};

phobos::kernel! {
    // A GGUF-quantized operand, decoded in place (PTX too: SPEC.md §14).
    kernel q8_dequant(W: tensor<q8_0>[2, 64], Y: tensor<f32>[2, 64]) {
        Y[:, :] = dequant(W[:, :])
    }

    // Integer operators, tile and scalar forms.
    kernel int_ops(a: tensor<i32>[4], b: tensor<i32>[4], out: tensor<i32>[16, 4], s: tensor<i32>[16]) {
        let x = a[0 :+ 4]
        let y = b[0 :+ 4]
        out[0, :] = x + y
        out[1, :] = x - y
        out[2, :] = x * y
        out[3, :] = x / y
        out[4, :] = x % y
        out[5, :] = x << y
        out[6, :] = x >> y
        out[7, :] = x & y
        out[8, :] = x | y
        out[9, :] = x ^ y
        out[10, :] = -x
        out[11, :] = ~x
        out[12, :] = i32(x == y) + i32(x != y) * 2 + i32(x < y) * 4
        out[13, :] = i32(x <= y) + i32(x > y) * 2 + i32(x >= y) * 4
        out[14, :] = i32((x > 0) && (y > 0)) + i32((x > 0) || (y > 0)) * 2 + i32(!(x > 0)) * 4
        out[15, :] = i32((x > 0) & (y > 0)) + i32((x > 0) | (y > 0)) * 2 + i32((x > 0) ^ (y > 0)) * 4
        let p = a[1]
        let q = b[1]
        s[0] = p + q
        s[1] = p - q
        s[2] = p * q
        s[3] = p / q
        s[4] = p % q
        s[5] = p << q
        s[6] = p >> q
        s[7] = p & q
        s[8] = p | q
        s[9] = p ^ q
        s[10] = -p
        s[11] = ~p
        s[12] = i32(p == q) + i32(p != q) * 2 + i32(p < q) * 4
        s[13] = i32(p <= q) + i32(p > q) * 2 + i32(p >= q) * 4
        s[14] = i32((p > 0) && (q > 0)) + i32((p > 0) || (q > 0)) * 2 + i32(!(p > 0)) * 4
        s[15] = i32((p > 0) & (q > 0)) + i32((p > 0) | (q > 0)) * 2 + i32((p > 0) ^ (q > 0)) * 4
    }

    // Float operators (float `%` is fmod, SPEC.md §10, in `float_rem`).
    kernel float_ops(a: tensor<f32>[4], b: tensor<f32>[4], out: tensor<f32>[5, 4]) {
        let x = a[0 :+ 4]
        let y = b[0 :+ 4]
        out[0, :] = x + y
        out[1, :] = x - y
        out[2, :] = x * y
        out[3, :] = x / y
        out[4, :] = -x
    }
}

phobos::kernel! {
    kernel float_rem(a: tensor<f32>[4], b: tensor<f32>[4], out: tensor<f32>[4], s: tensor<f32>[1]) {
        out[0 :+ 4] = a[0 :+ 4] % b[0 :+ 4]
        s[0] = a[1] % b[1]
    }
}

const A: [i32; 4] = [7, -9, 100, -1];
const B: [i32; 4] = [2, 4, -3, 0];
const FA: [f32; 4] = [7.5, -9.25, 1.0, 3.0];
const FB: [f32; 4] = [2.0, 0.5, -3.0, 0.0];

/// SPEC.md §6 and §10 on `i32`: wrapping, `x / 0 == x % 0 == 0`, shifts
/// outside `0..32` give 0 (or the sign for `>>`).
fn int_want(x: i32, y: i32) -> [i32; 16] {
    let shl = if (0..32).contains(&y) { x << y } else { 0 };
    let shr = if (0..32).contains(&y) {
        x >> y
    } else if x < 0 {
        -1
    } else {
        0
    };
    let bits = |a: bool, b: bool, c: bool| i32::from(a) + i32::from(b) * 2 + i32::from(c) * 4;
    let (xp, yp) = (x > 0, y > 0);
    [
        x.wrapping_add(y),
        x.wrapping_sub(y),
        x.wrapping_mul(y),
        if y == 0 { 0 } else { x.wrapping_div(y) },
        if y == 0 { 0 } else { x.wrapping_rem(y) },
        shl,
        shr,
        x & y,
        x | y,
        x ^ y,
        x.wrapping_neg(),
        !x,
        bits(x == y, x != y, x < y),
        bits(x <= y, x > y, x >= y),
        bits(xp && yp, xp || yp, !xp),
        bits(xp & yp, xp | yp, xp ^ yp),
    ]
}

fn same(got: f32, want: f32) -> bool {
    got == want || (got.is_nan() && want.is_nan())
}

fn main() -> Result<()> {
    let d = Device::host();
    let (a, b) = (d.tensor_from(&A, [4])?, d.tensor_from(&B, [4])?);
    let mut out = d.zeros::<i32>([16, 4])?;
    let mut s = d.zeros::<i32>([16])?;
    int_ops::launch(&d, &a, &b, &mut out, &mut s)?;
    let (out, s) = (out.to_vec()?, s.to_vec()?);
    for i in 0..4 {
        let want = int_want(A[i], B[i]);
        for (op, w) in want.iter().enumerate() {
            assert_eq!(out[op * 4 + i], *w, "int op {op} at {i}");
        }
    }
    assert_eq!(s, int_want(A[1], B[1]), "scalar int ops");

    let (fa, fb) = (d.tensor_from(&FA, [4])?, d.tensor_from(&FB, [4])?);
    let mut fout = d.zeros::<f32>([5, 4])?;
    float_ops::launch(&d, &fa, &fb, &mut fout)?;
    let fout = fout.to_vec()?;
    for i in 0..4 {
        let (x, y) = (FA[i], FB[i]);
        for (op, w) in [x + y, x - y, x * y, x / y, -x].into_iter().enumerate() {
            assert!(same(fout[op * 4 + i], w), "float op {op} at {i}");
        }
    }

    {
        let mut out = d.zeros::<f32>([4])?;
        let mut s = d.zeros::<f32>([1])?;
        float_rem::launch(&d, &fa, &fb, &mut out, &mut s)?;
        let out = out.to_vec()?;
        for i in 0..4 {
            assert!(same(out[i], FA[i] % FB[i]), "fmod at {i}: {}", out[i]);
        }
        assert!(same(s.to_vec()?[0], FA[1] % FB[1]), "scalar fmod");
    }

    // Q8_0: per 32-value block an f16 scale then 32 i8 levels; a value is
    // scale * level.
    let mut bytes = Vec::new();
    let mut want = Vec::new();
    for block in 0..4 {
        let scale = f16::from_f32(0.25 * (block + 1) as f32);
        bytes.extend_from_slice(&scale.to_le_bytes());
        for j in 0..32i32 {
            let level = (block * 61 + j * 9) % 255 - 127;
            bytes.push(level as i8 as u8);
            want.push(scale.to_f32() * level as f32);
        }
    }
    let w = QTensor::<Q8_0>::borrowed(&bytes, [2, 64])?;
    let mut y = d.zeros::<f32>([2, 64])?;
    q8_dequant::launch(&d, &w, &mut y)?;
    assert_eq!(y.to_vec()?, want, "dequant(q8_0)");

    // Every kernel was also compiled to PTX at build time (feature `ptx`).
    for artifact in [
        &int_ops::ARTIFACT,
        &float_ops::ARTIFACT,
        &float_rem::ARTIFACT,
        &q8_dequant::ARTIFACT,
    ] {
        assert!(artifact.ptx_built && !artifact.variants.is_empty(), "no PTX embedded");
        for v in artifact.variants {
            assert!(v.ptx().is_ok_and(|ptx| ptx.contains(".entry")), "PTX of {}", artifact.name);
        }
    }
    println!("ok");
    Ok(())
}
