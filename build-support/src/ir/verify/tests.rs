//! Verifier rejection tests: each breaks one invariant of a good kernel.

use super::*;
use crate::ir::parse::parse_module;

const GOOD: &str = "kernel k {
  param X: tensor<f32>[N]
  param Y: tensor<f32>[N] written
  param a: f32
  tune T autotune [16, 32]
  grid [cdiv(dim(N), tune(T)):i32]
  body {
    let %base: i32 = mul(program_id(0:i32):i32, tune(T)):i32
    var %acc: f32[T] = broadcast(0.0:f32):f32[T]
    for %i: i32 in range(0:i32, 4:i32, 1:i32) {
      %acc = add(%acc, mul(param(a), load(X[span(%base, T)]):f32[T]):f32[T]):f32[T]
    }
    store Y[span(%base, T)] = %acc
  }
}
";

/// Verifies `GOOD` with `from` replaced by `to`; returns the error.
fn broken(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "`{from}` not in the base kernel");
    let m = parse_module(&GOOD.replacen(from, to, 1)).unwrap();
    match verify(&m) {
        Ok(()) => panic!("verifier accepted `{to}`"),
        Err(e) => e.message,
    }
}

#[test]
fn the_base_kernel_verifies() {
    verify(&parse_module(GOOD).unwrap()).unwrap();
}

#[test]
fn operand_dtypes_must_match() {
    let e = broken("mul(param(a), load", "mul(0:i32, load");
    assert!(e.contains("operands differ"), "{e}");
}

#[test]
fn assignments_need_a_var() {
    let e = broken("var %acc", "let %acc");
    assert!(e.contains("immutable"), "{e}");
}

#[test]
fn stores_need_written_tensors() {
    let e = broken("[N] written", "[N]");
    assert!(e.contains("not marked written"), "{e}");
    let e = broken("param X: tensor<f32>[N]", "param X: tensor<f32>[N] written");
    assert!(e.contains("never stored"), "{e}");
}

#[test]
fn store_values_have_the_slice_shape() {
    let e = broken(
        "store Y[span(%base, T)] = %acc",
        "store Y[span(%base, 16)] = %acc",
    );
    assert!(e.contains("store of f32[T]"), "{e}");
}

#[test]
fn shapes_use_tune_parameters_only() {
    let e = broken("broadcast(0.0:f32):f32[T]", "broadcast(0.0:f32):f32[M]");
    assert!(e.contains("not a tune parameter"), "{e}");
    let e = broken(
        "broadcast(0.0:f32):f32[T]",
        "broadcast(0.0:f32):f32[T - 16]",
    );
    assert!(e.contains("is 0 for config"), "{e}");
}

#[test]
fn locals_are_scoped() {
    let e = broken(
        "store Y[span(%base, T)] = %acc",
        "store Y[span(%i, T)] = %acc",
    );
    assert!(e.contains("outside its scope"), "{e}");
}

#[test]
fn binary_result_is_the_broadcast() {
    let e = broken(
        "%acc = add(%acc, mul(param(a), load(X[span(%base, T)]):f32[T]):f32[T]):f32[T]",
        "%acc = add(%acc, mul(param(a), load(X[span(%base, T)]):f32[T]):f32[T]):f32[T, T]",
    );
    assert!(e.contains("Add of shapes"), "{e}");
}

#[test]
fn program_id_takes_a_literal_axis() {
    let e = broken("program_id(0:i32)", "program_id(3:i32)");
    assert!(e.contains("program_id"), "{e}");
}

#[test]
fn grid_entries_are_restricted() {
    let e = broken("grid [cdiv(dim(N), tune(T)):i32]", "grid [param(a)]");
    assert!(e.contains("grid entries"), "{e}");
}

#[test]
fn loop_bounds_share_an_integer_dtype() {
    let e = broken("range(0:i32, 4:i32, 1:i32)", "range(0:i32, 4:i64, 1:i32)");
    assert!(e.contains("`for` bounds"), "{e}");
}
