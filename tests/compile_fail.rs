//! The compile-fail suite: each file under `tests/compile-fail/` is one
//! mistake, with the rustc error it must produce (message and span) in the
//! `.stderr` beside it. Regenerate after an intended change with
//! `TRYBUILD=overwrite cargo test --test compile_fail` and review the diff.

#[test]
fn kernel_mistakes_are_rustc_errors_at_the_offending_token() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/compile-fail/*.rs");
}
