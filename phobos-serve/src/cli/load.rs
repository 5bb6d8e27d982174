//! Loading a model for the CLI: a progress bar on stderr while the weights
//! are paged in.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use phobos_models::engine::{LoadOptions, Model};

pub fn load_model(path: &Path, n_threads: Option<usize>) -> anyhow::Result<Arc<Model>> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("loading {msg} [{bar:30}] {bytes}/{total_bytes}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(path.display().to_string());
    let progress_bar = bar.clone();
    let options = LoadOptions {
        n_threads,
        prefault: true,
        progress: Some(Box::new(move |done, total| {
            progress_bar.set_length(total);
            progress_bar.set_position(done);
        })),
    };
    let model =
        Model::load(path, options).with_context(|| format!("loading model {}", path.display()));
    bar.finish_and_clear();
    model
}
