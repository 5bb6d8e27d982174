//! Quantized matmul on the host with ggml's numerics: the LLM engine calls
//! this for every weight matmul.
//!
//! # API
//!
//! - [`QMatrixRef`]: a weight matrix in ggml layout (`rows` output features,
//!   each a row of `cols` elements as whole blocks of `ty`), borrowing its
//!   bytes (e.g. from the GGUF mmap).
//! - [`matmul`]`(w, x, m_rows, out)`: `out[m*rows + n] = sum_k x[m*cols+k] *
//!   W[n, k]`. Quantizes `x` once to the format's partner type, then runs
//!   the integer kernels. [`matmul_threaded`] is the same on the host pool
//!   (`crate::pool`, `PHOBOS_THREADS`).
//! - [`quantize_activations`] + [`matmul_quantized`] /
//!   [`matmul_quantized_threaded`]: quantize `x` once and reuse it for
//!   several weights (q/k/v, gate/up) that share `cols` and partner type.
//! - [`with_shared_activations`]`(x, f)`: inside `f`, every
//!   [`qmatmul_host`] launch whose activations are `x` itself quantizes
//!   them once per partner type (the engine's q/k/v, gate/up and the
//!   experts of one token go through their kernel handles this way).
//! - [`vec_dot_type`]: the partner type of a weight format.
//! - [`qmatmul_host`]: the same behind a kernel's typed handle, as the
//!   hand-written host path of `@host_impl(qmatmul_host)` kernels (the
//!   engine's, in phobos-models `ops/matmul`).
//! - [`kernel_level`]: the kernels that run (detected once, capped by
//!   `PHOBOS_QMATMUL_LEVEL`); [`matmul_quantized_at`] runs one level
//!   explicitly (benchmarks).
//!
//! # Numerics (what "ggml's numerics" means here)
//!
//! The reference is the llama.cpp build this project measures against: ggml
//! compiled for AVX2 + FMA + F16C (`-mavx2 -mfma -mf16c`, GCC, `-std=gnu11`
//! so `a += b * c` contracts to one FMA), no AVX-512, llamafile sgemm on,
//! *weight repacking off* (llama.cpp's `--no-repack`, and every
//! `test-backend-ops` run). With repacking on, llama.cpp runs different
//! kernels for Q4_0/Q4_K/Q2_K/Q5_K/Q6_K/Q8_0/IQ4_NL whose sums are ordered
//! differently; those are not reproduced.
//!
//! - Activations: Q8_0 and Q8_1 use ggml's x86 quantizer (`d = amax/127`,
//!   multiplier `127/amax`, round half to even), which differs from the
//!   reference C quantizer in rare ties; Q8_K uses the reference quantizer
//!   (x86 ggml calls it too), i.e. `phobos_quant::quantize(Q8_K, ..)`.
//! - Per block, the integer products are summed into eight i32 lanes; lane
//!   `l` holds the elements at positions `4l..4l+4` of every 32-element
//!   chunk (the `maddubs`/`madd` grouping). Each lane is converted to f32
//!   and folded into its own f32 accumulator with one FMA per block
//!   (`acc[l] = fma(d_w * d_x, lane[l], acc[l])`). The row result is the
//!   AVX horizontal sum `((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7))`.
//! - Per-format extras (mins and offsets) follow ggml's AVX2 `vec_dot`
//!   exactly; see `portable.rs`, which is the executable statement of the
//!   numerics. IQ4_NL: one accumulator for `m_rows >= 2` (llamafile
//!   sgemm), two interleaved accumulators plus a scalar tail for
//!   `m_rows == 1` (ggml's `vec_dot`). Q8_0/Q4_0/Q5_0 are the same in both.
//! - **Batch order.** The 256-element formats (Q2_K..Q6_K, IQ4_XS) follow
//!   the kernels the pinned ggml runs for prompt batches instead of
//!   `vec_dot` (`ggml-cpu/tiled`, which ggml takes from 8 rows of `src1`,
//!   or at any count with `GGML_CPU_TILED_MM_FORCE=1`): per block the exact
//!   integer sums `s1 = sum_g sc_g * sum_{i in g} w_i x_i` (signed levels)
//!   and, for Q2_K/Q4_K/Q5_K, `s2 = sum_g mn_g * bsum_g`; then
//!   `t = d * f32(s1)`, `t = fma(-dmin, f32(s2), t)`, `acc = fma(t, d_x,
//!   acc)`, blocks in order from `acc = 0` (`portable::batch_row_dot`).
//!   Phobos uses this order at every row count, decode included, so a
//!   row's result never depends on its batch (ggml's does: below 8 rows it
//!   runs `vec_dot`, whose last bits differ). The order lets a kernel sum
//!   a block across all its lanes (weight rows in lanes,
//!   `x86/k_batch_512.rs`), which `vec_dot`'s per-lane scaling does not.
//!   ggml's AVX-512 build writes the last step as a multiply and an add,
//!   which GCC contracts into one FMA (its default `-ffp-contract=fast`):
//!   `tests_ggml` matched both builds bit for bit on a Zen 4.
//! - F32/F16/BF16 weights take f32 activations and are not bit-exact with
//!   ggml (whose order depends on its sgemm tiles): eight f32 lanes of FMAs
//!   over the row, then the same horizontal sum.
//!
//! The AMX level (opt-in, `x86/amx.rs`) keeps these numerics: its tile
//! products are the per-lane integer sums, never whole-block sums.
//!
//! The SIMD kernels (AVX2, AVX-512 VNNI) are bit-exact with the portable
//! path; which one runs is picked once at run time. They differ from ggml
//! only in how they get the same integers: the AVX-512 kernels put two
//! (weight row, activation row) pairs, or two chunks of a K-quant block,
//! in one 512-bit register, and multiply 32-element weights as offset
//! binary (`level + 2^s`) seeded with `-2^s` times the activation's lane
//! sums (`QActivations` computes them once per launch). Integer sums are
//! exact, so the lanes, and every float operation after them, are ggml's.
//! In the batch order the AVX2 tile sums its lanes' exact integers into
//! `s1` and the AVX-512 tile takes 16 weight rows per vector instead;
//! Q4_K/Q5_K/Q6_K decode keeps only block totals, four weight rows at a
//! time.

mod activations;
mod error;
mod float_weights;
mod handle;
mod kernels;
mod portable;
mod schedule;
mod shared;
mod shares;
#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_amx;
#[cfg(test)]
mod tests_gemma;
#[cfg(test)]
mod tests_ggml;
#[cfg(all(test, target_arch = "x86_64"))]
mod tests_k_tile;

pub use activations::{
    QActivations, quantize_activations, quantize_activations_threaded, vec_dot_type,
};
pub use error::QMatmulError;
pub use handle::{has_integer_kernel, qmatmul_host};
pub use kernels::{AMX_MIN_ROWS, KernelLevel, kernel_level};
pub use schedule::{
    matmul, matmul_quantized, matmul_quantized_at, matmul_quantized_threaded, matmul_threaded,
};
pub use shared::with_shared_activations;

use phobos_quant::GgmlType;

/// A quantized weight matrix in ggml layout: `rows` output features, each a
/// row of `cols` elements stored as whole blocks of `ty` (bytes borrowed,
/// e.g. from the mmap).
#[derive(Debug, Clone, Copy)]
pub struct QMatrixRef<'a> {
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    pub data: &'a [u8],
}

impl QMatrixRef<'_> {
    /// Bytes of one row, after checking `cols` and `data` against `ty`.
    pub fn row_bytes(&self) -> Result<usize, QMatmulError> {
        let info = self.ty.info();
        if !self.cols.is_multiple_of(info.block_len) {
            return Err(QMatmulError::ColsNotBlockMultiple {
                ty: self.ty,
                cols: self.cols,
                block_len: info.block_len,
            });
        }
        let row_bytes = self.cols / info.block_len * info.block_bytes;
        let expected = row_bytes.checked_mul(self.rows);
        if expected != Some(self.data.len()) {
            return Err(QMatmulError::WeightBytes {
                ty: self.ty,
                rows: self.rows,
                cols: self.cols,
                expected: expected.unwrap_or(usize::MAX),
                found: self.data.len(),
            });
        }
        Ok(row_bytes)
    }
}
