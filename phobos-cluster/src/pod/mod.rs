//! A pod: one process per device. It registers with the scheduler,
//! fetches the kernel by content hash, plans the job the same way the
//! scheduler did (checked), serves input tiles to its peers, and runs the
//! supertiles it is sent: several at once as the arena allows (a
//! supertile whose working set does not fit waits for others to free
//! theirs), reporting stored ones in batches over the control stream.

pub mod chaos;
pub mod tiles;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};
use tokio_stream::wrappers::{TcpListenerStream, UnboundedReceiverStream};

use crate::exec::cuda::{self as cuda_exec, CudaError, CudaRunner, ptx_cache::PtxCache};
use crate::exec::{self, Traffic, region_io};
use crate::interp::Val;
use crate::job::{self, Binding, Job, JobError};
use crate::net::auth::Token;
use crate::net::proto::{self, pod_event, sched_command};
use crate::net::tls::{self, Tls};
use crate::net::{self, NetError, error_chain};
use crate::plan::{self, Ingest, Machine, Plan, PlanError, PlanOptions, lower::buffer_region};
use chaos::Chaos;
use tiles::{Peers, TileService};

/// Where a pod runs its kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Host,
    Cuda,
}

pub struct PodOptions {
    pub id: usize,
    pub sched: String,
    pub listen: String,
    pub advertise: Option<String>,
    pub arena_bytes: u64,
    pub backend: Backend,
    pub token: Token,
    /// Mutual TLS to the scheduler and peers and for this pod's tile
    /// service (`None`: plain HTTP/2).
    pub tls: Option<Arc<Tls>>,
    pub connect_timeout_ms: u64,
    /// Supertiles in flight at once.
    pub concurrency: usize,
    /// `--backend cuda`: the device ordinal.
    pub gpu: usize,
    /// `--backend cuda`: where compiled PTX is cached by content hash.
    pub ptx_cache: std::path::PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum PodError {
    #[error(transparent)]
    Net(#[from] NetError),
    #[error("the scheduler at {address} refused pod{id}: {message}")]
    Refused {
        address: String,
        id: usize,
        message: String,
    },
    #[error(
        "the scheduler at {address} refused pod{id}'s TLS connection: {message} (this pod's certificate must be signed by the scheduler's --tls-ca)"
    )]
    TlsRefused {
        address: String,
        id: usize,
        message: String,
    },
    #[error("the scheduler at {address} failed {what}: {message}")]
    Rpc {
        address: String,
        what: &'static str,
        message: String,
    },
    #[error("the kernel fetched by hash {expected} hashes to {actual}")]
    KernelHash { expected: String, actual: String },
    #[error("the kernel with SHA-256 {sha256} is not UTF-8 text")]
    KernelNotUtf8 { sha256: String },
    #[error(transparent)]
    Job(#[from] JobError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(
        "this pod planned {supertiles} supertiles with {config}, the scheduler {expected_supertiles} with {expected_config}: are both the same build?"
    )]
    PlanMismatch {
        supertiles: usize,
        config: String,
        expected_supertiles: usize,
        expected_config: String,
    },
    #[error("cannot listen on {address}: {message}")]
    Listen { address: String, message: String },
    #[error("lost the scheduler at {address}: {message}")]
    LostScheduler { address: String, message: String },
    #[error(transparent)]
    Cuda(#[from] CudaError),
    #[error("the CUDA setup task failed: {0}")]
    CudaTask(String),
}

/// What every task of a running pod shares.
struct PodCtx {
    id: usize,
    job: Arc<Job>,
    binding: Binding,
    plan: Plan,
    scalars: Vec<(String, Val)>,
    peers: Peers,
    chaos: Chaos,
    /// `--backend cuda`: the kernel compiled and loaded; `None`: the host
    /// interpreter.
    cuda: Option<CudaRunner>,
    /// The arena in KiB permits.
    arena: Arc<Semaphore>,
    arena_kib: u32,
    running: AtomicU32,
    events: mpsc::UnboundedSender<proto::PodEvent>,
    done: mpsc::UnboundedSender<(usize, Traffic, u64)>,
}

/// Runs a pod until the scheduler says the job is over.
pub async fn run(options: PodOptions) -> Result<(), PodError> {
    // A CUDA pod without a usable device says so before it registers.
    let device = match options.backend {
        Backend::Cuda => Some(cuda_exec::open_device(options.gpu)?),
        Backend::Host => None,
    };
    let listener = tokio::net::TcpListener::bind(&options.listen)
        .await
        .map_err(|e| PodError::Listen {
            address: options.listen.clone(),
            message: e.to_string(),
        })?;
    let bound = listener.local_addr().map_err(|e| PodError::Listen {
        address: options.listen.clone(),
        message: e.to_string(),
    })?;
    let advertise = match &options.advertise {
        Some(a) => a.clone(),
        None if bound.ip().is_unspecified() => format!("{}:{}", hostname(), bound.port()),
        None => bound.to_string(),
    };
    let channel = net::connect(
        "the scheduler",
        &options.sched,
        options.tls.as_deref(),
        Duration::from_millis(options.connect_timeout_ms),
    )
    .await?;
    let mut client: SchedClient =
        proto::scheduler_client::SchedulerClient::with_interceptor(channel, options.token.client())
            .max_decoding_message_size(net::MAX_MESSAGE_BYTES);
    let tls_on = options.tls.is_some();
    let rpc = |what: &'static str| {
        let address = options.sched.clone();
        let id = options.id;
        move |status: tonic::Status| {
            if let Some(message) = tls::failure(&status) {
                return PodError::TlsRefused {
                    address,
                    id,
                    message,
                };
            }
            if status.code() == tonic::Code::Unauthenticated
                || status.code() == tonic::Code::InvalidArgument
            {
                PodError::Refused {
                    address,
                    id,
                    message: status.message().to_string(),
                }
            } else {
                let mut message = error_chain(&status);
                // A server that refuses the TLS handshake just hangs up; under
                // TLS 1.3 the client learns it only on its first request,
                // which then reads as cancelled.
                let hung_up = matches!(
                    status.code(),
                    tonic::Code::Unavailable
                        | tonic::Code::Unknown
                        | tonic::Code::Internal
                        | tonic::Code::Cancelled
                );
                if what == "registration" && hung_up {
                    message.push_str(if tls_on {
                        " (a scheduler that refuses this pod's TLS certificate hangs up: its log says why)"
                    } else {
                        " (a scheduler that requires TLS refuses pods without --tls-cert, --tls-key and --tls-ca: its log says why)"
                    });
                }
                PodError::Rpc {
                    address,
                    what,
                    message,
                }
            }
        }
    };
    let reply = client
        .register(proto::RegisterRequest {
            pod_id: options.id as u32,
            advertise: advertise.clone(),
            arena_bytes: options.arena_bytes,
            backend: match options.backend {
                Backend::Host => "host".into(),
                Backend::Cuda => "cuda".into(),
            },
        })
        .await
        .map_err(rpc("registration"))?
        .into_inner();
    let kernel = fetch_kernel(&mut client, &reply.kernel_sha256)
        .await
        .map_err(rpc("the kernel fetch"))?;
    let kernel = verified_kernel(&reply.kernel_sha256, kernel)?;
    let job = Job::parse(&reply.job_name, &reply.job_text, Path::new(&reply.job_base))?;
    let binding = job::bind_source(&job, kernel)?;
    let wire = reply.plan.unwrap_or_default();
    let plan = plan::plan(
        &job,
        &binding,
        &PlanOptions {
            nodes: wire.nodes as usize,
            budget_bytes: wire.budget_bytes,
            ingest: if wire.home_fetch {
                Ingest::HomeFetch
            } else {
                Ingest::Direct
            },
            autotune: wire.autotune,
            machine: Machine {
                leaf_flops: wire.leaf_flops,
                link_bytes_per_s: wire.link_bytes_per_s,
                vram_bytes: wire.vram_bytes,
            },
        },
    )?;
    let config = format!("{:?}", plan.config.values);
    if plan.supertiles.len() != reply.supertiles as usize || config != reply.config {
        return Err(PodError::PlanMismatch {
            supertiles: plan.supertiles.len(),
            config,
            expected_supertiles: reply.supertiles as usize,
            expected_config: reply.config,
        });
    }
    tracing::info!(
        pod = options.id,
        %advertise,
        kernel = %plan.kernel.name,
        supertiles = plan.supertiles.len(),
        "pod{} joined", options.id
    );
    let (job, binding, plan, cuda) = match device {
        None => (job, binding, plan, None),
        Some(device) => {
            let cache = PtxCache::new(&options.ptx_cache);
            let prepared = tokio::task::spawn_blocking(move || {
                CudaRunner::prepare(device, &job, &binding, &plan, &cache)
                    .map(|(runner, _)| (job, binding, plan, Some(runner)))
            })
            .await
            .map_err(|e| PodError::CudaTask(e.to_string()))?;
            prepared?
        }
    };
    let job = Arc::new(job);
    let chaos = Chaos::from_env(options.id);
    let router = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(proto::pod_server::PodServer::with_interceptor(
            TileService {
                job: job.clone(),
                chaos: chaos.clone(),
            },
            options.token.server("pod"),
        ));
    let tile_server = match &options.tls {
        None => tokio::spawn(router.serve_with_incoming(TcpListenerStream::new(listener))),
        Some(t) => tokio::spawn(router.serve_with_incoming(tls::incoming(listener, t, "pod"))),
    };

    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let _ = events_tx.send(proto::PodEvent {
        event: Some(pod_event::Event::Hello(proto::Hello {
            pod_id: options.id as u32,
        })),
    });
    let mut inbound = client
        .control(UnboundedReceiverStream::new(events_rx))
        .await
        .map_err(rpc("the control stream"))?
        .into_inner();
    let arena_kib = u32::try_from(options.arena_bytes.div_ceil(1024)).unwrap_or(u32::MAX);
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let ctx = Arc::new(PodCtx {
        id: options.id,
        scalars: exec::scalar_values(&job),
        job,
        binding,
        plan,
        peers: Peers::new(options.token.clone(), options.tls.clone()),
        chaos,
        cuda,
        arena: Arc::new(Semaphore::new(arena_kib as usize)),
        arena_kib,
        running: AtomicU32::new(0),
        events: events_tx,
        done: done_tx,
    });
    let heartbeat_ms = u64::from(reply.heartbeat_ms.max(10));
    let heart = tokio::spawn(heartbeats(ctx.clone(), heartbeat_ms));
    let batcher = tokio::spawn(completion_batches(ctx.events.clone(), done_rx));
    let (work_tx, work_rx) = mpsc::unbounded_channel::<proto::Work>();
    let work_rx = Arc::new(tokio::sync::Mutex::new(work_rx));
    let workers: Vec<_> = (0..options.concurrency.max(1))
        .map(|_| {
            let ctx = ctx.clone();
            let work_rx = work_rx.clone();
            tokio::spawn(async move {
                loop {
                    let work = work_rx.lock().await.recv().await;
                    match work {
                        Some(w) => run_work(&ctx, w).await,
                        None => return,
                    }
                }
            })
        })
        .collect();
    let outcome = loop {
        match inbound.message().await {
            Ok(Some(proto::SchedCommand {
                command: Some(sched_command::Command::Assign(assign)),
            })) => {
                for w in assign.work {
                    let _ = work_tx.send(w);
                }
            }
            Ok(Some(proto::SchedCommand {
                command: Some(sched_command::Command::Shutdown(s)),
            })) => {
                tracing::info!(pod = options.id, "shutting down: {}", s.reason);
                break Ok(());
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                break Err(PodError::LostScheduler {
                    address: options.sched.clone(),
                    message: "it closed the control stream without a Shutdown".into(),
                });
            }
            Err(status) => {
                break Err(PodError::LostScheduler {
                    address: options.sched.clone(),
                    message: error_chain(&status),
                });
            }
        }
    };
    heart.abort();
    batcher.abort();
    for w in workers {
        w.abort();
    }
    tile_server.abort();
    outcome
}

type SchedClient = proto::scheduler_client::SchedulerClient<
    tonic::service::interceptor::InterceptedService<
        tonic::transport::Channel,
        crate::net::auth::ClientAuth,
    >,
>;

/// The kernel source named by `sha256`, as the scheduler streams it.
async fn fetch_kernel(client: &mut SchedClient, sha256: &str) -> Result<Vec<u8>, tonic::Status> {
    let mut stream = client
        .fetch_kernel(proto::KernelRequest {
            sha256: sha256.to_string(),
        })
        .await?
        .into_inner();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.message().await? {
        bytes.extend_from_slice(&chunk.data);
    }
    Ok(bytes)
}

/// `bytes` as the kernel source named by `sha256`: bytes that hash to
/// anything else (another kernel, or damaged on the way) are never run.
pub fn verified_kernel(sha256: &str, bytes: Vec<u8>) -> Result<String, PodError> {
    let actual = crate::sched::service::kernel_hash(&bytes);
    if actual != sha256 {
        return Err(PodError::KernelHash {
            expected: sha256.to_string(),
            actual,
        });
    }
    String::from_utf8(bytes).map_err(|_| PodError::KernelNotUtf8 {
        sha256: sha256.to_string(),
    })
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

async fn heartbeats(ctx: Arc<PodCtx>, interval_ms: u64) {
    let mut tick = tokio::time::interval(Duration::from_millis(interval_ms));
    loop {
        tick.tick().await;
        let used_kib = ctx.arena_kib as usize - ctx.arena.available_permits();
        let beat = proto::PodEvent {
            event: Some(pod_event::Event::Heartbeat(proto::Heartbeat {
                running: ctx.running.load(Ordering::Relaxed),
                arena_used_bytes: used_kib as u64 * 1024,
            })),
        };
        if ctx.events.send(beat).is_err() {
            return;
        }
    }
}

/// Sends stored supertiles as they come, everything ready in one message.
async fn completion_batches(
    events: mpsc::UnboundedSender<proto::PodEvent>,
    mut done: mpsc::UnboundedReceiver<(usize, Traffic, u64)>,
) {
    while let Some(first) = done.recv().await {
        let mut batch = proto::Completed::default();
        let mut add = |(supertile, traffic, fetched): (usize, Traffic, u64)| {
            batch.supertiles.push(supertile as u32);
            batch.bytes_loaded += traffic.bytes_loaded.saturating_sub(fetched);
            batch.bytes_fetched += fetched;
            batch.bytes_stored += traffic.bytes_stored;
        };
        add(first);
        while let Ok(more) = done.try_recv() {
            add(more);
        }
        let event = proto::PodEvent {
            event: Some(pod_event::Event::Completed(batch)),
        };
        if events.send(event).is_err() {
            return;
        }
    }
}

fn fail(ctx: &PodCtx, supertile: usize, message: String, peer: Option<u32>) {
    tracing::warn!(pod = ctx.id, supertile, "{message}");
    let _ = ctx.events.send(proto::PodEvent {
        event: Some(pod_event::Event::Failed(proto::Failed {
            supertile: supertile as u32,
            message,
            peer,
        })),
    });
}

/// One supertile: wait for arena room, fetch from peers, compute, store.
async fn run_work(ctx: &Arc<PodCtx>, work: proto::Work) {
    let id = work.supertile as usize;
    let Some(st) = ctx.plan.supertiles.get(id) else {
        fail(ctx, id, format!("no supertile {id} in the plan"), None);
        return;
    };
    let bytes = working_set_bytes(&ctx.job, st);
    let kib = u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX);
    if kib > ctx.arena_kib {
        let message = format!(
            "supertile {id} needs {bytes} bytes; the arena of pod{} holds {} (raise --arena or plan with a smaller --budget)",
            ctx.id,
            u64::from(ctx.arena_kib) * 1024
        );
        fail(ctx, id, message, None);
        return;
    }
    let Ok(_permit) = ctx.arena.clone().acquire_many_owned(kib).await else {
        return;
    };
    ctx.running.fetch_add(1, Ordering::Relaxed);
    let mut fetched = HashMap::new();
    let mut fetched_bytes = 0u64;
    for f in &work.fetch {
        let Some(spec) = ctx.job.tensor(&f.tensor) else {
            continue;
        };
        let region = buffer_region(st, &f.tensor);
        match ctx.peers.fetch(spec, &region, f.home, &f.address).await {
            Ok(tile) => {
                fetched_bytes += (region.elements() * spec.dtype.size_bytes()) as u64;
                fetched.insert(f.tensor.clone(), tile);
            }
            Err(message) => {
                ctx.running.fetch_sub(1, Ordering::Relaxed);
                fail(ctx, id, message, Some(f.home));
                return;
            }
        }
    }
    ctx.chaos.before_compute();
    let task_ctx = ctx.clone();
    let result = tokio::task::spawn_blocking(move || {
        let ctx = task_ctx;
        let st = &ctx.plan.supertiles[id];
        let mut load = |spec: &crate::job::TensorSpec, region: &plan::Region| match fetched
            .remove(&spec.name)
        {
            Some(tile) => Ok(tile),
            None => Ok(region_io::read_region(
                &spec.path,
                spec.dtype,
                &spec.shape,
                region,
            )?),
        };
        match &ctx.cuda {
            Some(runner) => runner.run_supertile(&ctx.job, &ctx.binding, st, &mut load),
            None => exec::run_supertile_with(
                &ctx.job,
                &ctx.binding,
                &ctx.plan,
                st,
                &ctx.scalars,
                &mut load,
            ),
        }
    })
    .await;
    ctx.running.fetch_sub(1, Ordering::Relaxed);
    match result {
        Ok(Ok(traffic)) => {
            ctx.chaos.after_store();
            let _ = ctx.done.send((id, traffic, fetched_bytes));
        }
        Ok(Err(e)) => fail(ctx, id, error_chain(&e), None),
        Err(e) => fail(ctx, id, format!("the compute task failed: {e}"), None),
    }
}

/// Bytes a supertile holds while it runs: each tensor's buffer region.
fn working_set_bytes(job: &Job, st: &plan::Supertile) -> u64 {
    job.tensors
        .iter()
        .filter(|t| {
            st.footprint.reads.contains_key(&t.name) || st.footprint.writes.contains_key(&t.name)
        })
        .map(|t| (buffer_region(st, &t.name).elements() * t.dtype.size_bytes()) as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::service::kernel_hash;

    #[test]
    fn a_kernel_is_run_only_when_it_hashes_to_the_name_it_was_fetched_by() {
        let source = "kernel k() {}\n";
        let sha = kernel_hash(source);
        assert_eq!(
            verified_kernel(&sha, source.as_bytes().to_vec()).unwrap(),
            source
        );
        // Another kernel, or the same one damaged on the way.
        let err = verified_kernel(&sha, b"kernel k() {}\r\n".to_vec()).unwrap_err();
        assert!(
            matches!(&err, PodError::KernelHash { expected, actual } if *expected == sha && *actual != sha),
            "{err}"
        );
        assert!(err.to_string().contains(&sha), "{err}");
        let bytes = vec![0xff, 0xfe];
        let err = verified_kernel(&kernel_hash(&bytes), bytes).unwrap_err();
        assert!(matches!(err, PodError::KernelNotUtf8 { .. }), "{err}");
    }
}
