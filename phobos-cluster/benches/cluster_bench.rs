//! Planner time and cost-model error as the node count grows to 1,024
//! (simulated, no machines): a 16384^3 SGEMM job on the `@cluster` GEMM
//! kernel, planned for N nodes, lowered, and run through the
//! discrete-event simulator; the error is the model's prediction against
//! the simulated makespan.
//!
//! `cargo bench -p phobos-cluster --bench cluster_bench`

use std::path::Path;
use std::time::Instant;

use phobos_cluster::job::{self, Job};
use phobos_cluster::plan::{self, Ingest, Machine, PlanOptions, simulate::simulate};

fn main() -> anyhow::Result<()> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs");
    let n = 16384;
    let text = format!(
        "source = gemm_cluster.ph\ntensor A = read f32 {n}x{n} file:///data/A.bin\ntensor B = read f32 {n}x{n} file:///data/B.bin\n\
         tensor C = rmw f32 {n}x{n} file:///data/C.bin\nscalar alpha = f32 1\nscalar beta = f32 0\n"
    );
    let job = Job::parse("bench.job", &text, &base)?;
    let binding = job::bind(&job)?;
    let machine = Machine::default();
    println!(
        "| nodes | ingest | supertiles | instructions | plan+lower ms | predicted s | simulated s | model error |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for ingest in [Ingest::Direct, Ingest::HomeFetch] {
        let mut nodes = 1;
        while nodes <= 1024 {
            let options = PlanOptions {
                budget_bytes: Some(4 << 30),
                ingest,
                autotune: true,
                machine,
                ..PlanOptions::new(nodes)
            };
            let started = Instant::now();
            let plan = plan::plan(&job, &binding, &options)?;
            let instrs = plan::lower(&plan);
            let plan_ms = started.elapsed().as_secs_f64() * 1e3;
            let simulated = simulate(&plan, &instrs, &machine);
            let predicted = plan.prediction.seconds;
            println!(
                "| {nodes} | {ingest:?} | {} | {} | {plan_ms:.1} | {predicted:.2} | {simulated:.2} | {:+.1}% |",
                plan.supertiles.len(),
                instrs.len(),
                (predicted - simulated) / simulated * 100.0
            );
            nodes *= 2;
        }
    }
    Ok(())
}
