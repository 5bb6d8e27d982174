//! What every handler shares.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::backend::ModelInfo;
use super::error::ApiError;
use super::metrics::Metrics;
use super::params::SamplingDefaults;
use super::scheduler::Scheduler;

pub struct Loaded {
    pub model: Arc<dyn ModelInfo>,
    pub scheduler: Scheduler,
}

pub struct AppState {
    /// Set once the model is loaded; until then /health and every model
    /// route answer 503.
    pub loaded: OnceLock<Loaded>,
    pub metrics: Arc<Metrics>,
    pub api_key: Option<String>,
    pub defaults: SamplingDefaults,
    pub max_body_bytes: usize,
    /// How long a client may take to send its request body.
    pub read_timeout: Duration,
}

impl AppState {
    pub fn loaded(&self) -> Result<&Loaded, ApiError> {
        self.loaded.get().ok_or_else(ApiError::loading)
    }
}
