//! `@pipeline` in the emitted MLIR: buffers, copies, schedule and the
//! reasons a kernel or config is refused.

use super::schedule_model::{self, Event};
use crate::{
    Source,
    back::mlir::{MlirError, emit_mlir},
    check_source, ir,
};

fn kernel(src: &str) -> ir::Kernel {
    let module = check_source(&Source::file("test.ph", src))
        .unwrap_or_else(|e| panic!("front end rejected the test kernel: {e:?}"));
    module.kernels.into_iter().next().unwrap()
}

fn gemm(elem: &str) -> String {
    format!(
        "
@autotune(TM in [32, 128], TN in [32, 128], TK in [8, 32])
@pipeline
@grid(cdiv(M, TM), cdiv(N, TN))
kernel g(A: tensor<{elem}>[M, K], B: tensor<{elem}>[K, N], C: tensor<f32>[M, N]) {{
  var acc: tile<f32>[TM, TN] = 0.0
  for kt in range(0, K, TK) {{
    let a = A[program_id(0) * TM :+ TM, kt :+ TK]
    let b = B[kt :+ TK, program_id(1) * TN :+ TN]
    acc += dot(a, b)
  }}
  C[program_id(0) * TM :+ TM, program_id(1) * TN :+ TN] = acc
}}
"
    )
}

fn workgroup_buffers(mlir: &str) -> Vec<String> {
    let header = mlir.lines().find(|l| l.contains("gpu.func")).unwrap();
    let start = header.find("workgroup(").unwrap() + "workgroup(".len();
    let end = start + header[start..].find(')').unwrap();
    header[start..end]
        .split(", %")
        .map(|b| b.to_string())
        .collect()
}

#[test]
fn each_staged_tile_gets_two_halves_and_async_copies_on_sm_80() {
    let k = kernel(&gemm("f32"));
    let e = emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap();
    // a: 32x8 and b: 8x32 f32, each twice.
    let buffers = workgroup_buffers(&e.mlir);
    assert_eq!(buffers.len(), 2, "{buffers:?}");
    assert!(
        buffers
            .iter()
            .all(|b| b.contains("memref<512xf32, #gpu.address_space<workgroup>>")),
        "{buffers:?}"
    );
    assert_eq!(e.shared_bytes, 2 * 2 * 32 * 8 * 4);
    assert!(e.mlir.contains("nvgpu.device_async_copy"), "{}", e.mlir);
    // One group in the prologue, one per iteration, and the wait for the
    // previous one.
    assert_eq!(e.mlir.matches("nvgpu.device_async_create_group").count(), 2);
    assert!(e.mlir.contains("{numGroups = 1 : i32}"), "{}", e.mlir);
    assert!(e.mlir.contains("iter_args(%half"), "{}", e.mlir);
}

#[test]
fn sm_90_uses_the_same_async_copies() {
    let k = kernel(&gemm("f16"));
    let e = emit_mlir(&k, &k.default_config(), "sm_90", 64).unwrap();
    // f16 elements move in pairs (4-byte copies), zero-filled past the edge.
    assert!(
        e.mlir
            .lines()
            .any(|l| l.contains("nvgpu.device_async_copy") && l.contains("], 2, %")),
        "{}",
        e.mlir
    );
}

#[test]
fn sm_75_prefetches_through_registers_without_nvgpu() {
    let k = kernel(&gemm("f32"));
    let e = emit_mlir(&k, &k.default_config(), "sm_75", 32).unwrap();
    assert!(!e.mlir.contains("nvgpu"), "{}", e.mlir);
    assert_eq!(workgroup_buffers(&e.mlir).len(), 2);
    assert_eq!(e.shared_bytes, 2 * 2 * 32 * 8 * 4);
    // acc (4 slots) plus one register buffer per staged tile (256
    // elements over 256 threads: one slot each).
    assert!(
        e.mlir
            .contains("memref<1xf32, #gpu.address_space<private>>"),
        "{}",
        e.mlir
    );
}

#[test]
fn the_loop_body_reads_the_current_half() {
    let k = kernel(&gemm("f32"));
    let e = emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap();
    // Half offsets are the carried half (0 or 1) times the tile size.
    assert!(
        e.mlir
            .lines()
            .any(|l| l.contains("arith.muli %half") && l.contains(": i32")),
        "{}",
        e.mlir
    );
}

#[test]
fn configs_that_no_longer_fit_when_doubled_are_pruned_with_the_reason() {
    let k = kernel(&gemm("f32"));
    let config = k
        .configs()
        .into_iter()
        .find(|c| c.get("TM") == Some(128) && c.get("TN") == Some(128) && c.get("TK") == Some(32))
        .unwrap();
    match emit_mlir(&k, &config, "sm_80", 32).unwrap_err() {
        MlirError::DoesNotFit(why) => {
            assert!(why.contains("65536 bytes"), "{why}");
            assert!(why.contains("@pipeline"), "{why}");
        }
        other => panic!("expected DoesNotFit, got {other}"),
    }
}

fn refusal(src: &str) -> String {
    let k = kernel(src);
    match emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap_err() {
        MlirError::NotPipelinable { kernel, reason } => {
            assert_eq!(kernel, k.name);
            reason
        }
        other => panic!("expected NotPipelinable, got {other}"),
    }
}

#[test]
fn a_slice_computed_inside_the_loop_is_refused_with_the_name() {
    let why = refusal(
        "
@pipeline
@grid(1)
kernel t(A: tensor<f32>[N, N], B: tensor<f32>[N, N], C: tensor<f32>[N, N]) {
  var acc: tile<f32>[16, 16] = 0.0
  for kt in range(0, N, 16) {
    let off = kt * 2
    let a = A[0 :+ 16, off :+ 16]
    acc += dot(a, B[0 :+ 16, 0 :+ 16])
  }
  C[0 :+ 16, 0 :+ 16] = acc
}
",
    );
    assert!(why.contains("`off`, computed inside the loop"), "{why}");
}

#[test]
fn a_loop_without_shared_tiles_is_refused() {
    let why = refusal(
        "
@pipeline
@grid(1)
kernel t(X: tensor<f32>[N], Y: tensor<f32>[N]) {
  for i in range(0, N, 32) {
    Y[i :+ 32] = X[i :+ 32] * 2.0
  }
}
",
    );
    assert!(why.contains("loads no tile into shared memory"), "{why}");
}

#[test]
fn a_kernel_without_loops_is_refused() {
    let why = refusal(
        "
@pipeline
@grid(1)
kernel t(X: tensor<f32>[N], Y: tensor<f32>[N]) {
  Y[0 :+ 32] = X[0 :+ 32]
}
",
    );
    assert!(why.contains("no `for` loop"), "{why}");
}

#[test]
fn a_tensor_written_inside_the_loop_is_not_staged() {
    let why = refusal(
        "
@pipeline
@grid(1)
kernel t(A: tensor<f32>[N, N], C: tensor<f32>[N, N]) {
  for kt in range(0, N, 16) {
    let a = A[0 :+ 16, kt :+ 16]
    A[0 :+ 16, kt :+ 16] = transpose(a)
  }
  C[0 :+ 1, 0 :+ 1] = A[0 :+ 1, 0 :+ 1]
}
",
    );
    assert!(why.contains("`A` is written inside the loop"), "{why}");
}

#[test]
fn kernels_without_the_attribute_are_unchanged() {
    let src = gemm("f32").replace("@pipeline\n", "");
    let k = kernel(&src);
    let e = emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap();
    assert!(!e.mlir.contains("nvgpu"));
    assert_eq!(e.shared_bytes, 2 * 32 * 8 * 4);
}

/// The SSA names `name` is computed from, transitively (block arguments
/// and function parameters end the walk).
fn ancestors(mlir: &str, name: &str) -> Vec<String> {
    let defs: std::collections::HashMap<&str, &str> = mlir
        .lines()
        .filter_map(|l| {
            let (lhs, rhs) = l.trim().split_once(" = ")?;
            lhs.starts_with('%').then_some((lhs, rhs))
        })
        .collect();
    let mut seen = Vec::new();
    let mut todo = vec![name.to_string()];
    while let Some(n) = todo.pop() {
        if seen.contains(&n) {
            continue;
        }
        if let Some(rhs) = defs.get(n.as_str()) {
            for operand in rhs.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '%')) {
                if operand.starts_with('%') {
                    todo.push(operand.to_string());
                }
            }
        }
        seen.push(n);
    }
    seen
}

#[test]
fn ldmatrix_in_a_pipelined_tensorcore_loop_reads_the_current_half() {
    let src = gemm("f16")
        .replace(
            "@pipeline\n",
            "@pipeline\n@tensorcore\n@launch(threads = 128)\n",
        )
        .replace("TM in [32, 128]", "TM in [64]")
        .replace("TN in [32, 128]", "TN in [64]")
        .replace("TK in [8, 32]", "TK in [32]");
    let k = kernel(&src);
    for chip in ["sm_80", "sm_75"] {
        let e = emit_mlir(&k, &k.default_config(), chip, 32).unwrap();
        let half = e
            .mlir
            .split("iter_args(")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .filter(|h| h.starts_with("%half"))
            .unwrap_or_else(|| panic!("{chip}: no pipelined loop\n{}", e.mlir));
        let loads: Vec<&str> = e
            .mlir
            .lines()
            .filter(|l| l.contains("nvgpu.ldmatrix"))
            .collect();
        // One A and one B load per 16x8 block the warp owns.
        assert_eq!(loads.len(), 2 * (64 / 16 * 64 / 8) / 4, "{chip}");
        for line in loads {
            let index = line
                .split_once('[')
                .and_then(|(_, rest)| rest.split_once(']'))
                .map(|(i, _)| i)
                .unwrap();
            assert!(
                ancestors(&e.mlir, index).iter().any(|n| n == half),
                "{chip}: `{}` does not depend on {half}",
                line.trim()
            );
        }
    }
}
#[test]
fn staged_halves_are_16_byte_aligned_for_cp_async() {
    // An f16 buffer defaults to 2-byte alignment; 4-byte copies of f16
    // pairs need their shared destination 4-byte aligned.
    let k = kernel(&gemm("f16"));
    let e = emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap();
    let buffers = workgroup_buffers(&e.mlir);
    assert!(!buffers.is_empty());
    for b in &buffers {
        assert!(b.contains("{llvm.align = 16 : i64}"), "{b}");
    }
}

/// `gemm` with a non-zero `other` on both tiles.
fn gemm_with_other(elem: &str) -> String {
    gemm(elem)
        .replace(
            "let a = A[program_id(0) * TM :+ TM, kt :+ TK]",
            "let a = load(A[program_id(0) * TM :+ TM, kt :+ TK], 1.0)",
        )
        .replace(
            "let b = B[kt :+ TK, program_id(1) * TN :+ TN]",
            "let b = load(B[kt :+ TK, program_id(1) * TN :+ TN], 1.0)",
        )
}

fn schedule_of(src: &str, chip: &str) -> schedule_model::Schedule {
    let k = kernel(src);
    let e = emit_mlir(&k, &k.default_config(), chip, 32).unwrap();
    schedule_model::extract(&e.mlir)
}

#[test]
fn the_emitted_schedule_is_race_free_for_every_trip_count() {
    for chip in ["sm_75", "sm_80", "sm_90"] {
        for src in [
            gemm("f32"),
            gemm("f16"),
            gemm_with_other("f32"),
            gemm_with_other("f16"),
        ] {
            let schedule = schedule_of(&src, chip);
            assert!(
                schedule
                    .iteration
                    .iter()
                    .any(|e| matches!(e, Event::Read { .. })),
                "{chip}: {schedule:?}"
            );
            for trips in 0..=5 {
                if let Err(why) = schedule_model::check(&schedule, trips) {
                    panic!("{chip}: {why}\n{schedule:?}\n{src}");
                }
            }
        }
    }
}

/// The distinct kinds of event, in order, with runs collapsed: a tile is
/// many copies (async, or the synchronous fallback beside each) or reads.
fn shape(events: &[Event]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for e in events {
        let name = match e {
            Event::AsyncCopy { .. } | Event::SyncWrite { .. } => "fill",
            Event::Commit => "commit",
            Event::Wait { pending: 1 } => "wait1",
            Event::Wait { .. } => "wait?",
            Event::Barrier => "barrier",
            Event::Read { .. } => "read",
        };
        if out.last() != Some(&name) {
            out.push(name);
        }
    }
    out
}

fn has_async(events: &[Event]) -> bool {
    events.iter().any(|e| matches!(e, Event::AsyncCopy { .. }))
}

#[test]
fn barrier_and_wait_placement_is_pinned_on_sm_80() {
    for src in [gemm("f32"), gemm("f16")] {
        let s = schedule_of(&src, "sm_80");
        assert_eq!(shape(&s.prologue), ["fill", "commit"]);
        assert_eq!(
            shape(&s.iteration),
            ["fill", "commit", "wait1", "barrier", "read", "barrier"]
        );
        assert!(has_async(&s.prologue) && has_async(&s.iteration));
    }
}

#[test]
fn barrier_placement_is_pinned_on_sm_75() {
    let s = schedule_of(&gemm("f32"), "sm_75");
    assert_eq!(shape(&s.prologue), ["fill", "barrier"]);
    assert_eq!(shape(&s.iteration), ["read", "fill", "barrier"]);
    assert!(!has_async(&s.prologue) && !has_async(&s.iteration));
}

/// The `nvgpu.device_async_copy` lines of `mlir`.
fn copies(mlir: &str) -> Vec<&str> {
    mlir.lines()
        .filter(|l| l.contains("nvgpu.device_async_copy"))
        .collect()
}

#[test]
fn rows_of_whole_16_byte_runs_copy_16_bytes_with_4_byte_fallbacks() {
    for (elem, wide, narrow) in [("f16", "], 8, %", "], 2, %"), ("f32", "], 4, %", "], 1, %")] {
        let k = kernel(&gemm(elem));
        let e = emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap();
        let lines = copies(&e.mlir);
        // 16 bytes skip L1 (`cp.async.cg`); 4-byte copies may not.
        assert!(
            lines
                .iter()
                .any(|l| l.contains(wide) && l.contains("{bypassL1}")),
            "{elem}: {lines:#?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains(narrow) && !l.contains("bypassL1")),
            "{elem}: {lines:#?}"
        );
    }
}

#[test]
fn rows_narrower_than_16_bytes_keep_4_byte_copies() {
    let src = gemm("f16").replace("TK in [8, 32]", "TK in [4]");
    let k = kernel(&src);
    let e = emit_mlir(&k, &k.default_config(), "sm_80", 32).unwrap();
    // `a` is TM x 4 (8-byte rows): pairs only; `b` (4 x TN) still goes wide.
    let lines = copies(&e.mlir);
    assert!(lines.iter().any(|l| l.contains("], 2, %")), "{lines:#?}");
    let s = schedule_model::extract(&e.mlir);
    for trips in 0..=4 {
        schedule_model::check(&s, trips).unwrap();
    }
}

/// The model is not vacuous: each way of breaking the schedule is caught.
#[test]
fn the_schedule_model_catches_broken_schedules() {
    let good = schedule_of(&gemm("f32"), "sm_80");
    let mutate = |f: &dyn Fn(&mut Vec<Event>)| {
        let mut iteration = good.iteration.clone();
        f(&mut iteration);
        let broken = schedule_model::Schedule {
            prologue: good.prologue.clone(),
            iteration,
        };
        (0..=4)
            .find_map(|trips| schedule_model::check(&broken, trips).err())
            .unwrap_or_default()
    };
    let first_barrier = |it: &Vec<Event>| it.iter().position(|e| *e == Event::Barrier).unwrap();
    let last_barrier = |it: &Vec<Event>| it.iter().rposition(|e| *e == Event::Barrier).unwrap();
    let why = mutate(&|it| {
        let at = first_barrier(it);
        it.remove(at);
    });
    assert!(why.contains("before a barrier published it"), "{why}");
    let why = mutate(&|it| {
        let at = last_barrier(it);
        it.remove(at);
    });
    assert!(
        why.contains("refilled before a barrier ended its reads"),
        "{why}"
    );
    let why = mutate(&|it| {
        for e in it.iter_mut() {
            if let Event::Wait { pending } = e {
                *pending = 2;
            }
        }
    });
    assert!(why.contains("before its copy landed"), "{why}");
    let why = mutate(&|it| {
        for e in it.iter_mut() {
            if let Event::Wait { pending } = e {
                *pending = 0;
            }
        }
    });
    assert!(why.contains("no overlap"), "{why}");
    let why = mutate(&|it| it.retain(|e| !matches!(e, Event::Wait { .. })));
    assert!(why.contains("before its copy landed"), "{why}");
}
