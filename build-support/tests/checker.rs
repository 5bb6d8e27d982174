//! Typing rules of SPEC.md §6-§9, checked on the IR text the checker
//! produces. `ir(body)` checks a kernel around `body` and returns its
//! printed body; each case names the IR fragment the rule implies.

use phobos_build::ir::print::module_to_string;
use phobos_build::{Source, check_source};

fn ir(body: &str) -> String {
    let src = format!(
        "@autotune(T in [16, 64])\n@grid(1)\nkernel k(X: tensor<f32>[N], H: tensor<f16>[N], B: tensor<bf16>[N], \
         I: tensor<i8>[N], U: tensor<u8>[N], h: f16, f: f32, n: i32, w: i64) {{\n{body}\n}}\n"
    );
    match check_source(&Source::file("t.ph", src)) {
        Ok(m) => module_to_string(&m),
        Err(d) => panic!("{}", d.render()),
    }
}

fn assert_has(text: &str, fragment: &str) {
    assert!(text.contains(fragment), "expected `{fragment}` in:\n{text}");
}

#[test]
fn literals_are_weak() {
    // A float literal takes the other operand's float type.
    assert_has(
        &ir("  let y = h * 2.0"),
        "let %y: f16 = mul(param(h), 2.0:f16):f16",
    );
    // An int literal next to a float becomes that float.
    assert_has(
        &ir("  let y = f + 1"),
        "let %y: f32 = add(param(f), 1.0:f32):f32",
    );
    // An int literal takes the other int type, even a narrow one.
    assert_has(
        &ir("  let y = I[0 :+ T] + 1"),
        "add(load(I[span(0:i32, T)]):i8[T], 1:i8):i8[T]",
    );
    // A float literal next to an int is f32.
    assert_has(
        &ir("  let y = n * 0.5"),
        "mul(cast(param(n)):f32, 0.5:f32):f32",
    );
    // Alone: i32 and f32.
    assert_has(&ir("  let a = 1\n  let b = 1.5"), "let %a: i32 = 1:i32");
    assert_has(&ir("  let b = 1.5"), "let %b: f32 = 1.5:f32");
}

#[test]
fn mixed_arithmetic_widens_with_explicit_casts() {
    assert_has(
        &ir("  let y = H[0 :+ T] + X[0 :+ T]"),
        "add(cast(load(H[span(0:i32, T)]):f16[T]):f32[T], load(X[span(0:i32, T)]):f32[T]):f32[T]",
    );
    assert_has(
        &ir("  let y = H[0 :+ T] * B[0 :+ T]"),
        "mul(cast(load(H[span(0:i32, T)]):f16[T]):f32[T], cast(load(B[span(0:i32, T)]):bf16[T]):f32[T]):f32[T]",
    );
    assert_has(
        &ir("  let y = n + w"),
        "add(cast(param(n)):i64, param(w)):i64",
    );
    assert_has(
        &ir("  let y = I[0 :+ T] + U[0 :+ T]"),
        "add(cast(load(I[span(0:i32, T)]):i8[T]):u8[T], load(U[span(0:i32, T)]):u8[T]):u8[T]",
    );
    assert_has(
        &ir("  let y = n + h"),
        "add(cast(param(n)):f16, param(h)):f16",
    );
}

#[test]
fn grid_values_dims_and_tune_params_are_i32() {
    let text = ir("  let a = program_id(0) + num_programs(0) + N + T");
    assert_has(
        &text,
        "let %a: i32 = add(add(add(program_id(0:i32):i32, num_programs(0:i32):i32):i32, dim(N)):i32, tune(T)):i32",
    );
}

#[test]
fn declared_types_broadcast_and_widen() {
    assert_has(
        &ir("  var acc: tile<f32>[T, 4] = 0"),
        "var %acc: f32[T, 4] = broadcast(0.0:f32):f32[T, 4]",
    );
    assert_has(&ir("  var x: f32 = h"), "var %x: f32 = cast(param(h)):f32");
    assert_has(
        &ir("  var r: tile<f32>[2, T] = X[0 :+ T]"),
        "broadcast(load(X[span(0:i32, T)]):f32[T]):f32[2, T]",
    );
}

#[test]
fn compound_assignment_expands() {
    let text = ir("  var acc: tile<f32>[T] = 0.0\n  acc += H[0 :+ T]\n  acc max= 1");
    assert_has(
        &text,
        "%acc = add(%acc, cast(load(H[span(0:i32, T)]):f16[T]):f32[T]):f32[T]",
    );
    assert_has(&text, "%acc = max(%acc, 1.0:f32):f32[T]");
}

#[test]
fn stores_convert_and_mark_written() {
    let text = ir("  H[0 :+ T] = X[0 :+ T] * 2.0\n  X[0] += 1");
    assert_has(&text, "param H: tensor<f16>[N] written");
    assert_has(&text, "param X: tensor<f32>[N] written");
    assert_has(&text, "param I: tensor<i8>[N]\n");
    assert_has(
        &text,
        "store H[span(0:i32, T)] = cast(mul(load(X[span(0:i32, T)]):f32[T], 2.0:f32):f32[T]):f16[T]",
    );
    assert_has(&text, "store X[point(0:i32)] += 1.0:f32");
}

#[test]
fn slices_of_both_kinds() {
    // `a : b` with a compile-time length becomes a span.
    assert_has(
        &ir("  let a = X[n : n + T]"),
        "load(X[span(param(n), T)]):f32[T]",
    );
    assert_has(&ir("  let a = X[4 : 12]"), "load(X[span(4:i32, 8)]):f32[8]");
    assert_has(
        &ir("  let a = X[0 :+ T]\n  let b = a[2 :+ 4]"),
        "slice(%a[span(2:i32, 4)]):f32[4]",
    );
    assert_has(
        &ir("  let a = load(X[0 :+ T], -1.0)"),
        "load(X[span(0:i32, T)], -1.0:f32):f32[T]",
    );
}

#[test]
fn reductions_and_layout() {
    let text = ir(
        "  let t = reshape(X[0 :+ 32], 4, 8)\n  let a = rowsum(t)\n  let b = sum(t)\n  let c = max(t)\n  let d = transpose(t)\n  let e = rowsum(reshape(I[0 :+ 8], 2, 4))",
    );
    assert_has(&text, "let %a: f32[4, 1] = rowsum(%t):f32[4, 1]");
    assert_has(&text, "let %b: f32 = reduce_sum(%t):f32");
    assert_has(&text, "let %c: f32 = reduce_max(%t):f32");
    assert_has(&text, "let %d: f32[8, 4] = transpose(%t):f32[8, 4]");
    // Small integers sum in i32.
    assert_has(
        &text,
        "let %e: i32[2, 1] = rowsum(cast(reshape(load(I[span(0:i32, 8)]):i8[8]):i8[2, 4]):i32[2, 4]):i32[2, 1]",
    );
}

#[test]
fn dot_accumulates_wide() {
    let text = ir(
        "  let a = reshape(H[0 :+ 64], 8, 8)\n  let c = dot(a, a)\n  let d = dot_t(a, reshape(I[0 :+ 64], 8, 8))",
    );
    assert_has(&text, "let %c: f32[8, 8] = dot(%a, %a):f32[8, 8]");
    assert_has(
        &text,
        "dot_t(%a, cast(reshape(load(I[span(0:i32, 64)]):i8[64]):i8[8, 8]):f16[8, 8]):f32[8, 8]",
    );
}

#[test]
fn u8_with_i8_is_the_mixed_sign_dot_in_i32() {
    let text = ir(
        "  let u = reshape(U[0 :+ 64], 8, 8)\n  let i = reshape(I[0 :+ 64], 8, 8)\n  let c = dot_t(u, i)\n  let d = dot(i, u)\n  let e = dot(u, u)",
    );
    assert_has(
        &text,
        "let %c: i32[8, 8] = dot_t(cast(%u):i32[8, 8], cast(%i):i32[8, 8]):i32[8, 8]",
    );
    assert_has(
        &text,
        "let %d: i32[8, 8] = dot(cast(%i):i32[8, 8], cast(%u):i32[8, 8]):i32[8, 8]",
    );
    // Same signs keep the ordinary rule.
    assert_has(&text, "let %e: i32[8, 8] = dot(%u, %u):i32[8, 8]");
}

#[test]
fn shadowed_locals_get_unique_names() {
    let text = ir("  let a = 1\n  for i in range(0, 4) {\n    let a = 2.0\n  }\n  let a = 3");
    assert_has(&text, "let %a: i32 = 1:i32");
    assert_has(&text, "let %a_1: f32 = 2.0:f32");
    assert_has(&text, "let %a_2: i32 = 3:i32");
}

#[test]
fn autotune_configs_pin_cluster_parameters() {
    let src = "@autotune(A in [16, 32])\n@cluster(S in [1, 4])\nkernel k() {\n}\n";
    let m = check_source(&Source::file("t.ph", src)).unwrap();
    let k = &m.kernels[0];
    let show =
        |cs: Vec<phobos_build::ir::Config>| cs.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    assert_eq!(show(k.configs()).len(), 6);
    assert_eq!(show(k.configs())[0], "A=16, S=1");
    assert_eq!(show(k.autotune_configs()), vec!["A=16, S=1", "A=32, S=1"]);
}

#[test]
fn prefetch_is_checked_like_a_load_and_prints_as_a_statement() {
    // Any element type, masked slices past the end, a point index.
    let text =
        ir("  prefetch(X[program_id(0) * T + T :+ T])\n  prefetch(I[n])\n  prefetch(B[0 :+ 4])");
    assert_has(&text, "prefetch X[span(");
    assert_has(&text, "prefetch I[point(param(n))]");
    assert_has(&text, "prefetch B[span(0:i32, 4)]");
}
