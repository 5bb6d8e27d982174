//! `phobos serve` over the real engine (Gemma 3 270M Q4_K_M): requests
//! served together share batched decode steps (seen through /metrics) and
//! get, greedily, the very answers they get one at a time; log-probabilities
//! come from the model's distribution; a seed makes sampling repeatable.

mod serve_common;

use serde_json::{Value, json};
use serve_common::Server;

const PROMPTS: [&str; 4] = [
    "The capital of France is",
    "1, 2, 3, 4, 5,",
    "Once upon a time, in a small village,",
    "def fibonacci(n):",
];

fn complete(server: &Server, body: &Value) -> Value {
    let response = server.request("POST", "/v1/completions", &body.to_string());
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()
}

fn greedy(prompt: &str) -> Value {
    json!({"prompt": prompt, "max_tokens": 10, "temperature": 0})
}

/// Fills every one of the four slots with an unrelated prompt, so the next
/// requests prefill their whole prompts (no prefix to reuse).
fn evict(server: &Server) {
    let body =
        json!({"prompt": ["Zebras", "Yaks eat", "Xylophones are", "Walruses"], "max_tokens": 1});
    complete(server, &body);
}

#[test]
fn concurrent_requests_share_decode_steps_and_match_solo_answers() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start_engine(&gemma, &["--parallel", "4", "--ctx-size", "1024"]);
    let solo: Vec<Value> = PROMPTS
        .iter()
        .map(|p| complete(&server, &greedy(p))["choices"][0]["text"].clone())
        .collect();
    assert!(
        solo.iter()
            .all(|t| t.as_str().is_some_and(|t| !t.is_empty())),
        "{solo:?}"
    );
    evict(&server);
    let steps_before = server.metric("phobos_decode_steps_total");
    let tokens_before = server.metric("phobos_generated_tokens_total");
    let together: Vec<Value> = std::thread::scope(|scope| {
        let handles: Vec<_> = PROMPTS
            .iter()
            .map(|p| scope.spawn(|| complete(&server, &greedy(p))["choices"][0]["text"].clone()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        together, solo,
        "batched greedy answers differ from solo ones"
    );
    let steps = server.metric("phobos_decode_steps_total") - steps_before;
    let tokens = server.metric("phobos_generated_tokens_total") - tokens_before;
    // Four requests of 10 tokens arriving together: most steps carry several.
    assert!(
        tokens / steps >= 2.0,
        "{tokens} tokens in {steps} decode steps: the slots were not batched"
    );
    // One list of prompts is served the same way, one choice per prompt,
    // its four prompts prefilled in one batched forward pass.
    evict(&server);
    let body = json!({"prompt": PROMPTS, "max_tokens": 10, "temperature": 0});
    let multi = complete(&server, &body);
    let mut texts = vec![Value::Null; PROMPTS.len()];
    for choice in multi["choices"].as_array().unwrap() {
        texts[choice["index"].as_u64().unwrap() as usize] = choice["text"].clone();
    }
    assert_eq!(texts, solo, "multi-prompt answers differ from solo ones");
    server.wait_idle();
}

#[test]
fn logprobs_are_the_model_distribution_and_seeds_repeat() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start_engine(&gemma, &["--parallel", "2", "--ctx-size", "512"]);
    let body = json!({"prompt": PROMPTS[0], "max_tokens": 8, "temperature": 0, "logprobs": 3});
    let answer = complete(&server, &body);
    let logprobs = &answer["choices"][0]["logprobs"];
    let chosen = logprobs["token_logprobs"].as_array().unwrap();
    let tops = logprobs["top_logprobs"].as_array().unwrap();
    assert_eq!(chosen.len(), 8, "{answer}");
    for (chosen, top) in chosen.iter().zip(tops) {
        let chosen = chosen.as_f64().unwrap();
        let top: Vec<f64> = top
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let best = top.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // Greedy takes the most likely token; probabilities are at most 1
        // and the three best never sum past 1.
        assert!((chosen - best).abs() < 1e-5, "{chosen} vs {top:?}");
        assert!(chosen <= 0.0, "{chosen}");
        let mass: f64 = top.iter().map(|l| l.exp()).sum();
        assert!(mass <= 1.0 + 1e-4, "{top:?}");
    }
    let sampled = json!({"prompt": PROMPTS[2], "max_tokens": 12, "temperature": 0.9, "seed": 42});
    let first = complete(&server, &sampled)["choices"][0]["text"].clone();
    let second = complete(&server, &sampled)["choices"][0]["text"].clone();
    assert_eq!(first, second, "the same seed sampled different answers");
    server.wait_idle();
}

/// `n` choices per prompt, in OpenAI's order, each its own sample (seeded:
/// repeatable); `logit_bias` bans or forces tokens.
#[test]
fn n_choices_and_logit_bias() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start_engine(&gemma, &["--parallel", "4", "--ctx-size", "512"]);
    let body = json!({"prompt": [PROMPTS[2], PROMPTS[3]], "n": 3, "max_tokens": 12,
                      "temperature": 1.0, "seed": 11});
    let answer = complete(&server, &body);
    let choices = answer["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 6, "{answer}");
    for (i, choice) in choices.iter().enumerate() {
        assert_eq!(choice["index"], i, "{answer}");
    }
    let texts: Vec<&str> = choices
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    assert!(
        texts[..3].iter().any(|t| *t != texts[0]),
        "three samples of one prompt were identical: {texts:?}"
    );
    let again = complete(&server, &body);
    assert_eq!(answer["choices"], again["choices"], "seeded choices repeat");

    let chat = json!({"messages": [{"role": "user", "content": "Name a color."}], "n": 2,
                      "max_tokens": 6, "temperature": 0});
    let response = server.request("POST", "/v1/chat/completions", &chat.to_string());
    assert_eq!(response.status, 200, "{}", response.text());
    let answer = response.json();
    assert_eq!(
        answer["choices"].as_array().map(Vec::len),
        Some(2),
        "{answer}"
    );
    assert_eq!(answer["choices"][1]["index"], 1, "{answer}");
    // One prompt, counted once however many choices it has (as OpenAI).
    let prompt_only = json!({"messages": [{"role": "user", "content": "Name a color."}],
                             "max_tokens": 6, "temperature": 0});
    let single = server.request("POST", "/v1/chat/completions", &prompt_only.to_string());
    assert_eq!(
        answer["usage"]["prompt_tokens"],
        single.json()["usage"]["prompt_tokens"],
        "{answer}"
    );

    // Greedy's first token, banned, is never produced; another, forced.
    let greedy_body = json!({"prompt": PROMPTS[0], "max_tokens": 1, "temperature": 0,
                             "logprobs": 1});
    let first = complete(&server, &greedy_body);
    let token = first["choices"][0]["text"].as_str().unwrap().to_owned();
    let tokenized = server.request("POST", "/tokenize", &json!({"content": token}).to_string());
    let id = tokenized.json()["tokens"][0].as_u64().unwrap();
    let mut banned = greedy_body.clone();
    banned["logit_bias"] = json!({ id.to_string(): -100 });
    let answer = complete(&server, &banned);
    assert_ne!(
        answer["choices"][0]["text"].as_str(),
        Some(token.as_str()),
        "{answer}"
    );
    let mut forced = json!({"prompt": PROMPTS[0], "max_tokens": 3, "temperature": 0});
    forced["logit_bias"] = json!({"236770": 100});
    let answer = complete(&server, &forced);
    let text = answer["choices"][0]["text"].as_str().unwrap();
    let detok = server.request(
        "POST",
        "/detokenize",
        &json!({"tokens": [236770, 236770, 236770]}).to_string(),
    );
    assert_eq!(text, detok.json()["content"].as_str().unwrap(), "{answer}");
    server.wait_idle();
}

#[test]
fn a_request_whose_json_schema_dead_ends_fails_alone() {
    let Some(gemma) = serve_common::gemma() else {
        return;
    };
    let server = Server::start_engine(&gemma, &["--parallel", "2", "--ctx-size", "1024"]);
    // An object whose required property admits no value: it compiles (the
    // object can start), but after `{"a":` the format's sampler finds no
    // token to continue.
    let schema = json!({"type": "object", "required": ["a"],
        "properties": {"a": {"anyOf": [{"$ref": "#/properties/a"}]}}});
    let dead_end = json!({
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 100,
        "response_format": {"type": "json_schema",
            "json_schema": {"name": "loop", "schema": schema}},
    });
    let innocent = json!({"prompt": PROMPTS[2], "max_tokens": 200, "temperature": 0,
        "ignore_eos": true});
    let (dead, fine) = std::thread::scope(|scope| {
        let fine = scope.spawn(|| server.request("POST", "/v1/completions", &innocent.to_string()));
        std::thread::sleep(std::time::Duration::from_millis(200));
        let dead = server.request("POST", "/v1/chat/completions", &dead_end.to_string());
        (dead, fine.join().unwrap())
    });
    assert_eq!(dead.status, 500, "{}", dead.text());
    assert_eq!(fine.status, 200, "{}", fine.text());
    assert_eq!(
        fine.json()["usage"]["completion_tokens"],
        200,
        "{}",
        fine.text()
    );
}
