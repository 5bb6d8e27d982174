//! The wire between the scheduler and its pods: the generated gRPC code
//! (`proto/cluster.proto`), the shared-token check every RPC passes,
//! optional mutual TLS, and the helpers both sides use (connecting,
//! chunked byte streams, regions).

pub mod auth;
pub mod tls;

use std::time::{Duration, Instant};

use tonic::transport::{Channel, Endpoint};

use crate::plan::Region;
use tls::Tls;

/// The generated messages, clients and servers.
#[allow(clippy::all, missing_docs)]
pub mod proto {
    tonic::include_proto!("phobos.cluster.v1");
}

/// Bytes per streamed chunk (tiles and kernel sources).
pub const CHUNK_BYTES: usize = 256 * 1024;

/// The largest message either side accepts (a chunk plus framing).
pub const MAX_MESSAGE_BYTES: usize = 4 * CHUNK_BYTES;

#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("`{address}` is not a host:port address: {message}")]
    Address { address: String, message: String },
    #[error("cannot reach {what} at {address} within {waited_ms} ms: {message}")]
    Unreachable {
        what: String,
        address: String,
        waited_ms: u128,
        message: String,
    },
    #[error(
        "TLS with {what} at {address} failed: {message} (both sides need certificates signed by the same --tls-ca, valid for the host dialed or --tls-domain)"
    )]
    Tls {
        what: String,
        address: String,
        message: String,
    },
}

/// An endpoint for `host:port`: `http://`, or `https://` with this
/// process's certificate when `tls` is given.
pub fn endpoint(address: &str, tls: Option<&Tls>) -> Result<Endpoint, NetError> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let uri = if address.contains("://") {
        address.to_string()
    } else {
        format!("{scheme}://{address}")
    };
    let endpoint = Endpoint::from_shared(uri)
        .map(|e| {
            e.connect_timeout(Duration::from_secs(2))
                .tcp_nodelay(true)
                .http2_keep_alive_interval(Duration::from_secs(10))
        })
        .map_err(|e| NetError::Address {
            address: address.to_string(),
            message: e.to_string(),
        })?;
    match tls {
        None => Ok(endpoint),
        Some(tls) => endpoint
            .tls_config(tls.client_config())
            .map_err(|e| NetError::Tls {
                what: "the endpoint".into(),
                address: address.to_string(),
                message: error_chain(&e),
            }),
    }
}

/// Connects to `address`, retrying until `wait` has passed (the other
/// side may still be starting); a TLS failure is final at once.
pub async fn connect(
    what: &str,
    address: &str,
    tls: Option<&Tls>,
    wait: Duration,
) -> Result<Channel, NetError> {
    let endpoint = endpoint(address, tls)?;
    let started = Instant::now();
    loop {
        let e = match endpoint.connect().await {
            Ok(channel) => return Ok(channel),
            Err(e) => e,
        };
        if let Some(message) = tls::failure(&e) {
            return Err(NetError::Tls {
                what: what.to_string(),
                address: address.to_string(),
                message,
            });
        }
        if started.elapsed() >= wait {
            return Err(NetError::Unreachable {
                what: what.to_string(),
                address: address.to_string(),
                waited_ms: started.elapsed().as_millis(),
                message: error_chain(&e),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An error and its sources on one line ("transport error: connection
/// refused"), for messages that name what failed.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// `bytes` cut into chunks for a server stream.
pub fn chunks(bytes: Vec<u8>) -> Vec<proto::Chunk> {
    if bytes.is_empty() {
        return vec![proto::Chunk { data: Vec::new() }];
    }
    bytes
        .chunks(CHUNK_BYTES)
        .map(|c| proto::Chunk { data: c.to_vec() })
        .collect()
}

/// A region as the request fields.
pub fn region_to_wire(region: &Region) -> (Vec<u64>, Vec<u64>) {
    (
        region.start.iter().map(|&v| v as u64).collect(),
        region.len.iter().map(|&v| v as u64).collect(),
    )
}

/// The request fields as a region inside `shape`, or why they are not one.
pub fn region_from_wire(start: &[u64], len: &[u64], shape: &[usize]) -> Result<Region, String> {
    if start.len() != shape.len() || len.len() != shape.len() {
        return Err(format!(
            "a region of a rank-{} tensor needs {} starts and lengths, got {} and {}",
            shape.len(),
            shape.len(),
            start.len(),
            len.len()
        ));
    }
    let mut region = Region {
        start: Vec::new(),
        len: Vec::new(),
    };
    for ((&s, &l), &extent) in start.iter().zip(len).zip(shape) {
        let end = s.checked_add(l).filter(|&e| e <= extent as u64);
        if end.is_none() {
            return Err(format!(
                "region {start:?}+{len:?} lies outside the tensor {shape:?}"
            ));
        }
        region.start.push(s as usize);
        region.len.push(l as usize);
    }
    Ok(region)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_round_trip_and_out_of_bounds_is_refused() {
        let region = Region {
            start: vec![3, 4],
            len: vec![5, 6],
        };
        let (s, l) = region_to_wire(&region);
        assert_eq!(region_from_wire(&s, &l, &[8, 10]).unwrap(), region);
        let err = region_from_wire(&s, &l, &[8, 9]).unwrap_err();
        assert!(err.contains("outside the tensor"), "{err}");
        let err = region_from_wire(&s[..1], &l, &[8, 10]).unwrap_err();
        assert!(err.contains("needs 2 starts"), "{err}");
        assert!(region_from_wire(&[u64::MAX, 0], &[2, 1], &[8, 10]).is_err());
    }

    #[test]
    fn chunks_cover_the_bytes_in_order() {
        let bytes: Vec<u8> = (0..CHUNK_BYTES * 2 + 7).map(|i| i as u8).collect();
        let parts = chunks(bytes.clone());
        assert_eq!(parts.len(), 3);
        let joined: Vec<u8> = parts.into_iter().flat_map(|c| c.data).collect();
        assert_eq!(joined, bytes);
        assert_eq!(chunks(Vec::new()).len(), 1);
    }
}
