//! Each elementwise op against its scalar definition, plus broadcasting.

use super::*;
use crate::Error;
use crate::host::broadcast_shapes;
use half::{bf16, f16};
use proptest::prelude::*;

fn t<T: Element>(shape: &[usize], data: Vec<T>) -> Tile<T> {
    Tile::from_vec(shape, data).unwrap()
}

#[test]
fn arithmetic_with_scalar_and_row_broadcast() {
    let a = t(&[2, 2], vec![7, -7, 9, 10]);
    let two = Tile::scalar(2);
    assert_eq!(add(&a, &two).unwrap().as_slice(), &[9, -5, 11, 12]);
    assert_eq!(sub(&two, &a).unwrap().as_slice(), &[-5, 9, -7, -8]);
    assert_eq!(
        mul(&a, &t(&[2], vec![1, 10])).unwrap().as_slice(),
        &[7, -70, 9, 100]
    );
    assert_eq!(div(&a, &two).unwrap().as_slice(), &[3, -3, 4, 5]);
    assert_eq!(rem(&a, &two).unwrap().as_slice(), &[1, -1, 1, 0]);
    assert_eq!(div(&a, &Tile::scalar(0)).unwrap().as_slice(), &[0; 4]);
    let f = t(&[3], vec![1.0f32, -2.5, 4.0]);
    assert_eq!(
        div(&f, &Tile::scalar(2.0)).unwrap().as_slice(),
        &[0.5, -1.25, 2.0]
    );
    assert_eq!(neg(&f).as_slice(), &[-1.0, 2.5, -4.0]);
    assert_eq!(abs(&f).as_slice(), &[1.0, 2.5, 4.0]);
    assert!(matches!(
        add(&a, &t(&[3], vec![1, 2, 3])),
        Err(Error::ShapeMismatch { .. })
    ));
}

#[test]
fn cdiv_rounds_up_toward_infinity_and_zero_divisor_gives_zero() {
    let a = t(&[6], vec![7, -7, 7, -7, 8, 5]);
    let b = t(&[6], vec![2, 2, -2, -2, 4, 0]);
    // ceil(3.5), ceil(-3.5), ceil(-3.5), ceil(3.5), exact, x / 0.
    assert_eq!(cdiv(&a, &b).unwrap().as_slice(), &[4, -3, -3, 4, 2, 0]);
    let u = t(&[3], vec![7u8, 255, 0]);
    assert_eq!(
        cdiv(&u, &Tile::scalar(2u8)).unwrap().as_slice(),
        &[4, 128, 0]
    );
}

#[test]
fn comparisons_and_logic() {
    let a = t(&[4], vec![1, 2, 3, 4]);
    let b = Tile::scalar(2);
    assert_eq!(eq(&a, &b).unwrap().as_slice(), &[false, true, false, false]);
    assert_eq!(ne(&a, &b).unwrap().as_slice(), &[true, false, true, true]);
    assert_eq!(lt(&a, &b).unwrap().as_slice(), &[true, false, false, false]);
    assert_eq!(le(&a, &b).unwrap().as_slice(), &[true, true, false, false]);
    assert_eq!(gt(&a, &b).unwrap().as_slice(), &[false, false, true, true]);
    assert_eq!(ge(&a, &b).unwrap().as_slice(), &[false, true, true, true]);
    let p = t(&[4], vec![true, true, false, false]);
    let q = t(&[4], vec![true, false, true, false]);
    assert_eq!(
        and(&p, &q).unwrap().as_slice(),
        &[true, false, false, false]
    );
    assert_eq!(or(&p, &q).unwrap().as_slice(), &[true, true, true, false]);
    assert_eq!(not(&p).as_slice(), &[false, false, true, true]);
    let nan = t(&[1], vec![f32::NAN]);
    assert_eq!(eq(&nan, &nan).unwrap().as_slice(), &[false]);
    assert_eq!(ne(&nan, &nan).unwrap().as_slice(), &[true]);
}

#[test]
fn bit_ops_and_shifts() {
    let a = t(&[3], vec![0b1100u8, 0xff, 1]);
    let b = t(&[3], vec![0b1010u8, 0x0f, 9]);
    assert_eq!(bitand(&a, &b).unwrap().as_slice(), &[0b1000, 0x0f, 1]);
    assert_eq!(bitor(&a, &b).unwrap().as_slice(), &[0b1110, 0xff, 9]);
    assert_eq!(bitxor(&a, &b).unwrap().as_slice(), &[0b0110, 0xf0, 8]);
    assert_eq!(bitnot(&a).as_slice(), &[0b1111_0011, 0, 0xfe]);
    let s = t(&[3], vec![-16i32, 1, 3]);
    let by = t(&[3], vec![2, 31, 40]);
    assert_eq!(shl(&s, &by).unwrap().as_slice(), &[-64, i32::MIN, 0]);
    assert_eq!(shr(&s, &by).unwrap().as_slice(), &[-4, 0, 0]);
    assert_eq!(
        bitand(&t(&[2], vec![true, false]), &Tile::scalar(true))
            .unwrap()
            .as_slice(),
        &[true, false]
    );
}

#[test]
fn float_functions_match_scalar_definitions() {
    let xs = vec![-2.0f32, -0.5, 0.0, 0.5, 3.0];
    let x = t(&[5], xs.clone());
    type Case = (fn(&Tile<f32>) -> Tile<f32>, fn(f32) -> f32);
    let cases: [Case; 8] = [
        (exp, f32::exp),
        (tanh, f32::tanh),
        (sigmoid, |v| 1.0 / (1.0 + (-v).exp())),
        (silu, |v| v / (1.0 + (-v).exp())),
        (gelu, |v| {
            0.5 * v * (1.0 + (0.797_884_6 * (v + 0.044715 * v * v * v)).tanh())
        }),
        (floor, f32::floor),
        (round, f32::round),
        (abs, f32::abs),
    ];
    for (op, reference) in cases {
        for (got, &v) in op(&x).as_slice().iter().zip(&xs) {
            let want = reference(v);
            assert!(
                (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                "{v}: {got} vs {want}"
            );
        }
    }
    let pos = t(&[3], vec![0.25f64, 1.0, 16.0]);
    assert_eq!(sqrt(&pos).as_slice(), &[0.5, 1.0, 4.0]);
    assert_eq!(rsqrt(&pos).as_slice(), &[2.0, 1.0, 0.25]);
    assert_eq!(log(&t(&[1], vec![1.0f64])).as_slice(), &[0.0]);
    assert_eq!(round(&t(&[2], vec![2.5f32, -2.5])).as_slice(), &[3.0, -3.0]);
}

#[test]
fn half_precision_math_rounds_from_f32() {
    let h = t(&[2], vec![f16::from_f32(0.3), f16::from_f32(-1.7)]);
    let e = exp(&h);
    for (got, x) in e.as_slice().iter().zip(h.as_slice()) {
        assert_eq!(*got, f16::from_f32(x.to_f32().exp()));
    }
    let b = t(&[1], vec![bf16::from_f32(2.0)]);
    assert_eq!(
        mul(&b, &Tile::scalar(bf16::from_f32(3.0)))
            .unwrap()
            .as_slice(),
        &[bf16::from_f32(6.0)]
    );
}

#[test]
fn min_max_select_cast() {
    let a = t(&[3], vec![1.0f32, f32::NAN, -3.0]);
    let b = t(&[3], vec![2.0f32, 5.0, f32::NAN]);
    assert_eq!(minimum(&a, &b).unwrap().as_slice(), &[1.0, 5.0, -3.0]);
    assert_eq!(maximum(&a, &b).unwrap().as_slice(), &[2.0, 5.0, -3.0]);
    let cond = t(&[2, 1], vec![true, false]);
    let x = t(&[3], vec![1, 2, 3]);
    let sel = select(&cond, &x, &Tile::scalar(0)).unwrap();
    assert_eq!(sel.shape(), &[2, 3]);
    assert_eq!(sel.as_slice(), &[1, 2, 3, 0, 0, 0]);
    assert!(select(&t(&[2], vec![true, false]), &x, &x).is_err());
    let c: Tile<i8> = cast(&t(&[3], vec![-1.9f32, 200.0, f32::NAN]));
    assert_eq!(c.as_slice(), &[-1, 127, 0]);
    let h: Tile<f16> = cast(&t(&[1], vec![true]));
    assert_eq!(h.as_slice(), &[f16::ONE]);
}

#[test]
fn compound_assignment_in_place() {
    let mut acc = t(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0]);
    add_assign(&mut acc, &Tile::scalar(1.0)).unwrap();
    assert_eq!(acc.as_slice(), &[2.0, 3.0, 4.0, 5.0]);
    sub_assign(&mut acc, &t(&[2], vec![1.0, 2.0])).unwrap();
    assert_eq!(acc.as_slice(), &[1.0, 1.0, 3.0, 3.0]);
    mul_assign(&mut acc, &t(&[2, 1], vec![2.0, 3.0])).unwrap();
    assert_eq!(acc.as_slice(), &[2.0, 2.0, 9.0, 9.0]);
    div_assign(&mut acc, &Tile::scalar(2.0)).unwrap();
    assert_eq!(acc.as_slice(), &[1.0, 1.0, 4.5, 4.5]);
    max_assign(&mut acc, &t(&[2], vec![3.0, 0.0])).unwrap();
    assert_eq!(acc.as_slice(), &[3.0, 1.0, 4.5, 4.5]);
    assert!(add_assign(&mut acc, &t(&[3], vec![1.0; 3])).is_err());
    let mut small = t(&[2], vec![1.0f32, 2.0]);
    assert!(add_assign(&mut small, &acc).is_err());
}

fn shape_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    // Start from one shape; derive the other by dropping leading dims and
    // setting some dims to 1, on either side.
    (
        prop::collection::vec(1usize..4, 0..=4),
        any::<u8>(),
        0usize..5,
        any::<bool>(),
    )
        .prop_map(|(full, ones_mask, drop, swap)| {
            let drop = drop.min(full.len());
            let other: Vec<usize> = full[drop..]
                .iter()
                .enumerate()
                .map(|(i, &d)| if ones_mask >> i & 1 == 1 { 1 } else { d })
                .collect();
            if swap { (other, full) } else { (full, other) }
        })
}

fn index_in(shape: &[usize], out_index: &[usize]) -> Vec<usize> {
    let skip = out_index.len() - shape.len();
    out_index[skip..]
        .iter()
        .zip(shape)
        .map(|(&i, &d)| if d == 1 { 0 } else { i })
        .collect()
}

proptest! {
    #[test]
    fn broadcast_add_matches_index_reference((sa, sb) in shape_pair()) {
        let la: usize = sa.iter().product();
        let lb: usize = sb.iter().product();
        let a = t(&sa, (0..la as i64).collect());
        let b = t(&sb, (0..lb as i64).map(|x| x * 100).collect());
        let out = add(&a, &b).unwrap();
        let shape = broadcast_shapes(&sa, &sb).unwrap();
        prop_assert_eq!(out.shape(), shape.dims());
        let mut index = vec![0usize; shape.rank()];
        for &got in out.as_slice() {
            let want = a.get(&index_in(&sa, &index)).unwrap() + b.get(&index_in(&sb, &index)).unwrap();
            prop_assert_eq!(got, want);
            crate::tensor::advance(&mut index, shape.dims());
        }
    }
}
