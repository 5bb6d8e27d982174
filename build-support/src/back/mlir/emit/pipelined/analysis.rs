//! Which loops `@pipeline` applies to, and which of their tiles it stages.
//!
//! A loop is pipelined when it is innermost (no `for`/`while` inside), its
//! step is a positive constant (a literal or tune parameter) on a signed
//! loop variable, and its body has at least one top-level
//! `let t = T[...]` whose tile lives in shared memory (see [`super::super::plan`])
//! and whose slice starts (and `other`) depend only on the loop variable
//! and values fixed for the whole loop: parameters, dims, tune values,
//! `program_id`s and locals neither defined nor assigned inside the loop.
//! The tensor must not be written inside the loop (the copy for the next
//! iteration runs before the current body). Everything else keeps the
//! plain schedule; the reasons are kept so that a kernel where nothing
//! qualifies can say why.

use std::collections::{HashMap, HashSet};

use crate::ir::{DType, Expr, ExprKind, Kernel, LocalId, Slice, Stmt, StmtKind, visit};

use super::super::plan::TileHome;

/// One `let t = T[...]` staged through two shared buffers.
#[derive(Clone, Debug)]
pub(crate) struct StagedTile<'k> {
    pub local: LocalId,
    pub tensor: &'k str,
    pub index: &'k [Slice],
    pub other: Option<&'k Expr>,
    pub dtype: DType,
}

/// The loops to pipeline, keyed by the address of their body's first
/// statement, and why the others are not.
#[derive(Default)]
pub(crate) struct PipelinePlan<'k> {
    pub loops: HashMap<*const Stmt, Vec<StagedTile<'k>>>,
    pub skipped: Vec<String>,
}

pub(crate) fn analyze<'k>(
    kernel: &'k Kernel,
    homes: &HashMap<LocalId, TileHome>,
) -> PipelinePlan<'k> {
    let mut out = PipelinePlan::default();
    walk(kernel, homes, &kernel.body, &mut out);
    out
}

fn walk<'k>(
    kernel: &'k Kernel,
    homes: &HashMap<LocalId, TileHome>,
    block: &'k [Stmt],
    out: &mut PipelinePlan<'k>,
) {
    for stmt in block {
        match &stmt.kind {
            StmtKind::For {
                var,
                start,
                step,
                body,
                ..
            } => {
                let name = local_name(kernel, *var);
                match loop_tiles(kernel, homes, start, step, body) {
                    Ok(tiles) => {
                        out.loops.insert(body.as_ptr(), tiles);
                    }
                    Err(why) => out.skipped.push(format!("loop `for {name}`: {why}")),
                }
                walk(kernel, homes, body, out);
            }
            StmtKind::While { body, .. } => walk(kernel, homes, body, out),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                walk(kernel, homes, then_body, out);
                walk(kernel, homes, else_body, out);
            }
            _ => {}
        }
    }
}

fn local_name(kernel: &Kernel, id: LocalId) -> &str {
    kernel.local(id).map_or("?", |l| l.name.as_str())
}

fn loop_tiles<'k>(
    kernel: &'k Kernel,
    homes: &HashMap<LocalId, TileHome>,
    start: &Expr,
    step: &Expr,
    body: &'k [Stmt],
) -> Result<Vec<StagedTile<'k>>, String> {
    if contains_loop(body) {
        return Err("not innermost (it contains a loop)".into());
    }
    let signed = matches!(start.elem.scalar(), Some(d) if !d.is_unsigned_int());
    let positive_step = match &step.kind {
        ExprKind::Int(v) => *v > 0,
        ExprKind::Tune(_) => true,
        _ => false,
    };
    if !signed || !positive_step {
        return Err("its step is not a positive constant on a signed loop variable".into());
    }
    let inside = defined_inside(body);
    let written = written_tensors(body);
    let mut tiles = Vec::new();
    let mut reasons = Vec::new();
    for stmt in body {
        let StmtKind::Let { local, value } = &stmt.kind else {
            continue;
        };
        let ExprKind::Load {
            tensor,
            index,
            other,
        } = &value.kind
        else {
            continue;
        };
        if homes.get(local) != Some(&TileHome::Shared) {
            continue;
        }
        let name = local_name(kernel, *local);
        if let Some(why) = fixed_over_loop(kernel, index, other.as_deref(), &inside) {
            reasons.push(format!("`{name}`: {why}"));
            continue;
        }
        if written.contains(tensor.as_str()) {
            reasons.push(format!("`{name}`: `{tensor}` is written inside the loop"));
            continue;
        }
        let Some(dtype) = value.elem.scalar() else {
            reasons.push(format!("`{name}`: quantized tensor `{tensor}`"));
            continue;
        };
        tiles.push(StagedTile {
            local: *local,
            tensor,
            index,
            other: other.as_deref(),
            dtype,
        });
    }
    if !tiles.is_empty() {
        return Ok(tiles);
    }
    if reasons.is_empty() {
        Err(
            "it loads no tile into shared memory (staging applies to a top-level \
             `let t = T[...]` that is a dot operand or read across threads)"
                .into(),
        )
    } else {
        Err(reasons.join("; "))
    }
}

/// `None` when the slice starts and `other` have one value for the whole
/// loop (apart from the loop variable); else why not.
fn fixed_over_loop(
    kernel: &Kernel,
    index: &[Slice],
    other: Option<&Expr>,
    inside: &HashSet<LocalId>,
) -> Option<String> {
    let mut roots: Vec<&Expr> = Vec::new();
    for s in index {
        if let Slice::Point(e) | Slice::Span { start: e, .. } = s {
            roots.push(e);
        }
    }
    roots.extend(other);
    let mut why = None;
    for root in roots {
        visit::expr(root, &mut |e| {
            if why.is_some() {
                return;
            }
            match &e.kind {
                ExprKind::Local(id) if inside.contains(id) => {
                    why = Some(format!(
                        "its slice depends on `{}`, computed inside the loop",
                        local_name(kernel, *id)
                    ));
                }
                ExprKind::Load { tensor, .. } => {
                    why = Some(format!("its slice reads tensor `{tensor}`"));
                }
                _ => {}
            }
        });
    }
    why
}

fn contains_loop(block: &[Stmt]) -> bool {
    let mut found = false;
    visit::stmts(block, &mut |s| {
        found |= matches!(s.kind, StmtKind::For { .. } | StmtKind::While { .. });
    });
    found
}

/// Locals defined or assigned anywhere in `block`.
fn defined_inside(block: &[Stmt]) -> HashSet<LocalId> {
    let mut out = HashSet::new();
    visit::stmts(block, &mut |s| match &s.kind {
        StmtKind::Let { local, .. } | StmtKind::Assign { local, .. } => {
            out.insert(*local);
        }
        StmtKind::For { var, .. } => {
            out.insert(*var);
        }
        _ => {}
    });
    out
}

/// Tensors stored to or `atomic_add`ed into anywhere in `block`.
fn written_tensors(block: &[Stmt]) -> HashSet<&str> {
    let mut out = HashSet::new();
    visit::stmts(block, &mut |s| {
        if let StmtKind::Store { tensor, .. } | StmtKind::AtomicAdd { tensor, .. } = &s.kind {
            out.insert(tensor.as_str());
        }
    });
    out
}
