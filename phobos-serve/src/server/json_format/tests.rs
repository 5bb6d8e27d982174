use std::sync::Arc;

use phobos_models::sample::{Sampler, SamplerConfig};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::{Alternative, JsonConstraint, JsonFormat, JsonMatcher, JsonShape, TokenPieces};

fn matcher(schema: &Value) -> JsonMatcher {
    let shape = JsonShape::compile(schema).unwrap_or_else(|e| panic!("{schema}: {e}"));
    JsonMatcher::new(Arc::new(shape))
}

/// Where `text` is refused (`None`: all of it is read and it can end).
fn first_refusal(matcher: &mut JsonMatcher, text: &str) -> Option<usize> {
    for (at, &b) in text.as_bytes().iter().enumerate() {
        if !matcher.feed(b) {
            return Some(at);
        }
    }
    (!matcher.can_end()).then_some(text.len())
}

fn accepts(schema: &Value, text: &str) -> bool {
    first_refusal(&mut matcher(schema), text).is_none()
}

#[test]
fn any_value_accepts_json_and_refuses_what_is_not() {
    let any = json!({});
    for text in [
        r#"{"a": [1, -2.5e+3, 0, true, false, null], "b": {"c": "d\"\\\u00e9"}}"#,
        "[]",
        "{}",
        r#""x""#,
        "0",
        "-0.5E-7",
        "true",
        "null",
        " [ 1 , 2 ] ",
    ] {
        assert!(accepts(&any, text.trim_end()), "{text}");
    }
    for (text, refused_at) in [
        ("[1,]", 3),
        ("{,}", 1),
        ("01", 1),
        ("1.", 2),
        ("-", 1),
        (r#"{"a" 1}"#, 5),
        (r#"{"a":1,}"#, 7),
        ("tru", 3),
        ("[1] 2", 3),
        ("\"a\u{1}\"", 2),
        (r#""\x""#, 2),
        ("{'a':1}", 1),
    ] {
        assert_eq!(
            first_refusal(&mut matcher(&any), text),
            Some(refused_at),
            "{text}"
        );
    }
}

#[test]
fn json_object_mode_wants_an_object() {
    let mut m = JsonMatcher::new(Arc::new(JsonShape::any_object()));
    assert!(!m.clone().feed(b'['));
    assert!(!m.clone().feed(b'1'));
    assert!(!m.can_end());
    assert_eq!(first_refusal(&mut m, r#" {"k": [1, {"n": null}]}"#), None);
    assert!(m.is_finished());
    assert!(!m.feed(b' '), "nothing may follow the object");
}

#[test]
fn objects_take_their_listed_keys_required_ones_first_to_close() {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name"],
    });
    assert!(accepts(&schema, r#"{"name": "Ada", "age": 36}"#));
    assert!(accepts(&schema, r#"{"age": 36, "name": "Ada"}"#));
    assert!(accepts(&schema, r#"{"name": "Ada"}"#));
    // Missing the required key: the object cannot close.
    assert_eq!(
        first_refusal(&mut matcher(&schema), r#"{"age": 3}"#),
        Some(9)
    );
    assert_eq!(first_refusal(&mut matcher(&schema), "{}"), Some(1));
    // An unlisted key, a repeated key, a wrong type.
    assert_eq!(
        first_refusal(&mut matcher(&schema), r#"{"nick": 1}"#),
        Some(3)
    );
    assert_eq!(
        first_refusal(&mut matcher(&schema), r#"{"name": "a", "name": "b"}"#),
        Some(15)
    );
    assert_eq!(
        first_refusal(&mut matcher(&schema), r#"{"age": 3.5}"#),
        Some(9)
    );
    assert_eq!(
        first_refusal(&mut matcher(&schema), r#"{"name": 1}"#),
        Some(9)
    );
    // Every key used: a comma has nothing to introduce.
    assert_eq!(
        first_refusal(&mut matcher(&schema), r#"{"name": "a", "age": 1,"#),
        Some(22)
    );
}

#[test]
fn additional_properties_open_the_key_set() {
    let schema = json!({
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "additionalProperties": {"type": "boolean"},
    });
    assert!(accepts(&schema, r#"{"id": 1, "extra": true, "i": false}"#));
    assert!(!accepts(&schema, r#"{"extra": 1}"#));
    assert!(!accepts(&schema, r#"{"id": true}"#));
    // An object without listed properties is open to any key and value.
    assert!(accepts(&json!({"type": "object"}), r#"{"x": [1, "y"]}"#));
}

#[test]
fn enums_consts_type_lists_and_any_of() {
    let colors = json!({"enum": ["red", "green", 7, null]});
    for ok in [r#""red""#, r#""green""#, "7", "null"] {
        assert!(accepts(&colors, ok), "{ok}");
    }
    for bad in [r#""blue""#, "70", r#""re""#, "true"] {
        assert!(!accepts(&colors, bad), "{bad}");
    }
    assert!(accepts(&json!({"const": {"a": 1}}), r#"{"a":1}"#));
    assert!(!accepts(&json!({"const": {"a": 1}}), r#"{"a": 1}"#));
    let nullable = json!({"type": ["string", "null"]});
    assert!(accepts(&nullable, r#""s""#) && accepts(&nullable, "null"));
    assert!(!accepts(&nullable, "1"));
    let either =
        json!({"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "boolean"}}]});
    assert!(accepts(&either, "12") && accepts(&either, "[true, false]"));
    assert!(!accepts(&either, "1.5") && !accepts(&either, "[1]"));
}

#[test]
fn arrays_keep_their_item_counts() {
    let schema =
        json!({"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 2});
    assert!(accepts(&schema, "[1]") && accepts(&schema, "[1, 2.5]"));
    assert_eq!(first_refusal(&mut matcher(&schema), "[]"), Some(1));
    assert_eq!(first_refusal(&mut matcher(&schema), "[1,2,"), Some(4));
}

#[test]
fn references_resolve_recursively() {
    // A pydantic-style tree: the root refers to itself through $defs.
    let schema = json!({
        "$ref": "#/$defs/Node",
        "$defs": {"Node": {
            "type": "object",
            "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            },
            "required": ["value", "children"],
            "additionalProperties": false,
        }},
    });
    assert!(accepts(
        &schema,
        r#"{"value": 1, "children": [{"value": 2, "children": []}]}"#
    ));
    assert!(!accepts(
        &schema,
        r#"{"value": 1, "children": [{"value": 2}]}"#
    ));
}

#[test]
fn reference_cycles_of_alternatives_stay_cheap() {
    // Each level names the same definition three times: following the
    // alternatives recursively would take 3^64 steps.
    let schema = json!({
        "$defs": {"A": {"anyOf": [
            {"$ref": "#/$defs/A"}, {"$ref": "#/$defs/A"}, {"$ref": "#/$defs/A"},
            {"type": "array", "items": {"$ref": "#/$defs/A"}},
            {"type": "integer"},
        ]}},
        "$ref": "#/$defs/A",
    });
    assert!(accepts(&schema, "[[1, [2]], 3]") && accepts(&schema, "4"));
    assert!(!accepts(&schema, r#"["x"]"#));
    // A cycle with nothing under it admits no value: as the root, the
    // schema is refused when compiled; below it, the matcher refuses it.
    let empty = json!({"$defs": {"B": {"anyOf": [{"$ref": "#/$defs/B"}]}}, "$ref": "#/$defs/B"});
    let refused = JsonShape::compile(&empty).map(|_| ()).unwrap_err();
    assert!(refused.0.contains("admits no value"), "{refused}");
    let nested = json!({"$defs": {"B": {"anyOf": [{"$ref": "#/$defs/B"}]}},
        "type": "array", "items": {"$ref": "#/$defs/B"}});
    assert!(accepts(&nested, "[]"));
    assert_eq!(first_refusal(&mut matcher(&nested), "[1"), Some(1));
}

#[test]
fn schemas_it_cannot_follow_are_refused_with_the_reason() {
    for (schema, words) in [
        (json!({"type": "array", "prefixItems": [{}]}), "prefixItems"),
        (json!({"not": {}}), "not"),
        (json!({"$ref": "#/$defs/missing"}), "does not exist"),
        (
            json!({"$ref": "http://example.com/s.json"}),
            "inside the schema",
        ),
        (json!({"type": "decimal"}), "unknown schema type"),
        (json!({"enum": []}), "'enum'"),
        (
            json!({"type": "object", "properties": {"a": {}}, "required": ["b"]}),
            "required",
        ),
        (json!(false), "admits no value"),
        (
            json!({"type": "array", "minItems": 3, "maxItems": 2}),
            "minItems",
        ),
    ] {
        let err = JsonShape::compile(&schema).err().map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains(words)),
            "{schema}: {err:?}"
        );
    }
    let many: Vec<Value> = (0..65).map(|_| json!({"type": "string"})).collect();
    assert!(JsonShape::compile(&json!({"anyOf": many})).is_err());
    let mut deep = json!({});
    for _ in 0..100 {
        deep = json!({"type": "array", "items": deep});
    }
    assert!(JsonShape::compile(&deep).is_err());
}

#[test]
fn gaps_are_compact_or_pretty_and_nesting_is_bounded() {
    let any = json!({});
    for text in ["[1, 2]", "[\n  1,\n\t2\r\n]", "{\"a\" :\n 1}", " 0"] {
        assert!(accepts(&any, text), "{text:?}");
    }
    // Two spaces, a blank line, a space before a line break, and an
    // indentation past the bound are each one byte too many.
    for (text, refused_at) in [("[  1]", 2), ("[\n\n1]", 2), ("[ \n1]", 2)] {
        assert_eq!(
            first_refusal(&mut matcher(&any), text),
            Some(refused_at),
            "{text:?}"
        );
    }
    let mut m = matcher(&any);
    assert!(m.feed(b'[') && m.feed(b'\n'));
    assert!((0..24).all(|_| m.feed(b' ')));
    assert!(!m.clone().feed(b' '), "a 25th byte of indentation");
    assert!(m.feed(b'1') && m.feed(b' '), "a new gap after a value byte");
    // Numbers: 16 digits before the point, 16 after, 3 in the exponent
    // (a model left to it writes digits until the token limit).
    let digits = |n| "7".repeat(n);
    for (text, refused_at) in [
        (digits(17), 16),
        (format!("1.{}", digits(17)), 18),
        ("1e1234".to_owned(), 5),
    ] {
        assert_eq!(
            first_refusal(&mut matcher(&any), &text),
            Some(refused_at),
            "{text}"
        );
    }
    assert!(accepts(
        &any,
        &format!("-{}.{}e-123", digits(16), digits(16))
    ));
    let deep = "[".repeat(65);
    assert_eq!(first_refusal(&mut matcher(&any), &deep), Some(64));
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        // Few digits: a byte changed to `e` then makes an exponent serde_json
        // reads exactly (it skips the digits of one past i32).
        (-100_000_000i64..100_000_000).prop_map(|n| json!(n as f64 / 100.0)),
        "[ -~\u{e9}\u{4e2d}\"\\\\\n\t]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\"]{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Completeness against serde_json's writer: every value, compact or
    /// pretty, is read to the end.
    #[test]
    fn every_serialized_value_is_accepted(value in json_value()) {
        let any = json!({});
        let compact = serde_json::to_string(&value).unwrap_or_default();
        let pretty = serde_json::to_string_pretty(&value).unwrap_or_default();
        prop_assert_eq!(first_refusal(&mut matcher(&any), &compact), None, "{}", compact);
        prop_assert_eq!(first_refusal(&mut matcher(&any), &pretty), None, "{}", pretty);
    }

    /// Soundness against serde_json's parser: a mutated text the matcher
    /// reads to a possible end parses, and one serde_json refuses is
    /// refused by the matcher too.
    #[test]
    fn what_it_accepts_parses(value in json_value(), at in any::<prop::sample::Index>(),
                              byte in prop::sample::select(b"{}[]\",:0-.eE+ tfn\\x1".to_vec()),
                              insert in any::<bool>()) {
        let mut text = serde_json::to_vec(&value).unwrap_or_default();
        let at = at.index(text.len() + 1);
        if insert || at == text.len() {
            text.insert(at, byte);
        } else {
            text[at] = byte;
        }
        let mut m = matcher(&json!({}));
        let read = text.iter().all(|&b| m.feed(b)) && m.can_end();
        // The matcher ends at the value: trailing whitespace, which
        // serde_json skips, would be a token after the end.
        let trailing_space = text.last().is_some_and(u8::is_ascii_whitespace);
        let parsed = serde_json::from_slice::<Value>(&text);
        // serde_json refuses numbers past f64's range, which JSON's grammar
        // allows, and stops reading there: no verdict on the rest.
        prop_assume!(!parsed.as_ref().is_err_and(|e| e.to_string().contains("out of range")));
        // One byte can make a number longer than the matcher allows (a
        // fraction's point turned into an exponent's `e`): no verdict.
        prop_assume!(!past_number_bounds(&text));
        let parses = parsed.is_ok() && !trailing_space;
        // What the matcher bounds beyond JSON (whitespace in one gap,
        // nesting) cannot come from one byte changed in compact JSON, so
        // the two agree.
        prop_assert_eq!(read, parses, "{}", String::from_utf8_lossy(&text));
    }
}

/// Whether a run of number characters in `text` has more digits than the
/// matcher reads: 16 before the point, 16 after it, 3 in the exponent.
fn past_number_bounds(text: &[u8]) -> bool {
    let digits = |s: &[u8]| s.iter().filter(|b| b.is_ascii_digit()).count();
    text.split(|b| !b"0123456789eE+-.".contains(b)).any(|run| {
        let (mantissa, exponent) = match run.iter().position(|&b| b == b'e' || b == b'E') {
            Some(i) => (&run[..i], &run[i + 1..]),
            None => (run, &[][..]),
        };
        let (integer, fraction) = match mantissa.iter().position(|&b| b == b'.') {
            Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
            None => (mantissa, &[][..]),
        };
        digits(integer) > 16 || digits(fraction) > 16 || digits(exponent) > 3
    })
}

fn pieces(texts: &[&str], end_of_generation: u32) -> TokenPieces {
    TokenPieces {
        pieces: texts.iter().map(|t| t.as_bytes().into()).collect(),
        end_of_generation: (0..texts.len() as u32)
            .map(|id| id == end_of_generation)
            .collect(),
    }
}

#[test]
fn constrained_sampling_writes_the_schema_whatever_the_model_prefers() {
    // A model that would rather chat: "Sure" has the top logit at every
    // step, the end token the second. Greedy and sampled draws alike must
    // still write a valid object and then end.
    let vocab = [
        "Sure", "<eos>", "{", "}", "\"name\"", ":", " \"", "Ada", "\"", ",", "\"age\"", "3", "6",
        // Single bytes, as every real vocabulary has (byte fallback or
        // byte-level BPE), so a key begun with ` "` can be finished.
        "n", "a", "m", "e", "g",
    ];
    let eos = 1;
    let pieces = pieces(&vocab, eos);
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": false,
    });
    for temperature in [0.0, 0.8] {
        let shape = JsonShape::compile(&schema).unwrap_or_else(|e| panic!("{e}"));
        let mut sampler = Sampler::new(SamplerConfig {
            temperature,
            seed: 7,
            ..SamplerConfig::default()
        });
        let mut constraint = JsonConstraint::new(JsonFormat::plain(shape));
        let logits: Vec<f32> = (0..vocab.len()).map(|i| 10.0 - i as f32).collect();
        let mut text = String::new();
        let mut ended = false;
        for _ in 0..64 {
            let token = constraint
                .sample(&mut sampler, &pieces, &logits, None)
                .unwrap_or_else(|e| panic!("{e} after {text:?} at temperature {temperature}"));
            if token.id == eos {
                ended = true;
                break;
            }
            text.push_str(vocab[token.id as usize]);
        }
        assert!(ended, "generation ended: {text}");
        let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(
            parsed["name"].is_string() && parsed["age"].is_i64(),
            "{parsed}"
        );
    }
}

#[test]
fn logprobs_are_the_models_own() {
    let pieces = pieces(&["x", "{", "}", "<eos>"], 3);
    let mut constraint = JsonConstraint::new(JsonFormat::plain(JsonShape::any_object()));
    let mut sampler = Sampler::new(SamplerConfig::greedy());
    let logits = [5.0, 1.0, 0.0, 0.0];
    let token = constraint
        .sample(&mut sampler, &pieces, &logits, Some(2))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(token.id, 1);
    let (logprob, top) = phobos_models::sample::log_probs(&logits, 1, 2);
    assert_eq!((token.logprob, token.top_logprobs), (logprob, top));
}

#[test]
fn a_vocabulary_that_cannot_continue_is_an_error_not_a_hang() {
    let pieces = pieces(&["x", "<eos>"], 1);
    let mut constraint = JsonConstraint::new(JsonFormat::plain(JsonShape::any_object()));
    let mut sampler = Sampler::new(SamplerConfig::greedy());
    assert!(
        constraint
            .sample(&mut sampler, &pieces, &[1.0, 0.0], None)
            .is_err()
    );
}

#[test]
fn a_framed_format_needs_its_prefix_value_and_suffix_before_the_end() {
    // Tokens that straddle the frame's edges, as real vocabularies' do.
    let vocab = [
        "<eos>",
        "<tool",
        "_call>\n{",
        "\"a\"",
        ":",
        "}\n</",
        "1",
        "tool_call>",
        "}",
        "x",
    ];
    let pieces = pieces(&vocab, 0);
    let shape = JsonShape::compile(
        &json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let format = JsonFormat::one_of(vec![Alternative {
        prefix: (*b"<tool_call>\n").into(),
        shape: Arc::new(shape),
        suffix: (*b"\n</tool_call>").into(),
    }]);
    let mut constraint = JsonConstraint::new(format.unwrap_or_else(|| panic!("one alternative")));
    let mut sampler = Sampler::new(SamplerConfig::greedy());
    let mut text = String::new();
    // Greedy on a flat ranking: each step takes the lowest id allowed.
    let logits: Vec<f32> = (0..vocab.len()).map(|i| 10.0 - i as f32).collect();
    for _ in 0..16 {
        let token = constraint
            .sample(&mut sampler, &pieces, &logits, None)
            .unwrap_or_else(|e| panic!("{e} after {text:?}"));
        if token.id == 0 {
            break;
        }
        text.push_str(vocab[token.id as usize]);
    }
    assert_eq!(text, "<tool_call>\n{\"a\":1}\n</tool_call>");
}
