//! Lowering a plan to per-node instructions with explicit dependencies:
//! per supertile, ALLOC and LOAD (or FETCH from the region's home node)
//! each region it touches, COMPUTE, STORE what it writes, FREE.

use std::collections::HashMap;

use super::{Ingest, Plan, Region};

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Alloc {
        buffer: usize,
        bytes: u64,
    },
    Load {
        buffer: usize,
        tensor: String,
        region: Region,
    },
    Fetch {
        buffer: usize,
        tensor: String,
        region: Region,
        from_node: usize,
    },
    Compute {
        supertile: usize,
    },
    Store {
        buffer: usize,
        tensor: String,
        region: Region,
    },
    Free {
        buffer: usize,
    },
}

impl Op {
    pub fn name(&self) -> &'static str {
        match self {
            Op::Alloc { .. } => "ALLOC",
            Op::Load { .. } => "LOAD",
            Op::Fetch { .. } => "FETCH",
            Op::Compute { .. } => "COMPUTE",
            Op::Store { .. } => "STORE",
            Op::Free { .. } => "FREE",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Instr {
    pub id: usize,
    pub node: usize,
    pub segment: usize,
    pub op: Op,
    /// Instructions (any node) that must retire first.
    pub deps: Vec<usize>,
}

/// The instruction DAG of `plan`, in an order that respects dependencies.
pub fn lower(plan: &Plan) -> Vec<Instr> {
    let mut out: Vec<Instr> = Vec::new();
    let mut next_buffer = 0usize;
    // (tensor, region) -> (home node, LOAD instruction) under home-fetch.
    let mut homes: HashMap<(String, Region), (usize, usize)> = HashMap::new();
    let push = |out: &mut Vec<Instr>, node: usize, segment: usize, op: Op, deps: Vec<usize>| {
        let id = out.len();
        out.push(Instr {
            id,
            node,
            segment,
            op,
            deps,
        });
        id
    };
    for st in &plan.supertiles {
        let (node, segment) = (st.node, st.segment);
        let mut compute_deps = Vec::new();
        let mut buffers: Vec<(usize, usize, String)> = Vec::new();
        let mut names: Vec<&String> = st.footprint.reads.keys().collect();
        for n in st.footprint.writes.keys() {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        for name in names {
            let region = buffer_region(st, name);
            let bytes =
                (region.elements() * plan.elem_bytes.get(name).copied().unwrap_or(4)) as u64;
            let buffer = next_buffer;
            next_buffer += 1;
            let alloc = push(
                &mut out,
                node,
                segment,
                Op::Alloc { buffer, bytes },
                Vec::new(),
            );
            let mut last = alloc;
            if st.footprint.reads.contains_key(name) {
                let key = (name.clone(), region.clone());
                let fetch_from = match (plan.ingest, homes.get(&key)) {
                    (Ingest::HomeFetch, Some(&(home, load))) if home != node => Some((home, load)),
                    _ => None,
                };
                last = match fetch_from {
                    Some((home, load)) => push(
                        &mut out,
                        node,
                        segment,
                        Op::Fetch {
                            buffer,
                            tensor: name.clone(),
                            region: region.clone(),
                            from_node: home,
                        },
                        vec![alloc, load],
                    ),
                    None => {
                        let load = push(
                            &mut out,
                            node,
                            segment,
                            Op::Load {
                                buffer,
                                tensor: name.clone(),
                                region: region.clone(),
                            },
                            vec![alloc],
                        );
                        homes.entry(key).or_insert((node, load));
                        load
                    }
                };
            }
            compute_deps.push(last);
            buffers.push((buffer, alloc, name.clone()));
        }
        let compute = push(
            &mut out,
            node,
            segment,
            Op::Compute { supertile: st.id },
            compute_deps,
        );
        let mut free_deps: HashMap<usize, Vec<usize>> = HashMap::new();
        for (buffer, _, name) in &buffers {
            if let Some(region) = st.footprint.writes.get(name) {
                let store = push(
                    &mut out,
                    node,
                    segment,
                    Op::Store {
                        buffer: *buffer,
                        tensor: name.clone(),
                        region: region.clone(),
                    },
                    vec![compute],
                );
                free_deps.entry(*buffer).or_default().push(store);
            }
        }
        for (buffer, _, _) in &buffers {
            let mut deps = free_deps.remove(buffer).unwrap_or_default();
            deps.push(compute);
            push(&mut out, node, segment, Op::Free { buffer: *buffer }, deps);
        }
    }
    out
}

/// The region a supertile's buffer for `tensor` holds: what it reads and
/// writes of it, as one box.
pub fn buffer_region(st: &super::Supertile, tensor: &str) -> Region {
    match (
        st.footprint.reads.get(tensor),
        st.footprint.writes.get(tensor),
    ) {
        (Some(r), Some(w)) => {
            let mut out = r.clone();
            for d in 0..out.start.len() {
                let end = (r.start[d] + r.len[d]).max(w.start[d] + w.len[d]);
                out.start[d] = r.start[d].min(w.start[d]);
                out.len[d] = end - out.start[d];
            }
            out
        }
        (Some(r), None) => r.clone(),
        (None, Some(w)) => w.clone(),
        (None, None) => Region {
            start: Vec::new(),
            len: Vec::new(),
        },
    }
}
