//! Softmax in place over one row (max subtracted first).

pub fn softmax_in_place(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return;
    }
    let mut sum = 0f64;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += f64::from(*v);
    }
    let inv = (1.0 / sum) as f32;
    for v in x.iter_mut() {
        *v *= inv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn matches_f64_reference(x in proptest::collection::vec(-50f32..50.0, 1..200)) {
            let mut got = x.clone();
            softmax_in_place(&mut got);
            let max = x.iter().map(|&v| f64::from(v)).fold(f64::NEG_INFINITY, f64::max);
            let denom: f64 = x.iter().map(|&v| (f64::from(v) - max).exp()).sum();
            for (g, &v) in got.iter().zip(&x) {
                let want = (f64::from(v) - max).exp() / denom;
                prop_assert!((f64::from(*g) - want).abs() <= 1e-6, "{g} vs {want}");
            }
        }
    }

    #[test]
    fn all_masked_row_stays_masked() {
        let mut x = vec![f32::NEG_INFINITY; 3];
        softmax_in_place(&mut x);
        assert!(x.iter().all(|v| *v == f32::NEG_INFINITY));
    }
}
