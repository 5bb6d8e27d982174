//! Optional mutual TLS. Every process of a job gets one certificate and
//! key (used both as its server certificate and as its client
//! certificate) and the CA that signed its peers'. Servers require a
//! client certificate signed by that CA and refuse (and log) any
//! connection without one; clients check the server's certificate against
//! the same CA and the host they dialed (or `--tls-domain`). The shared
//! token is still checked on every call on top.
//!
//! Servers run the handshake themselves ([`incoming`]) rather than through
//! tonic's acceptor, which drops a failed handshake with only a debug
//! line: a refused peer must show in the log.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

/// The environment variables behind `--tls-cert`, `--tls-key`, `--tls-ca`
/// and `--tls-domain`.
pub const CERT_ENV: &str = "PHOBOS_CLUSTER_TLS_CERT";
pub const KEY_ENV: &str = "PHOBOS_CLUSTER_TLS_KEY";
pub const CA_ENV: &str = "PHOBOS_CLUSTER_TLS_CA";
pub const DOMAIN_ENV: &str = "PHOBOS_CLUSTER_TLS_DOMAIN";

/// A handshake that takes longer is dropped (a peer that connects and
/// says nothing holds no task for long).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(
        "mutual TLS needs --tls-cert, --tls-key and --tls-ca together (or {CERT_ENV}, {KEY_ENV}, {CA_ENV}); missing: {missing}"
    )]
    Incomplete { missing: String },
    #[error("--tls-domain without --tls-cert, --tls-key and --tls-ca means nothing")]
    DomainWithoutTls,
    #[error("cannot read the TLS {what} {}: {message}", path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("the TLS {what} {} {message}", path.display())]
    Pem {
        what: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("the TLS setup failed: {0}")]
    Config(String),
}

/// The PEM paths as given (flags or environment), before loading.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct TlsArgs {
    /// Mutual TLS: this process's certificate chain (PEM). It serves as
    /// both its server and its client certificate: give it the server
    /// and client authentication usages and the names others dial it by.
    #[arg(long, env = CERT_ENV, value_name = "PEM")]
    pub tls_cert: Option<PathBuf>,
    /// Mutual TLS: the private key of --tls-cert (PEM).
    #[arg(long, env = KEY_ENV, value_name = "PEM")]
    pub tls_key: Option<PathBuf>,
    /// Mutual TLS: the CA certificate(s) (PEM) that every peer's
    /// certificate must be signed by; peers without one are refused.
    #[arg(long, env = CA_ENV, value_name = "PEM")]
    pub tls_ca: Option<PathBuf>,
    /// Mutual TLS: the name servers' certificates are checked against
    /// (default: the host each address names).
    #[arg(long, env = DOMAIN_ENV, value_name = "NAME")]
    pub tls_domain: Option<String>,
}

impl TlsArgs {
    /// The loaded configuration, `None` without TLS flags.
    pub fn load(&self) -> Result<Option<Arc<Tls>>, TlsError> {
        match (&self.tls_cert, &self.tls_key, &self.tls_ca) {
            (None, None, None) if self.tls_domain.is_some() => Err(TlsError::DomainWithoutTls),
            (None, None, None) => Ok(None),
            (Some(cert), Some(key), Some(ca)) => {
                Tls::load(cert, key, ca, self.tls_domain.clone()).map(|t| Some(Arc::new(t)))
            }
            (cert, key, ca) => {
                let missing: Vec<&str> = [
                    ("--tls-cert", cert.is_none()),
                    ("--tls-key", key.is_none()),
                    ("--tls-ca", ca.is_none()),
                ]
                .iter()
                .filter(|(_, absent)| *absent)
                .map(|(name, _)| *name)
                .collect();
                Err(TlsError::Incomplete {
                    missing: missing.join(", "),
                })
            }
        }
    }

    /// The same paths as command-line arguments (for `run`'s children).
    pub fn forward(&self) -> Vec<std::ffi::OsString> {
        let mut out = Vec::new();
        for (flag, path) in [
            ("--tls-cert", &self.tls_cert),
            ("--tls-key", &self.tls_key),
            ("--tls-ca", &self.tls_ca),
        ] {
            if let Some(p) = path {
                out.push(flag.into());
                out.push(p.clone().into_os_string());
            }
        }
        if let Some(d) = &self.tls_domain {
            out.push("--tls-domain".into());
            out.push(d.into());
        }
        out
    }
}

/// One process's mutual-TLS material, checked when loaded.
pub struct Tls {
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
    ca_pem: Vec<u8>,
    domain: Option<String>,
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for Tls {
    /// Names the domain only: the PEM bytes hold a private key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("domain", &self.domain)
            .finish_non_exhaustive()
    }
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read {
        what,
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

fn certificates(
    what: &'static str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            what,
            path: path.to_path_buf(),
            message: format!("is not valid PEM: {e}"),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            what,
            path: path.to_path_buf(),
            message: "holds no `BEGIN CERTIFICATE` block".into(),
        });
    }
    Ok(certs)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Tls {
    /// Reads and checks the PEM files; the server side is built here so
    /// a bad file fails at start, not at the first connection.
    pub fn load(
        cert: &Path,
        key: &Path,
        ca: &Path,
        domain: Option<String>,
    ) -> Result<Tls, TlsError> {
        let cert_pem = read("certificate", cert)?;
        let key_pem = read("key", key)?;
        let ca_pem = read("CA", ca)?;
        let chain = certificates("certificate", cert, &cert_pem)?;
        let private_key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| TlsError::Pem {
            what: "key",
            path: key.to_path_buf(),
            message: format!("holds no private key (PKCS#8, PKCS#1 or SEC1 PEM): {e}"),
        })?;
        let mut roots = RootCertStore::empty();
        for c in certificates("CA", ca, &ca_pem)? {
            roots.add(c).map_err(|e| TlsError::Pem {
                what: "CA",
                path: ca.to_path_buf(),
                message: format!("is not a usable CA certificate: {e}"),
            })?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| TlsError::Config(format!("the client verifier: {e}")))?;
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, private_key)
            .map_err(|e| TlsError::Pem {
                what: "key",
                path: key.to_path_buf(),
                message: format!("does not go with {}: {e}", cert.display()),
            })?;
        // gRPC is HTTP/2.
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Tls {
            cert_pem,
            key_pem,
            ca_pem,
            domain,
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// The client side: this process's certificate, the CA to check
    /// servers against, and `--tls-domain` if given.
    pub fn client_config(&self) -> ClientTlsConfig {
        let config = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca_pem))
            .identity(Identity::from_pem(&self.cert_pem, &self.key_pem))
            .timeout(HANDSHAKE_TIMEOUT);
        match &self.domain {
            Some(d) => config.domain_name(d.clone()),
            None => config,
        }
    }
}

/// The connections of `listener` that complete a mutual-TLS handshake,
/// for `Server::serve_with_incoming`. Handshakes run concurrently; a
/// refused one is logged with the peer's address and why. The accept loop
/// ends when the server drops the stream.
pub fn incoming(
    listener: TcpListener,
    tls: &Tls,
    who: &'static str,
) -> ReceiverStream<io::Result<TlsStream<TcpStream>>> {
    let (tx, rx) = mpsc::channel(16);
    let acceptor = tls.acceptor.clone();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = tx.closed() => return,
                accepted = listener.accept() => accepted,
            };
            let (tcp, peer) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors and the like: the listener is fine.
                    tracing::warn!(server = who, "accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                if let Some(stream) = handshake(acceptor, tcp, peer, who).await {
                    let _ = tx.send(Ok(stream)).await;
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

async fn handshake(
    acceptor: TlsAcceptor,
    tcp: TcpStream,
    peer: SocketAddr,
    who: &'static str,
) -> Option<TlsStream<TcpStream>> {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            tracing::warn!(
                server = who,
                %peer,
                "refused a TLS connection from {peer}: {e} (a valid client certificate signed by --tls-ca is required)"
            );
            None
        }
        Err(_) => {
            tracing::warn!(
                server = who,
                %peer,
                "refused a TLS connection from {peer}: no handshake within {} s",
                HANDSHAKE_TIMEOUT.as_secs()
            );
            None
        }
    }
}

/// The TLS failure somewhere in `e`'s chain, if any (a certificate the
/// other side refused, or one this side could not verify): such an error
/// does not heal by retrying.
pub fn failure(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls.to_string());
        }
        // io::Error hides the error it wraps from `source()`.
        if let Some(inner) = err
            .downcast_ref::<io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(inner.to_string());
        }
        current = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cert: bool, key: bool, ca: bool) -> TlsArgs {
        let path = |on: bool, name: &str| on.then(|| PathBuf::from(name));
        TlsArgs {
            tls_cert: path(cert, "c.pem"),
            tls_key: path(key, "k.pem"),
            tls_ca: path(ca, "ca.pem"),
            tls_domain: None,
        }
    }

    #[test]
    fn the_three_files_go_together_and_are_handed_on_as_flags() {
        assert!(args(false, false, false).load().unwrap().is_none());
        let err = args(true, false, true).load().unwrap_err();
        assert!(err.to_string().contains("missing: --tls-key"), "{err}");
        let err = args(false, true, false).load().unwrap_err();
        assert!(
            err.to_string().contains("missing: --tls-cert, --tls-ca"),
            "{err}"
        );
        let mut domain_only = args(false, false, false);
        domain_only.tls_domain = Some("x".into());
        assert!(matches!(
            domain_only.load(),
            Err(TlsError::DomainWithoutTls)
        ));
        let err = args(true, true, true).load().unwrap_err();
        assert!(
            err.to_string()
                .contains("cannot read the TLS certificate c.pem"),
            "{err}"
        );
        let mut all = args(true, true, true);
        all.tls_domain = Some("cluster".into());
        let flags: Vec<String> = all
            .forward()
            .iter()
            .map(|f| f.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            flags,
            [
                "--tls-cert",
                "c.pem",
                "--tls-key",
                "k.pem",
                "--tls-ca",
                "ca.pem",
                "--tls-domain",
                "cluster"
            ]
        );
        assert!(args(false, false, false).forward().is_empty());
    }

    #[test]
    fn a_rustls_error_is_found_behind_an_io_error() {
        let wrapped = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::NoCertificatesPresented,
        );
        assert!(failure(&wrapped).is_some_and(|m| m.contains("no certificates")));
        let plain = io::Error::new(io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(failure(&plain), None);
    }
}
