//! The edge-case table of SPEC.md §10 (`kernels/edge/edge_cases.ph`) in the
//! device check: the same operand pairs `tests/edge_cases.rs` runs on the
//! host, with the host's outputs (checked there against Rust's semantics,
//! and here again before they become the oracle) as an oracle the GPU must
//! match bit for bit. Loops with a step of 0 are not here: they trap,
//! which takes the CUDA context down with them.

use anyhow::{Result, ensure};
use phobos::{Device, Element, Tensor, bf16, f16};
use phobos_examples::edge::{self, EdgeFloat, EdgeInt};
use phobos_examples::kernels;

use crate::case::{Buffer, Case, Output, RawElement};
use crate::table::Entry;

const RULE: &str = "exact: the host matches Rust's semantics (examples/tests/edge_cases.rs); the device must equal the host bit for bit, any NaN matching any NaN";

fn input<T: RawElement + Element>(values: &[T]) -> Result<(Tensor<T>, Buffer)> {
    let tensor = Device::host().tensor_from(values, [values.len()])?;
    let buffer = Buffer::of(&tensor)?;
    Ok((tensor, buffer))
}

/// Fails when the host's output differs from the reference anywhere, so
/// a wrong host never becomes the oracle.
fn agree<T: Element, U>(
    what: &str,
    got: &Tensor<T>,
    want: impl Iterator<Item = U>,
    same: impl Fn(T, U) -> bool,
) -> Result<()> {
    for (i, (g, w)) in got.to_vec()?.into_iter().zip(want).enumerate() {
        ensure!(same(g, w), "the host's {what} differs from Rust's at [{i}]");
    }
    Ok(())
}

fn same_float<F: EdgeFloat>(got: F, want: F) -> bool {
    let (g, w) = (got.to_f64(), want.to_f64());
    (g.is_nan() && w.is_nan()) || (g == w && g.is_sign_negative() == w.is_sign_negative())
}

macro_rules! int_entry {
    ($t:ty, $kernel:ident) => {
        Entry {
            artifact: &kernels::$kernel::ARTIFACT,
            build: |_| {
                let (a, b) = edge::int_pairs::<$t>();
                let n = a.len();
                let device = Device::host();
                let (ta, ba) = input(&a)?;
                let (tb, bb) = input(&b)?;
                let fill = <$t>::wrap(0x5a);
                let mut outs = Vec::new();
                for _ in 0..5 {
                    outs.push(device.full([n], fill)?);
                }
                let initial = outs.iter().map(Buffer::of).collect::<Result<Vec<_>>>()?;
                let [quo, rem, shl, shr, up] = &mut outs[..] else {
                    anyhow::bail!("five outputs");
                };
                kernels::$kernel::launch(&device, &ta, &tb, quo, rem, shl, shr, up)?;
                let pairs = || a.iter().zip(&b).map(|(&x, &y)| (x, y));
                agree(
                    "div",
                    quo,
                    pairs().map(|(x, y)| edge::int_div(x, y)),
                    |g, w| g == w,
                )?;
                agree(
                    "rem",
                    rem,
                    pairs().map(|(x, y)| edge::int_rem(x, y)),
                    |g, w| g == w,
                )?;
                agree(
                    "shl",
                    shl,
                    pairs().map(|(x, y)| edge::int_shl(x, y)),
                    |g, w| g == w,
                )?;
                agree(
                    "shr",
                    shr,
                    pairs().map(|(x, y)| edge::int_shr(x, y)),
                    |g, w| g == w,
                )?;
                agree(
                    "cdiv",
                    up,
                    pairs().map(|(x, y)| edge::int_cdiv(x, y)),
                    |g, w| g == w,
                )?;
                let mut tensors = vec![("a", ba), ("b", bb)];
                let mut outputs = Vec::new();
                let names = ["quo", "rem", "shl", "shr", "up"];
                for ((name, out), initial) in names.into_iter().zip(&outs).zip(initial) {
                    tensors.push((name, initial));
                    outputs.push(Output::exact(name, out, RULE)?);
                }
                Ok(Case {
                    dims: vec![("N", n as i64)],
                    scalars: vec![],
                    tensors,
                    outputs,
                })
            },
            matmul_bench: false,
        }
    };
}

/// The float kernels' integer outputs, in the kernel's parameter order.
const CASTS: [&str; 7] = [
    "to_i8", "to_u8", "to_i16", "to_u16", "to_i32", "to_u32", "to_i64",
];

fn cast_output<F: EdgeFloat, T: EdgeInt + Element + RawElement>(
    name: &'static str,
    a: &[F],
    out: &Tensor<T>,
) -> Result<Output> {
    agree(
        name,
        out,
        a.iter().map(|&x| edge::float_to_int::<F, T>(x)),
        |g, w| g == w,
    )?;
    Output::exact(name, out, RULE)
}

macro_rules! float_entry {
    ($t:ty, $kernel:ident) => {
        Entry {
            artifact: &kernels::$kernel::ARTIFACT,
            build: |_| {
                let (a, b) = edge::float_pairs::<$t>();
                let n = a.len();
                let device = Device::host();
                let (ta, ba) = input(&a)?;
                let (tb, bb) = input(&b)?;
                let fill = <$t as EdgeFloat>::from_f64(42.0);
                let mut rem = device.full([n], fill)?;
                let mut lo = device.full([n], fill)?;
                let mut hi = device.full([n], fill)?;
                let mut c8 = device.full([n], 42i8)?;
                let mut cu8 = device.full([n], 42u8)?;
                let mut c16 = device.full([n], 42i16)?;
                let mut cu16 = device.full([n], 42u16)?;
                let mut c32 = device.full([n], 42i32)?;
                let mut cu32 = device.full([n], 42u32)?;
                let mut c64 = device.full([n], 42i64)?;
                let mut tensors = vec![("a", ba), ("b", bb)];
                tensors.push(("rem", Buffer::of(&rem)?));
                tensors.push(("lo", Buffer::of(&lo)?));
                tensors.push(("hi", Buffer::of(&hi)?));
                tensors.push((CASTS[0], Buffer::of(&c8)?));
                tensors.push((CASTS[1], Buffer::of(&cu8)?));
                tensors.push((CASTS[2], Buffer::of(&c16)?));
                tensors.push((CASTS[3], Buffer::of(&cu16)?));
                tensors.push((CASTS[4], Buffer::of(&c32)?));
                tensors.push((CASTS[5], Buffer::of(&cu32)?));
                tensors.push((CASTS[6], Buffer::of(&c64)?));
                kernels::$kernel::launch(
                    &device, &ta, &tb, &mut rem, &mut lo, &mut hi, &mut c8, &mut cu8, &mut c16,
                    &mut cu16, &mut c32, &mut cu32, &mut c64,
                )?;
                let pairs = || a.iter().zip(&b).map(|(&x, &y)| (x, y));
                agree(
                    "fmod",
                    &rem,
                    pairs().map(|(x, y)| edge::float_rem(x, y)),
                    same_float,
                )?;
                agree(
                    "min",
                    &lo,
                    pairs().map(|(x, y)| edge::float_min(x, y)),
                    same_float,
                )?;
                agree(
                    "max",
                    &hi,
                    pairs().map(|(x, y)| edge::float_max(x, y)),
                    same_float,
                )?;
                let outputs = vec![
                    Output::exact("rem", &rem, RULE)?,
                    Output::exact("lo", &lo, RULE)?,
                    Output::exact("hi", &hi, RULE)?,
                    cast_output(CASTS[0], &a, &c8)?,
                    cast_output(CASTS[1], &a, &cu8)?,
                    cast_output(CASTS[2], &a, &c16)?,
                    cast_output(CASTS[3], &a, &cu16)?,
                    cast_output(CASTS[4], &a, &c32)?,
                    cast_output(CASTS[5], &a, &cu32)?,
                    cast_output(CASTS[6], &a, &c64)?,
                ];
                Ok(Case {
                    dims: vec![("N", n as i64)],
                    scalars: vec![],
                    tensors,
                    outputs,
                })
            },
            matmul_bench: false,
        }
    };
}

macro_rules! loop_entry {
    ($t:ty, $kernel:ident) => {
        Entry {
            artifact: &kernels::$kernel::ARTIFACT,
            build: |_| {
                let cases = edge::loop_cases::<$t>();
                let n = cases.len();
                let device = Device::host();
                let (start, bs) = input(&cases.iter().map(|c| c.0).collect::<Vec<$t>>())?;
                let (end, be) = input(&cases.iter().map(|c| c.1).collect::<Vec<$t>>())?;
                let (step, bst) = input(&cases.iter().map(|c| c.2).collect::<Vec<$t>>())?;
                let mut count = device.full([n], -1i32)?;
                let mut last = device.full([n], <$t>::wrap(0x5a))?;
                let tensors = vec![
                    ("start", bs),
                    ("end", be),
                    ("step", bst),
                    ("count", Buffer::of(&count)?),
                    ("last", Buffer::of(&last)?),
                ];
                kernels::$kernel::launch(&device, &start, &end, &step, &mut count, &mut last)?;
                let want = || cases.iter().map(|&(s, e, st)| edge::loop_result(s, e, st));
                agree("count", &count, want().map(|r| r.0), |g, w| g == w)?;
                agree("last", &last, want().map(|r| r.1), |g, w| g == w)?;
                Ok(Case {
                    dims: vec![("N", n as i64)],
                    scalars: vec![],
                    tensors,
                    outputs: vec![
                        Output::exact("count", &count, RULE)?,
                        Output::exact("last", &last, RULE)?,
                    ],
                })
            },
            matmul_bench: false,
        }
    };
}

pub fn entries() -> Vec<Entry> {
    vec![
        int_entry!(i8, edge_int_i8),
        int_entry!(u8, edge_int_u8),
        int_entry!(i16, edge_int_i16),
        int_entry!(u16, edge_int_u16),
        int_entry!(i32, edge_int_i32),
        int_entry!(u32, edge_int_u32),
        int_entry!(i64, edge_int_i64),
        float_entry!(f16, edge_float_f16),
        float_entry!(bf16, edge_float_bf16),
        float_entry!(f32, edge_float_f32),
        float_entry!(f64, edge_float_f64),
        loop_entry!(i32, edge_loop_i32),
        loop_entry!(u8, edge_loop_u8),
    ]
}
