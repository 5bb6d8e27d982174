//! Which written tensors each program owns a disjoint part of, so the host
//! may store into them with plain (vectorizable) writes instead of one
//! relaxed atomic per element (SPEC.md §9, "Program-owned stores").
//!
//! A tensor `T` is *program-owned* when the kernel never reads it (no load,
//! no `op=` store, no `atomic_add`) and, for every grid axis `a` of
//! `@grid`, one dim `d_a` is indexed in every store into `T` by
//! `program_id(a)` (a point), by a span `program_id(a) * M :+ L` with
//! `L <= M` in every config (`M` a literal or a tune parameter; the start
//! may go through `let` locals), or by a point that is the variable of a
//! `for r in range(program_id(a) * M, program_id(a) * M + L[, step])`
//! (the same bound on `L`): a loop over the rows of the program's block,
//! whose every value lies in `[program_id(a) * M, program_id(a) * M + L)`
//! as the span's do. Two different programs differ in some
//! axis `a`, so their stores differ in dim `d_a`: no element is stored by
//! two programs, and since no program reads `T`, nothing else touches an
//! element while its owner stores it. The launcher adds the run-time half:
//! `program_id(a) * M` must not wrap `i32` over the grid, and the tensor
//! must be the only view of its allocation and laid out without overlap
//! (`TensorWrite::allow_plain_stores`).

use std::collections::HashMap;

use crate::ir::{
    BinOp, Builtin, Config, Expr, ExprKind, Kernel, LocalId, ParamKind, ShapeExpr, Slice, StmtKind,
    visit,
};

/// How one grid axis owns a dim of a program-owned tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisOwner {
    pub axis: usize,
    /// The span start's multiplier `M` (`None` for a point, which cannot
    /// wrap): the launcher checks `grid[axis] * M <= 2^31`.
    pub multiplier: Option<ShapeExpr>,
}

/// The program-owned tensors of `kernel` (float tensors only), each with
/// the multipliers the launcher must check against the grid.
pub fn program_owned(kernel: &Kernel) -> Vec<(String, Vec<AxisOwner>)> {
    let bound = Bound {
        lets: let_values(kernel),
        loops: loop_ranges(kernel),
    };
    let configs = kernel.configs();
    let axes = kernel.grid.len().max(1);
    let mut out = Vec::new();
    for param in &kernel.params {
        let ParamKind::Tensor {
            elem,
            written: true,
            ..
        } = &param.kind
        else {
            continue;
        };
        if elem.is_quant() || is_read(kernel, &param.name) {
            continue;
        }
        let stores = stores_into(kernel, &param.name);
        if stores.is_empty() {
            continue;
        }
        // A kernel without @grid runs one program: it owns everything.
        if kernel.grid.is_empty() {
            out.push((param.name.clone(), Vec::new()));
            continue;
        }
        let owners: Option<Vec<AxisOwner>> = (0..axes)
            .map(|axis| owner_of_axis(axis, &stores, &bound, &configs))
            .collect();
        if let Some(owners) = owners {
            out.push((param.name.clone(), owners));
        }
    }
    out
}

/// The one dim that `program_id(axis)` owns in every store, if any.
fn owner_of_axis(
    axis: usize,
    stores: &[&[Slice]],
    bound: &Bound<'_>,
    configs: &[Config],
) -> Option<AxisOwner> {
    let rank = stores.first()?.len();
    'dims: for dim in 0..rank {
        let mut multiplier: Option<Option<ShapeExpr>> = None;
        for index in stores {
            let Some(found) = index
                .get(dim)
                .and_then(|slice| owned_by(axis, slice, bound, configs))
            else {
                continue 'dims;
            };
            match &multiplier {
                None => multiplier = Some(found),
                // Different multipliers for one dim would let spans of
                // different programs overlap.
                Some(seen) if *seen == found => {}
                Some(_) => continue 'dims,
            }
        }
        return Some(AxisOwner {
            axis,
            multiplier: multiplier.flatten(),
        });
    }
    None
}

/// What the indices of stores may be resolved through: immutable `let`
/// values and the ranges of `for` variables.
struct Bound<'k> {
    lets: HashMap<LocalId, &'k Expr>,
    /// `(start, end)` of each `for` variable's range.
    loops: HashMap<LocalId, (&'k Expr, &'k Expr)>,
}

/// `Some(None)` for `program_id(axis)` as a point, `Some(Some(M))` for a
/// span `program_id(axis) * M :+ L`, or a point that is the variable of a
/// `for` over `program_id(axis) * M .. program_id(axis) * M + L`, with
/// `L <= M` in every config.
fn owned_by(
    axis: usize,
    slice: &Slice,
    bound: &Bound<'_>,
    configs: &[Config],
) -> Option<Option<ShapeExpr>> {
    let lets = &bound.lets;
    let fits = |multiplier: &ShapeExpr, len: &ShapeExpr| {
        configs
            .iter()
            .all(|c| (1..=multiplier.eval(c)).contains(&len.eval(c)))
    };
    match slice {
        Slice::Point(index) if is_program_id(axis, index, lets) => Some(None),
        Slice::Point(index) => {
            let ExprKind::Local(var) = &resolve(index, lets).kind else {
                return None;
            };
            let (start, end) = bound.loops.get(var)?;
            let multiplier = block_start(axis, start, lets)?;
            // `end` is `start + L` (either order), `start` written again.
            let ExprKind::Binary {
                op: BinOp::Add,
                lhs,
                rhs,
            } = &resolve(end, lets).kind
            else {
                return None;
            };
            let len = [(lhs, rhs), (rhs, lhs)]
                .into_iter()
                .find_map(|(base, len)| {
                    (block_start(axis, base, lets).as_ref() == Some(&multiplier))
                        .then(|| constant(len, lets))
                        .flatten()
                })?;
            fits(&multiplier, &len).then_some(Some(multiplier))
        }
        Slice::Span { start, len } => {
            let multiplier = block_start(axis, start, lets)?;
            fits(&multiplier, len).then_some(Some(multiplier))
        }
        Slice::Full => None,
    }
}

/// `M` of a block start `program_id(axis) * M` (`program_id(axis)` alone
/// is `M = 1`).
fn block_start(axis: usize, e: &Expr, lets: &HashMap<LocalId, &Expr>) -> Option<ShapeExpr> {
    if is_program_id(axis, e, lets) {
        Some(ShapeExpr::Lit(1))
    } else {
        scaled_program_id(axis, e, lets)
    }
}

/// A positive literal or a tune parameter, as a shape expression.
fn constant(e: &Expr, lets: &HashMap<LocalId, &Expr>) -> Option<ShapeExpr> {
    match &resolve(e, lets).kind {
        ExprKind::Int(v) if *v > 0 => Some(ShapeExpr::Lit(*v)),
        ExprKind::Tune(name) => Some(ShapeExpr::Tune(name.clone())),
        _ => None,
    }
}

/// `e` resolved through `let` locals.
fn resolve<'e>(mut e: &'e Expr, lets: &HashMap<LocalId, &'e Expr>) -> &'e Expr {
    // Each step goes to an earlier `let`; the bound guards against cycles
    // in a malformed IR.
    for _ in 0..64 {
        match &e.kind {
            ExprKind::Local(id) => match lets.get(id) {
                Some(value) => e = value,
                None => return e,
            },
            _ => return e,
        }
    }
    e
}

fn is_program_id(axis: usize, e: &Expr, lets: &HashMap<LocalId, &Expr>) -> bool {
    match &resolve(e, lets).kind {
        ExprKind::Call {
            func: Builtin::ProgramId,
            args,
        } => {
            matches!(args.as_slice(), [a] if matches!(a.kind, ExprKind::Int(v) if v == axis as i64))
        }
        _ => false,
    }
}

/// `M` of `program_id(axis) * M` (either order), `M` a positive literal or a
/// tune parameter.
fn scaled_program_id(axis: usize, e: &Expr, lets: &HashMap<LocalId, &Expr>) -> Option<ShapeExpr> {
    let ExprKind::Binary {
        op: BinOp::Mul,
        lhs,
        rhs,
    } = &resolve(e, lets).kind
    else {
        return None;
    };
    if is_program_id(axis, lhs, lets) {
        constant(rhs, lets)
    } else if is_program_id(axis, rhs, lets) {
        constant(lhs, lets)
    } else {
        None
    }
}

/// The value of every `let` (immutable) local.
fn let_values(kernel: &Kernel) -> HashMap<LocalId, &Expr> {
    let mut out = HashMap::new();
    visit::stmts(&kernel.body, &mut |s| {
        if let StmtKind::Let { local, value } = &s.kind
            && kernel.local(*local).is_some_and(|l| !l.mutable)
        {
            out.insert(*local, value);
        }
    });
    out
}

/// The `(start, end)` of every `for` variable (immutable: the body cannot
/// assign it).
fn loop_ranges(kernel: &Kernel) -> HashMap<LocalId, (&Expr, &Expr)> {
    let mut out = HashMap::new();
    visit::stmts(&kernel.body, &mut |s| {
        if let StmtKind::For {
            var, start, end, ..
        } = &s.kind
            && kernel.local(*var).is_some_and(|l| !l.mutable)
        {
            out.insert(*var, (start, end));
        }
    });
    out
}

/// Whether the kernel reads `tensor`: a load anywhere, a compound store
/// (read-modify-write) or an `atomic_add`.
fn is_read(kernel: &Kernel, tensor: &str) -> bool {
    let loads = |e: &Expr| {
        let mut found = false;
        visit::expr(e, &mut |e| {
            found |= matches!(&e.kind, ExprKind::Load { tensor: t, .. } if t == tensor);
        });
        found
    };
    let mut read = kernel.grid.iter().any(loads);
    visit::stmts(&kernel.body, &mut |s| {
        read |= visit::stmt_exprs(&s.kind).into_iter().any(loads);
        read |= match &s.kind {
            StmtKind::Store { tensor: t, op, .. } => {
                t == tensor && *op != crate::ir::StoreOp::Assign
            }
            StmtKind::AtomicAdd { tensor: t, .. } => t == tensor,
            _ => false,
        };
    });
    read
}

/// The index of every plain store into `tensor`.
fn stores_into<'k>(kernel: &'k Kernel, tensor: &str) -> Vec<&'k [Slice]> {
    let mut out = Vec::new();
    visit::stmts(&kernel.body, &mut |s| {
        if let StmtKind::Store {
            tensor: t, index, ..
        } = &s.kind
            && t == tensor
        {
            out.push(index.as_slice());
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(source: &str) -> Vec<(String, Vec<AxisOwner>)> {
        let module = crate::check_source(&crate::Source::file("test.ph", source))
            .expect("test kernels are valid");
        program_owned(&module.kernels[0])
    }

    #[test]
    fn rows_and_row_blocks_of_a_one_axis_grid_are_owned() {
        let out = owned(
            "@autotune(ROWS in [1, 4], BC in [8])
@grid(cdiv(R, ROWS))
kernel k(X: tensor<f32>[R, C], Y: tensor<f32>[R, C]) {
  let r0 = program_id(0) * ROWS
  for c in range(0, C, BC) {
    Y[r0 :+ ROWS, c :+ BC] = X[r0 :+ ROWS, c :+ BC] * 2.0
  }
}",
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].0, "Y");
        assert_eq!(
            out[0].1,
            [AxisOwner {
                axis: 0,
                multiplier: Some(ShapeExpr::Tune("ROWS".into()))
            }]
        );
        let points = owned(
            "@grid(R)
kernel k(X: tensor<f32>[R, C], Y: tensor<f32>[R, C]) {
  let r = program_id(0)
  Y[r, 0 :+ 8] = X[r, 0 :+ 8]
}",
        );
        assert_eq!(points[0].1[0].multiplier, None);
    }

    #[test]
    fn a_loop_over_the_rows_of_the_programs_block_owns_them() {
        let kernel = |range: &str, index: &str| {
            format!(
                "@autotune(ROWS in [1, 8], BC in [8])
@grid(cdiv(R, ROWS))
kernel k(X: tensor<f32>[R, C], Y: tensor<f32>[R, C]) {{
  let r0 = program_id(0) * ROWS
  for r in range({range}) {{
    if r < R {{
      Y[{index}, 0 :+ BC] = X[r, 0 :+ BC]
    }}
  }}
}}"
            )
        };
        let rows = owned(&kernel("r0, r0 + ROWS", "r"));
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(
            rows[0].1,
            [AxisOwner {
                axis: 0,
                multiplier: Some(ShapeExpr::Tune("ROWS".into()))
            }]
        );
        // Either order of the end's sum, any step, a literal length that
        // fits the smallest block.
        assert_eq!(owned(&kernel("r0, ROWS + r0, 2", "r")).len(), 1);
        assert_eq!(owned(&kernel("r0, r0 + 1", "r")).len(), 1);
        // Past the block (2 > ROWS = 1), a start that is not the block's,
        // an end not measured from it, or an index derived from the
        // variable: not owned.
        assert!(owned(&kernel("r0, r0 + 2", "r")).is_empty());
        assert!(owned(&kernel("0, r0 + ROWS", "r")).is_empty());
        assert!(owned(&kernel("r0, R", "r")).is_empty());
        assert!(owned(&kernel("r0, 1 + ROWS", "r")).is_empty());
        assert!(owned(&kernel("r0, r0 + ROWS", "r + 1")).is_empty());
    }

    #[test]
    fn two_axes_need_two_owned_dims() {
        let gemm = "@autotune(TM in [16], TN in [16])
@grid(cdiv(M, TM), cdiv(N, TN))
kernel k(A: tensor<f32>[M, N], C: tensor<f32>[M, N]) {
  let pm = program_id(0) * TM
  let pn = program_id(1) * TN
  C[pm :+ TM, pn :+ TN] = A[pm :+ TM, pn :+ TN]
}";
        assert_eq!(owned(gemm).len(), 1);
        let one_dim = "@autotune(TM in [16])
@grid(cdiv(M, TM), 2)
kernel k(A: tensor<f32>[M, N], C: tensor<f32>[M, N]) {
  let pm = program_id(0) * TM
  C[pm :+ TM, 0 :+ 16] = A[pm :+ TM, 0 :+ 16]
}";
        assert!(owned(one_dim).is_empty(), "axis 1's programs share rows");
    }

    #[test]
    fn reads_overlaps_and_other_indices_are_not_owned() {
        for (why, source) in [
            (
                "read back",
                "@grid(R)
kernel k(Y: tensor<f32>[R, C]) {
  Y[program_id(0), 0 :+ 8] = Y[program_id(0), 0 :+ 8] + 1.0
}",
            ),
            (
                "compound store",
                "@grid(R)
kernel k(Y: tensor<f32>[R, C]) {
  Y[program_id(0), 0 :+ 8] += 1.0
}",
            ),
            (
                "span longer than the stride",
                "@autotune(B in [8])
@grid(N)
kernel k(Y: tensor<f32>[N]) {
  Y[program_id(0) * B :+ 16] = 1.0
}",
            ),
            (
                "shifted start",
                "@grid(R)
kernel k(Y: tensor<f32>[R, C]) {
  Y[program_id(0) + 1, 0 :+ 8] = 1.0
}",
            ),
            (
                "rows and columns",
                "@grid(R)
kernel k(Y: tensor<f32>[R, R]) {
  Y[program_id(0), 0 :+ 8] = 1.0
  Y[0 :+ 8, program_id(0)] = 2.0
}",
            ),
            (
                "a mutable start",
                "@grid(R)
kernel k(Y: tensor<f32>[R, C]) {
  var r = program_id(0)
  Y[r, 0 :+ 8] = 1.0
}",
            ),
        ] {
            assert!(owned(source).is_empty(), "{why}");
        }
    }
}
