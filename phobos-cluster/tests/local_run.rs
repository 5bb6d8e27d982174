//! Whole jobs from job files and tensor files: the plan run on 1, 2 and 4
//! nodes (in this process) against one interpreter launch over the whole
//! tensors: bit-identical, since every program runs the same code on the
//! same inputs. Plus the bad-input paths: a clear error and no output change.

use std::path::{Path, PathBuf};

use phobos_cluster::exec;
use phobos_cluster::interp::Program;
use phobos_cluster::job::{self, Job};
use phobos_cluster::plan::{self, PlanOptions};
use phobos_cluster::store::{self, Fill, HostTensor};
use phobos_rt::DType;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("phobos-cluster-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn kernels() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels")
}

/// Runs `job_text` (in `d`) on `nodes` and returns the bytes of `output`.
fn run(d: &Path, job_text: &str, nodes: usize, budget: Option<u64>, output: &str) -> Vec<u8> {
    std::fs::write(d.join("job.txt"), job_text).unwrap();
    let job = Job::load(&d.join("job.txt")).unwrap();
    let binding = job::bind(&job).unwrap();
    let options = PlanOptions {
        budget_bytes: budget,
        ..PlanOptions::new(nodes)
    };
    let plan = plan::plan(&job, &binding, &options).unwrap();
    assert!(plan.supertiles.len() >= nodes.min(plan.grid.iter().product()));
    let staging_before = job
        .outputs()
        .map(|t| store::staging_path(&t.path))
        .collect::<Vec<_>>();
    exec::run_local(&job, &binding, &plan, &|| {}).unwrap();
    for s in staging_before {
        assert!(!s.exists(), "staging copy left behind");
    }
    std::fs::read(d.join(output)).unwrap()
}

/// The reference: one interpreter launch over whole tensors read from `d`.
fn single_process(d: &Path, job_text: &str, output: &str) -> Vec<u8> {
    std::fs::write(d.join("ref.txt"), job_text).unwrap();
    let job = Job::load(&d.join("ref.txt")).unwrap();
    let binding = job::bind(&job).unwrap();
    let mut tensors: Vec<(String, HostTensor)> = job
        .tensors
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                if t.access == job::Access::Write {
                    HostTensor::zeros(t.dtype, &t.shape).unwrap()
                } else {
                    store::read_tensor(&t.path, t.dtype, &t.shape).unwrap()
                },
            )
        })
        .collect();
    let scalars = exec::scalar_values(&job);
    let scalar_refs: Vec<(&str, phobos_cluster::interp::Val)> = scalars
        .iter()
        .map(|(n, v)| (n.as_str(), v.clone()))
        .collect();
    {
        let refs = tensors.iter_mut().map(|(n, t)| (n.as_str(), t)).collect();
        let program = Program::new(
            &binding.kernel,
            &binding.kernel.default_config(),
            refs,
            &scalar_refs,
        )
        .unwrap();
        program.run_all().unwrap();
    }
    tensors
        .iter()
        .find(|(n, _)| n == output)
        .unwrap()
        .1
        .to_le_bytes()
        .unwrap()
}

fn init(d: &Path, name: &str, shape: &[usize], fill: Fill) {
    store::init_tensor(&d.join(name), DType::F32, shape, fill).unwrap();
}

#[test]
fn sgemm_on_1_2_4_nodes_equals_one_launch() {
    let d = dir("sgemm");
    let (m, n, k) = (173, 141, 67); // not multiples of any tile
    init(&d, "A.bin", &[m, k], Fill::Random { seed: 1 });
    init(&d, "B.bin", &[k, n], Fill::Random { seed: 2 });
    let job = |c: &str| {
        format!(
            "source = {}/gemm_f32.ph\ntensor A = read f32 {m}x{k} file://A.bin\ntensor B = read f32 {k}x{n} file://B.bin\n\
             tensor C = rmw f32 {m}x{n} file://{c}\nscalar alpha = f32 1.25\nscalar beta = f32 -0.5\n",
            kernels().display()
        )
    };
    init(&d, "C0.bin", &[m, n], Fill::Random { seed: 3 });
    let reference = single_process(&d, &job("C0.bin"), "C");
    for (nodes, budget) in [(1, None), (2, None), (4, None), (4, Some(200_000))] {
        let name = format!("C-{nodes}-{}.bin", budget.is_some());
        init(&d, &name, &[m, n], Fill::Random { seed: 3 });
        let out = run(&d, &job(&name), nodes, budget, &name);
        assert!(
            out == reference,
            "{nodes} nodes, budget {budget:?}: differs"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn flash_attention_on_1_2_4_nodes_equals_one_launch() {
    let d = dir("flash");
    let (h, s, t) = (3, 45, 71); // S and T not multiples of the blocks
    for (name, shape, seed) in [
        ("Q.bin", [h, s, 64], 4),
        ("K.bin", [h, t, 64], 5),
        ("V.bin", [h, t, 64], 6),
    ] {
        store::init_tensor(&d.join(name), DType::F32, &shape, Fill::Random { seed }).unwrap();
    }
    let job = |o: &str| {
        format!(
            "source = {}/flash_attn_f32.ph\ntensor Q = read f32 {h}x{s}x64 file://Q.bin\ntensor K = read f32 {h}x{t}x64 file://K.bin\n\
             tensor V = read f32 {h}x{t}x64 file://V.bin\ntensor O = write f32 {h}x{s}x64 file://{o}\nscalar scale = f32 0.125\n",
            kernels().display()
        )
    };
    let reference = single_process(&d, &job("O0.bin"), "O");
    for nodes in [1, 2, 4] {
        let name = format!("O-{nodes}.bin");
        let out = run(&d, &job(&name), nodes, None, &name);
        assert!(out == reference, "{nodes} nodes: differs");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_inputs_fail_clearly_and_leave_outputs_alone() {
    let d = dir("bad");
    init(&d, "A.bin", &[10, 6], Fill::Random { seed: 1 });
    init(&d, "B.bin", &[6, 8], Fill::Random { seed: 2 });
    init(&d, "C.bin", &[10, 8], Fill::Const(7.0));
    let before = std::fs::read(d.join("C.bin")).unwrap();
    let src = kernels().join("gemm_f32.ph");
    let good = format!(
        "source = {}\ntensor A = read f32 10x6 file://A.bin\ntensor B = read f32 6x8 file://B.bin\ntensor C = rmw f32 10x8 file://C.bin\nscalar alpha = f32 1\nscalar beta = f32 1\n",
        src.display()
    );
    let cases: Vec<(String, &str)> = vec![
        (
            good.replace("file://A.bin", "file://missing.bin"),
            "missing.bin",
        ),
        (good.replace("read f32 10x6", "read f32 10x7"), "dim `K`"),
        (
            good.replace(
                "scalar beta = f32 1",
                "scalar beta = f32 1\nscalar gamma = f32 2",
            ),
            "no parameter `gamma`",
        ),
        (
            good.replace("scalar beta = f32 1\n", ""),
            "needs scalar `beta`",
        ),
        (
            good.replace("rmw f32 10x8", "read f32 10x8"),
            "`write` or `rmw`",
        ),
        (
            good.replace("scalar alpha = f32 1", "scalar alpha = i32 1"),
            "`alpha` is f32 in the kernel",
        ),
    ];
    for (text, needle) in cases {
        std::fs::write(d.join("job.txt"), &text).unwrap();
        let err: String = match Job::load(&d.join("job.txt")) {
            Err(e) => e.to_string(),
            Ok(job) => match job::bind(&job) {
                Err(e) => e.to_string(),
                Ok(binding) => {
                    let options = PlanOptions::new(2);
                    let plan = plan::plan(&job, &binding, &options).unwrap();
                    exec::run_local(&job, &binding, &plan, &|| {})
                        .unwrap_err()
                        .to_string()
                }
            },
        };
        assert!(err.contains(needle), "expected `{needle}` in: {err}");
        assert_eq!(
            std::fs::read(d.join("C.bin")).unwrap(),
            before,
            "output changed: {needle}"
        );
        assert!(!store::staging_path(&d.join("C.bin")).exists());
    }
    // A short input file: named with both sizes.
    std::fs::write(d.join("A.bin"), [0u8; 12]).unwrap();
    std::fs::write(d.join("job.txt"), &good).unwrap();
    let job = Job::load(&d.join("job.txt")).unwrap();
    let binding = job::bind(&job).unwrap();
    let options = PlanOptions::new(1);
    let plan = plan::plan(&job, &binding, &options).unwrap();
    let err = exec::run_local(&job, &binding, &plan, &|| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("240 bytes") && err.contains("12"), "{err}");
    assert_eq!(std::fs::read(d.join("C.bin")).unwrap(), before);
    std::fs::remove_dir_all(&d).unwrap();
}
