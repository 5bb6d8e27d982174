//! Properties over synthetic vocabularies: decode inverts encode for any
//! text (every byte has a token), streaming decode equals whole decode for
//! any chunking, special tokens are matched only when asked, and merging
//! stays fast on long inputs.

use phobos_models::tokenizer::{StreamDecoder, TokenType, Tokenizer, TokenizerConfig};
use proptest::prelude::*;

/// GPT-2's byte-to-character map, written out independently of the crate's.
fn gpt2_byte_chars() -> Vec<char> {
    let printable: Vec<u32> = (0x21..=0x7E)
        .chain(0xA1..=0xAC)
        .chain(0xAE..=0xFF)
        .collect();
    let mut chars = vec!['\0'; 256];
    let mut next = 256;
    for byte in 0..256u32 {
        chars[byte as usize] = if printable.contains(&byte) {
            char::from_u32(byte).unwrap()
        } else {
            let c = char::from_u32(next).unwrap();
            next += 1;
            c
        };
    }
    chars
}

fn bpe_tokenizer(pre: &str) -> Tokenizer {
    let bytes = gpt2_byte_chars();
    let mut tokens: Vec<String> = bytes.iter().map(|c| c.to_string()).collect();
    let space = bytes[b' ' as usize];
    let merges = vec![
        format!("{space} t"),
        "h e".to_owned(),
        format!("{space}t he"),
        "a a".to_owned(),
        "aa aa".to_owned(),
        "aaaa aaaa".to_owned(),
    ];
    for merged in [
        format!("{space}t"),
        "he".into(),
        format!("{space}the"),
        "aa".into(),
        "aaaa".into(),
        "aaaaaaaa".into(),
    ] {
        tokens.push(merged);
    }
    tokens.push("<|im_start|>".into());
    let mut types = vec![TokenType::Normal; tokens.len()];
    *types.last_mut().unwrap() = TokenType::Control;
    let mut config = TokenizerConfig::new("gpt2", tokens);
    config.pre = Some(pre.to_owned());
    config.merges = merges;
    config.token_types = types;
    Tokenizer::new(config).unwrap()
}

fn spm_tokenizer() -> Tokenizer {
    let mut tokens = vec!["<unk>".to_owned(), "<s>".into(), "</s>".into()];
    let mut types = vec![TokenType::Unknown, TokenType::Control, TokenType::Control];
    for byte in 0..=255u8 {
        tokens.push(format!("<0x{byte:02X}>"));
        types.push(TokenType::Byte);
    }
    let mut scores = vec![0.0; tokens.len()];
    for (text, score) in [
        ("▁", -1.0),
        ("a", -2.0),
        ("b", -2.0),
        ("▁a", -1.5),
        ("ab", -0.5),
        ("▁ab", -0.1),
    ] {
        tokens.push(text.to_owned());
        types.push(TokenType::Normal);
        scores.push(score);
    }
    let mut config = TokenizerConfig::new("llama", tokens);
    config.token_types = types;
    config.scores = scores;
    config.bos_id = Some(1);
    config.eos_id = Some(2);
    config.unk_id = Some(0);
    Tokenizer::new(config).unwrap()
}

proptest! {
    #[test]
    fn bpe_decode_inverts_encode(text in any::<String>(), pre in prop::sample::select(vec!["gpt-2", "llama-bpe", "qwen2", "qwen35", "falcon", "starcoder", "deepseek-llm", "deepseek-coder", "default"])) {
        let tokenizer = bpe_tokenizer(pre);
        let ids = tokenizer.encode(&text, false, false).unwrap();
        prop_assert_eq!(tokenizer.decode(&ids, false), text);
    }

    #[test]
    fn spm_decode_inverts_encode(text in "[ab ]{0,12}|\\PC{0,12}") {
        let tokenizer = spm_tokenizer();
        let ids = tokenizer.encode(&text, false, false).unwrap();
        prop_assert_eq!(tokenizer.decode(&ids, false), text);
    }

    #[test]
    fn streaming_matches_whole_decode(text in any::<String>(), cut in 1usize..5) {
        let tokenizer = bpe_tokenizer("gpt-2");
        let ids = tokenizer.encode(&text, false, false).unwrap();
        let mut decoder = StreamDecoder::new();
        let mut streamed = String::new();
        for chunk in ids.chunks(cut) {
            for &id in chunk {
                let piece = decoder.push(&tokenizer, id);
                // Every emitted piece is complete UTF-8 by construction; it
                // must also be a prefix-consistent part of the text.
                streamed.push_str(&piece);
                prop_assert!(text.starts_with(&streamed));
            }
        }
        streamed.push_str(&decoder.finish());
        prop_assert_eq!(streamed, text);
    }
}

#[test]
fn spm_prefers_the_highest_scoring_merge() {
    let tokenizer = spm_tokenizer();
    let ids = tokenizer.encode("ab", true, false).unwrap();
    // BOS, then "▁ab" (score -0.1) beats "▁a" + "b".
    assert_eq!(ids, vec![1, tokenizer.token_id("▁ab").unwrap()]);
    // A character with no token falls back to its UTF-8 bytes.
    let ids = tokenizer.encode("é", false, false).unwrap();
    let expected: Vec<u32> = std::iter::once(tokenizer.token_id("▁").unwrap())
        .chain(
            [0xC3u8, 0xA9]
                .iter()
                .map(|b| tokenizer.token_id(&format!("<0x{b:02X}>")).unwrap()),
        )
        .collect();
    assert_eq!(ids, expected);
}

#[test]
fn control_tokens_are_matched_only_with_parse_special() {
    let tokenizer = bpe_tokenizer("gpt-2");
    let start = tokenizer.token_id("<|im_start|>").unwrap();
    let parsed = tokenizer.encode("<|im_start|>the", false, true).unwrap();
    assert_eq!(parsed[0], start);
    let plain = tokenizer.encode("<|im_start|>the", false, false).unwrap();
    assert!(!plain.contains(&start));
    assert_eq!(tokenizer.decode(&plain, false), "<|im_start|>the");
    // Control tokens decode to nothing unless asked for.
    assert_eq!(tokenizer.decode(&parsed, false), "the");
    assert_eq!(tokenizer.decode(&parsed, true), "<|im_start|>the");
}

#[test]
fn merging_a_long_word_is_not_quadratic() {
    let tokenizer = bpe_tokenizer("gpt-2");
    let eight = tokenizer.token_id("aaaaaaaa").unwrap();
    let small = "a".repeat(20_000);
    let large = "a".repeat(160_000);
    // This thread's CPU time, the fastest of three runs: other processes and
    // the other tests of this binary share the cores, and wall-clock time
    // would charge their work to this one.
    let fastest = |text: &str, expected_len: usize| {
        (0..3)
            .map(|_| {
                let started = thread_cpu_time();
                let ids = tokenizer.encode(text, false, false).unwrap();
                let elapsed = thread_cpu_time().saturating_sub(started);
                assert_eq!(ids, vec![eight; expected_len]);
                elapsed
            })
            .min()
            .unwrap()
    };
    let small_time = fastest(&small, 2_500);
    let large_time = fastest(&large, 20_000);
    // 8x the input: O(n log n) takes roughly 8-10x as long; quadratic would
    // take 64x. The bound leaves room for timer noise on a busy machine.
    assert!(
        large_time < small_time * 30 + std::time::Duration::from_millis(50),
        "20k chars took {small_time:?}, 160k took {large_time:?}"
    );
}

/// CPU time consumed by the calling thread so far.
fn thread_cpu_time() -> std::time::Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the call's duration.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    std::time::Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}
