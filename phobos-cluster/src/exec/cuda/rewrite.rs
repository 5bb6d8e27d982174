//! What a CUDA pod changes in a kernel before compiling it: a supertile
//! is a box of programs starting at `lo`, launched as a grid of the box's
//! size, so `program_id(d)` becomes `program_id(d) + base_d` with three
//! `i32` parameters appended for the bases. Everything else (tensor
//! indexing in global coordinates, masks at the tensors' extents) stays:
//! each tensor is passed as a pointer placed so that its buffer region's
//! first element sits at the region's global coordinates.

use phobos_build::ir::{
    BinOp, Builtin, Dim, Elem, Expr, ExprKind, Kernel, Param, ParamKind, visit,
};
use phobos_rt::DType;
use phobos_rt::artifact::{AbiParam, AbiParamKind};

/// Names of the appended program-id bases (the language has no `__`
/// identifiers, so they cannot clash with a kernel's own names).
pub const PID_BASES: [&str; 3] = [
    "__phobos_pid_base0",
    "__phobos_pid_base1",
    "__phobos_pid_base2",
];

/// `kernel` with every `program_id(d)` offset by the parameter
/// `PID_BASES[d]` (appended, `i32`).
pub fn with_program_bases(kernel: &Kernel) -> Kernel {
    let mut out = kernel.clone();
    for name in PID_BASES {
        out.params.push(Param {
            name: name.to_string(),
            kind: ParamKind::Scalar { dtype: DType::I32 },
            span: kernel.span,
        });
    }
    visit::exprs_mut(&mut out.body, &mut |e: &mut Expr| {
        let ExprKind::Call {
            func: Builtin::ProgramId,
            args,
        } = &e.kind
        else {
            return;
        };
        let axis = match args.first().map(|a| &a.kind) {
            Some(ExprKind::Int(axis)) => (*axis).clamp(0, 2) as usize,
            _ => 0,
        };
        let base = Expr {
            kind: ExprKind::Param(PID_BASES[axis].to_string()),
            elem: e.elem,
            shape: e.shape.clone(),
            span: e.span,
        };
        let call = e.clone();
        e.kind = ExprKind::Binary {
            op: BinOp::Add,
            lhs: Box::new(call),
            rhs: Box::new(base),
        };
    });
    out
}

/// The parameter ABI of `kernel` (as `kernel!` writes it into an
/// artifact), for a kernel compiled at run time; names leak once per
/// compiled kernel (a pod compiles one).
pub fn abi_params(kernel: &Kernel) -> Result<Vec<AbiParam>, String> {
    kernel
        .params
        .iter()
        .map(|p| {
            let kind = match &p.kind {
                ParamKind::Tensor {
                    elem: Elem::Scalar(dtype),
                    dims,
                    written,
                } => AbiParamKind::Pointer {
                    elem: dtype.name(),
                    dims: leak_slice(
                        dims.iter()
                            .map(|d| match d {
                                Dim::Sym(s) => leak(s.clone()),
                                Dim::Lit(v) => leak(v.to_string()),
                            })
                            .collect(),
                    ),
                    written: *written,
                },
                ParamKind::Tensor { elem, .. } => {
                    return Err(format!(
                        "parameter `{}` is a {elem} tensor; CUDA pods run plain-element tensors only",
                        p.name
                    ));
                }
                ParamKind::Scalar { dtype } => AbiParamKind::Value {
                    dtype: dtype.name(),
                },
            };
            Ok(AbiParam {
                name: leak(p.name.clone()),
                kind,
            })
        })
        .collect()
}

pub(super) fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

pub(super) fn leak_slice<T>(v: Vec<T>) -> &'static [T] {
    Box::leak(v.into_boxed_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::{Program, Val};
    use crate::store::{Fill, HostTensor, init_tensor, read_tensor};

    fn gemm() -> Kernel {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/kernels/gemm_f32.ph");
        let text = std::fs::read_to_string(&path).unwrap();
        let source = phobos_build::Source::file(path.display().to_string(), text);
        phobos_build::check_source(&source)
            .unwrap()
            .kernels
            .remove(0)
    }

    /// The rewritten kernel, launched over a box with its base as the
    /// parameters, computes what the original computes over that box of
    /// the whole grid: run both through the interpreter.
    #[test]
    fn program_bases_shift_the_box() {
        let kernel = gemm();
        let rewritten = with_program_bases(&kernel);
        phobos_build::ir::verify::verify_kernel(&rewritten).unwrap();
        assert_eq!(rewritten.params.len(), kernel.params.len() + 3);
        let config = kernel.default_config();
        let d = std::env::temp_dir().join(format!("phobos-rewrite-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let (m, n, k) = (100, 70, 20);
        for (name, shape, seed) in [("A", [m, k], 1), ("B", [k, n], 2), ("C", [m, n], 3)] {
            init_tensor(&d.join(name), DType::F32, &shape, Fill::Random { seed }).unwrap();
        }
        let read =
            |name: &str, shape: &[usize]| read_tensor(&d.join(name), DType::F32, shape).unwrap();
        let c0 = read("C", &[m, n]).to_le_bytes().unwrap();
        let dims: std::collections::BTreeMap<String, usize> = [("M", m), ("N", n), ("K", k)]
            .map(|(d, v)| (d.to_string(), v))
            .into();
        let (lo, hi) = ([1, 1, 0], [3, 2, 1]);
        let run = |kernel: &Kernel, extra: &[(&str, Val)], lo: [usize; 3], hi: [usize; 3]| {
            let (mut a, mut b, mut c) =
                (read("A", &[m, k]), read("B", &[k, n]), read("C", &[m, n]));
            let mut scalars = vec![
                ("alpha", Val::float_scalar(DType::F32, 1.5)),
                ("beta", Val::float_scalar(DType::F32, 0.5)),
            ];
            scalars.extend(extra.iter().cloned());
            let tensors: Vec<(&str, &mut HostTensor, Vec<usize>)> = vec![
                ("A", &mut a, vec![0, 0]),
                ("B", &mut b, vec![0, 0]),
                ("C", &mut c, vec![0, 0]),
            ];
            Program::with_regions(kernel, &config, &dims, tensors, &scalars)
                .unwrap()
                .run_block(lo, hi)
                .unwrap();
            c.to_le_bytes().unwrap()
        };
        let expected = run(&kernel, &[], lo, hi);
        let bases: Vec<(&str, Val)> = (0..3)
            .map(|i| (PID_BASES[i], Val::int_scalar(DType::I32, lo[i] as i64)))
            .collect();
        let shifted = run(
            &rewritten,
            &bases,
            [0; 3],
            [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]],
        );
        assert!(expected == shifted);
        assert!(expected != c0, "the box wrote nothing");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn abi_matches_what_the_macro_embeds() {
        let kernel = gemm();
        let abi = abi_params(&kernel).unwrap();
        let embedded = phobos_examples::kernels::gemm_f32::ARTIFACT.params;
        assert_eq!(abi.as_slice(), embedded);
    }
}
