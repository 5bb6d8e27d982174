//! The chat page in headless Chromium (Debian's `chromium` and
//! `chromium-driver`, driven by `selenium`): a message sent from the page
//! streams back with its reasoning shown apart, the conversation survives a
//! reload, and a screenshot is kept at
//! `$CARGO_TARGET_DIR/phobos-chat-page.png` (else the system temp dir).
//!
//! Without Chromium or selenium the test says so and skips, or fails under
//! PHOBOS_REQUIRE_TEST_DATA=1.

mod serve_common;

use std::process::Command;

use serve_common::Server;

const SCRIPT: &str = r#"{
  "delay_ms_per_token": 40,
  "replies": [{"when_prompt_contains": "think about", "text": "<think>\nWeighing it up.\n</think>\n\nThe page streams this answer to you."}],
  "default": "Hello!"
}"#;

fn have_browser() -> Result<(), String> {
    for path in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
        if !std::path::Path::new(path).exists() {
            return Err(format!(
                "{path} is missing: apt-get install -y chromium chromium-driver"
            ));
        }
    }
    let selenium = Command::new("python3")
        .args(["-c", "import selenium"])
        .status();
    if !selenium.is_ok_and(|s| s.success()) {
        return Err("python3 with `selenium` is missing: pip install selenium".into());
    }
    Ok(())
}

#[test]
fn chat_page_streams_in_chromium() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    if let Err(message) = have_browser() {
        if std::env::var("PHOBOS_REQUIRE_TEST_DATA").is_ok_and(|v| v == "1") {
            panic!("{message} (required: PHOBOS_REQUIRE_TEST_DATA=1)");
        }
        eprintln!("SKIPPED: {message}");
        return;
    }
    let server = Server::start(&gemma, SCRIPT, &[]);
    let screenshot = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(std::env::temp_dir, std::path::PathBuf::from)
        .join("phobos-chat-page.png");
    let _ = std::fs::remove_file(&screenshot);
    let script = serve_common::root().join("phobos-serve/tests/serve_chat_page.py");
    let output = Command::new("python3")
        .arg(script)
        .arg(format!("http://{}/", server.addr))
        .arg("Weighing it up.")
        .arg("The page streams this answer to you.")
        .arg(&screenshot)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "serve_chat_page.py failed\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let png = std::fs::read(&screenshot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 1000,
        "no screenshot at {}",
        screenshot.display()
    );
    eprintln!("screenshot: {}", screenshot.display());
}
