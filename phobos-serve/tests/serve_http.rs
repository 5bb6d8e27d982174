//! `phobos serve` over raw HTTP/1.1: the SSE framing byte by byte, /health
//! while loading, the API key, the bounded queue, cancellation on
//! disconnect, prefix reuse, the metrics, and a table of malformed and
//! hostile requests after which the server still answers correctly with no
//! slot lost.

mod serve_common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serve_common::{Response, Server, assert_openai_error};

const SCRIPT: &str = r#"{
  "replies": [
    {"when_prompt_contains": "long please", "text": "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"}
  ],
  "default": "Hello! How can I help you today?"
}"#;

const CHAT: &str = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;

/// Splits an SSE body into its `data:` payloads, checking the framing is
/// exactly `data: PAYLOAD\n\n` per event with nothing else around.
fn sse_payloads(body: &str) -> Vec<String> {
    assert!(
        body.ends_with("\n\n"),
        "the stream does not end with a blank line: {body:?}"
    );
    body[..body.len() - 2]
        .split("\n\n")
        .map(|event| {
            let payload = event
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("event without 'data: ': {event:?}"));
            assert!(!payload.contains('\n'), "multi-line event: {event:?}");
            payload.to_owned()
        })
        .collect()
}

#[test]
fn sse_framing_byte_by_byte() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start(&gemma, SCRIPT, &[]);
    let body = r#"{"messages": [{"role": "user", "content": "hi"}], "stream": true, "stream_options": {"include_usage": true}}"#;
    let response = server.request("POST", "/v1/chat/completions", body);
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let text = response.text();
    let payloads = sse_payloads(&text);
    assert_eq!(payloads.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<serde_json::Value> = payloads[..payloads.len() - 1]
        .iter()
        .map(|p| serde_json::from_str(p).unwrap())
        .collect();
    let id = chunks[0]["id"].as_str().unwrap().to_owned();
    let created = chunks[0]["created"].as_u64().unwrap();
    // Rebuild the exact bytes OpenAI's format prescribes from the deltas and
    // compare the whole body.
    let mut expected = String::new();
    let head = |delta: serde_json::Value, finish: serde_json::Value| {
        serde_json::json!({
            "id": id, "object": "chat.completion.chunk", "created": created, "model": "gemma-3-270m-q4_k_m",
            "system_fingerprint": chunks[0]["system_fingerprint"],
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
            "usage": null,
        })
    };
    let event = |value: serde_json::Value| format!("data: {value}\n\n");
    expected.push_str(&event(head(
        serde_json::json!({"role": "assistant", "content": ""}),
        serde_json::Value::Null,
    )));
    let mut content = String::new();
    for chunk in &chunks[1..chunks.len() - 2] {
        let piece = chunk["choices"][0]["delta"]["content"].as_str().unwrap();
        content.push_str(piece);
        expected.push_str(&event(head(
            serde_json::json!({"content": piece}),
            serde_json::Value::Null,
        )));
    }
    assert_eq!(content, "Hello! How can I help you today?");
    expected.push_str(&event(head(serde_json::json!({}), "stop".into())));
    let usage = &chunks[chunks.len() - 1]["usage"];
    expected.push_str(&event(serde_json::json!({
        "id": id, "object": "chat.completion.chunk", "created": created, "model": "gemma-3-270m-q4_k_m",
        "system_fingerprint": chunks[0]["system_fingerprint"], "choices": [], "usage": usage,
    })));
    expected.push_str("data: [DONE]\n\n");
    assert_eq!(text, expected);
    let completion = usage["completion_tokens"].as_u64().unwrap();
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + completion
    );
    // One content delta per token here (each piece is complete text; the
    // end-of-turn token is not counted).
    assert_eq!(completion as usize, chunks.len() - 3);
}

#[test]
fn health_is_503_while_loading_then_200() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let script = r#"{"load_delay_ms": 1500, "default": "x"}"#;
    let server = Server::spawn(&gemma, script, &[], false);
    let loading = server.request("GET", "/health", "");
    assert_eq!(loading.status, 503);
    assert_openai_error(&loading, "health while loading");
    let busy = server.request("POST", "/v1/chat/completions", CHAT);
    assert_eq!(busy.status, 503);
    assert!(busy.header("retry-after").is_some());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let health = server.request("GET", "/health", "");
        if health.status == 200 {
            assert_eq!(health.json()["status"], "ok");
            break;
        }
        assert!(Instant::now() < deadline, "never became healthy");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn api_key_guards_everything_but_health_and_page() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start(&gemma, SCRIPT, &["--api-key", "sekret"]);
    for (method, path, body) in [
        ("POST", "/v1/chat/completions", CHAT),
        ("GET", "/v1/models", ""),
        ("POST", "/v1/completions", r#"{"prompt": "x"}"#),
        ("GET", "/metrics", ""),
        ("POST", "/tokenize", r#"{"content": "x"}"#),
    ] {
        for headers in [
            &[][..],
            &["Authorization: Bearer wrong"][..],
            &["Authorization: sekret"][..],
        ] {
            let response = server.request_with(method, path, body, headers);
            assert_eq!(response.status, 401, "{method} {path} {headers:?}");
            assert_openai_error(&response, path);
        }
        let ok = server.request_with(method, path, body, &["Authorization: Bearer sekret"]);
        assert_eq!(ok.status, 200, "{method} {path}: {}", ok.text());
    }
    assert_eq!(server.request("GET", "/health", "").status, 200);
    let page = server.request("GET", "/", "");
    assert_eq!(page.status, 200);
    assert!(page.text().contains("/v1/chat/completions"));
}

#[test]
fn tokenize_detokenize_apply_template_and_prefix_reuse() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start(&gemma, SCRIPT, &["--parallel", "2"]);
    let tokens = server
        .request("POST", "/tokenize", r#"{"content": "Hello world"}"#)
        .json();
    let ids = tokens["tokens"].as_array().unwrap().clone();
    assert!(!ids.is_empty());
    let text = server
        .request(
            "POST",
            "/detokenize",
            &serde_json::json!({"tokens": ids}).to_string(),
        )
        .json();
    assert_eq!(text["content"], "Hello world");
    let pieces = server
        .request(
            "POST",
            "/tokenize",
            r#"{"content": "Hello", "with_pieces": true}"#,
        )
        .json();
    assert_eq!(pieces["tokens"][0]["piece"], "Hello");
    let prompt = server.request("POST", "/apply-template", CHAT).json();
    assert_eq!(
        prompt["prompt"],
        "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"
    );
    let models = server.request("GET", "/v1/models", "").json();
    assert_eq!(models["data"][0]["id"], "gemma-3-270m-q4_k_m");
    let model = server.request("GET", "/v1/models/gemma-3-270m-q4_k_m", "");
    assert_eq!(model.status, 200, "{}", model.text());
    assert_eq!(model.json(), {
        let mut listed = models["data"][0].clone();
        listed["created"] = model.json()["created"].clone();
        listed
    });
    // A longer conversation that extends the first reuses its prefix.
    let first = server.request("POST", "/v1/chat/completions", CHAT).json();
    assert_eq!(
        first["choices"][0]["message"]["content"],
        "Hello! How can I help you today?"
    );
    let follow_up = r#"{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello! How can I help you today?"}, {"role": "user", "content": "more"}]}"#;
    let second = server
        .request("POST", "/v1/chat/completions", follow_up)
        .json();
    let cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        cached >= first["usage"]["prompt_tokens"].as_u64().unwrap() - 1,
        "{second}"
    );
    let metrics = server.request("GET", "/metrics", "").text();
    for name in [
        "phobos_requests_total{status=\"200\"}",
        "phobos_prompt_tokens_total",
        "phobos_generated_tokens_total",
        "phobos_prompt_tokens_per_second",
        "phobos_decode_tokens_per_second",
        "phobos_queue_depth",
        "phobos_slots_active",
        "phobos_kv_cache_used_tokens",
    ] {
        assert!(metrics.contains(name), "{name} missing from\n{metrics}");
    }
    assert!(server.metric("phobos_prompt_tokens_cached_total") >= cached as f64);
}

/// Reads an open streaming response until `needle` has arrived.
fn read_until(stream: &mut std::net::TcpStream, needle: &str) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(needle) {
        let n = stream.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "closed before {needle:?}: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

fn start_stream(server: &Server, content: &str) -> std::net::TcpStream {
    let body =
        serde_json::json!({"messages": [{"role": "user", "content": content}], "stream": true})
            .to_string();
    let mut stream = server.connect();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    stream
}

#[test]
fn full_queue_answers_503_and_disconnect_cancels() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    // One slot, one place in the queue, slow tokens.
    let script = SCRIPT.replace("\"replies\"", "\"delay_ms_per_token\": 200, \"replies\"");
    let server = Server::start(&gemma, &script, &["--parallel", "1", "--queue", "1"]);
    let mut running = start_stream(&server, "long please");
    read_until(&mut running, "\"role\"");
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.metric("phobos_slots_active") < 1.0 {
        assert!(
            Instant::now() < deadline,
            "the first request never got the slot"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let waiting = start_stream(&server, "long please");
    // The second waits in the queue...
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.metric("phobos_queue_depth") < 1.0 {
        assert!(Instant::now() < deadline, "the second request never queued");
        std::thread::sleep(Duration::from_millis(20));
    }
    // ...so a third is refused at once.
    let refused = server.request("POST", "/v1/chat/completions", CHAT);
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_openai_error(&refused, "queue full");
    // Both clients hang up mid-stream: their slots and places free up long
    // before the 20-token answers (4 s each) would end.
    let hung_up = Instant::now();
    drop(running);
    drop(waiting);
    server.wait_idle();
    assert!(
        hung_up.elapsed() < Duration::from_secs(3),
        "cancellation took {:?}",
        hung_up.elapsed()
    );
    let after = server.request("POST", "/v1/chat/completions", CHAT);
    assert_eq!(after.status, 200);
}

/// One malformed or hostile request and what must come back.
struct Case {
    name: &'static str,
    send: Send,
    status: u16,
}

enum Send {
    /// Method, path, body, extra headers.
    Request(&'static str, &'static str, String, &'static [&'static str]),
    Raw(Vec<u8>),
    /// Headers and part of the body, then silence past the read timeout.
    Stall,
    /// Fewer body bytes than Content-Length, then the write side closes.
    Truncated,
}

fn chat(body: &str) -> Send {
    Send::Request("POST", "/v1/chat/completions", body.to_owned(), &[])
}

fn raw_post(body: &[u8]) -> Vec<u8> {
    let mut raw = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    raw
}

fn cases() -> Vec<Case> {
    let case = |name, send, status| Case { name, send, status };
    let long_prompt = format!(
        r#"{{"messages": [{{"role": "user", "content": "{}"}}]}}"#,
        "word ".repeat(3000)
    );
    let big_body = format!(
        r#"{{"messages": [{{"role": "user", "content": "{}"}}]}}"#,
        "x".repeat(70_000)
    );
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    vec![
        case("malformed JSON", chat("{\"messages\": ["), 400),
        case("empty body", chat(""), 400),
        case("body is an array", chat("[1, 2]"), 400),
        case("body is a string", chat("\"hi\""), 400),
        case(
            "body is not UTF-8",
            Send::Raw(raw_post(
                b"{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}",
            )),
            400,
        ),
        case("JSON nested 10000 deep", chat(&deep), 400),
        case("no messages", chat("{}"), 400),
        case("empty messages", chat(r#"{"messages": []}"#), 400),
        case("messages not a list", chat(r#"{"messages": "hi"}"#), 400),
        case("message not an object", chat(r#"{"messages": [42]}"#), 400),
        case(
            "message without role",
            chat(r#"{"messages": [{"content": "hi"}]}"#),
            400,
        ),
        case(
            "unknown role",
            chat(r#"{"messages": [{"role": "wizard", "content": "hi"}]}"#),
            400,
        ),
        case(
            "content a number",
            chat(r#"{"messages": [{"role": "user", "content": 7}]}"#),
            400,
        ),
        case(
            "temperature a string",
            chat(r#"{"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}"#),
            400,
        ),
        case(
            "temperature too high",
            chat(r#"{"messages": [{"role": "user", "content": "hi"}], "temperature": 9}"#),
            400,
        ),
        case(
            "top_p zero",
            chat(r#"{"messages": [{"role": "user", "content": "hi"}], "top_p": 0}"#),
            400,
        ),
        case(
            "negative max_tokens",
            chat(r#"{"messages": [{"role": "user", "content": "hi"}], "max_tokens": -1}"#),
            400,
        ),
        case(
            "max_tokens huge float",
            chat(r#"{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1e300}"#),
            400,
        ),
        case(
            "n of 17",
            chat(r#"{"messages": [{"role": "user", "content": "hi"}], "n": 17}"#),
            400,
        ),
        case(
            "stop a number",
            chat(r#"{"messages": [{"role": "user", "content": "hi"}], "stop": 5}"#),
            400,
        ),
        case(
            "top_logprobs without logprobs",
            chat(r#"{"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2}"#),
            400,
        ),
        case(
            "top_logprobs 50",
            chat(
                r#"{"messages": [{"role": "user", "content": "hi"}], "logprobs": true, "top_logprobs": 50}"#,
            ),
            400,
        ),
        case(
            "unknown model",
            chat(r#"{"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}]}"#),
            404,
        ),
        case(
            "bad response_format",
            chat(
                r#"{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "yaml"}}"#,
            ),
            400,
        ),
        case(
            "malformed tool",
            chat(
                r#"{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]}"#,
            ),
            400,
        ),
        case(
            "two tools of one name",
            chat(
                r#"{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}]}"#,
            ),
            400,
        ),
        case(
            "tool parameters a string",
            chat(
                r#"{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": "{}"}}]}"#,
            ),
            400,
        ),
        case(
            "stream a string",
            chat(r#"{"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}"#),
            400,
        ),
        case("prompt over the context", chat(&long_prompt), 400),
        case("body over the size limit", chat(&big_body), 413),
        case(
            "responses without input",
            Send::Request("POST", "/v1/responses", r#"{"model": ""}"#.into(), &[]),
            400,
        ),
        case(
            "responses input nested garbage",
            Send::Request(
                "POST",
                "/v1/responses",
                r#"{"input": [{"type": "function_call_output", "call_id": 5, "output": [[]]}]}"#
                    .into(),
                &[],
            ),
            400,
        ),
        case(
            "responses previous_response_id",
            Send::Request(
                "POST",
                "/v1/responses",
                r#"{"input": "hi", "previous_response_id": "resp_1"}"#.into(),
                &[],
            ),
            400,
        ),
        case(
            "responses over the context",
            Send::Request(
                "POST",
                "/v1/responses",
                format!(r#"{{"input": "{}"}}"#, "word ".repeat(3000)),
                &[],
            ),
            400,
        ),
        case(
            "completions prompt an object",
            Send::Request(
                "POST",
                "/v1/completions",
                r#"{"prompt": {"a": 1}}"#.into(),
                &[],
            ),
            400,
        ),
        case(
            "completions token id out of range",
            Send::Request(
                "POST",
                "/v1/completions",
                r#"{"prompt": [1, 99999999]}"#.into(),
                &[],
            ),
            400,
        ),
        case(
            "completions echo with logprobs",
            Send::Request(
                "POST",
                "/v1/completions",
                r#"{"prompt": "x", "echo": true, "logprobs": 1}"#.into(),
                &[],
            ),
            400,
        ),
        case(
            "completions prompt list holding an object",
            Send::Request(
                "POST",
                "/v1/completions",
                r#"{"prompt": ["x", {"text": "y"}]}"#.into(),
                &[],
            ),
            400,
        ),
        case(
            "completions: prompts x n over the cap",
            Send::Request(
                "POST",
                "/v1/completions",
                format!(
                    r#"{{"prompt": {}, "n": 16}}"#,
                    serde_json::json!(vec!["x"; 5])
                ),
                &[],
            ),
            400,
        ),
        case(
            "completions too many prompts",
            Send::Request(
                "POST",
                "/v1/completions",
                format!(r#"{{"prompt": {}}}"#, serde_json::json!(vec!["x"; 33])),
                &[],
            ),
            400,
        ),
        case(
            "detokenize strings",
            Send::Request("POST", "/detokenize", r#"{"tokens": ["a"]}"#.into(), &[]),
            400,
        ),
        case(
            "tokenize without content",
            Send::Request("POST", "/tokenize", "{}".into(), &[]),
            400,
        ),
        case(
            "GET on a POST route",
            Send::Request("GET", "/v1/chat/completions", String::new(), &[]),
            405,
        ),
        case(
            "DELETE on models",
            Send::Request("DELETE", "/v1/models", String::new(), &[]),
            405,
        ),
        case(
            "unknown path",
            Send::Request("POST", "/v1/nothing", "{}".into(), &[]),
            404,
        ),
        case(
            "path traversal",
            Send::Request("GET", "/../../etc/passwd", String::new(), &[]),
            404,
        ),
        case(
            "Content-Length not a number",
            Send::Raw(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}"
                    .to_vec(),
            ),
            400,
        ),
        case(
            "Content-Length declared over the limit",
            Send::Raw(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n{}"
                    .to_vec(),
            ),
            413,
        ),
        case(
            "a json_schema that admits no value",
            chat(
                r##"{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"anyOf": [{"$ref": "#"}]}}}}"##,
            ),
            400,
        ),
        case(
            "an image part",
            chat(
                r#"{"messages": [{"role": "user", "content": [{"type": "text", "text": "describe"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]}"#,
            ),
            400,
        ),
        case(
            "a content part that is a number",
            chat(r#"{"messages": [{"role": "user", "content": [1, "x"]}]}"#),
            400,
        ),
        case(
            "repeat_penalty zero",
            chat(r#"{"messages": [{"role": "user", "content": "hi"}], "repeat_penalty": 0}"#),
            400,
        ),
        case(
            "stream_options without stream",
            chat(
                r#"{"messages": [{"role": "user", "content": "hi"}], "stream_options": {"include_usage": true}}"#,
            ),
            400,
        ),
        case(
            "max_tokens zero beside max_completion_tokens",
            chat(
                r#"{"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 2, "max_tokens": 0}"#,
            ),
            400,
        ),
        case(
            "another model's object",
            Send::Request("GET", "/v1/models/gpt-9", String::new(), &[]),
            404,
        ),
        case(
            "garbage request line",
            Send::Raw(b"HELLO\r\n\r\n".to_vec()),
            400,
        ),
        case(
            "huge header",
            Send::Raw(
                format!(
                    "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
                    "a".repeat(1_000_000)
                )
                .into_bytes(),
            ),
            431,
        ),
        case("slow client", Send::Stall, 408),
        case("truncated body", Send::Truncated, 400),
    ]
}

fn run_case(server: &Server, case: &Case) -> Option<Response> {
    match &case.send {
        Send::Request(method, path, body, headers) => {
            Some(server.request_with(method, path, body, headers))
        }
        Send::Raw(bytes) => {
            let mut stream = server.connect();
            let _ = stream.write_all(bytes);
            let mut answer = Vec::new();
            let _ = stream.read_to_end(&mut answer);
            (!answer.is_empty()).then(|| serve_common::parse_response(&answer))
        }
        Send::Stall => {
            let mut stream = server.connect();
            stream
                .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"messa")
                .unwrap();
            Some(serve_common::read_response(&mut stream))
        }
        Send::Truncated => {
            let mut stream = server.connect();
            stream
                .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"messa")
                .unwrap();
            stream.shutdown(std::net::Shutdown::Write).unwrap();
            Some(serve_common::read_response(&mut stream))
        }
    }
}

#[test]
fn hostile_requests_get_openai_errors_and_lose_nothing() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start(
        &gemma,
        SCRIPT,
        &[
            "--max-body-bytes",
            "65536",
            "--read-timeout-secs",
            "1",
            "--ctx-size",
            "2048",
            "--parallel",
            "2",
        ],
    );
    let cases = cases();
    assert!(cases.len() >= 25);
    let mut failures = Vec::new();
    for case in &cases {
        let Some(response) = run_case(&server, case) else {
            failures.push(format!(
                "{}: the connection closed without an answer",
                case.name
            ));
            continue;
        };
        if response.status != case.status {
            failures.push(format!(
                "{}: status {} (wanted {}): {}",
                case.name,
                response.status,
                case.status,
                response.text()
            ));
            continue;
        }
        // hyper answers unparseable HTTP itself, with no body; every answer
        // with a body is OpenAI-shaped.
        if !response.body.is_empty() {
            let body: Result<serde_json::Value, _> = serde_json::from_slice(&response.body);
            match body {
                Ok(body)
                    if body["error"]["message"]
                        .as_str()
                        .is_some_and(|m| !m.is_empty())
                        && body["error"]["type"].is_string() => {}
                _ => failures.push(format!(
                    "{}: not an OpenAI error: {}",
                    case.name,
                    response.text()
                )),
            }
        } else if case.status < 400
            || ![400, 431].contains(&case.status)
            || matches!(case.send, Send::Request(..))
        {
            failures.push(format!("{}: empty body", case.name));
        }
    }
    // A client that hangs up in the middle of a stream.
    let mut stream = start_stream(&server, "long please");
    read_until(&mut stream, "\"content\"");
    drop(stream);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    server.wait_idle();
    let ok = server.request("POST", "/v1/chat/completions", CHAT);
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert_eq!(
        ok.json()["choices"][0]["message"]["content"],
        "Hello! How can I help you today?"
    );
    // The gauges are refreshed by the engine thread right after the step
    // that ended the answer: poll briefly rather than race it.
    server.wait_idle();
    assert_eq!(server.metric("phobos_slots_total"), 2.0);
    assert_eq!(server.metric("phobos_kv_cache_capacity_tokens"), 2048.0);
}

#[test]
fn non_streaming_client_that_hangs_up_frees_its_slot() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    // 21 tokens at 150 ms: 3 s if nobody cancelled it.
    let script = SCRIPT.replace("\"replies\"", "\"delay_ms_per_token\": 150, \"replies\"");
    let server = Server::start(&gemma, &script, &["--parallel", "1"]);
    let body = r#"{"messages": [{"role": "user", "content": "long please"}]}"#;
    let mut stream = server.connect();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.metric("phobos_slots_active") < 1.0 {
        assert!(Instant::now() < deadline, "the request never got the slot");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stream);
    server.wait_idle();
    let generated = server.metric("phobos_generated_tokens_total");
    assert!(
        generated < 15.0,
        "{generated} tokens were generated for a client that left"
    );
}

#[test]
fn more_generations_than_the_queue_holds_is_a_400_not_a_503() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start(&gemma, SCRIPT, &["--queue", "2"]);
    let chat = r#"{"messages": [{"role": "user", "content": "hi"}], "n": 4, "max_tokens": 2}"#;
    let response = server.request("POST", "/v1/chat/completions", chat);
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(response.json()["error"]["param"], "n");
    assert!(response.header("retry-after").is_none());
    let prompts = r#"{"prompt": ["a", "b", "c"], "max_tokens": 2}"#;
    let response = server.request("POST", "/v1/completions", prompts);
    assert_eq!(response.status, 400, "{}", response.text());
    // What fits is served.
    let two = r#"{"messages": [{"role": "user", "content": "hi"}], "n": 2, "max_tokens": 2}"#;
    let response = server.request("POST", "/v1/chat/completions", two);
    assert_eq!(response.status, 200, "{}", response.text());
}

#[test]
fn a_client_that_stalls_in_its_headers_is_disconnected() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start(&gemma, SCRIPT, &["--read-timeout-secs", "1"]);
    let mut stalled = server.connect();
    stalled
        .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let started = std::time::Instant::now();
    let mut rest = Vec::new();
    // The connection's own read timeout (30 s) would make this an error.
    let closed = std::io::Read::read_to_end(&mut stalled, &mut rest);
    assert!(
        closed.is_ok(),
        "still open after {:?}: {closed:?}",
        started.elapsed()
    );
    let health = server.request("GET", "/health", "");
    assert_eq!(health.status, 200, "{}", health.text());
}

#[test]
fn a_nested_field_error_names_its_path() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start(&gemma, SCRIPT, &[]);
    let body = r#"{"messages": [{"role": "user", "content": "hi"}], "stream": true,
        "stream_options": {"include_usage": "yes"}}"#;
    let response = server.request("POST", "/v1/chat/completions", body);
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.json()["error"]["param"],
        "stream_options.include_usage"
    );
    // The Responses API is served through the chat route; its errors name
    // the fields as the Responses API spells them.
    for (body, param) in [
        (
            r#"{"input": "hi", "tools": [{"type": "function", "name": "get weather"}]}"#,
            "tools[0].name",
        ),
        (
            r##"{"input": "hi", "text": {"format": {"type": "json_schema", "name": "x", "schema": {"anyOf": [{"$ref": "#"}]}}}}"##,
            "text.format",
        ),
    ] {
        let response = server.request("POST", "/v1/responses", body);
        assert_eq!(response.status, 400, "{body}: {}", response.text());
        assert_eq!(response.json()["error"]["param"], param, "{body}");
        assert!(
            !response.text().contains("function.name")
                && !response.text().contains("response_format"),
            "{}",
            response.text()
        );
    }
}

#[test]
fn a_prompt_over_the_context_names_the_field_it_came_from() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start(&gemma, SCRIPT, &["--ctx-size", "256", "--parallel", "1"]);
    let long = "word ".repeat(400);
    for (path, body, param) in [
        (
            "/v1/chat/completions",
            serde_json::json!({"messages": [{"role": "user", "content": long}]}),
            "messages",
        ),
        (
            "/v1/completions",
            serde_json::json!({"prompt": long}),
            "prompt",
        ),
        ("/v1/responses", serde_json::json!({"input": long}), "input"),
    ] {
        let response = server.request("POST", path, &body.to_string());
        assert_eq!(response.status, 400, "{path}: {}", response.text());
        let error = &response.json()["error"];
        assert_eq!(error["code"], "context_length_exceeded", "{path}: {error}");
        assert_eq!(error["param"], param, "{path}: {error}");
    }
}
