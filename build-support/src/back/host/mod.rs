//! The host back end: Rust source for a kernel, compiled by rustc inside the
//! user's crate and run on the CPU over the host tile library
//! (`phobos_rt::host`, reached as `::phobos::__private::host`).
//!
//! [`generate`] turns a checked [`ir::Module`](crate::ir::Module) into one
//! Rust module per kernel holding the kernel's definition as data (name,
//! source hash, parameters, tune space, grid rule), its `Config`, the typed
//! launchers `launch` / `launch_with`, the host implementation that runs
//! every program of the grid in parallel, and `ARTIFACT` ([`artifact`]):
//! the embedded PTX variants and what the GPU runtime needs to launch them.
//!
//! Within a program, rank-0 values are plain Rust scalars and everything
//! else is a `Tile<T>`. The program body is emitted once per config (up to
//! [`launcher::MAX_SPECIALIZED_CONFIGS`]) with the tune parameters as
//! constants, so rustc folds tile dims; `launch_with` picks the body with
//! one `match` per launch. That launch body is emitted once per SIMD
//! level (`simd_bodies`: AVX-512 and AVX2 under `#[target_feature]`, and
//! a portable one; `PHOBOS_HOST_SIMD` can keep just one), and
//! `launch_with` calls the one `host::simd_level()` picks. A tree of
//! elementwise ops becomes one loop ([`fuse`]), written as a `for` loop in
//! the body so it is compiled for the body's level. Loads that a fused
//! loop or a reduction reads go through `host::load_in_place` and read
//! the tensor where it lies when they can ([`in_place`]). Stores into
//! program-owned tensors ([`ownership`]) are plain. Every
//! path in the output goes through `::phobos::__private`, which the facade
//! crate and phobos-rt (via `extern crate self as phobos`) both provide.

pub mod artifact;
mod cuda_launch;
mod expr;
mod fuse;
mod fused_reduce;
mod fused_store;
mod grid;
mod in_place;
mod k_loop;
mod launcher;
mod names;
mod ownership;
mod quant;
mod simd_bodies;
mod stmt;
mod tile_slice;

#[cfg(test)]
mod tests;

use std::cell::{Cell, RefCell};

use proc_macro2::TokenStream;

use crate::ir::{Expr, Kernel, Local, LocalId, Module, Stmt};
use crate::span::Span;

pub use artifact::{EmbeddedPtx, EmbeddedVariant, PrunedVariant};
pub use launcher::source_hash;
pub use simd_bodies::{AVX2_FEATURES, AVX512_FEATURES, HOST_SIMD_ENV, HostBodies};

/// Something the host back end cannot generate, at a span of the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenError {
    pub span: Span,
    pub message: String,
}

impl GenError {
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Self {
            span,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for GenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GenError {}

/// One module per kernel of `module`. `source_text` is the kernel source as
/// written (hashed into each kernel's definition, so caches keyed by it
/// miss when the source changes). Errors are collected for every kernel.
pub fn generate(module: &Module, source_text: &str) -> Result<TokenStream, Vec<GenError>> {
    generate_with_ptx(module, source_text, |_| None)
}

/// [`generate`], with each kernel's `ARTIFACT` carrying the PTX that
/// `ptx_for(kernel)` returns (`None`: built without PTX).
pub fn generate_with_ptx(
    module: &Module,
    source_text: &str,
    ptx_for: impl FnMut(&Kernel) -> Option<EmbeddedPtx>,
) -> Result<TokenStream, Vec<GenError>> {
    generate_with(module, source_text, HostBodies::All, ptx_for, |_| {
        Vec::new()
    })
}

/// [`generate_with_ptx`], with the host bodies `bodies` keeps
/// (`PHOBOS_HOST_SIMD`) and each kernel's `TUNE_TABLE` holding the lines
/// `tune_table_for(kernel)` returns (its entries of an embedded tune table).
pub fn generate_with(
    module: &Module,
    source_text: &str,
    bodies: HostBodies,
    mut ptx_for: impl FnMut(&Kernel) -> Option<EmbeddedPtx>,
    mut tune_table_for: impl FnMut(&Kernel) -> Vec<String>,
) -> Result<TokenStream, Vec<GenError>> {
    let hash = source_hash(source_text);
    let mut out = TokenStream::new();
    let mut errors = Vec::new();
    for kernel in &module.kernels {
        let ptx = ptx_for(kernel);
        let artifact = artifact::artifact_static(kernel, hash, ptx.as_ref());
        let tune_lines = tune_table_for(kernel);
        match launcher::kernel_module(kernel, hash, artifact, &tune_lines, bodies) {
            Ok(tokens) => out.extend(tokens),
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Generation state for one kernel.
pub(crate) struct Generator<'k> {
    kernel: &'k Kernel,
    /// Set when a program slices a local tile, so the module gets the helper.
    uses_tile_slice: Cell<bool>,
    /// While a fused loop body is generated: the code of each of its leaves
    /// (by node address), which `scalar` emits instead of the node.
    overrides: RefCell<Vec<(*const Expr, TokenStream)>>,
    /// Numbers the names of fused leaves, unique within the kernel.
    fused_ids: Cell<usize>,
    /// `let` locals bound to a `host::LoadedTile` (a tensor load that may
    /// read the tensor in place) instead of a `Tile` ([`in_place`]).
    in_place_locals: RefCell<Vec<LocalId>>,
    /// The kernel has a `prefetch` statement: each program keeps a
    /// `host::Prefetcher` named `__prefetch`, and loops over tiles pump it.
    prefetches: bool,
}

impl<'k> Generator<'k> {
    fn new(kernel: &'k Kernel) -> Self {
        Self {
            kernel,
            uses_tile_slice: Cell::new(false),
            overrides: RefCell::new(Vec::new()),
            fused_ids: Cell::new(0),
            in_place_locals: RefCell::new(Vec::new()),
            prefetches: has_prefetch(&kernel.body),
        }
    }

    fn next_fused_id(&self) -> usize {
        let id = self.fused_ids.get();
        self.fused_ids.set(id + 1);
        id
    }

    fn local(&self, id: LocalId, at: &Expr) -> Result<&'k Local, GenError> {
        self.kernel
            .local(id)
            .ok_or_else(|| GenError::new(at.span, format!("internal: unknown local {}", id.0)))
    }

    fn local_by_id(&self, id: LocalId, at: &Stmt) -> Result<&'k Local, GenError> {
        self.kernel
            .local(id)
            .ok_or_else(|| GenError::new(at.span, format!("internal: unknown local {}", id.0)))
    }
}

fn has_prefetch(body: &[crate::ir::Stmt]) -> bool {
    let mut found = false;
    crate::ir::visit::stmts(body, &mut |s| {
        found |= matches!(s.kind, crate::ir::StmtKind::Prefetch { .. });
    });
    found
}
