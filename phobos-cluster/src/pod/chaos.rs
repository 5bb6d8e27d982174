//! Fault injection for the chaos tests: `PHOBOS_CLUSTER_CHAOS` is
//! `NODE:WHEN[;NODE:WHEN...]`; pod NODE kills itself with SIGKILL when
//! WHEN comes: `K` (a number) after storing K supertiles (0: before its
//! first compute), `fetch` while streaming its first tile to a peer; or,
//! with WHEN `stop`, stops itself with SIGSTOP before its first compute
//! (alive but silent: only missed heartbeats tell).

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

pub const CHAOS_ENV: &str = "PHOBOS_CLUSTER_CHAOS";

#[derive(Clone, Debug, Default)]
pub struct Chaos {
    after_stores: Option<usize>,
    mid_fetch: bool,
    stop_before_compute: bool,
    stored: Arc<AtomicUsize>,
}

impl Chaos {
    /// The plan for pod `node` from `spec` (the env var's value).
    pub fn parse(spec: &str, node: usize) -> Chaos {
        let mut chaos = Chaos::default();
        for part in spec.split(';') {
            let Some((n, when)) = part.split_once(':') else {
                continue;
            };
            if n.trim().parse::<usize>().ok() != Some(node) {
                continue;
            }
            match when.trim() {
                "fetch" => chaos.mid_fetch = true,
                "stop" => chaos.stop_before_compute = true,
                k => chaos.after_stores = k.parse().ok(),
            }
        }
        chaos
    }

    pub fn from_env(node: usize) -> Chaos {
        std::env::var(CHAOS_ENV)
            .map(|spec| Chaos::parse(&spec, node))
            .unwrap_or_default()
    }

    /// Called before each compute.
    pub fn before_compute(&self) {
        if self.after_stores == Some(0) {
            die("before its first compute");
        }
        if self.stop_before_compute {
            signal_self("STOP", "before its first compute");
        }
    }

    /// Called after each stored supertile.
    pub fn after_store(&self) {
        let stored = self.stored.fetch_add(1, Ordering::SeqCst) + 1;
        if self.after_stores == Some(stored) {
            die(&format!("after storing {stored} supertile(s)"));
        }
    }

    pub fn dies_mid_fetch(&self) -> bool {
        self.mid_fetch
    }
}

/// SIGKILLs this process (no destructors, no goodbye: a real crash).
pub fn die(when: &str) {
    signal_self("KILL", when);
}

/// Sends `signal` to this process; KILL and STOP cannot be caught, so
/// this thread never gets past the sleep.
fn signal_self(signal: &str, when: &str) {
    tracing::warn!("chaos: SIG{signal} {when}");
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &std::process::id().to_string()])
        .stderr(Stdio::null())
        .status();
    std::thread::sleep(std::time::Duration::from_secs(60));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_pick_this_nodes_points() {
        let c = Chaos::parse("0:1;3:fetch;2:0", 3);
        assert!(c.dies_mid_fetch());
        assert_eq!(c.after_stores, None);
        let c = Chaos::parse("0:1;3:fetch;2:0", 0);
        assert_eq!(c.after_stores, Some(1));
        assert!(!c.dies_mid_fetch());
        let c = Chaos::parse("1:stop", 1);
        assert!(c.stop_before_compute && c.after_stores.is_none());
        let c = Chaos::parse("garbage;1", 1);
        assert_eq!(c.after_stores, None);
        assert!(!c.dies_mid_fetch());
    }
}
