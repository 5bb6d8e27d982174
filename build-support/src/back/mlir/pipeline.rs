//! MLIR text -> PTX: parse and verify with melior, lower through the GPU and
//! NVVM dialects, and serialize with the NVVM target's own NVPTX back end
//! (`gpu-module-to-binary{format=isa}`), which needs no CUDA toolkit.

use std::{cell::RefCell, rc::Rc};

use melior::{
    Context,
    dialect::DialectRegistry,
    ir::{
        BlockLike, Module,
        attribute::ArrayAttribute,
        operation::{OperationLike, OperationRef},
    },
    pass::PassManager,
    utility::{
        parse_pass_pipeline, register_all_dialects, register_all_llvm_translations,
        register_all_passes,
    },
};

use super::{MlirError, target::Target};

/// The environment variable that makes every phase print its IR to stderr.
pub const PRINT_PHASES_ENV: &str = "PHOBOS_PRINT_PHASES";

/// One step of the lowering, run as its own pass pipeline so that
/// `PHOBOS_PRINT_PHASES=1` can show the IR between steps.
struct Phase {
    name: &'static str,
    pipeline: String,
}

/// The pass pipeline for `target`, as phases in order. A module with
/// `nvgpu` ops (`@tensorcore`'s mma.sync/ldmatrix, `@pipeline`'s async
/// copies on sm_80+) also runs `convert-nvgpu-to-nvvm` and
/// `convert-vector-to-llvm` (mma fragments are vectors). That conversion
/// always lowers `index` to 64 bits (it has no index-bitwidth option and
/// ignores DLTI), and the memref descriptors it builds must match those of
/// `convert-gpu-to-nvvm`, so such a module is lowered with a 64-bit `index`
/// throughout. `index` only addresses shared and private buffers; tensor
/// offsets keep the variant's own width, computed by the emitter.
fn phases(target: &Target, uses_nvgpu: bool) -> Vec<Phase> {
    let lower = if uses_nvgpu {
        "convert-scf-to-cf, convert-nvgpu-to-nvvm, convert-gpu-to-nvvm{index-bitwidth=64}, \
         convert-vector-to-llvm, canonicalize, cse, reconcile-unrealized-casts"
            .to_string()
    } else {
        format!(
            "convert-scf-to-cf, convert-gpu-to-nvvm{{index-bitwidth={}}}, canonicalize, cse, \
             reconcile-unrealized-casts",
            target.index_bits
        )
    };
    vec![
        Phase {
            name: "attach-target",
            pipeline: format!(
                "builtin.module(nvvm-attach-target{{chip={} features=+ptx{} O=3}})",
                target.chip, target.ptx_isa
            ),
        },
        Phase {
            name: "lower-to-nvvm",
            pipeline: format!("builtin.module(gpu.module({lower}))"),
        },
        Phase {
            name: "serialize-ptx",
            pipeline: "builtin.module(gpu-module-to-binary{format=isa})".to_string(),
        },
    ]
}

/// The whole pipeline as one `mlir-opt --pass-pipeline` string (for docs,
/// reports and reproducing a failure by hand); `uses_nvgpu` as for a
/// module with `nvgpu` ops.
pub fn pipeline_description(target: &Target, uses_nvgpu: bool) -> String {
    phases(target, uses_nvgpu)
        .iter()
        .map(|p| p.pipeline.clone())
        .collect::<Vec<_>>()
        .join(" ; ")
}

fn new_context() -> Context {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    let context = Context::new();
    context.append_dialect_registry(&registry);
    context.load_all_available_dialects();
    register_all_llvm_translations(&context);
    register_all_passes();
    context
}

/// Parses `module_text` (one `gpu.module` inside a `gpu.container_module`),
/// lowers it for `target` and returns the PTX assembly of its first binary.
/// With `PHOBOS_PRINT_PHASES=1` the IR after each phase goes to stderr.
pub fn mlir_to_ptx(module_text: &str, target: &Target) -> Result<String, MlirError> {
    if std::env::var(PRINT_PHASES_ENV).is_ok_and(|v| v == "1") {
        mlir_to_ptx_observed(module_text, target, &mut |phase, ir| {
            eprintln!("// ----- phase: {phase} ({}) -----\n{ir}", target.chip);
        })
    } else {
        mlir_to_ptx_observed(module_text, target, &mut |_, _| {})
    }
}

/// [`mlir_to_ptx`], handing the IR to `observe(phase, ir)` before the
/// first phase (`input`) and after each one.
pub fn mlir_to_ptx_observed(
    module_text: &str,
    target: &Target,
    observe: &mut dyn FnMut(&str, &str),
) -> Result<String, MlirError> {
    let context = new_context();
    let diagnostics = Rc::new(RefCell::new(Vec::<String>::new()));
    let sink = Rc::clone(&diagnostics);
    let handler = context.attach_diagnostic_handler(move |diagnostic| {
        sink.borrow_mut()
            .push(format!("{}: {}", diagnostic.location(), diagnostic));
        true
    });
    let take_diagnostics = || {
        diagnostics
            .borrow_mut()
            .drain(..)
            .collect::<Vec<_>>()
            .join("\n")
    };

    let result = (|| {
        observe("input", module_text);
        let mut module =
            Module::parse(&context, module_text).ok_or_else(|| MlirError::InvalidModule {
                diagnostics: take_diagnostics(),
            })?;
        if !module.as_operation().verify() {
            return Err(MlirError::InvalidModule {
                diagnostics: take_diagnostics(),
            });
        }
        for phase in phases(target, uses_nvgpu(module_text)) {
            let manager = PassManager::new(&context);
            parse_pass_pipeline(manager.as_operation_pass_manager(), &phase.pipeline).map_err(
                |e| MlirError::Pass {
                    phase: phase.name.to_string(),
                    diagnostics: e.to_string(),
                },
            )?;
            manager.run(&mut module).map_err(|_| MlirError::Pass {
                phase: phase.name.to_string(),
                diagnostics: take_diagnostics(),
            })?;
            observe(phase.name, &module.as_operation().to_string());
        }
        extract_ptx(&module)
    })();
    context.detach_diagnostic_handler(handler);
    result
}

/// Whether the module has `nvgpu` ops (comment lines aside).
fn uses_nvgpu(module_text: &str) -> bool {
    module_text
        .lines()
        .any(|l| !l.trim_start().starts_with("//") && l.contains("nvgpu."))
}

/// The assembly string of the first object of the first `gpu.binary`.
fn extract_ptx(module: &Module) -> Result<String, MlirError> {
    let mut op: Option<OperationRef> = module.body().first_operation();
    while let Some(current) = op {
        if current.name().as_string_ref().as_str() == Ok("gpu.binary") {
            let objects = current
                .attribute("objects")
                .map_err(|e| MlirError::NoPtx(format!("gpu.binary has no objects: {e}")))?;
            let objects = ArrayAttribute::try_from(objects)
                .map_err(|e| MlirError::NoPtx(format!("gpu.binary objects: {e}")))?;
            let object = objects
                .element(0)
                .map_err(|e| MlirError::NoPtx(format!("gpu.binary has no object: {e}")))?;
            return gpu_object_text(object);
        }
        op = current.next_in_block();
    }
    Err(MlirError::NoPtx("no gpu.binary after serialization".into()))
}

fn gpu_object_text(object: melior::ir::Attribute) -> Result<String, MlirError> {
    use melior::ir::attribute::AttributeLike;
    let raw = object.to_raw();
    // SAFETY: `raw` is a live attribute of the module we borrow; the string
    // it returns is owned by the context, and we copy it before returning.
    unsafe {
        if !mlir_sys::mlirAttributeIsAGPUObjectAttr(raw) {
            return Err(MlirError::NoPtx(
                "gpu.binary object is not a #gpu.object".into(),
            ));
        }
        let text = mlir_sys::mlirGPUObjectAttrGetObject(raw);
        if text.data.is_null() {
            return Err(MlirError::NoPtx("empty #gpu.object".into()));
        }
        let bytes = std::slice::from_raw_parts(text.data.cast::<u8>(), text.length);
        String::from_utf8(bytes.to_vec()).map_err(|_| MlirError::NoPtx("PTX is not UTF-8".into()))
    }
}
