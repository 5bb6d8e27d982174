//! Typed tile IR -> MLIR text for one (kernel, config, target).
//!
//! # Execution model (SIMT path)
//!
//! One program of the launch grid is one CTA of `threads` threads (from
//! `@launch`, else the largest tile rounded up to a power of two, clamped to
//! 32..=256). Tiles are spread over the threads cyclically (see
//! [`plan`]): a statement that produces a tile runs a loop over the calling
//! thread's elements and computes each one from the expression tree
//! ("pointwise evaluation"). Scalars are computed redundantly by every
//! thread, so every branch condition is uniform and barriers inside `if`,
//! `for` and `while` bodies are safe.
//!
//! Values that other threads need (shared tile locals, dot operands,
//! reductions read across a broadcast) are written to shared memory between
//! two barriers. Out-of-bounds tensor elements are never touched: loads are
//! guarded and yield `other` (default 0), stores and atomics are skipped.
//!
//! # Tensor cores (`@tensorcore`)
//!
//! In a `@tensorcore` kernel every rank-2 `dot`/`dot_t` runs on
//! `mma.sync` through the `nvgpu` dialect ([`mma`]): its operands are
//! staged in shared memory as on the SIMT path (masked loads already put
//! zeros outside the tensors, so ragged edges contribute nothing), each
//! warp loads A and B fragments with `nvgpu.ldmatrix` (B of `dot` with
//! `transpose`, B of `dot_t` without) and accumulates in f32. The result
//! is never staged: every tile whose extents equal a contraction's
//! `[M, N]` is distributed in the mma C-fragment layout instead of
//! cyclically (per warp a run of 16x8 blocks, each lane holding 4 f32; the
//! derivation is in [`fragment`]), so the accumulator, the elementwise
//! statements around it and the final store use the ordinary owned-element
//! loop, unrolled so every slot index is a constant and the fragment stays
//! in registers. `acc += dot(a, b)` on such a tile passes acc's own slots
//! as mma.sync's C and writes D back to them (no temporary). Under
//! `@pipeline` the ldmatrix addresses include the current half's offset.
//! Rules, per (config, chip):
//!
//! - operands both `f16` and the result `f32` (bf16 is refused by name:
//!   MLIR 22's nvgpu lowering cannot type bf16 `mma.sync`); any other
//!   contraction, or none at all, is an [`MlirError::Unsupported`] for the
//!   whole kernel;
//! - sm_75 or newer; m16n8k16 on sm_80+, m16n8k8 on sm_75;
//! - `M % 16 == 0`, `N % 8 == 0`, `K % 16 == 0` (`K % 8` on sm_75), which
//!   also makes every operand row a multiple of 16 bytes as `ldmatrix`
//!   needs (shared buffers are declared 16-byte aligned);
//! - threads per CTA a multiple of 32;
//!
//! a config or chip breaking one is pruned ([`MlirError::DoesNotFit`]
//! naming the rule), never compiled for the SIMT path instead.
//! # `@pipeline`
//!
//! In a kernel marked `@pipeline`, innermost `for` loops whose body starts
//! a shared tile with `let t = T[...]` (slice starts fixed apart from the
//! loop variable) double-buffer those tiles: iteration `i + 1`'s tiles are
//! loaded while iteration `i` computes. On sm_80+ the loads are `cp.async`
//! copies (`nvgpu` dialect); sm_75 has no `cp.async`, so it prefetches into
//! registers and stores to the other buffer after the body. Out-of-bounds
//! elements read as `other`, as everywhere. A kernel marked `@pipeline`
//! where no loop qualifies is an [`MlirError::NotPipelinable`] naming each
//! loop's reason; a config whose doubled buffers exceed shared memory is
//! pruned ([`MlirError::DoesNotFit`]). The schedule, with its barriers, is
//! in `pipelined`'s module doc; the rules in `pipelined::analysis`.
//!
//! # Kernel ABI
//!
//! The entry point is named after the kernel and takes, in order:
//! 1. each parameter in declaration order: a tensor is one global pointer
//!    (`.u64`) to its first element; a scalar is passed by value (`bool` as
//!    one byte, `f16`/`bf16` as 16 bits);
//! 2. each symbolic tensor dim, in [`crate::ir::Kernel::dims`] order, as
//!    `i32`;
//! 3. for each tensor parameter in declaration order, one stride per dim,
//!    in elements, as an integer of the variant's index width (32 or 64
//!    bits). Row-major tensors pass `[.., dims[2]*dims[1], dims[1], 1]`-style
//!    products as usual. A quantized tensor's pointer is to its first
//!    block and its strides are in bytes: each outer dim steps one row of
//!    the dims after it, the blocked last dim one block (`block_bytes`);
//!    see [`quant`].
//!
//! Launch with grid = the kernel's `@grid` and block = `(threads, 1, 1)`;
//! the kernel uses only static shared memory.

mod edge;
mod expr;
pub(crate) mod fragment;
mod math;
mod memory;
mod mma;
mod pipelined;
pub(crate) mod plan;
mod quant;
mod reduce;
mod stmt;
#[cfg(test)]
mod tests;
mod text;

use std::collections::HashMap;

use crate::ir::{Config, DType, Elem, Expr, Kernel, LocalId, ParamKind};

use self::{
    plan::{Plan, TileHome},
    text::{Buffer, Space, Text, Ty, Val},
};
use super::{MlirError, target::Target};

/// The MLIR module for one variant, and what launching it needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmittedKernel {
    /// A `gpu.container_module` holding one `gpu.module` with the kernel.
    pub mlir: String,
    /// Threads per CTA (block = `(threads, 1, 1)`).
    pub threads: u32,
    /// Static shared memory the kernel declares.
    pub shared_bytes: u64,
}

/// Emits the MLIR of `kernel` under `config` for `target`.
pub fn emit_kernel(
    kernel: &Kernel,
    config: &Config,
    target: &Target,
) -> Result<EmittedKernel, MlirError> {
    let plan = plan::plan(kernel, config)?;
    let pipeline = pipelined::plan_for(kernel, &plan)?;
    let threads = match kernel.launch {
        Some(launch) => launch.threads,
        None => default_threads(plan.max_tile_elements),
    };
    if threads < 1 || threads as u64 > target.max_threads_per_block() {
        return Err(MlirError::DoesNotFit(format!(
            "{threads} threads per CTA; {} allows 1..={}",
            target.chip,
            target.max_threads_per_block()
        )));
    }
    let tensor_cores = if kernel.tensorcore {
        Some(mma::tensor_cores(&plan, target, threads)?)
    } else {
        None
    };
    let mut emitter = Emitter::new(kernel, config, target, plan, threads);
    emitter.tensor_cores = tensor_cores;
    emitter.pipeline.plan = pipeline;
    let args = emitter.signature()?;
    emitter.entry()?;
    emitter.block(&kernel.body)?;
    emitter.finish(args)
}

/// The next power of two at or above the largest tile, within 32..=256: big
/// enough to give every thread work, small enough to leave registers.
fn default_threads(max_tile_elements: i64) -> i64 {
    let wanted = max_tile_elements.clamp(32, 256) as u64;
    wanted.next_power_of_two() as i64
}

/// Where a local's value is.
#[derive(Clone, Debug)]
enum LocalHome {
    /// An immutable scalar or a loop variable: an SSA value.
    Ssa(Val),
    /// A mutable scalar: a one-element private buffer.
    ScalarVar(usize),
    /// A tile: a buffer, private slots or shared memory.
    Tile(usize, TileHome),
    /// A quantized tile: read in place from its tensor.
    Quant(quant::QuantView),
}

/// A subexpression computed once before a statement's element loop.
#[derive(Clone, Debug)]
enum Hoisted {
    Scalar(Val),
    /// Materialized into a shared temporary buffer, row major.
    Tile(usize),
    /// A tensor-core result in private slots, C-fragment layout.
    Fragment(usize),
}

/// The coordinates one element is evaluated at.
#[derive(Clone, Debug)]
pub(crate) struct At {
    /// One `i32` coordinate per dim of the expression being evaluated.
    pub idx: Vec<Val>,
    /// The calling thread's slot (`i32`) when the coordinates are those of
    /// an element the thread owns in the statement's own layout; `None`
    /// anywhere else (private tiles may only be read where it is `Some`).
    pub slot: Option<Val>,
}

impl At {
    pub(crate) fn scalar() -> At {
        At {
            idx: Vec::new(),
            slot: None,
        }
    }
}

pub(crate) struct Emitter<'k> {
    kernel: &'k Kernel,
    config: &'k Config,
    target: &'k Target,
    plan: Plan,
    threads: i64,
    /// The integer type tensor offsets are computed in.
    idx_ty: Ty,
    t: Text,
    /// Tensor pointers (`!llvm.ptr<1>`, typed as i64 here only for the
    /// header) and scalar parameters, by name.
    params: HashMap<String, Val>,
    dims: HashMap<String, Val>,
    strides: HashMap<String, Vec<Val>>,
    tid: Option<Val>,
    block_ids: Vec<Val>,
    grid_dims: Vec<Val>,
    locals: HashMap<LocalId, LocalHome>,
    buffers: Vec<Buffer>,
    /// Shared temporaries and whether the current statement uses them.
    temps: Vec<(usize, bool)>,
    hoisted: HashMap<*const Expr, Hoisted>,
    /// ggml-form contractions of the current statement: their partner tiles.
    partner_tiles: HashMap<*const Expr, quant::PartnerTiles>,
    /// Nesting of element loops: inside one, threads diverge, so no
    /// cooperative (shuffle/barrier) code may be emitted.
    element_loop_depth: u32,
    /// `@tensorcore` decisions for this variant.
    tensor_cores: Option<mma::TensorCores>,
    /// `@pipeline`: the loops to pipeline and the halves being read.
    pipeline: pipelined::PipelineState<'k>,
}

impl<'k> Emitter<'k> {
    fn new(
        kernel: &'k Kernel,
        config: &'k Config,
        target: &'k Target,
        plan: Plan,
        threads: i64,
    ) -> Emitter<'k> {
        let mut t = Text::default();
        t.set_indent(3);
        Emitter {
            kernel,
            config,
            target,
            plan,
            threads,
            idx_ty: if target.index_bits == 64 {
                Ty::I64
            } else {
                Ty::I32
            },
            t,
            params: HashMap::new(),
            dims: HashMap::new(),
            strides: HashMap::new(),
            tid: None,
            block_ids: Vec::new(),
            grid_dims: Vec::new(),
            locals: HashMap::new(),
            buffers: Vec::new(),
            temps: Vec::new(),
            hoisted: HashMap::new(),
            partner_tiles: HashMap::new(),
            element_loop_depth: 0,
            tensor_cores: None,
            pipeline: pipelined::PipelineState::default(),
        }
    }

    /// The function arguments (name, MLIR type) in ABI order.
    fn signature(&mut self) -> Result<Vec<(String, String)>, MlirError> {
        let mut args = Vec::new();
        for p in &self.kernel.params {
            match &p.kind {
                ParamKind::Tensor { elem, .. } => {
                    if let Elem::Quant(q) = elem {
                        quant::lowering(*q, &format!("parameter `{}`", p.name))?;
                    }
                    args.push((format!("%p_{}", p.name), "!llvm.ptr<1>".to_string()));
                }
                ParamKind::Scalar { dtype } => {
                    args.push((format!("%p_{}", p.name), Ty::in_memory(*dtype).to_string()));
                }
            }
        }
        for d in self.kernel.dims() {
            args.push((format!("%d_{d}"), "i32".to_string()));
            self.dims.insert(
                d.to_string(),
                Val {
                    name: format!("%d_{d}"),
                    ty: Ty::I32,
                },
            );
        }
        for p in &self.kernel.params {
            if let ParamKind::Tensor { dims, .. } = &p.kind {
                let mut strides = Vec::new();
                for i in 0..dims.len() {
                    let name = format!("%s_{}_{i}", p.name);
                    args.push((name.clone(), self.idx_ty.to_string()));
                    strides.push(Val {
                        name,
                        ty: self.idx_ty,
                    });
                }
                self.strides.insert(p.name.clone(), strides);
            }
        }
        Ok(args)
    }

    /// Grid and thread ids, and scalar parameters in their compute types.
    fn entry(&mut self) -> Result<(), MlirError> {
        let tid = self.t.def(Ty::I32, "gpu.thread_id x");
        let tid = self
            .t
            .def(Ty::I32, format!("arith.index_cast {} : index to i32", tid));
        self.tid = Some(tid);
        for axis in ["x", "y", "z"] {
            let b = self.t.def(Ty::I32, format!("gpu.block_id {axis}"));
            let b = self
                .t
                .def(Ty::I32, format!("arith.index_cast {b} : index to i32"));
            self.block_ids.push(b);
            let g = self.t.def(Ty::I32, format!("gpu.grid_dim {axis}"));
            let g = self
                .t
                .def(Ty::I32, format!("arith.index_cast {g} : index to i32"));
            self.grid_dims.push(g);
        }
        for p in &self.kernel.params {
            let raw = format!("%p_{}", p.name);
            match &p.kind {
                ParamKind::Tensor { .. } => {
                    self.params.insert(
                        p.name.clone(),
                        Val {
                            name: raw,
                            ty: Ty::I64,
                        },
                    );
                }
                ParamKind::Scalar { dtype } => {
                    let val = if *dtype == DType::Bool {
                        let zero = self.t.def(Ty::I8, "arith.constant 0 : i8");
                        self.t
                            .def(Ty::I1, format!("arith.cmpi ne, {raw}, {zero} : i8"))
                    } else {
                        Val {
                            name: raw,
                            ty: Ty::of(*dtype),
                        }
                    };
                    self.params.insert(p.name.clone(), val);
                }
            }
        }
        Ok(())
    }

    /// Shared memory the buffers declared so far take.
    fn shared_bytes_so_far(&self) -> u64 {
        self.buffers
            .iter()
            .filter(|b| b.space == Space::Workgroup)
            .map(Buffer::size_bytes)
            .sum()
    }

    fn finish(mut self, args: Vec<(String, String)>) -> Result<EmittedKernel, MlirError> {
        let shared_bytes = self.shared_bytes_so_far();
        if shared_bytes > self.target.max_static_shared_bytes() {
            return Err(MlirError::DoesNotFit(format!(
                "{shared_bytes} bytes of shared memory; static limit is {}{}",
                self.target.max_static_shared_bytes(),
                pipelined::doubling_note(self.pipeline.doubled_bytes)
            )));
        }
        let args_text = args
            .iter()
            .map(|(n, t)| format!("{n}: {t}"))
            .collect::<Vec<_>>()
            .join(", ");
        // Shared tiles start 16-byte aligned: ldmatrix reads 16-byte rows,
        // cp.async needs its shared destination aligned to the copy size,
        // and LLVM merges neighbouring shared loads into `ld.shared.v4`
        // even when the buffer's default alignment is the element's.
        let align = " {llvm.align = 16 : i64}";
        let attributions = |space: Space| {
            self.buffers
                .iter()
                .filter(|b| b.space == space)
                .map(|b| {
                    let align = if space == Space::Workgroup { align } else { "" };
                    format!("{} : {}{align}", b.name, b.memref_type())
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let workgroup = attributions(Space::Workgroup);
        let private = attributions(Space::Private);
        let mut header = format!("    gpu.func @{}({args_text})", self.kernel.name);
        if !workgroup.is_empty() {
            header.push_str(&format!(" workgroup({workgroup})"));
        }
        if !private.is_empty() {
            header.push_str(&format!(" private({private})"));
        }
        header.push_str(&format!(
            " kernel attributes {{gpu.known_block_size = array<i32: {}, 1, 1>}} {{",
            self.threads
        ));
        let mut out = String::new();
        out.push_str(&format!(
            "// kernel {} config [{}] chip {} index_bits {} threads {}\n",
            self.kernel.name, self.config, self.target.chip, self.target.index_bits, self.threads
        ));
        out.push_str("module attributes {gpu.container_module} {\n");
        out.push_str("  gpu.module @phobos {\n");
        out.push_str(&header);
        out.push('\n');
        for line in std::mem::take(&mut self.t).into_lines() {
            out.push_str(&line);
            out.push('\n');
        }
        out.push_str("      gpu.return\n    }\n  }\n}\n");
        Ok(EmittedKernel {
            mlir: out,
            threads: self.threads as u32,
            shared_bytes,
        })
    }

    // ----- small helpers shared by the sibling modules -----

    fn tid(&self) -> Result<Val, MlirError> {
        self.tid
            .clone()
            .ok_or_else(|| MlirError::unsupported("thread id before entry (compiler bug)"))
    }

    fn const_int(&mut self, value: i64, ty: Ty) -> Val {
        self.t.def(ty, format!("arith.constant {value} : {ty}"))
    }

    fn const_i32(&mut self, value: i64) -> Val {
        self.const_int(value, Ty::I32)
    }

    fn const_float(&mut self, value: f64, ty: Ty) -> Val {
        match ty {
            Ty::F32 | Ty::F64 => self.t.def(
                ty,
                format!(
                    "arith.constant {} : {ty}",
                    text::float_bits_literal(value, ty)
                ),
            ),
            _ => {
                let wide = self.const_float(value, Ty::F32);
                self.t.def(ty, format!("arith.truncf {wide} : f32 to {ty}"))
            }
        }
    }

    /// `value` as an `index` (for memref subscripts).
    fn as_index(&mut self, value: &Val) -> Val {
        self.t.def(
            Ty::I64,
            format!("arith.index_cast {value} : {} to index", value.ty),
        )
    }

    fn extents(&self, e: &Expr) -> Result<Vec<i64>, MlirError> {
        plan::extents(&e.shape, self.config)
    }

    fn new_buffer(&mut self, ty: Ty, len: u64, space: Space) -> usize {
        let prefix = match space {
            Space::Workgroup => "sh",
            Space::Private => "pr",
        };
        let name = format!("%{prefix}{}", self.buffers.len());
        self.buffers.push(Buffer {
            name,
            ty,
            len,
            space,
        });
        self.buffers.len() - 1
    }

    /// A shared temporary for the current statement, reused across
    /// statements (every statement ends with a barrier before the next
    /// writes it).
    fn temp_buffer(&mut self, ty: Ty, len: u64) -> usize {
        for (buf, in_use) in self.temps.iter_mut() {
            let b = &self.buffers[*buf];
            if !*in_use && b.ty == ty && b.len >= len {
                *in_use = true;
                return *buf;
            }
        }
        let buf = self.new_buffer(ty, len, Space::Workgroup);
        self.temps.push((buf, true));
        buf
    }

    /// Ends a statement: temporaries and hoisted values are dead.
    fn end_statement(&mut self) {
        for (_, in_use) in self.temps.iter_mut() {
            *in_use = false;
        }
        self.hoisted.clear();
        self.partner_tiles.clear();
    }

    fn barrier(&mut self) {
        if self.t.last_line() != Some("gpu.barrier") {
            self.t.line("gpu.barrier");
        }
    }

    fn buffer_load(&mut self, buf: usize, index: &Val) -> Val {
        let b = self.buffers[buf].clone();
        let index = self.staged_index(buf, index);
        let i = self.as_index(&index);
        self.t.def(
            b.ty,
            format!("memref.load {}[{i}] : {}", b.name, b.memref_type()),
        )
    }

    fn buffer_store(&mut self, buf: usize, index: &Val, value: &Val) {
        let b = self.buffers[buf].clone();
        let index = self.staged_index(buf, index);
        let i = self.as_index(&index);
        self.t.line(format!(
            "memref.store {value}, {}[{i}] : {}",
            b.name,
            b.memref_type()
        ));
    }

    /// Row-major linear index (`i32`) of `idx` in a tile of `extents`.
    fn linear(&mut self, idx: &[Val], extents: &[i64]) -> Val {
        let mut acc: Option<Val> = None;
        let mut stride = 1i64;
        for (i, coord) in idx.iter().enumerate().rev() {
            let term = if stride == 1 {
                coord.clone()
            } else {
                let s = self.const_i32(stride);
                self.t
                    .def(Ty::I32, format!("arith.muli {coord}, {s} : i32"))
            };
            acc = Some(match acc {
                None => term,
                Some(a) => self.t.def(Ty::I32, format!("arith.addi {a}, {term} : i32")),
            });
            stride *= extents[i];
        }
        acc.unwrap_or_else(|| self.const_i32(0))
    }

    /// Coordinates (`i32`) of row-major element `linear` of `extents`.
    fn delinearize(&mut self, linear: &Val, extents: &[i64]) -> Vec<Val> {
        let mut coords = vec![None; extents.len()];
        let mut stride = 1i64;
        for i in (0..extents.len()).rev() {
            let q = if stride == 1 {
                linear.clone()
            } else {
                let s = self.const_i32(stride);
                self.t
                    .def(Ty::I32, format!("arith.divui {linear}, {s} : i32"))
            };
            let c = if i == 0 {
                q
            } else {
                let e = self.const_i32(extents[i]);
                self.t.def(Ty::I32, format!("arith.remui {q}, {e} : i32"))
            };
            coords[i] = Some(c);
            stride *= extents[i];
        }
        coords.into_iter().flatten().collect()
    }

    /// Runs `body` once per element of a tile of `extents` that the calling
    /// thread owns. `body` gets the element's coordinates and slot.
    fn for_each_owned_element(
        &mut self,
        extents: &[i64],
        body: &mut dyn FnMut(&mut Emitter<'k>, &At) -> Result<(), MlirError>,
    ) -> Result<(), MlirError> {
        if let Some(tiling) = self.fragment_tiling(extents) {
            return self.for_each_fragment_element(&tiling, body);
        }
        let n: i64 = extents.iter().product();
        let threads = self.threads;
        let slots = (n + threads - 1) / threads;
        let tid = self.tid()?;
        let (slot, looped) = if slots <= 1 {
            (self.const_i32(0), false)
        } else {
            let lo = self.const_i32(0);
            let hi = self.const_i32(slots);
            let one = self.const_i32(1);
            let j = self.t.fresh("j");
            self.t
                .open(format!("scf.for {j} = {lo} to {hi} step {one} : i32 {{"));
            (
                Val {
                    name: j,
                    ty: Ty::I32,
                },
                true,
            )
        };
        let linear = if looped {
            let t = self.const_i32(threads);
            let base = self.t.def(Ty::I32, format!("arith.muli {slot}, {t} : i32"));
            self.t
                .def(Ty::I32, format!("arith.addi {base}, {tid} : i32"))
        } else {
            tid
        };
        let guarded = n % threads != 0;
        if guarded {
            let limit = self.const_i32(n);
            let inside = self
                .t
                .def(Ty::I1, format!("arith.cmpi slt, {linear}, {limit} : i32"));
            self.t.open(format!("scf.if {inside} {{"));
        }
        let idx = self.delinearize(&linear, extents);
        self.element_loop_depth += 1;
        let result = body(
            self,
            &At {
                idx,
                slot: Some(slot),
            },
        );
        self.element_loop_depth -= 1;
        result?;
        if guarded {
            self.t.close("}");
        }
        if looped {
            self.t.close("}");
        }
        Ok(())
    }

    /// [`Self::for_each_owned_element`] over a tensor-core accumulator
    /// shape: slot `4 * i + r` is C element `r` of the warp's `i`-th block.
    fn for_each_fragment_element(
        &mut self,
        tiling: &fragment::FragmentTiling,
        body: &mut dyn FnMut(&mut Emitter<'k>, &At) -> Result<(), MlirError>,
    ) -> Result<(), MlirError> {
        let (warp, lane) = self.warp_and_lane()?;
        // Unrolled: every slot index is a constant, so the fragment (the
        // mma accumulator) can live in registers; a loop over the slots
        // indexes it dynamically and sends it to local memory.
        for slot in 0..tiling.slots() {
            let slot = self.const_i32(slot);
            self.fragment_element(tiling, &warp, &lane, &slot, body)?;
        }
        Ok(())
    }

    /// One slot of [`Self::for_each_fragment_element`].
    fn fragment_element(
        &mut self,
        tiling: &fragment::FragmentTiling,
        warp: &Val,
        lane: &Val,
        slot: &Val,
        body: &mut dyn FnMut(&mut Emitter<'k>, &At) -> Result<(), MlirError>,
    ) -> Result<(), MlirError> {
        let (block, idx) = self.fragment_coords(tiling, warp, lane, slot)?;
        let guarded = tiling.guarded(self.threads / 32);
        if guarded {
            let limit = self.const_i32(tiling.blocks);
            let inside = self
                .t
                .def(Ty::I1, format!("arith.cmpi slt, {block}, {limit} : i32"));
            self.t.open(format!("scf.if {inside} {{"));
        }
        self.element_loop_depth += 1;
        let result = body(
            self,
            &At {
                idx,
                slot: Some(slot.clone()),
            },
        );
        self.element_loop_depth -= 1;
        result?;
        if guarded {
            self.t.close("}");
        }
        Ok(())
    }

    /// Slots each thread needs for a tile of `extents`.
    fn slots_for(&self, extents: &[i64]) -> u64 {
        if let Some(tiling) = self.fragment_tiling(extents) {
            return tiling.slots().max(1) as u64;
        }
        let n: i64 = extents.iter().product();
        ((n + self.threads - 1) / self.threads).max(1) as u64
    }

    fn dtype_of(&self, e: &Expr) -> Result<DType, MlirError> {
        match e.elem {
            Elem::Scalar(d) => Ok(d),
            Elem::Quant(q) => Err(MlirError::unsupported(format!(
                "quantized tile values (`{q}`); dequant/dot on quantized tensors"
            ))),
        }
    }
}
