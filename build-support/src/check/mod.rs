//! The checker: AST to typed tile IR.
//!
//! It resolves names (locals, parameters, tensor dims, tune parameters,
//! built-ins), validates attributes and every autotune configuration,
//! infers dtypes (weak literals, widening) and symbolic shapes
//! (broadcasting), makes every conversion and broadcast explicit, and hands
//! the result to [`crate::ir::verify`].

mod attrs;
mod calls;
mod consts;
mod expr;
mod params;
mod slices;
mod stmt;
pub mod types;

pub use attrs::{KNOWN_ATTRIBUTES, tune_values};

use std::collections::HashMap;

use crate::diag::Diagnostic;
use crate::diag::suggest::{close_matches, did_you_mean};
use crate::front::ast;
use crate::ir::{self, Config, DType, Elem, LocalId, Shape};
use crate::span::Span;

/// Checks every kernel; errors of all kernels are returned together (the
/// first error of each kernel).
pub fn check_program(program: &ast::Program) -> Result<ir::Module, Vec<Diagnostic>> {
    let mut kernels = Vec::new();
    let mut errors = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for k in &program.kernels {
        if names.contains(&k.name.name.as_str()) {
            errors.push(Diagnostic::error(
                k.name.span,
                format!("a kernel named `{}` is already defined", k.name.name),
            ));
            continue;
        }
        names.push(&k.name.name);
        match check_kernel(k) {
            Ok(kernel) => kernels.push(kernel),
            Err(d) => errors.push(d),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let module = ir::Module { kernels };
    if let Err(e) = ir::verify(&module) {
        return Err(vec![Diagnostic::error(
            e.span,
            format!("internal compiler error: the checker produced invalid IR: {e}"),
        )]);
    }
    Ok(module)
}

/// Checks one kernel, stopping at its first error.
pub fn check_kernel(k: &ast::Kernel) -> Result<ir::Kernel, Diagnostic> {
    let mut cx = KernelChecker::new();
    cx.params(&k.params)?;
    let attrs = cx.attributes(&k.attrs)?;
    let grid = match attrs.grid {
        Some(g) => cx.grid(g)?,
        None => vec![ir::Expr {
            kind: ir::ExprKind::Int(1),
            elem: Elem::Scalar(DType::I32),
            shape: Shape::scalar(),
            span: k.name.span,
        }],
    };
    let body = cx.block(&k.body)?;
    let params = cx.finish_params();
    Ok(ir::Kernel {
        name: k.name.name.clone(),
        params,
        tune: cx.tune,
        grid,
        launch: attrs.launch,
        pipeline: attrs.pipeline,
        tensorcore: attrs.tensorcore,
        locals: cx.locals,
        body,
        span: k.span,
    })
}

/// What a name refers to in a kernel body.
#[derive(Clone, Debug)]
enum Binding {
    Local(LocalId),
    Scalar(DType),
    Tensor,
    Dim,
    Tune,
}

/// Per-kernel checking state.
struct KernelChecker {
    params: Vec<ir::Param>,
    /// Symbolic tensor dims, in order of appearance.
    dims: Vec<String>,
    tune: Vec<ir::TuneParam>,
    configs: Vec<Config>,
    locals: Vec<ir::Local>,
    scopes: Vec<HashMap<String, LocalId>>,
    /// Tensors stored to or atomically added into.
    written: Vec<String>,
    /// What each `let` local and loop variable is computed from (value;
    /// loop start and step), for block-alignment proofs.
    local_defs: HashMap<LocalId, Vec<ir::Expr>>,
}

impl KernelChecker {
    fn new() -> KernelChecker {
        KernelChecker {
            params: Vec::new(),
            dims: Vec::new(),
            tune: Vec::new(),
            configs: vec![Config::default()],
            locals: Vec::new(),
            scopes: vec![HashMap::new()],
            written: Vec::new(),
            local_defs: HashMap::new(),
        }
    }

    fn shapes(&self) -> types::Shapes<'_> {
        types::Shapes {
            configs: &self.configs,
        }
    }

    fn lookup(&self, name: &str) -> Option<Binding> {
        for scope in self.scopes.iter().rev() {
            if let Some(id) = scope.get(name) {
                return Some(Binding::Local(*id));
            }
        }
        if let Some(p) = self.params.iter().find(|p| p.name == name) {
            return Some(match p.kind {
                ir::ParamKind::Scalar { dtype } => Binding::Scalar(dtype),
                ir::ParamKind::Tensor { .. } => Binding::Tensor,
            });
        }
        if self.dims.iter().any(|d| d == name) {
            return Some(Binding::Dim);
        }
        if self.tune.iter().any(|t| t.name == name) {
            return Some(Binding::Tune);
        }
        None
    }

    /// Every name visible here, for "did you mean" help.
    fn visible_names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for scope in &self.scopes {
            out.extend(scope.keys().map(String::as_str));
        }
        out.extend(self.params.iter().map(|p| p.name.as_str()));
        out.extend(self.dims.iter().map(String::as_str));
        out.extend(self.tune.iter().map(|t| t.name.as_str()));
        out
    }

    fn unknown_name(&self, name: &str, span: Span, extra: &[&str]) -> Diagnostic {
        let mut candidates = self.visible_names();
        candidates.extend_from_slice(extra);
        let matches = close_matches(name, candidates);
        let d = Diagnostic::error(span, format!("unknown name `{name}`"));
        match did_you_mean(&matches) {
            Some(h) => d.with_help(h),
            None => d,
        }
    }

    fn tensor(&self, name: &str) -> Option<(Elem, &[ir::Dim])> {
        self.params.iter().find_map(|p| match &p.kind {
            ir::ParamKind::Tensor { elem, dims, .. } if p.name == name => {
                Some((*elem, dims.as_slice()))
            }
            _ => None,
        })
    }

    /// Declares a local in the innermost scope, renaming it when an outer
    /// local already uses the name so that IR names stay unique.
    fn declare(
        &mut self,
        name: &ast::Ident,
        elem: Elem,
        shape: Shape,
        mutable: bool,
    ) -> Result<LocalId, Diagnostic> {
        let what = match self.lookup(&name.name) {
            Some(Binding::Scalar(_) | Binding::Tensor) => Some("a kernel parameter"),
            Some(Binding::Dim) => Some("a tensor dim"),
            Some(Binding::Tune) => Some("a tune parameter"),
            _ => None,
        };
        if let Some(what) = what {
            return Err(Diagnostic::error(
                name.span,
                format!("`{}` is already {what}; choose another name", name.name),
            ));
        }
        let mut unique = name.name.clone();
        let mut n = 0;
        while self.locals.iter().any(|l| l.name == unique) {
            n += 1;
            unique = format!("{}_{n}", name.name);
        }
        let id = LocalId(self.locals.len() as u32);
        self.locals.push(ir::Local {
            name: unique,
            elem,
            shape,
            mutable,
        });
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.name.clone(), id);
        }
        Ok(id)
    }

    fn local(&self, id: LocalId) -> &ir::Local {
        // Ids are only made by `declare`, which pushes the local first.
        &self.locals[id.0 as usize]
    }

    fn finish_params(&mut self) -> Vec<ir::Param> {
        let mut params = std::mem::take(&mut self.params);
        for p in &mut params {
            if let ir::ParamKind::Tensor { written, .. } = &mut p.kind {
                *written = self.written.contains(&p.name);
            }
        }
        params
    }
}
