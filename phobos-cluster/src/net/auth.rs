//! The shared token: clients send `authorization: Bearer TOKEN` on every
//! RPC; servers refuse (and log) any call without the right one.

use std::sync::Arc;

use tonic::metadata::MetadataValue;
use tonic::{Request, Status};

/// The environment variable that carries the token.
pub const TOKEN_ENV: &str = "PHOBOS_CLUSTER_TOKEN";

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("no cluster token: pass --token or set PHOBOS_CLUSTER_TOKEN (`run` makes one)")]
    Missing,
    #[error("the cluster token must be printable ASCII with no spaces")]
    Malformed,
    #[error("cannot make a token: {0}")]
    Random(String),
}

/// A job's shared secret.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// The token from `--token`, else from `PHOBOS_CLUSTER_TOKEN`.
    pub fn from_arg_or_env(arg: Option<String>) -> Result<Token, TokenError> {
        let text = arg
            .or_else(|| std::env::var(TOKEN_ENV).ok())
            .filter(|t| !t.is_empty())
            .ok_or(TokenError::Missing)?;
        Token::new(text)
    }

    pub fn new(text: String) -> Result<Token, TokenError> {
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TokenError::Malformed);
        }
        Ok(Token(text.into()))
    }

    /// A fresh random token (128 bits, hex).
    pub fn generate() -> Result<Token, TokenError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        Ok(Token(
            bytes
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
                .into(),
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Compares in time independent of where the strings differ.
    fn matches(&self, presented: &[u8]) -> bool {
        let mine = self.0.as_bytes();
        mine.len() == presented.len()
            && mine
                .iter()
                .zip(presented)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }

    /// A client interceptor that adds the token to every call.
    pub fn client(&self) -> ClientAuth {
        ClientAuth {
            header: format!("Bearer {}", self.0),
        }
    }

    /// A server interceptor that refuses calls without the token; `who`
    /// names the server in the log.
    pub fn server(&self, who: &'static str) -> ServerAuth {
        ServerAuth {
            token: self.clone(),
            who,
        }
    }
}

#[derive(Clone)]
pub struct ClientAuth {
    header: String,
}

impl tonic::service::Interceptor for ClientAuth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let value: MetadataValue<_> = self
            .header
            .parse()
            .map_err(|_| Status::internal("the token is not a valid header value"))?;
        request.metadata_mut().insert("authorization", value);
        Ok(request)
    }
}

#[derive(Clone)]
pub struct ServerAuth {
    token: Token,
    who: &'static str,
}

impl tonic::service::Interceptor for ServerAuth {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let presented = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
        match presented {
            Some(t) if self.token.matches(t) => Ok(request),
            _ => {
                let peer = request
                    .remote_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|| "an unknown peer".into());
                tracing::warn!(
                    server = self.who,
                    %peer,
                    "refused a call without the right cluster token from {peer}"
                );
                Err(Status::unauthenticated(
                    "wrong or missing cluster token (--token or PHOBOS_CLUSTER_TOKEN)",
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    #[test]
    fn the_right_token_passes_and_others_are_refused() {
        let token = Token::new("s3cret".into()).unwrap();
        let mut server = token.server("test");
        let request = token.client().call(Request::new(())).unwrap();
        assert!(server.call(request).is_ok());
        let other = Token::new("s3creT".into()).unwrap();
        let request = other.client().call(Request::new(())).unwrap();
        assert_eq!(
            server.call(request).unwrap_err().code(),
            tonic::Code::Unauthenticated
        );
        assert_eq!(
            server.call(Request::new(())).unwrap_err().code(),
            tonic::Code::Unauthenticated
        );
    }

    #[test]
    fn generated_tokens_differ_and_bad_ones_are_errors() {
        let a = Token::generate().unwrap();
        let b = Token::generate().unwrap();
        assert_eq!(a.as_str().len(), 32);
        assert_ne!(a.as_str(), b.as_str());
        assert!(matches!(
            Token::new("has space".into()),
            Err(TokenError::Malformed)
        ));
    }
}
