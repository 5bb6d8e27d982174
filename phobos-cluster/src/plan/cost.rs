//! The cost model: compute (flops per program from the IR), bytes moved
//! (footprints), and the time both take on a node with a given compute
//! rate and link bandwidth.

use std::collections::HashMap;

use phobos_build::ir::{Builtin, Expr, ExprKind, Kernel, LocalId, Stmt, StmtKind};

use super::footprint::Analysis;

/// What a node can do; the defaults describe one host pod on this kind
/// of machine (measured by `cluster_bench --calibrate`-style runs; see
/// BENCHMARKS.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Sustained flop/s of the leaf computation on one node.
    pub leaf_flops: f64,
    /// Bytes/s a node moves over its link (file reads, peer fetches).
    pub link_bytes_per_s: f64,
    /// Device memory of one node: no supertile's working set, and no
    /// segment's, may exceed it. `None`: unbounded.
    pub vram_bytes: Option<u64>,
}

impl Default for Machine {
    fn default() -> Self {
        Machine {
            leaf_flops: 20e9,
            link_bytes_per_s: 1e9,
            vram_bytes: None,
        }
    }
}

impl Machine {
    /// Seconds to compute `flops` and move `bytes` (compute and transfer
    /// overlap, so the slower one dominates).
    pub fn seconds(&self, flops: f64, bytes: f64) -> f64 {
        (flops / self.leaf_flops).max(bytes / self.link_bytes_per_s)
    }
}

/// Flops of one program (the one at `pid` 0), counting a contraction as
/// `2*m*n*k` and any other tile op as one per element, times loop trips.
pub fn program_flops(
    kernel: &Kernel,
    analysis: &Analysis<'_>,
    config: &phobos_build::ir::Config,
) -> f64 {
    let mut env = HashMap::new();
    block_flops(&kernel.body, analysis, config, &mut env)
}

fn block_flops(
    stmts: &[Stmt],
    a: &Analysis<'_>,
    config: &phobos_build::ir::Config,
    env: &mut HashMap<LocalId, (i64, i64)>,
) -> f64 {
    let pid = [(0, 0); 3];
    let mut total = 0.0;
    for s in stmts {
        total += match &s.kind {
            StmtKind::Let { local, value } => {
                if let Some(i) = a.eval(value, &pid, env) {
                    env.insert(*local, i);
                }
                expr_flops(value, config)
            }
            StmtKind::Assign { value, .. } | StmtKind::Expr(value) => expr_flops(value, config),
            StmtKind::Store { value, .. } | StmtKind::AtomicAdd { value, .. } => {
                expr_flops(value, config)
            }
            StmtKind::Prefetch { .. } => 0.0,
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let trips = match (
                    a.eval(start, &pid, env),
                    a.eval(end, &pid, env),
                    a.eval(step, &pid, env),
                ) {
                    (Some(s), Some(e), Some(st)) if st.0 != 0 => {
                        ((e.1 - s.0) as f64 / st.0 as f64).ceil().max(0.0)
                    }
                    _ => 1.0,
                };
                if let Some(s) = a.eval(start, &pid, env) {
                    env.insert(*var, s);
                }
                trips * block_flops(body, a, config, env)
            }
            StmtKind::While { body, .. } => block_flops(body, a, config, env),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => block_flops(then_body, a, config, env).max(block_flops(else_body, a, config, env)),
        };
    }
    total
}

fn elements(e: &Expr, config: &phobos_build::ir::Config) -> f64 {
    e.shape
        .eval(config)
        .iter()
        .map(|&d| d.max(1) as f64)
        .product()
}

fn expr_flops(e: &Expr, config: &phobos_build::ir::Config) -> f64 {
    let own = match &e.kind {
        ExprKind::Call {
            func: Builtin::Dot | Builtin::DotT,
            args,
        } if args.len() == 2 => {
            let a = args[0].shape.eval(config);
            let k = a.last().copied().unwrap_or(1).max(1) as f64;
            2.0 * elements(e, config) * k
        }
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Local(_)
        | ExprKind::Param(_)
        | ExprKind::Dim(_)
        | ExprKind::Tune(_) => 0.0,
        _ => elements(e, config),
    };
    let children: f64 = match &e.kind {
        ExprKind::Unary { arg, .. } | ExprKind::Cast(arg) | ExprKind::Broadcast(arg) => {
            expr_flops(arg, config)
        }
        ExprKind::Binary { lhs, rhs, .. } => expr_flops(lhs, config) + expr_flops(rhs, config),
        ExprKind::Call { args, .. } => args.iter().map(|x| expr_flops(x, config)).sum(),
        ExprKind::Slice { base, .. } => expr_flops(base, config),
        _ => 0.0,
    };
    own + children
}
