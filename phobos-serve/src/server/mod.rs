//! `phobos serve MODEL.gguf`: an OpenAI-compatible HTTP server (axum/tokio)
//! over an [`backend::InferenceBackend`], with continuous batching over `--parallel`
//! slots, a chat page at `/`, Prometheus metrics and a terminal dashboard.
//!
//! The server starts listening before the model is loaded (so `/health`
//! answers 503 while loading), then loads the backend on a blocking thread
//! and starts the engine thread (scheduler.rs).

pub mod backend;
mod connections;
pub mod dashboard;
mod engine;
mod error;
mod generate;
pub mod json_format;
mod load;
mod metrics;
mod params;
mod routes;
mod scheduler;
pub mod scripted;
mod state;
mod text;

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;

use metrics::Metrics;
use params::SamplingDefaults;
use state::{AppState, Loaded};

/// Reported as `system_fingerprint`.
pub const FINGERPRINT: &str = concat!("phobos-", env!("CARGO_PKG_VERSION"));

/// The flags of `phobos serve` (and of `phobos run MODEL --listen ADDR`).
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The GGUF model to serve.
    pub model: PathBuf,
    /// Address to listen on. Only loopback by default; another address
    /// without --api-key logs a warning.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The address part of --listen alone (llama-server's spelling).
    #[arg(long)]
    pub host: Option<std::net::IpAddr>,
    /// The port part of --listen alone (llama-server's spelling; 0 picks a
    /// free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// Slots: requests generated at once by continuous batching.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub parallel: u32,
    /// Total KV-cache tokens, split evenly over the --parallel slots (as
    /// llama-server's -c): each slot holds ctx-size / parallel tokens of
    /// prompt plus answer. Default: 4096 per slot.
    #[arg(short = 'c', long)]
    pub ctx_size: Option<usize>,
    /// Requests that may wait for a free slot (at least 1); more are
    /// answered 503 with Retry-After.
    #[arg(long, default_value_t = 64)]
    pub queue: usize,
    /// Require `Authorization: Bearer KEY` on every route but /health and /.
    #[arg(long, env = "PHOBOS_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// The model name /v1/models lists and requests may give (default: the
    /// file name without .gguf).
    #[arg(long)]
    pub alias: Option<String>,
    /// A Jinja chat template to use instead of the model's own.
    #[arg(long, value_name = "PATH")]
    pub chat_template_file: Option<PathBuf>,
    /// Largest request body accepted (413 above).
    #[arg(long, default_value_t = 8 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Seconds a client may take to send a request's headers (the
    /// connection is closed after) and again its body (408 after).
    #[arg(long, default_value_t = 30.0)]
    pub read_timeout_secs: f64,
    /// Default sampling temperature (requests override it; 0 = greedy).
    #[arg(long, default_value_t = 0.8)]
    pub temp: f32,
    #[arg(long, default_value_t = 0.95)]
    pub top_p: f32,
    #[arg(long, default_value_t = 40)]
    pub top_k: u32,
    #[arg(long, default_value_t = 0.05)]
    pub min_p: f32,
    #[arg(long, default_value_t = 1.0)]
    pub repeat_penalty: f32,
    #[arg(long, default_value_t = 0.0)]
    pub presence_penalty: f32,
    #[arg(long, default_value_t = 0.0)]
    pub frequency_penalty: f32,
    /// Default seed (requests override it; none: random).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Default token limit of an answer when the request gives none (none:
    /// up to the slot's context).
    #[arg(long)]
    pub n_predict: Option<usize>,
    /// Plain logs even when stdout is a terminal.
    #[arg(long)]
    pub no_dashboard: bool,
    /// Threads for the forward pass (default: all cores).
    #[arg(short = 't', long = "threads")]
    pub threads: Option<usize>,
    /// TEST ONLY: no weights are loaded; answers are the texts of this JSON
    /// script, emitted as the model's tokens (see server/scripted.rs).
    #[arg(long, value_name = "FILE")]
    pub test_script: Option<PathBuf>,
}

/// Parses `ServeArgs` from an argument list, for `phobos run MODEL --listen`.
#[derive(clap::Parser)]
struct ServeArgsOnly {
    #[command(flatten)]
    args: ServeArgs,
}

impl ServeArgs {
    /// The serving defaults for `model` on `listen`.
    pub fn for_model(model: &std::path::Path, listen: SocketAddr) -> anyhow::Result<ServeArgs> {
        use clap::Parser;
        let listen = listen.to_string();
        let args = ServeArgsOnly::try_parse_from([
            std::ffi::OsStr::new("phobos"),
            model.as_os_str(),
            std::ffi::OsStr::new("--listen"),
            std::ffi::OsStr::new(&listen),
        ])
        .context("building the server's arguments")?;
        Ok(args.args)
    }

    /// The address to listen on: --listen with --host and --port applied.
    pub fn listen_addr(&self) -> SocketAddr {
        let mut addr = self.listen;
        if let Some(host) = self.host {
            addr.set_ip(host);
        }
        if let Some(port) = self.port {
            addr.set_port(port);
        }
        addr
    }

    fn context_len_per_slot(&self) -> usize {
        self.ctx_size
            .map_or(4096, |total| total / self.parallel as usize)
            .max(16)
    }

    fn defaults(&self) -> SamplingDefaults {
        SamplingDefaults {
            temperature: self.temp,
            top_p: self.top_p,
            top_k: self.top_k,
            min_p: self.min_p,
            repeat_penalty: self.repeat_penalty,
            presence_penalty: self.presence_penalty,
            frequency_penalty: self.frequency_penalty,
            seed: self.seed,
            max_tokens: self.n_predict,
        }
    }
}

/// `phobos serve`: picks the backend and serves until Ctrl-C.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    match args.test_script.clone() {
        Some(script) => serve(args, move |args: &ServeArgs| load::scripted(args, &script)),
        None => serve(args, engine::load),
    }
}

/// Serves `load`'s backend: listens at once, loads, then answers.
pub fn serve<B, L>(args: ServeArgs, load: L) -> anyhow::Result<()>
where
    B: backend::InferenceBackend,
    L: FnOnce(&ServeArgs) -> anyhow::Result<B> + Send + 'static,
{
    anyhow::ensure!(
        args.repeat_penalty > 0.0,
        "--repeat-penalty must be greater than 0 (1 leaves logits alone), got {}",
        args.repeat_penalty
    );
    let dashboard = !args.no_dashboard && std::io::stdout().is_terminal();
    let read_timeout = Duration::try_from_secs_f64(args.read_timeout_secs)
        .ok()
        .filter(|t| !t.is_zero())
        .with_context(|| {
            format!(
                "--read-timeout-secs must be a positive number of seconds, got {}",
                args.read_timeout_secs
            )
        })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let metrics = Arc::new(Metrics::default());
        let state = Arc::new(AppState {
            loaded: OnceLock::new(),
            metrics: metrics.clone(),
            api_key: args.api_key.clone().filter(|k| !k.is_empty()),
            defaults: args.defaults(),
            max_body_bytes: args.max_body_bytes,
            read_timeout,
        });
        let listen = args.listen_addr();
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("listening on {listen}"))?;
        let local = listener
            .local_addr()
            .context("reading the listening address")?;
        if !local.ip().is_loopback() && state.api_key.is_none() {
            tracing::warn!(
                "listening on {local}, reachable from other machines, without an API key: \
                 anyone who can reach it can use the model (set --api-key or PHOBOS_API_KEY)"
            );
        }
        // Scripts and tests read this line to learn the port (with --listen :0).
        println!("phobos serve: listening on http://{local}");
        let app = routes::router(state.clone());
        let server = tokio::spawn(async move {
            connections::serve(listener, app, read_timeout, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
        });
        let load_args = args.clone();
        // Every error of `load` names the file already.
        let backend = tokio::task::spawn_blocking(move || load(&load_args))
            .await
            .context("the model loader panicked")??;
        let backend = Arc::new(backend);
        let scheduler = scheduler::start(
            backend.clone(),
            args.parallel as usize,
            args.queue,
            metrics.clone(),
        )?;
        let model: Arc<dyn backend::ModelInfo> = backend;
        tracing::info!(
            model = model.model_id(),
            backend = model.backend_name(),
            slots = args.parallel,
            ctx_per_slot = model.context_len_per_slot(),
            memory_bytes = model.memory_bytes(),
            "model loaded"
        );
        let _ = state.loaded.set(Loaded {
            model: model.clone(),
            scheduler: scheduler.clone(),
        });
        println!("phobos serve: model {} ready", model.model_id());
        let dashboard_task = dashboard.then(|| dashboard::spawn(model, metrics, local));
        let served = server.await.context("the server task panicked");
        scheduler.shutdown();
        if let Some(task) = dashboard_task {
            task.stop();
        }
        served
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(flags: &[&str]) -> ServeArgs {
        let argv = ["phobos", "model.gguf"].iter().chain(flags);
        match ServeArgsOnly::try_parse_from(argv) {
            Ok(parsed) => parsed.args,
            Err(error) => panic!("{flags:?}: {error}"),
        }
    }

    #[test]
    fn host_and_port_replace_their_part_of_listen() {
        assert_eq!(parse(&[]).listen_addr().to_string(), "127.0.0.1:8080");
        assert_eq!(
            parse(&["--port", "9001"]).listen_addr().to_string(),
            "127.0.0.1:9001"
        );
        let both = parse(&["--listen", "127.0.0.1:7000", "--host", "0.0.0.0"]);
        assert_eq!(both.listen_addr().to_string(), "0.0.0.0:7000");
        let v6 = parse(&["--host", "::1", "--port", "0"]);
        assert_eq!(v6.listen_addr().to_string(), "[::1]:0");
        assert_eq!(parse(&["-c", "8192"]).ctx_size, Some(8192));
    }
}
