//! SPEC.md §10's edge cases on the PTX back end: the kernels of
//! `examples/kernels/edge/edge_cases.ph` (every integer type with `/ % << >>`
//! and `cdiv`, every float type with `%`, `min`, `max` and the casts to
//! every integer type, loops with a runtime step) emit guarded MLIR (the
//! snapshots show the guards), lower to PTX with no libdevice call, and
//! assemble with ptxas for every chip. The host runs the same kernels
//! against Rust's own semantics in `examples/tests/edge_cases.rs`, and the
//! device check runs them on a GPU against the host.

use phobos_build::{Source, back::mlir, check_source, ir};

const EDGE_FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../examples/kernels/edge/edge_cases.ph"
);

fn edge_kernels() -> Vec<ir::Kernel> {
    let text = std::fs::read_to_string(EDGE_FILE).unwrap();
    check_source(&Source::file(EDGE_FILE.to_string(), text))
        .unwrap_or_else(|e| panic!("{EDGE_FILE}: {e:?}"))
        .kernels
}

fn emit(name: &str) -> String {
    let kernel = edge_kernels()
        .into_iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("no kernel {name} in {EDGE_FILE}"));
    mlir::emit_mlir(&kernel, &kernel.default_config(), "sm_80", 32)
        .unwrap()
        .mlir
}

#[test]
fn the_table_covers_every_integer_and_float_type() {
    let names: Vec<String> = edge_kernels().into_iter().map(|k| k.name).collect();
    for t in ["i8", "u8", "i16", "u16", "i32", "u32", "i64"] {
        assert!(names.contains(&format!("edge_int_{t}")), "{names:?}");
    }
    for t in ["f16", "bf16", "f32", "f64"] {
        assert!(names.contains(&format!("edge_float_{t}")), "{names:?}");
    }
}

/// Signed division replaces a zero divisor, and -1 under MIN, by 1 before
/// `arith.divsi`, then selects 0 for a zero divisor; shifts clamp the
/// amount (signed `>>` to bits - 1, the sign fill).
#[test]
fn signed_integer_guards() {
    insta::assert_snapshot!(emit("edge_int_i32"));
}

#[test]
fn unsigned_integer_guards() {
    insta::assert_snapshot!(emit("edge_int_u8"));
}

/// fmod as two `scf.while` loops (scale up, walk down) with the special
/// cases selected after; min/max as compare + select; casts through the
/// saturating intrinsics.
#[test]
fn float_fmod_min_max_and_casts() {
    insta::assert_snapshot!(emit("edge_float_f32"));
}

/// A runtime step of 0 traps; a counter that would wrap ends the loop.
#[test]
fn runtime_loop_step_traps_on_zero_and_stops_on_wrap() {
    insta::assert_snapshot!(emit("edge_loop_i32"));
}

#[test]
fn no_plain_division_or_shift_takes_an_unguarded_operand() {
    for kernel in edge_kernels() {
        let text = mlir::emit_mlir(&kernel, &kernel.default_config(), "sm_80", 32)
            .unwrap()
            .mlir;
        // The operand of every division/shift is defined by a select.
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for line in &lines {
            let Some(op) = ["divsi", "divui", "remsi", "remui", "shli", "shrsi", "shrui"]
                .into_iter()
                .find(|op| line.contains(&format!("arith.{op} ")))
            else {
                continue;
            };
            // `%r = arith.OP %a, %b : ty`: the divisor or shift amount `%b`.
            let operand = line
                .split_once(", ")
                .and_then(|(_, rest)| rest.split(' ').next())
                .unwrap_or_else(|| panic!("{}: cannot read `{line}`", kernel.name));
            let def = lines
                .iter()
                .find(|l| l.starts_with(&format!("{operand} = ")))
                .unwrap_or_else(|| panic!("{}: no definition of {operand}", kernel.name));
            assert!(
                def.contains("arith.select") || def.contains("arith.constant"),
                "{}: {op} takes {operand}, defined by `{def}` (not a guard)",
                kernel.name
            );
        }
    }
}

#[cfg(feature = "ptx")]
mod ptx {
    use super::*;
    use phobos_build::back::mlir::ptxas::{self, Ptxas};

    /// The ptxas to assemble with, or `None` when it may be skipped.
    fn ptxas() -> Option<Ptxas> {
        let found = Ptxas::detect().unwrap();
        if found.is_none() {
            assert!(!ptxas::required(), "{}", ptxas::MISSING_BUT_REQUIRED);
            eprintln!("note: ptxas not found; PTX is produced but not assembled");
        }
        found
    }

    #[test]
    fn every_edge_kernel_assembles_for_every_chip_without_libdevice() {
        let ptxas = ptxas();
        let mut compiled = 0;
        for kernel in edge_kernels() {
            let config = kernel.default_config();
            for chip in &mlir::chips_from_env() {
                for index_bits in [32, 64] {
                    let variant = mlir::compile_ptx(&kernel, &config, chip, index_bits)
                        .unwrap_or_else(|e| panic!("{} {chip}: {e}", kernel.name));
                    let ptx = &variant.ptx;
                    assert!(!ptx.contains("__nv_"), "libdevice call in {}", kernel.name);
                    if kernel.name.starts_with("edge_loop") {
                        assert!(ptx.contains("trap;"), "{}: no trap\n{ptx}", kernel.name);
                    }
                    // Subnormals must survive: fmod's steps and min/max
                    // are exact only without flush-to-zero.
                    assert!(
                        !ptx.contains(".ftz"),
                        "{}: flush-to-zero\n{ptx}",
                        kernel.name
                    );
                    if kernel.name.starts_with("edge_float") {
                        // fmod's two loops, with no call out.
                        assert!(!ptx.contains("call"), "{}: a call\n{ptx}", kernel.name);
                    }
                    if let Some(p) = &ptxas {
                        p.measure(ptx, chip, &kernel.name).unwrap_or_else(|e| {
                            panic!("{} {chip} index {index_bits}: {e}", kernel.name)
                        });
                    }
                    compiled += 1;
                }
            }
        }
        assert!(compiled >= 13 * 2, "only {compiled} variants compiled");
    }
}
