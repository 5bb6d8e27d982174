//! SPEC.md §10's edge cases on the host back end: the kernels of
//! `kernels/edge/edge_cases.ph`, launched through `kernel!`'s launchers on
//! every pair of interesting operands, against Rust's own semantics as
//! SPEC.md states them (`phobos_examples::edge`). Floats compare bit for
//! bit (signed zeros included); any NaN matches any NaN. The PTX side of
//! the same table is `build-support/tests/edge_cases.rs` and the device
//! check.

use phobos::{Device, Element, Error, Tensor, bf16, f16};
use phobos_examples::edge::{self, EdgeFloat, EdgeInt};
use phobos_examples::kernels;

fn tensor<T: Element>(values: &[T]) -> Tensor<T> {
    Device::host().tensor_from(values, [values.len()]).unwrap()
}

fn check_ints<T: EdgeInt + Element>(
    what: &str,
    a: &[T],
    b: &[T],
    got: &Tensor<T>,
    want: impl Fn(T, T) -> T,
) {
    let got = got.to_vec().unwrap();
    assert_eq!(got.len(), a.len());
    for i in 0..a.len() {
        assert_eq!(got[i], want(a[i], b[i]), "{what}({:?}, {:?})", a[i], b[i]);
    }
}

macro_rules! int_table {
    ($test:ident, $t:ty, $kernel:ident) => {
        #[test]
        fn $test() {
            let (a, b) = edge::int_pairs::<$t>();
            let n = a.len();
            let device = Device::host();
            let mut outs: Vec<Tensor<$t>> = (0..5)
                .map(|_| device.full([n], <$t>::wrap(0x5a)).unwrap())
                .collect();
            let [quo, rem, shl, shr, up] = &mut outs[..] else {
                unreachable!()
            };
            kernels::$kernel::launch(&device, &tensor(&a), &tensor(&b), quo, rem, shl, shr, up)
                .unwrap();
            check_ints("div", &a, &b, quo, edge::int_div);
            check_ints("rem", &a, &b, rem, edge::int_rem);
            check_ints("shl", &a, &b, shl, edge::int_shl);
            check_ints("shr", &a, &b, shr, edge::int_shr);
            check_ints("cdiv", &a, &b, up, edge::int_cdiv);
        }
    };
}

int_table!(int_i8, i8, edge_int_i8);
int_table!(int_u8, u8, edge_int_u8);
int_table!(int_i16, i16, edge_int_i16);
int_table!(int_u16, u16, edge_int_u16);
int_table!(int_i32, i32, edge_int_i32);
int_table!(int_u32, u32, edge_int_u32);
int_table!(int_i64, i64, edge_int_i64);

/// Bit-equal, or both NaN.
fn same_float<F: EdgeFloat>(got: F, want: F) -> bool {
    let (g, w) = (got.to_f64(), want.to_f64());
    (g.is_nan() && w.is_nan()) || (g == w && g.is_sign_negative() == w.is_sign_negative())
}

fn check_floats<F: EdgeFloat + Element>(
    what: &str,
    a: &[F],
    b: &[F],
    got: &Tensor<F>,
    want: impl Fn(F, F) -> F,
) {
    let got = got.to_vec().unwrap();
    for i in 0..a.len() {
        let w = want(a[i], b[i]);
        assert!(
            same_float(got[i], w),
            "{what}({:?}, {:?}) = {:?}, expected {w:?}",
            a[i],
            b[i],
            got[i]
        );
    }
}

fn check_cast<F: EdgeFloat, T: EdgeInt + Element>(a: &[F], got: &Tensor<T>) {
    let got = got.to_vec().unwrap();
    for i in 0..a.len() {
        assert_eq!(
            got[i],
            edge::float_to_int::<F, T>(a[i]),
            "cast {:?} to {}",
            a[i],
            std::any::type_name::<T>()
        );
    }
}

macro_rules! float_table {
    ($test:ident, $t:ty, $kernel:ident) => {
        #[test]
        fn $test() {
            let (a, b) = edge::float_pairs::<$t>();
            let n = a.len();
            let device = Device::host();
            let fill = <$t as EdgeFloat>::from_f64(42.0);
            let mut rem = device.full([n], fill).unwrap();
            let mut lo = device.full([n], fill).unwrap();
            let mut hi = device.full([n], fill).unwrap();
            let mut c8 = device.full([n], 42i8).unwrap();
            let mut cu8 = device.full([n], 42u8).unwrap();
            let mut c16 = device.full([n], 42i16).unwrap();
            let mut cu16 = device.full([n], 42u16).unwrap();
            let mut c32 = device.full([n], 42i32).unwrap();
            let mut cu32 = device.full([n], 42u32).unwrap();
            let mut c64 = device.full([n], 42i64).unwrap();
            kernels::$kernel::launch(
                &device,
                &tensor(&a),
                &tensor(&b),
                &mut rem,
                &mut lo,
                &mut hi,
                &mut c8,
                &mut cu8,
                &mut c16,
                &mut cu16,
                &mut c32,
                &mut cu32,
                &mut c64,
            )
            .unwrap();
            check_floats("fmod", &a, &b, &rem, edge::float_rem);
            check_floats("min", &a, &b, &lo, edge::float_min);
            check_floats("max", &a, &b, &hi, edge::float_max);
            check_cast(&a, &c8);
            check_cast(&a, &cu8);
            check_cast(&a, &c16);
            check_cast(&a, &cu16);
            check_cast(&a, &c32);
            check_cast(&a, &cu32);
            check_cast(&a, &c64);
        }
    };
}

float_table!(float_f16, f16, edge_float_f16);
float_table!(float_bf16, bf16, edge_float_bf16);
float_table!(float_f32, f32, edge_float_f32);
float_table!(float_f64, f64, edge_float_f64);

macro_rules! loop_table {
    ($test:ident, $t:ty, $kernel:ident) => {
        #[test]
        fn $test() {
            let cases = edge::loop_cases::<$t>();
            let n = cases.len();
            let start: Vec<$t> = cases.iter().map(|c| c.0).collect();
            let end: Vec<$t> = cases.iter().map(|c| c.1).collect();
            let step: Vec<$t> = cases.iter().map(|c| c.2).collect();
            let device = Device::host();
            let mut count = device.full([n], -1i32).unwrap();
            let mut last = device.full([n], <$t>::wrap(0x5a)).unwrap();
            kernels::$kernel::launch(
                &device,
                &tensor(&start),
                &tensor(&end),
                &tensor(&step),
                &mut count,
                &mut last,
            )
            .unwrap();
            let (count, last) = (count.to_vec().unwrap(), last.to_vec().unwrap());
            for (i, &(s, e, st)) in cases.iter().enumerate() {
                assert_eq!(
                    (count[i], last[i]),
                    edge::loop_result(s, e, st),
                    "range({s:?}, {e:?}, {st:?})"
                );
            }

            // A step of 0 is an error naming the kernel and the loop, not
            // a loop that runs nothing (SPEC.md §9).
            let zero = <$t>::wrap(0);
            let err = kernels::$kernel::launch(
                &device,
                &tensor(&[zero, <$t>::wrap(1)]),
                &tensor(&[<$t>::wrap(10), <$t>::wrap(5)]),
                &tensor(&[<$t>::wrap(1), zero]),
                &mut device.full([2], 0i32).unwrap(),
                &mut device.full([2], zero).unwrap(),
            )
            .unwrap_err();
            assert!(
                matches!(&err, Error::LoopStepZero { kernel, var }
                    if kernel == stringify!($kernel) && var == "i"),
                "{err}"
            );
        }
    };
}

loop_table!(loop_i32, i32, edge_loop_i32);
loop_table!(loop_u8, u8, edge_loop_u8);
