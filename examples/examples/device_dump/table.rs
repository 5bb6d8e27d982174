//! The kernels the device check covers, one entry each, and the launch
//! every variant of a kernel is checked on. Shapes are the runnable
//! examples' (no extent a multiple of a tile), seeds and value ranges the
//! proptests'; each bound is the proptest's for that kernel (the file named
//! in its `rule`), at the config of the tune space that makes it largest.
//!
//! A new kernel with the signature of an existing one is one line: e.g.
//! `gemm_f16_like!(gemm_f16_tc)`.

use anyhow::Result;
use phobos::artifact::KernelArtifact;
use phobos::{Device, Tensor, f16};
use phobos_examples::bounds::attention::{HEAD_DIM, Problem};
use phobos_examples::bounds::gla::{DIM, GlaInputs, relative_bound};
use phobos_examples::bounds::{gemm, norms};
use phobos_examples::check::{F32_UNIT_ROUNDOFF, to_f64};
use phobos_examples::kernels;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;

use crate::case::{Buffer, Case, Output, tune_extreme};

const U: f64 = F32_UNIT_ROUNDOFF;

/// A kernel to check: its artifact and how to build its case with the host
/// back end as the oracle.
pub struct Entry {
    pub artifact: &'static KernelArtifact,
    pub build: fn(&'static KernelArtifact) -> Result<Case>,
    /// Timed at M = N = K = 4096 against `torch.matmul` (the kernel must
    /// take A[M, K], B[K, N] and write C[M, N]).
    pub matmul_bench: bool,
}

macro_rules! gemm_f32_like {
    ($kernel:ident) => {
        Entry {
            artifact: &kernels::$kernel::ARTIFACT,
            build: |artifact| gemm_f32_case(artifact, kernels::$kernel::launch),
            matmul_bench: true,
        }
    };
}

macro_rules! gemm_f16_like {
    ($kernel:ident) => {
        Entry {
            artifact: &kernels::$kernel::ARTIFACT,
            build: |artifact| gemm_f16_case(artifact, kernels::$kernel::launch),
            matmul_bench: true,
        }
    };
}

macro_rules! attention_like {
    ($kernel:ident, $elem:ty) => {
        Entry {
            artifact: &kernels::$kernel::ARTIFACT,
            build: |artifact| attention_case::<$elem>(artifact, kernels::$kernel::launch),
            matmul_bench: false,
        }
    };
}

pub fn entries() -> Vec<Entry> {
    let mut entries = vec![
        Entry {
            artifact: &kernels::saxpy::ARTIFACT,
            build: saxpy_case,
            matmul_bench: false,
        },
        gemm_f32_like!(gemm_f32),
        gemm_f16_like!(gemm_f16),
        gemm_f16_like!(gemm_f16_tc),
        gemm_f16_like!(gemm_f16_tc_pipe),
        gemm_f32_like!(gemm_f32_pipe),
        gemm_f16_like!(gemm_f16_pipe),
        Entry {
            artifact: &kernels::softmax::ARTIFACT,
            build: softmax_case,
            matmul_bench: false,
        },
        Entry {
            artifact: &kernels::layernorm::ARTIFACT,
            build: layernorm_case,
            matmul_bench: false,
        },
        Entry {
            artifact: &kernels::rmsnorm::ARTIFACT,
            build: rmsnorm_case,
            matmul_bench: false,
        },
        attention_like!(flash_attn_f32, f32),
        attention_like!(flash_attn_f16, f16),
        attention_like!(flash_attn_f16_tc, f16),
        Entry {
            artifact: &kernels::gla_chunk::ARTIFACT,
            build: gla_case,
            matmul_bench: false,
        },
    ];
    entries.extend(crate::edge::entries());
    entries
}

fn saxpy_case(_: &'static KernelArtifact) -> Result<Case> {
    let len = 100_003;
    let alpha = 1.5f32;
    let mut rng = SplitMix64::new(1);
    let (xs, ys) = (rng.vec(len, -1.0, 1.0), rng.vec(len, -1.0, 1.0));
    let device = Device::host();
    let x = device.tensor_from(&xs, [len])?;
    let y = device.tensor_from(&ys, [len])?;
    let mut out = device.full([len], f32::NAN)?;
    let initial = Buffer::of(&out)?;
    kernels::saxpy::launch(&device, &x, &y, &mut out, alpha)?;

    // The host rounds the product and the sum (the proptest checks it bit
    // for bit); a GPU may fuse them into one fma. Either is within
    // u (|a x| + |a x + y|) (1 + u) of exact.
    let exact: Vec<f64> = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| f64::from(alpha) * f64::from(x) + f64::from(y))
        .collect();
    let bounds: Vec<f64> = xs
        .iter()
        .zip(&exact)
        .map(|(&x, &e)| U * (1.0 + U) * ((f64::from(alpha) * f64::from(x)).abs() + e.abs()))
        .collect();
    let got = out.to_vec()?;
    anyhow::ensure!(
        got == reference::saxpy::saxpy(alpha, &xs, &ys),
        "the host saxpy is not bit-equal to the reference"
    );
    Ok(Case {
        dims: vec![("N", len as i64)],
        scalars: vec![("alpha", f64::from(alpha))],
        tensors: vec![
            ("x", Buffer::of(&x)?),
            ("y", Buffer::of(&y)?),
            ("out", initial),
        ],
        outputs: vec![Output::of_tensor(
            "out",
            &out,
            &exact,
            &bounds,
            "tests/kernels/saxpy.rs (exact on the host) widened to allow fma: u(|ax|+|ax+y|)(1+u)",
        )?],
    })
}

type GemmF32Launch =
    fn(&Device, &Tensor<f32>, &Tensor<f32>, &mut Tensor<f32>, f32, f32) -> phobos::Result<()>;

fn gemm_f32_case(_: &'static KernelArtifact, launch: GemmF32Launch) -> Result<Case> {
    let (m, n, k) = (333, 517, 129);
    let (alpha, beta) = (1.5f32, -0.5f32);
    let mut rng = SplitMix64::new(2);
    let (a, b, c) = gemm::f32_inputs(&mut rng, m, n, k);
    let device = Device::host();
    let ta = device.tensor_from(&a, [m, k])?;
    let tb = device.tensor_from(&b, [k, n])?;
    let mut tc = device.tensor_from(&c, [m, n])?;
    let initial = Buffer::of(&tc)?;
    launch(&device, &ta, &tb, &mut tc, alpha, beta)?;

    let exact = to_f64(&reference::gemm::gemm(m, n, k, &a, &b, &c, alpha, beta));
    let bounds = gemm::f32_bounds((m, n, k), &a, &b, &c, alpha, beta, &exact);
    Ok(Case {
        dims: vec![("M", m as i64), ("K", k as i64), ("N", n as i64)],
        scalars: vec![("alpha", f64::from(alpha)), ("beta", f64::from(beta))],
        tensors: vec![
            ("A", Buffer::of(&ta)?),
            ("B", Buffer::of(&tb)?),
            ("C", initial),
        ],
        outputs: vec![Output::of_tensor(
            "C",
            &tc,
            &exact,
            &bounds,
            "tests/kernels/gemm.rs: (K+3) u (|alpha| |A||B| + |beta| |C|) + u |exact|",
        )?],
    })
}

type GemmF16Launch =
    fn(&Device, &Tensor<f16>, &Tensor<f16>, &mut Tensor<f32>) -> phobos::Result<()>;

fn gemm_f16_case(_: &'static KernelArtifact, launch: GemmF16Launch) -> Result<Case> {
    let (m, n, k) = (200, 150, 333);
    let mut rng = SplitMix64::new(3);
    let (a, b) = gemm::f16_inputs(&mut rng, m, n, k);
    let device = Device::host();
    let ta = device.tensor_from(&a, [m, k])?;
    let tb = device.tensor_from(&b, [k, n])?;
    let mut tc = device.full([m, n], f32::NAN)?;
    let initial = Buffer::of(&tc)?;
    launch(&device, &ta, &tb, &mut tc)?;

    let exact = reference::gemm::matmul(m, n, k, &a, &b);
    let bounds = gemm::f16_bounds((m, n, k), &a, &b);
    Ok(Case {
        dims: vec![("M", m as i64), ("K", k as i64), ("N", n as i64)],
        scalars: vec![],
        tensors: vec![
            ("A", Buffer::of(&ta)?),
            ("B", Buffer::of(&tb)?),
            ("C", initial),
        ],
        outputs: vec![Output::of_tensor(
            "C",
            &tc,
            &exact,
            &bounds,
            "tests/kernels/gemm.rs: (K+1) u |A||B| (f16 products are exact in f32)",
        )?],
    })
}

fn softmax_case(artifact: &'static KernelArtifact) -> Result<Case> {
    let (rows, cols) = (37, 3001);
    let mut rng = SplitMix64::new(4);
    let x = rng.vec(rows * cols, -4.0, 4.0);
    let device = Device::host();
    let tx = device.tensor_from(&x, [rows, cols])?;
    let mut ty = device.full([rows, cols], f32::NAN)?;
    let initial = Buffer::of(&ty)?;
    kernels::softmax::launch(&device, &tx, &mut ty)?;

    let exact = to_f64(&reference::softmax::softmax_rows(rows, cols, &x));
    let blocks = cols.div_ceil(tune_extreme(artifact, "BLOCK_C", false)? as usize) as f64;
    let relative = (cols as f64 + 4.0 * blocks + 2.0 + 8.0 + 2.0 + 1.0) * U;
    let bounds: Vec<f64> = exact.iter().map(|e| relative * e.abs()).collect();
    Ok(Case {
        dims: vec![("R", rows as i64), ("C", cols as i64)],
        scalars: vec![],
        tensors: vec![("X", Buffer::of(&tx)?), ("Y", initial)],
        outputs: vec![Output::of_tensor(
            "Y",
            &ty,
            &exact,
            &bounds,
            "tests/kernels/softmax.rs: (C + 4 blocks + 13) u |exact|, blocks at the smallest BLOCK_C",
        )?],
    })
}

fn rmsnorm_case(_: &'static KernelArtifact) -> Result<Case> {
    let (rows, cols) = (19, 4099);
    let eps = 1e-5f32;
    let mut rng = SplitMix64::new(5);
    let (x, w) = norms::rmsnorm_inputs(&mut rng, rows, cols);
    let device = Device::host();
    let tx = device.tensor_from(&x, [rows, cols])?;
    let tw = device.tensor_from(&w, [cols])?;
    let mut ty = device.full([rows, cols], f32::NAN)?;
    let initial = Buffer::of(&ty)?;
    kernels::rmsnorm::launch(&device, &tx, &tw, &mut ty, eps)?;

    let exact = to_f64(&reference::norm::rmsnorm(rows, cols, &x, &w, eps));
    let bounds = norms::rmsnorm_bounds(cols, &exact);
    Ok(Case {
        dims: vec![("R", rows as i64), ("C", cols as i64)],
        scalars: vec![("eps", f64::from(eps))],
        tensors: vec![
            ("X", Buffer::of(&tx)?),
            ("W", Buffer::of(&tw)?),
            ("Y", initial),
        ],
        outputs: vec![Output::of_tensor(
            "Y",
            &ty,
            &exact,
            &bounds,
            "tests/kernels/norms.rs: ((C + 2) / 2 + 5) u |exact|",
        )?],
    })
}

fn layernorm_case(_: &'static KernelArtifact) -> Result<Case> {
    let (rows, cols) = (19, 4099);
    let eps = 1e-5f32;
    let mut rng = SplitMix64::new(6);
    let (x, w, b) = norms::layernorm_inputs(&mut rng, rows, cols);
    let device = Device::host();
    let tx = device.tensor_from(&x, [rows, cols])?;
    let tw = device.tensor_from(&w, [cols])?;
    let tb = device.tensor_from(&b, [cols])?;
    let mut ty = device.full([rows, cols], f32::NAN)?;
    let initial = Buffer::of(&ty)?;
    kernels::layernorm::launch(&device, &tx, &tw, &tb, &mut ty, eps)?;

    let exact = to_f64(&reference::norm::layernorm(rows, cols, &x, &w, &b, eps));
    let bounds = norms::layernorm_bounds((rows, cols), &x, &w, &b, eps, &exact);
    Ok(Case {
        dims: vec![("R", rows as i64), ("C", cols as i64)],
        scalars: vec![("eps", f64::from(eps))],
        tensors: vec![
            ("X", Buffer::of(&tx)?),
            ("W", Buffer::of(&tw)?),
            ("B", Buffer::of(&tb)?),
            ("Y", initial),
        ],
        outputs: vec![Output::of_tensor(
            "Y",
            &ty,
            &exact,
            &bounds,
            "tests/kernels/norms.rs: mean, variance and rstd error propagated per element",
        )?],
    })
}

/// Elements the attention kernels take (f32 or f16), built from f32.
trait AttentionElement: phobos::Element + crate::case::RawElement + Into<f64> {
    fn from_f32(value: f32) -> Self;
    /// Whether the kernel rounds probabilities and output to f16 (the f16
    /// bound of `bounds::attention`).
    const IS_F16: bool;
}

impl AttentionElement for f32 {
    fn from_f32(value: f32) -> Self {
        value
    }
    const IS_F16: bool = false;
}

impl AttentionElement for f16 {
    fn from_f32(value: f32) -> Self {
        f16::from_f32(value)
    }
    const IS_F16: bool = true;
}

type AttentionLaunch<T> =
    fn(&Device, &Tensor<T>, &Tensor<T>, &Tensor<T>, &mut Tensor<T>, f32) -> phobos::Result<()>;

fn attention_case<T: AttentionElement>(
    artifact: &'static KernelArtifact,
    launch: AttentionLaunch<T>,
) -> Result<Case> {
    let (heads, seq_q, seq_k) = (3, 100, 203);
    // Values exactly representable in T, so the f64 reference sees the
    // kernel's inputs.
    let problem = Problem::random(heads, seq_q, seq_k, 7, T::IS_F16);
    let scale = problem.scale;
    let cast = |xs: &[f32]| xs.iter().map(|&x| T::from_f32(x)).collect::<Vec<T>>();
    let device = Device::host();
    let tq = device.tensor_from(&cast(&problem.q), [heads, seq_q, HEAD_DIM])?;
    let tk = device.tensor_from(&cast(&problem.k), [heads, seq_k, HEAD_DIM])?;
    let tv = device.tensor_from(&cast(&problem.v), [heads, seq_k, HEAD_DIM])?;
    let mut to = device.full([heads, seq_q, HEAD_DIM], T::from_f32(f32::NAN))?;
    let initial = Buffer::of(&to)?;
    launch(&device, &tq, &tk, &tv, &mut to, scale)?;

    let exact = problem.reference();
    // The smallest BLOCK_N makes the most rescales, the largest bound.
    let block_n = tune_extreme(artifact, "BLOCK_N", false)? as usize;
    let bounds = if T::IS_F16 {
        problem.f16_bounds(block_n, &exact)
    } else {
        problem.f32_bounds(block_n)
    };
    Ok(Case {
        dims: vec![
            ("H", heads as i64),
            ("S", seq_q as i64),
            ("T", seq_k as i64),
        ],
        scalars: vec![("scale", f64::from(scale))],
        tensors: vec![
            ("Q", Buffer::of(&tq)?),
            ("K", Buffer::of(&tk)?),
            ("V", Buffer::of(&tv)?),
            ("O", initial),
        ],
        outputs: vec![Output::of_tensor(
            "O",
            &to,
            &exact,
            &bounds,
            "tests/kernels/attention.rs: per-row score error propagated, blocks at the smallest BLOCK_N",
        )?],
    })
}

fn gla_case(artifact: &'static KernelArtifact) -> Result<Case> {
    let (heads, steps) = (2, 301);
    let scale = 0.125f32;
    let mut rng = SplitMix64::new(8);
    let inputs = GlaInputs::random(&mut rng, heads, steps);
    let device = Device::host();
    let shape = [heads, steps, DIM];
    let (tq, tk, tv) = (
        device.tensor_from(&inputs.q, shape)?,
        device.tensor_from(&inputs.k, shape)?,
        device.tensor_from(&inputs.v, shape)?,
    );
    let tg = device.tensor_from(&inputs.log_gate, [heads, steps, 1])?;
    let mut to = device.full(shape, f32::NAN)?;
    let initial = Buffer::of(&to)?;
    kernels::gla_chunk::launch(&device, &tq, &tk, &tv, &tg, &mut to, scale)?;

    let (exact, magnitude) = inputs.reference(heads, steps, scale);
    // The largest CHUNK gives the largest bound.
    let relative = relative_bound(steps, tune_extreme(artifact, "CHUNK", true)? as usize);
    let bounds: Vec<f64> = magnitude.iter().map(|m| relative * m).collect();
    Ok(Case {
        dims: vec![("H", heads as i64), ("T", steps as i64)],
        scalars: vec![("scale", f64::from(scale))],
        tensors: vec![
            ("Q", Buffer::of(&tq)?),
            ("K", Buffer::of(&tk)?),
            ("V", Buffer::of(&tv)?),
            ("G", Buffer::of(&tg)?),
            ("O", initial),
        ],
        outputs: vec![Output::of_tensor(
            "O",
            &to,
            &exact,
            &bounds,
            "tests/kernels/gla.rs: (T + 4 CHUNK + 160) u + 3 decay errors, relative to |terms|, CHUNK at its largest",
        )?],
    })
}
