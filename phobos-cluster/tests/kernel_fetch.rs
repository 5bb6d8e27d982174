//! Kernels travel between processes by content hash: a pod learns the
//! job's kernel SHA-256 when it registers and fetches the source by it
//! from the scheduler; what arrives is checked against the hash (host and
//! CUDA pods alike; CUDA pods then key their PTX cache by it). An unknown
//! hash is refused by the scheduler, naming both hashes. Runs the real
//! scheduler in this process, bounded by its join timeout.

mod common;

use std::time::Duration;

use phobos_cluster::net::auth::Token;
use phobos_cluster::net::proto::{self, scheduler_client::SchedulerClient};
use phobos_cluster::plan::PlanOptions;
use phobos_cluster::pod::{PodError, verified_kernel};
use phobos_cluster::sched::service::kernel_hash;
use phobos_cluster::sched::{self, SchedError, SchedOptions};
use phobos_cluster::{net, store};

use common::*;

type Client = SchedulerClient<
    tonic::service::interceptor::InterceptedService<
        tonic::transport::Channel,
        phobos_cluster::net::auth::ClientAuth,
    >,
>;

async fn fetch(client: &mut Client, sha256: &str) -> Result<Vec<u8>, tonic::Status> {
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

#[test]
fn the_kernel_is_fetched_by_its_hash_and_checked_against_it() {
    let d = dir("kernel-fetch");
    let job = sgemm(&d, "C.bin");
    let source = std::fs::read_to_string(kernels().join("gemm_f32.ph")).unwrap();
    let sha = kernel_hash(&source);
    let token = Token::new("t0k".into()).unwrap();
    let options = SchedOptions {
        job_path: job,
        plan: PlanOptions::new(1),
        listen: "127.0.0.1:0".into(),
        token: token.clone(),
        tls: None,
        heartbeat_ms: 500,
        // No pod ever opens a control stream: the scheduler gives up.
        join_timeout_ms: 1500,
        rejoin_wait_ms: 0,
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (sched_result, ()) = runtime.block_on(async {
        let (listening_tx, listening) = tokio::sync::oneshot::channel();
        let sched = sched::run(options, move |address| {
            let _ = listening_tx.send(address);
        });
        let client = async {
            let address = listening.await.unwrap().to_string();
            let channel = net::connect("the scheduler", &address, None, Duration::from_secs(5))
                .await
                .unwrap();
            let mut client = SchedulerClient::with_interceptor(channel, token.client());
            let reply = client
                .register(proto::RegisterRequest {
                    pod_id: 0,
                    advertise: "127.0.0.1:9".into(),
                    arena_bytes: 1 << 20,
                    backend: "host".into(),
                })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(reply.kernel_sha256, sha);
            let bytes = fetch(&mut client, &reply.kernel_sha256).await.unwrap();
            assert_eq!(
                verified_kernel(&reply.kernel_sha256, bytes).unwrap(),
                source
            );

            // A hash the scheduler does not know.
            let unknown = "0".repeat(64);
            let status = fetch(&mut client, &unknown).await.unwrap_err();
            assert_eq!(status.code(), tonic::Code::NotFound);
            assert!(
                status.message().contains(&unknown) && status.message().contains(&sha),
                "{status:?}"
            );
            // Bytes that are not the kernel the hash names are never run.
            let err = verified_kernel(&sha, b"kernel other() {}".to_vec()).unwrap_err();
            assert!(matches!(err, PodError::KernelHash { .. }), "{err}");
            // Without the token the kernel is not served.
            let channel = net::connect("the scheduler", &address, None, Duration::from_secs(5))
                .await
                .unwrap();
            let mut anonymous = SchedulerClient::new(channel);
            let status = anonymous
                .fetch_kernel(proto::KernelRequest {
                    sha256: sha.clone(),
                })
                .await
                .unwrap_err();
            assert_eq!(status.code(), tonic::Code::Unauthenticated);
        };
        tokio::join!(sched, client)
    });
    assert!(
        matches!(sched_result, Err(SchedError::JoinTimeout { joined: 0, .. })),
        "{sched_result:?}"
    );
    assert!(!store::staging_path(&d.join("C.bin")).exists());
    std::fs::remove_dir_all(&d).unwrap();
}
