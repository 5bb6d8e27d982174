//! Turning generated text into what clients see: stop strings that may span
//! token boundaries (stop.rs) and the split of a chat answer into content,
//! reasoning and tool calls (markup.rs). Both hold back only the text that
//! could still be the start of a marker, so nothing partial ever leaks.

pub mod markup;
pub mod stop;

/// The length of the longest suffix of `text` that is a proper prefix of one
/// of `markers` (on a char boundary): the bytes to hold back.
pub fn partial_marker_len(text: &str, markers: &[&str]) -> usize {
    let mut best = 0;
    for marker in markers {
        let longest = marker.len().saturating_sub(1).min(text.len());
        for len in (best + 1..=longest).rev() {
            let start = text.len() - len;
            if text.is_char_boundary(start)
                && marker.as_bytes().starts_with(&text.as_bytes()[start..])
            {
                best = len;
                break;
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::partial_marker_len;

    #[test]
    fn holds_back_only_marker_prefixes() {
        assert_eq!(partial_marker_len("hello <to", &["<tool_call>"]), 3);
        assert_eq!(
            partial_marker_len("hello <", &["<tool_call>", "<think>"]),
            1
        );
        assert_eq!(partial_marker_len("hello", &["<tool_call>"]), 0);
        assert_eq!(partial_marker_len("é<", &["<x>"]), 1);
        assert_eq!(partial_marker_len("ab", &["abc", "b"]), 2);
        assert_eq!(partial_marker_len("", &["abc"]), 0);
    }
}

/// Split invariance: however the text is cut into tokens, the released text
/// is the same as for the whole text at once.
#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::markup::{MarkupParser, Piece};
    use super::stop::StopMatcher;

    /// Cuts `text` at the given char positions.
    fn split(text: &str, cuts: &[usize]) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
        points.push(0);
        points.push(chars.len());
        points.sort_unstable();
        points.dedup();
        points
            .windows(2)
            .map(|w| chars[w[0]..w[1]].iter().collect())
            .collect()
    }

    fn stop_run(stops: &[String], pieces: &[String]) -> (String, bool) {
        let mut matcher = StopMatcher::new(stops.to_vec());
        let mut out = String::new();
        for piece in pieces {
            let released = matcher.push(piece);
            out.push_str(&released.text);
            if released.stopped {
                return (out, true);
            }
        }
        out.push_str(&matcher.finish());
        (out, false)
    }

    fn markup_run(pieces: &[String]) -> Vec<Piece> {
        let mut parser = MarkupParser::new(true, false);
        let mut out: Vec<Piece> = Vec::new();
        let all = pieces
            .iter()
            .flat_map(|p| parser.push(p))
            .collect::<Vec<_>>();
        for piece in all.into_iter().chain(parser.finish()) {
            match (out.last_mut(), piece) {
                (Some(Piece::Content(a)), Piece::Content(b)) => a.push_str(&b),
                (Some(Piece::Reasoning(a)), Piece::Reasoning(b)) => a.push_str(&b),
                (_, piece) => out.push(piece),
            }
        }
        out
    }

    /// Text made of the characters markers are made of, so that partial
    /// markers and stop strings are common.
    fn marker_text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                "<",
                ">",
                "/",
                "think",
                "tool_call",
                "{\"name\": \"f\", \"arguments\": {}}",
                " ",
                "\n",
                "a",
                "é",
                "[TOOL_CALLS]",
                "END",
                "EN",
                "D",
            ]),
            0..40,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #[test]
        fn stop_strings_do_not_depend_on_token_boundaries(
            text in marker_text(),
            cuts in prop::collection::vec(0usize..200, 0..20),
            stops in prop::collection::vec(prop::sample::select(vec!["END", "<t", "a a", "é"]), 0..3),
        ) {
            let stops: Vec<String> = stops.into_iter().map(str::to_owned).collect();
            let whole = stop_run(&stops, std::slice::from_ref(&text));
            let pieces = split(&text, &cuts);
            prop_assert_eq!(stop_run(&stops, &pieces), whole.clone());
            // The reference: everything before the first stop string.
            let first = stops.iter().filter_map(|s| text.find(s.as_str())).min();
            prop_assert_eq!(whole, match first {
                Some(at) => (text[..at].to_owned(), true),
                None => (text.clone(), false),
            });
        }

        #[test]
        fn markup_split_does_not_depend_on_token_boundaries(
            text in marker_text(),
            cuts in prop::collection::vec(0usize..200, 0..20),
        ) {
            let whole = markup_run(std::slice::from_ref(&text));
            let pieces = split(&text, &cuts);
            prop_assert_eq!(markup_run(&pieces), whole);
        }
    }
}
