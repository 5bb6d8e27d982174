//! The one-call contraction loop against the step-by-step loop it replaces
//! (masked loads, then `dot_acc`) and a plain `mul_add` reference, bit for
//! bit, over ragged shapes, masked rows and columns, and `k` ranges that
//! start before 0 or run past `K`.

use super::*;
use crate::Device;
use crate::host::{PlainRead, TensorRead, dot_acc, load};
use proptest::prelude::*;

/// Inexact values (thirds) with some zeros of both signs among them.
fn values(len: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            match state % 16 {
                0 => 0.0,
                1 => -0.0,
                v => (v as f32 - 8.0) / 3.0 + (state % 1000) as f32 / 7.0e3,
            }
        })
        .collect()
}

/// The loop as the step-by-step path runs it.
fn stepwise<VA: Readable<f32>, VB: Readable<f32>>(
    acc: &mut Tile<f32>,
    (a, rows): (&VA, Slice),
    (b, cols): (&VB, Slice),
    (start, end, step): (i64, i64, i64),
) {
    let mut kt = start;
    while kt < end {
        let span = Slice::Span {
            start: kt,
            len: step as usize,
        };
        let a_tile = load(a, &[rows, span], 0.0).unwrap();
        let b_tile = load(b, &[span, cols], 0.0).unwrap();
        dot_acc(acc, &a_tile, &b_tile).unwrap();
        match kt.checked_add(step) {
            Some(next) => kt = next,
            None => break,
        }
    }
}

/// `acc[i][j]` as one `mul_add` chain over the loop's `k`, masked
/// coordinates reading 0.
fn reference(
    acc: &mut [f32],
    (a, m, k): (&[f32], usize, usize),
    (b, n): (&[f32], usize),
    (row0, tm): (i64, usize),
    (col0, tn): (i64, usize),
    (start, end, step): (i64, i64, i64),
) {
    let at = |i: i64, p: i64| {
        if (0..m as i64).contains(&i) && (0..k as i64).contains(&p) {
            a[i as usize * k + p as usize]
        } else {
            0.0
        }
    };
    let bt = |p: i64, j: i64| {
        if (0..k as i64).contains(&p) && (0..n as i64).contains(&j) {
            b[p as usize * n + j as usize]
        } else {
            0.0
        }
    };
    for i in 0..tm {
        for j in 0..tn {
            let c = &mut acc[i * tn + j];
            let mut kt = start;
            while kt < end {
                for p in kt..kt + step {
                    *c = at(row0 + i as i64, p).mul_add(bt(p, col0 + j as i64), *c);
                }
                kt += step;
            }
        }
    }
}

/// One case: A `[m, k]`, B `[k, n]`, the tile at `(row0, col0)` of
/// `tm x tn`, the loop `range(start, end, step)`. Checks plain and atomic
/// views alike.
fn check(
    (m, k, n): (usize, usize, usize),
    (row0, tm): (i64, usize),
    (col0, tn): (i64, usize),
    (start, end, step): (i64, i64, i64),
    seed: u32,
) {
    let device = Device::host();
    let a_data = values(m * k, seed);
    let b_data = values(k * n, seed + 1);
    let a = device.tensor_from(&a_data, [m, k]).unwrap();
    let b = device.tensor_from(&b_data, [k, n]).unwrap();
    let start_acc = Tile::from_vec(&[tm, tn], values(tm * tn, seed + 2)).unwrap();
    let rows = Slice::Span {
        start: row0,
        len: tm,
    };
    let cols = Slice::Span {
        start: col0,
        len: tn,
    };
    let span = Slice::Span {
        start,
        len: step as usize,
    };
    let range = (start, end, step);
    let case = format!("{m}x{k}x{n} rows {row0}+{tm} cols {col0}+{tn} range {range:?}");

    let mut want = start_acc.clone();
    reference(
        want.as_mut_slice(),
        (&a_data, m, k),
        (&b_data, n),
        (row0, tm),
        (col0, tn),
        range,
    );
    let mut old = start_acc.clone();
    let (a_read, b_read) = (TensorRead::new(&a).unwrap(), TensorRead::new(&b).unwrap());
    stepwise(&mut old, (&a_read, rows), (&b_read, cols), range);
    let bits = |t: &Tile<f32>| t.as_slice().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    // The reference is the FMA chain; the portable kernel (no FMA) differs.
    if kernel_fuses() {
        assert_eq!(bits(&old), bits(&want), "step-by-step vs reference, {case}");
    }

    // Atomic reads (the view may meet writers): A is copied, never borrowed.
    let mut new = start_acc.clone();
    let done = dot_acc_k_loop(
        &mut new,
        (&a_read, &[rows, span]),
        (&b_read, &[span, cols]),
        range,
    )
    .unwrap();
    // No iteration: left to the loop, which does nothing.
    assert_eq!(done, start < end, "{case}");
    assert_eq!(bits(&new), bits(&old), "atomic views, {case}");

    // Plain reads: A read in place.
    let (a_plain, b_plain) = (PlainRead::new(&a).unwrap(), PlainRead::new(&b).unwrap());
    assert!(a_plain.is_plain() && b_plain.is_plain());
    let mut new = start_acc.clone();
    let done = dot_acc_k_loop(
        &mut new,
        (&a_plain.view(), &[rows, span]),
        (&b_plain.view(), &[span, cols]),
        range,
    )
    .unwrap();
    assert_eq!(done, start < end, "{case}");
    assert_eq!(bits(&new), bits(&old), "plain views, {case}");

    // The same B under the same guard again: its packing is this thread's
    // kept one (`packed_b`).
    let mut again = start_acc.clone();
    dot_acc_k_loop(
        &mut again,
        (&a_plain.view(), &[rows, span]),
        (&b_plain.view(), &[span, cols]),
        range,
    )
    .unwrap();
    assert_eq!(bits(&again), bits(&old), "B's packing reused, {case}");
}

fn kernel_fuses() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            || (std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[test]
fn whole_tiles_and_more_than_one_k_block() {
    // K = 600 spans three blocks of `KC`, the last one partial.
    check((24, 600, 64), (6, 12), (16, 32), (0, 600, 40), 1);
    check(
        (12, 2 * KC, 32),
        (0, 12),
        (0, 32),
        (0, 2 * KC as i64, 64),
        2,
    );
}

#[test]
fn a_rows_a_multiple_of_4_kib_apart() {
    // K = 1024: every row of A starts on the same L1 set (read in place by
    // the AVX-512 kernel, copied by the AVX2 one).
    check((20, 1024, 40), (0, 16), (0, 40), (0, 1024, 128), 15);
    check((20, 1024, 40), (8, 16), (-4, 40), (0, 1024, 128), 16);
}

#[test]
fn b_written_between_guards_is_packed_again() {
    // A kept packing belongs to one plain-read guard: once B is rewritten,
    // a new guard must see the new values, whatever this thread kept.
    let device = Device::host();
    let (m, k, n) = (8, 300, 64);
    let a = device.tensor_from(&values(m * k, 20), [m, k]).unwrap();
    let mut b = device.tensor_from(&values(k * n, 21), [k, n]).unwrap();
    let rows = Slice::Span { start: 0, len: m };
    let cols = Slice::Span { start: 0, len: n };
    let span = Slice::Span { start: 0, len: 50 };
    let range = (0, k as i64, 50);
    for round in 0..3 {
        b.copy_from_slice(&values(k * n, 22 + round)).unwrap();
        let mut want = Tile::<f32>::zeros(&[m, n]).unwrap();
        let (a_read, b_read) = (TensorRead::new(&a).unwrap(), TensorRead::new(&b).unwrap());
        stepwise(&mut want, (&a_read, rows), (&b_read, cols), range);
        let (a_plain, b_plain) = (PlainRead::new(&a).unwrap(), PlainRead::new(&b).unwrap());
        for _ in 0..2 {
            let mut got = Tile::<f32>::zeros(&[m, n]).unwrap();
            let views = (a_plain.view(), b_plain.view());
            dot_acc_k_loop(
                &mut got,
                (&views.0, &[rows, span]),
                (&views.1, &[span, cols]),
                range,
            )
            .unwrap();
            assert_eq!(got.as_slice(), want.as_slice(), "round {round}");
        }
    }
}

#[test]
fn ragged_edges_of_the_tensors_and_the_tiles() {
    // Rows and columns past M and N, K not a multiple of the step.
    check((13, 37, 21), (8, 16), (16, 16), (0, 37, 8), 3);
    // K below the step: one step, mostly past K.
    check((7, 3, 9), (0, 8), (0, 16), (0, 3, 16), 4);
    // K = 1.
    check((5, 1, 40), (0, 7), (0, 40), (0, 1, 4), 5);
    // Tiles that are not multiples of the micro-kernel's block.
    check((11, 19, 50), (0, 11), (0, 50), (0, 19, 5), 6);
}

#[test]
fn masked_starts_and_ranges_past_k() {
    // The tile starts above row 0 and left of column 0.
    check((9, 20, 30), (-3, 8), (-5, 24), (0, 20, 4), 7);
    // The loop starts before k = 0 and ends far past K.
    check((9, 20, 30), (0, 8), (0, 16), (-6, 50, 4), 8);
    // Every step masked: only `-0.0 -> +0.0` remains.
    check((9, 20, 30), (0, 8), (0, 16), (24, 40, 8), 9);
    check((9, 20, 30), (0, 8), (0, 16), (-40, -8, 8), 10);
    // Tiles wholly outside the tensors.
    check((9, 20, 30), (9, 4), (40, 16), (0, 20, 4), 11);
}

#[test]
fn empty_k_and_empty_tensors() {
    // K = 0: every step is masked.
    check((4, 0, 8), (0, 4), (0, 8), (0, 5, 2), 12);
    // M = 0 and N = 0: every row (column) is masked.
    check((0, 6, 8), (0, 4), (0, 8), (0, 6, 2), 13);
    check((4, 6, 0), (0, 4), (0, 8), (0, 6, 2), 14);
}

#[test]
fn shapes_it_does_not_take_are_left_to_the_loop() {
    let device = Device::host();
    let a = device.tensor_from(&values(8 * 8, 1), [8, 8]).unwrap();
    let b = device.tensor_from(&values(8 * 8, 2), [8, 8]).unwrap();
    let b_short = device.tensor_from(&values(6 * 8, 3), [6, 8]).unwrap();
    let (a, b, b_short) = (
        TensorRead::new(&a).unwrap(),
        TensorRead::new(&b).unwrap(),
        TensorRead::new(&b_short).unwrap(),
    );
    let rows = Slice::Span { start: 0, len: 4 };
    let cols = Slice::Span { start: 0, len: 4 };
    let span = |start, len| Slice::Span { start, len };
    let start = Tile::from_vec(&[4, 4], values(16, 4)).unwrap();
    let untouched = |a_slices: &[Slice], b_slices: &[Slice], b: &TensorRead<'_, f32>, range| {
        let mut acc = start.clone();
        let done = dot_acc_k_loop(&mut acc, (&a, a_slices), (b, b_slices), range).unwrap();
        assert!(!done, "{a_slices:?} {b_slices:?} {range:?}");
        assert_eq!(acc.as_slice(), start.as_slice());
    };
    // A k span that is not the loop's step, or does not start at `start`.
    untouched(&[rows, span(0, 2)], &[span(0, 4), cols], &b, (0, 8, 4));
    untouched(&[rows, span(4, 4)], &[span(4, 4), cols], &b, (0, 8, 4));
    // Different K extents, a point slice, a zero or negative step, no
    // iteration, an accumulator of another shape.
    untouched(
        &[rows, span(0, 4)],
        &[span(0, 4), cols],
        &b_short,
        (0, 8, 4),
    );
    untouched(
        &[Slice::Point(0), span(0, 4)],
        &[span(0, 4), cols],
        &b,
        (0, 8, 4),
    );
    untouched(&[rows, span(0, 0)], &[span(0, 0), cols], &b, (0, 8, 0));
    untouched(&[rows, span(8, 4)], &[span(8, 4), cols], &b, (8, 8, 4));
    untouched(
        &[rows, span(0, 4)],
        &[span(0, 4), span(0, 2)],
        &b,
        (0, 8, 4),
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_ragged_loop_gives_the_step_by_step_bits(
        (m, k, n) in (0usize..40, 0usize..300, 0usize..70),
        (tm, tn, step) in (1usize..30, 1usize..70, 1i64..40),
        (row_off, col_off, start) in (-8i64..40, -20i64..70, -12i64..8),
        extra in 0i64..50,
        seed in 0u32..1000,
    ) {
        check((m, k, n), (row_off, tm), (col_off, tn), (start, k as i64 + extra - 20, step), seed);
    }
}
