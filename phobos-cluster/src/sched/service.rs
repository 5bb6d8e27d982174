//! The scheduler's gRPC service: it turns RPCs into [`Event`]s for the
//! scheduling loop and streams its commands back to the pods.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::net::proto::{self, pod_event};
use crate::net::{chunks, error_chain};

/// What every pod learns when it registers.
#[derive(Clone, Debug)]
pub struct JobInfo {
    pub reply: proto::RegisterReply,
    pub kernel_text: String,
    pub nodes: usize,
}

/// The SHA-256 of a kernel source, hex.
pub fn kernel_hash(text: impl AsRef<[u8]>) -> String {
    Sha256::digest(text.as_ref())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub type Commands = mpsc::UnboundedSender<Result<proto::SchedCommand, Status>>;

/// What the RPCs tell the scheduling loop.
pub enum Event {
    Registered {
        pod: usize,
        address: String,
    },
    Connected {
        pod: usize,
        conn: u64,
        commands: Commands,
    },
    Message {
        pod: usize,
        conn: u64,
        event: pod_event::Event,
    },
    Disconnected {
        pod: usize,
        conn: u64,
        why: String,
    },
}

pub struct SchedService {
    pub info: Arc<JobInfo>,
    pub events: mpsc::UnboundedSender<Event>,
    pub next_conn: AtomicU64,
}

impl SchedService {
    fn pod_id(&self, id: u32) -> Result<usize, Status> {
        let pod = id as usize;
        if pod >= self.info.nodes {
            return Err(Status::invalid_argument(format!(
                "pod id {pod} is out of range: this job runs pods 0..{}",
                self.info.nodes
            )));
        }
        Ok(pod)
    }

    fn send(&self, event: Event) -> Result<(), Status> {
        self.events
            .send(event)
            .map_err(|_| Status::unavailable("the scheduler is shutting down"))
    }
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<proto::Chunk, Status>> + Send>>;

#[tonic::async_trait]
impl proto::scheduler_server::Scheduler for SchedService {
    async fn register(
        &self,
        request: Request<proto::RegisterRequest>,
    ) -> Result<Response<proto::RegisterReply>, Status> {
        let r = request.into_inner();
        let pod = self.pod_id(r.pod_id)?;
        if r.advertise.is_empty() {
            return Err(Status::invalid_argument(
                "a pod must advertise the address its peers reach it at",
            ));
        }
        tracing::info!(
            pod,
            address = %r.advertise,
            arena_bytes = r.arena_bytes,
            backend = %r.backend,
            "pod{pod} registered"
        );
        self.send(Event::Registered {
            pod,
            address: r.advertise,
        })?;
        Ok(Response::new(self.info.reply.clone()))
    }

    type ControlStream = UnboundedReceiverStream<Result<proto::SchedCommand, Status>>;

    async fn control(
        &self,
        request: Request<Streaming<proto::PodEvent>>,
    ) -> Result<Response<Self::ControlStream>, Status> {
        let mut inbound = request.into_inner();
        let pod = match inbound.message().await? {
            Some(proto::PodEvent {
                event: Some(pod_event::Event::Hello(hello)),
            }) => self.pod_id(hello.pod_id)?,
            _ => {
                return Err(Status::invalid_argument(
                    "the control stream must open with Hello",
                ));
            }
        };
        let conn = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let (commands, outbound) = mpsc::unbounded_channel();
        self.send(Event::Connected {
            pod,
            conn,
            commands,
        })?;
        let events = self.events.clone();
        tokio::spawn(async move {
            let why = loop {
                match inbound.message().await {
                    Ok(Some(proto::PodEvent { event: Some(event) })) => {
                        if events.send(Event::Message { pod, conn, event }).is_err() {
                            return;
                        }
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break "closed its control stream".to_string(),
                    Err(status) => {
                        break format!("control stream broke: {}", error_chain(&status));
                    }
                }
            };
            let _ = events.send(Event::Disconnected { pod, conn, why });
        });
        Ok(Response::new(UnboundedReceiverStream::new(outbound)))
    }

    type FetchKernelStream = ChunkStream;

    async fn fetch_kernel(
        &self,
        request: Request<proto::KernelRequest>,
    ) -> Result<Response<Self::FetchKernelStream>, Status> {
        let wanted = request.into_inner().sha256;
        if wanted != self.info.reply.kernel_sha256 {
            return Err(Status::not_found(format!(
                "no kernel with SHA-256 {wanted} (this job's is {})",
                self.info.reply.kernel_sha256
            )));
        }
        let parts = chunks(self.info.kernel_text.as_bytes().to_vec());
        let stream: ChunkStream = Box::pin(tokio_stream::iter(parts.into_iter().map(Ok)));
        Ok(Response::new(stream))
    }
}
