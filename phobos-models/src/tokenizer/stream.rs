//! Streaming decode: token pieces are bytes, and a multi-byte character can
//! be split across tokens, so bytes are held back until they form complete
//! UTF-8.

use super::Tokenizer;

/// Turns token ids into text one token at a time, emitting only complete
/// UTF-8. Invalid sequences become U+FFFD once they are known to be invalid.
#[derive(Debug, Default, Clone)]
pub struct StreamDecoder {
    pending: Vec<u8>,
    /// Render control tokens (e.g. `<|im_end|>`) as their text.
    pub show_special: bool,
}

impl StreamDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one token; returns the text that is now complete (possibly
    /// empty).
    pub fn push(&mut self, tokenizer: &Tokenizer, id: u32) -> String {
        self.pending
            .extend_from_slice(&tokenizer.token_to_piece(id, self.show_special));
        self.drain_complete()
    }

    /// Appends raw bytes; returns the text that is now complete.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        self.drain_complete()
    }

    /// Everything still held back, with an incomplete tail as U+FFFD.
    pub fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }

    fn drain_complete(&mut self) -> String {
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(error) => {
                    let valid = error.valid_up_to();
                    // valid_up_to marks a char boundary, so this cannot fail.
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match error.error_len() {
                        // Truly invalid bytes: replace them and keep going.
                        Some(bad_len) => {
                            out.push('\u{FFFD}');
                            self.pending.drain(..valid + bad_len);
                        }
                        // An incomplete sequence at the end: wait for more.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_back_a_split_character() {
        let mut decoder = StreamDecoder::new();
        let bytes = "é€😀".as_bytes();
        let mut out = String::new();
        for &b in bytes {
            out.push_str(&decoder.push_bytes(&[b]));
        }
        out.push_str(&decoder.finish());
        assert_eq!(out, "é€😀");
    }

    #[test]
    fn replaces_invalid_bytes_without_stalling() {
        let mut decoder = StreamDecoder::new();
        assert_eq!(decoder.push_bytes(&[b'a', 0xFF, b'b']), "a\u{FFFD}b");
        assert_eq!(decoder.push_bytes(&[0xE2, 0x82]), "");
        assert_eq!(decoder.finish(), "\u{FFFD}");
    }
}
