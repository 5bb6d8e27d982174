//! The compile-fail suite: each file under `tests/compile-fail/` is one
//! mistake, with the rustc error it must produce (message and span) in the
//! `.stderr` beside it. Regenerate after an intended change with
//! `TRYBUILD=overwrite cargo test --no-default-features --test compile_fail`
//! and review the diff.
//!
//! Host-only (`make test` runs this suite with `--no-default-features`):
//! every case is a front-end error, reported before any PTX is compiled, so
//! the `ptx` feature changes no message; without it trybuild's separate
//! build of the crate under test (`target/tests/trybuild`) skips LLVM (a
//! second MLIR binding, TableGen and an LLVM-linked macro library, over a
//! gigabyte).
#![cfg(not(feature = "ptx"))]

#[test]
fn kernel_mistakes_are_rustc_errors_at_the_offending_token() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/compile-fail/*.rs");
}
