//! The per-node instruction DAG as Graphviz: one cluster per node, one
//! box per instruction, an edge per dependency (dashed across nodes).

use std::fmt::Write;

use super::{Instr, Op, Plan};

pub fn to_dot(plan: &Plan, instrs: &[Instr]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "digraph plan {{");
    let _ = writeln!(
        s,
        "  rankdir=TB; node [shape=box, fontname=monospace, fontsize=9];"
    );
    let _ = writeln!(
        s,
        "  label=\"{} grid={:?} supertile={:?} programs, {} supertiles on {} nodes\";",
        plan.kernel.name,
        plan.grid,
        plan.supertile_programs,
        plan.supertiles.len(),
        plan.nodes
    );
    for node in 0..plan.nodes {
        let _ = writeln!(s, "  subgraph cluster_node{node} {{ label=\"node{node}\";");
        for i in instrs.iter().filter(|i| i.node == node) {
            let text = match &i.op {
                Op::Alloc { buffer, bytes } => format!("ALLOC b{buffer} {bytes}B"),
                Op::Load {
                    buffer,
                    tensor,
                    region,
                } => format!("LOAD b{buffer} {tensor}{}", region.describe()),
                Op::Fetch {
                    buffer,
                    tensor,
                    region,
                    from_node,
                } => {
                    format!(
                        "FETCH b{buffer} {tensor}{} from node{from_node}",
                        region.describe()
                    )
                }
                Op::Compute { supertile } => {
                    let st = &plan.supertiles[*supertile];
                    format!("COMPUTE st{supertile} pid {:?}..{:?}", st.lo, st.hi)
                }
                Op::Store {
                    buffer,
                    tensor,
                    region,
                } => format!("STORE b{buffer} {tensor}{}", region.describe()),
                Op::Free { buffer } => format!("FREE b{buffer}"),
            };
            let _ = writeln!(
                s,
                "    i{} [label=\"{}: seg{} {}\"];",
                i.id, i.id, i.segment, text
            );
        }
        let _ = writeln!(s, "  }}");
    }
    for i in instrs {
        for d in &i.deps {
            let style = if instrs.get(*d).is_some_and(|x| x.node != i.node) {
                " [style=dashed]"
            } else {
                ""
            };
            let _ = writeln!(s, "  i{d} -> i{}{style};", i.id);
        }
    }
    let _ = writeln!(s, "}}");
    s
}
