//! The `-v` texts under `testdata/` are what ptxas 12.9 (V12.9.86, from
//! `nvidia-cuda-nvcc-cu12`) printed for PTX from `phobos-compile --emit ptx`
//! of the example kernels: `ptxas -v -arch=<chip> FILE.ptx -o /dev/null`
//! (stderr). The spilling one was forced with `-maxrregcount=24`; the
//! rejected one is saxpy's PTX with `ld.param.b32` edited to `ld.param.q32`.

use super::*;

const SAXPY_SM_80: &str = include_str!("testdata/saxpy_sm_80.txt");
const GEMM_F32_SM_75: &str = include_str!("testdata/gemm_f32_sm_75.txt");
const GEMM_F16_SM_90: &str = include_str!("testdata/gemm_f16_sm_90.txt");
const SOFTMAX_SM_75: &str = include_str!("testdata/softmax_sm_75.txt");
const FLASH_SPILLING: &str = include_str!("testdata/flash_attn_f16_sm_80_maxrregcount_24.txt");
const REJECTED: &str = include_str!("testdata/rejected_sm_80.txt");

fn usage(
    registers: u32,
    stack_frame_bytes: u64,
    spill_store_bytes: u64,
    spill_load_bytes: u64,
    shared_bytes: u64,
) -> ResourceUsage {
    ResourceUsage {
        registers,
        spill_store_bytes,
        spill_load_bytes,
        stack_frame_bytes,
        shared_bytes,
    }
}

#[test]
fn parses_real_ptxas_output() {
    let cases = [
        (SAXPY_SM_80, "saxpy", usage(12, 0, 0, 0, 0)),
        (GEMM_F32_SM_75, "gemm_f32", usage(64, 512, 0, 0, 32768)),
        (GEMM_F16_SM_90, "gemm_f16", usage(32, 64, 0, 0, 8192)),
        (SOFTMAX_SM_75, "softmax", usage(64, 128, 0, 0, 32864)),
        (
            FLASH_SPILLING,
            "flash_attn_f16",
            usage(24, 56, 64, 64, 8896),
        ),
    ];
    for (text, entry, expected) in cases {
        assert_eq!(parse_verbose(text, entry), Some(expected), "{entry}");
    }
    assert_eq!(
        parse_verbose(FLASH_SPILLING, "flash_attn_f16").map(|u| u.spill_bytes()),
        Some(128)
    );
}

#[test]
fn another_entry_or_a_rejection_parses_to_nothing() {
    assert_eq!(parse_verbose(SAXPY_SM_80, "gemm_f32"), None);
    assert_eq!(parse_verbose(SAXPY_SM_80, "sax"), None);
    assert_eq!(parse_verbose(REJECTED, "saxpy"), None);
    assert_eq!(parse_verbose("", "saxpy"), None);
    // A section cut after the function properties has no register count.
    let cut = &GEMM_F32_SM_75[..GEMM_F32_SM_75.find("ptxas info    : Used").unwrap()];
    assert_eq!(parse_verbose(cut, "gemm_f32"), None);
}

#[test]
fn reads_only_the_named_entry_of_a_module_with_two() {
    let two = format!(
        "{}{}",
        GEMM_F32_SM_75,
        SAXPY_SM_80.replace("ptxas info    : 0 bytes gmem\n", "")
    );
    assert_eq!(parse_verbose(&two, "saxpy").unwrap().registers, 12);
    assert_eq!(parse_verbose(&two, "gemm_f32").unwrap().registers, 64);
}

/// Reference: place a CTA's warps one at a time on the scheduler with the
/// most free registers, each warp taking its registers rounded up to the
/// allocation unit; the CTA fits when every warp finds room.
fn fits_by_placing_warps(registers: u32, threads: u32) -> bool {
    let per_warp = (registers * 32).div_ceil(256) * 256;
    let mut free = [65536 / 4; 4];
    for _ in 0..threads.div_ceil(32) {
        let roomiest = free.iter_mut().max().unwrap();
        if *roomiest < per_warp {
            return false;
        }
        *roomiest -= per_warp;
    }
    true
}

#[test]
fn register_file_rule_matches_placing_warps_one_by_one() {
    for registers in 1..=255 {
        for threads in (1..=1024).step_by(31) {
            let fits = register_file_overflow(registers, threads).is_none();
            assert_eq!(
                fits,
                fits_by_placing_warps(registers, threads),
                "{registers} registers x {threads} threads"
            );
        }
    }
}

#[test]
fn register_file_edges() {
    let fits = |registers, threads| register_file_overflow(registers, threads).is_none();
    assert!(fits(64, 1024));
    // 65 registers round up to 72 per thread for the warp.
    assert!(!fits(65, 1024));
    assert!(fits(255, 256));
    assert!(!fits(255, 288));
    // 80 x 800 = 64000 < 65536, yet 25 warps of 2560 do not fit 4 x 16384.
    assert!(!fits(80, 800));
    assert_eq!(warps_that_fit(80), 24);
    let reason = register_file_overflow(80, 800).unwrap();
    assert!(reason.contains("80 registers per thread"), "{reason}");
    assert!(reason.contains("2560 registers"), "{reason}");
    assert!(reason.contains("holds 24 warps"), "{reason}");
    assert!(reason.contains("800 threads are 25 warps"), "{reason}");
}

/// With a real ptxas (`PHOBOS_PTXAS`, PATH, or the PyPI package): the
/// measured usage matches what the captured text says, and a rejection
/// carries ptxas's own message. Without one it skips with a note, unless
/// `PHOBOS_REQUIRE_PTXAS=1`.
#[test]
fn measures_with_a_real_ptxas_when_there_is_one() {
    let Some(ptxas) = Ptxas::detect().unwrap() else {
        assert!(!required(), "{MISSING_BUT_REQUIRED}");
        eprintln!("note: no ptxas; measuring skipped");
        return;
    };
    assert!(!ptxas.version.is_empty());
    let ptx = ".version 7.0\n.target sm_80\n.address_size 64\n\n\
.visible .entry tiny(.param .u64 tiny_param_0)\n{\n\t.reg .b64 %rd<2>;\n\t.reg .b32 %r<2>;\n\
\tld.param.u64 %rd1, [tiny_param_0];\n\tcvta.to.global.u64 %rd1, %rd1;\n\
\tmov.u32 %r1, 7;\n\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n";
    let measured = ptxas.measure(ptx, "sm_80", "tiny").unwrap();
    assert!(
        measured.registers > 0 && measured.registers < 16,
        "{measured:?}"
    );
    assert_eq!(measured.spill_bytes(), 0);
    let broken = ptx.replace("st.global.u32", "st.global.q32");
    match ptxas.measure(&broken, "sm_80", "tiny") {
        Err(PtxasError::Rejected { chip, message }) => {
            assert_eq!(chip, "sm_80");
            assert!(message.contains("q32"), "{message}");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
}
