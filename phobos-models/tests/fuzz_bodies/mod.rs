//! The bodies of the fuzz targets in fuzz/fuzz_targets/. Each target is
//! one line calling a function here, and tests/fuzz_bounded.rs calls the
//! same functions on the committed seeds and on random inputs, so a
//! regression any target would catch fails `make test` without nightly.
//!
//! Every function takes raw bytes and decodes them itself (no `arbitrary`
//! derive), so a committed seed means the same thing to both callers. A
//! function panics only when an invariant of the library breaks; an `Err`
//! from the library is a correct answer to hostile input.

#![allow(dead_code)]

use phobos_models::chat::{ChatMessage, ChatRequest, ChatTemplate, ToolCall};
use phobos_models::gguf::{Array, Gguf, GgufWriter, Value, dequantize_view};
use phobos_models::quant::{self, ALL_TYPES};
use phobos_models::tokenizer::{StreamDecoder, Tokenizer, TokenizerError};

/// A tiny reader over fuzz input; past the end it yields zeros and empty
/// slices, so every input decodes to something.
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    pub fn take(&mut self, len: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(len.min(self.data.len()));
        self.data = rest;
        head
    }

    /// A short string: a length byte (0..=31), then that many bytes.
    pub fn short_str(&mut self) -> String {
        let len = usize::from(self.u8() % 32);
        String::from_utf8_lossy(self.take(len)).into_owned()
    }

    pub fn rest(&mut self) -> &'a [u8] {
        self.take(self.data.len())
    }
}

/// Touches every element so lazily wrong lengths would surface.
fn walk_array(array: &Array) -> usize {
    match array {
        Array::Array(items) => items.iter().map(walk_array).sum::<usize>() + 1,
        Array::String(items) => items.iter().map(String::len).sum(),
        other => (0..other.len()).filter_map(|i| other.integer_at(i)).count() + other.len(),
    }
}

/// Arbitrary bytes into the GGUF reader: an error, or a file whose every
/// metadata value, tensor and derived size can be read.
pub fn gguf_reader(data: &[u8]) {
    let Ok(gguf) = Gguf::from_bytes(data) else {
        return;
    };
    let mut touched = 0usize;
    for (key, value) in gguf.metadata() {
        touched += key.len() + value.to_string().len();
        if let Value::Array(array) = value {
            touched += walk_array(array);
        }
        let _ = gguf.get_u32(key);
        let _ = gguf.get_str(key);
        let _ = gguf.get_f32(key);
    }
    let _ = gguf.arch();
    for view in gguf.tensor_views() {
        let info = view.info;
        assert_eq!(view.data.len() as u64, info.n_bytes, "{}", view.name());
        // Every size a consumer derives from the dims fits in i64.
        let rows = info
            .dims
            .iter()
            .skip(1)
            .try_fold(1u64, |acc, &d| acc.checked_mul(d));
        assert!(rows.is_some_and(|r| r == info.n_rows() && r <= i64::MAX as u64));
        assert!(info.row_len() <= i64::MAX as u64);
        assert!(info.ty.bytes_for(info.n_elements) == Some(info.n_bytes));
        // Bound the work per input; the directory was validated either way.
        if view.n_elements() <= 1 << 16
            && let Ok(values) = dequantize_view(&view)
        {
            assert_eq!(values.len() as u64, view.n_elements());
        }
    }
    std::hint::black_box(touched);
}

/// A type (by table index) and bytes: dequantizing whole blocks gives one
/// float per element, and quantizing arbitrary floats (NaN and infinities
/// included) appends whole blocks.
pub fn dequant(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let info = &ALL_TYPES[usize::from(bytes.u8()) % ALL_TYPES.len()];
    let payload = bytes.rest();
    let whole = payload.len() - payload.len() % info.block_bytes;
    let blocks = &payload[..whole.min(64 * info.block_bytes)];
    let mut out = vec![0f32; blocks.len() / info.block_bytes * info.block_len];
    match quant::dequantize(info.ty, blocks, &mut out) {
        Ok(()) => assert!(quant::can_dequantize(info.ty)),
        Err(e) => assert!(!quant::can_dequantize(info.ty), "{}: {e}", info.name),
    }
    // A wrong output length is an error, not a panic.
    let mut short = vec![0f32; out.len().saturating_sub(1)];
    if !blocks.is_empty() {
        assert!(quant::dequantize(info.ty, blocks, &mut short).is_err());
    }
    let floats: Vec<f32> = payload
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .take(4 * info.block_len)
        .collect();
    let whole = floats.len() - floats.len() % info.block_len;
    let mut quantized = Vec::new();
    if quant::quantize(info.ty, &floats[..whole], &mut quantized).is_ok() {
        assert_eq!(
            quantized.len(),
            whole / info.block_len * info.block_bytes,
            "{}",
            info.name
        );
        let mut back = vec![0f32; whole];
        if quant::can_dequantize(info.ty) {
            assert!(quant::dequantize(info.ty, &quantized, &mut back).is_ok());
        }
    }
}

/// Every vocabulary under `models` (llama.cpp's `llama-vocabs/*.gguf` and
/// the Gemma 3 model) in a fixed order, less those of a tokenizer model
/// Phobos does not implement (`t5`). Any other failure is an error naming
/// the file.
pub fn load_real_vocabs(models: &std::path::Path) -> Result<Vec<Tokenizer>, String> {
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(models.join("llama-vocabs"))
        .map_err(|e| format!("{}: {e}", models.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
        .collect();
    paths.push(models.join("gemma-3-270m-q4_k_m.gguf"));
    paths.sort();
    let mut vocabs = Vec::new();
    for path in &paths {
        let gguf = Gguf::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        match Tokenizer::from_gguf(&gguf) {
            Ok(tokenizer) => vocabs.push(tokenizer),
            Err(TokenizerError::UnsupportedModel(_)) => {}
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Ok(vocabs)
}

/// The tokenizer target: an even first byte runs [`tokenizer_text`] on the
/// rest, an odd one [`tokenizer_meta`].
pub fn tokenizer(vocabs: &[Tokenizer], data: &[u8]) {
    match data.split_first() {
        Some((pick, rest)) if pick % 2 == 0 => tokenizer_text(vocabs, rest),
        Some((_, rest)) => tokenizer_meta(rest),
        None => {}
    }
}

/// Text through a real tokenizer: the first byte picks one of `vocabs`,
/// the second the encode flags, the rest is the text (lossy UTF-8). Ids
/// are in the vocabulary and every id decodes.
pub fn tokenizer_text(vocabs: &[Tokenizer], data: &[u8]) {
    if vocabs.is_empty() {
        return;
    }
    let mut bytes = Bytes::new(data);
    let tokenizer = &vocabs[usize::from(bytes.u8()) % vocabs.len()];
    let flags = bytes.u8();
    let text = String::from_utf8_lossy(bytes.rest());
    check_encode(tokenizer, &text, flags & 1 != 0, flags & 2 != 0);
}

fn check_encode(tokenizer: &Tokenizer, text: &str, add_special: bool, parse_special: bool) {
    let Ok(ids) = tokenizer.encode(text, add_special, parse_special) else {
        return;
    };
    let n = tokenizer.n_tokens();
    assert!(ids.iter().all(|&id| (id as usize) < n), "id out of range");
    let mut stream = StreamDecoder::new();
    let mut streamed = String::new();
    for &id in &ids {
        let _ = tokenizer.token_to_piece(id, true);
        streamed.push_str(&stream.push(tokenizer, id));
    }
    streamed.push_str(&stream.finish());
    let _ = tokenizer.decode(&ids, true);
    std::hint::black_box(streamed);
}

/// Token texts that steer a fuzzed vocabulary towards the tokenizer's
/// special cases: byte tokens, SentencePiece spaces, end-of-turn markers.
const SPECIAL_TEXTS: &[&str] = &[
    "<s>",
    "</s>",
    "<unk>",
    "<pad>",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "▁",
    "▁▁",
    " ",
    "\n",
    "\n\n",
    "<|im_start|>",
    "<|im_end|>",
    "<|eot_id|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "##a",
    "Ġ",
    "Ċ",
    "<mask>",
    "",
];

const MODELS: &[&str] = &["llama", "gpt2", "gemma4", "bert"];

const PRE_NAMES: &[&str] = &[
    "default",
    "llama3",
    "qwen2",
    "gpt-2",
    "gemma4",
    "deepseek-llm",
    "starcoder",
    "falcon",
    "tekken",
    "whitespace",
    "chatglm-bpe",
    "bloom",
    "viking",
    "seed-coder",
    "gpt-4o",
];

/// A metadata value that is usually of the right type and sometimes of a
/// hostile one (a string for an id, an array for a flag).
fn maybe_wrong(bytes: &mut Bytes<'_>, right: Value) -> Value {
    match bytes.u8() % 16 {
        0 => Value::String(bytes.short_str()),
        1 => Value::Array(Array::U8(bytes.take(4).to_vec())),
        2 => Value::F32(f32::from_bits(bytes.u32())),
        3 => Value::I64(-1),
        _ => right,
    }
}

/// A vocabulary built from the input and written as a GGUF in memory with
/// `tokenizer.ggml.*` keys; whatever the reader and tokenizer accept must
/// then encode the rest of the input with ids in range.
pub fn tokenizer_meta(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let mut w = GgufWriter::new();
    let model_pick = bytes.u8();
    let model = match MODELS.get(usize::from(model_pick % 6)) {
        Some(name) => (*name).to_owned(),
        None => bytes.short_str(),
    };
    let _ = w.add(
        "tokenizer.ggml.model",
        maybe_wrong(&mut bytes, model.into()),
    );
    let pre_pick = bytes.u8();
    match PRE_NAMES.get(usize::from(pre_pick % 20)) {
        Some(name) => {
            let _ = w.add("tokenizer.ggml.pre", *name);
        }
        None if pre_pick % 20 == 19 => {
            let _ = w.add("tokenizer.ggml.pre", bytes.short_str().as_str());
        }
        None => {}
    }
    let n_tokens = usize::from(bytes.u8());
    let mut tokens = Vec::with_capacity(n_tokens);
    for _ in 0..n_tokens {
        let pick = bytes.u8();
        tokens.push(match pick % 8 {
            0..=3 => bytes.short_str(),
            4 => format!("<0x{:02X}>", bytes.u8()),
            _ => SPECIAL_TEXTS[usize::from(bytes.u8()) % SPECIAL_TEXTS.len()].to_owned(),
        });
    }
    let _ = w.add("tokenizer.ggml.tokens", Array::String(tokens.clone()));
    let arrays = bytes.u8();
    if arrays & 1 != 0 {
        let scores: Vec<f32> = (0..n_tokens)
            .map(|_| f32::from(bytes.u8() as i8) / 4.0)
            .collect();
        let _ = w.add("tokenizer.ggml.scores", Array::F32(scores));
    }
    if arrays & 2 != 0 {
        let types: Vec<i32> = (0..n_tokens)
            .map(|_| i32::from(bytes.u8() % 8) - 1)
            .collect();
        let value = if arrays & 4 != 0 {
            Value::Array(Array::U32(types.iter().map(|&t| t as u32).collect()))
        } else {
            Value::Array(Array::I32(types))
        };
        let _ = w.add("tokenizer.ggml.token_type", value);
    }
    if arrays & 8 != 0 {
        let n_merges = usize::from(bytes.u8());
        let merges: Vec<String> = (0..n_merges)
            .map(|_| match bytes.u8() % 4 {
                // Pairs of vocabulary tokens, as real files have them.
                0 | 1 if !tokens.is_empty() => {
                    let left = &tokens[usize::from(bytes.u8()) % tokens.len()];
                    let right = &tokens[usize::from(bytes.u8()) % tokens.len()];
                    format!("{left} {right}")
                }
                _ => bytes.short_str(),
            })
            .collect();
        let _ = w.add("tokenizer.ggml.merges", Array::String(merges));
    }
    for key in [
        "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.unknown_token_id",
        "tokenizer.ggml.seperator_token_id",
        "tokenizer.ggml.padding_token_id",
    ] {
        let pick = bytes.u8();
        if pick & 1 != 0 {
            let value = maybe_wrong(&mut bytes, Value::U32(u32::from(pick >> 1)));
            let _ = w.add(key, value);
        }
    }
    for key in [
        "tokenizer.ggml.add_bos_token",
        "tokenizer.ggml.add_eos_token",
        "tokenizer.ggml.add_space_prefix",
    ] {
        let pick = bytes.u8();
        if pick & 1 != 0 {
            let value = maybe_wrong(&mut bytes, Value::Bool(pick & 2 != 0));
            let _ = w.add(key, value);
        }
    }
    if bytes.u8() & 1 != 0 {
        let _ = w.add("general.name", "phi-3 fuzz");
    }
    let flags = bytes.u8();
    let text = String::from_utf8_lossy(bytes.rest()).into_owned();

    let file = w.to_bytes();
    let gguf = match Gguf::from_bytes(&file) {
        Ok(gguf) => gguf,
        Err(e) => panic!("the writer's own output does not parse: {e}"),
    };
    let Ok(tokenizer) = Tokenizer::from_gguf(&gguf) else {
        return;
    };
    assert_eq!(tokenizer.n_tokens(), n_tokens);
    check_encode(&tokenizer, &text, flags & 1 != 0, flags & 2 != 0);
}

const ROLES: &[&str] = &["system", "user", "assistant", "tool"];

/// A chat template and a conversation: the template source runs up to the
/// first 0 byte; after it a flags byte, then messages separated by 0x1E,
/// each a role byte and content. Parsing and rendering return `Ok` or
/// `Err`, never panic.
pub fn chat(data: &[u8]) {
    let (source, rest) = match data.iter().position(|&b| b == 0) {
        Some(split) => (&data[..split], &data[split + 1..]),
        None => (data, &[][..]),
    };
    let Ok(template) = ChatTemplate::new(String::from_utf8_lossy(source).into_owned()) else {
        return;
    };
    let mut bytes = Bytes::new(rest);
    let flags = bytes.u8();
    let mut messages = Vec::new();
    for raw in bytes.rest().split(|&b| b == 0x1E).take(16) {
        let mut message_bytes = Bytes::new(raw);
        let role_pick = message_bytes.u8();
        let role = match ROLES.get(usize::from(role_pick % 5)) {
            Some(role) => (*role).to_owned(),
            None => message_bytes.short_str(),
        };
        let content = String::from_utf8_lossy(message_bytes.rest()).into_owned();
        if let Ok(json) = serde_json::from_str::<serde_json::Value>(&content) {
            let _ = ChatMessage::from_openai_json(&json);
        }
        let mut message = ChatMessage::new(&role, &content);
        if role_pick & 0x40 != 0 {
            message.tool_calls.push(ToolCall {
                id: "call_0".into(),
                name: content.chars().take(8).collect(),
                arguments: serde_json::json!({"text": content}),
            });
        }
        if role_pick & 0x80 != 0 {
            message.tool_call_id = Some("call_0".into());
            message.name = Some("tool".into());
        }
        messages.push(message);
    }
    let tools = if flags & 2 != 0 {
        vec![serde_json::json!({
            "type": "function",
            "function": {"name": "f", "description": "d", "parameters": {"type": "object"}},
        })]
    } else {
        Vec::new()
    };
    let request = ChatRequest {
        messages,
        tools,
        add_generation_prompt: flags & 1 != 0,
        bos_token: "<s>".into(),
        eos_token: "</s>".into(),
        now_unix_seconds: Some(1_700_000_000),
        ..ChatRequest::default()
    };
    let _ = template.render(&request);
}
