//! "Did you mean" suggestions by edit distance.

/// Edit distance in chars: insertions, deletions, substitutions and
/// transpositions of adjacent chars (optimal string alignment), so the
/// common typo `bsae` is one edit from `base`.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

/// The candidates within edit distance `max(1, len/3)` of `name`, closest
/// first (ties keep the candidates' order), at most three.
pub fn close_matches<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort_by_key(|(d, _)| *d);
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

/// `did you mean `a` or `b`?`, or `None` without candidates.
pub fn did_you_mean(matches: &[&str]) -> Option<String> {
    match matches {
        [] => None,
        [one] => Some(format!("did you mean `{one}`?")),
        many => {
            let quoted: Vec<String> = many.iter().map(|m| format!("`{m}`")).collect();
            let (last, rest) = quoted.split_last()?;
            Some(format!("did you mean {} or {last}?", rest.join(", ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
        assert_eq!(edit_distance("bsae", "base"), 1);
    }

    #[test]
    fn close_matches_rank_by_distance() {
        let names = ["program_id", "num_programs", "rowmax", "rowsum"];
        assert_eq!(close_matches("prgram_id", names), vec!["program_id"]);
        assert_eq!(close_matches("rowmx", names), vec!["rowmax"]);
        assert!(close_matches("zzzz", names).is_empty());
    }

    #[test]
    fn did_you_mean_lists_all() {
        assert_eq!(
            did_you_mean(&["a", "b", "c"]).unwrap(),
            "did you mean `a`, `b` or `c`?"
        );
        assert_eq!(did_you_mean(&[]), None);
    }
}
