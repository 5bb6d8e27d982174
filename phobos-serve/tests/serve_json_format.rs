//! `response_format` over the real engine (Gemma 3 270M Q4_K_M): a small
//! model left alone answers in prose; constrained, it writes JSON, and JSON
//! of the schema asked for, greedy or sampled, streamed or not.

mod serve_common;

use serde_json::{Value, json};
use serve_common::Server;

fn chat(server: &Server, body: &Value) -> Value {
    let response = server.request("POST", "/v1/chat/completions", &body.to_string());
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()
}

fn content(answer: &Value) -> String {
    answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("no content in {answer}"))
        .to_owned()
}

fn person_schema() -> Value {
    json!({
        "type": "json_schema",
        "json_schema": {
            "name": "person",
            "strict": true,
            "schema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "age": {"type": "integer"},
                    "role": {"enum": ["engineer", "artist", "doctor"]},
                    "languages": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                },
                "required": ["name", "age", "role", "languages"],
                "additionalProperties": false,
            },
        },
    })
}

fn assert_person(text: &str) {
    let person: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert!(person["name"].is_string(), "{person}");
    assert!(person["age"].is_i64(), "{person}");
    assert!(
        ["engineer", "artist", "doctor"].contains(&person["role"].as_str().unwrap_or("")),
        "{person}"
    );
    let languages = person["languages"].as_array();
    assert!(
        languages.is_some_and(|l| l.len() <= 3 && l.iter().all(Value::is_string)),
        "{person}"
    );
    assert_eq!(person.as_object().map(|o| o.len()), Some(4), "{person}");
}

#[test]
fn json_modes_constrain_the_answer() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start_engine(&gemma, &["--parallel", "2", "--ctx-size", "1024"]);
    let ask = |format: Value, temperature: f64| {
        json!({
            "messages": [{"role": "user", "content": "Describe a famous scientist."}],
            "max_tokens": 160,
            "temperature": temperature,
            "seed": 3,
            "response_format": format,
        })
    };
    // json_object: any object, and the answer ends because it is complete.
    let answer = chat(&server, &ask(json!({"type": "json_object"}), 0.0));
    let text = content(&answer);
    let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert!(parsed.is_object(), "{parsed}");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop", "{answer}");

    for temperature in [0.0, 1.0] {
        let answer = chat(&server, &ask(person_schema(), temperature));
        assert_eq!(answer["choices"][0]["finish_reason"], "stop", "{answer}");
        assert_person(&content(&answer));
    }

    // Streamed: the deltas join into the same kind of answer.
    let mut body = ask(person_schema(), 0.7);
    body["stream"] = json!(true);
    let response = server.request("POST", "/v1/chat/completions", &body.to_string());
    assert_eq!(response.status, 200, "{}", response.text());
    let joined: String = response
        .text()
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter_map(|chunk| {
            chunk["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_person(&joined);
    server.wait_idle();
}

#[test]
fn schemas_it_cannot_follow_are_a_400_naming_the_field() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start_engine(&gemma, &["--parallel", "1", "--ctx-size", "256"]);
    for format in [
        json!({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "array", "prefixItems": []}}}),
        json!({"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/$defs/none"}}}),
        json!({"type": "json_schema", "json_schema": {"name": "x", "schema": 7}}),
        json!({"type": "json_schema"}),
        json!({"type": "xml"}),
    ] {
        let body =
            json!({"messages": [{"role": "user", "content": "hi"}], "response_format": format});
        let response = server.request("POST", "/v1/chat/completions", &body.to_string());
        assert_eq!(response.status, 400, "{format}: {}", response.text());
        assert_eq!(
            response.json()["error"]["param"],
            "response_format",
            "{format}"
        );
    }
}

fn weather_tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
                "required": ["city", "unit"],
            },
        }},
        {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}},
    ])
}

/// `tool_choice: "required"` or a named function makes a 270M model, which
/// left alone answers in prose, call a tool: streamed or not, sampled or
/// greedy, the answer is a tool call the client can parse.
#[test]
fn tool_choice_forces_a_call() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start_engine(&gemma, &["--parallel", "2", "--ctx-size", "1024"]);
    let ask = |choice: Value, temperature: f64| {
        json!({
            "messages": [{"role": "user", "content": "What's the weather like in Paris today?"}],
            "tools": weather_tools(),
            "tool_choice": choice,
            "max_tokens": 96,
            "temperature": temperature,
            "seed": 5,
        })
    };
    let named = json!({"type": "function", "function": {"name": "get_weather"}});
    for (choice, temperature) in [(json!("required"), 0.0), (named.clone(), 0.0), (named, 1.0)] {
        let answer = chat(&server, &ask(choice.clone(), temperature));
        let choice0 = &answer["choices"][0];
        assert_eq!(choice0["finish_reason"], "tool_calls", "{choice}: {answer}");
        let call = &choice0["message"]["tool_calls"][0]["function"];
        let name = call["name"].as_str().unwrap_or_else(|| panic!("{answer}"));
        assert!(["get_weather", "get_time"].contains(&name), "{answer}");
        let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap_or(""))
            .unwrap_or_else(|e| panic!("{answer}: {e}"));
        assert!(arguments.is_object(), "{answer}");
        if choice["type"] == "function" {
            assert_eq!(name, "get_weather", "{answer}");
            assert!(arguments["city"].is_string(), "{answer}");
            assert!(
                ["celsius", "fahrenheit"].contains(&arguments["unit"].as_str().unwrap_or("")),
                "{answer}"
            );
        }
    }

    // Streamed: the call arrives as tool_calls deltas, none as content.
    let mut body = ask(json!("required"), 0.7);
    body["stream"] = json!(true);
    let response = server.request("POST", "/v1/chat/completions", &body.to_string());
    assert_eq!(response.status, 200, "{}", response.text());
    let chunks: Vec<Value> = response
        .text()
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .collect();
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert!(content.trim().is_empty(), "content leaked: {content:?}");
    assert!(
        chunks
            .iter()
            .any(|c| c["choices"][0]["delta"]["tool_calls"].is_array()),
        "no tool_calls delta in {chunks:?}"
    );
    assert!(
        chunks
            .iter()
            .any(|c| c["choices"][0]["finish_reason"] == "tool_calls"),
        "{chunks:?}"
    );

    // A function that is not among the tools, or `required` without tools.
    for body in [
        json!({"messages": [{"role": "user", "content": "hi"}], "tools": weather_tools(),
               "tool_choice": {"type": "function", "function": {"name": "launch_rocket"}}}),
        json!({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"}),
        json!({"messages": [{"role": "user", "content": "hi"}], "tools": weather_tools(), "tool_choice": "sometimes"}),
    ] {
        let response = server.request("POST", "/v1/chat/completions", &body.to_string());
        assert_eq!(response.status, 400, "{body}: {}", response.text());
        assert_eq!(response.json()["error"]["param"], "tool_choice", "{body}");
    }
    server.wait_idle();
}

/// Gemma 3's template does not render `tools`; the prompt still describes
/// them (the polyfill's preamble, in Gemma's first user turn), so with
/// `tool_choice: auto` a model can call one, and a past call and its result
/// render as that markup and a user turn. A scripted model answers
/// with a call only when it sees the definition.
#[test]
fn tools_reach_a_template_that_does_not_render_them() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let script = r#"{
      "replies": [
        {"when_prompt_contains": "\"name\":\"get_weather\",\"description\":\"Current weather for a city\"",
         "text": "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"celsius\"}}\n</tool_call>"}
      ],
      "default": "I know of no tools."
    }"#;
    let server = Server::start(&gemma, script, &[]);
    let ask = json!({
        "messages": [{"role": "user", "content": "Weather in Oslo?"}],
        "tools": weather_tools(),
    });
    let prompt = server
        .request("POST", "/apply-template", &ask.to_string())
        .json();
    let prompt = prompt["prompt"].as_str().unwrap_or_default().to_owned();
    assert!(
        prompt.starts_with("<bos><start_of_turn>user\nYou can call the functions listed below."),
        "{prompt}"
    );
    assert!(prompt.contains("\"name\":\"get_time\""), "{prompt}");
    assert!(
        prompt.ends_with("Weather in Oslo?<end_of_turn>\n<start_of_turn>model\n"),
        "{prompt}"
    );

    let answer = chat(&server, &ask);
    let choice = &answer["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{answer}");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather", "{answer}");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{answer}: {e}"));
    assert_eq!(arguments, json!({"city": "Oslo", "unit": "celsius"}));

    // The round trip: the call and its result render in the prompt.
    let follow_up = json!({
        "messages": [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": "{\"temperature\": 3}"},
        ],
        "tools": weather_tools(),
    });
    let prompt = server
        .request("POST", "/apply-template", &follow_up.to_string())
        .json();
    let prompt = prompt["prompt"].as_str().unwrap_or_default();
    assert!(
        prompt.contains(
            "<start_of_turn>model\n<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\",\"unit\":\"celsius\"}}\n</tool_call><end_of_turn>"
        ),
        "{prompt}"
    );
    assert!(
        prompt.ends_with(
            "<start_of_turn>user\n{\"temperature\": 3}<end_of_turn>\n<start_of_turn>model\n"
        ),
        "{prompt}"
    );

    // tool_choice none hides them again.
    let mut hidden = ask.clone();
    hidden["tool_choice"] = json!("none");
    let prompt = server
        .request("POST", "/apply-template", &hidden.to_string())
        .json();
    assert_eq!(
        prompt["prompt"],
        "<bos><start_of_turn>user\nWeather in Oslo?<end_of_turn>\n<start_of_turn>model\n"
    );
    server.wait_idle();
}
