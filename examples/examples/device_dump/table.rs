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
use phobos_examples::check::{F16_UNIT_ROUNDOFF, F32_UNIT_ROUNDOFF, to_f64};
use phobos_examples::kernels;
use phobos_examples::random::SplitMix64;
use phobos_examples::reference;
use phobos_examples::reference::gla::{GlaHead, gla_recurrent};

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
    vec![
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
    ]
}

fn abs(values: &[f32]) -> Vec<f32> {
    values.iter().map(|v| v.abs()).collect()
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
        outputs: vec![Output::checked(
            "out",
            Buffer::of(&out)?,
            &to_f64(&got),
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
    let (a, b, c) = (
        rng.vec(m * k, -1.0, 1.0),
        rng.vec(k * n, -1.0, 1.0),
        rng.vec(m * n, -1.0, 1.0),
    );
    let device = Device::host();
    let ta = device.tensor_from(&a, [m, k])?;
    let tb = device.tensor_from(&b, [k, n])?;
    let mut tc = device.tensor_from(&c, [m, n])?;
    let initial = Buffer::of(&tc)?;
    launch(&device, &ta, &tb, &mut tc, alpha, beta)?;

    let exact = to_f64(&reference::gemm::gemm(m, n, k, &a, &b, &c, alpha, beta));
    let magnitude = reference::gemm::gemm(
        m,
        n,
        k,
        &abs(&a),
        &abs(&b),
        &abs(&c),
        alpha.abs(),
        beta.abs(),
    );
    let bounds: Vec<f64> = magnitude
        .iter()
        .zip(&exact)
        .map(|(&mag, &e)| (k as f64 + 3.0) * U * f64::from(mag) + U * e.abs())
        .collect();
    Ok(Case {
        dims: vec![("M", m as i64), ("K", k as i64), ("N", n as i64)],
        scalars: vec![("alpha", f64::from(alpha)), ("beta", f64::from(beta))],
        tensors: vec![
            ("A", Buffer::of(&ta)?),
            ("B", Buffer::of(&tb)?),
            ("C", initial),
        ],
        outputs: vec![Output::checked(
            "C",
            Buffer::of(&tc)?,
            &to_f64(&tc.to_vec()?),
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
    let a: Vec<f16> = rng
        .vec(m * k, -1.0, 1.0)
        .into_iter()
        .map(f16::from_f32)
        .collect();
    let b: Vec<f16> = rng
        .vec(k * n, -1.0, 1.0)
        .into_iter()
        .map(f16::from_f32)
        .collect();
    let device = Device::host();
    let ta = device.tensor_from(&a, [m, k])?;
    let tb = device.tensor_from(&b, [k, n])?;
    let mut tc = device.full([m, n], f32::NAN)?;
    let initial = Buffer::of(&tc)?;
    launch(&device, &ta, &tb, &mut tc)?;

    let exact = reference::gemm::matmul(m, n, k, &a, &b);
    let abs_a: Vec<f64> = a.iter().map(|v| f64::from(*v).abs()).collect();
    let abs_b: Vec<f64> = b.iter().map(|v| f64::from(*v).abs()).collect();
    let bounds: Vec<f64> = reference::gemm::matmul(m, n, k, &abs_a, &abs_b)
        .iter()
        .map(|mag| (k as f64 + 1.0) * U * mag)
        .collect();
    Ok(Case {
        dims: vec![("M", m as i64), ("K", k as i64), ("N", n as i64)],
        scalars: vec![],
        tensors: vec![
            ("A", Buffer::of(&ta)?),
            ("B", Buffer::of(&tb)?),
            ("C", initial),
        ],
        outputs: vec![Output::checked(
            "C",
            Buffer::of(&tc)?,
            &to_f64(&tc.to_vec()?),
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
        outputs: vec![Output::checked(
            "Y",
            Buffer::of(&ty)?,
            &to_f64(&ty.to_vec()?),
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
    let (x, w) = (rng.vec(rows * cols, -3.0, 3.0), rng.vec(cols, -2.0, 2.0));
    let device = Device::host();
    let tx = device.tensor_from(&x, [rows, cols])?;
    let tw = device.tensor_from(&w, [cols])?;
    let mut ty = device.full([rows, cols], f32::NAN)?;
    let initial = Buffer::of(&ty)?;
    kernels::rmsnorm::launch(&device, &tx, &tw, &mut ty, eps)?;

    let exact = to_f64(&reference::norm::rmsnorm(rows, cols, &x, &w, eps));
    let relative = ((cols as f64 + 2.0) / 2.0 + 4.0) * U + U;
    let bounds: Vec<f64> = exact.iter().map(|e| relative * e.abs()).collect();
    Ok(Case {
        dims: vec![("R", rows as i64), ("C", cols as i64)],
        scalars: vec![("eps", f64::from(eps))],
        tensors: vec![
            ("X", Buffer::of(&tx)?),
            ("W", Buffer::of(&tw)?),
            ("Y", initial),
        ],
        outputs: vec![Output::checked(
            "Y",
            Buffer::of(&ty)?,
            &to_f64(&ty.to_vec()?),
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
    let x = rng.vec(rows * cols, -3.0, 3.0);
    let (w, b) = (rng.vec(cols, -2.0, 2.0), rng.vec(cols, -1.0, 1.0));
    let device = Device::host();
    let tx = device.tensor_from(&x, [rows, cols])?;
    let tw = device.tensor_from(&w, [cols])?;
    let tb = device.tensor_from(&b, [cols])?;
    let mut ty = device.full([rows, cols], f32::NAN)?;
    let initial = Buffer::of(&ty)?;
    kernels::layernorm::launch(&device, &tx, &tw, &tb, &mut ty, eps)?;

    let exact = to_f64(&reference::norm::layernorm(rows, cols, &x, &w, &b, eps));
    let c = cols as f64;
    let row_stats: Vec<(f64, f64, f64, f64)> = (0..rows)
        .map(|row| {
            let line: Vec<f64> = x[row * cols..(row + 1) * cols]
                .iter()
                .map(|&v| f64::from(v))
                .collect();
            let mean = line.iter().sum::<f64>() / c;
            let mean_abs = line.iter().map(|v| v.abs()).sum::<f64>() / c;
            let mean_abs_dev = line.iter().map(|v| (v - mean).abs()).sum::<f64>() / c;
            let var = line.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / c + f64::from(eps);
            (mean, mean_abs, mean_abs_dev, var)
        })
        .collect();
    let bounds: Vec<f64> = (0..rows * cols)
        .map(|i| {
            let (row, col) = (i / cols, i % cols);
            let (mean, mean_abs, mean_abs_dev, var) = row_stats[row];
            let rstd = 1.0 / var.sqrt();
            let dm = (c + 2.0) * U * mean_abs;
            let dev = (f64::from(x[i]) - mean).abs();
            let rel_rstd = ((c + 4.0) * U + 2.0 * dm * mean_abs_dev / var) / 2.0 + 2.0 * U;
            let wc = f64::from(w[col]).abs();
            (dm + U * dev) * rstd * wc
                + dev * rstd * wc * rel_rstd
                + 4.0 * U * (exact[i].abs() + f64::from(b[col]).abs())
                + U * exact[i].abs()
        })
        .collect();
    Ok(Case {
        dims: vec![("R", rows as i64), ("C", cols as i64)],
        scalars: vec![("eps", f64::from(eps))],
        tensors: vec![
            ("X", Buffer::of(&tx)?),
            ("W", Buffer::of(&tw)?),
            ("B", Buffer::of(&tb)?),
            ("Y", initial),
        ],
        outputs: vec![Output::checked(
            "Y",
            Buffer::of(&ty)?,
            &to_f64(&ty.to_vec()?),
            &exact,
            &bounds,
            "tests/kernels/norms.rs: mean, variance and rstd error propagated per element",
        )?],
    })
}

/// Elements the attention kernels take (f32 or f16), built from f32.
trait AttentionElement: phobos::Element + crate::case::RawElement + Into<f64> {
    fn from_f32(value: f32) -> Self;
    /// Rounding of the probabilities and the output, relative.
    const EXTRA_ROUNDOFF: f64;
}

impl AttentionElement for f32 {
    fn from_f32(value: f32) -> Self {
        value
    }
    const EXTRA_ROUNDOFF: f64 = 0.0;
}

impl AttentionElement for f16 {
    fn from_f32(value: f32) -> Self {
        f16::from_f32(value)
    }
    const EXTRA_ROUNDOFF: f64 = F16_UNIT_ROUNDOFF;
}

type AttentionLaunch<T> =
    fn(&Device, &Tensor<T>, &Tensor<T>, &Tensor<T>, &mut Tensor<T>, f32) -> phobos::Result<()>;

fn attention_case<T: AttentionElement>(
    artifact: &'static KernelArtifact,
    launch: AttentionLaunch<T>,
) -> Result<Case> {
    const DIM: usize = 64;
    let (heads, seq_q, seq_k) = (3, 100, 203);
    let scale = 1.0 / (DIM as f32).sqrt();
    let mut rng = SplitMix64::new(7);
    // Values exactly representable in T, so the f64 reference sees the
    // kernel's inputs.
    let mut values = |len: usize| -> Vec<f32> {
        rng.vec(len, -1.0, 1.0)
            .into_iter()
            .map(|x| T::from_f32(x).into() as f32)
            .collect()
    };
    let (q, k, v) = (
        values(heads * seq_q * DIM),
        values(heads * seq_k * DIM),
        values(heads * seq_k * DIM),
    );
    let cast = |xs: &[f32]| xs.iter().map(|&x| T::from_f32(x)).collect::<Vec<T>>();
    let device = Device::host();
    let tq = device.tensor_from(&cast(&q), [heads, seq_q, DIM])?;
    let tk = device.tensor_from(&cast(&k), [heads, seq_k, DIM])?;
    let tv = device.tensor_from(&cast(&v), [heads, seq_k, DIM])?;
    let mut to = device.full([heads, seq_q, DIM], T::from_f32(f32::NAN))?;
    let initial = Buffer::of(&to)?;
    launch(&device, &tq, &tk, &tv, &mut to, scale)?;

    let (qs, ks) = (seq_q * DIM, seq_k * DIM);
    let exact: Vec<f64> = (0..heads)
        .flat_map(|h| {
            reference::attention::attention(
                seq_q,
                seq_k,
                DIM,
                DIM,
                &q[h * qs..(h + 1) * qs],
                &k[h * ks..(h + 1) * ks],
                &v[h * ks..(h + 1) * ks],
                scale,
            )
        })
        .collect();
    // The smallest BLOCK_N makes the most rescales, the largest bound.
    let blocks = seq_k.div_ceil(tune_extreme(artifact, "BLOCK_N", false)? as usize) as f64;
    let max_v = v.iter().fold(0.0f64, |m, &x| m.max(f64::from(x).abs()));
    let mut bounds = Vec::with_capacity(exact.len());
    for h in 0..heads {
        for i in 0..seq_q {
            let q_row = &q[(h * seq_q + i) * DIM..][..DIM];
            let largest = (0..seq_k)
                .map(|j| {
                    let k_row = &k[(h * seq_k + j) * DIM..][..DIM];
                    q_row
                        .iter()
                        .zip(k_row)
                        .map(|(a, b)| f64::from(a * b).abs())
                        .sum::<f64>()
                })
                .fold(0.0f64, f64::max);
            let s = f64::from(scale) * largest;
            let ds = 66.0 * U * s;
            let bound =
                max_v * (4.0 * ds + (2.0 * seq_k as f64 + 4.0 * blocks + 4.0 * s + 16.0) * U);
            for c in 0..DIM {
                let e: f64 = exact[(h * seq_q + i) * DIM + c];
                bounds.push(bound + T::EXTRA_ROUNDOFF * (max_v + e.abs()));
            }
        }
    }
    let got: Vec<f64> = to.to_vec()?.into_iter().map(Into::into).collect();
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
        outputs: vec![Output::checked(
            "O",
            Buffer::of(&to)?,
            &got,
            &exact,
            &bounds,
            "tests/kernels/attention.rs: per-row score error propagated, blocks at the smallest BLOCK_N",
        )?],
    })
}

fn gla_case(artifact: &'static KernelArtifact) -> Result<Case> {
    const DIM: usize = 64;
    const GATE_MAX: f32 = 0.3;
    let (heads, steps) = (2, 301);
    let scale = 0.125f32;
    let mut rng = SplitMix64::new(8);
    let q = rng.vec(heads * steps * DIM, -1.0, 1.0);
    let k = rng.vec(heads * steps * DIM, -1.0, 1.0);
    let v = rng.vec(heads * steps * DIM, -1.0, 1.0);
    let g = rng.vec(heads * steps, -GATE_MAX, 0.0);
    let device = Device::host();
    let shape = [heads, steps, DIM];
    let (tq, tk, tv) = (
        device.tensor_from(&q, shape)?,
        device.tensor_from(&k, shape)?,
        device.tensor_from(&v, shape)?,
    );
    let tg = device.tensor_from(&g, [heads, steps, 1])?;
    let mut to = device.full(shape, f32::NAN)?;
    let initial = Buffer::of(&to)?;
    kernels::gla_chunk::launch(&device, &tq, &tk, &tv, &tg, &mut to, scale)?;

    let per_head = steps * DIM;
    let (mut exact, mut magnitude) = (Vec::new(), Vec::new());
    for h in 0..heads {
        let head = GlaHead {
            steps,
            key_dim: DIM,
            value_dim: DIM,
            q: &q[h * per_head..(h + 1) * per_head],
            k: &k[h * per_head..(h + 1) * per_head],
            v: &v[h * per_head..(h + 1) * per_head],
            log_gate: &g[h * steps..(h + 1) * steps],
        };
        exact.extend(gla_recurrent(&head, scale, false));
        magnitude.extend(gla_recurrent(&head, scale, true));
    }
    // The largest CHUNK gives the largest bound.
    let chunk = tune_extreme(artifact, "CHUNK", true)? as f64;
    let gate = f64::from(GATE_MAX);
    let decay_error = (2.0 * chunk * chunk * gate + chunk * gate + 2.0) * U;
    let relative = (steps as f64 + 4.0 * chunk + 160.0) * U + 3.0 * decay_error;
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
        outputs: vec![Output::checked(
            "O",
            Buffer::of(&to)?,
            &to_f64(&to.to_vec()?),
            &exact,
            &bounds,
            "tests/kernels/gla.rs: (T + 4 CHUNK + 160) u + 3 decay errors, relative to |terms|, CHUNK at its largest",
        )?],
    })
}
