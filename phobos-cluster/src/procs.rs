//! `run --processes`: a scheduler (this process) and one worker process
//! per node, talking over the workers' stdout (`DONE <supertile>` after
//! each stored supertile, `HEARTBEAT` every interval). When a worker dies
//! or goes silent past the heartbeat timeout, the scheduler recomputes
//! from lineage every supertile it had not stored, on a surviving node;
//! with no survivors the job fails and the outputs stay untouched.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use phobos_cluster::exec;
use phobos_cluster::job::Job;
use phobos_cluster::plan::Plan;

enum Event {
    Done {
        worker: usize,
        supertile: usize,
    },
    Alive {
        worker: usize,
    },
    Exited {
        worker: usize,
        status: String,
        success: bool,
    },
}

struct Worker {
    node: usize,
    pid: u32,
    pending: BTreeSet<usize>,
    last_seen: Instant,
    /// Whether the worker has spoken yet (until then it is starting up:
    /// reading the job and checking the kernel, under a longer limit).
    heard: bool,
    finished: bool,
}

/// How long a worker may take to start before it is declared dead.
const STARTUP_LIMIT: Duration = Duration::from_secs(60);

/// What the scheduler passes on to every worker (the plan options).
pub struct WorkerArgs {
    pub forward: Vec<String>,
    pub heartbeat_ms: u64,
}

/// What every worker start needs.
struct Launcher<'a> {
    exe: &'a Path,
    job_path: &'a Path,
    args: &'a WorkerArgs,
    events: mpsc::Sender<Event>,
}

fn spawn(
    launcher: &Launcher<'_>,
    node: usize,
    attempt: usize,
    supertiles: &BTreeSet<usize>,
    id: usize,
) -> Result<Worker> {
    let Launcher {
        exe,
        job_path,
        args,
        events,
    } = launcher;
    let list: Vec<String> = supertiles.iter().map(usize::to_string).collect();
    let mut child: Child = Command::new(exe)
        .arg("worker")
        .arg(job_path)
        .args(&args.forward)
        .args([
            "--node",
            &node.to_string(),
            "--attempt",
            &attempt.to_string(),
        ])
        .args(["--heartbeat-ms", &args.heartbeat_ms.to_string()])
        .args(["--supertiles", &list.join(",")])
        .stdout(Stdio::piped())
        // Workers log warnings and errors only; the scheduler tells the story.
        .env("PHOBOS_LOG", "warn")
        .spawn()
        .with_context(|| format!("starting a worker for node{node}"))?;
    let pid = child.id();
    let stdout = child.stdout.take().context("worker stdout")?;
    let tx = events.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let event = match line.split_once(' ') {
                Some(("DONE", n)) => match n.trim().parse() {
                    Ok(supertile) => Event::Done {
                        worker: id,
                        supertile,
                    },
                    Err(_) => continue,
                },
                _ if line == "HEARTBEAT" => Event::Alive { worker: id },
                _ => continue,
            };
            if tx.send(event).is_err() {
                return;
            }
        }
        let (status, success) = match child.wait() {
            Ok(s) => (s.to_string(), s.success()),
            Err(e) => (e.to_string(), false),
        };
        let _ = tx.send(Event::Exited {
            worker: id,
            status,
            success,
        });
    });
    tracing::info!(node, pid, attempt, supertiles = ?supertiles, "worker started");
    Ok(Worker {
        node,
        pid,
        pending: supertiles.clone(),
        last_seen: Instant::now(),
        heard: false,
        finished: false,
    })
}

fn kill(pid: u32) {
    // `kill` of a process that already exited fails harmlessly; keep quiet.
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// Runs `plan` on `plan.nodes` worker processes and commits the outputs.
pub fn run_processes(
    exe: &Path,
    job_path: &Path,
    job: &Job,
    plan: &Plan,
    args: &WorkerArgs,
) -> Result<()> {
    exec::check_inputs(job)?;
    exec::begin_outputs(job)?;
    match schedule(exe, job_path, plan, args) {
        Ok(()) => {
            exec::commit_outputs(job)?;
            Ok(())
        }
        Err(e) => {
            exec::abort_outputs(job);
            Err(e)
        }
    }
}

fn schedule(exe: &Path, job_path: &Path, plan: &Plan, args: &WorkerArgs) -> Result<()> {
    let (tx, rx) = mpsc::channel();
    let launcher = Launcher {
        exe,
        job_path,
        args,
        events: tx,
    };
    let mut workers: Vec<Worker> = Vec::new();
    let mut attempts: BTreeMap<usize, usize> = BTreeMap::new();
    let mut dead: BTreeSet<usize> = BTreeSet::new();
    let mut stored: BTreeSet<usize> = BTreeSet::new();
    for node in 0..plan.nodes {
        let mine: BTreeSet<usize> = plan
            .supertiles
            .iter()
            .filter(|s| s.node == node)
            .map(|s| s.id)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let id = workers.len();
        workers.push(spawn(&launcher, node, 0, &mine, id)?);
        attempts.insert(node, 0);
    }
    let timeout = Duration::from_millis(args.heartbeat_ms.saturating_mul(4).max(200));
    while stored.len() < plan.supertiles.len() {
        let mut lost: Vec<(usize, String)> = Vec::new();
        match rx.recv_timeout(timeout / 4) {
            Ok(Event::Done { worker, supertile }) => {
                workers[worker].pending.remove(&supertile);
                workers[worker].last_seen = Instant::now();
                workers[worker].heard = true;
                if stored.insert(supertile) {
                    tracing::debug!(node = workers[worker].node, supertile, "stored");
                }
            }
            Ok(Event::Alive { worker }) => {
                workers[worker].last_seen = Instant::now();
                workers[worker].heard = true;
            }
            Ok(Event::Exited {
                worker,
                status,
                success,
            }) => {
                workers[worker].finished = true;
                if !success || !workers[worker].pending.is_empty() {
                    lost.push((worker, format!("exited ({status})")));
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                kill_all(&workers);
                bail!("every worker's channel closed");
            }
        }
        for (i, w) in workers.iter().enumerate() {
            let limit = if w.heard { timeout } else { STARTUP_LIMIT };
            if !w.finished && w.last_seen.elapsed() > limit && !lost.iter().any(|(l, _)| *l == i) {
                lost.push((
                    i,
                    format!("missed heartbeats for {} ms", timeout.as_millis()),
                ));
            }
        }
        for (worker, why) in lost {
            let (node, pid) = (workers[worker].node, workers[worker].pid);
            if !workers[worker].finished {
                kill(pid);
                workers[worker].finished = true;
            }
            dead.insert(node);
            let redo: BTreeSet<usize> = workers[worker]
                .pending
                .iter()
                .copied()
                .filter(|s| !stored.contains(s))
                .collect();
            workers[worker].pending.clear();
            tracing::error!(node, pid, "node{node} lost: {why}");
            if redo.is_empty() {
                continue;
            }
            let survivors: Vec<usize> = (0..plan.nodes).filter(|n| !dead.contains(n)).collect();
            let Some(&target) =
                survivors.get(redo.iter().next().copied().unwrap_or(0) % survivors.len().max(1))
            else {
                kill_all(&workers);
                bail!(
                    "node{node} died and no node survives to recompute supertiles {redo:?}; the outputs are unchanged"
                );
            };
            let regions: Vec<String> = redo
                .iter()
                .map(|&s| {
                    let st = &plan.supertiles[s];
                    let w: Vec<String> = st
                        .footprint
                        .writes
                        .iter()
                        .map(|(n, r)| format!("{n}{}", r.describe()))
                        .collect();
                    format!("st{s}->{}", w.join("+"))
                })
                .collect();
            tracing::warn!(
                "recomputing from lineage on node{target}: {} (lost with node{node})",
                regions.join(", ")
            );
            let attempt = attempts.entry(target).or_insert(0);
            *attempt += 1;
            let id = workers.len();
            workers.push(spawn(&launcher, target, *attempt, &redo, id)?);
        }
    }
    // Everything is stored; a straggler has nothing left to do.
    kill_all(&workers);
    Ok(())
}

/// Kills every worker still running (before the staging copies go).
fn kill_all(workers: &[Worker]) {
    for w in workers.iter().filter(|w| !w.finished) {
        kill(w.pid);
    }
}

/// The worker: runs its supertiles in order, printing `DONE <id>` after
/// each store, with a heartbeat thread. `PHOBOS_CLUSTER_CHAOS` (tests)
/// is `NODE:K[;NODE:K...]`: on its first attempt, node NODE kills itself
/// with SIGKILL after storing K supertiles (0: before its first compute).
pub fn worker(
    job: &Job,
    binding: &phobos_cluster::job::Binding,
    plan: &Plan,
    node: usize,
    attempt: usize,
    supertiles: &[usize],
    heartbeat_ms: u64,
) -> Result<()> {
    use std::io::Write;
    let chaos_after: Option<usize> = std::env::var("PHOBOS_CLUSTER_CHAOS").ok().and_then(|spec| {
        spec.split(';').find_map(|part| {
            let (n, k) = part.split_once(':')?;
            (n.trim().parse::<usize>().ok()? == node && attempt == 0)
                .then(|| k.trim().parse().ok())?
        })
    });
    let die = || {
        tracing::warn!(node, "chaos: killing this worker");
        kill(std::process::id());
        std::thread::sleep(Duration::from_secs(60));
    };
    std::thread::spawn(move || {
        loop {
            let mut out = std::io::stdout().lock();
            if writeln!(out, "HEARTBEAT")
                .and_then(|_| out.flush())
                .is_err()
            {
                return;
            }
            drop(out);
            std::thread::sleep(Duration::from_millis(heartbeat_ms.max(10)));
        }
    });
    let scalars = exec::scalar_values(job);
    for (done, &id) in supertiles.iter().enumerate() {
        if chaos_after == Some(done) {
            die();
        }
        let st = plan
            .supertiles
            .get(id)
            .with_context(|| format!("no supertile {id} in the plan"))?;
        exec::run_supertile(job, binding, plan, st, &scalars)
            .with_context(|| format!("supertile {id}"))?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "DONE {id}").and_then(|_| out.flush())?;
    }
    if chaos_after == Some(supertiles.len()) {
        die();
    }
    Ok(())
}
