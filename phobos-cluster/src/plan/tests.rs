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
    PlanOptions::new(nodes)
}

/// The `@cluster` GEMM of `jobs/gemm_cluster.ph` (TILE_M, TILE_N searched).
fn cluster_job(m: usize, n: usize, k: usize) -> (Job, Binding) {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs");
    let text = format!(
        "source = gemm_cluster.ph\ntensor A = read f32 {m}x{k} file:///tmp/A.bin\ntensor B = read f32 {k}x{n} file:///tmp/B.bin\n\
         tensor C = write f32 {m}x{n} file:///tmp/C.bin\nscalar alpha = f32 1\nscalar beta = f32 0\n"
    );
    let job = Job::parse("gemm_cluster.job", &text, &base).unwrap();
    let binding = bind(&job).unwrap();
    (job, binding)
}

#[test]
fn without_autotune_the_defaults_and_the_fewest_supertiles() {
    let (job, binding) = cluster_job(1000, 900, 300);
    for nodes in [1, 2, 4, 8] {
        let plan = plan(&job, &binding, &options(nodes)).unwrap();
        assert_eq!(plan.config, binding.kernel.default_config());
        assert_eq!(plan.supertiles.len(), nodes, "nodes={nodes}");
    }
    // A budget forces more, smaller supertiles, each within it.
    let mut o = options(2);
    o.budget_bytes = Some(400_000);
    let plan = plan(&job, &binding, &o).unwrap();
    assert!(plan.supertiles.len() > 2);
    for st in &plan.supertiles {
        assert!(footprint_bytes(&st.footprint, &plan.elem_bytes) <= 400_000);
    }
}

#[test]
fn autotune_never_predicts_slower_than_the_defaults() {
    for (m, n, k) in [(1000, 900, 300), (4096, 4096, 4096), (300, 2000, 64)] {
        let (job, binding) = cluster_job(m, n, k);
        for nodes in [1, 3, 4, 16] {
            for link_bytes_per_s in [1e8, 1e9, 1e11] {
                let mut o = options(nodes);
                o.machine.link_bytes_per_s = link_bytes_per_s;
                let fixed = plan(&job, &binding, &o).unwrap();
                o.autotune = true;
                let tuned = plan(&job, &binding, &o).unwrap();
                assert!(
                    tuned.prediction.seconds <= fixed.prediction.seconds * 1.001,
                    "{m}x{n}x{k} on {nodes} at {link_bytes_per_s} B/s: tuned {:?} {:?} {:?}, fixed {:?} {:?}",
                    tuned.config.values,
                    tuned.supertile_programs,
                    tuned.prediction,
                    fixed.supertile_programs,
                    fixed.prediction,
                );
            }
        }
    }
}

#[test]
fn vram_bounds_every_supertile_and_segment() {
    let (job, binding) = cluster_job(1000, 900, 300);
    let mut o = options(2);
    o.autotune = true;
    let unbounded = plan(&job, &binding, &o).unwrap();
    let mut previous = 0;
    for vram in [4_000_000u64, 1_000_000, 300_000] {
        o.machine.vram_bytes = Some(vram);
        let plan = plan(&job, &binding, &o).unwrap();
        for st in &plan.supertiles {
            assert!(footprint_bytes(&st.footprint, &plan.elem_bytes) <= vram);
        }
        assert!(plan.prediction.peak_segment_bytes <= vram, "{vram}");
        assert!(plan.supertiles.len() >= previous.max(unbounded.supertiles.len()));
        previous = plan.supertiles.len();
    }
    // The tighter of --budget and --vram applies, and is named.
    o.budget_bytes = Some(2_000_000);
    o.machine.vram_bytes = Some(100);
    let err = plan(&job, &binding, &o).unwrap_err().to_string();
    assert!(err.contains("--vram 100 bytes"), "{err}");
    o.machine.vram_bytes = Some(3_000_000);
    assert_eq!(o.working_set_limit(), Some((2_000_000, "--budget")));
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
