//! The expansion of both macros: compile, generate, or report errors.

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};

use phobos_build::back::host::{self, EmbeddedPtx};
use phobos_build::diag::{Diagnostic, Diagnostics};
use phobos_build::ir::Module;
use phobos_build::span::SourceMap;
use phobos_build::{Source, check};

use crate::error::MacroError;
use crate::source_file::read_kernel_file;
use crate::tune_table::{self, TuneTable};

/// How kernels become PTX in this build: [`crate::ptx::Settings`] with
/// feature `ptx`, nothing without.
#[cfg(feature = "ptx")]
pub type PtxSettings = crate::ptx::Settings;

/// How kernels become PTX in this build: not at all (feature `ptx` is off).
#[cfg(not(feature = "ptx"))]
#[derive(Clone, Debug, Default)]
pub struct PtxSettings;

fn ptx_settings_from_env() -> PtxSettings {
    #[cfg(feature = "ptx")]
    return crate::ptx::Settings::from_env();
    #[cfg(not(feature = "ptx"))]
    return PtxSettings;
}

/// `kernel! { ... }`.
pub fn inline(input: TokenStream) -> TokenStream {
    inline_with(input, &ptx_settings_from_env())
}

/// [`inline`] with explicit PTX settings (tests point the cache elsewhere).
pub fn inline_with(input: TokenStream, settings: &PtxSettings) -> TokenStream {
    match TuneTable::from_env() {
        Ok(table) => inline_with_table(input, settings, table.as_ref()),
        Err(message) => MacroError::new(Span::call_site(), message).to_compile_error(),
    }
}

/// [`inline_with`] with an explicit embedded tune table.
pub fn inline_with_table(
    input: TokenStream,
    settings: &PtxSettings,
    table: Option<&TuneTable>,
) -> TokenStream {
    let source_text = input.to_string();
    let fallback_names = kernel_names_in_tokens(&input);
    compile(
        &Source::Tokens(input),
        &source_text,
        None,
        &fallback_names,
        settings,
        table,
    )
}

/// `kernel_file!("path.ph")`.
pub fn file(input: TokenStream) -> TokenStream {
    let literal: syn::LitStr = match syn::parse2(input) {
        Ok(literal) => literal,
        Err(error) => {
            let message = format!(
                "kernel_file!: expected one string literal, the path of a .ph file relative to Cargo.toml ({error})"
            );
            return MacroError::new(error.span(), message).to_compile_error();
        }
    };
    let relative = literal.value();
    let kernel_file = match read_kernel_file(&relative, literal.span()) {
        Ok(kernel_file) => kernel_file,
        Err(error) => return error.to_compile_error(),
    };
    let absolute = kernel_file.absolute_path.to_string_lossy().into_owned();
    // Makes cargo rebuild the crate when the file changes.
    let track =
        quote_spanned!(literal.span()=> const _: &[u8] = ::core::include_bytes!(#absolute););
    let table = match TuneTable::from_env() {
        Ok(table) => table,
        Err(message) => return MacroError::new(literal.span(), message).to_compile_error(),
    };
    let source = Source::file(relative, kernel_file.text.clone());
    let modules = compile(
        &source,
        &kernel_file.text,
        Some(literal.span()),
        &[],
        &ptx_settings_from_env(),
        table.as_ref(),
    );
    quote!(#track #modules)
}

/// Front end, checker, PTX (feature `ptx`), host back end; errors become
/// `compile_error!`s at `report_at` when given (file sources) or at the
/// offending tokens.
fn compile(
    source: &Source,
    source_text: &str,
    report_at: Option<Span>,
    fallback_names: &[Ident],
    settings: &PtxSettings,
    table: Option<&TuneTable>,
) -> TokenStream {
    let bodies = match host::HostBodies::from_env() {
        Ok(bodies) => bodies,
        Err(message) => {
            return MacroError::new(report_at.unwrap_or_else(Span::call_site), message)
                .to_compile_error();
        }
    };
    let (program, source_map) = match phobos_build::parse(source) {
        Ok(parsed) => parsed,
        Err(diagnostics) => return report(&diagnostics, report_at, fallback_names),
    };
    let names: Vec<Ident> = program
        .kernels
        .iter()
        .filter_map(|k| ident(&k.name.name))
        .collect();
    let module = match check::check_program(&program) {
        Ok(module) => module,
        Err(errors) => return report(&Diagnostics::new(source_map, errors), report_at, &names),
    };
    // Host back end errors first (the same ones with or without `ptx`), so
    // PTX is only compiled for kernels that are otherwise fine.
    if let Err(errors) = host::generate(&module, source_text) {
        let errors = errors
            .into_iter()
            .map(|e| Diagnostic::error(e.span, e.message))
            .collect();
        return report(&Diagnostics::new(source_map, errors), report_at, &names);
    }
    let mut ptx = match embedded_ptx(&module, source_text, settings) {
        Ok(ptx) => ptx.into_iter(),
        Err(errors) => return report(&Diagnostics::new(source_map, errors), report_at, &names),
    };
    let tune_lines = |kernel: &phobos_build::ir::Kernel| {
        table.map_or_else(Vec::new, |t| t.lines_for(&kernel.name))
    };
    match host::generate_with(
        &module,
        source_text,
        bodies,
        |_| ptx.next().flatten(),
        tune_lines,
    ) {
        Ok(tokens) => {
            let track = track_build_env();
            let track_table = table.map(TuneTable::track);
            let track_table_env = tune_table::track_env();
            quote!(#track #track_table_env #track_table #tokens)
        }
        Err(errors) => {
            let errors = errors
                .into_iter()
                .map(|e| Diagnostic::error(e.span, e.message))
                .collect();
            report(&Diagnostics::new(source_map, errors), report_at, &names)
        }
    }
}

/// Per kernel in module order, its PTX (`None` without feature `ptx`).
#[cfg(feature = "ptx")]
fn embedded_ptx(
    module: &Module,
    source_text: &str,
    settings: &PtxSettings,
) -> Result<Vec<Option<EmbeddedPtx>>, Vec<Diagnostic>> {
    let hash = host::source_hash(source_text);
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for kernel in &module.kernels {
        match crate::ptx::build_kernel(kernel, hash, settings) {
            Ok(build) => out.push(Some(build.embedded)),
            Err(error) => errors.push(Diagnostic::error(kernel.span, error.0)),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Per kernel in module order, its PTX (`None` without feature `ptx`).
#[cfg(not(feature = "ptx"))]
fn embedded_ptx(
    module: &Module,
    _source_text: &str,
    _settings: &PtxSettings,
) -> Result<Vec<Option<EmbeddedPtx>>, Vec<Diagnostic>> {
    Ok(module.kernels.iter().map(|_| None).collect())
}

/// The expansion depends on `PHOBOS_HOST_SIMD` (which host bodies) and,
/// with `ptx`, on `PHOBOS_CHIPS` (which chips) and `PHOBOS_PTXAS`
/// (registers measured, configs pruned by them); reading them through
/// `option_env!` puts them in the crate's dep-info, so cargo rebuilds the
/// crate when they change (proc macros cannot declare that themselves on
/// stable Rust). A ptxas appearing on PATH is not seen until the crate
/// rebuilds for another reason.
fn track_build_env() -> TokenStream {
    let host_simd = host::HOST_SIMD_ENV;
    let host = quote!(
        const _: ::core::option::Option<&str> = ::core::option_env!(#host_simd);
    );
    if cfg!(feature = "ptx") {
        let chips = phobos_build::back::mlir::CHIPS_ENV;
        let ptxas = phobos_build::back::mlir::ptxas::PTXAS_ENV;
        quote!(
            #host
            const _: ::core::option::Option<&str> = ::core::option_env!(#chips);
            const _: ::core::option::Option<&str> = ::core::option_env!(#ptxas);
        )
    } else {
        host
    }
}

/// Every error as a spanned `compile_error!`, plus an empty module per
/// kernel name so paths into them do not pile up further errors.
fn report(diagnostics: &Diagnostics, report_at: Option<Span>, names: &[Ident]) -> TokenStream {
    let mut out = TokenStream::new();
    for (span, message) in diagnostics.macro_errors() {
        let span = match (&diagnostics.source_map, report_at) {
            (SourceMap::Text { .. }, Some(at)) => at,
            _ => span,
        };
        out.extend(MacroError::new(span, message).to_compile_error());
    }
    for name in names {
        out.extend(quote!(#[allow(non_snake_case)] pub mod #name {}));
    }
    out
}

/// Kernel names for the empty stand-in modules when parsing failed: every
/// identifier after a `kernel` keyword.
fn kernel_names_in_tokens(input: &TokenStream) -> Vec<Ident> {
    let mut names = Vec::new();
    let mut after_keyword = false;
    for tree in input.clone() {
        match tree {
            TokenTree::Ident(id) if after_keyword => {
                names.push(id);
                after_keyword = false;
            }
            TokenTree::Ident(id) => after_keyword = id == "kernel",
            _ => after_keyword = false,
        }
    }
    names
}

fn ident(name: &str) -> Option<Ident> {
    let valid_start = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    (valid_start && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| format_ident!("{}", name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_kernel_names_in_raw_tokens() {
        let tokens: TokenStream = "@grid(N) kernel saxpy(x: f32) {} kernel gemm() {}"
            .parse()
            .unwrap();
        let names: Vec<String> = kernel_names_in_tokens(&tokens)
            .iter()
            .map(|i| i.to_string())
            .collect();
        assert_eq!(names, ["saxpy", "gemm"]);
    }

    #[test]
    fn expansion_of_a_valid_kernel_has_its_launcher() {
        let tokens: TokenStream = "@grid(cdiv(N, 4)) kernel twice(x: tensor<f32>[N], y: tensor<f32>[N]) {\n let i = program_id(0) * 4\n y[i :+ 4] = x[i :+ 4] * 2.0\n }"
            .parse()
            .unwrap();
        let out = inline(tokens).to_string();
        assert!(out.contains("pub mod twice"), "{out}");
        assert!(out.contains("pub fn launch"), "{out}");
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn errors_become_compile_error_and_keep_the_module() {
        let tokens: TokenStream = "kernel broken(x: tensor<f32>[N]) { let y = nope }"
            .parse()
            .unwrap();
        let out = inline(tokens).to_string();
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.contains("pub mod broken"), "{out}");
    }

    #[test]
    fn file_errors_name_the_file_line_and_column() {
        let out = file(quote!("tests/fixtures/undeclared_name.ph")).to_string();
        assert!(out.contains("compile_error"), "{out}");
        assert!(
            out.contains("tests/fixtures/undeclared_name.ph:3:10"),
            "{out}"
        );
        assert!(out.contains("unknown name `y`"), "{out}");
        assert!(out.contains("pub mod bad"), "{out}");
    }

    #[test]
    fn file_expansion_tracks_the_file_for_rebuilds() {
        let out = file(quote!("../examples/kernels/saxpy.ph")).to_string();
        assert!(out.contains("include_bytes"), "{out}");
        assert!(out.contains("pub mod saxpy"), "{out}");
        assert!(!out.contains("compile_error"), "{out}");
    }

    /// An unchanged kernel expanded again compiles nothing: counted from
    /// the cache's own log, as a rebuild of a crate would.
    #[cfg(feature = "ptx")]
    #[test]
    fn a_second_expansion_compiles_zero_variants() {
        let dir = tempfile::tempdir().unwrap();
        let settings = PtxSettings {
            chips: vec!["sm_75".into(), "sm_90".into()],
            index_bits: vec![32],
            cache: Some(crate::ptx::cache::Cache::new(dir.path().join("ptx"))),
            jobs: 2,
            ptxas: Ok(None),
        };
        let source = "@autotune(BLOCK in [64, 128]) @grid(cdiv(N, BLOCK)) kernel twice(x: tensor<f32>[N], y: tensor<f32>[N]) {\n let i = program_id(0) * BLOCK\n y[i :+ BLOCK] = x[i :+ BLOCK] * 2.0\n }";
        let first = inline_with(source.parse().unwrap(), &settings).to_string();
        let second = inline_with(source.parse().unwrap(), &settings).to_string();
        assert!(!first.contains("compile_error"), "{first}");
        assert!(first.contains("ARTIFACT") && first.contains("ptx_built : true"));
        assert!(first.contains("option_env ! (\"PHOBOS_CHIPS\")"), "{first}");
        assert!(first.contains("option_env ! (\"PHOBOS_PTXAS\")"), "{first}");
        assert_eq!(first, second, "cached PTX must embed the same bytes");

        let log = std::fs::read_to_string(dir.path().join("ptx").join("build.log")).unwrap();
        let counts: Vec<(usize, usize)> = log
            .lines()
            .map(|line| (count(line, "compiled="), count(line, "cached=")))
            .collect();
        // BLOCK in [64, 128] is 2 configs, times 2 chips.
        assert_eq!(counts, [(4, 0), (0, 4)], "{log}");
    }

    #[cfg(feature = "ptx")]
    fn count(line: &str, field: &str) -> usize {
        let start = line.find(field).unwrap() + field.len();
        line[start..].split(' ').next().unwrap().parse().unwrap()
    }

    /// Settings that compile no PTX (no chips) with or without `ptx`.
    fn no_ptx_settings() -> PtxSettings {
        #[cfg(feature = "ptx")]
        return PtxSettings {
            chips: Vec::new(),
            index_bits: vec![32],
            cache: None,
            jobs: 1,
            ptxas: Ok(None),
        };
        #[cfg(not(feature = "ptx"))]
        return PtxSettings;
    }

    #[test]
    fn an_embedded_tune_table_lands_in_its_kernels_module() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("table.jsonl");
        let entry = r#"{"format":"phobos-tune","version":1,"kernel":"twice","config":"BLOCK=8"}"#;
        let other = r#"{"format":"phobos-tune","version":1,"kernel":"other","config":"X=1"}"#;
        std::fs::write(&path, format!("{}\n{entry}\n{other}\n", tune_table::HEADER)).unwrap();
        let table = TuneTable::read(&path).unwrap();
        let tokens: TokenStream = "@autotune(BLOCK in [4, 8]) @grid(cdiv(N, BLOCK)) kernel twice(x: tensor<f32>[N], y: tensor<f32>[N]) {\n let i = program_id(0) * BLOCK\n y[i :+ BLOCK] = x[i :+ BLOCK] * 2.0\n }"
            .parse()
            .unwrap();
        let out = inline_with_table(tokens.clone(), &no_ptx_settings(), Some(&table)).to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("TUNE_TABLE"), "{out}");
        assert!(out.contains("BLOCK=8"), "{out}");
        assert!(!out.contains("X=1"), "{out}");
        assert!(out.contains("include_bytes"), "{out}");
        assert!(
            out.contains("option_env ! (\"PHOBOS_TUNE_TABLE\")"),
            "{out}"
        );
        assert!(
            out.contains("\"BLOCK=4\" , \"BLOCK=8\""),
            "CONFIG_TEXTS: {out}"
        );
        let without = inline_with_table(tokens, &no_ptx_settings(), None).to_string();
        assert!(
            without.contains("TUNE_TABLE : & [& str] = & []"),
            "{without}"
        );
    }

    #[test]
    fn file_path_must_be_a_string_literal() {
        let out = file(quote!(kernels / saxpy)).to_string();
        assert!(out.contains("expected one string literal"), "{out}");
    }
}
