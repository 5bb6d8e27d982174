//! How many workers the pool runs and, when asked, which CPU each is
//! pinned to.
//!
//! The default thread count is the number of physical cores this process
//! may run on: hyper-threads share one core's vector units, and tile
//! programs are bound by them, so a second thread per core mostly adds
//! contention. `PHOBOS_THREADS` overrides it.
//!
//! Workers are not pinned unless `PHOBOS_PIN_THREADS=1`. The launching
//! thread works too and is the caller's, so it is never pinned; once the
//! OS put it on a pinned worker's CPU (after other threads of the process
//! ran, e.g. a copy between launches), the two shared that CPU while
//! another stood idle and nothing could move the worker: on 2 vCPUs,
//! rmsnorm 4096x4096 ran 7.4-9.0 ms pinned against 4.7-4.8 ms unpinned,
//! launches timed in turns with a copy (session 31). Back-to-back
//! launches, gemm and a model's decode measured the same either way.

use std::collections::BTreeSet;
use std::path::Path;

/// The environment variable that sets the thread count.
pub const THREADS_ENV: &str = "PHOBOS_THREADS";

/// A `PHOBOS_THREADS` value that is not a positive integer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("PHOBOS_THREADS={value:?} is not a thread count; expected a positive integer")]
pub struct BadThreadCount {
    pub value: String,
}

/// The environment variable that pins workers.
pub const PIN_ENV: &str = "PHOBOS_PIN_THREADS";

/// A `PHOBOS_PIN_THREADS` value that is neither `0` nor `1`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("PHOBOS_PIN_THREADS={value:?}: expected 1 (pin workers one per physical core) or 0")]
pub struct BadPinning {
    pub value: String,
}

/// Whether workers are pinned, from a `PHOBOS_PIN_THREADS` value (`None`
/// or blank: not pinned).
pub fn pinning_from(value: Option<&str>) -> Result<bool, BadPinning> {
    match value.map(str::trim) {
        None | Some("" | "0") => Ok(false),
        Some("1") => Ok(true),
        Some(text) => Err(BadPinning {
            value: text.to_string(),
        }),
    }
}

/// Threads from a `PHOBOS_THREADS` value (`None` or blank: `default`).
pub fn thread_count_from(value: Option<&str>, default: usize) -> Result<usize, BadThreadCount> {
    match value.map(str::trim) {
        None | Some("") => Ok(default.max(1)),
        Some(text) => match text.parse::<usize>() {
            Ok(count) if count > 0 => Ok(count),
            _ => Err(BadThreadCount {
                value: text.to_string(),
            }),
        },
    }
}

/// The CPUs this process may run on (`sched_getaffinity`); `None` when the
/// kernel does not say.
pub fn allowed_cpus() -> Option<Vec<usize>> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `set` is a plain bit set that sched_getaffinity fills; the
        // size passed is its own size.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return None;
            }
            let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
                .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
                .collect();
            (!cpus.is_empty()).then_some(cpus)
        }
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// `(package, core)` of a CPU from sysfs, when it says.
fn core_of(sys_cpu: &Path, cpu: usize) -> Option<(u64, u64)> {
    let topology = sys_cpu.join(format!("cpu{cpu}")).join("topology");
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(topology.join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some((read("physical_package_id")?, read("core_id")?))
}

/// The CPUs in pinning order: the first CPU of each physical core, then the
/// remaining hyper-threads. `None` without topology information.
pub fn cpus_by_core(sys_cpu: &Path, cpus: &[usize]) -> Option<(Vec<usize>, usize)> {
    let mut seen = BTreeSet::new();
    let (mut firsts, mut siblings) = (Vec::new(), Vec::new());
    for &cpu in cpus {
        if seen.insert(core_of(sys_cpu, cpu)?) {
            firsts.push(cpu);
        } else {
            siblings.push(cpu);
        }
    }
    let cores = firsts.len();
    firsts.extend(siblings);
    Some((firsts, cores))
}

/// The machine's view: CPUs in pinning order and the physical core count.
pub fn host_cpus() -> (Vec<usize>, usize) {
    let fallback = std::thread::available_parallelism().map_or(1, |n| n.get());
    let Some(cpus) = allowed_cpus() else {
        return (Vec::new(), fallback);
    };
    match cpus_by_core(Path::new("/sys/devices/system/cpu"), &cpus) {
        Some((ordered, cores)) if cores > 0 => (ordered, cores),
        _ => {
            let count = cpus.len();
            (cpus, count)
        }
    }
}

/// Pins the calling thread to `cpu`; best effort (a refusal is logged).
pub fn pin_current_thread(cpu: usize) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `set` is a zeroed bit set with one CPU added; the size is its own.
        let status = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set)
        };
        if status != 0 {
            tracing::debug!(
                cpu,
                "could not pin a pool worker (sched_setaffinity failed)"
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_count_parses_or_says_what_it_expected() {
        assert_eq!(thread_count_from(None, 6), Ok(6));
        assert_eq!(thread_count_from(Some(" "), 0), Ok(1));
        assert_eq!(thread_count_from(Some("3"), 6), Ok(3));
        let err = thread_count_from(Some("0"), 6).unwrap_err();
        assert!(err.to_string().contains("positive integer"), "{err}");
        assert!(thread_count_from(Some("two"), 6).is_err());
    }

    #[test]
    fn pinning_is_opt_in() {
        assert_eq!(pinning_from(None), Ok(false));
        assert_eq!(pinning_from(Some(" ")), Ok(false));
        assert_eq!(pinning_from(Some("0")), Ok(false));
        assert_eq!(pinning_from(Some(" 1 ")), Ok(true));
        let err = pinning_from(Some("yes")).unwrap_err();
        assert!(
            err.to_string().contains("PHOBOS_PIN_THREADS=\"yes\""),
            "{err}"
        );
    }

    #[test]
    fn one_cpu_per_core_first_then_hyperthreads() {
        let dir = tempfile::tempdir().unwrap();
        // cpu0/cpu2 share core 0, cpu1/cpu3 share core 1.
        for (cpu, core) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
            let topo = dir.path().join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&topo).unwrap();
            std::fs::write(topo.join("core_id"), format!("{core}\n")).unwrap();
            std::fs::write(topo.join("physical_package_id"), "0\n").unwrap();
        }
        let (order, cores) = cpus_by_core(dir.path(), &[0, 1, 2, 3]).unwrap();
        assert_eq!((order, cores), (vec![0, 1, 2, 3], 2));
        let (order, cores) = cpus_by_core(dir.path(), &[0, 2, 3]).unwrap();
        assert_eq!((order, cores), (vec![0, 3, 2], 2));
        assert!(cpus_by_core(dir.path(), &[7]).is_none());
    }

    #[test]
    fn this_machine_has_at_least_one_core() {
        let (_, cores) = host_cpus();
        assert!(cores >= 1);
    }
}
