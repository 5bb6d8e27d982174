//! The accept loop: HTTP/1.1 connections served by hyper with the limits
//! `axum::serve` does not set. A client must send a request's headers
//! within the read timeout (`--read-timeout-secs`; one that trickles
//! them, or goes silent half-way, is closed: else a few thousand such
//! sockets held every file descriptor and `/health` stopped answering),
//! and at most [`MAX_CONNECTIONS`] are open at once (more are closed on
//! accept).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Connections open at once; well under the usual open-file limits.
pub const MAX_CONNECTIONS: usize = 4096;

/// Serves `app` on `listener` until `shutdown` completes; a client has
/// `header_read_timeout` to send each request's headers.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    header_read_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) {
    let open = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(error) => {
                // Out of file descriptors and the like: wait for some to
                // close instead of spinning on the error.
                tracing::warn!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tracing::warn!(
                max = MAX_CONNECTIONS,
                "too many open connections; closing a new one"
            );
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_read_timeout);
            let connection = builder
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended with an error");
            }
        });
    }
}
