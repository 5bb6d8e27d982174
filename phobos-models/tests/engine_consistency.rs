//! The engine agrees with itself where it must: a prompt in one batch, one
//! token at a time, split in two, and batched with another session give
//! the same logits, for every architecture. Bad models and requests are
//! clear errors.

mod engine_common;

use engine_common::{temp_dir, tiny_arch_model};
use phobos_models::engine::{EngineError, LoadOptions, LogitsWanted, Model, SeqInput};
use phobos_models::quant::GgmlType;

const ARCHS: [&str; 5] = ["gemma3", "llama", "qwen2", "qwen3", "qwen35"];
const PROMPT: [u32; 9] = [1, 40, 77, 200, 13, 99, 250, 7, 31];

/// Every position's logits computed one token at a time.
fn one_at_a_time(model: &Model, tokens: &[u32]) -> Vec<f32> {
    let mut s = model.new_session(64).unwrap();
    let mut all = Vec::new();
    for &t in tokens {
        let out = model
            .forward(&mut [SeqInput {
                session: &mut s,
                tokens: &[t],
                logits: LogitsWanted::Last,
            }])
            .unwrap();
        all.extend_from_slice(&out[0]);
    }
    all
}

/// Index and values of the first logit that differs bit for bit. Every
/// output row is computed on its own (each weight product's sums run in
/// the same order whatever the batch, attention rows are independent), so
/// batched, split, sequential and multi-session runs agree exactly.
fn first_difference(got: &[f32], want: &[f32]) -> Option<(usize, f32, f32)> {
    if got.len() != want.len() {
        return Some((got.len().min(want.len()), f32::NAN, f32::NAN));
    }
    got.iter()
        .zip(want)
        .enumerate()
        .find(|(_, (a, b))| a.to_bits() != b.to_bits())
        .map(|(i, (a, b))| (i, *a, *b))
}

#[test]
fn batched_split_and_multi_session_agree_for_every_arch() {
    let tmp = temp_dir("consistency");
    let dir = tmp.path();
    for arch in ARCHS {
        for ty in [GgmlType::F32, GgmlType::Q8_0] {
            let path = tiny_arch_model(dir, arch, None, ty);
            let model = Model::load(&path, LoadOptions::default()).unwrap();
            let sequential = one_at_a_time(&model, &PROMPT);

            let mut whole = model.new_session(64).unwrap();
            let batched = model
                .forward(&mut [SeqInput {
                    session: &mut whole,
                    tokens: &PROMPT,
                    logits: LogitsWanted::All,
                }])
                .unwrap();
            assert_eq!(batched[0].len(), sequential.len());
            assert_eq!(
                first_difference(&batched[0], &sequential),
                None,
                "{arch} {ty:?}: batched vs one at a time"
            );

            let mut split = model.new_session(64).unwrap();
            model
                .forward(&mut [SeqInput {
                    session: &mut split,
                    tokens: &PROMPT[..4],
                    logits: LogitsWanted::None,
                }])
                .unwrap();
            let rest = model
                .forward(&mut [SeqInput {
                    session: &mut split,
                    tokens: &PROMPT[4..],
                    logits: LogitsWanted::Last,
                }])
                .unwrap();
            let last = &sequential[sequential.len() - model.n_vocab()..];
            assert_eq!(
                first_difference(&rest[0], last),
                None,
                "{arch} {ty:?}: split vs whole"
            );
            assert_eq!(split.tokens(), &PROMPT);

            // Two sessions in one batch, at different depths.
            let mut a = model.new_session(64).unwrap();
            let mut b = model.new_session(64).unwrap();
            model
                .forward(&mut [SeqInput {
                    session: &mut a,
                    tokens: &PROMPT[..6],
                    logits: LogitsWanted::None,
                }])
                .unwrap();
            let outs = model
                .forward(&mut [
                    SeqInput {
                        session: &mut a,
                        tokens: &PROMPT[6..],
                        logits: LogitsWanted::Last,
                    },
                    SeqInput {
                        session: &mut b,
                        tokens: &PROMPT[..3],
                        logits: LogitsWanted::Last,
                    },
                ])
                .unwrap();
            assert_eq!(
                first_difference(&outs[0], last),
                None,
                "{arch} {ty:?}: batched sessions (a)"
            );
            let want_b = &sequential[2 * model.n_vocab()..3 * model.n_vocab()];
            assert_eq!(
                first_difference(&outs[1], want_b),
                None,
                "{arch} {ty:?}: batched sessions (b)"
            );

            // Prefix reuse: truncate to a shared prefix and continue.
            let keep = whole.common_prefix_len(&PROMPT[..5]);
            assert_eq!(keep, 5);
            whole.truncate(keep);
            let again = model
                .forward(&mut [SeqInput {
                    session: &mut whole,
                    tokens: &PROMPT[5..],
                    logits: LogitsWanted::Last,
                }])
                .unwrap();
            assert_eq!(
                first_difference(&again[0], last),
                None,
                "{arch} {ty:?}: prefix reuse"
            );
        }
    }
}

#[test]
fn sessions_on_one_model_run_from_several_threads() {
    let tmp = temp_dir("threads");
    let dir = tmp.path();
    let model = Model::load(
        tiny_arch_model(dir, "qwen3", None, GgmlType::Q8_0),
        LoadOptions::default(),
    )
    .unwrap();
    let want = one_at_a_time(&model, &PROMPT);
    let last = want[want.len() - model.n_vocab()..].to_vec();
    std::thread::scope(|scope| {
        for _ in 0..3 {
            let (model, last) = (&model, &last);
            scope.spawn(move || {
                let mut s = model.new_session(64).unwrap();
                let out = model
                    .forward(&mut [SeqInput {
                        session: &mut s,
                        tokens: &PROMPT,
                        logits: LogitsWanted::Last,
                    }])
                    .unwrap();
                assert_eq!(first_difference(&out[0], last), None);
            });
        }
    });
}

#[test]
fn context_overflow_is_an_error_and_leaves_the_session_alone() {
    let tmp = temp_dir("ctx");
    let dir = tmp.path();
    let model = Model::load(
        tiny_arch_model(dir, "llama", None, GgmlType::F32),
        LoadOptions::default(),
    )
    .unwrap();
    let mut s = model.new_session(8).unwrap();
    let err = model
        .forward(&mut [SeqInput {
            session: &mut s,
            tokens: &PROMPT,
            logits: LogitsWanted::Last,
        }])
        .unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::ContextFull {
                n_ctx: 8,
                held: 0,
                requested: 9
            }
        ),
        "{err}"
    );
    assert!(s.is_empty());
    assert!(matches!(
        model.new_session(100_000),
        Err(EngineError::ContextTooLarge { .. })
    ));
    let err = model
        .forward(&mut [SeqInput {
            session: &mut s,
            tokens: &[100_000],
            logits: LogitsWanted::Last,
        }])
        .unwrap_err();
    assert!(
        matches!(err, EngineError::TokenOutOfRange { id: 100_000, .. }),
        "{err}"
    );
}

#[test]
fn unknown_arch_and_missing_tensor_are_named() {
    let tmp = temp_dir("bad");
    let dir = tmp.path();
    let path = tiny_arch_model(dir, "mamba9", None, GgmlType::F32);
    let err = Model::load(&path, LoadOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("mamba9") && msg.contains("gemma3") && msg.contains("qwen3"),
        "{msg}"
    );

    let path = tiny_arch_model(dir, "qwen2", Some("blk.1.ffn_up.weight"), GgmlType::F32);
    let err = Model::load(&path, LoadOptions::default()).unwrap_err();
    assert!(err.to_string().contains("blk.1.ffn_up.weight"), "{err}");
}
