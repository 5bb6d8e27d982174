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
