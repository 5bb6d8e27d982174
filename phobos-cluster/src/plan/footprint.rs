//! Which part of each tensor a box of programs can touch: an interval
//! analysis of every slice start over the programs' `program_id` ranges,
//! loop ranges and `let` values. Anything it cannot bound (a value read
//! from a tensor, a reassigned `var`) widens to the whole dim, so a
//! footprint always contains every element the programs access.

use std::collections::{BTreeMap, HashMap, HashSet};

use phobos_build::ir::{
    BinOp, Builtin, Config, Expr, ExprKind, Kernel, LocalId, ParamKind, Slice, Stmt, StmtKind,
};

/// A closed interval of integers.
type Interval = (i64, i64);

/// A box of a tensor: `start[d] .. start[d] + len[d]` per dim.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Region {
    pub start: Vec<usize>,
    pub len: Vec<usize>,
}

impl Region {
    pub fn elements(&self) -> usize {
        self.len.iter().product()
    }

    pub fn whole(shape: &[usize]) -> Region {
        Region {
            start: vec![0; shape.len()],
            len: shape.to_vec(),
        }
    }

    /// True when the two boxes share an element.
    pub fn overlaps(&self, other: &Region) -> bool {
        self.start
            .iter()
            .zip(&self.len)
            .zip(other.start.iter().zip(&other.len))
            .all(|((&a, &al), (&b, &bl))| a < b + bl && b < a + al)
    }

    /// `RxC+r+c` style text for logs and graphs.
    pub fn describe(&self) -> String {
        let len: Vec<String> = self.len.iter().map(usize::to_string).collect();
        let start: Vec<String> = self.start.iter().map(usize::to_string).collect();
        format!("[{}]@[{}]", len.join("x"), start.join(","))
    }
}

/// The tensors a box of programs reads and writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Footprint {
    pub reads: BTreeMap<String, Region>,
    pub writes: BTreeMap<String, Region>,
}

/// Everything the analysis needs about the launch.
pub struct Analysis<'k> {
    kernel: &'k Kernel,
    config: &'k Config,
    dims: &'k BTreeMap<String, usize>,
    shapes: HashMap<String, Vec<usize>>,
    /// Locals that some `Assign` changes after their `let`.
    reassigned: HashSet<LocalId>,
    grid: [usize; 3],
}

impl<'k> Analysis<'k> {
    pub fn new(
        kernel: &'k Kernel,
        config: &'k Config,
        dims: &'k BTreeMap<String, usize>,
        grid: [usize; 3],
    ) -> Analysis<'k> {
        let mut shapes = HashMap::new();
        for p in &kernel.params {
            if let ParamKind::Tensor { dims: pdims, .. } = &p.kind {
                let shape = pdims
                    .iter()
                    .map(|d| match d {
                        phobos_build::ir::Dim::Lit(v) => *v as usize,
                        phobos_build::ir::Dim::Sym(n) => dims.get(n).copied().unwrap_or(0),
                    })
                    .collect();
                shapes.insert(p.name.clone(), shape);
            }
        }
        let mut reassigned = HashSet::new();
        collect_assigned(&kernel.body, &mut reassigned);
        Analysis {
            kernel,
            config,
            dims,
            shapes,
            reassigned,
            grid,
        }
    }

    /// The footprint of the programs `lo[d] <= pid[d] < hi[d]`.
    pub fn footprint(&self, lo: [usize; 3], hi: [usize; 3]) -> Footprint {
        let mut env: HashMap<LocalId, Interval> = HashMap::new();
        let pid: [Interval; 3] = [0, 1, 2].map(|d| (lo[d] as i64, hi[d].max(lo[d] + 1) as i64 - 1));
        let mut out = Footprint::default();
        self.block(&self.kernel.body, &pid, &mut env, &mut out);
        out
    }

    fn block(
        &self,
        stmts: &[Stmt],
        pid: &[Interval; 3],
        env: &mut HashMap<LocalId, Interval>,
        out: &mut Footprint,
    ) {
        for s in stmts {
            match &s.kind {
                StmtKind::Let { local, value } => {
                    self.expr_accesses(value, pid, env, out);
                    if !self.reassigned.contains(local)
                        && let Some(i) = self.eval(value, pid, env)
                    {
                        env.insert(*local, i);
                    }
                }
                StmtKind::Assign { value, .. } | StmtKind::Expr(value) => {
                    self.expr_accesses(value, pid, env, out)
                }
                StmtKind::Store {
                    tensor,
                    index,
                    op,
                    value,
                } => {
                    self.expr_accesses(value, pid, env, out);
                    let region = self.region(tensor, index, pid, env);
                    if *op != phobos_build::ir::StoreOp::Assign {
                        merge(&mut out.reads, tensor, region.clone());
                    }
                    merge(&mut out.writes, tensor, region);
                }
                StmtKind::AtomicAdd {
                    tensor,
                    index,
                    value,
                } => {
                    self.expr_accesses(value, pid, env, out);
                    let region = self.region(tensor, index, pid, env);
                    merge(&mut out.reads, tensor, region.clone());
                    merge(&mut out.writes, tensor, region);
                }
                // A hint: a shard need not hold the slice it names, so it
                // adds no read (only what its index expressions read).
                StmtKind::Prefetch { index, .. } => {
                    for slice in index {
                        match slice {
                            Slice::Point(e) => self.expr_accesses(e, pid, env, out),
                            Slice::Span { start, .. } => self.expr_accesses(start, pid, env, out),
                            Slice::Full => {}
                        }
                    }
                }
                StmtKind::For {
                    var,
                    start,
                    end,
                    step,
                    body,
                } => {
                    for e in [start, end, step] {
                        self.expr_accesses(e, pid, env, out);
                    }
                    let range = match (
                        self.eval(start, pid, env),
                        self.eval(end, pid, env),
                        self.eval(step, pid, env),
                    ) {
                        (Some(s), Some(e), Some(st)) if st.0 > 0 => Some((s.0, (e.1 - 1).max(s.0))),
                        (Some(s), Some(e), Some(st)) if st.1 < 0 => Some(((e.0 + 1).min(s.1), s.1)),
                        _ => None,
                    };
                    match range {
                        Some(r) => env.insert(*var, r),
                        None => env.remove(var),
                    };
                    self.block(body, pid, env, out);
                }
                StmtKind::While { cond, body } => {
                    self.expr_accesses(cond, pid, env, out);
                    self.block(body, pid, env, out);
                }
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    self.expr_accesses(cond, pid, env, out);
                    self.block(then_body, pid, env, out);
                    self.block(else_body, pid, env, out);
                }
            }
        }
    }

    /// Records every tensor load inside `e`.
    fn expr_accesses(
        &self,
        e: &Expr,
        pid: &[Interval; 3],
        env: &HashMap<LocalId, Interval>,
        out: &mut Footprint,
    ) {
        match &e.kind {
            ExprKind::Load {
                tensor,
                index,
                other,
            } => {
                let region = self.region(tensor, index, pid, env);
                merge(&mut out.reads, tensor, region);
                for s in index {
                    match s {
                        Slice::Point(i) | Slice::Span { start: i, .. } => {
                            self.expr_accesses(i, pid, env, out)
                        }
                        Slice::Full => {}
                    }
                }
                if let Some(o) = other {
                    self.expr_accesses(o, pid, env, out);
                }
            }
            ExprKind::Slice { base, index } => {
                self.expr_accesses(base, pid, env, out);
                for s in index {
                    if let Slice::Point(i) | Slice::Span { start: i, .. } = s {
                        self.expr_accesses(i, pid, env, out);
                    }
                }
            }
            ExprKind::Unary { arg, .. } | ExprKind::Cast(arg) | ExprKind::Broadcast(arg) => {
                self.expr_accesses(arg, pid, env, out)
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr_accesses(lhs, pid, env, out);
                self.expr_accesses(rhs, pid, env, out);
            }
            ExprKind::Call { args, .. } => {
                for a in args {
                    self.expr_accesses(a, pid, env, out);
                }
            }
            _ => {}
        }
    }

    /// The box `tensor[index]` can touch, clipped to the tensor.
    fn region(
        &self,
        tensor: &str,
        index: &[Slice],
        pid: &[Interval; 3],
        env: &HashMap<LocalId, Interval>,
    ) -> Region {
        let shape = self.shapes.get(tensor).cloned().unwrap_or_default();
        let mut region = Region::whole(&shape);
        for (d, s) in index.iter().enumerate() {
            let Some(&extent) = shape.get(d) else {
                continue;
            };
            let bounds = match s {
                Slice::Point(i) => self.eval(i, pid, env),
                Slice::Span { start, len } => {
                    let len = len.eval(self.config).max(0);
                    self.eval(start, pid, env)
                        .map(|(a, b)| (a, b.saturating_add(len - 1)))
                }
                Slice::Full => None,
            };
            if let Some((a, b)) = bounds {
                let a = a.clamp(0, extent as i64) as usize;
                let b = (b.saturating_add(1)).clamp(0, extent as i64) as usize;
                region.start[d] = a.min(b);
                region.len[d] = b.saturating_sub(a);
            }
        }
        region
    }

    /// An interval holding every value `e` takes, or `None`.
    pub(crate) fn eval(
        &self,
        e: &Expr,
        pid: &[Interval; 3],
        env: &HashMap<LocalId, Interval>,
    ) -> Option<Interval> {
        if !e.is_scalar() {
            return None;
        }
        match &e.kind {
            ExprKind::Int(v) => Some((*v, *v)),
            ExprKind::Dim(n) => self.dims.get(n).map(|&v| (v as i64, v as i64)),
            ExprKind::Tune(n) => self.config.get(n).map(|v| (v, v)),
            ExprKind::Local(id) => env.get(id).copied(),
            ExprKind::Cast(a) | ExprKind::Broadcast(a) => self.eval(a, pid, env),
            ExprKind::Call {
                func: Builtin::ProgramId,
                args,
            } => axis(args).map(|a| pid[a]),
            ExprKind::Call {
                func: Builtin::NumPrograms,
                args,
            } => axis(args).map(|a| (self.grid[a] as i64, self.grid[a] as i64)),
            ExprKind::Call {
                func: func @ (Builtin::Cdiv | Builtin::Min | Builtin::Max),
                args,
            } if args.len() == 2 => {
                let (a, b) = (
                    self.eval(&args[0], pid, env)?,
                    self.eval(&args[1], pid, env)?,
                );
                match func {
                    Builtin::Min => Some((a.0.min(b.0), a.1.min(b.1))),
                    Builtin::Max => Some((a.0.max(b.0), a.1.max(b.1))),
                    // ceil(a / b) = (a + b - 1) div b for b > 0.
                    _ if b.0 > 0 => Some((
                        (a.0 + b.1 - 1).div_euclid(b.1),
                        (a.1 + b.0 - 1).div_euclid(b.0),
                    )),
                    _ => None,
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.eval(lhs, pid, env)?, self.eval(rhs, pid, env)?);
                match op {
                    BinOp::Add => Some((a.0.checked_add(b.0)?, a.1.checked_add(b.1)?)),
                    BinOp::Sub => Some((a.0.checked_sub(b.1)?, a.1.checked_sub(b.0)?)),
                    BinOp::Mul => {
                        let c = [
                            a.0.checked_mul(b.0)?,
                            a.0.checked_mul(b.1)?,
                            a.1.checked_mul(b.0)?,
                            a.1.checked_mul(b.1)?,
                        ];
                        Some((*c.iter().min()?, *c.iter().max()?))
                    }
                    BinOp::Div if b.0 > 0 && a.0 >= 0 => Some((a.0 / b.1, a.1 / b.0)),
                    BinOp::Rem if b.0 > 0 && a.0 >= 0 => Some((0, (b.1 - 1).min(a.1))),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

fn axis(args: &[Expr]) -> Option<usize> {
    match args.first().map(|a| &a.kind) {
        Some(ExprKind::Int(a @ 0..=2)) => Some(*a as usize),
        _ => None,
    }
}

fn merge(map: &mut BTreeMap<String, Region>, tensor: &str, region: Region) {
    match map.get_mut(tensor) {
        None => {
            map.insert(tensor.to_string(), region);
        }
        Some(r) if region.elements() == 0 => {
            let _ = r;
        }
        Some(r) if r.elements() == 0 => *r = region,
        Some(r) => {
            for d in 0..r.start.len().min(region.start.len()) {
                let end = (r.start[d] + r.len[d]).max(region.start[d] + region.len[d]);
                r.start[d] = r.start[d].min(region.start[d]);
                r.len[d] = end - r.start[d];
            }
        }
    }
}

fn collect_assigned(stmts: &[Stmt], out: &mut HashSet<LocalId>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { local, .. } => {
                out.insert(*local);
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                collect_assigned(body, out)
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                collect_assigned(then_body, out);
                collect_assigned(else_body, out);
            }
            _ => {}
        }
    }
}
