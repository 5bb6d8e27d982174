//! Stop strings: generation ends at the first one and it is never sent, even
//! when it arrives split over several tokens.

use super::partial_marker_len;

#[derive(Debug, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    held: String,
}

/// What one push released.
#[derive(Debug, PartialEq, Eq)]
pub struct Released {
    pub text: String,
    /// A stop string was seen: `text` is everything before it and the
    /// generation is over.
    pub stopped: bool,
}

impl StopMatcher {
    pub fn new(stops: Vec<String>) -> Self {
        Self {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            held: String::new(),
        }
    }

    pub fn push(&mut self, text: &str) -> Released {
        self.held.push_str(text);
        let earliest = self
            .stops
            .iter()
            .filter_map(|stop| self.held.find(stop.as_str()))
            .min();
        if let Some(at) = earliest {
            let text = self.held[..at].to_owned();
            self.held.clear();
            return Released {
                text,
                stopped: true,
            };
        }
        let stops: Vec<&str> = self.stops.iter().map(String::as_str).collect();
        let keep = partial_marker_len(&self.held, &stops);
        let text = self.held[..self.held.len() - keep].to_owned();
        self.held.drain(..self.held.len() - keep);
        Released {
            text,
            stopped: false,
        }
    }

    /// The generation ended without a stop string: what was held back is text.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&str]) -> (String, bool) {
        let mut matcher = StopMatcher::new(stops.iter().map(|s| s.to_string()).collect());
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

    #[test]
    fn stop_split_over_tokens_is_not_emitted() {
        assert_eq!(
            run(&["END"], &["one E", "N", "D two"]),
            ("one ".into(), true)
        );
        assert_eq!(run(&["END"], &["one EN", "x"]), ("one ENx".into(), false));
        assert_eq!(run(&["\n\n", "b"], &["a\n", "\nb"]), ("a".into(), true));
        assert_eq!(run(&[], &["a", "b"]), ("ab".into(), false));
        assert_eq!(run(&["x"], &["abc"]), ("abc".into(), false));
    }

    #[test]
    fn nothing_partial_is_released_early() {
        let mut matcher = StopMatcher::new(vec!["STOP".into()]);
        assert_eq!(matcher.push("go ST").text, "go ");
        assert_eq!(matcher.push("O").text, "");
        let released = matcher.push("P!");
        assert_eq!(released.text, "");
        assert!(released.stopped);
    }
}
