//! The Slurm path on a one-machine Slurm (`scripts/slurm_local.sh`:
//! munged, slurmctld and slurmd on this host): the batch script
//! `phobos-cluster slurm` prints, submitted with `sbatch --wait`, runs the
//! scheduler and two pods (ids from SLURM_PROCID) and gives the
//! single-process result bit for bit. Skips, saying why, only when Slurm
//! cannot be installed or started here.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use phobos_cluster::store::{self, Fill};
use phobos_rt::DType;

const BIN: &str = env!("CARGO_BIN_EXE_phobos-cluster");

fn bounded(mut cmd: Command, limit: Duration) -> std::process::Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{cmd:?} did not finish within {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn the_slurm_script_runs_the_job_on_a_local_slurm() {
    let root = std::env::temp_dir().join("phobos-slurm");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm_local.sh");
    let mut setup = Command::new(&script);
    setup.arg(&root);
    let out = bounded(setup, Duration::from_secs(600));
    if out.status.code() == Some(2) {
        eprintln!(
            "SKIPPED: no local Slurm: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conf = String::from_utf8(out.stdout).unwrap().trim().to_string();

    let d = std::env::temp_dir().join(format!("phobos-slurm-job-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let (m, n, k) = (97, 83, 45);
    for (name, shape, seed) in [
        ("A.bin", [m, k], 1),
        ("B.bin", [k, n], 2),
        ("C.bin", [m, n], 3),
        ("Cref.bin", [m, n], 3),
    ] {
        store::init_tensor(&d.join(name), DType::F32, &shape, Fill::Random { seed }).unwrap();
    }
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels");
    let job = |c: &str| {
        let path = d.join(format!("{c}.job"));
        std::fs::write(
            &path,
            format!(
                "source = {}/gemm_f32.ph\ntensor A = read f32 {m}x{k} file://A.bin\n\
                 tensor B = read f32 {k}x{n} file://B.bin\ntensor C = rmw f32 {m}x{n} file://{c}\n\
                 scalar alpha = f32 1.0\nscalar beta = f32 0.25\n",
                kernels.display()
            ),
        )
        .unwrap();
        path
    };
    let mut reference = Command::new(BIN);
    reference.args(["run", "--in-process"]).arg(job("Cref.bin"));
    assert!(
        bounded(reference, Duration::from_secs(120))
            .status
            .success()
    );

    let port = std::net::TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let mut generate = Command::new(BIN);
    generate
        .arg("slurm")
        .arg(job("C.bin"))
        .args(["--machines", "1", "--pods-per-machine", "2"])
        .args(["--bin", BIN, "--port", &port, "--time", "00:05:00"])
        .arg("--sched-args=--budget 20000 --heartbeat-ms 1000");
    let out = bounded(generate, Duration::from_secs(30));
    assert!(out.status.success());
    let batch = d.join("job.sbatch");
    std::fs::write(&batch, &out.stdout).unwrap();

    let log = d.join("slurm.log");
    let mut submit = Command::new("sbatch");
    submit
        .env("SLURM_CONF", &conf)
        .arg("--wait")
        .arg(format!("--chdir={}", d.display()))
        .arg(format!("--output={}", log.display()))
        .arg(&batch);
    let out = bounded(submit, Duration::from_secs(300));
    let slurm_log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        out.status.success(),
        "sbatch: {}\n{slurm_log}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(slurm_log.contains("all 2 pods joined"), "{slurm_log}");
    assert!(slurm_log.contains("file://C.bin"), "{slurm_log}");
    assert!(
        std::fs::read(d.join("C.bin")).unwrap() == std::fs::read(d.join("Cref.bin")).unwrap(),
        "{slurm_log}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
