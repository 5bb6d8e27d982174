//! A discrete-event simulation of a lowered plan, to measure the cost
//! model's error without machines: each node has one compute lane and one
//! link lane; LOAD/FETCH/STORE take bytes / link bandwidth on the node's
//! link (a FETCH also on the home node's sending direction: links are
//! full duplex), COMPUTE takes flops / leaf
//! rate; an instruction starts when its dependencies are done and its lane
//! is free, in the order the lowering emitted it.

use super::{Instr, Machine, Op, Plan};

/// The simulated makespan in seconds.
pub fn simulate(plan: &Plan, instrs: &[Instr], machine: &Machine) -> f64 {
    let mut finish = vec![0.0f64; instrs.len()];
    let mut compute_free = vec![0.0f64; plan.nodes];
    let mut link_free = vec![0.0f64; plan.nodes];
    let mut send_free = vec![0.0f64; plan.nodes];
    for i in instrs {
        let ready = i.deps.iter().map(|&d| finish[d]).fold(0.0, f64::max);
        let bytes = |tensor: &str, region: &super::Region| {
            (region.elements() * plan.elem_bytes.get(tensor).copied().unwrap_or(4)) as f64
        };
        finish[i.id] = match &i.op {
            Op::Alloc { .. } | Op::Free { .. } => ready,
            Op::Compute { supertile } => {
                let flops = plan.supertiles[*supertile].programs() as f64 * plan.flops_per_program;
                let start = ready.max(compute_free[i.node]);
                compute_free[i.node] = start + flops / machine.leaf_flops;
                compute_free[i.node]
            }
            Op::Load { tensor, region, .. } | Op::Store { tensor, region, .. } => {
                let start = ready.max(link_free[i.node]);
                link_free[i.node] = start + bytes(tensor, region) / machine.link_bytes_per_s;
                link_free[i.node]
            }
            Op::Fetch {
                tensor,
                region,
                from_node,
                ..
            } => {
                let start = ready.max(link_free[i.node]).max(send_free[*from_node]);
                let end = start + bytes(tensor, region) / machine.link_bytes_per_s;
                link_free[i.node] = end;
                send_free[*from_node] = end;
                end
            }
        };
    }
    finish.into_iter().fold(0.0, f64::max)
}
