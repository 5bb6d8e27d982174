//! A model file's chat template is untrusted: `phobos inspect` and `phobos
//! tokenize` on a GGUF whose template runs away (a huge `tojson` indent, a
//! billion-item loop, a doubling string, endless recursion) exit with status
//! 1 and a clear error, never a panic or an abort.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

/// A fresh directory, removed when the guard drops.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("phobos-chat-{name}-"))
        .tempdir()
        .unwrap()
}

/// The tiny model with `template` as its chat template.
fn model_with_template(dir: &Path, name: &str, template: &str) -> PathBuf {
    common::tiny_model(dir, name, |w| {
        w.add("tokenizer.chat_template", template).unwrap();
    })
}

/// Runs `phobos ARGS`: (exit code, stdout, stderr).
fn phobos(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const HOSTILE: &[(&str, &str, &str)] = &[
    (
        "indent",
        "{{ messages | tojson(indent=1000000000000) }}",
        "tojson indent 1000000000000 is larger than the limit",
    ),
    (
        "range",
        "{% for i in range(10**9) %}{{ i }}{% endfor %}",
        "range of 1000000000 items",
    ),
    (
        "doubling",
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}\
         {% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        "value size limit",
    ),
    (
        "recursion",
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        "recursion depth limit",
    ),
];

#[test]
fn inspect_and_tokenize_refuse_runaway_templates_with_status_1() {
    let tmp = temp_dir("hostile");
    let dir = tmp.path();
    for (name, template, expected) in HOSTILE {
        let model = model_with_template(dir, name, template);
        let model = model.to_str().unwrap();
        for args in [vec!["inspect", model], vec!["tokenize", model, "hi"]] {
            let (code, _, stderr) = phobos(&args);
            assert_eq!(code, Some(1), "{name} {args:?}: {stderr}");
            assert!(stderr.contains("chat template"), "{name}: {stderr}");
            assert!(stderr.contains(expected), "{name}: {stderr}");
            assert!(
                !stderr.contains("panicked") && !stderr.contains("memory allocation"),
                "{name}: {stderr}"
            );
        }
    }
}

#[test]
fn inspect_summarizes_a_sane_template() {
    let tmp = temp_dir("sane");
    let dir = tmp.path();
    let template = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}";
    let model = model_with_template(dir, "sane", template);
    let (code, stdout, stderr) = phobos(&["inspect", model.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    let expected = format!(
        "chat template: {} chars (system role: yes, tools: no, tool calls: no, tool results: yes)",
        template.len()
    );
    assert!(stdout.contains(&expected), "{stdout}");
}
