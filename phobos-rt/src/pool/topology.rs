//! How many workers the pool runs and which CPU each is pinned to.
//!
//! The default thread count is the number of physical cores this process
//! may run on: hyper-threads share one core's vector units, and tile
//! programs are bound by them, so a second thread per core mostly adds
//! contention. `PHOBOS_THREADS` overrides it.

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
