//! What the multi-process suites share: job files, the binary run with a
//! clean environment and a time bound, and the scheduler and pods started
//! by hand. Each suite uses part of it.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use phobos_cluster::store::{self, Fill};
use phobos_rt::DType;

/// The environment variables of mutual TLS, cleared for every child so
/// that an ambient setting does not change a test.
pub const TLS_ENV: [&str; 4] = [
    "PHOBOS_CLUSTER_TLS_CERT",
    "PHOBOS_CLUSTER_TLS_KEY",
    "PHOBOS_CLUSTER_TLS_CA",
    "PHOBOS_CLUSTER_TLS_DOMAIN",
];

pub const LIMIT: Duration = Duration::from_secs(180);

pub const BIN: &str = env!("CARGO_BIN_EXE_phobos-cluster");

pub fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("phobos-grpc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn kernels() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels")
}

/// An SGEMM job in `d` writing `c` (fresh random old values; sizes that
/// are multiples of no tile); returns the job path.
pub fn sgemm(d: &Path, c: &str) -> PathBuf {
    let (m, n, k) = (150, 130, 40);
    let init = |name: &str, shape: &[usize], seed| {
        if !d.join(name).exists() || name == c {
            store::init_tensor(&d.join(name), DType::F32, shape, Fill::Random { seed }).unwrap();
        }
    };
    init("A.bin", &[m, k], 1);
    init("B.bin", &[k, n], 2);
    init(c, &[m, n], 3);
    let text = format!(
        "source = {}/gemm_f32.ph\ntensor A = read f32 {m}x{k} file://A.bin\ntensor B = read f32 {k}x{n} file://B.bin\n\
         tensor C = rmw f32 {m}x{n} file://{c}\nscalar alpha = f32 1.5\nscalar beta = f32 0.5\n",
        kernels().display()
    );
    let path = d.join(format!("{c}.job"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Waits for `child` up to [`LIMIT`], collecting its output.
pub fn finish(child: Child, what: &str) -> Output {
    finish_within(child, what, LIMIT)
}

/// Waits for `child` up to `limit` (a test of something that must not
/// hang), collecting its output.
pub fn finish_within(mut child: Child, what: &str, limit: Duration) -> Output {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} did not finish within {limit:?}:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("PHOBOS_LOG", "info")
        .env_remove("PHOBOS_CLUSTER_CHAOS")
        .env_remove("PHOBOS_CLUSTER_TOKEN");
    for var in TLS_ENV {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

pub fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    finish(command(args, env).spawn().unwrap(), &format!("{args:?}"))
}

pub fn log(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The single-process result of the SGEMM job.
pub fn reference(d: &Path) -> Vec<u8> {
    let job = sgemm(d, "Cref.bin");
    let out = run(
        &["run", job.to_str().unwrap(), "--nodes", "1", "--in-process"],
        &[],
    );
    assert!(out.status.success(), "{}", log(&out));
    std::fs::read(d.join("Cref.bin")).unwrap()
}

/// Starts `sched` on a free port with `token`; returns it and its address.
pub fn start_sched(job: &Path, token: &str, extra: &[&str]) -> (Child, String) {
    let mut args = vec![
        "sched",
        "--listen",
        "127.0.0.1:0",
        "--job",
        job.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut child = command(&args, &[("PHOBOS_CLUSTER_TOKEN", token)])
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut line = Vec::new();
    let mut byte = [0u8];
    while stdout.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let line = String::from_utf8(line).unwrap();
    let address = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("scheduler said `{line}`"))
        .to_string();
    // The rest of stdout (output URIs) is drained when the test reads it.
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
    });
    (child, address)
}

pub fn start_pod(id: usize, sched: &str, token: &str, env: &[(&str, &str)]) -> Child {
    start_pod_with(id, sched, token, &[], env)
}

/// [`start_pod`] with more arguments (`--tls-*`).
pub fn start_pod_with(
    id: usize,
    sched: &str,
    token: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Child {
    let id = id.to_string();
    let mut all = vec![("PHOBOS_CLUSTER_TOKEN", token)];
    all.extend_from_slice(env);
    let mut full = vec!["pod", "--id", &id, "--sched", sched];
    full.extend_from_slice(args);
    command(&full, &all).stdout(Stdio::null()).spawn().unwrap()
}

pub fn log_contains(out: &Output, needle: &str) -> bool {
    !out.status.success() && log(out).contains(needle)
}
