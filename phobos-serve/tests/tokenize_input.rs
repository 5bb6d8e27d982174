//! `phobos tokenize` end to end: where the text comes from. Text after `--`
//! may begin with `-`; `--file PATH` and standard input (TEXT `-`, or no TEXT
//! with stdin not a terminal) are read verbatim. Each output is compared with
//! the library's own `Tokenizer::encode` of the same text, so only the command
//! line's plumbing is under test here.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use phobos_models::gguf::Gguf;
use phobos_models::tokenizer::Tokenizer;

mod common;

fn tiny_model(dir: &Path) -> PathBuf {
    common::tiny_model(dir, "tiny", |w| {
        w.add("tokenizer.ggml.add_bos_token", true).unwrap();
    })
}

struct Fixture {
    dir: PathBuf,
    model: PathBuf,
    tokenizer: Tokenizer,
}

impl Fixture {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("phobos-tok-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let model = tiny_model(&dir);
        let tokenizer = Tokenizer::from_gguf(&Gguf::open(&model).unwrap()).unwrap();
        Self {
            dir,
            model,
            tokenizer,
        }
    }

    /// What `phobos tokenize` must print for `text` (BOS added, specials parsed).
    fn expected(&self, text: &str) -> String {
        let ids = self.tokenizer.encode(text, true, true).unwrap();
        format!("{}\n", serde_json::to_string(&ids).unwrap())
    }

    fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut child = Command::new(env!("CARGO_BIN_EXE_phobos"))
            .arg("tokenize")
            .arg(&self.model)
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(bytes) = stdin {
            child.stdin.take().unwrap().write_all(bytes).unwrap();
        }
        child.wait_with_output().unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn failure(out: &Output) -> String {
    assert!(!out.status.success(), "expected a failure");
    String::from_utf8(out.stderr.clone()).unwrap()
}

#[test]
fn text_beginning_with_a_dash_goes_after_double_dash() {
    let f = Fixture::new("dash");
    for text in ["-x", "--hi", "- hi", "--"] {
        let out = f.run(&["--", text], None);
        assert_eq!(stdout(&out), f.expected(text), "{text:?}");
    }
    // The ids are not those of the text without its dash.
    assert_ne!(f.expected("-x"), f.expected("x"));
    // Without `--` a dash-led text is an unknown option, and clap says how to
    // pass it.
    let stderr = failure(&f.run(&["-x"], None));
    assert!(stderr.contains("-- -x"), "{stderr}");
}

#[test]
fn file_text_is_read_verbatim() {
    let f = Fixture::new("file");
    let text = "hi\r\n\thi  \n-dash\n";
    let path = f.dir.join("prompt.txt");
    std::fs::write(&path, text).unwrap();
    let out = f.run(&["--file", path.to_str().unwrap()], None);
    assert_eq!(stdout(&out), f.expected(text));
    assert_ne!(f.expected(text), f.expected(text.trim_end()));

    let stderr = failure(&f.run(&["hi", "--file", path.to_str().unwrap()], None));
    assert!(stderr.contains("cannot be used with"), "{stderr}");

    let missing = f.dir.join("missing.txt");
    let out = f.run(&["--file", missing.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(failure(&out).contains("reading"));

    std::fs::write(&path, b"hi \xff").unwrap();
    let out = f.run(&["--file", path.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = failure(&out);
    assert!(
        stderr.contains("is not UTF-8 (invalid byte at offset 3)"),
        "{stderr}"
    );
}

#[test]
fn stdin_is_read_for_dash_or_when_no_text_is_given() {
    let f = Fixture::new("stdin");
    let text = "hi\nhi hi\n";
    let out = f.run(&["-"], Some(text.as_bytes()));
    assert_eq!(stdout(&out), f.expected(text));
    let out = f.run(&[], Some(text.as_bytes()));
    assert_eq!(stdout(&out), f.expected(text));
    // An empty (non-terminal) stdin is empty text: BOS alone.
    let out = f.run(&[], None);
    assert_eq!(stdout(&out), "[1]\n");
    // `-` means stdin after `--` too (as for cat); a lone dash is tokenized
    // by piping it.
    let out = f.run(&["--", "-"], Some(b"-"));
    assert_eq!(stdout(&out), f.expected("-"));
    assert_ne!(f.expected("-"), f.expected(""));
}
