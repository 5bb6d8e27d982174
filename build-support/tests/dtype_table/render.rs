//! Renders the dtype table: kernel text per operator (shared by the
//! checker, PTX and `kernel!` sides) and the generated root test
//! `tests/dtype_table/` that runs every kernel on the host.

use std::collections::BTreeMap;

use super::cases::{Form, Op, Typing, ops, ptx_pending};
use phobos_build::ir::DType;

/// One allowed combination inside a kernel: its operand dtypes, typing and
/// its row in the output of its result dtype.
pub struct Case {
    pub args: Vec<DType>,
    pub typing: Typing,
    pub row: usize,
}

/// One kernel: the allowed cases of one op (the PTX-pending ones apart).
pub struct Kernel {
    pub name: String,
    pub op: Op,
    pub pending: bool,
    pub cases: Vec<Case>,
    /// Rows per result dtype.
    pub rows: BTreeMap<DType, usize>,
}

/// Cases per kernel at most. One op's cases (up to 144) made one kernel
/// of up to 288 statements: rustc's borrow check and LLVM slow down more
/// than linearly with function size, and at opt-level 0 (the facade's
/// test profile) such a program's frame overflowed a test thread's 2 MiB
/// stack. Ops with more cases get several kernels, `NAME_1`, `NAME_2`, ...
pub const MAX_CASES_PER_KERNEL: usize = 24;

pub fn kernels() -> Vec<Kernel> {
    let mut out = Vec::new();
    for op in ops() {
        for pending in [false, true] {
            let allowed: Vec<_> = op
                .allowed()
                .into_iter()
                .filter(|(_, typing)| ptx_pending(&op, *typing).is_some() == pending)
                .collect();
            let parts = allowed.len().div_ceil(MAX_CASES_PER_KERNEL);
            for (part, chunk) in allowed.chunks(MAX_CASES_PER_KERNEL).enumerate() {
                let mut rows: BTreeMap<DType, usize> = BTreeMap::new();
                let mut cases = Vec::new();
                for (args, typing) in chunk {
                    let r = rows.entry(out_dtype(&op, args, *typing)).or_default();
                    cases.push(Case {
                        args: args.clone(),
                        typing: *typing,
                        row: *r,
                    });
                    *r += 1;
                }
                // `where_` (a keyword otherwise) loses its `_` before a suffix.
                let mut suffix = String::new();
                if pending {
                    suffix += "_ptx_pending";
                }
                if parts > 1 {
                    suffix += &format!("_{}", part + 1);
                }
                let name = if suffix.is_empty() {
                    op.name.to_string()
                } else {
                    format!("{}{suffix}", op.name.trim_end_matches('_'))
                };
                out.push(Kernel {
                    name,
                    op,
                    pending,
                    cases,
                    rows,
                });
            }
        }
    }
    out
}

/// The output tensor a case writes: its result dtype (for `atomic_add`, the
/// tensor it adds into).
fn out_dtype(op: &Op, args: &[DType], typing: Typing) -> DType {
    match op.form {
        Form::AtomicAdd => args[0],
        _ => typing.result,
    }
}

fn tile(role: &str, d: DType) -> String {
    match role {
        "x" | "y" => format!("{role}_{d}[0 :+ 4]"),
        _ => format!("{role}_{d}[:, :]"),
    }
}

fn scalar(role: &str, d: DType) -> String {
    format!("{role}_{d}[1]")
}

/// The expression of a case (`None` for the `atomic_add` statement); `tile`
/// picks the tile or the rank-0 form of elementwise ops.
pub fn expr(op: &Op, args: &[DType], tile_form: bool) -> Option<String> {
    let v = |role: &str, d: DType| {
        if tile_form {
            tile(role, d)
        } else {
            scalar(role, d)
        }
    };
    Some(match op.form {
        Form::Binary(s) => format!("{} {s} {}", v("x", args[0]), v("y", args[1])),
        Form::Unary(s) => format!("{s}{}", v("x", args[0])),
        Form::Call1(f) => format!("{f}({})", v("x", args[0])),
        Form::Call2(f) => format!("{f}({}, {})", v("x", args[0]), v("y", args[1])),
        Form::Where => format!(
            "where({}, {}, {})",
            v("x", DType::Bool),
            v("x", args[0]),
            v("y", args[1])
        ),
        Form::Cast(t) => format!("{t}({})", v("x", args[0])),
        Form::RowReduce(f) | Form::Reduce(f) | Form::Layout(f) => {
            format!("{f}({})", tile("p", args[0]))
        }
        Form::Reshape => format!("reshape({}, 2, 8)", tile("p", args[0])),
        Form::Contract(f) => format!("{f}({}, {})", tile("p", args[0]), tile("q", args[1])),
        Form::Load => format!(
            "load(x_{}[program_id(0) + 2 :+ 4], y_{}[0])",
            args[0], args[1]
        ),
        Form::AtomicAdd => return None,
        Form::Nullary(s) => s.to_string(),
    })
}

/// The tensor parameters a case reads, as (role, dtype).
fn inputs(op: &Op, args: &[DType]) -> Vec<(&'static str, DType)> {
    match op.form {
        Form::Binary(_) | Form::Call2(_) | Form::Load => vec![("x", args[0]), ("y", args[1])],
        Form::Where => vec![("x", DType::Bool), ("x", args[0]), ("y", args[1])],
        Form::Unary(_) | Form::Call1(_) | Form::Cast(_) => vec![("x", args[0])],
        Form::AtomicAdd => vec![("x", args[1])],
        Form::RowReduce(_) | Form::Reduce(_) | Form::Layout(_) | Form::Reshape => {
            vec![("p", args[0])]
        }
        Form::Contract(_) => vec![("p", args[0]), ("q", args[1])],
        Form::Nullary(_) => vec![],
    }
}

fn param_type(role: &str, d: DType) -> String {
    match role {
        "x" | "y" => format!("tensor<{d}>[4]"),
        _ => format!("tensor<{d}>[4, 4]"),
    }
}

/// `(x_i8: tensor<i8>[4], ...)` for a set of inputs, in role then dtype order.
fn params(mut ins: Vec<(&'static str, DType)>) -> Vec<(String, String)> {
    ins.sort();
    ins.dedup();
    ins.into_iter()
        .map(|(role, d)| (format!("{role}_{d}"), param_type(role, d)))
        .collect()
}

/// A kernel with one statement, `let v = EXPR` (or the `atomic_add`), for
/// the checker's typing of one combination; also returns the byte range of
/// the expression in the text.
pub fn single(op: &Op, args: &[DType]) -> (String, std::ops::Range<usize>) {
    let mut ps = params(inputs(op, args));
    let body = match expr(op, args, true) {
        Some(e) => format!("let v = {e}"),
        None => {
            ps.push((
                format!("o_{}", args[0]),
                format!("tensor<{}>[1, 4, 8]", args[0]),
            ));
            format!(
                "atomic_add(o_{}[0, 0, 0 :+ 4], x_{}[0 :+ 4])",
                args[0], args[1]
            )
        }
    };
    let ps: Vec<String> = ps.iter().map(|(n, t)| format!("{n}: {t}")).collect();
    let head = format!("kernel t({}) {{\n    ", ps.join(", "));
    let start = head.len() + if body.starts_with("let v = ") { 8 } else { 0 };
    let text = format!("{head}{body}\n}}\n");
    (text, start..head.len() + body.len())
}

/// The kernel source of a [`Kernel`]: every case stores into row `k` of the
/// output of its result dtype.
pub fn kernel_text(k: &Kernel, indent: &str) -> String {
    let mut ins = Vec::new();
    for c in &k.cases {
        ins.extend(inputs(&k.op, &c.args));
    }
    let mut ps: Vec<String> = params(ins)
        .into_iter()
        .map(|(n, t)| format!("{n}: {t}"))
        .collect();
    for (d, rows) in &k.rows {
        ps.push(format!("o_{d}: tensor<{d}>[{rows}, 4, 8]"));
    }
    let mut s = format!("{indent}kernel {}(\n", k.name);
    for p in ps {
        s += &format!("{indent}    {p},\n");
    }
    s += &format!("{indent}) {{\n");
    for c in &k.cases {
        let o = format!("o_{}", out_dtype(&k.op, &c.args, c.typing));
        let r = c.row;
        let lines = match k.op.form {
            Form::AtomicAdd => vec![
                format!("atomic_add({o}[{r}, 0, 0 :+ 4], x_{}[0 :+ 4])", c.args[1]),
                format!("atomic_add({o}[{r}, 1, 0], x_{}[1])", c.args[1]),
            ],
            f => {
                let e = expr(&k.op, &c.args, true).unwrap_or_default();
                let target = match f {
                    Form::Nullary("arange(4)") | Form::Load => format!("{o}[{r}, 0, 0 :+ 4]"),
                    Form::Nullary(_) | Form::Reduce(_) => format!("{o}[{r}, 0, 0]"),
                    Form::RowReduce(_) => format!("{o}[{r}, :, 0 :+ 1]"),
                    Form::Layout(_) | Form::Contract(_) => format!("{o}[{r}, :, 0 :+ 4]"),
                    Form::Reshape => format!("{o}[{r}, 0 :+ 2, :]"),
                    _ => format!("{o}[{r}, 0, 0 :+ 4]"),
                };
                let mut v = vec![format!("{target} = {e}")];
                if f.elementwise() {
                    let e = expr(&k.op, &c.args, false).unwrap_or_default();
                    v.push(format!("{o}[{r}, 1, 0] = {e}"));
                }
                v
            }
        };
        for l in lines {
            s += &format!("{indent}    {l}\n");
        }
    }
    s += &format!("{indent}}}\n");
    s
}

/// Rust type of a dtype.
fn rust(d: DType) -> &'static str {
    d.name()
}

/// Plain Rust for element `i` of an elementwise case (operands `a`, `b`
/// already converted to the compute type).
fn plain_elementwise(op: &Op, c: &Case) -> (String, f64) {
    let (p, r) = (rust(c.typing.compute), rust(c.typing.result));
    let a = |role: &str, d: DType| format!("conv::<{0}, {p}>({0}::{role}()[i])", rust(d));
    let a0 = || a("x", c.args[0]);
    let a1 = || a("y", c.args[1]);
    let bin = |f: &str| (format!("{f}({}, {})", a0(), a1()), 0.0);
    match op.form {
        Form::Binary(s) => match s {
            "+" => bin("Num::add"),
            "-" => bin("Num::sub"),
            "*" => bin("Num::mul"),
            "/" => bin("Num::div"),
            "%" => bin("Num::rem"),
            "<<" => bin("Int::shl"),
            ">>" => bin("Int::shr"),
            "&" | "&&" => bin("Bits::and"),
            "|" | "||" => bin("Bits::or"),
            "^" => bin("Bits::xor"),
            cmp => (format!("{} {cmp} {}", a0(), a1()), 0.0),
        },
        Form::Unary("-") => (format!("Num::neg({})", a0()), 0.0),
        Form::Unary(_) => (format!("Bits::not({})", a0()), 0.0),
        Form::Call1("abs") => (format!("Num::abs({})", a0()), 0.0),
        Form::Call1(f) => (format!("Float::math({}, {f:?})", a0()), 4.0),
        Form::Call2("min") => bin("Num::min"),
        Form::Call2("max") => bin("Num::max"),
        Form::Call2(_) => bin("Int::cdiv"),
        Form::Where => (
            format!("if bool::x()[i] {{ {} }} else {{ {} }}", a0(), a1()),
            0.0,
        ),
        Form::Cast(_) => (
            format!("conv::<{0}, {r}>({0}::x()[i])", rust(c.args[0])),
            0.0,
        ),
        Form::AtomicAdd => (
            format!("conv::<{0}, {r}>({0}::x()[i])", rust(c.args[1])),
            0.0,
        ),
        _ => unreachable!("not elementwise"),
    }
}

/// The Rust statement that records a case's expected cells in `w_<dtype>`.
fn want(k: &Kernel, c: &Case) -> String {
    let (p, r) = (rust(c.typing.compute), rust(c.typing.result));
    let a = rust(c.args.first().copied().unwrap_or(DType::I32));
    let what = match expr(&k.op, &c.args, true) {
        Some(e) => e,
        None => format!("atomic_add(o_{a}, x_{})", c.args[1]),
    };
    let w = format!("w_{}", out_dtype(&k.op, &c.args, c.typing));
    let row = c.row;
    let to_r = format!("map16({a}::p(), conv::<{a}, {r}>)");
    match k.op.form {
        f if f.elementwise() || f == Form::AtomicAdd => {
            let (e, ulps) = plain_elementwise(&k.op, c);
            format!("{w}.elementwise({what:?}, {ulps:?}, {row}, |i| {e});")
        }
        Form::Load => format!(
            "{w}.matrix({what:?}, 0.0, {row}, 8, &std::array::from_fn::<{a}, 4, _>(|i| if i < 2 {{ {a}::x()[i + 2] }} else {{ conv::<{b}, {a}>({b}::y()[0]) }}));",
            b = rust(c.args[1])
        ),
        Form::Nullary("program_id(0)") => format!("{w}.set({what:?}, 0.0, {row}, 0, 0, 0);"),
        Form::Nullary("num_programs(0)") => format!("{w}.set({what:?}, 0.0, {row}, 0, 0, 1);"),
        Form::Nullary(_) => format!("{w}.matrix({what:?}, 0.0, {row}, 8, &[0, 1, 2, 3]);"),
        Form::Reduce(f) => {
            let fold = match f {
                "sum" => format!("{to_r}.into_iter().fold(<{r} as Num>::zero(), Num::add)"),
                "max" => format!("all(&{a}::p(), maxv)"),
                _ => format!("all(&{a}::p(), minv)"),
            };
            format!("{w}.set({what:?}, 0.0, {row}, 0, 0, {fold});")
        }
        Form::RowReduce(f) => {
            let fold = match f {
                "rowsum" => format!("rowwise(&{to_r}, <{r} as Num>::zero(), Num::add)"),
                "rowmax" => format!("rows(&{a}::p(), maxv)"),
                _ => format!("rows(&{a}::p(), minv)"),
            };
            format!("{w}.matrix({what:?}, 0.0, {row}, 1, &{fold});")
        }
        Form::Layout(f) => {
            let v = match f {
                "transpose" => format!("transpose(&{a}::p())"),
                "tril" => format!("tril(&{a}::p(), conv::<i32, {a}>(0))"),
                _ => format!("cumsum(&{to_r})"),
            };
            format!("{w}.matrix({what:?}, 0.0, {row}, 4, &{v});")
        }
        Form::Reshape => format!("{w}.matrix({what:?}, 0.0, {row}, 8, &{a}::p());"),
        Form::Contract(f) => {
            let b = rust(c.args[1]);
            format!(
                "{w}.matrix({what:?}, 0.0, {row}, 4, &contract(&map16({a}::p(), |v| conv::<{p}, {r}>(conv::<{a}, {p}>(v))), &map16({b}::q(), |v| conv::<{p}, {r}>(conv::<{b}, {p}>(v))), {}));",
                f == "dot_t"
            )
        }
        _ => unreachable!("every form is handled above"),
    }
}

pub const HEADER: &str = "// GENERATED by `PHOBOS_BLESS=1 cargo test -p phobos-build --test dtype_table`\n// from build-support/tests/dtype_table/{cases,render}.rs. Do not edit:\n// change the generator and regenerate (the test fails while this is stale).\n";

/// One generated root test module: the kernel and the host test of it.
pub fn root_module(k: &Kernel) -> String {
    let mut s = String::from(HEADER);
    s += &format!(
        "//! `{}`: every dtype combination SPEC.md allows, through `kernel!` on the host.\n\n",
        k.op.spelling
    );
    if k.pending {
        let why = k
            .cases
            .first()
            .and_then(|c| ptx_pending(&k.op, c.typing))
            .unwrap_or_default();
        s += &format!(
            "// PTX pending (`cases::ptx_pending`: {why}): the MLIR emitter does\n// not lower it yet.\n"
        );
    }
    s += "#![allow(clippy::all, unused_imports)]\n\nuse crate::support::*;\nuse phobos::{Device, bf16, f16};\n\nphobos::kernel! {\n";
    s += &kernel_text(k, "    ");
    s += "}\n\n#[test]\nfn host_matches_plain_rust() {\n    let d = Device::host();\n";
    let mut ins = Vec::new();
    for c in &k.cases {
        ins.extend(inputs(&k.op, &c.args));
    }
    ins.sort();
    ins.dedup();
    let mut args = Vec::new();
    for (role, dt) in &ins {
        s += &format!("    let {role}_{dt} = {role}::<{}>(&d);\n", rust(*dt));
        args.push(format!("&{role}_{dt}"));
    }
    for (dt, rows) in &k.rows {
        s += &format!(
            "    let mut o_{dt} = out::<{}>(&d, {rows});\n    let mut w_{dt} = Want::<{}>::new({rows});\n",
            rust(*dt),
            rust(*dt)
        );
        args.push(format!("&mut o_{dt}"));
    }
    s += &format!(
        "    {}::launch(&d, {}).expect(\"launch\");\n",
        k.name,
        args.join(", ")
    );
    for c in &k.cases {
        s += &format!("    {}\n", want(k, c));
    }
    for dt in k.rows.keys() {
        s += &format!("    w_{dt}.check(&o_{dt});\n");
    }
    s += "}\n";
    s
}

/// `tests/dtype_table/main.rs`.
pub fn root_main(ks: &[Kernel]) -> String {
    let mut s = String::from(HEADER);
    s += "//! Every operator and built-in of SPEC.md with every dtype combination it\n//! allows, through `phobos::kernel!` and the host back end, against plain\n//! Rust (`support.rs`). The checker's typing, the forbidden combinations\n//! and the PTX back end are checked by build-support's `dtype_table` test,\n//! which generates these files.\n//!\n//! Host only: the kernels' PTX is what that test checks, and building\n//! them with embedded PTX too (in clippy's pass and the test build)\n//! tripled the cost of the largest test crate for nothing that test\n//! does not check. `make test` runs this suite in its\n//! `--no-default-features` pass.\n#![cfg(not(feature = \"ptx\"))]\n\nmod support;\n\n";
    for k in ks {
        // Generated: formatted by this generator, not by rustfmt.
        s += &format!("#[rustfmt::skip]\nmod {};\n", k.name);
    }
    s
}
