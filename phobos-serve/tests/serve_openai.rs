//! The official `openai` Python client against the real `phobos serve`
//! (scripted backend, real tokenizer and chat templates): chat and
//! completions, streaming and not, include_usage, stop strings, limits,
//! logprobs, reasoning, JSON mode, errors, an API key, the Responses API
//! (items, typed stream events, the SDK's stream helper), and tool-call round
//! trips through Qwen 2.5's template in both APIs. The checks are in serve_openai.py.
//!
//! Needs python3 with `openai` (`pip install openai`); without it the test
//! says so and skips, or fails under PHOBOS_REQUIRE_TEST_DATA=1.

mod serve_common;

use std::process::Command;

use serve_common::Server;

/// What the Gemma server answers (serve_openai.py expects these texts).
pub const GEMMA_SCRIPT: &str = r#"{
  "replies": [
    {"when_prompt_contains": "tell me a story", "text": "Once upon a time there was a tiny model. It said hello. The END of the story."},
    {"when_prompt_contains": "think about", "text": "<think>\nLet me think.\n</think>\n\nThe answer is 4."},
    {"when_prompt_contains": "json please", "text": "{\"answer\": 4}"},
    {"when_prompt_contains": "Unicode please", "text": "héllo wörld 🎉 日本語"}
  ],
  "default": "Hello! How can I help you today?"
}"#;

/// The Qwen server calls the tool when the template rendered it, and
/// answers from the tool's result once the template rendered that.
const QWEN_SCRIPT: &str = r#"{
  "replies": [
    {"when_prompt_contains": "<tool_response>\n22 degrees and sunny", "text": "It is 22 degrees and sunny in Paris."},
    {"when_prompt_contains": "\"name\": \"get_weather\"", "text": "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"}
  ],
  "default": "No tools were offered."
}"#;

fn python_has_openai() -> bool {
    Command::new("python3")
        .args(["-c", "import openai"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn openai_client_end_to_end() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let Some((qwen, qwen_template)) = serve_common::qwen() else {
        return;
    };
    if !python_has_openai() {
        let message = "python3 with the `openai` package is missing: pip install openai";
        if std::env::var("PHOBOS_REQUIRE_TEST_DATA").is_ok_and(|v| v == "1") {
            panic!("{message} (required: PHOBOS_REQUIRE_TEST_DATA=1)");
        }
        eprintln!("SKIPPED: {message}");
        return;
    }
    let key = "test-key-123";
    let server = Server::start(
        &gemma,
        GEMMA_SCRIPT,
        &["--api-key", key, "--parallel", "2", "--ctx-size", "2048"],
    );
    let tools = Server::start(
        &qwen,
        QWEN_SCRIPT,
        &["--chat-template-file", qwen_template.to_str().unwrap()],
    );
    let script = serve_common::root().join("phobos-serve/tests/serve_openai.py");
    let output = Command::new("python3")
        .arg(script)
        .args(["--base-url", &server.url(), "--model", &server.model_id])
        .args(["--api-key", key])
        .args([
            "--tools-base-url",
            &tools.url(),
            "--tools-model",
            &tools.model_id,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("all ok"),
        "serve_openai.py failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    let checks = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    assert!(checks >= 80, "only {checks} checks ran:\n{stdout}");
}
