//! Running pods where clusters already place work: a Slurm batch script
//! ([`slurm`]) and Kubernetes manifests ([`k8s`]), and the pod's rank
//! discovery from the variables those systems set.

pub mod k8s;
pub mod slurm;

use std::path::{Path, PathBuf};

/// Where a pod without `--id` looks for its index, in order.
pub const RANK_VARS: [&str; 2] = ["SLURM_PROCID", "JOB_COMPLETION_INDEX"];

#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    #[error(
        "no --id given and none of {RANK_VARS:?} is set (Slurm and Kubernetes indexed Jobs set them)"
    )]
    NoRank,
    #[error("{var}=`{value}` is not a pod index")]
    BadRank { var: &'static str, value: String },
    #[error("the job file {path}: {message}")]
    Job { path: PathBuf, message: String },
}

/// The pod index Slurm (`SLURM_PROCID`) or a Kubernetes indexed Job
/// (`JOB_COMPLETION_INDEX`) gives this process.
pub fn rank_from_env() -> Result<usize, PlacementError> {
    rank_from(|var| std::env::var(var).ok())
}

fn rank_from(get: impl Fn(&str) -> Option<String>) -> Result<usize, PlacementError> {
    for var in RANK_VARS {
        if let Some(value) = get(var) {
            return value
                .trim()
                .parse()
                .map_err(|_| PlacementError::BadRank { var, value });
        }
    }
    Err(PlacementError::NoRank)
}

/// The job file's absolute path (every node must see the same one).
fn absolute_job(job: &Path) -> Result<PathBuf, PlacementError> {
    job.canonicalize().map_err(|e| PlacementError::Job {
        path: job.to_path_buf(),
        message: e.to_string(),
    })
}

/// `text` as one single-quoted shell word.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_comes_from_slurm_then_kubernetes() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |var: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == var)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(rank_from(env(&[("SLURM_PROCID", "3")])).unwrap(), 3);
        assert_eq!(rank_from(env(&[("JOB_COMPLETION_INDEX", "5")])).unwrap(), 5);
        assert_eq!(
            rank_from(env(&[("SLURM_PROCID", "1"), ("JOB_COMPLETION_INDEX", "5")])).unwrap(),
            1
        );
        assert!(matches!(rank_from(env(&[])), Err(PlacementError::NoRank)));
        assert!(matches!(
            rank_from(env(&[("SLURM_PROCID", "x")])),
            Err(PlacementError::BadRank { .. })
        ));
    }

    #[test]
    fn shell_quoting_survives_quotes() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
