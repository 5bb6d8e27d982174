//! The checker: AST to typed tile IR.
//!
//! It resolves names (locals, parameters, tensor dims, tune parameters,
//! built-ins), validates attributes and every autotune configuration,
//! infers dtypes (weak literals, widening) and symbolic shapes
//! (broadcasting), makes every conversion and broadcast explicit, and hands
//! the result to [`crate::ir::verify()`].

mod attrs;
mod calls;
mod consts;
mod expr;
mod params;
mod slices;
mod stmt;
pub mod types;

pub use attrs::{KNOWN_ATTRIBUTES, tune_values};
pub use calls::FUNCTION_NAMES;

use std::collections::HashMap;

use crate::diag::Diagnostic;
use crate::diag::suggest::{close_matches, did_you_mean};
use crate::front::ast;
use crate::ir::{self, Config, DType, Elem, LocalId, Shape};
use crate::span::Span;

/// Checks every kernel; errors of all kernels are returned together.
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
            Err(mut d) => errors.append(&mut d),
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

/// Most errors reported for one kernel; later ones are often consequences.
const MAX_ERRORS_PER_KERNEL: usize = 20;

/// Checks one kernel. A parameter or attribute error stops the check; in
/// the body each failing statement is reported and checking goes on with
/// the next (uses of a local whose declaration failed are not reported
/// again).
pub fn check_kernel(k: &ast::Kernel) -> Result<ir::Kernel, Vec<Diagnostic>> {
    let mut cx = KernelChecker::new();
    cx.params(&k.params).map_err(|d| vec![d])?;
    let attrs = cx.attributes(&k.attrs).map_err(|d| vec![d])?;
    let grid = match attrs.grid {
        Some(g) => cx.grid(g).map_err(|d| vec![d])?,
        None => vec![ir::Expr {
            kind: ir::ExprKind::Int(1),
            elem: Elem::Scalar(DType::I32),
            shape: Shape::scalar(),
            span: k.name.span,
        }],
    };
    let body = cx.block(&k.body);
    if !cx.errors.is_empty() {
        cx.errors.truncate(MAX_ERRORS_PER_KERNEL);
        return Err(cx.errors);
    }
    let body = body.map_err(|d| vec![d])?;
    let params = cx.finish_params();
    Ok(ir::Kernel {
        name: k.name.name.clone(),
        params,
        tune: cx.tune,
        grid,
        launch: attrs.launch,
        pipeline: attrs.pipeline,
        tensorcore: attrs.tensorcore,
        host_impl: attrs.host_impl,
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
    /// A local whose declaration failed; uses are not reported again.
    Poisoned,
}

/// The message of an error that only repeats an earlier one (a use of a
/// poisoned local); statement recovery drops these.
const REPEATED_ERROR: &str = "\u{0}repeated";

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
    /// Errors of statements checked so far.
    errors: Vec<Diagnostic>,
    /// Names whose `let`/`var` failed, per scope like `scopes`.
    poisoned: Vec<Vec<String>>,
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
            errors: Vec::new(),
            poisoned: vec![Vec::new()],
        }
    }

    fn shapes(&self) -> types::Shapes<'_> {
        types::Shapes {
            configs: &self.configs,
        }
    }

    /// Opens a block scope (locals and poisoned names move together).
    fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
        self.poisoned.push(Vec::new());
    }

    fn pop_scope(&mut self) {
        self.scopes.pop();
        self.poisoned.pop();
    }

    fn lookup(&self, name: &str) -> Option<Binding> {
        for (scope, poisoned) in self.scopes.iter().zip(&self.poisoned).rev() {
            if poisoned.iter().any(|p| p == name) {
                return Some(Binding::Poisoned);
            }
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
        if let Some(Binding::Poisoned) = self.lookup(name) {
            return Diagnostic::error(span, REPEATED_ERROR);
        }
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
        if let Some(poisoned) = self.poisoned.last_mut() {
            poisoned.retain(|p| p != &name.name);
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
