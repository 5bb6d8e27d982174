//! Keeps SPEC.md in sync with the compiler: every keyword, type name,
//! built-in and attribute the checker knows is documented there.

use phobos_build::check::{FUNCTION_NAMES, KNOWN_ATTRIBUTES};
use phobos_build::front::TokenKind;
use phobos_build::ir::{DType, QuantType};

fn spec() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../SPEC.md");
    std::fs::read_to_string(path).unwrap()
}

/// Whether `word` appears in the text as a whole word.
fn mentions(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        let is_word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !is_word(before) && !is_word(after)
    })
}

#[test]
fn spec_documents_every_name() {
    let spec = spec();
    let mut missing = Vec::new();
    let keywords = [
        "kernel", "let", "var", "if", "else", "for", "in", "while", "true", "false",
    ];
    for k in keywords {
        assert!(TokenKind::keyword(k).is_some(), "`{k}` is not a keyword");
    }
    let names = keywords
        .iter()
        .copied()
        .chain(FUNCTION_NAMES)
        .chain(DType::ALL.map(DType::name))
        .chain(QuantType::ALL.map(QuantType::name))
        .chain(KNOWN_ATTRIBUTES.map(|a| a));
    for name in names {
        if !mentions(&spec, name) {
            missing.push(name);
        }
    }
    for a in KNOWN_ATTRIBUTES {
        if !spec.contains(&format!("@{a}")) {
            missing.push(a);
        }
    }
    assert!(missing.is_empty(), "SPEC.md does not mention: {missing:?}");
}

#[test]
fn spec_documents_every_operator() {
    let spec = spec();
    for (spelling, _) in TokenKind::PUNCTS {
        if spelling == "\n" {
            continue;
        }
        let escaped = spelling.replace('|', "\\|");
        assert!(
            spec.contains(&format!("`{spelling}`"))
                || spec.contains(&format!("`{escaped}`"))
                || spec.contains(&format!(" {spelling} "))
                || spec.contains(&format!(" {escaped} "))
                || spec.contains(&format!(" {spelling}`")),
            "SPEC.md does not show `{spelling}`"
        );
    }
}

/// The workspace root (build-support's parent).
fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `PHOBOS_*` name in the sources a build or a run reads: Rust,
/// shell and Python files and the Makefile, outside build outputs.
fn env_vars_in_sources(dir: &std::path::Path, found: &mut std::collections::BTreeSet<String>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" || name == "models" {
            continue;
        }
        if path.is_dir() {
            env_vars_in_sources(&path, found);
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        // Scripts without an extension (the llvm-config wrapper) count too.
        let is_source = ["rs", "sh", "py"]
            .iter()
            .any(|ext| path.extension().is_some_and(|e| e == *ext))
            || name == "Makefile"
            || text.starts_with("#!");
        if !is_source {
            continue;
        }
        for (at, _) in text.match_indices("PHOBOS_") {
            let rest = &text[at + "PHOBOS_".len()..];
            let len = rest
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(rest.len());
            if len > 0 {
                found.insert(format!("PHOBOS_{}", &rest[..len]));
            }
        }
    }
}

/// The README's one environment-variable table lists every `PHOBOS_*`
/// variable the code and scripts read, and nothing they do not.
#[test]
fn readme_lists_every_env_var() {
    let root = workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let listed: std::collections::BTreeSet<String> = readme
        .lines()
        .filter_map(|line| line.strip_prefix("| `PHOBOS_"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(name, _)| format!("PHOBOS_{name}"))
        .collect();
    let mut read = std::collections::BTreeSet::new();
    env_vars_in_sources(&root, &mut read);
    let unlisted: Vec<_> = read.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&read).collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "README.md's environment table misses {unlisted:?} and lists unread {stale:?}"
    );
}

/// ARCHITECTURE.md's crate list names every workspace member.
#[test]
fn architecture_lists_every_crate() {
    let root = workspace_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .expect("Cargo.toml has a workspace members list");
    let mut missing = Vec::new();
    for dir in members.split(',').map(|m| m.trim().trim_matches('"')) {
        if dir.is_empty() {
            continue;
        }
        let crate_manifest = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
        let name = crate_manifest
            .lines()
            .find_map(|line| line.strip_prefix("name = \""))
            .and_then(|rest| rest.strip_suffix('"'))
            .unwrap_or_else(|| panic!("{dir}/Cargo.toml has no package name"));
        if !architecture.contains(&format!("- `{name}`")) {
            missing.push(name.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's crate list misses {missing:?}"
    );
}
