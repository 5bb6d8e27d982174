//! Planning a job: the launch grid cut into supertiles (boxes of programs),
//! supertile size and `@cluster` values picked by a cost model, supertiles
//! placed on nodes, each node's work cut into segments that fit its memory
//! budget, and lowered to a per-node instruction DAG.
//!
//! The parametric DAG: a supertile is a box of grid programs; its inputs
//! are the tensor regions its footprint reads ([`footprint`]); its outputs
//! the regions it writes. Supertiles of one job never write overlapping
//! regions (checked), so any supertile can be recomputed on any node from
//! its inputs alone: that is the lineage recovery relies on.

pub mod cost;
pub mod dot;
pub mod footprint;
pub mod lower;
pub mod simulate;

use std::collections::BTreeMap;

pub use cost::Machine;
pub use footprint::{Footprint, Region};
pub use lower::{Instr, Op, lower};

use phobos_build::ir::{Config, Kernel, TuneKind};

use crate::job::{Binding, Job};
use footprint::Analysis;

/// How a node gets input regions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ingest {
    /// Every node reads its inputs from the file store.
    Direct,
    /// One node (the region's home) reads it; others fetch it from that node.
    HomeFetch,
}

impl std::str::FromStr for Ingest {
    type Err = String;
    fn from_str(s: &str) -> Result<Ingest, String> {
        match s {
            "direct" => Ok(Ingest::Direct),
            "home-fetch" => Ok(Ingest::HomeFetch),
            other => Err(format!(
                "unknown ingest `{other}`: expected direct or home-fetch"
            )),
        }
    }
}

#[derive(Clone, Debug)]
pub struct PlanOptions {
    pub nodes: usize,
    /// Bytes of tensor regions a node may hold at once; `None`: unlimited.
    pub budget_bytes: Option<u64>,
    pub ingest: Ingest,
    /// Search the `@cluster` values and the supertile shape with the cost
    /// model. Off: `@cluster` values at their defaults and the fewest
    /// supertiles (at least one per node) that fit the limits.
    pub autotune: bool,
    pub machine: Machine,
}

impl PlanOptions {
    /// `nodes` nodes, no limits, direct ingest, no autotuning, the
    /// default machine.
    pub fn new(nodes: usize) -> PlanOptions {
        PlanOptions {
            nodes,
            budget_bytes: None,
            ingest: Ingest::Direct,
            autotune: false,
            machine: Machine::default(),
        }
    }

    /// The tighter of `--budget` and `--vram`, with the flag that set it:
    /// no supertile, and no segment of several, may hold more.
    pub fn working_set_limit(&self) -> Option<(u64, &'static str)> {
        match (self.budget_bytes, self.machine.vram_bytes) {
            (Some(b), Some(v)) if v < b => Some((v, "--vram")),
            (Some(b), _) => Some((b, "--budget")),
            (None, Some(v)) => Some((v, "--vram")),
            (None, None) => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("--nodes must be at least 1")]
    NoNodes,
    #[error("kernel `{kernel}`: {message}")]
    Kernel { kernel: String, message: String },
    #[error(
        "no supertile fits {flag} {limit_bytes} bytes (the smallest needs {needed_bytes}; raise {flag} or use more nodes)"
    )]
    Budget {
        flag: &'static str,
        limit_bytes: u64,
        needed_bytes: u64,
    },
}

/// One box of programs and what it touches.
#[derive(Clone, Debug, PartialEq)]
pub struct Supertile {
    pub id: usize,
    pub lo: [usize; 3],
    pub hi: [usize; 3],
    pub footprint: Footprint,
    pub node: usize,
    pub segment: usize,
}

impl Supertile {
    pub fn programs(&self) -> usize {
        (0..3).map(|d| self.hi[d] - self.lo[d]).product()
    }
}

/// The cost model's prediction for a plan.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Prediction {
    pub seconds: f64,
    pub flops: f64,
    /// Bytes read from files or fetched from peers, plus bytes stored.
    pub bytes_moved: f64,
    /// Largest bytes one segment holds at once.
    pub peak_segment_bytes: u64,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub kernel: Kernel,
    pub config: Config,
    pub dims: BTreeMap<String, usize>,
    pub grid: [usize; 3],
    /// Programs per supertile along each grid axis.
    pub supertile_programs: [usize; 3],
    pub supertiles: Vec<Supertile>,
    pub nodes: usize,
    pub ingest: Ingest,
    /// Per node, its segments' supertile ids.
    pub segments: Vec<Vec<Vec<usize>>>,
    pub flops_per_program: f64,
    pub prediction: Prediction,
    /// Element bytes per tensor.
    pub elem_bytes: BTreeMap<String, usize>,
}

/// Plans `binding` for `job` under `options`.
pub fn plan(job: &Job, binding: &Binding, options: &PlanOptions) -> Result<Plan, PlanError> {
    if options.nodes == 0 {
        return Err(PlanError::NoNodes);
    }
    let kernel = &binding.kernel;
    if contains_atomic(&kernel.body) {
        return Err(PlanError::Kernel {
            kernel: kernel.name.clone(),
            message: "kernels with atomic_add combine programs' results in place and cannot be split into supertiles".into(),
        });
    }
    let elem_bytes: BTreeMap<String, usize> = job
        .tensors
        .iter()
        .map(|t| (t.name.clone(), t.dtype.size_bytes()))
        .collect();
    // Candidate configs: under --autotune every @cluster combination, else
    // the defaults; @autotune parameters stay at their defaults.
    let cluster_params: Vec<_> = kernel
        .tune
        .iter()
        .filter(|t| t.kind == TuneKind::Cluster)
        .collect();
    let defaults = kernel.default_config();
    let configs: Vec<Config> = if options.autotune {
        kernel
            .configs()
            .into_iter()
            .filter(|c| {
                c.values.iter().all(|(n, v)| {
                    cluster_params.iter().any(|p| &p.name == n) || defaults.get(n) == Some(*v)
                })
            })
            .collect()
    } else {
        vec![defaults]
    };
    let limit = options.working_set_limit();
    // (rank, config, grid, shape, flops per program); the lowest rank wins.
    type Candidate = (Rank, Config, [usize; 3], [usize; 3], f64);
    let mut best: Option<Candidate> = None;
    let mut smallest_needed = u64::MAX;
    for config in &configs {
        let grid = grid_of(kernel, config, &binding.dims)?;
        let analysis = Analysis::new(kernel, config, &binding.dims, grid);
        let flops_per_program = cost::program_flops(kernel, &analysis, config);
        for shape in candidate_shapes(grid, options.nodes) {
            // Supertiles of one shape are alike: cost the first, scale.
            let first = analysis.footprint([0; 3], shape.map(|s| s.max(1)));
            let bytes = footprint_bytes(&first, &elem_bytes);
            smallest_needed = smallest_needed.min(bytes);
            if limit.is_some_and(|(b, _)| bytes > b) {
                continue;
            }
            let count: usize = (0..3).map(|d| grid[d].div_ceil(shape[d].max(1))).product();
            let total_bytes = count as f64 * bytes as f64;
            let rank = if options.autotune {
                let per_node = count.div_ceil(options.nodes) as f64;
                let programs: f64 = shape.iter().map(|&s| s as f64).product();
                Rank {
                    primary: options.machine.seconds(
                        per_node * programs * flops_per_program,
                        per_node * bytes as f64,
                    ),
                    bytes: total_bytes,
                }
            } else {
                Rank {
                    primary: count as f64,
                    bytes: total_bytes,
                }
            };
            if best.as_ref().is_none_or(|(b, ..)| rank.beats(b)) {
                best = Some((rank, config.clone(), grid, shape, flops_per_program));
            }
        }
    }
    match best {
        Some((_, config, grid, shape, flops)) => build(
            kernel,
            &config,
            binding,
            options,
            grid,
            shape,
            flops,
            &elem_bytes,
        ),
        None => {
            let (limit_bytes, flag) = limit.unwrap_or((0, "--budget"));
            Err(PlanError::Budget {
                flag,
                limit_bytes,
                needed_bytes: smallest_needed,
            })
        }
    }
}

/// How good a candidate plan is: seconds under the cost model (or, without
/// --autotune, the supertile count), then total bytes moved.
#[derive(Clone, Copy, Debug)]
struct Rank {
    primary: f64,
    bytes: f64,
}

impl Rank {
    fn beats(&self, other: &Rank) -> bool {
        self.primary < other.primary * 0.999
            || (self.primary <= other.primary * 1.001 && self.bytes < other.bytes)
    }
}

#[allow(clippy::too_many_arguments)]
fn build(
    kernel: &Kernel,
    config: &Config,
    binding: &Binding,
    options: &PlanOptions,
    grid: [usize; 3],
    shape: [usize; 3],
    flops_per_program: f64,
    elem_bytes: &BTreeMap<String, usize>,
) -> Result<Plan, PlanError> {
    let analysis = Analysis::new(kernel, config, &binding.dims, grid);
    let counts = [0, 1, 2].map(|d| grid[d].div_ceil(shape[d].max(1)));
    let total: usize = counts.iter().product();
    let mut supertiles = Vec::with_capacity(total);
    for id in 0..total {
        let index = [
            id % counts[0],
            (id / counts[0]) % counts[1],
            id / (counts[0] * counts[1]),
        ];
        let lo = [0, 1, 2].map(|d| index[d] * shape[d]);
        let hi = [0, 1, 2].map(|d| ((index[d] + 1) * shape[d]).min(grid[d]));
        let footprint = analysis.footprint(lo, hi);
        supertiles.push(Supertile {
            id,
            lo,
            hi,
            footprint,
            // Contiguous blocks per node keep neighbours' inputs together.
            node: id * options.nodes / total.max(1),
            segment: 0,
        });
    }
    // Outputs must not overlap, or recomputing one supertile could
    // overwrite another's stored result. Footprints grow monotonically with
    // the program ids for the kernels the analysis bounds, so comparing
    // each supertile with its grid neighbours (and all pairs of small
    // plans) finds an overlap in O(n).
    let strides = [1, counts[0], counts[0] * counts[1]];
    for a in &supertiles {
        let neighbours: Vec<usize> = if total <= 64 {
            (a.id + 1..total).collect()
        } else {
            strides
                .iter()
                .map(|s| a.id + s)
                .filter(|&b| b < total)
                .collect()
        };
        for b in neighbours.into_iter().map(|b| &supertiles[b]) {
            for (name, ra) in &a.footprint.writes {
                if let Some(rb) = b.footprint.writes.get(name)
                    && ra.elements() > 0
                    && rb.elements() > 0
                    && ra.overlaps(rb)
                {
                    return Err(PlanError::Kernel {
                        kernel: kernel.name.clone(),
                        message: format!(
                            "supertiles {} and {} both write `{name}` ({} and {}); the planner needs disjoint outputs",
                            a.id,
                            b.id,
                            ra.describe(),
                            rb.describe()
                        ),
                    });
                }
            }
        }
    }
    // Segments: consecutive supertiles of a node while they fit the budget.
    let mut segments: Vec<Vec<Vec<usize>>> = vec![Vec::new(); options.nodes];
    let mut peak = 0u64;
    for (node, node_segments) in segments.iter_mut().enumerate() {
        let mut current: Vec<usize> = Vec::new();
        let mut current_bytes = 0u64;
        for st in supertiles.iter().filter(|s| s.node == node) {
            let bytes = footprint_bytes(&st.footprint, elem_bytes);
            if !current.is_empty()
                && options
                    .working_set_limit()
                    .is_some_and(|(b, _)| current_bytes + bytes > b)
            {
                node_segments.push(std::mem::take(&mut current));
                current_bytes = 0;
            }
            current.push(st.id);
            current_bytes += bytes;
            peak = peak.max(current_bytes);
        }
        if !current.is_empty() {
            node_segments.push(current);
        }
    }
    for (node, segs) in segments.iter().enumerate() {
        for (s, ids) in segs.iter().enumerate() {
            for &id in ids {
                supertiles[id].segment = s;
                debug_assert_eq!(supertiles[id].node, node);
            }
        }
    }
    let mut plan = Plan {
        kernel: kernel.clone(),
        config: config.clone(),
        dims: binding.dims.clone(),
        grid,
        supertile_programs: shape,
        supertiles,
        nodes: options.nodes,
        ingest: options.ingest,
        segments,
        flops_per_program,
        prediction: Prediction::default(),
        elem_bytes: elem_bytes.clone(),
    };
    plan.prediction = predict(&plan, &options.machine);
    plan.prediction.peak_segment_bytes = peak;
    Ok(plan)
}

/// The cost model's time and traffic for a placed plan: per node, its
/// supertiles' flops and bytes; the slowest node sets the time. Under
/// home-fetch a region read by several nodes is read from the store once,
/// by its home, which also sends it to the other nodes (links are full
/// duplex, so sending is its own direction).
pub fn predict(plan: &Plan, machine: &Machine) -> Prediction {
    let mut node_flops = vec![0.0; plan.nodes];
    let mut node_bytes = vec![0.0; plan.nodes];
    // Links are full duplex: what a home node sends to fetchers is its own
    // direction, next to what it reads and stores.
    let mut node_sent = vec![0.0; plan.nodes];
    // Under home-fetch the first node to read a region is its home: it
    // reads the store, and its link also carries every other node's fetch.
    let mut homes: std::collections::HashMap<(String, Region), usize> =
        std::collections::HashMap::new();
    for st in &plan.supertiles {
        node_flops[st.node] += st.programs() as f64 * plan.flops_per_program;
        for (name, region) in &st.footprint.reads {
            let bytes =
                (region.elements() * plan.elem_bytes.get(name).copied().unwrap_or(4)) as f64;
            // Every supertile loads (or fetches) its own copy.
            node_bytes[st.node] += bytes;
            if plan.ingest == Ingest::HomeFetch {
                let home = *homes
                    .entry((name.clone(), region.clone()))
                    .or_insert(st.node);
                if home != st.node {
                    node_sent[home] += bytes;
                }
            }
        }
        for (name, region) in &st.footprint.writes {
            node_bytes[st.node] +=
                (region.elements() * plan.elem_bytes.get(name).copied().unwrap_or(4)) as f64;
        }
    }
    let seconds = (0..plan.nodes)
        .map(|n| {
            machine
                .seconds(node_flops[n], node_bytes[n])
                .max(node_sent[n] / machine.link_bytes_per_s)
        })
        .fold(0.0, f64::max);
    Prediction {
        seconds,
        flops: node_flops.iter().sum(),
        bytes_moved: node_bytes.iter().sum(),
        peak_segment_bytes: 0,
    }
}

fn footprint_bytes(f: &Footprint, elem_bytes: &BTreeMap<String, usize>) -> u64 {
    f.reads
        .iter()
        .chain(f.writes.iter().filter(|(n, _)| !f.reads.contains_key(*n)))
        .map(|(n, r)| (r.elements() * elem_bytes.get(n).copied().unwrap_or(4)) as u64)
        .sum()
}

/// Supertile shapes to consider: powers of two of programs per axis (and
/// the whole axis), with at least `nodes` supertiles where the grid allows.
fn candidate_shapes(grid: [usize; 3], nodes: usize) -> Vec<[usize; 3]> {
    let axis = |g: usize| {
        let mut v = Vec::new();
        let mut s = 1usize;
        while s < g {
            v.push(s);
            s *= 2;
        }
        v.push(g.max(1));
        v
    };
    let total: usize = grid.iter().map(|&g| g.max(1)).product();
    let mut out = Vec::new();
    for &a in &axis(grid[0]) {
        for &b in &axis(grid[1]) {
            for &c in &axis(grid[2]) {
                let count: usize = [a, b, c]
                    .iter()
                    .zip(grid)
                    .map(|(&s, g)| g.max(1).div_ceil(s))
                    .product();
                if count >= nodes.min(total) {
                    out.push([a, b, c]);
                }
            }
        }
    }
    out
}

/// The launch grid under `config` and the job's dims.
pub fn grid_of(
    kernel: &Kernel,
    config: &Config,
    dims: &BTreeMap<String, usize>,
) -> Result<[usize; 3], PlanError> {
    let analysis = Analysis::new(kernel, config, dims, [1; 3]);
    let mut grid = [1usize; 3];
    for (axis, e) in kernel.grid.iter().enumerate().take(3) {
        let env = std::collections::HashMap::new();
        match analysis.eval(e, &[(0, 0); 3], &env) {
            Some((v, w)) if v == w && v >= 0 => grid[axis] = v as usize,
            _ => {
                return Err(PlanError::Kernel {
                    kernel: kernel.name.clone(),
                    message: format!(
                        "grid axis {axis} does not evaluate to a non-negative constant"
                    ),
                });
            }
        }
    }
    Ok(grid)
}

fn contains_atomic(stmts: &[phobos_build::ir::Stmt]) -> bool {
    use phobos_build::ir::StmtKind;
    stmts.iter().any(|s| match &s.kind {
        StmtKind::AtomicAdd { .. } => true,
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => contains_atomic(body),
        StmtKind::If {
            then_body,
            else_body,
            ..
        } => contains_atomic(then_body) || contains_atomic(else_body),
        _ => false,
    })
}

#[cfg(test)]
mod tests;
