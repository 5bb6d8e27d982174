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
