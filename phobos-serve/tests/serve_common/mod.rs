//! Starting the real `phobos serve --test-script` for end-to-end tests, and
//! raw HTTP/1.1 over a TCP socket (so framing and hostile input are ours).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fetched test file, or `None` (skip) with a message; a failure under
/// PHOBOS_REQUIRE_TEST_DATA=1.
pub fn test_data(relative: &str) -> Option<PathBuf> {
    let path = root().join(relative);
    if path.exists() {
        return Some(path);
    }
    let message = format!("{relative} is missing: run scripts/fetch_test_data.sh");
    if std::env::var("PHOBOS_REQUIRE_TEST_DATA").is_ok_and(|v| v == "1") {
        panic!("{message} (required: PHOBOS_REQUIRE_TEST_DATA=1)");
    }
    eprintln!("SKIPPED: {message}");
    None
}

pub fn gemma() -> Option<PathBuf> {
    test_data("models/gemma-3-270m-q4_k_m.gguf")
}

/// The Qwen2 vocabulary with Qwen 2.5's template (it renders tools).
pub fn qwen() -> Option<(PathBuf, PathBuf)> {
    Some((
        test_data("models/llama-vocabs/ggml-vocab-qwen2.gguf")?,
        test_data("models/llama-vocabs/templates/Qwen-Qwen2.5-7B-Instruct.jinja")?,
    ))
}

/// A fresh directory, removed when the guard drops.
pub fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("phobos-serve-{name}-"))
        .tempdir()
        .unwrap()
}

pub struct Server {
    child: Child,
    pub addr: String,
    pub model_id: String,
    /// How long a request may take to answer (the real engine on a busy
    /// CPU is slow).
    read_timeout: Duration,
    /// Holds the `--test-script` file until the server is gone.
    _script_dir: Option<tempfile::TempDir>,
}

impl Server {
    /// Starts `phobos serve MODEL --test-script SCRIPT --listen 127.0.0.1:0
    /// --no-dashboard EXTRA...` and waits until the model is ready.
    pub fn start(model: &Path, script_json: &str, extra: &[&str]) -> Server {
        Self::spawn(model, script_json, extra, true)
    }

    /// As [`Server::start`]; `wait_ready` false returns once it listens
    /// (while the model may still be loading).
    pub fn spawn(model: &Path, script_json: &str, extra: &[&str], wait_ready: bool) -> Server {
        let script_dir = temp_dir("script");
        let script = script_dir.path().join("script.json");
        std::fs::write(&script, script_json).unwrap();
        let script = script.to_string_lossy().into_owned();
        let mut args = vec!["--test-script", script.as_str()];
        args.extend_from_slice(extra);
        let mut server = Self::spawn_with(model, &args, wait_ready);
        server._script_dir = Some(script_dir);
        server
    }

    /// `phobos serve MODEL --listen 127.0.0.1:0 --no-dashboard EXTRA...`
    /// over the real engine, once the model is loaded.
    pub fn start_engine(model: &Path, extra: &[&str]) -> Server {
        let mut server = Self::spawn_with(model, extra, true);
        server.read_timeout = Duration::from_secs(900);
        server
    }

    fn spawn_with(model: &Path, extra: &[&str], wait_ready: bool) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_phobos"))
            .arg("serve")
            .arg(model)
            .args(["--listen", "127.0.0.1:0", "--no-dashboard"])
            .args(extra)
            .env_remove("PHOBOS_API_KEY")
            .env("PHOBOS_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let mut addr = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(rest) = line.strip_prefix("phobos serve: listening on http://") {
                addr = Some(rest.to_owned());
            }
            if line.contains("ready") || (!wait_ready && addr.is_some()) {
                break;
            }
        }
        // Keep draining stdout so the server never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        let addr = addr.expect("the server printed no listening address");
        let model_id = model.file_stem().unwrap().to_string_lossy().into_owned();
        Server {
            child,
            addr,
            model_id,
            read_timeout: Duration::from_secs(30),
            _script_dir: None,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn request(&self, method: &str, path: &str, body: &str) -> Response {
        self.request_with(method, path, body, &[])
    }

    pub fn request_with(&self, method: &str, path: &str, body: &str, headers: &[&str]) -> Response {
        let mut raw = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for header in headers {
            raw.push_str(header);
            raw.push_str("\r\n");
        }
        raw.push_str("\r\n");
        raw.push_str(body);
        self.raw(raw.as_bytes())
    }

    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(self.read_timeout)).unwrap();
        stream
    }

    /// Sends raw bytes and reads the whole answer (until the server closes).
    pub fn raw(&self, bytes: &[u8]) -> Response {
        let mut stream = self.connect();
        // A server may answer and close before reading everything (413).
        let _ = stream.write_all(bytes);
        read_response(&mut stream)
    }

    /// A gauge or counter from /metrics.
    pub fn metric(&self, name: &str) -> f64 {
        let response = self.request("GET", "/metrics", "");
        response
            .text()
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no metric {name} in\n{}", response.text()))
    }

    /// Waits (up to 5 s) until no slot is active and nothing is queued.
    pub fn wait_idle(&self) {
        for _ in 0..100 {
            if self.metric("phobos_slots_active") == 0.0 && self.metric("phobos_queue_depth") == 0.0
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("slots still active or requests queued after 5 s");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body with chunked transfer coding removed.
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub fn read_response(stream: &mut TcpStream) -> Response {
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    parse_response(&bytes)
}

pub fn parse_response(bytes: &[u8]) -> Response {
    let text_end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| {
            panic!(
                "no complete response head in {:?}",
                String::from_utf8_lossy(bytes)
            )
        });
    let head = String::from_utf8_lossy(&bytes[..text_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let raw_body = &bytes[text_end + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(raw_body)
    } else {
        raw_body.to_vec()
    };
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = raw.windows(2).position(|w| w == b"\r\n") else {
            panic!("truncated chunked body");
        };
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..line_end]).unwrap().trim(), 16)
            .unwrap();
        raw = &raw[line_end + 2..];
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

/// An OpenAI-shaped error: `{"error": {"message": non-empty, "type", "code"}}`.
pub fn assert_openai_error(response: &Response, context: &str) {
    let body = response.json();
    let error = &body["error"];
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{context}: no error message in {body}"
    );
    assert!(
        error["type"].is_string(),
        "{context}: no error type in {body}"
    );
    assert!(
        error.get("code").is_some(),
        "{context}: no error code in {body}"
    );
}
