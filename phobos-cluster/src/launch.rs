//! `run JOB --nodes N`: a scheduler and N pods as child processes of this
//! one, on loopback, sharing a fresh token (passed in the environment, so
//! it never shows in a process listing) and, if given, the TLS files.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use phobos_cluster::net::auth::{TOKEN_ENV, Token};

/// Kills the children still running when dropped (on every exit path).
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

/// `sched_args` go to the scheduler, `shared_args` (the TLS files) to it
/// and every pod.
pub fn run_children(
    exe: &Path,
    job: &Path,
    nodes: usize,
    sched_args: &[String],
    shared_args: &[OsString],
) -> Result<()> {
    let token = Token::generate()?;
    let mut sched = Command::new(exe)
        .arg("sched")
        .args(["--listen", "127.0.0.1:0", "--job"])
        .arg(job)
        .args(sched_args)
        .args(shared_args)
        .env(TOKEN_ENV, token.as_str())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting the scheduler")?;
    let stdout = sched.stdout.take().context("the scheduler's stdout")?;
    let mut children = Children(vec![sched]);
    let mut lines = BufReader::new(stdout).lines();
    let address = match lines.next() {
        Some(Ok(line)) => match line.strip_prefix("listening on ") {
            Some(a) => a.to_string(),
            None => bail!("the scheduler said `{line}` where it names its address"),
        },
        _ => {
            let status = children.0[0].wait().context("waiting for the scheduler")?;
            bail!("the scheduler exited ({status}) before listening; its log above says why");
        }
    };
    for id in 0..nodes {
        let pod = Command::new(exe)
            .arg("pod")
            .args(["--id", &id.to_string(), "--sched", &address])
            .args(["--listen", "127.0.0.1:0"])
            .args(shared_args)
            .env(TOKEN_ENV, token.as_str())
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("starting pod{id}"))?;
        children.0.push(pod);
    }
    let mut out = std::io::stdout().lock();
    for line in lines {
        let line = line.context("reading the scheduler's output")?;
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    let status = children.0[0].wait().context("waiting for the scheduler")?;
    // Pods leave on the scheduler's Shutdown; stragglers are killed.
    let deadline = Instant::now() + Duration::from_secs(3);
    for pod in &mut children.0[1..] {
        while matches!(pod.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if !status.success() {
        bail!("the scheduler failed ({status}); its log above says why");
    }
    Ok(())
}
