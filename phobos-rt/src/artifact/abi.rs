//! The kernel ABI of the PTX entry point, as data.
//!
//! Arguments, in order (phobos-build's `back::mlir::emit` is the authority):
//! 1. each parameter in declaration order: a tensor is one global pointer
//!    (`.u64`) to its first element; a scalar is passed by value (`bool` as
//!    one byte, `f16`/`bf16` as 16 bits);
//! 2. each symbolic dim in [`KernelArtifact::dims`](super::KernelArtifact)
//!    order, as `i32`;
//! 3. for each tensor parameter in declaration order, one stride per dim, in
//!    elements, as an integer of the variant's `index_bits`.
//!
//! Grid = the `@grid` rule; block = `(threads, 1, 1)`; static shared memory only.

/// One kernel parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbiParam {
    pub name: &'static str,
    pub kind: AbiParamKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbiParamKind {
    /// A tensor, passed as a global pointer to its first element; `dims`
    /// are symbolic names or decimal literals. (Not named `Tensor`, which
    /// would make rustc print `phobos::Tensor` in users' type errors.)
    Pointer {
        /// Element type as written in the kernel language (`f32`, `bf16`, ...).
        elem: &'static str,
        dims: &'static [&'static str],
        /// Written by the kernel (launched with `&mut Tensor`).
        written: bool,
    },
    /// A scalar, passed by value.
    Value { dtype: &'static str },
}

impl AbiParam {
    /// Rank of a tensor parameter; 0 for a scalar.
    pub fn rank(&self) -> usize {
        match self.kind {
            AbiParamKind::Pointer { dims, .. } => dims.len(),
            AbiParamKind::Value { .. } => 0,
        }
    }
}
