//! The scheduler and worker processes end to end (`run --processes`):
//! results equal to the in-process run, workers SIGKILLed at several
//! points with the job still completing and the log naming what was
//! recomputed, and no survivors failing cleanly. Every run is bounded in
//! time.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use phobos_cluster::store::{self, Fill};
use phobos_rt::DType;

const LIMIT: Duration = Duration::from_secs(180);

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("phobos-procs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An SGEMM job in `d` with fresh inputs; returns the job path.
fn sgemm(d: &Path, c: &str) -> PathBuf {
    let (m, n, k) = (150, 130, 40);
    store::init_tensor(
        &d.join("A.bin"),
        DType::F32,
        &[m, k],
        Fill::Random { seed: 1 },
    )
    .unwrap();
    store::init_tensor(
        &d.join("B.bin"),
        DType::F32,
        &[k, n],
        Fill::Random { seed: 2 },
    )
    .unwrap();
    store::init_tensor(&d.join(c), DType::F32, &[m, n], Fill::Random { seed: 3 }).unwrap();
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels");
    let text = format!(
        "source = {}/gemm_f32.ph\ntensor A = read f32 {m}x{k} file://A.bin\ntensor B = read f32 {k}x{n} file://B.bin\n\
         tensor C = rmw f32 {m}x{n} file://{c}\nscalar alpha = f32 1.5\nscalar beta = f32 0.5\n",
        kernels.display()
    );
    let path = d.join(format!("{c}.job"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs the binary with a deadline; the child is killed past it.
fn run(args: &[&str], chaos: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_phobos-cluster"));
    cmd.args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("PHOBOS_LOG", "info");
    if let Some(spec) = chaos {
        cmd.env("PHOBOS_CLUSTER_CHAOS", spec);
    }
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("{args:?} did not finish within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn reference(d: &Path) -> Vec<u8> {
    let job = sgemm(d, "Cref.bin");
    let out = run(&["run", job.to_str().unwrap(), "--nodes", "1"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(d.join("Cref.bin")).unwrap()
}

#[test]
fn processes_match_in_process_and_survive_kills() {
    let d = dir("chaos");
    let expected = reference(&d);
    // (nodes, chaos spec, must the log name a recompute?)
    let cases: &[(usize, Option<&str>, bool)] = &[
        (1, None, false),
        (2, None, false),
        (4, None, false),
        // Before its first compute.
        (4, Some("1:0"), true),
        // After storing some outputs.
        (4, Some("2:1"), true),
        // Two pods, one after the other.
        (4, Some("0:1;3:0"), true),
    ];
    for (i, &(nodes, chaos, recomputes)) in cases.iter().enumerate() {
        let c = format!("C{i}.bin");
        let job = sgemm(&d, &c);
        let out = run(
            &[
                "run",
                job.to_str().unwrap(),
                "--nodes",
                &nodes.to_string(),
                "--processes",
                "--heartbeat-ms",
                "250",
                "--budget",
                "40000",
            ],
            chaos,
        );
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "case {i}: {log}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&c),
            "case {i}: output URI not printed"
        );
        assert!(
            std::fs::read(d.join(&c)).unwrap() == expected,
            "case {i}: output differs"
        );
        assert_eq!(
            log.contains("recomputing from lineage"),
            recomputes,
            "case {i}: {log}"
        );
        assert!(!store::staging_path(&d.join(&c)).exists());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn no_survivors_is_a_clear_error_and_outputs_stay() {
    let d = dir("allkilled");
    let job = sgemm(&d, "C.bin");
    let before = std::fs::read(d.join("C.bin")).unwrap();
    let out = run(
        &[
            "run",
            job.to_str().unwrap(),
            "--nodes",
            "2",
            "--processes",
            "--heartbeat-ms",
            "250",
        ],
        Some("0:0;1:0"),
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(log.contains("no node survives"), "{log}");
    assert_eq!(std::fs::read(d.join("C.bin")).unwrap(), before);
    assert!(!store::staging_path(&d.join("C.bin")).exists());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn cli_errors_name_the_problem() {
    let d = dir("cli");
    std::fs::write(
        d.join("bad.job"),
        "source = x.ph\ntensor A = read f32 4x4\n",
    )
    .unwrap();
    let out = run(&["plan", d.join("bad.job").to_str().unwrap()], None);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad.job:2:"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let uri = format!("file://{}", d.join("t.bin").display());
    let out = run(
        &[
            "tensor", "init", "--uri", &uri, "--shape", "3x4", "--fill", "iota",
        ],
        None,
    );
    assert!(out.status.success());
    let out = run(
        &[
            "tensor", "peek", "--uri", &uri, "--shape", "3x4", "--count", "2",
        ],
        None,
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "[0, 0] = 0\n[2, 3] = 11\n"
    );
    let out = run(&["tensor", "peek", "--uri", &uri, "--shape", "4x4"], None);
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected 64 bytes, the file has 48"));
    std::fs::remove_dir_all(&d).unwrap();
}
