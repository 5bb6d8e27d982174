//! What the host back end emits for small kernels compiled from text.

use super::{GenError, generate};
use crate::{Source, check_source};

fn generated(text: &str) -> Result<String, Vec<GenError>> {
    let module = check_source(&Source::file("test.ph", text)).expect("test kernels are valid");
    generate(&module, text).map(|tokens| tokens.to_string())
}

const GEMM: &str = "@autotune(TM in [16, 32], TN in [16], TK in [8])
@grid(cdiv(M, TM), cdiv(N, TN))
kernel mm(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
  var acc: tile<f32>[TM, TN] = 0.0
  for k in range(0, K, TK) {
    let a = A[program_id(0) * TM :+ TM, k :+ TK]
    let b = B[k :+ TK, program_id(1) * TN :+ TN]
    acc += dot(a, b)
  }
  C[program_id(0) * TM :+ TM, program_id(1) * TN :+ TN] = acc
}";

#[test]
fn a_contraction_loop_runs_whole_before_the_step_by_step_loop() {
    let out = generated(GEMM).unwrap();
    let whole = out
        .find("host :: dot_acc_k_loop (& mut l_acc , (& p_A , & [")
        .unwrap_or_else(|| panic!("{out}"));
    let stepwise = out
        .find("host :: dot_acc (& mut l_acc , & l_a , & l_b)")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(whole < stepwise, "{out}");
    assert!(out.contains("(& p_B , & ["), "{out}");
    assert!(
        out.contains("(__next as i64 , __end as i64 , __step as i64)"),
        "{out}"
    );
    // When the call runs the loop, the step-by-step loop starts at the end.
    assert!(out.contains("} { __next = __end ; }"), "{out}");
}

#[test]
fn near_misses_of_a_contraction_loop_stay_step_by_step() {
    let variants = [
        // The k slice is not the loop variable.
        (
            "let a = A[program_id(0) * TM :+ TM, k :+ TK]",
            "let a = A[program_id(0) * TM :+ TM, (k + 1) :+ TK]",
        ),
        // The row slice depends on the loop variable.
        (
            "let a = A[program_id(0) * TM :+ TM, k :+ TK]",
            "let a = A[k :+ TM, k :+ TK]",
        ),
        // A masked load with a fill value.
        (
            "let b = B[k :+ TK, program_id(1) * TN :+ TN]",
            "let b = load(B[k :+ TK, program_id(1) * TN :+ TN], 1.0)",
        ),
        // Something else in the body.
        (
            "acc += dot(a, b)",
            "acc += dot(a, b)\n    C[0 :+ TM, 0 :+ TN] = a[:, 0 :+ 1] * 1.0",
        ),
        // Another update than `acc += dot`.
        ("acc += dot(a, b)", "acc = acc * 2.0 + dot(a, b)"),
        // A `let` the contraction does not read.
        (
            "acc += dot(a, b)",
            "acc += dot(a, B[k :+ TK, program_id(1) * TN :+ TN])",
        ),
    ];
    for (from, to) in variants {
        let text = GEMM.replace(from, to);
        assert_ne!(text, GEMM, "{from}");
        let Ok(module) = check_source(&Source::file("test.ph", &text)) else {
            panic!("variant does not check: {text}");
        };
        let out = generate(&module, &text).unwrap().to_string();
        assert!(!out.contains("dot_acc_k_loop"), "{to}: {out}");
    }
    // Operands written inside `dot` are the pattern too.
    let inline = GEMM.replace(
        "acc += dot(a, b)",
        "acc += dot(A[program_id(0) * TM :+ TM, k :+ TK], B[k :+ TK, program_id(1) * TN :+ TN])",
    );
    let inline = inline
        .lines()
        .filter(|l| !l.contains("let a =") && !l.contains("let b ="))
        .collect::<Vec<_>>()
        .join("\n");
    let out = generated(&inline).unwrap();
    assert!(out.contains("dot_acc_k_loop"), "{out}");
}

#[test]
fn accumulating_a_contraction_is_done_in_place() {
    let out = generated(GEMM).unwrap();
    assert!(
        out.contains("host :: dot_acc (& mut l_acc , & l_a , & l_b)"),
        "{out}"
    );
    assert!(
        !out.contains("host :: dot ("),
        "no temporary product: {out}"
    );
}

#[test]
fn launcher_binds_dims_and_types_written_tensors_mut() {
    let out = generated(GEMM).unwrap();
    assert!(out.contains("pub fn launch_with"), "{out}");
    assert!(
        out.contains("C : & mut :: phobos :: __private :: Tensor < f32 >"),
        "{out}"
    );
    assert!(
        out.contains("A : & :: phobos :: __private :: Tensor < f32 >"),
        "{out}"
    );
    assert!(out.contains("DimMismatch"), "{out}");
    assert!(out.contains("RankMismatch"), "{out}");
    // Two configs: TM in [16, 32] with the others fixed; default first.
    assert!(
        out.contains("Config { TM : 16i64 , TN : 16i64 , TK : 8i64 } , Config { TM : 32i64"),
        "{out}"
    );
}

#[test]
fn every_path_goes_through_the_private_module() {
    let out = generated(GEMM).unwrap();
    for path in out.split(":: phobos ::").skip(1) {
        assert!(
            path.trim_start().starts_with("__private"),
            "a path bypasses __private: {path}"
        );
    }
}

const QUANT: &str = "@grid(cdiv(N, 4))
kernel q(W: tensor<q8_0>[N, 64], x: tensor<f32>[2, 64], y: tensor<f32>[2, N], z: tensor<f32>[N, 64]) {
  let n = program_id(0) * 4
  var acc: tile<f32>[2, 4] = 0.0
  for k in range(0, 64, 32) {
    let w = W[n :+ 4, k :+ 32]
    acc += dot_t(x[:, k :+ 32], w)
    z[n :+ 4, k :+ 32] = dequant(w)
  }
  y[:, n :+ 4] = acc
}";

#[test]
fn quantized_tensors_take_a_typed_handle_and_slice_into_blocks() {
    let out = generated(QUANT).unwrap();
    assert!(
        out.contains("W : & :: phobos :: __private :: QTensor < '_ , :: phobos :: __private :: quant :: Q8_0 >"),
        "{out}"
    );
    assert!(out.contains("host :: QuantRead :: new (W)"), "{out}");
    assert!(out.contains("host :: load_quant (& p_W"), "{out}");
    assert!(
        out.contains("let l_w : :: phobos :: __private :: host :: QTile"),
        "{out}"
    );
    assert!(out.contains("host :: dequant (& l_w)"), "{out}");
}

#[test]
fn a_quantized_contraction_is_not_fused_into_the_float_accumulator() {
    let out = generated(QUANT).unwrap();
    // ggml's numerics: the product is its own f32 sum, then added.
    assert!(out.contains("host :: dot_t_quant_rhs ("), "{out}");
    assert!(!out.contains("dot_t_acc"), "{out}");
}

#[test]
fn slice_helper_is_emitted_only_when_used() {
    assert!(!generated(GEMM).unwrap().contains("__slice_tile"));
    let text = "kernel s(x: tensor<f32>[8], y: tensor<f32>[4]) {
  let t = x[:]
  let i = program_id(0)
  y[:] = t[i :+ 4]
}";
    assert!(generated(text).unwrap().contains("fn __slice_tile"));
}

const CHAIN: &str =
    "kernel chain(p: tensor<f32>[16, 8], v: tensor<f32>[8, 4], o: tensor<f32>[16, 4]) {
  var acc: tile<f32>[16, 4] = 1.0
  let r = rowsum(p[:, :])
  acc = acc * r[:, 0 :+ 1] + dot(p[:, :], v[:, :])
  acc = acc * acc + 1.0
  o[:, :] = acc
}";

#[test]
fn update_chains_run_in_place_in_order() {
    let out = generated(CHAIN).unwrap();
    // The rescale by `r` ([16, 1]) is a fused loop over `acc`'s rows.
    let mul = out
        .find("l_acc . as_mut_slice () . chunks_exact_mut (__inner)")
        .expect(&out);
    let dot = out.find("host :: dot_acc (& mut l_acc").expect(&out);
    assert!(out[mul..].contains("Num :: mul (* __acc"), "{out}");
    assert!(
        mul < dot,
        "the rescale must happen before the accumulation: {out}"
    );
}

#[test]
fn chains_whose_operands_read_the_target_are_not_rewritten() {
    let out = generated(CHAIN).unwrap();
    // `acc * acc + 1.0` reads acc on the right: computed as a whole (one
    // fused loop into a new tile), then assigned.
    assert!(out.contains("l_acc = {"), "{out}");
    assert!(!out.contains("host :: add_assign (& mut l_acc"), "{out}");
}

const ROW_SCALE: &str = "@autotune(R in [1, 4], BC in [64])
kernel scale_rows(X: tensor<f32>[N, C], W: tensor<f32>[C], Y: tensor<f32>[N, C]) {
  let x = X[program_id(0) * R :+ R, 0 :+ BC]
  var e = exp(x)
  let s = rowsum(e)
  e /= s
  e *= W[0 :+ BC]
  Y[program_id(0) * R :+ R, 0 :+ BC] = e
}";

#[test]
fn per_row_and_per_column_updates_are_fused_loops() {
    let out = generated(ROW_SCALE).unwrap();
    // `s` ([R, 1]) is read once per row of `e`, `W` ([C]) once per
    // column: one row-by-row loop each, not the library's in-place op.
    assert!(!out.contains("host :: div_assign"), "{out}");
    assert!(!out.contains("host :: mul_assign"), "{out}");
    assert!(
        out.contains("l_e . as_mut_slice () . chunks_exact_mut (__inner)"),
        "{out}"
    );
}

const ELEMENTWISE: &str = "@autotune(B in [8, 16])
kernel ew(x: tensor<f32>[N], z: tensor<f32>[N], y: tensor<f32>[N], s: f32) {
  let i = program_id(0) * B
  var sq: tile<f32>[B] = 0.0
  sq += x[i :+ B] * x[i :+ B]
  y[i :+ B] = exp(x[i :+ B] * s + z[i :+ B]) - sum(sq)
}";

#[test]
fn an_elementwise_statement_is_one_loop() {
    let out = generated(ELEMENTWISE).unwrap();
    // (`full` remains: it is the `var sq = 0.0` initializer.)
    for op in ["add", "sub", "mul", "exp", "add_assign"] {
        assert!(
            !out.contains(&format!("host :: {op} (")),
            "`{op}` should be fused: {out}"
        );
    }
    // The store's value: one `for` loop over x and z into the store's
    // sink (the tensor's own elements, or reused storage), with s and
    // sum(sq) read once, in each of the two configs' bodies of the three
    // specialized SIMD levels and in the generic one, and emitted once per
    // store (no second copy for stores the sink cannot take in place). The
    // loop writes uninitialized slots, not a tile first filled with zeros.
    assert_eq!(
        out.matches(
            "let mut __sink = :: phobos :: __private :: host :: StoreSink :: < f32 > :: new (& p_y , & __slices , & __shape"
        )
        .count(),
        3 * 2 + 1,
        "{out}"
    );
    assert_eq!(out.matches("__acc . write (").count(), 3 * 2 + 1, "{out}");
    assert!(!out.contains("TileSlots"), "{out}");
    assert!(!out.contains("Tile :: < f32 > :: full"), "{out}");
    assert!(out.contains("__dst . iter_mut () . zip"), "{out}");
    assert!(out.contains("__acc . write ("), "{out}");
    assert!(!out.contains(". map (|"), "no closure per element: {out}");
    assert!(out.contains("host :: sum (& l_sq)"), "{out}");
    // `sq += x * x`: one loop over sq, x and x, in place.
    assert!(
        out.contains("l_sq . as_mut_slice () . iter_mut () . zip"),
        "{out}"
    );
}

#[test]
fn read_only_tensors_are_read_plainly_after_the_writers_enter() {
    let out = generated(ELEMENTWISE).unwrap();
    let write = out.find("TensorWrite :: new (y)").expect(&out);
    let plain_x = out.find("PlainRead :: new (x)").expect(&out);
    let plain_z = out.find("PlainRead :: new (z)").expect(&out);
    assert!(write < plain_x && write < plain_z, "{out}");
}

#[test]
#[ignore = "prints the generated code for inspection"]
fn print_generated_flash_attention() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/kernels/flash_attn_f32.ph"
    ))
    .unwrap();
    println!("{}", generated(&text).unwrap());
}

#[test]
fn each_config_gets_a_body_with_its_tune_values_as_constants() {
    let out = generated(GEMM).unwrap();
    assert!(out.contains("match __config_index"), "{out}");
    // Config 0 (TM 16) has its own arm; the last config (TM 32) is `_`.
    assert!(
        out.contains(
            "0 => { const t_TM : i32 = 16i32 ; const t_TN : i32 = 16i32 ; const t_TK : i32 = 8i32 ;"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "_ => { const t_TM : i32 = 32i32 ; const t_TN : i32 = 16i32 ; const t_TK : i32 = 8i32 ;"
        ),
        "{out}"
    );
    // Every arm runs the grid, in each SIMD level's body (AVX-512, AVX2,
    // and the portable one off x86-64), plus x86-64's generic portable
    // body; the specialized bodies read no tune value from the config.
    assert_eq!(out.matches("try_run_grid").count(), 3 * 2 + 1, "{out}");
    let avx512 = simd_body(&out, "__host_avx512");
    assert_eq!(avx512.matches("try_run_grid").count(), 2, "{avx512}");
    assert!(!avx512.contains("config . TM as i32"), "{avx512}");
}

/// The text of the generated function `name` (up to the next `fn`).
fn simd_body<'o>(out: &'o str, name: &str) -> &'o str {
    let start = out
        .find(&format!("fn {name} ("))
        .unwrap_or_else(|| panic!("no {name}: {out}"));
    let rest = &out[start + 3..];
    &rest[..rest.find(" fn ").unwrap_or(rest.len())]
}

#[test]
fn each_simd_level_gets_a_body_and_launch_with_picks_one() {
    let out = generated(GEMM).unwrap();
    assert!(
        out.contains(
            "# [target_feature (enable = \"avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,bmi1,bmi2,lzcnt,popcnt,f16c\")] fn __host_avx512"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "# [target_feature (enable = \"avx2,fma,bmi1,bmi2,lzcnt,popcnt,f16c\")] fn __host_avx2"
        ),
        "{out}"
    );
    assert!(
        out.contains("match :: phobos :: __private :: host :: simd_level ()"),
        "{out}"
    );
    assert!(
        out.contains("unsafe { __host_avx512 (config , __config_index , __dim_M"),
        "{out}"
    );
    assert!(out.contains("_ => __host_portable (config"), "{out}");
    // x86-64's portable body is the generic one: tune values from the config.
    let portable = simd_body(&out, "__host_portable");
    assert!(portable.contains("config . TM as i32"), "{portable}");
}

fn generated_with_bodies(text: &str, bodies: super::HostBodies) -> String {
    let module = check_source(&Source::file("test.ph", text)).expect("test kernels are valid");
    super::generate_with(&module, text, bodies, |_| None, |_| Vec::new())
        .expect("generates")
        .to_string()
}

#[test]
fn one_level_builds_emit_one_body_and_refuse_lower_levels_at_launch() {
    use super::HostBodies;
    let avx512 = generated_with_bodies(GEMM, HostBodies::Avx512);
    assert!(avx512.contains("fn __host_avx512"), "{avx512}");
    assert!(!avx512.contains("fn __host_avx2"), "{avx512}");
    // The only portable body left is the one other architectures use.
    assert_eq!(avx512.matches("fn __host_portable").count(), 1, "{avx512}");
    assert!(
        avx512.contains("__level => :: core :: result :: Result :: Err (:: phobos :: __private :: Error :: HostSimdUnavailable { kernel : \"mm\" . to_string () , built : \"avx512\" , level : __level . name () , })"),
        "{avx512}"
    );

    let avx2 = generated_with_bodies(GEMM, HostBodies::Avx2);
    assert!(avx2.contains("fn __host_avx2"), "{avx2}");
    assert!(!avx2.contains("fn __host_avx512"), "{avx2}");
    assert!(
        avx2.contains(
            "SimdLevel :: Avx512 | :: phobos :: __private :: host :: SimdLevel :: Avx2 =>"
        ),
        "{avx2}"
    );

    let portable = generated_with_bodies(GEMM, HostBodies::Portable);
    assert!(!portable.contains("fn __host_avx"), "{portable}");
    assert!(!portable.contains("HostSimdUnavailable"), "{portable}");
    assert_eq!(
        portable.matches("fn __host_portable").count(),
        2,
        "{portable}"
    );

    let all = generated_with_bodies(GEMM, HostBodies::All);
    assert_eq!(all, generated(GEMM).unwrap(), "All is the default");
    assert!(!all.contains("HostSimdUnavailable"), "{all}");
}

#[test]
fn host_simd_values_parse_and_native_is_this_machines_level() {
    use super::HostBodies;
    for bodies in [
        HostBodies::All,
        HostBodies::Avx512,
        HostBodies::Avx2,
        HostBodies::Portable,
    ] {
        assert_eq!(HostBodies::parse(bodies.name()), Ok(bodies));
    }
    assert_eq!(HostBodies::parse(""), Ok(HostBodies::All));
    assert_eq!(HostBodies::parse(" avx2 "), Ok(HostBodies::Avx2));
    assert_eq!(HostBodies::parse("native"), Ok(HostBodies::native()));
    let error = HostBodies::parse("sse4").unwrap_err();
    assert!(
        error.contains("PHOBOS_HOST_SIMD=\"sse4\"") && error.contains("native"),
        "{error}"
    );
    #[cfg(target_arch = "x86_64")]
    {
        let expected = if std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512dq")
        {
            HostBodies::Avx512
        } else if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            HostBodies::Avx2
        } else {
            HostBodies::Portable
        };
        assert_eq!(HostBodies::native(), expected);
    }
}

#[test]
fn program_owned_tensors_get_plain_stores_when_the_grid_does_not_wrap() {
    let out = generated(GEMM).unwrap();
    // C is read back (`c_old` in the examples' gemm, not here): here it is
    // only stored, by program-owned blocks.
    assert!(
        out.contains("let mut p_C = :: phobos :: __private :: host :: TensorWrite :: new (C) ?"),
        "{out}"
    );
    assert!(
        out.contains(
            "(__grid [0usize] as u64) . saturating_mul ((t_TM as usize) as u64) <= (1u64 << 31)"
        ),
        "{out}"
    );
    assert!(
        out.contains("unsafe { p_C . allow_plain_stores () }"),
        "{out}"
    );
    let read_back = "@grid(R)
kernel k(Y: tensor<f32>[R, C]) {
  Y[program_id(0), 0 :+ 8] += 1.0
}";
    let out = generated(read_back).unwrap();
    assert!(!out.contains("allow_plain_stores"), "{out}");
}

#[test]
fn configs_past_the_specialization_bound_share_the_generic_body() {
    let values: Vec<String> = (1..=super::launcher::MAX_SPECIALIZED_CONFIGS + 2)
        .map(|v| v.to_string())
        .collect();
    let text = format!(
        "@autotune(B in [{}])
@grid(cdiv(N, B))
kernel k(X: tensor<f32>[N]) {{
  X[program_id(0) * B :+ B] = 1.0
}}",
        values.join(", ")
    );
    let out = generated(&text).unwrap();
    let bound = super::launcher::MAX_SPECIALIZED_CONFIGS;
    assert_eq!(out.matches("const t_B : i32").count(), 3 * bound, "{out}");
    assert!(
        out.contains("_ => { let t_B : i32 = config . B as i32 ;"),
        "{out}"
    );
    // Per specialized SIMD level, plus x86-64's generic portable body.
    assert_eq!(
        out.matches("try_run_grid").count(),
        3 * (bound + 1) + 1,
        "{out}"
    );
}

#[test]
fn a_kernel_without_tune_parameters_has_one_body() {
    let text = "@grid(1)
kernel k(X: tensor<f32>[4]) {
  X[0 :+ 4] = 1.0
}";
    let out = generated(text).unwrap();
    assert!(!out.contains("match __config_index"), "{out}");
    // One body per SIMD level function.
    assert_eq!(out.matches("try_run_grid").count(), 4, "{out}");
}

const ROWWISE: &str = "@autotune(R in [2], C in [8])
kernel rw(X: tensor<f32>[N, M], W: tensor<f32>[M], Y: tensor<f32>[N, M]) {
  let x = X[0 :+ R, 0 :+ C]
  let m = rowmax(x)
  Y[0 :+ R, 0 :+ C] = exp(x - m) * W[0 :+ C]
}";

#[test]
fn per_row_and_per_column_leaves_are_not_stretched() {
    let out = generated(ROWWISE).unwrap();
    // `m` ([R, 1]) is read once per row and `W` ([C]) once per column:
    // no stretched copy of either.
    assert!(!out.contains("broadcast_to"), "{out}");
    assert!(out.contains("chunks_exact (__inner)"), "{out}");
    // Per row, the row's chunks of the sink; each chunk completed.
    assert!(
        out.contains("let __dst = __sink . chunk (__at , __len)"),
        "{out}"
    );
    assert!(
        out.contains("unsafe { __sink . commit (__at , __len) }"),
        "{out}"
    );
    assert!(
        out.contains("unsafe { __sink . finish (& p_Y , & __slices) }"),
        "{out}"
    );
}

const SCALE_WITH_HOST_IMPL: &str = "@host_impl(scale_host)
@grid(cdiv(N, 8))
kernel scale(X: tensor<f32>[N], Y: tensor<f32>[N], s: f32) {
  Y[program_id(0) * 8 :+ 8] = X[program_id(0) * 8 :+ 8] * s
}";

#[test]
fn host_impl_is_called_on_the_host_and_the_generated_body_stays_reachable() {
    let out = generated(SCALE_WITH_HOST_IMPL).unwrap();
    assert!(
        out.contains("return super :: scale_host (device , X , Y , s)"),
        "{out}"
    );
    assert!(out.contains("pub fn launch_generated"), "{out}");
    assert!(
        out.contains("__launch (device , config , false , X , Y , s)"),
        "{out}"
    );
    assert!(out.contains("HostImplMode :: from_env"), "{out}");
    assert!(
        out.contains("host_impl : :: core :: option :: Option :: Some (\"scale_host\")"),
        "{out}"
    );
    // The generated body is still there, after the hand-written call.
    let call = out.find("super :: scale_host").unwrap();
    let grid = out.rfind("try_run_grid").unwrap();
    assert!(call < grid, "{out}");
    // The CUDA branch comes first: the GPU never runs the host function.
    let cuda = out.find("as_cuda ()").unwrap();
    assert!(cuda < call, "{out}");
}

#[test]
fn kernels_without_host_impl_have_no_hand_written_path() {
    let out = generated(GEMM).unwrap();
    assert!(!out.contains("launch_generated"), "{out}");
    assert!(!out.contains("HostImplMode"), "{out}");
    assert!(
        out.contains("host_impl : :: core :: option :: Option :: None"),
        "{out}"
    );
}

#[test]
fn host_impl_refuses_names_rust_cannot_call() {
    let text = SCALE_WITH_HOST_IMPL.replace("scale_host", "fn");
    let errors = generated(&text).unwrap_err();
    assert!(errors[0].message.contains("`@host_impl(fn)`"), "{errors:?}");
}

/// `prefetch` queues the slice in the program's `Prefetcher`, and the
/// loops over tiles after it pump the queue per chunk: the elementwise
/// result (`let e`) and the fused store. A kernel without `prefetch` has
/// neither.
#[test]
fn prefetch_queues_a_slice_that_the_following_loops_pump() {
    let with = "@autotune(R in [4])
@grid(cdiv(N, R))
kernel k(X: tensor<f32>[N, 64], Y: tensor<f32>[N, 64]) {
  let r0 = program_id(0) * R
  let x = X[r0 :+ R, 0 :+ 64]
  prefetch(X[r0 + R :+ R, 0 :+ 64])
  let e = exp(x)
  Y[r0 :+ R, 0 :+ 64] = e * 2.0
}";
    let out = generated(with).unwrap();
    let made = out
        .find("let mut __prefetch = :: phobos :: __private :: host :: Prefetcher :: new () ;")
        .unwrap_or_else(|| panic!("{out}"));
    let pushed = out
        .find("__prefetch . push (& p_X , & [")
        .unwrap_or_else(|| panic!("{out}"));
    let filled = out
        .find("__prefetch . pump (__end - __at) ;")
        .unwrap_or_else(|| panic!("{out}"));
    let stored = out
        .find("__prefetch . pump (__len) ;")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(made < pushed && pushed < filled && filled < stored, "{out}");
    let without = with.replace("  prefetch(X[r0 + R :+ R, 0 :+ 64])\n", "");
    let out = generated(&without).unwrap();
    assert!(!out.contains("__prefetch"), "{out}");
}

#[test]
fn a_sum_of_an_elementwise_tree_builds_no_tile() {
    let text = "@autotune(B in [64])
@grid(R)
kernel k(X: tensor<f32>[R, C], Y: tensor<f32>[R], W: tensor<f32>[C]) {
  let x = X[program_id(0), 0 :+ B]
  let fused = sum((x - 1.0) * x)
  let t = x * x
  let plain = sum(t)
  let two_leaves = sum(x * W[0 :+ B])
  Y[program_id(0) :+ 1] = fused + plain + two_leaves
}";
    let out = generated(text).unwrap();
    // The two trees are fused; `sum(t)` of a local reads the tile. Each
    // launch body (per SIMD level and config) has all three.
    let plain = out.matches("host :: sum (& l_t)").count();
    let fused = out.matches("host :: SumChunks :: < f32 > :: new").count();
    assert!(
        plain > 0 && fused == 2 * plain,
        "{plain} plain, {fused} fused: {out}"
    );
    assert!(out.contains("__sum . add_chunk (& __vals)"), "{out}");
    assert!(out.contains("__sum . add_rest"), "{out}");
}
