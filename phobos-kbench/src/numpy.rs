//! The numpy reference, run in a python3 subprocess: OpenBLAS for gemm,
//! a plain numpy attention. `OPENBLAS_CORETYPE` and `OPENBLAS_L2_SIZE`
//! (which this machine may set for old OpenBLAS builds, slowing a current
//! one) are removed for the subprocess only, the BLAS thread count is set
//! to the run's, and the kernel threadpoolctl reports is recorded.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// What python reports for one timing.
#[derive(Debug, Clone)]
pub struct NumpyTiming {
    pub median: Duration,
    /// e.g. `openblas 0.3.29 SkylakeX threads=2`.
    pub blas: String,
}

const SCRIPT: &str = r#"
import json, sys, time, statistics
import numpy as np
try:
    from threadpoolctl import threadpool_info
    info = [f"{p.get('internal_api')} {p.get('version')} {p.get('architecture')} threads={p.get('num_threads')}"
            for p in threadpool_info() if p.get('user_api') == 'blas']
    blas = "; ".join(info) or "no BLAS found by threadpoolctl"
except ImportError:
    blas = "threadpoolctl not installed"
rng = np.random.default_rng(7)
mode = sys.argv[1]
if mode == "gemm":
    m, n, k = (int(x) for x in sys.argv[2:5])
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.empty((m, n), dtype=np.float32)
    run = lambda: np.matmul(a, b, out=c)
elif mode == "attention":
    h, s, t, d = (int(x) for x in sys.argv[2:6])
    q = rng.standard_normal((h, s, d), dtype=np.float32)
    k = rng.standard_normal((h, t, d), dtype=np.float32)
    v = rng.standard_normal((h, t, d), dtype=np.float32)
    scale = np.float32(1.0 / np.sqrt(d))
    def run():
        sc = np.matmul(q, k.transpose(0, 2, 1)) * scale
        sc -= sc.max(axis=-1, keepdims=True)
        p = np.exp(sc)
        p /= p.sum(axis=-1, keepdims=True)
        return np.matmul(p, v)
else:
    raise SystemExit(f"unknown mode {mode}")
run()
times = []
start = time.perf_counter()
while len(times) < 200 and (len(times) < 5 or time.perf_counter() - start < 0.5):
    t0 = time.perf_counter()
    run()
    times.append(time.perf_counter() - t0)
print(json.dumps({"median_s": statistics.median(times), "blas": blas, "numpy": np.__version__}))
"#;

/// Whether `python3 -c "import numpy"` works.
pub fn available() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Times `mode` with `args` in python with `threads` BLAS threads.
pub fn time(mode: &str, args: &[usize], threads: usize) -> Result<NumpyTiming> {
    let mut command = Command::new("python3");
    command.arg("-c").arg(SCRIPT).arg(mode);
    command.args(args.iter().map(usize::to_string));
    command
        .env_remove("OPENBLAS_CORETYPE")
        .env_remove("OPENBLAS_L2_SIZE");
    for name in ["OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"] {
        command.env(name, threads.to_string());
    }
    let out = command
        .output()
        .context("running python3 for the numpy reference")?;
    if !out.status.success() {
        bail!(
            "python3 numpy reference failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value: serde_json::Value = serde_json::from_str(stdout.trim())
        .with_context(|| format!("numpy reference printed {stdout:?}, expected one JSON line"))?;
    let median_s = value["median_s"]
        .as_f64()
        .context("numpy reference: no median_s")?;
    Ok(NumpyTiming {
        median: Duration::from_secs_f64(median_s),
        blas: format!(
            "numpy {} {}",
            value["numpy"].as_str().unwrap_or("?"),
            value["blas"].as_str().unwrap_or("?")
        ),
    })
}
