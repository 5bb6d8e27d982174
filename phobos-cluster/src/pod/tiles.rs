//! Tiles between pods: the Pod service that serves input regions to
//! peers as streamed chunks, and the client side that fetches them.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::Mutex;
use tokio_stream::Stream;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use super::chaos::Chaos;
use crate::exec::region_io;
use crate::job::{Access, Job, TensorSpec};
use crate::net::auth::{ClientAuth, Token};
use crate::net::proto::{self, pod_client::PodClient};
use crate::net::tls::Tls;
use crate::net::{self, chunks, error_chain, region_from_wire, region_to_wire};
use crate::plan::Region;
use crate::store::HostTensor;

pub struct TileService {
    pub job: Arc<Job>,
    pub chaos: Chaos,
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<proto::Chunk, Status>> + Send>>;

#[tonic::async_trait]
impl proto::pod_server::Pod for TileService {
    type FetchTileStream = ChunkStream;

    async fn fetch_tile(
        &self,
        request: Request<proto::TileRequest>,
    ) -> Result<Response<Self::FetchTileStream>, Status> {
        let r = request.into_inner();
        let spec = self
            .job
            .tensor(&r.tensor)
            .filter(|t| t.access != Access::Write)
            .ok_or_else(|| {
                Status::not_found(format!("`{}` is not an input of this job", r.tensor))
            })?
            .clone();
        let region =
            region_from_wire(&r.start, &r.len, &spec.shape).map_err(Status::invalid_argument)?;
        let bytes = tokio::task::spawn_blocking(move || {
            region_io::read_region(&spec.path, spec.dtype, &spec.shape, &region)
                .and_then(|t| t.to_le_bytes())
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?
        .map_err(|e| Status::internal(error_chain(&e)))?;
        let parts = chunks(bytes);
        if self.chaos.dies_mid_fetch() {
            // Tests: send part of the tile, then die with the stream open.
            let (tx, rx) = tokio::sync::mpsc::channel(4);
            let first = parts.into_iter().next();
            tokio::spawn(async move {
                if let Some(first) = first {
                    let _ = tx.send(Ok(first)).await;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                super::chaos::die("mid-fetch");
                drop(tx);
            });
            let stream: ChunkStream = Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx));
            return Ok(Response::new(stream));
        }
        let stream: ChunkStream = Box::pin(tokio_stream::iter(parts.into_iter().map(Ok)));
        Ok(Response::new(stream))
    }
}

type Client = PodClient<InterceptedService<Channel, ClientAuth>>;

/// Clients to peers, one connection per address.
pub struct Peers {
    token: Token,
    tls: Option<Arc<Tls>>,
    clients: Mutex<HashMap<String, Client>>,
}

impl Peers {
    pub fn new(token: Token, tls: Option<Arc<Tls>>) -> Peers {
        Peers {
            token,
            tls,
            clients: Mutex::new(HashMap::new()),
        }
    }

    async fn client(&self, address: &str) -> Result<Client, String> {
        if let Some(c) = self.clients.lock().await.get(address) {
            return Ok(c.clone());
        }
        let channel = net::endpoint(address, self.tls.as_deref())
            .map_err(|e| e.to_string())?
            .connect()
            .await
            .map_err(|e| match crate::net::tls::failure(&e) {
                Some(tls) => format!("TLS: {tls}"),
                None => error_chain(&e),
            })?;
        let client = PodClient::with_interceptor(channel, self.token.client())
            .max_decoding_message_size(net::MAX_MESSAGE_BYTES);
        self.clients
            .lock()
            .await
            .insert(address.to_string(), client.clone());
        Ok(client)
    }

    /// Fetches `region` of `spec` from the peer at `address`.
    pub async fn fetch(
        &self,
        spec: &TensorSpec,
        region: &Region,
        home: u32,
        address: &str,
    ) -> Result<HostTensor, String> {
        let what = format!(
            "fetching {}{} from node{home} at {address}",
            spec.name,
            region.describe()
        );
        let result = async {
            let mut client = self.client(address).await?;
            let (start, len) = region_to_wire(region);
            let mut stream = client
                .fetch_tile(proto::TileRequest {
                    tensor: spec.name.clone(),
                    start,
                    len,
                })
                .await
                .map_err(|s| error_chain(&s))?
                .into_inner();
            let want = region.elements() * spec.dtype.size_bytes();
            let mut bytes = Vec::with_capacity(want);
            while let Some(chunk) = stream.message().await.map_err(|s| error_chain(&s))? {
                bytes.extend_from_slice(&chunk.data);
            }
            if bytes.len() != want {
                return Err(format!(
                    "the stream ended after {} of {want} bytes",
                    bytes.len()
                ));
            }
            HostTensor::from_le_bytes(spec.dtype, &region.len, &bytes).map_err(|e| e.to_string())
        }
        .await;
        if result.is_err() {
            // A broken connection is not reused.
            self.clients.lock().await.remove(address);
        }
        result.map_err(|e| format!("{what}: {e}"))
    }
}
