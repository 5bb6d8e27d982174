//! Rendered diagnostics, one snapshot per case, through one helper.
//! Bless changed snapshots with `INSTA_UPDATE=always cargo test`.

use phobos_build::{Source, check_source};

/// Checks `src` as file `t.ph` and snapshots the rendered errors as `name`.
/// Panics when it checks cleanly: every case here must be an error.
fn check(name: &str, src: &str) {
    let rendered = match check_source(&Source::file("t.ph", src)) {
        Ok(_) => panic!("case `{name}` checked without errors:\n{src}"),
        Err(d) => d.render(),
    };
    insta::assert_snapshot!(name, rendered);
}

/// A kernel around `body`, with common parameters in scope.
fn kernel(body: &str) -> String {
    format!(
        "@autotune(T in [16, 64])\n@grid(cdiv(N, T))\nkernel k(X: tensor<f32>[N], Y: tensor<f32>[N], alpha: f32) {{\n{body}\n}}\n"
    )
}

#[test]
fn unknown_name_suggests_close_matches() {
    check(
        "unknown_name",
        &kernel("  let p = prgram_id(0)\n  let y = alpah * 2.0"),
    );
    check(
        "unknown_local",
        &kernel("  let base = 1\n  let y = bsae + 1"),
    );
}

#[test]
fn tile_dims_must_be_compile_time() {
    check(
        "tile_dim_tensor_dim",
        &kernel("  var acc: tile<f32>[N] = 0.0"),
    );
    check(
        "slice_len_runtime",
        &kernel("  let n = 4\n  let x = X[0 :+ n]"),
    );
    check("full_over_symbolic_dim", &kernel("  let x = X[:]"));
}

#[test]
fn let_is_immutable() {
    check("assign_to_let", &kernel("  let a = 1\n  a = 2"));
    check(
        "assign_to_loop_var",
        &kernel("  for i in range(0, 4) {\n    i += 1\n  }"),
    );
}

#[test]
fn tensors_are_written_only_by_stores() {
    check("assign_whole_tensor", &kernel("  Y = 1.0"));
    check("read_tensor_unsliced", &kernel("  let y = X + 1.0"));
    check("assign_param", &kernel("  alpha = 2.0"));
}

#[test]
fn open_ended_slices_are_errors() {
    check("open_slice", &kernel("  let x = X[4:]"));
}

#[test]
fn quantized_types_only_for_tensors() {
    check("quant_scalar_param", "kernel k(a: q4_0) {\n}\n");
    check("quant_tile", &kernel("  var t: tile<q8_0>[32] = 0"));
    check(
        "quant_elementwise",
        "@grid(1)\nkernel k(W: tensor<q4_0>[R, 64]) {\n  let w = W[0 :+ 4, 0 :+ 32]\n  let y = w * 2.0\n}\n",
    );
    check(
        "quant_block_len",
        "@grid(1)\nkernel k(W: tensor<q4_0>[R, 64]) {\n  let w = dequant(W[0 :+ 4, 0 :+ 16])\n}\n",
    );
    check(
        "quant_block_start",
        "@grid(1)\nkernel k(W: tensor<q4_0>[R, K]) {\n  let w = dequant(W[0 :+ 4, program_id(0) :+ 32])\n}\n",
    );
}

#[test]
fn builtin_arity_and_argument_types() {
    check(
        "arity_dot",
        &kernel("  let a = arange(16)\n  let d = dot(a)"),
    );
    check("arity_program_id", &kernel("  let p = program_id()"));
    check("where_needs_bool", &kernel("  let w = where(1, 2.0, 3.0)"));
    check("exp_of_bool", &kernel("  let e = exp(true)"));
    check(
        "dot_rank",
        &kernel("  let a = arange(16)\n  let d = dot(a, a)"),
    );
    check("unknown_function", &kernel("  let r = rowmx(X[0 :+ T])"));
    check("narrowing_needs_cast", &kernel("  var h: f16 = alpha"));
}

#[test]
fn shape_mismatches_show_both_shapes() {
    check(
        "shape_mismatch_add",
        &kernel("  let a = X[0 :+ T]\n  let b = X[0 :+ 16]\n  let c = a + b"),
    );
    check(
        "dot_inner_dims",
        "@autotune(A in [16, 32], B in [8, 8])\n@grid(1)\nkernel k(X: tensor<f32>[64, 64]) {\n  let a = X[0 :+ A, 0 :+ B]\n  let d = dot(a, a)\n}\n",
    );
    check("store_shape", &kernel("  Y[0 :+ T] = X[0 :+ 8]"));
}

#[test]
fn bad_tune_ranges_show_the_range() {
    check(
        "tune_range_reversed",
        "@autotune(T in [64, 16])\nkernel k() {\n}\n",
    );
    check(
        "tune_range_not_doubling",
        "@autotune(T in [16, 100])\nkernel k() {\n}\n",
    );
    check(
        "tune_range_zero",
        "@autotune(T in [0, 16])\nkernel k() {\n}\n",
    );
}

#[test]
fn attributes_are_validated() {
    check(
        "unknown_attribute",
        "@autotun(T in [16, 64])\nkernel k() {\n}\n",
    );
    check(
        "grid_uses_local_names",
        "@grid(cdiv(N, T))\nkernel k(X: tensor<f32>[N]) {\n}\n",
    );
    check("launch_threads_range", "@launch(4096)\nkernel k() {\n}\n");
    check("pipeline_args", "@pipeline(2)\nkernel k() {\n}\n");
    check(
        "host_impl_not_a_name",
        "@host_impl(1 + 2)\nkernel k() {\n}\n",
    );
    check("host_impl_arity", "@host_impl(a, b)\nkernel k() {\n}\n");
}

#[test]
fn syntax_errors_say_what_was_expected() {
    check("missing_paren", &kernel("  let a = exp(1.0"));
    check("bad_character", &kernel("  let a = 1 $ 2"));
    check("two_statements_one_line", &kernel("  let a = 1 let b = 2"));
}

#[test]
fn errors_in_later_statements_are_reported_too() {
    // One error per failing statement; the failed `let a` is not reported
    // again where `a` is used.
    check(
        "several_statements",
        &kernel(
            "  let a = prgram_id(0)\n  let b = a + 1\n  let d = X[0:]\n  for i in range(0, 4) {\n    i = 2\n  }",
        ),
    );
}

#[test]
fn macro_errors_point_at_the_token() {
    let tokens: proc_macro2::TokenStream =
        "@grid(1)\nkernel k(X: tensor<f32>[N]) {\n  let y = alpah\n}\n"
            .parse()
            .unwrap();
    let d = check_source(&Source::Tokens(tokens)).unwrap_err();
    let errors = d.macro_errors();
    assert_eq!(errors.len(), 1);
    let (span, message) = &errors[0];
    assert_eq!(message, "unknown name `alpah`");
    assert_eq!((span.start().line, span.start().column), (3, 10));
    insta::assert_snapshot!("macro_unknown_name", d.render());
}

#[test]
fn macro_newlines_end_statements() {
    // Two statements on two lines, no semicolons, as inside `kernel! {}`.
    let tokens: proc_macro2::TokenStream =
        "@grid(1)\nkernel k(X: tensor<f32>[4]) {\n  let a = X[0 :+ 4]\n  let b = a * 2.0\n  X[0 :+ 4] = b\n}"
            .parse()
            .unwrap();
    let m = check_source(&Source::Tokens(tokens)).unwrap();
    assert_eq!(m.kernels[0].body.len(), 3);
}

#[test]
fn quantized_stores_and_block_access_name_what_they_take() {
    let src = |body: &str| {
        format!(
            "@grid(1)\nkernel q(X: tensor<f32>[N, 256], W: tensor<q4_k>[N, 256], XQ: tensor<q8_0>[N, 256], V: tensor<q4_0>[N, 256]) {{\n{body}\n}}\n"
        )
    };
    check(
        "store_into_read_only_quant",
        &src("  V[0 :+ 1, 0 :+ 32] = X[0 :+ 1, 0 :+ 32]"),
    );
    check(
        "quant_store_needs_plain_assign",
        &src("  XQ[0 :+ 1, 0 :+ 32] += X[0 :+ 1, 0 :+ 32]"),
    );
    check(
        "block_access_format",
        &src("  let l = qlevels(W[0 :+ 1, 0 :+ 256])"),
    );
    check(
        "block_access_of_floats",
        &src("  let s = qscales(X[0 :+ 1, 0 :+ 32])"),
    );
}

#[test]
fn prefetch_is_a_statement_over_a_tensor_slice() {
    check("prefetch_arity", &kernel("  prefetch(X[0 :+ T], 1)"));
    check(
        "prefetch_of_a_tile",
        &kernel("  let t = X[0 :+ T]\n  prefetch(t)"),
    );
    check(
        "prefetch_as_a_value",
        &kernel("  let p = prefetch(X[0 :+ T])"),
    );
    check(
        "prefetch_of_quantized",
        "@grid(1)\nkernel k(W: tensor<q4_0>[R, 64]) {\n  prefetch(W[0 :+ 4, 0 :+ 32])\n}\n",
    );
}
