use super::*;

#[test]
fn greedy_takes_the_argmax() {
    let mut s = Sampler::new(SamplerConfig::greedy());
    assert_eq!(s.sample(&[0.1, 3.0, -1.0, 2.9], 0).id, 1);
}

#[test]
fn repeat_penalty_divides_positive_and_multiplies_negative() {
    let config = SamplerConfig {
        repeat_penalty: 2.0,
        ..SamplerConfig::greedy()
    };
    let mut s = Sampler::new(config);
    s.accept(&[1]);
    // 3.0 / 2 = 1.5 < 2.0: token 3 wins.
    assert_eq!(s.sample(&[0.0, 3.0, -1.0, 2.0], 0).id, 3);
}

#[test]
fn frequency_and_presence_penalties_subtract_per_count() {
    let config = SamplerConfig {
        frequency_penalty: 0.5,
        presence_penalty: 0.25,
        ..SamplerConfig::greedy()
    };
    let mut s = Sampler::new(config);
    s.accept(&[0, 0]);
    // token 0: 2.0 - 2*0.5 - 0.25 = 0.75 < 1.0
    assert_eq!(s.sample(&[2.0, 1.0], 0).id, 1);
}

#[test]
fn penalty_window_forgets_old_tokens() {
    let config = SamplerConfig {
        presence_penalty: 10.0,
        penalty_last_n: 2,
        ..SamplerConfig::greedy()
    };
    let mut s = Sampler::new(config);
    s.accept(&[0, 1, 1]);
    assert_eq!(s.sample(&[2.0, 1.0], 0).id, 0);
}

#[test]
fn top_k_one_is_greedy_at_any_temperature() {
    let config = SamplerConfig {
        temperature: 5.0,
        top_k: 1,
        ..SamplerConfig::default()
    };
    let mut s = Sampler::new(config);
    for _ in 0..20 {
        assert_eq!(s.sample(&[0.0, 1.0, 0.5], 0).id, 1);
    }
}

#[test]
fn min_p_drops_unlikely_tokens() {
    // p(1)/p(0) = e^-5 < 0.05: only token 0 survives.
    let config = SamplerConfig {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.05,
        ..SamplerConfig::default()
    };
    let mut s = Sampler::new(config);
    for _ in 0..50 {
        assert_eq!(s.sample(&[5.0, 0.0], 0).id, 0);
    }
}

#[test]
fn top_p_keeps_the_smallest_sufficient_head() {
    // probs ~ [0.665, 0.245, 0.09]; p = 0.6 keeps only the first.
    let config = SamplerConfig {
        temperature: 1.0,
        top_k: 0,
        top_p: 0.6,
        min_p: 0.0,
        ..SamplerConfig::default()
    };
    let mut s = Sampler::new(config);
    for _ in 0..50 {
        assert_eq!(s.sample(&[2.0, 1.0, 0.0], 0).id, 0);
    }
}

#[test]
fn draws_follow_the_distribution_and_the_seed() {
    let config = SamplerConfig {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.0,
        seed: 7,
        ..SamplerConfig::default()
    };
    let logits = [0.0f32, (3.0f32).ln()];
    let mut s = Sampler::new(config.clone());
    let draws: Vec<u32> = (0..4000).map(|_| s.sample(&logits, 0).id).collect();
    let ones = draws.iter().filter(|&&d| d == 1).count() as f64 / 4000.0;
    // p = 0.75; 4000 draws give a standard error of ~0.007.
    assert!((ones - 0.75).abs() < 0.035, "{ones}");
    let mut again = Sampler::new(config);
    let draws2: Vec<u32> = (0..4000).map(|_| again.sample(&logits, 0).id).collect();
    assert_eq!(draws, draws2);
}

#[test]
fn log_probs_match_f64_log_softmax() {
    let logits = [1.0f32, 2.0, 3.0, 0.5];
    let (lp, top) = log_probs(&logits, 1, 2);
    let denom: f64 = logits.iter().map(|&l| f64::from(l).exp()).sum();
    assert!((f64::from(lp) - (2.0 - denom.ln())).abs() < 1e-6);
    assert_eq!(top.iter().map(|x| x.0).collect::<Vec<_>>(), vec![2, 1]);
    assert!((f64::from(top[0].1) - (3.0 - denom.ln())).abs() < 1e-6);
}

/// The chain as it was written first: a full sort, then truncation to k.
/// The selection must draw exactly the same tokens from the same seed.
fn draws_with_full_sort(logits: &[f32], config: &SamplerConfig, n: usize) -> Vec<u32> {
    let mut rng = SplitMix64::new(config.seed);
    let mut cand: Vec<(u32, f32)> = logits
        .iter()
        .enumerate()
        .map(|(i, &l)| (i as u32, l))
        .collect();
    cand.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    if config.top_k > 0 {
        cand.truncate(config.top_k);
    }
    let scaled: Vec<(u32, f32)> = cand
        .iter()
        .map(|&(i, l)| (i, l / config.temperature))
        .collect();
    let probs = softmax_of(&scaled);
    (0..n)
        .map(|_| {
            let r = rng.next_f64();
            let mut cum = 0.0;
            for (x, p) in scaled.iter().zip(&probs) {
                cum += p;
                if r < cum {
                    return x.0;
                }
            }
            scaled.last().map_or(0, |x| x.0)
        })
        .collect()
}

#[test]
fn constrained_draws_stay_in_the_allowed_set() {
    let logits = [4.0, 3.0, 2.0, 1.0, 0.5];
    // Greedy: the best allowed token, and the unconstrained best when
    // it is allowed (one check, no mask).
    let mut greedy = Sampler::new(SamplerConfig::greedy());
    let mut checked = Vec::new();
    let id = greedy.sample_id_constrained(&logits, &mut |t| {
        checked.push(t);
        t == 0
    });
    assert_eq!((id, checked), (Some(0), vec![0]));
    assert_eq!(
        greedy.sample_id_constrained(&logits, &mut |t| t >= 2),
        Some(2)
    );
    assert_eq!(greedy.sample_id_constrained(&logits, &mut |_| false), None);
    // Sampled: only allowed tokens, repeatably per seed, in proportion.
    let config = SamplerConfig {
        temperature: 1.0,
        seed: 11,
        ..SamplerConfig::default()
    };
    let draw = |n: usize| {
        let mut sampler = Sampler::new(config.clone());
        (0..n)
            .map(|_| sampler.sample_id_constrained(&logits, &mut |t| t % 2 == 1))
            .collect::<Vec<_>>()
    };
    let draws = draw(2000);
    assert_eq!(draws, draw(2000));
    assert!(draws.iter().all(|d| matches!(d, Some(1 | 3))));
    let ones = draws.iter().filter(|d| **d == Some(1)).count() as f64 / 2000.0;
    // The allowed logits are 3 and 1: the masked distribution draws token 1
    // with probability 1 / (1 + e^-2), about 88%.
    let expected = 1.0 / (1.0 + (-2.0f64).exp());
    assert!((ones - expected).abs() < 0.04, "{ones} vs {expected}");
}

proptest::proptest! {
    #[test]
    fn top_k_selection_draws_as_a_full_sort_does(
        // Few distinct values, so ties straddle the k-th place.
        levels in proptest::collection::vec(0u8..6, 1..300),
        top_k in 0usize..40,
        seed in proptest::num::u64::ANY,
    ) {
        let logits: Vec<f32> = levels.iter().map(|&l| f32::from(l) * 0.5).collect();
        let config = SamplerConfig {
            temperature: 0.9,
            top_k,
            top_p: 1.0,
            min_p: 0.0,
            seed,
            ..SamplerConfig::default()
        };
        let mut s = Sampler::new(config.clone());
        let draws: Vec<u32> = (0..16).map(|_| s.sample_id(&logits)).collect();
        proptest::prop_assert_eq!(draws, draws_with_full_sort(&logits, &config, 16));
    }
}

#[test]
fn sample_id_draws_as_sample_does() {
    let logits: Vec<f32> = (0..1000)
        .map(|i| ((i * 7919) % 1000) as f32 / 100.0)
        .collect();
    let mut with_logprobs = Sampler::new(SamplerConfig::default());
    let mut without = Sampler::new(SamplerConfig::default());
    for _ in 0..50 {
        assert_eq!(
            with_logprobs.sample(&logits, 3).id,
            without.sample_id(&logits)
        );
    }
}

proptest::proptest! {
    /// The one-pass selection keeps exactly the head of a full sort, ties
    /// (by token id), infinities, NaN and signed zeros included, for every
    /// k whether or not the buffer ever fills.
    #[test]
    fn top_k_of_is_the_head_of_a_full_sort(
        picks in proptest::collection::vec(0usize..9, 2..400),
        k_seed in 0usize..1000,
    ) {
        const VALUES: [f32; 9] = [
            0.0, -0.0, 1.5, -2.0, 1.5, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 7.25,
        ];
        let logits: Vec<f32> = picks.iter().map(|&p| VALUES[p]).collect();
        let k = 1 + k_seed % (logits.len() - 1);
        let mut head = top_k_of(&logits, k);
        head.sort_by(by_logit_desc);
        let mut all: Vec<(u32, f32)> =
            logits.iter().enumerate().map(|(i, &l)| (i as u32, l)).collect();
        all.sort_by(by_logit_desc);
        all.truncate(k);
        let ids = |v: &[(u32, f32)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
        proptest::prop_assert_eq!(ids(&head), ids(&all));
    }
}
