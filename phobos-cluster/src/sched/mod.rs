//! The scheduler: plans a job, waits for its pods over gRPC, hands each
//! pod its supertiles, and commits the outputs when every supertile is
//! stored. A pod that closes its control stream or misses heartbeats is
//! dead: what it had not stored is recomputed from lineage (the
//! supertile's inputs, which never change) on the survivors. A pod that
//! restarts and registers again rejoins and takes recomputation work.

pub mod service;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_stream::wrappers::TcpListenerStream;

use crate::exec::{self, ExecError};
use crate::job::{self, Access, Job, JobError};
use crate::net::auth::Token;
use crate::net::proto::{self, pod_event, sched_command};
use crate::net::tls::{self, Tls};
use crate::plan::{self, Ingest, Plan, PlanError, PlanOptions, Region};
use service::{Commands, Event, JobInfo, SchedService, kernel_hash};

pub struct SchedOptions {
    pub job_path: PathBuf,
    pub plan: PlanOptions,
    pub listen: String,
    pub token: Token,
    /// Mutual TLS on every connection (`None`: plain HTTP/2).
    pub tls: Option<Arc<Tls>>,
    /// Pods send a heartbeat at this interval; 4 missed make a pod dead.
    pub heartbeat_ms: u64,
    /// How long to wait for all pods to join before giving up.
    pub join_timeout_ms: u64,
    /// With no pod left alive, how long to wait for one to rejoin
    /// (0: fail at once).
    pub rejoin_wait_ms: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    #[error(transparent)]
    Job(#[from] JobError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error("cannot listen on {address}: {message}")]
    Listen { address: String, message: String },
    #[error("only {joined} of {nodes} pods joined within {waited_ms} ms (missing: {missing:?})")]
    JoinTimeout {
        joined: usize,
        nodes: usize,
        waited_ms: u64,
        missing: Vec<usize>,
    },
    #[error(
        "node{node} died and no pod survives to recompute supertiles {supertiles:?}; the outputs are unchanged"
    )]
    NoSurvivors { node: usize, supertiles: Vec<usize> },
    #[error("supertile {supertile} failed on node{node}: {message}; the outputs are unchanged")]
    Supertile {
        supertile: usize,
        node: usize,
        message: String,
    },
    #[error("the scheduler's event channel closed")]
    Closed,
}

/// Bytes moved, as the pods report them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Moved {
    pub loaded: u64,
    pub fetched: u64,
    pub stored: u64,
}

/// What a finished job reports.
#[derive(Debug)]
pub struct SchedReport {
    pub outputs: Vec<String>,
    pub moved: Moved,
    pub predicted_bytes: f64,
    pub predicted_s: f64,
    pub recomputed: usize,
    pub seconds: f64,
}

struct PodState {
    address: Option<String>,
    conn: Option<(u64, Commands)>,
    last_seen: Instant,
    joined_once: bool,
    assigned: BTreeSet<usize>,
}

impl PodState {
    fn alive(&self) -> bool {
        self.conn.is_some()
    }
}

/// The scheduling loop's state.
struct Sched<'a> {
    plan: &'a Plan,
    job: &'a Job,
    options: &'a SchedOptions,
    pods: Vec<PodState>,
    stored: BTreeSet<usize>,
    /// Supertiles lost with no pod alive to take them.
    orphans: BTreeSet<usize>,
    orphan_deadline: Option<Instant>,
    orphaned_by: usize,
    /// Supertiles that read the store after a fetch from a peer failed.
    direct_only: BTreeSet<usize>,
    /// Under home-fetch, each region's home pod.
    homes: HashMap<(String, Region), usize>,
    started: bool,
    moved: Moved,
    recomputed: usize,
    bar: indicatif::ProgressBar,
}

/// Plans the job, serves pods until every supertile is stored, commits.
/// `on_listening` gets the bound address (port 0 picks a free one).
pub async fn run(
    options: SchedOptions,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<SchedReport, SchedError> {
    let started_at = Instant::now();
    let job = Job::load(&options.job_path)?;
    let binding = job::bind(&job)?;
    let plan = plan::plan(&job, &binding, &options.plan)?;
    tracing::info!(
        kernel = %plan.kernel.name,
        config = ?plan.config.values,
        grid = ?plan.grid,
        supertiles = plan.supertiles.len(),
        nodes = plan.nodes,
        predicted_s = plan.prediction.seconds,
        predicted_bytes = plan.prediction.bytes_moved,
        "planned"
    );
    exec::check_inputs(&job)?;
    let listener = tokio::net::TcpListener::bind(&options.listen)
        .await
        .map_err(|e| SchedError::Listen {
            address: options.listen.clone(),
            message: e.to_string(),
        })?;
    let address = listener.local_addr().map_err(|e| SchedError::Listen {
        address: options.listen.clone(),
        message: e.to_string(),
    })?;
    let job_text = std::fs::read_to_string(&options.job_path).map_err(|e| JobError {
        file: job.file.clone(),
        line: 0,
        message: format!("cannot read the job file: {e}"),
    })?;
    let base = options
        .job_path
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().map(|p| p.to_path_buf()))
        .unwrap_or_default();
    let info = Arc::new(JobInfo {
        reply: proto::RegisterReply {
            job_name: job.file.clone(),
            job_text,
            job_base: base.display().to_string(),
            kernel_sha256: kernel_hash(&binding.source_text),
            plan: Some(proto::PlanOptions {
                nodes: options.plan.nodes as u32,
                budget_bytes: options.plan.budget_bytes,
                home_fetch: options.plan.ingest == Ingest::HomeFetch,
                leaf_flops: options.plan.machine.leaf_flops,
                link_bytes_per_s: options.plan.machine.link_bytes_per_s,
                autotune: options.plan.autotune,
                vram_bytes: options.plan.machine.vram_bytes,
            }),
            supertiles: plan.supertiles.len() as u32,
            config: format!("{:?}", plan.config.values),
            heartbeat_ms: options.heartbeat_ms as u32,
        },
        kernel_text: binding.source_text.clone(),
        nodes: options.plan.nodes,
    });
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let service = SchedService {
        info,
        events: events_tx,
        next_conn: AtomicU64::new(0),
    };
    let router = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(tonic::service::interceptor::InterceptedService::new(
            proto::scheduler_server::SchedulerServer::new(service)
                .max_decoding_message_size(crate::net::MAX_MESSAGE_BYTES),
            options.token.server("scheduler"),
        ));
    let server = match &options.tls {
        None => tokio::spawn(router.serve_with_incoming(TcpListenerStream::new(listener))),
        Some(t) => {
            tokio::spawn(router.serve_with_incoming(tls::incoming(listener, t, "scheduler")))
        }
    };
    tracing::info!(
        %address,
        tls = options.tls.is_some(),
        "listening; waiting for {} pods",
        plan.nodes
    );
    on_listening(address);
    exec::begin_outputs(&job)?;
    let mut sched = Sched::new(&plan, &job, &options);
    let result = sched.serve(&mut events).await;
    match &result {
        Ok(()) => {
            if let Err(e) = exec::commit_outputs(&job) {
                exec::abort_outputs(&job);
                sched.shutdown(&mut events, "the job failed").await;
                server.abort();
                return Err(e.into());
            }
            sched.shutdown(&mut events, "the job is done").await;
        }
        Err(e) => {
            exec::abort_outputs(&job);
            sched.shutdown(&mut events, &e.to_string()).await;
        }
    }
    server.abort();
    result?;
    Ok(SchedReport {
        outputs: job.outputs().map(|t| t.uri.clone()).collect(),
        moved: sched.moved,
        predicted_bytes: plan.prediction.bytes_moved,
        predicted_s: plan.prediction.seconds,
        recomputed: sched.recomputed,
        seconds: started_at.elapsed().as_secs_f64(),
    })
}

impl<'a> Sched<'a> {
    fn new(plan: &'a Plan, job: &'a Job, options: &'a SchedOptions) -> Sched<'a> {
        let mut homes = HashMap::new();
        if plan.ingest == Ingest::HomeFetch {
            for st in &plan.supertiles {
                for (name, region) in &st.footprint.reads {
                    homes
                        .entry((name.clone(), region.clone()))
                        .or_insert(st.node);
                }
            }
        }
        let bar = indicatif::ProgressBar::new(plan.supertiles.len() as u64).with_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} supertiles stored",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Sched {
            plan,
            job,
            options,
            pods: (0..plan.nodes)
                .map(|_| PodState {
                    address: None,
                    conn: None,
                    last_seen: Instant::now(),
                    joined_once: false,
                    assigned: BTreeSet::new(),
                })
                .collect(),
            stored: BTreeSet::new(),
            orphans: BTreeSet::new(),
            orphan_deadline: None,
            orphaned_by: 0,
            direct_only: BTreeSet::new(),
            homes,
            started: false,
            moved: Moved::default(),
            recomputed: 0,
            bar,
        }
    }

    fn heartbeat_timeout(&self) -> Duration {
        Duration::from_millis(self.options.heartbeat_ms.saturating_mul(4).max(100))
    }

    async fn serve(
        &mut self,
        events: &mut mpsc::UnboundedReceiver<Event>,
    ) -> Result<(), SchedError> {
        let began = Instant::now();
        let mut tick = tokio::time::interval(Duration::from_millis(
            (self.options.heartbeat_ms / 2).max(10),
        ));
        while self.stored.len() < self.plan.supertiles.len() {
            tokio::select! {
                event = events.recv() => {
                    let event = event.ok_or(SchedError::Closed)?;
                    self.handle(event)?;
                }
                _ = tick.tick() => {}
            }
            let timeout = self.heartbeat_timeout();
            let silent: Vec<usize> = (0..self.pods.len())
                .filter(|&p| self.pods[p].alive() && self.pods[p].last_seen.elapsed() > timeout)
                .collect();
            for pod in silent {
                self.lose(
                    pod,
                    &format!("missed heartbeats for {} ms", timeout.as_millis()),
                )?;
            }
            if !self.started {
                if self.pods.iter().all(PodState::alive) {
                    self.start();
                } else if began.elapsed() > Duration::from_millis(self.options.join_timeout_ms) {
                    let missing: Vec<usize> = (0..self.pods.len())
                        .filter(|&p| !self.pods[p].alive())
                        .collect();
                    return Err(SchedError::JoinTimeout {
                        joined: self.pods.len() - missing.len(),
                        nodes: self.pods.len(),
                        waited_ms: self.options.join_timeout_ms,
                        missing,
                    });
                }
            }
            if let Some(deadline) = self.orphan_deadline
                && Instant::now() > deadline
            {
                return Err(SchedError::NoSurvivors {
                    node: self.orphaned_by,
                    supertiles: self.orphans.iter().copied().collect(),
                });
            }
        }
        self.bar.finish_and_clear();
        Ok(())
    }

    fn handle(&mut self, event: Event) -> Result<(), SchedError> {
        match event {
            Event::Registered { pod, address } => self.pods[pod].address = Some(address),
            Event::Connected {
                pod,
                conn,
                commands,
            } => {
                if self.pods[pod].alive() {
                    // The same id again: the old process is gone.
                    self.lose(pod, "a new process registered with its id")?;
                }
                let rejoin = self.pods[pod].joined_once;
                let state = &mut self.pods[pod];
                state.conn = Some((conn, commands));
                state.last_seen = Instant::now();
                state.joined_once = true;
                if rejoin {
                    tracing::warn!(pod, "node{pod} rejoined the running job");
                }
                if self.started && !self.orphans.is_empty() {
                    let redo = std::mem::take(&mut self.orphans);
                    self.orphan_deadline = None;
                    let lost_with = self.orphaned_by;
                    self.reassign(&redo, &[pod], lost_with);
                }
            }
            Event::Message { pod, conn, event } => {
                if self.pods[pod].conn.as_ref().map(|c| c.0) != Some(conn) {
                    return Ok(());
                }
                self.pods[pod].last_seen = Instant::now();
                match event {
                    pod_event::Event::Hello(_) | pod_event::Event::Heartbeat(_) => {}
                    pod_event::Event::Completed(done) => {
                        self.moved.loaded += done.bytes_loaded;
                        self.moved.fetched += done.bytes_fetched;
                        self.moved.stored += done.bytes_stored;
                        for s in done.supertiles {
                            let s = s as usize;
                            self.pods[pod].assigned.remove(&s);
                            if s < self.plan.supertiles.len() && self.stored.insert(s) {
                                self.bar.inc(1);
                                tracing::debug!(pod, supertile = s, "stored");
                            }
                        }
                    }
                    pod_event::Event::Failed(failed) => {
                        let s = failed.supertile as usize;
                        match failed.peer {
                            Some(peer) if s < self.plan.supertiles.len() => {
                                tracing::warn!(
                                    pod,
                                    "node{pod}: supertile {s}: {} (peer node{peer}); retrying it from the store",
                                    failed.message
                                );
                                self.direct_only.insert(s);
                                self.send_work(pod, &[s]);
                            }
                            _ => {
                                return Err(SchedError::Supertile {
                                    supertile: s,
                                    node: pod,
                                    message: failed.message,
                                });
                            }
                        }
                    }
                }
            }
            Event::Disconnected { pod, conn, why } => {
                if self.pods[pod].conn.as_ref().map(|c| c.0) == Some(conn) {
                    self.lose(pod, &why)?;
                }
            }
        }
        Ok(())
    }

    /// Every pod is here: hand each its planned supertiles.
    fn start(&mut self) {
        self.started = true;
        tracing::info!("all {} pods joined; running", self.pods.len());
        for pod in 0..self.pods.len() {
            let mine: Vec<usize> = self
                .plan
                .supertiles
                .iter()
                .filter(|s| s.node == pod)
                .map(|s| s.id)
                .collect();
            self.send_work(pod, &mine);
        }
    }

    fn work(&self, pod: usize, supertile: usize) -> proto::Work {
        let st = &self.plan.supertiles[supertile];
        let mut fetch = Vec::new();
        if !self.direct_only.contains(&supertile) {
            for (name, region) in &st.footprint.reads {
                let readable = self
                    .job
                    .tensor(name)
                    .is_some_and(|t| t.access != Access::Write);
                let home = self.homes.get(&(name.clone(), region.clone())).copied();
                if let (true, Some(home)) = (readable, home)
                    && home != pod
                    && self.pods[home].alive()
                    && let Some(address) = &self.pods[home].address
                {
                    fetch.push(proto::Fetch {
                        tensor: name.clone(),
                        home: home as u32,
                        address: address.clone(),
                    });
                }
            }
        }
        proto::Work {
            supertile: supertile as u32,
            fetch,
        }
    }

    fn send_work(&mut self, pod: usize, supertiles: &[usize]) {
        if supertiles.is_empty() {
            return;
        }
        let work: Vec<proto::Work> = supertiles.iter().map(|&s| self.work(pod, s)).collect();
        self.pods[pod].assigned.extend(supertiles.iter().copied());
        if let Some((_, commands)) = &self.pods[pod].conn {
            // A closed channel means the pod is going; its Disconnected
            // event follows and reassigns this work.
            let _ = commands.send(Ok(proto::SchedCommand {
                command: Some(sched_command::Command::Assign(proto::Assign { work })),
            }));
        }
    }

    /// `pod` is dead: recompute what it had not stored on the survivors.
    fn lose(&mut self, pod: usize, why: &str) -> Result<(), SchedError> {
        if let Some((_, commands)) = self.pods[pod].conn.take() {
            // A pod declared dead that is in fact alive (silent too long)
            // stops instead of working on for nobody.
            let _ = commands.send(Ok(proto::SchedCommand {
                command: Some(sched_command::Command::Shutdown(proto::Shutdown {
                    reason: format!("declared dead: {why}"),
                })),
            }));
        }
        let redo: BTreeSet<usize> = std::mem::take(&mut self.pods[pod].assigned)
            .into_iter()
            .filter(|s| !self.stored.contains(s))
            .collect();
        tracing::error!(pod, "node{pod} lost: {why}");
        if redo.is_empty() {
            return Ok(());
        }
        let survivors: Vec<usize> = (0..self.pods.len())
            .filter(|&p| self.pods[p].alive())
            .collect();
        if survivors.is_empty() {
            if self.options.rejoin_wait_ms == 0 {
                return Err(SchedError::NoSurvivors {
                    node: pod,
                    supertiles: redo.into_iter().collect(),
                });
            }
            tracing::warn!(
                "no pod survives node{pod}; waiting up to {} ms for one to rejoin",
                self.options.rejoin_wait_ms
            );
            self.orphans.extend(redo);
            self.orphaned_by = pod;
            self.orphan_deadline =
                Some(Instant::now() + Duration::from_millis(self.options.rejoin_wait_ms));
            return Ok(());
        }
        self.reassign(&redo, &survivors, pod);
        Ok(())
    }

    /// Spreads `redo` over `targets`, logging each supertile's lineage.
    fn reassign(&mut self, redo: &BTreeSet<usize>, targets: &[usize], lost_with: usize) {
        let mut per_target: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, &s) in redo.iter().enumerate() {
            per_target
                .entry(targets[i % targets.len()])
                .or_default()
                .push(s);
        }
        for (target, supertiles) in per_target {
            let lineage: Vec<String> = supertiles
                .iter()
                .map(|&s| {
                    let st = &self.plan.supertiles[s];
                    let writes: Vec<String> = st
                        .footprint
                        .writes
                        .iter()
                        .map(|(n, r)| format!("{n}{}", r.describe()))
                        .collect();
                    let reads: Vec<String> = st
                        .footprint
                        .reads
                        .iter()
                        .map(|(n, r)| format!("{n}{}", r.describe()))
                        .collect();
                    format!("st{s}->{} from {}", writes.join("+"), reads.join("+"))
                })
                .collect();
            tracing::warn!(
                "recomputing from lineage on node{target}: {} (lost with node{lost_with})",
                lineage.join(", ")
            );
            self.recomputed += supertiles.len();
            self.send_work(target, &supertiles);
        }
    }

    /// Tells every pod to stop and waits (briefly) for them to hang up.
    async fn shutdown(&mut self, events: &mut mpsc::UnboundedReceiver<Event>, reason: &str) {
        self.bar.finish_and_clear();
        let shutdown = || {
            Ok(proto::SchedCommand {
                command: Some(sched_command::Command::Shutdown(proto::Shutdown {
                    reason: reason.to_string(),
                })),
            })
        };
        let mut open: BTreeSet<u64> = BTreeSet::new();
        for pod in &mut self.pods {
            if let Some((conn, commands)) = pod.conn.take() {
                let _ = commands.send(shutdown());
                open.insert(conn);
            }
        }
        // The command channels are dropped: each stream ends after its
        // Shutdown, and the pods close theirs.
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while !open.is_empty() {
                match events.recv().await {
                    Some(Event::Disconnected { conn, .. }) => {
                        open.remove(&conn);
                    }
                    Some(Event::Connected { commands, .. }) => {
                        let _ = commands.send(shutdown());
                    }
                    Some(_) => {}
                    None => return,
                }
            }
        })
        .await;
    }
}
