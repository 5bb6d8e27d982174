use std::path::Path;

use super::*;
use crate::job::{Job, bind};

fn gemm_job(m: usize, n: usize, k: usize) -> (Job, Binding) {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels");
    let text = format!(
        "source = gemm_f32.ph\ntensor A = read f32 {m}x{k} file:///tmp/A.bin\ntensor B = read f32 {k}x{n} file:///tmp/B.bin\n\
         tensor C = rmw f32 {m}x{n} file:///tmp/C.bin\nscalar alpha = f32 1\nscalar beta = f32 0\n"
    );
    let job = Job::parse("gemm.job", &text, &base).unwrap();
    let binding = bind(&job).unwrap();
    (job, binding)
}

fn options(nodes: usize) -> PlanOptions {
    PlanOptions {
        nodes,
        budget_bytes: None,
        ingest: Ingest::Direct,
        machine: Machine::default(),
    }
}

#[test]
fn supertiles_cover_the_output_once() {
    for nodes in [1, 2, 3, 4, 7] {
        let (job, binding) = gemm_job(100, 70, 50);
        let plan = plan(&job, &binding, &options(nodes)).unwrap();
        let mut covered = vec![0u8; 100 * 70];
        for st in &plan.supertiles {
            let c = &st.footprint.writes["C"];
            for r in c.start[0]..c.start[0] + c.len[0] {
                for col in c.start[1]..c.start[1] + c.len[1] {
                    covered[r * 70 + col] += 1;
                }
            }
            assert!(st.node < nodes);
        }
        assert!(covered.iter().all(|&c| c == 1), "nodes={nodes}");
        // Every node gets work when there are enough programs.
        for node in 0..nodes {
            assert!(
                plan.supertiles.iter().any(|s| s.node == node),
                "node {node} idle"
            );
        }
    }
}

#[test]
fn gemm_footprint_is_the_row_and_column_panels() {
    let (job, binding) = gemm_job(100, 70, 50);
    let plan = plan(&job, &binding, &options(2)).unwrap();
    let tm = plan.config.get("TILE_M").unwrap() as usize;
    let tn = plan.config.get("TILE_N").unwrap() as usize;
    for st in &plan.supertiles {
        let a = &st.footprint.reads["A"];
        let b = &st.footprint.reads["B"];
        assert_eq!(a.start, vec![st.lo[0] * tm, 0]);
        assert_eq!(a.len, vec![(st.hi[0] * tm).min(100) - st.lo[0] * tm, 50]);
        assert_eq!(b.start, vec![0, st.lo[1] * tn]);
        assert_eq!(b.len, vec![50, (st.hi[1] * tn).min(70) - st.lo[1] * tn]);
        assert_eq!(st.footprint.reads["C"], st.footprint.writes["C"]);
    }
}

#[test]
fn budget_cuts_segments_and_lowering_is_a_dag() {
    let (job, binding) = gemm_job(256, 256, 64);
    let mut o = options(2);
    o.budget_bytes = Some(100_000);
    let plan = plan(&job, &binding, &o).unwrap();
    assert!(plan.prediction.peak_segment_bytes <= 100_000);
    assert!(
        plan.segments.iter().any(|s| s.len() > 1),
        "{:?}",
        plan.segments
    );
    let instrs = lower(&plan);
    for i in &instrs {
        assert!(i.deps.iter().all(|&d| d < i.id), "deps point backwards");
    }
    let computes = instrs
        .iter()
        .filter(|i| matches!(i.op, Op::Compute { .. }))
        .count();
    assert_eq!(computes, plan.supertiles.len());
    let dot = dot::to_dot(&plan, &instrs);
    assert!(
        dot.starts_with("digraph plan {")
            && dot.contains("cluster_node1")
            && dot.contains("COMPUTE")
    );
    o.budget_bytes = Some(10);
    assert!(matches!(
        super::plan(&job, &binding, &o),
        Err(PlanError::Budget { .. })
    ));
}

#[test]
fn home_fetch_reads_each_panel_from_the_store_once() {
    let (job, binding) = gemm_job(256, 256, 64);
    let mut o = options(4);
    o.ingest = Ingest::HomeFetch;
    let plan = plan(&job, &binding, &o).unwrap();
    let instrs = lower(&plan);
    let mut loads = std::collections::HashSet::new();
    for i in &instrs {
        if let Op::Load { tensor, region, .. } = &i.op {
            assert!(
                loads.insert((tensor.clone(), region.clone())),
                "{tensor} {region:?} loaded twice"
            );
        }
        if let Op::Fetch { from_node, .. } = &i.op {
            assert_ne!(*from_node, i.node);
        }
    }
}
