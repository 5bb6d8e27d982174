//! The device part of a tune key. A winner is only reused on the device it
//! was measured on: for the host, the CPU model, the SIMD features the
//! generated code can use and the pool's thread count; for CUDA (with the
//! CUDA runtime), the GPU's name and chip.

use crate::{Backend, Device};

/// How `device` is named in tune keys.
pub fn device_id(device: &Device) -> String {
    match device.backend() {
        Backend::Host(host) => host_id(host.threads()),
        Backend::Cuda(cuda) => {
            let info = cuda.info();
            format!("{}|{}|driver={}", info.name, info.chip, info.driver_version)
        }
    }
}

/// `"<CPU model>|<features>|threads=<n>"`.
pub fn host_id(threads: usize) -> String {
    format!(
        "{}|{}|threads={threads}",
        cpu_model(),
        cpu_features().join(",")
    )
}

/// The CPU's model name (`/proc/cpuinfo`), or the architecture when unknown.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// The SIMD features that change which code is fastest, in a fixed order.
pub fn cpu_features() -> Vec<&'static str> {
    let mut features = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! probe {
            ($($name:tt),*) => {
                $(if std::arch::is_x86_feature_detected!($name) {
                    features.push($name);
                })*
            };
        }
        probe!(
            "avx2",
            "fma",
            "f16c",
            "avx512f",
            "avx512bw",
            "avx512vl",
            "avx512vnni",
            "avx512bf16",
            "avx512fp16"
        );
        // AMX detection is unstable in `is_x86_feature_detected!`: CPUID
        // leaf 7 says what the CPU has (whether the OS grants the tile state
        // is asked before use, not here).
        // SAFETY: CPUID leaf 7 exists on every x86-64 CPU that reports AVX2,
        // and only reads; without it the bits read as zero.
        #[allow(unused_unsafe)]
        let leaf7 = unsafe { std::arch::x86_64::__cpuid_count(7, 0) };
        for (bit, name) in [(24, "amx-tile"), (22, "amx-bf16"), (25, "amx-int8")] {
            if leaf7.edx & (1 << bit) != 0 {
                features.push(name);
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            features.push("neon");
        }
        if std::arch::is_aarch64_feature_detected!("sve") {
            features.push("sve");
        }
    }
    features
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_ids_name_model_features_and_threads() {
        let id = host_id(3);
        assert!(id.ends_with("|threads=3"), "{id}");
        assert_eq!(id.matches('|').count(), 2, "{id}");
        assert_ne!(host_id(3), host_id(4));
        assert!(!cpu_model().is_empty());
    }
}
