//! The dtype table: every operator and built-in of SPEC.md with every
//! dtype combination, held to SPEC's typing rules as restated in
//! `cases.rs`.
//!
//! - Allowed combinations: the checker gives the documented result type;
//!   each op's kernel (all its combinations) compiles to PTX and assembles
//!   with ptxas (feature `ptx`); and the generated root test
//!   `tests/dtype_table/` runs the same kernels through `phobos::kernel!` on
//!   the host against plain Rust. That last part is generated here and
//!   checked to be current: `PHOBOS_BLESS=1` rewrites it.
//! - Forbidden combinations: a checker error whose span lies on the
//!   offending expression.
//! - `cases.rs` covers every operator and built-in SPEC.md's tables list.

mod cases;
mod render;

use std::path::PathBuf;

use cases::{NUMBERS, ops};
use phobos_build::ir::{DType, Elem, QuantType, StmtKind};
use phobos_build::{Source, check_source};

fn check(text: &str) -> Result<phobos_build::ir::Kernel, phobos_build::diag::Diagnostics> {
    let mut module = check_source(&Source::file("t.ph", text))?;
    Ok(module.kernels.remove(0))
}

/// The elem of `let v = ...`, the kernel's first statement.
fn let_elem(k: &phobos_build::ir::Kernel) -> Option<Elem> {
    match &k.body.first()?.kind {
        StmtKind::Let { value, .. } => Some(value.elem),
        _ => None,
    }
}

#[test]
fn checker_gives_every_allowed_combination_its_documented_type() {
    let mut wrong = Vec::new();
    let mut count = 0;
    for op in ops() {
        for (args, typing) in op.allowed() {
            count += 1;
            let (text, _) = render::single(&op, &args);
            match check(&text) {
                Ok(_) if op.form == cases::Form::AtomicAdd => {}
                Ok(k) if let_elem(&k) == Some(Elem::Scalar(typing.result)) => {}
                Ok(k) => wrong.push(format!(
                    "{} {args:?}: typed {:?}, SPEC says {}",
                    op.spelling,
                    let_elem(&k),
                    typing.result
                )),
                Err(e) => wrong.push(format!("{} {args:?} refused:\n{}", op.spelling, e.render())),
            }
        }
    }
    assert!(count > 1500, "only {count} allowed combinations");
    assert!(
        wrong.is_empty(),
        "{} of {count} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn checker_refuses_every_forbidden_combination_at_its_expression() {
    let mut wrong = Vec::new();
    let mut count = 0;
    for op in ops() {
        for args in op.forbidden() {
            count += 1;
            let (text, range) = render::single(&op, &args);
            match check(&text) {
                Ok(_) => wrong.push(format!("{} {args:?} accepted:\n{text}", op.spelling)),
                Err(e) => {
                    let first = &e.errors[0];
                    let (lo, hi) = (first.span.lo as usize, first.span.hi as usize);
                    if lo < range.start || hi > range.end || hi <= lo {
                        wrong.push(format!(
                            "{} {args:?}: error at {lo}..{hi}, expression at {range:?}:\n{}",
                            op.spelling,
                            e.render()
                        ));
                    }
                }
            }
        }
    }
    assert!(count > 500, "only {count} forbidden combinations");
    assert!(
        wrong.is_empty(),
        "{} of {count} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// Quantized tiles: `dequant` gives `f32`; `dot`/`dot_t` with one quantized
/// operand give `f32` whatever the other's number type; everything else on
/// them is refused at the operand.
#[test]
fn quantized_operands_follow_spec() {
    let mut wrong = Vec::new();
    for q in QuantType::ALL {
        let b = q.block_len();
        let deq =
            format!("kernel t(w: tensor<{q}>[4, {b}]) {{\n    let v = dequant(w[:, :])\n}}\n");
        match check(&deq) {
            Ok(k) if let_elem(&k) == Some(Elem::Scalar(DType::F32)) => {}
            other => wrong.push(format!(
                "dequant {q}: {:?}",
                other.map(|k| let_elem(&k)).map_err(|e| e.render())
            )),
        }
        for a in NUMBERS {
            let text = format!(
                "kernel t(x: tensor<{a}>[4, {b}], w: tensor<{q}>[4, {b}]) {{\n    let v = dot_t(x[:, :], w[:, :])\n}}\n"
            );
            match check(&text) {
                Ok(k) if let_elem(&k) == Some(Elem::Scalar(DType::F32)) => {}
                _ => wrong.push(format!("dot_t({a}, {q}) is not f32")),
            }
        }
        // `qlevels`/`qscales` read the 32-element formats' blocks (SPEC §14).
        let blocked32 =
            ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "iq4_nl"].contains(&q.to_string().as_str());
        for (call, elem) in [("qlevels", DType::I8), ("qscales", DType::F32)] {
            let text =
                format!("kernel t(w: tensor<{q}>[4, {b}]) {{\n    let v = {call}(w[:, :])\n}}\n");
            match check(&text) {
                Ok(k) if blocked32 && let_elem(&k) == Some(Elem::Scalar(elem)) => {}
                Err(_) if !blocked32 => {}
                other => wrong.push(format!(
                    "{call} {q}: {:?}",
                    other.map(|k| let_elem(&k)).map_err(|e| e.render())
                )),
            }
        }
        for bad in [
            "w[:, :] + 1.0",
            "exp(w[:, :])",
            "dot_t(w[:, :], w[:, :])",
            "sum(w[:, :])",
        ] {
            let text = format!("kernel t(w: tensor<{q}>[4, {b}]) {{\n    let v = {bad}\n}}\n");
            if check(&text).is_ok() {
                wrong.push(format!("`{bad}` on {q} accepted"));
            }
        }
    }
    for d in DType::ALL {
        let text = format!("kernel t(x: tensor<{d}>[4]) {{\n    let v = dequant(x[0 :+ 4])\n}}\n");
        if check(&text).is_ok() {
            wrong.push(format!("dequant of {d} accepted"));
        }
        for call in ["qlevels", "qscales"] {
            let text =
                format!("kernel t(x: tensor<{d}>[4]) {{\n    let v = {call}(x[0 :+ 4])\n}}\n");
            if check(&text).is_ok() {
                wrong.push(format!("{call} of {d} accepted"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn root_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/dtype_table"))
}

/// The generated root test matches this generator; `PHOBOS_BLESS=1`
/// rewrites it (and removes generated files no kernel needs any more).
#[test]
fn generated_root_test_is_current() {
    let kernels = render::kernels();
    let mut files = vec![("main.rs".to_string(), render::root_main(&kernels))];
    for k in &kernels {
        files.push((format!("{}.rs", k.name), render::root_module(k)));
    }
    let dir = root_dir();
    let bless = std::env::var("PHOBOS_BLESS").as_deref() == Ok("1");
    let mut stale = Vec::new();
    for (name, text) in &files {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            if bless {
                std::fs::write(&path, text).unwrap();
            } else {
                stale.push(name.clone());
            }
        }
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name != "support.rs" && !files.iter().any(|(n, _)| *n == name) {
            if bless {
                std::fs::remove_file(dir.join(&name)).unwrap();
            } else {
                stale.push(format!("{name} (no longer generated)"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "tests/dtype_table is stale ({stale:?}); regenerate with PHOBOS_BLESS=1 cargo test -p phobos-build --test dtype_table"
    );
}

/// Names in the first column of the SPEC.md table whose header starts with
/// `header`: every backticked word, up to a `(`.
fn spec_table_names(spec: &str, header: &str) -> Vec<String> {
    let mut lines = spec.lines().skip_while(|l| !l.starts_with(header)).skip(2);
    let mut names = Vec::new();
    while let Some(line) = lines.next().filter(|l| l.starts_with('|')) {
        let cell = line
            .split(" | ")
            .next()
            .unwrap_or("")
            .trim_start_matches('|');
        for (i, part) in cell.split('`').enumerate() {
            if i % 2 == 1 {
                let call = part.split('(').next().unwrap_or("");
                names.extend(call.split_whitespace().map(|w| w.replace("\\|", "|")));
            }
        }
    }
    names
}

#[test]
fn table_covers_every_operator_and_builtin_of_spec() {
    let spec = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../SPEC.md")).unwrap();
    let operators = spec_table_names(&spec, "| operators ");
    let builtins = spec_table_names(&spec, "| call |");
    assert!(
        operators.len() >= 20,
        "operator table not found: {operators:?}"
    );
    assert!(
        builtins.len() >= 35,
        "built-in table not found: {builtins:?}"
    );
    let spellings: Vec<&str> = ops().iter().map(|o| o.spelling).collect();
    // `dequant`, `qlevels` and `qscales` need quantized operands:
    // `quantized_operands_follow_spec`.
    let quantized_only = ["dequant", "qlevels", "qscales"];
    // `prefetch` has no value to type: `build-support/tests/prefetch.rs`.
    let untyped = ["prefetch"];
    let missing: Vec<&String> = operators
        .iter()
        .chain(&builtins)
        .filter(|n| {
            !spellings.contains(&n.as_str())
                && !quantized_only.contains(&n.as_str())
                && !untyped.contains(&n.as_str())
        })
        .collect();
    assert!(
        missing.is_empty(),
        "SPEC.md lists {missing:?}, which cases.rs does not cover"
    );
    for f in phobos_build::check::FUNCTION_NAMES {
        assert!(
            builtins.iter().any(|b| b == f),
            "built-in `{f}` is not in SPEC.md's table"
        );
    }
}

#[cfg(feature = "ptx")]
mod ptx {
    use super::render;
    use phobos_build::back::mlir::{compile_ptx, ptxas::Ptxas};
    use phobos_build::{Source, check_source};

    fn compile(k: &render::Kernel) -> Result<String, String> {
        let text = render::kernel_text(k, "");
        let module =
            check_source(&Source::file(format!("{}.ph", k.name), &text)).map_err(|e| e.render())?;
        let kernel = &module.kernels[0];
        compile_ptx(kernel, &kernel.default_config(), "sm_80", 32)
            .map(|v| v.ptx)
            .map_err(|e| e.to_string())
    }

    /// Every allowed combination, one kernel per op, through the MLIR back
    /// end and ptxas. Under `PHOBOS_REQUIRE_PTXAS=1` a missing ptxas fails.
    #[test]
    fn every_kernel_compiles_to_ptx_and_assembles() {
        let ptxas = Ptxas::detect().expect("ptxas runs");
        if ptxas.is_none() {
            assert!(
                !phobos_build::back::mlir::ptxas::required(),
                "{}",
                phobos_build::back::mlir::ptxas::MISSING_BUT_REQUIRED
            );
            eprintln!("note: no ptxas; the PTX is compiled but not assembled");
        }
        let kernels: Vec<_> = render::kernels()
            .into_iter()
            .filter(|k| !k.pending)
            .collect();
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let chunks: Vec<Vec<&render::Kernel>> = (0..threads)
            .map(|t| kernels.iter().skip(t).step_by(threads).collect())
            .collect();
        let failures: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = chunks
                .iter()
                .map(|chunk| {
                    let ptxas = ptxas.as_ref();
                    s.spawn(move || {
                        let mut bad = Vec::new();
                        for k in chunk {
                            match compile(k) {
                                Err(e) => bad.push(format!("{}: {e}", k.name)),
                                Ok(ptx) => {
                                    if let Some(p) = ptxas
                                        && let Err(e) = p.measure(&ptx, "sm_80", &k.name)
                                    {
                                        bad.push(format!("{}: ptxas: {e}", k.name));
                                    }
                                }
                            }
                        }
                        bad
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        assert!(kernels.len() > 60, "only {} kernels", kernels.len());
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// `cases::ptx_pending` lists what another change is implementing; the
    /// day the back end accepts it, this fails so the entry gets removed.
    #[test]
    fn pending_ptx_cases_are_still_refused() {
        for k in render::kernels().iter().filter(|k| k.pending) {
            assert!(
                compile(k).is_err(),
                "{} now compiles to PTX: delete its entry in cases::ptx_pending and regenerate",
                k.name
            );
        }
    }
}
