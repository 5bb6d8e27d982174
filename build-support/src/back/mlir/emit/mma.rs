//! `@tensorcore`: which contractions run on tensor cores under a (config,
//! chip), and the warp-level code that runs them (`nvgpu.ldmatrix` from
//! the shared operand tiles, `nvgpu.mma.sync` into f32 accumulators).
//!
//! The result of such a `dot`/`dot_t` is distributed in the mma C-fragment
//! layout ([`fragment`]): every tile of the same extents uses it, so the
//! statement's element loop, other register tiles of that shape and the
//! final store read it through the usual owned-element iteration, with no
//! trip through shared memory.

use std::collections::HashMap;

use crate::ir::{Builtin, DType, Expr};

use super::{
    Emitter,
    fragment::{self, Formula, FragmentTiling, MmaK, Var},
    plan::{Contraction, Plan},
    text::{Space, Ty, Val},
};
use crate::back::mlir::{MlirError, target::Target};

/// What `@tensorcore` decided for one variant.
#[derive(Clone, Debug)]
pub(crate) struct TensorCores {
    pub k: MmaK,
    /// Accumulator extents `[M, N]` -> their warp tiling.
    pub tilings: HashMap<Vec<i64>, FragmentTiling>,
    pub warps: i64,
}

/// Checks every contraction of a `@tensorcore` kernel against the chip and
/// config. A kernel that cannot use tensor cores under any config is an
/// [`MlirError::Unsupported`]; one that cannot under this config or chip
/// is [`MlirError::DoesNotFit`] (pruned, with the reason).
pub(crate) fn tensor_cores(
    plan: &Plan,
    target: &Target,
    threads: i64,
) -> Result<TensorCores, MlirError> {
    if plan.contractions.is_empty() {
        return Err(MlirError::unsupported(
            "`@tensorcore` on a kernel with no rank-2 `dot`/`dot_t` (nothing can run on tensor cores)",
        ));
    }
    for c in &plan.contractions {
        operand_type(c)?;
    }
    if target.sm < 75 {
        return Err(MlirError::DoesNotFit(format!(
            "@tensorcore needs sm_75 or newer (ldmatrix, mma.sync); {} has neither",
            target.chip
        )));
    }
    if threads % 32 != 0 {
        return Err(MlirError::DoesNotFit(format!(
            "@tensorcore needs whole warps; {threads} threads per CTA is not a multiple of 32"
        )));
    }
    let k = if target.sm >= 80 { MmaK::K16 } else { MmaK::K8 };
    let warps = threads / 32;
    let mut tilings = HashMap::new();
    for c in &plan.contractions {
        let name = if c.func == Builtin::DotT {
            "dot_t"
        } else {
            "dot"
        };
        if c.m % 16 != 0 || c.n % 8 != 0 || c.k % k.k() != 0 {
            return Err(MlirError::DoesNotFit(format!(
                "@tensorcore: `{name}` of [M={}, K={}] x [K, N={}] needs M % 16 == 0, N % 8 == 0 \
                 and K % {} == 0 for mma.sync m16n8k{} on {}",
                c.m,
                c.k,
                c.n,
                k.k(),
                k.k(),
                target.chip
            )));
        }
        tilings.insert(vec![c.m, c.n], FragmentTiling::new(c.m, c.n, warps));
    }
    Ok(TensorCores { k, tilings, warps })
}

/// The one operand type of a contraction tensor cores take, or why not.
fn operand_type(c: &Contraction) -> Result<DType, MlirError> {
    match (c.a, c.b, c.result) {
        (Some(DType::F16), Some(DType::F16), Some(DType::F32)) => Ok(DType::F16),
        // The hardware has m16n8k16.bf16 on sm_80+, but MLIR 22's
        // convert-nvgpu-to-nvvm fails on bf16 `nvgpu.mma.sync` ("failed to
        // deduce operand PTX types"), so refuse it by name.
        (Some(DType::Bf16), Some(DType::Bf16), Some(DType::F32)) => Err(MlirError::unsupported(
            "`@tensorcore` on bf16 contractions (MLIR's nvgpu-to-nvvm lowering cannot type \
             bf16 mma.sync; use f16 operands or drop @tensorcore)",
        )),
        _ => Err(MlirError::unsupported(format!(
            "`@tensorcore` on a contraction of {} and {} operands (tensor cores take two f16 \
             operands, accumulating in f32)",
            show(c.a),
            show(c.b)
        ))),
    }
}

fn show(d: Option<DType>) -> String {
    d.map_or_else(|| "quantized".to_string(), |d| d.to_string())
}

impl<'k> Emitter<'k> {
    /// The warp tiling of tiles of `extents`, when they are a tensor-core
    /// accumulator shape.
    pub(super) fn fragment_tiling(&self, extents: &[i64]) -> Option<FragmentTiling> {
        self.tensor_cores
            .as_ref()
            .and_then(|tc| tc.tilings.get(extents).copied())
    }

    /// `f` for the calling thread's `lane` (and register `reg`), as `i32`.
    pub(super) fn formula(
        &mut self,
        f: Formula,
        lane: &Val,
        reg: Option<&Val>,
    ) -> Result<Val, MlirError> {
        let mut sum: Option<Val> = None;
        for t in f {
            let var = match t.var {
                Var::Lane => lane.clone(),
                Var::Reg => reg.cloned().ok_or_else(|| {
                    MlirError::unsupported("register formula without a register (compiler bug)")
                })?,
            };
            let mut v = var;
            if t.div != 1 {
                let d = self.const_i32(t.div);
                v = self.t.def(Ty::I32, format!("arith.divui {v}, {d} : i32"));
            }
            let m = self.const_i32(t.modulo);
            v = self.t.def(Ty::I32, format!("arith.remui {v}, {m} : i32"));
            if t.coeff != 1 {
                let c = self.const_i32(t.coeff);
                v = self.t.def(Ty::I32, format!("arith.muli {v}, {c} : i32"));
            }
            sum = Some(match sum {
                None => v,
                Some(s) => self.t.def(Ty::I32, format!("arith.addi {s}, {v} : i32")),
            });
        }
        Ok(sum.unwrap_or_else(|| self.const_i32(0)))
    }

    /// (warp, lane) of the calling thread.
    pub(super) fn warp_and_lane(&mut self) -> Result<(Val, Val), MlirError> {
        let tid = self.tid()?;
        let lanes = self.const_i32(32);
        let warp = self
            .t
            .def(Ty::I32, format!("arith.divui {tid}, {lanes} : i32"));
        let lane = self
            .t
            .def(Ty::I32, format!("arith.remui {tid}, {lanes} : i32"));
        Ok((warp, lane))
    }

    /// Block number (`i32`) of the calling warp's `i`-th block.
    fn warp_block(&mut self, warp: &Val, per_warp: i64, i: &Val) -> Val {
        let pw = self.const_i32(per_warp);
        let first = self
            .t
            .def(Ty::I32, format!("arith.muli {warp}, {pw} : i32"));
        self.t
            .def(Ty::I32, format!("arith.addi {first}, {i} : i32"))
    }

    /// Coordinates of C element `reg` of block `block` for this lane.
    pub(super) fn fragment_coords(
        &mut self,
        tiling: &FragmentTiling,
        warp: &Val,
        lane: &Val,
        slot: &Val,
    ) -> Result<(Val, Vec<Val>), MlirError> {
        let four = self.const_i32(4);
        let i = self
            .t
            .def(Ty::I32, format!("arith.divui {slot}, {four} : i32"));
        let reg = self
            .t
            .def(Ty::I32, format!("arith.remui {slot}, {four} : i32"));
        let block = self.warp_block(warp, tiling.per_warp, &i);
        let (row0, col0) = self.block_origin(tiling, &block);
        let r = self.formula(fragment::C_ROW, lane, Some(&reg))?;
        let c = self.formula(fragment::C_COL, lane, Some(&reg))?;
        let row = self.t.def(Ty::I32, format!("arith.addi {row0}, {r} : i32"));
        let col = self.t.def(Ty::I32, format!("arith.addi {col0}, {c} : i32"));
        Ok((block, vec![row, col]))
    }

    /// (first row, first col) of 16x8 block `block`.
    fn block_origin(&mut self, tiling: &FragmentTiling, block: &Val) -> (Val, Val) {
        let bpr = self.const_i32(tiling.blocks_per_row);
        let br = self
            .t
            .def(Ty::I32, format!("arith.divui {block}, {bpr} : i32"));
        let bc = self
            .t
            .def(Ty::I32, format!("arith.remui {block}, {bpr} : i32"));
        let sixteen = self.const_i32(16);
        let eight = self.const_i32(8);
        let row0 = self
            .t
            .def(Ty::I32, format!("arith.muli {br}, {sixteen} : i32"));
        let col0 = self
            .t
            .def(Ty::I32, format!("arith.muli {bc}, {eight} : i32"));
        (row0, col0)
    }

    /// The shared buffer holding operand `e` row major (a shared local or
    /// the statement's materialized temporary).
    fn operand_buffer(&self, e: &Expr) -> Result<usize, MlirError> {
        if let Some(super::Hoisted::Tile(buf)) = self.hoisted.get(&(e as *const Expr)) {
            return Ok(*buf);
        }
        if let crate::ir::ExprKind::Local(id) = &e.kind
            && let Some(super::LocalHome::Tile(buf, super::plan::TileHome::Shared)) =
                self.locals.get(id)
        {
            return Ok(*buf);
        }
        Err(MlirError::unsupported(
            "a tensor-core operand not staged in shared memory (compiler bug)",
        ))
    }

    /// Runs `dot`/`dot_t` (`e`) on tensor cores; returns the private buffer
    /// holding the result in the C-fragment layout of `e`'s extents. With
    /// `accumulator`, that buffer (an f32 tile of `e`'s extents, hence in
    /// the same layout) is both mma.sync's C operand and where D goes, so
    /// `acc += dot(a, b)` needs no temporary. Every thread of the CTA must
    /// reach this (mma.sync is warp collective).
    pub(super) fn tensor_core_dot(
        &mut self,
        func: Builtin,
        a: &Expr,
        b: &Expr,
        e: &Expr,
        accumulator: Option<usize>,
    ) -> Result<usize, MlirError> {
        let out_ext = self.extents(e)?;
        let a_ext = self.extents(a)?;
        let b_ext = self.extents(b)?;
        let (Some(tiling), Some(tc), [_, kdim], [_, b_cols]) = (
            self.fragment_tiling(&out_ext),
            self.tensor_cores.clone(),
            a_ext.as_slice(),
            b_ext.as_slice(),
        ) else {
            return Err(MlirError::unsupported(
                "a tensor-core contraction without its tiling (compiler bug)",
            ));
        };
        let (kdim, b_cols) = (*kdim, *b_cols);
        let elem = Ty::of(self.dtype_of(a)?);
        let a_buf = self.operand_buffer(a)?;
        let b_buf = self.operand_buffer(b)?;
        let a_mem = self.buffers[a_buf].clone();
        let b_mem = self.buffers[b_buf].clone();
        self.barrier();
        let mk = tc.k;
        let (warp, lane) = self.warp_and_lane()?;
        let out = match accumulator {
            Some(buf) => buf,
            None => self.new_buffer(Ty::F32, tiling.slots().max(1) as u64, Space::Private),
        };
        // Lane parts of the ldmatrix addresses: the same for every block.
        let a_row = self.formula(fragment::LDM_A_ROW, &lane, None)?;
        let a_col = self.formula(mk.ldm_a_col(), &lane, None)?;
        let transposed = func == Builtin::DotT;
        let (b_row, b_col) = if transposed {
            (
                self.formula(fragment::LDM_ROW8, &lane, None)?,
                self.formula(mk.ldm_bt_col(), &lane, None)?,
            )
        } else {
            (
                self.formula(mk.ldm_b_row(), &lane, None)?,
                self.const_i32(0),
            )
        };
        let guarded = tiling.guarded(tc.warps);
        let a_vec = format!("vector<{}x2x{elem}>", mk.a_regs());
        let b_vec = format!("vector<{}x2x{elem}>", mk.b_regs());
        for i in 0..tiling.per_warp {
            let iv = self.const_i32(i);
            let block = self.warp_block(&warp, tiling.per_warp, &iv);
            if guarded {
                let limit = self.const_i32(tiling.blocks);
                let inside = self
                    .t
                    .def(Ty::I1, format!("arith.cmpi slt, {block}, {limit} : i32"));
                self.t.open(format!("scf.if {inside} {{"));
            }
            let (row0, col0) = self.block_origin(&tiling, &block);
            // A element (row0 + a_row, k0 + a_col) of [M, K].
            let a_r = self
                .t
                .def(Ty::I32, format!("arith.addi {row0}, {a_row} : i32"));
            let a_base = self.mul_add(&a_r, kdim, &a_col);
            // B: dot reads (k0 + b_row, col0) of [K, N]; dot_t reads
            // (col0 + b_row, k0 + b_col) of [N, K].
            let b_base = if transposed {
                let n = self
                    .t
                    .def(Ty::I32, format!("arith.addi {col0}, {b_row} : i32"));
                self.mul_add(&n, b_cols, &b_col)
            } else {
                self.mul_add(&b_row, b_cols, &col0)
            };
            // A `@pipeline` staged operand lives in one half of a doubled
            // buffer; ldmatrix must read the half this iteration owns.
            let a_base = self.staged_index(a_buf, &a_base);
            let b_base = self.staged_index(b_buf, &b_base);
            let c_in = self.t.fresh("c");
            match accumulator {
                Some(_) => {
                    let mut c = Vec::new();
                    for r in 0..4 {
                        let slot = self.const_i32(4 * i + r);
                        c.push(self.buffer_load(out, &slot).name);
                    }
                    self.t.line(format!(
                        "{c_in} = vector.from_elements {} : vector<2x2xf32>",
                        c.join(", ")
                    ));
                }
                None => self.t.line(format!(
                    "{c_in} = arith.constant dense<0.0> : vector<2x2xf32>"
                )),
            }
            let lo = self.const_i32(0);
            let hi = self.const_i32(kdim / mk.k());
            let one = self.const_i32(1);
            let step = self.t.fresh("ks");
            let acc = self.t.fresh("acc");
            let result = self.t.fresh("d");
            self.t.open(format!(
                "{result} = scf.for {step} = {lo} to {hi} step {one} iter_args({acc} = {c_in}) -> (vector<2x2xf32>) : i32 {{"
            ));
            let kk = self.const_i32(mk.k());
            let k0 = self
                .t
                .def(Ty::I32, format!("arith.muli {step}, {kk} : i32"));
            let a_at = self
                .t
                .def(Ty::I32, format!("arith.addi {a_base}, {k0} : i32"));
            let b_off = if transposed {
                k0.clone()
            } else {
                let stride = self.const_i32(b_cols);
                self.t
                    .def(Ty::I32, format!("arith.muli {k0}, {stride} : i32"))
            };
            let b_at = self
                .t
                .def(Ty::I32, format!("arith.addi {b_base}, {b_off} : i32"));
            let a_idx = self.as_index(&a_at);
            let b_idx = self.as_index(&b_at);
            let fa = self.t.fresh("fa");
            self.t.line(format!(
                "{fa} = nvgpu.ldmatrix {}[{a_idx}] {{numTiles = {} : i32, transpose = false}} : {} -> {a_vec}",
                a_mem.name,
                mk.a_regs(),
                a_mem.memref_type()
            ));
            let fb = self.t.fresh("fb");
            self.t.line(format!(
                "{fb} = nvgpu.ldmatrix {}[{b_idx}] {{numTiles = {} : i32, transpose = {}}} : {} -> {b_vec}",
                b_mem.name,
                mk.b_regs(),
                !transposed,
                b_mem.memref_type()
            ));
            let d = self.t.fresh("d");
            self.t.line(format!(
                "{d} = nvgpu.mma.sync ({fa}, {fb}, {acc}) {{mmaShape = [16, 8, {}]}} : ({a_vec}, {b_vec}, vector<2x2xf32>) -> vector<2x2xf32>",
                mk.k()
            ));
            self.t.line(format!("scf.yield {d} : vector<2x2xf32>"));
            self.t.close("}");
            for r in 0..4 {
                let v = self.t.def(
                    Ty::F32,
                    format!(
                        "vector.extract {result}[{}, {}] : f32 from vector<2x2xf32>",
                        r / 2,
                        r % 2
                    ),
                );
                let slot = self.const_i32(4 * i + r);
                self.buffer_store(out, &slot, &v);
            }
            if guarded {
                self.t.close("}");
            }
        }
        Ok(out)
    }

    /// `a * factor + b` in `i32`.
    fn mul_add(&mut self, a: &Val, factor: i64, b: &Val) -> Val {
        let f = self.const_i32(factor);
        let p = self.t.def(Ty::I32, format!("arith.muli {a}, {f} : i32"));
        self.t.def(Ty::I32, format!("arith.addi {p}, {b} : i32"))
    }
}
