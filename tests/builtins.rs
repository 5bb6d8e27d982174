//! Every built-in and operator, through the whole pipeline: `phobos::kernel!`
//! (front end, checker, host back end) and the typed launcher, with the
//! expected values computed here by plain Rust. Scalar (rank-0) and tile
//! forms are both covered, since the host back end generates them
//! differently.
//!
//! The strict lint levels below show the generated modules stay quiet under
//! common opt-in lints in user crates.

#![deny(
    warnings,
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    unused_qualifications,
    unused_results,
    trivial_casts,
    trivial_numeric_casts
)]

use phobos::Device;

phobos::kernel! {
    // Scalar arithmetic, integer ops and control flow (one program).
    kernel int_scalars(out: tensor<i32>[16], n: i32) {
        out[0] = cdiv(n, 4)
        out[1] = cdiv(-7, 2)
        out[2] = n % 3
        out[3] = (n << 2) | 1
        out[4] = n >> 1
        out[5] = n ^ 3
        out[6] = ~n
        out[7] = min(n, 4) + max(n, 4)
        var i = 0
        var total = 0
        while i < n {
            total += i
            i += 1
        }
        out[8] = total
        if n > 5 {
            out[9] = 1
        } else {
            out[9] = 2
        }
        out[10] = i32(2.7) + i32(-2.7) * 10
        out[11] = num_programs(0)
        out[12] = where(n > 3 && n < 100, 7, 8)
        out[13] = -n / 3
        var down = 0
        for k in range(10, 0, -3) {
            down = down * 10 + k
        }
        out[14] = down
        out[15] = n & 6
    }

    kernel float_scalars(out: tensor<f32>[16], x: f32) {
        out[0] = sqrt(x)
        out[1] = sin(x)
        out[2] = cos(x)
        out[3] = exp(x)
        out[4] = log(x)
        out[5] = round(2.5)
        out[6] = floor(-1.5)
        out[7] = abs(-x)
        out[8] = rsqrt(x)
        out[9] = tanh(x)
        out[10] = sigmoid(x)
        out[11] = silu(x)
        out[12] = gelu(x)
        out[13] = f32(f16(x))
        out[14] = x - 1.0 / x
        out[15] = f32(x > 1.0)
    }

    // Elementwise tile ops over a ragged 1-D tensor, 8 elements per program.
    @grid(cdiv(N, 8))
    kernel tile_elementwise(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[6, N]) {
        let i = program_id(0) * 8
        let a = x[i :+ 8]
        let b = y[i :+ 8]
        out[0, i :+ 8] = where(a > b, a - b, b * 2.0)
        out[1, i :+ 8] = min(a, b) / max(abs(a), 1.0)
        out[2, i :+ 8] = exp(-a * a) + sqrt(abs(b))
        out[3, i :+ 8] = f32(i32(a * 10.0) % 3)
        out[4, i :+ 8] = f32(arange(8) + i)
        out[5, i :+ 8] = -a
    }

    // Layout and reductions on one 4x8 tile.
    kernel tile_layout(a: tensor<f32>[4, 8], transposed: tensor<f32>[8, 4], reshaped: tensor<f32>[2, 16],
                       prefix: tensor<f32>[4, 8], lower: tensor<f32>[4, 4], rows: tensor<f32>[4, 3],
                       whole: tensor<f32>[3], part: tensor<f32>[2, 3]) {
        let t = a[:, :]
        transposed[:, :] = transpose(t)
        reshaped[:, :] = reshape(t, 2, 16)
        prefix[:, :] = cumsum(t)
        lower[:, :] = tril(t[0 :+ 4, 2 :+ 4])
        rows[:, 0 :+ 1] = rowsum(t)
        rows[:, 1 :+ 1] = rowmax(t)
        rows[:, 2 :+ 1] = rowmin(t)
        whole[0] = sum(t)
        whole[1] = max(t)
        whole[2] = min(t)
        // A runtime start: the part past the tile is masked, reading 0.
        let c0 = program_id(0) + 6
        part[:, :] = t[2 :+ 2, c0 :+ 3]
    }

    // Compound stores and atomics; every program adds into the same cells.
    @grid(P)
    kernel stores(acc: tensor<f32>[4], hits: tensor<i32>[1], scaled: tensor<f32>[4], seen: tensor<f32>[P]) {
        atomic_add(acc[0 :+ 4], 1.5)
        atomic_add(hits[0], 1)
        if program_id(0) == 0 {
            scaled[0 :+ 4] *= 3.0
            scaled[1] += 0.5
            scaled[2 :+ 2] max= 10.0
        }
        seen[program_id(0)] = f32(program_id(0))
    }

    // An integer contraction accumulates in i32; dot_t contracts rows.
    kernel int_dot(a: tensor<i8>[4, 8], b: tensor<i8>[8, 4], c: tensor<i32>[4, 4], ct: tensor<i32>[4, 4]) {
        let ta = a[:, :]
        c[:, :] = dot(ta, b[:, :])
        ct[:, :] = dot_t(ta, ta)
    }

    // Locals named like the host back end's own bindings of loads read in
    // place (each load's result is bound beside its local): none shadows
    // another.
    kernel load_names(x: tensor<f32>[8], y: tensor<f32>[4]) {
        let a_loaded = x[0 :+ 4]
        let loaded_l_a = x[4 :+ 4]
        let a = x[2 :+ 4]
        y[0 :+ 4] = a_loaded * 100.0 + loaded_l_a * 10.0 + a
    }
}

fn host() -> Device {
    Device::host()
}

#[test]
fn integer_scalars_and_control_flow() {
    let device = host();
    let mut out = device.full([16], -999i32).unwrap();
    let n = 10;
    int_scalars::launch(&device, &mut out, n).unwrap();
    let want = [
        3,
        -3, // ceil(-3.5)
        1,
        41,
        5,
        9,
        !10,
        14,
        45,
        1,
        2 - 20, // casts truncate toward zero
        1,
        7,
        -3,    // integer division truncates toward zero
        10741, // 10, 7, 4, 1
        2,
    ];
    assert_eq!(out.to_vec().unwrap(), want);
}

#[test]
fn float_scalars_match_std() {
    let device = host();
    let mut out = device.zeros::<f32>([16]).unwrap();
    let x = 1.7f32;
    float_scalars::launch(&device, &mut out, x).unwrap();
    let got = out.to_vec().unwrap();
    let gelu = 0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044_715 * x * x * x)).tanh());
    let want = [
        x.sqrt(),
        x.sin(),
        x.cos(),
        x.exp(),
        x.ln(),
        3.0, // ties away from zero
        -2.0,
        x,
        1.0 / x.sqrt(),
        x.tanh(),
        1.0 / (1.0 + (-x).exp()),
        x / (1.0 + (-x).exp()),
        gelu,
        phobos::f16::from_f32(x).to_f32(),
        x - 1.0 / x,
        1.0,
    ];
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        // 4 ulp: libm functions are within 1-2 ulp, f16/gelu compose a few ops.
        assert!(
            (g - w).abs() <= 4.0 * f32::EPSILON * w.abs().max(1.0),
            "element {i}: {g} vs {w}"
        );
    }
}

#[test]
fn locals_named_like_generated_bindings_keep_their_values() {
    let device = host();
    let x = device
        .tensor_from(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [8])
        .unwrap();
    let mut y = device.zeros::<f32>([4]).unwrap();
    load_names::launch(&device, &x, &mut y).unwrap();
    assert_eq!(y.to_vec().unwrap(), [153.0, 264.0, 375.0, 486.0]);
}

#[test]
fn tile_elementwise_ops_on_a_ragged_tensor() {
    let device = host();
    let n = 21; // 3 programs, the last one masked after 5 elements
    let xs: Vec<f32> = (0..n).map(|i| (i as f32 - 10.0) * 0.37).collect();
    let ys: Vec<f32> = (0..n).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
    let x = device.tensor_from(&xs, [n]).unwrap();
    let y = device.tensor_from(&ys, [n]).unwrap();
    let mut out = device.full([6, n], f32::NAN).unwrap();
    tile_elementwise::launch(&device, &x, &y, &mut out).unwrap();
    let got = out.to_vec().unwrap();
    for i in 0..n {
        let (a, b) = (xs[i], ys[i]);
        let want = [
            if a > b { a - b } else { b * 2.0 },
            a.min(b) / a.abs().max(1.0),
            (-a * a).exp() + b.abs().sqrt(),
            (((a * 10.0) as i32) % 3) as f32,
            i as f32,
            -a,
        ];
        for (row, w) in want.iter().enumerate() {
            let g = got[row * n + i];
            assert!(
                (g - w).abs() <= 2.0 * f32::EPSILON * w.abs().max(1.0),
                "row {row} col {i}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn tile_layout_and_reductions() {
    let device = host();
    let values: Vec<f32> = (0..32).map(|i| ((i * 13) % 17) as f32 - 8.0).collect();
    let at = |r: usize, c: usize| values[r * 8 + c];
    let a = device.tensor_from(&values, [4, 8]).unwrap();
    let mut transposed = device.zeros::<f32>([8, 4]).unwrap();
    let mut reshaped = device.zeros::<f32>([2, 16]).unwrap();
    let mut prefix = device.zeros::<f32>([4, 8]).unwrap();
    let mut lower = device.zeros::<f32>([4, 4]).unwrap();
    let mut rows = device.zeros::<f32>([4, 3]).unwrap();
    let mut whole = device.zeros::<f32>([3]).unwrap();
    let mut part = device.zeros::<f32>([2, 3]).unwrap();
    tile_layout::launch(
        &device,
        &a,
        &mut transposed,
        &mut reshaped,
        &mut prefix,
        &mut lower,
        &mut rows,
        &mut whole,
        &mut part,
    )
    .unwrap();

    let t = transposed.to_vec().unwrap();
    let p = prefix.to_vec().unwrap();
    let l = lower.to_vec().unwrap();
    let r = rows.to_vec().unwrap();
    for row in 0..4 {
        for col in 0..8 {
            assert_eq!(t[col * 4 + row], at(row, col));
            let running: f32 = (0..=row).map(|k| at(k, col)).sum();
            assert_eq!(p[row * 8 + col], running);
        }
        for col in 0..4 {
            let want = if col <= row { at(row, col + 2) } else { 0.0 };
            assert_eq!(l[row * 4 + col], want);
        }
        let line = &values[row * 8..row * 8 + 8];
        assert_eq!(r[row * 3], line.iter().sum::<f32>());
        assert_eq!(
            r[row * 3 + 1],
            line.iter().copied().fold(f32::MIN, f32::max)
        );
        assert_eq!(
            r[row * 3 + 2],
            line.iter().copied().fold(f32::MAX, f32::min)
        );
    }
    assert_eq!(
        reshaped.to_vec().unwrap(),
        values,
        "reshape keeps row-major order"
    );
    let w = whole.to_vec().unwrap();
    assert_eq!(w, [values.iter().sum(), 8.0, -8.0]);
    // part = t[2 :+ 2, 6 :+ 3]: column 8 is past the tile and reads as 0.
    assert_eq!(
        part.to_vec().unwrap(),
        [at(2, 6), at(2, 7), 0.0, at(3, 6), at(3, 7), 0.0]
    );
}

#[test]
fn compound_stores_and_atomics() {
    let device = host();
    let programs = 37;
    let mut acc = device.zeros::<f32>([4]).unwrap();
    let mut hits = device.zeros::<i32>([1]).unwrap();
    let mut scaled = device.tensor_from(&[1.0f32, 2.0, 3.0, 4.0], [4]).unwrap();
    let mut seen = device.zeros::<f32>([programs]).unwrap();
    stores::launch(&device, &mut acc, &mut hits, &mut scaled, &mut seen).unwrap();
    assert_eq!(acc.to_vec().unwrap(), vec![1.5 * programs as f32; 4]);
    assert_eq!(hits.to_vec().unwrap(), [programs as i32]);
    assert_eq!(scaled.to_vec().unwrap(), [3.0, 6.5, 10.0, 12.0]);
    let want: Vec<f32> = (0..programs).map(|p| p as f32).collect();
    assert_eq!(seen.to_vec().unwrap(), want);
}

#[test]
fn integer_contractions_accumulate_in_i32() {
    let device = host();
    let av: Vec<i8> = (0..32).map(|i| (i * 37 % 255 - 127) as i8).collect();
    let bv: Vec<i8> = (0..32).map(|i| (i * 91 % 255 - 127) as i8).collect();
    let a = device.tensor_from(&av, [4, 8]).unwrap();
    let b = device.tensor_from(&bv, [8, 4]).unwrap();
    let mut c = device.zeros::<i32>([4, 4]).unwrap();
    let mut ct = device.zeros::<i32>([4, 4]).unwrap();
    int_dot::launch(&device, &a, &b, &mut c, &mut ct).unwrap();
    let (c, ct) = (c.to_vec().unwrap(), ct.to_vec().unwrap());
    for i in 0..4 {
        for j in 0..4 {
            let dot: i32 = (0..8)
                .map(|k| i32::from(av[i * 8 + k]) * i32::from(bv[k * 4 + j]))
                .sum();
            let dot_t: i32 = (0..8)
                .map(|k| i32::from(av[i * 8 + k]) * i32::from(av[j * 8 + k]))
                .sum();
            assert_eq!(c[i * 4 + j], dot, "dot at {i},{j}");
            assert_eq!(ct[i * 4 + j], dot_t, "dot_t at {i},{j}");
        }
    }
}
