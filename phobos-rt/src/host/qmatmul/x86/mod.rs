//! AVX2 micro-kernels, bit-exact with `portable.rs`: one weight row times
//! up to four activation rows, so each weight block is unpacked once per
//! four rows of a prompt batch. Integer sums are exact, so only the lane
//! grouping and the FMA order (the same as the portable path's) matter.

mod amx;
mod floats;
mod k_512;
mod k_512_tile;
mod k_batch_512;
mod k_decode_512;
mod kquants;
mod legacy;
mod q32_512;
mod q32_avx2;
mod quantize;

pub(super) use amx::{has_amx, has_q32_amx, q32_tile_amx};
pub(super) use floats::row_dot_float_avx2;
pub(super) use k_512::{has_k_512, k_rows_512};
pub(super) use k_512_tile::{K_TILE_ROWS, KPackedActs, k_tile_512};
pub(super) use k_batch_512::{has_k_batch_512, k_batch_512};
pub(super) use k_decode_512::{DECODE_ROWS_PER_PASS, k_min_decode_512, q6k_decode_512};
pub(super) use kquants::{has_k_avx2, k_rows_avx2};
pub(super) use legacy::iq4nl_single_avx2;
pub(super) use legacy::{q32_rows_avx2, q32_rows_vnni};
pub(super) use q32_512::{
    ActRow, has_q32_512, iq4nl_single_512, pack_prompt_group, q32_rows_512, q32_rows_512_packed,
};
pub(super) use q32_avx2::{
    PackedActs, UnpackedWeights, q32_decode_avx2, q32_tile_avx2, q32_tile_unpacked_avx2,
};
pub(super) use quantize::{levels_q8_avx2, levels_q8_sums_avx2, quantize_q8_k_avx2};

use std::arch::x86_64::*;

/// Whether this CPU runs the AVX2 kernels.
pub(super) fn has_avx2() -> bool {
    is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

/// Whether decode runs a matrix larger than the caches one weight row per
/// pass with no software prefetch, one sequential stream left to the
/// hardware prefetcher, instead of the prefetched kernels smaller matrices
/// run (the AVX-512 row pairs where the CPU has them, else four AVX2 rows).
/// Measured at 262144x640 Q8_0, M = 1, against ggml in the same run:
/// - AMD Zen 2 and Zen 4 (family 17h models 30h and up, 19h and later):
///   one stream (sessions 9 and 22; Zen 4, two threads: 7.4 ms against
///   11.9 for the AVX-512 row pairs).
/// - AMD Zen 1 and Zen+ (17h models 00h-2Fh; Hygon's Zen-derived 18h):
///   four prefetched rows, 22.7 against 25.2 ms on one thread, 14.5
///   against 17.0 on two (session 25; ggml 26.0 and 15.0-17.6).
/// - Intel (an Emerald Rapids VM, session 30, weights rotated through
///   640 MiB on both sides): the AVX-512 row pairs 14.2 ms on one thread
///   and 7.3-7.5 on two, against 25.1-31.9 and 13.8-14.3 for one stream
///   (ggml 24.0-31.2 and 13.4-14.3). So Intel, and any vendor not
///   measured, prefetches.
pub(super) fn single_stream_decode() -> bool {
    static SINGLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SINGLE.get_or_init(|| {
        // SAFETY: CPUID leaves 0 and 1 exist on every x86-64 CPU and only read.
        #[allow(unused_unsafe)]
        let (vendor, signature) = unsafe { (__cpuid(0), __cpuid(1).eax) };
        let vendor: Vec<u8> = [vendor.ebx, vendor.edx, vendor.ecx]
            .iter()
            .flat_map(|word| word.to_le_bytes())
            .collect();
        let base_family = (signature >> 8) & 0xF;
        let family = if base_family == 0xF {
            base_family + ((signature >> 20) & 0xFF)
        } else {
            base_family
        };
        let model = ((signature >> 4) & 0xF) | (((signature >> 16) & 0xF) << 4);
        single_stream_cpu(&vendor, family, model)
    })
}

/// [`single_stream_decode`]'s rule for a CPUID vendor string, family and
/// model (as Linux prints them in `/proc/cpuinfo`).
fn single_stream_cpu(vendor: &[u8], family: u32, model: u32) -> bool {
    vendor == b"AuthenticAMD" && (family > 0x17 || (family == 0x17 && model >= 0x30))
}

/// Whether this CPU runs the AVX-512 VNNI kernels.
pub(super) fn has_vnni() -> bool {
    has_avx2()
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vnni")
}

/// Decode's software prefetch: a pass's weights `ahead_bytes` past the
/// block in use, never past the end of the matrix they belong to. Past the
/// end lies memory the matrix does not own, often unmapped: on the Zen 1
/// VM of session 25 prefetching there cost as much as the whole tail of
/// the pass (1024x640 Q5_0 at M = 1 on the heap, one thread: 148-150 us
/// prefetching up to 16 KiB past the end, 117-119 us stopping at it;
/// BENCHMARKS.md). In a memory-mapped model the bytes after a matrix are
/// often the next tensor, which the stop no longer warms: `phobos bench`
/// tg128 with and without it stayed within that VM's noise.
#[derive(Debug, Clone, Copy)]
pub(in crate::host::qmatmul) struct PrefetchAhead {
    ahead_bytes: usize,
    end_address: usize,
}

impl PrefetchAhead {
    /// Prefetches `ahead_bytes` ahead within `matrix` (the whole weight
    /// matrix, not one tile's rows: a tile's successor is the next tile's).
    pub(in crate::host::qmatmul) fn within(matrix: &[u8], ahead_bytes: usize) -> Self {
        Self {
            ahead_bytes,
            end_address: matrix.as_ptr_range().end as usize,
        }
    }

    /// Prefetches `len_bytes` bytes from `ahead_bytes` past `from`, one
    /// address per 64-byte step; an address past the matrix's end is
    /// clamped to its last byte rather than skipped, so the number of
    /// prefetches follows from `len_bytes` alone (a constant in every
    /// kernel) and the step needs no compare-and-branch per line.
    #[inline(always)]
    pub(in crate::host::qmatmul) fn lines(self, from: *const u8, len_bytes: usize) {
        let front = (from as usize).wrapping_add(self.ahead_bytes);
        let last = self.end_address.saturating_sub(1);
        for step in 0..len_bytes.div_ceil(64) {
            // Wrapping, not saturating: an address that wrapped (none does
            // in practice) costs a useless prefetch, and the check would
            // cost two instructions per line.
            let line = front.wrapping_add(64 * step).min(last);
            // SAFETY: a prefetch never faults, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line as *const i8) };
        }
    }
}

/// `value` through a register the optimizer cannot see through: loads
/// through the result stay where they are written (memory operands)
/// instead of being hoisted into registers for a whole loop, which on
/// AVX2's sixteen registers pushes accumulators to the stack. The same as
/// `std::hint::black_box(value)` at no cost: black_box passes the
/// reference through a stack slot (a store and a reload per use), this
/// through an empty `asm!` block that may change the register.
#[inline(always)]
fn opaque<T>(value: &T) -> &T {
    let mut address: *const T = value;
    // SAFETY: the block is empty, so `address` comes back unchanged and
    // still points at `value`, borrowed for the returned lifetime; it
    // writes no memory and no flags. `readonly`, not `nomem`: the compiler
    // must then finish stores to what it may read (the per-block scale
    // products are stored right before), and reloads nothing after it.
    unsafe {
        std::arch::asm!("/* {0} */", inout(reg) address, options(readonly, nostack, preserves_flags));
        &*address
    }
}

/// 32 bytes from the front of `bytes` (bounds-checked by the slice).
#[inline(always)]
fn load32(bytes: &[u8]) -> __m256i {
    let bytes = &bytes[..32];
    // SAFETY: `bytes` holds 32 readable bytes; the load is unaligned.
    unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
}

/// 64 bytes from the front of `bytes` (bounds-checked by the slice); for
/// the AVX-512 kernels, which enable AVX-512 F wherever this inlines.
#[inline(always)]
fn load64(bytes: &[u8]) -> __m512i {
    let bytes = &bytes[..64];
    // SAFETY: `bytes` holds 64 readable bytes; the load is unaligned.
    unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
}

#[inline(always)]
fn load16(bytes: &[u8]) -> __m128i {
    let bytes = &bytes[..16];
    // SAFETY: `bytes` holds 16 readable bytes; the load is unaligned.
    unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
}

/// The f16 at `offset` as f32 (F16C, inlined into the kernels).
///
/// Written in assembly because the intrinsic form compiles to `vpinsrw`
/// into whatever register the allocator picks as the "don't care" upper
/// lanes, often a live accumulator: each block's scale then waits for the
/// previous block's FMA, a loop-carried chain of ~20 cycles that made the
/// AVX2 kernels 1.5-3x slower on Zen 2. `vmovd` from a general register
/// writes the whole vector, so no such chain.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn f16_at(bytes: &[u8], offset: usize) -> f32 {
    let bits = u32::from(u16::from_le_bytes([bytes[offset], bytes[offset + 1]]));
    let wide: __m128;
    // SAFETY: F16C is enabled on this function; the asm reads only its
    // register operands and touches no memory or stack.
    unsafe {
        std::arch::asm!(
            "vmovd {v}, {b:e}",
            "vcvtph2ps {v}, {v}",
            b = in(reg) bits,
            v = out(xmm_reg) wide,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    _mm_cvtss_f32(wide)
}

/// The AVX horizontal sum (see `portable::hsum8`).
#[inline]
#[target_feature(enable = "avx2")]
fn hsum8(x: __m256) -> f32 {
    let sum4 = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    let sum2 = _mm_add_ps(sum4, _mm_movehl_ps(sum4, sum4));
    _mm_cvtss_f32(_mm_add_ss(sum2, _mm_movehdup_ps(sum2)))
}

#[inline]
#[target_feature(enable = "avx2")]
fn hsum4(x: __m128) -> f32 {
    let sum2 = _mm_add_ps(x, _mm_movehl_ps(x, x));
    _mm_cvtss_f32(_mm_add_ss(sum2, _mm_movehdup_ps(sum2)))
}

/// A K-quant (weight row, activation row) result from its per-lane sums,
/// in `portable::row_dot`'s order: the main lanes' sum, plus Q4_K's four
/// min lanes or Q5_K's scalar min term (other formats have neither).
#[inline]
#[target_feature(enable = "avx2")]
fn k_row_total<const F: u32>(acc: __m256, acc_mins: __m128, summs: f32) -> f32 {
    const Q4_K: u32 = phobos_quant::GgmlType::Q4_K as u32;
    const Q5_K: u32 = phobos_quant::GgmlType::Q5_K as u32;
    match F {
        Q4_K => hsum8(acc) + hsum4(acc_mins),
        Q5_K => hsum8(acc) + summs,
        _ => hsum8(acc),
    }
}

/// 16 packed bytes to 32 nibbles: low nibbles first, then high ones.
#[inline]
#[target_feature(enable = "avx2")]
fn nibbles(qs: &[u8]) -> __m256i {
    let packed = load16(qs);
    let both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    _mm256_and_si256(both, _mm256_set1_epi8(0x0F))
}

/// Byte `i` is 0xFF where bit `i` of `bits` is set.
#[inline]
#[target_feature(enable = "avx2")]
fn bits_to_bytes(bits: u32) -> __m256i {
    let spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(bits as i32),
        _mm256_set_epi64x(
            0x0303_0303_0303_0303,
            0x0202_0202_0202_0202,
            0x0101_0101_0101_0101,
            0,
        ),
    );
    let select = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
    _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select)
}

/// IQ4_NL's table lookup on 32 nibbles.
#[inline]
#[target_feature(enable = "avx2")]
fn iq4_lookup(nibbles: __m256i) -> __m256i {
    let table = load16(&super::portable::KVALUES_IQ4NL.map(|v| v as u8));
    _mm256_shuffle_epi8(_mm256_set_m128i(table, table), nibbles)
}

#[cfg(test)]
mod tests {
    /// `single_stream_decode` reads CPUID as Linux does: the same vendor,
    /// family and model as `/proc/cpuinfo`.
    #[test]
    fn cpuid_agrees_with_proc_cpuinfo() {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            return;
        };
        let field = |name: &str| {
            info.lines()
                .find(|line| line.split(':').next().map(str::trim) == Some(name))
                .and_then(|line| line.split_once(':'))
                .map(|(_, value)| value.trim().to_string())
        };
        let (Some(vendor), Some(family), Some(model)) =
            (field("vendor_id"), field("cpu family"), field("model"))
        else {
            return;
        };
        let (Ok(family), Ok(model)) = (family.parse::<u32>(), model.parse::<u32>()) else {
            return;
        };
        assert_eq!(
            super::single_stream_decode(),
            super::single_stream_cpu(vendor.as_bytes(), family, model),
            "{vendor} family {family} model {model}"
        );
    }

    /// The CPUs the rule was measured on, and Zen 1's derivative.
    #[test]
    fn single_stream_on_zen2_and_later_only() {
        let cases: [(&[u8], u32, u32, bool); 6] = [
            (b"AuthenticAMD", 0x17, 0x01, false), // Zen 1 (EPYC 7001)
            (b"AuthenticAMD", 0x17, 0x08, false), // Zen+
            (b"AuthenticAMD", 0x17, 0x31, true),  // Zen 2 (EPYC 7002)
            (b"AuthenticAMD", 0x19, 0x11, true),  // Zen 4 (EPYC 9004)
            (b"HygonGenuine", 0x18, 0x00, false), // Dhyana, Zen 1 derived
            (b"GenuineIntel", 6, 0xCF, false),    // Emerald Rapids
        ];
        for (vendor, family, model, expected) in cases {
            assert_eq!(
                super::single_stream_cpu(vendor, family, model),
                expected,
                "{} family {family:#x} model {model:#x}",
                String::from_utf8_lossy(vendor)
            );
        }
    }
}
