//! Hostile chat templates (they come from model files): each one that runs
//! away, grows a value without bound or recurses deeply stops with a typed
//! limit error, at load (the capability probes render it) or at render,
//! quickly and without exhausting memory or the stack.

use std::time::{Duration, Instant};

use phobos_models::chat::{
    ChatLimit, ChatLimits, ChatMessage, ChatRequest, ChatTemplate, ChatTemplateError,
};

/// The limit `source` hits when loaded (and, if loading succeeds because the
/// probes never reach the runaway part, when rendering a conversation).
fn limit_hit(source: &str) -> (ChatLimit, String) {
    let start = Instant::now();
    let result = ChatTemplate::new(source).and_then(|t| {
        t.render(&ChatRequest {
            messages: vec![ChatMessage::new("user", "hi")],
            add_generation_prompt: true,
            ..ChatRequest::default()
        })
    });
    let elapsed = start.elapsed();
    assert!(
        elapsed < Duration::from_secs(20),
        "{source}: took {elapsed:?}"
    );
    match result {
        Err(ChatTemplateError::Limit { limit, .. }) => (limit, result.unwrap_err().to_string()),
        Err(other) => panic!("{source}: not a limit error: {other}"),
        Ok(text) => panic!("{source}: rendered {} bytes", text.len()),
    }
}

fn assert_limit(source: &str, expected: ChatLimit) {
    let (limit, message) = limit_hit(source);
    assert_eq!(limit, expected, "{source}: {message}");
    assert!(message.contains("limit"), "{message}");
}

#[test]
fn a_huge_tojson_indent_is_refused_at_load() {
    let source = "{{ messages | tojson(indent=1000000000000) }}";
    let err = ChatTemplate::new(source).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err,
            ChatTemplateError::Limit {
                limit: ChatLimit::JsonIndent,
                line: Some(1),
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("tojson indent 1000000000000"), "{text}");
    // A string indent counts by its length.
    assert_limit(
        "{{ messages | tojson(indent='x' * 100000) }}",
        ChatLimit::JsonIndent,
    );
    // Ordinary indents still work.
    let ok = ChatTemplate::new("{{ messages | tojson(indent=4) }}").unwrap();
    assert!(ok.render(&ChatRequest::default()).is_ok());
}

#[test]
fn a_billion_item_range_is_refused() {
    assert_limit("{% for i in range(10**9) %}x{% endfor %}", ChatLimit::Range);
    assert_limit("{{ range(0, 10**12, 3) | length }}", ChatLimit::Range);
}

#[test]
fn string_repetition_is_bounded_before_it_allocates() {
    assert_limit("{{ 'x' * 10**12 }}", ChatLimit::ValueSize);
    assert_limit("{{ 10**12 * 'x' }}", ChatLimit::ValueSize);
    assert_limit("{{ [1, 2] * 2**62 }}", ChatLimit::ValueSize);
    // Folded at compile time by minijinja into a list whose length
    // overflows when iterated (a panic inside minijinja in debug builds).
    assert_limit(
        "{{ [1, 2, 3] * 9223372036854775807 }}",
        ChatLimit::ValueSize,
    );
    // Under the limit, repetition works as in Jinja.
    let t = ChatTemplate::new("{{ 'ab' * 3 }}{{ [1] * 2 }}{{ 2 * 3 }}").unwrap();
    assert_eq!(t.render(&ChatRequest::default()).unwrap(), "ababab[1, 1]6");
}

#[test]
fn doubling_strings_and_lists_stop_at_the_value_limit() {
    assert_limit(
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}\
         {% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
        ChatLimit::ValueSize,
    );
    assert_limit(
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}\
         {% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}",
        ChatLimit::ValueSize,
    );
    assert_limit(
        "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}\
         {% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}",
        ChatLimit::ValueSize,
    );
    // Nested doubling: 2^64 leaves in 64 steps of a shared list.
    let (limit, _) = limit_hit(
        "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}\
         {% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l }}",
    );
    assert!(
        matches!(limit, ChatLimit::ValueSize | ChatLimit::Depth),
        "{limit:?}"
    );
    assert_limit(
        "{% set ns = namespace(d={}) %}{% for i in range(64) %}\
         {% set ns.d = {'a': ns.d, 'b': ns.d} %}{% endfor %}{{ ns.d }}",
        ChatLimit::ValueSize,
    );
}

#[test]
fn deep_recursion_stops_at_the_recursion_limit() {
    assert_limit(
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        ChatLimit::Recursion,
    );
    assert_limit(
        "{% for x in [1] recursive %}{{ loop([x]) }}{% endfor %}",
        ChatLimit::Recursion,
    );
    // Bounded recursion renders.
    let t = ChatTemplate::new(
        "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}",
    )
    .unwrap();
    assert_eq!(t.render(&ChatRequest::default()).unwrap(), "54321");
}

#[test]
fn deep_recursion_is_safe_on_a_small_stack() {
    // Server worker threads have small stacks; the recursion limit must stop
    // a recursive macro before it overflows one.
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| limit_hit("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").0)
        .unwrap();
    assert_eq!(handle.join().unwrap(), ChatLimit::Recursion);
}

#[test]
fn nested_loops_with_huge_output_stop_at_the_work_limit() {
    // Each iteration writes 10 kB, so the work limit comes long before the
    // fuel limit.
    let raw = "x".repeat(10_000);
    assert_limit(
        &format!(
            "{{% for i in range(100000) %}}{{% for j in range(100000) %}}{raw}\
             {{% endfor %}}{{% endfor %}}"
        ),
        ChatLimit::Work,
    );
    assert_limit(
        "{% set s = 'y' * 10000 %}{% for i in range(100000) %}{% for j in range(100000) %}\
         {{ s }}{% endfor %}{% endfor %}",
        ChatLimit::Work,
    );
    // Output captured into a variable is charged the same way.
    assert_limit(
        "{% set s = 'y' * 10000 %}{% for i in range(100000) %}{% set x %}\
         {% for j in range(100000) %}{{ s }}{% endfor %}{% endset %}{% endfor %}",
        ChatLimit::Work,
    );
}

#[test]
fn silent_endless_loops_stop_at_the_fuel_limit() {
    assert_limit(
        "{% for i in range(100000) %}{% for j in range(100000) %}\
         {% endfor %}{% endfor %}",
        ChatLimit::Fuel,
    );
}

#[test]
fn amplifying_filters_and_methods_are_checked_before_they_allocate() {
    assert_limit("{{ 'x' | indent(10**12) }}", ChatLimit::Width);
    assert_limit("{{ '%1000000000000s' | format('x') }}", ChatLimit::Width);
    assert_limit("{{ '%.1000000000f' | format(1.5) }}", ChatLimit::Width);
    assert_limit("{{ '{:>1000000000}'.format('x') }}", ChatLimit::Width);
    assert_limit("{{ '{:*^1000000000}'.format('x') }}", ChatLimit::Width);
    assert_limit("{{ [1, 2, 3] | batch(10**12, 'x') }}", ChatLimit::ValueSize);
    assert_limit("{{ [1, 2, 3] | slice(10**12, 'x') }}", ChatLimit::ValueSize);
    assert_limit(
        "{% set s = 'x' * 10000000 %}{{ (s ~ s) | replace('', s) }}",
        ChatLimit::ValueSize,
    );
    assert_limit(
        "{% set s = 'x' * 10000000 %}{{ (s ~ s).replace('x', s) }}",
        ChatLimit::ValueSize,
    );
    assert_limit(
        "{% set s = 'x' * 10000000 %}{{ range(1000) | join(s) }}",
        ChatLimit::ValueSize,
    );
    assert_limit(
        "{% set s = 'x' * 10000000 %}{{ s.join(range(1000) | map('string')) }}",
        ChatLimit::ValueSize,
    );
    // Ordinary use is unchanged.
    let t = ChatTemplate::new(
        "{{ 'a\nb' | indent(2) }}|{{ '%5.1f' | format(1.25) }}|{{ '{:>4}'.format('x') }}|\
         {{ [1, 2, 3] | batch(2) | list }}|{{ 'abc' | replace('b', 'XY') }}|{{ '-'.join(['a', 'b']) }}",
    )
    .unwrap();
    assert_eq!(
        t.render(&ChatRequest::default()).unwrap(),
        "a\n  b|  1.2|   x|[[1, 2], [3]]|aXYc|a-b"
    );
}

#[test]
fn a_namespace_cannot_contain_itself() {
    assert_limit(
        "{% set ns = namespace() %}{% set ns.a = ns %}{{ ns }}",
        ChatLimit::NamespaceCycle,
    );
    assert_limit(
        "{% set ns = namespace() %}{% set ns.a = [ns] %}{{ ns }}",
        ChatLimit::NamespaceCycle,
    );
    // Namespaces otherwise work as in Jinja, and (as in Hugging Face's
    // environment) refuse underscore names.
    let t = ChatTemplate::new(
        "{% set ns = namespace(n=1, s='a') %}{% for i in range(3) %}{% set ns.n = ns.n * 2 %}\
         {% set ns.s = ns.s ~ i %}{% endfor %}{{ ns.n }} {{ ns.s }}",
    )
    .unwrap();
    assert_eq!(t.render(&ChatRequest::default()).unwrap(), "8 a012");
    let t = ChatTemplate::new("{% set ns = namespace() %}{% set ns._x = 1 %}").unwrap();
    assert!(t.render(&ChatRequest::default()).is_err());
}

#[test]
fn limits_are_configurable_and_scale_with_the_request() {
    let tight = ChatLimits {
        fuel: 1000,
        ..ChatLimits::default()
    };
    let source = "{% for m in messages %}{{ m.content }}{% endfor %}";
    let template = ChatTemplate::with_limits(source, tight).unwrap();
    let few = ChatRequest {
        messages: vec![ChatMessage::new("user", "hi"); 3],
        ..ChatRequest::default()
    };
    assert_eq!(template.render(&few).unwrap(), "hihihi");
    let many = ChatRequest {
        messages: vec![ChatMessage::new("user", "hi"); 2000],
        ..ChatRequest::default()
    };
    assert!(matches!(
        template.render(&many),
        Err(ChatTemplateError::Limit {
            limit: ChatLimit::Fuel,
            ..
        })
    ));
    // A long conversation renders under the default limits: value size and
    // work grow with the request (here 40 MB of text, past the 16 MiB base).
    let template = ChatTemplate::new(source).unwrap();
    let long = ChatRequest {
        messages: vec![ChatMessage::new("user", &"z".repeat(1 << 20)); 40],
        ..ChatRequest::default()
    };
    assert_eq!(template.render(&long).unwrap().len(), 40 << 20);
}

/// The defaults leave real use far from every limit: 801 turns through each
/// real template render in milliseconds.
#[test]
fn every_real_template_renders_a_long_conversation_under_the_default_limits() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/chat/templates");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 70);
    let mut messages = vec![ChatMessage::new("system", "You are a helpful assistant.")];
    for i in 0..400 {
        messages.push(ChatMessage::new(
            "user",
            &format!("Question {i}: what is {i} + {i}?"),
        ));
        messages.push(ChatMessage::new("assistant", &format!("It is {}.", 2 * i)));
    }
    messages.push(ChatMessage::new("user", "Thanks!"));
    let request = ChatRequest {
        messages,
        tools: vec![serde_json::json!({"type": "function", "function": {
            "name": "add", "description": "Adds", "parameters": {"type": "object",
            "properties": {"a": {"type": "integer", "description": "A number"}},
            "required": ["a"]}}})],
        add_generation_prompt: true,
        now_unix_seconds: Some(0),
        ..ChatRequest::default()
    };
    let mut failures = Vec::new();
    for path in &paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // `tools | map(...) | tojson` fails in jinja2 too (chat_templates.rs).
        if name == "llama-cpp-deepseek-r1.jinja" {
            continue;
        }
        let start = Instant::now();
        let result = ChatTemplate::new(std::fs::read_to_string(path).unwrap())
            .and_then(|t| t.render(&request));
        match result {
            Ok(text) if text.contains("Question 399") => {}
            Ok(_) => failures.push(format!("{name}: the last turns are missing")),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        eprintln!("{name}: {:?}", start.elapsed());
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
