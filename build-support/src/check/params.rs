//! Kernel parameters and type names.

use super::KernelChecker;
use crate::diag::Diagnostic;
use crate::diag::suggest::{close_matches, did_you_mean};
use crate::front::ast;
use crate::ir::{self, DType, Elem, QuantType};

/// The scalar dtype a type name spells, or an error listing close names.
pub(super) fn scalar_dtype(name: &ast::Ident) -> Result<DType, Diagnostic> {
    if let Some(d) = DType::from_name(&name.name) {
        return Ok(d);
    }
    if QuantType::from_name(&name.name).is_some() {
        return Err(Diagnostic::error(
            name.span,
            format!(
                "quantized type `{}` is only allowed as a tensor element type",
                name.name
            ),
        )
        .with_help("slice a `tensor<q..>` and use `dot`, `dot_t` or `dequant` on the tile"));
    }
    Err(unknown_type(name, DType::ALL.iter().map(|d| d.name())))
}

/// A tensor element type: a scalar dtype or a quantized format.
pub(super) fn elem_type(name: &ast::Ident) -> Result<Elem, Diagnostic> {
    Elem::from_name(&name.name).ok_or_else(|| {
        unknown_type(
            name,
            DType::ALL
                .iter()
                .map(|d| d.name())
                .chain(QuantType::ALL.iter().map(|q| q.name())),
        )
    })
}

fn unknown_type<'a>(name: &ast::Ident, known: impl Iterator<Item = &'a str>) -> Diagnostic {
    let known: Vec<&str> = known.collect();
    let d = Diagnostic::error(name.span, format!("unknown type `{}`", name.name)).with_note(
        format!("scalar types: {}", DType::ALL.map(|d| d.name()).join(" ")),
    );
    match did_you_mean(&close_matches(&name.name, known)) {
        Some(h) => d.with_help(h),
        None => d,
    }
}

impl KernelChecker {
    pub(super) fn params(&mut self, params: &[ast::Param]) -> Result<(), Diagnostic> {
        for p in params {
            if self.params.iter().any(|q| q.name == p.name.name) || self.dims.contains(&p.name.name)
            {
                return Err(Diagnostic::error(
                    p.name.span,
                    format!(
                        "`{}` is already declared in this parameter list",
                        p.name.name
                    ),
                ));
            }
            let kind = match &p.ty.kind {
                ast::TypeKind::Scalar(name) => ir::ParamKind::Scalar {
                    dtype: scalar_dtype(name)?,
                },
                ast::TypeKind::Tensor { elem, dims } => {
                    let elem = elem_type(elem)?;
                    let mut out = Vec::with_capacity(dims.len());
                    for d in dims {
                        out.push(self.tensor_dim(d)?);
                    }
                    ir::ParamKind::Tensor {
                        elem,
                        dims: out,
                        written: false,
                    }
                }
                ast::TypeKind::Tile { .. } => {
                    return Err(Diagnostic::error(
                        p.ty.span,
                        "a parameter cannot be a tile: parameters are tensors (`tensor<f32>[M, N]`) or scalars (`f32`)",
                    ));
                }
            };
            self.params.push(ir::Param {
                name: p.name.name.clone(),
                kind,
                span: p.span,
            });
        }
        Ok(())
    }

    fn tensor_dim(&mut self, d: &ast::Expr) -> Result<ir::Dim, Diagnostic> {
        match &d.kind {
            ast::ExprKind::Name(name) => {
                if self.params.iter().any(|p| &p.name == name) {
                    return Err(Diagnostic::error(
                        d.span,
                        format!("`{name}` is a parameter, so it cannot also name a tensor dim"),
                    ));
                }
                if !self.dims.contains(name) {
                    self.dims.push(name.clone());
                }
                Ok(ir::Dim::Sym(name.clone()))
            }
            ast::ExprKind::Int(v) if *v > 0 => Ok(ir::Dim::Lit(*v)),
            _ => Err(Diagnostic::error(
                d.span,
                "a tensor dim must be a name bound at launch (`M`) or a positive integer literal",
            )),
        }
    }
}
