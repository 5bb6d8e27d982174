//! Character classes as llama.cpp's pre-tokenizers see them, and GPT-2's
//! byte-to-character table.

use unicode_general_category::{GeneralCategory, get_general_category};

/// The coarse Unicode category of one code point, as the pre-tokenizer
/// regexes use it (`\p{L}`, `\p{N}`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CharCategory {
    Undefined,
    Number,
    Letter,
    Separator,
    Mark,
    Punctuation,
    Symbol,
    Control,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct CharClass {
    pub category: CharCategory,
    pub is_whitespace: bool,
}

impl CharClass {
    pub fn is_letter(self) -> bool {
        self.category == CharCategory::Letter
    }
    pub fn is_number(self) -> bool {
        self.category == CharCategory::Number
    }
    pub fn is_mark(self) -> bool {
        self.category == CharCategory::Mark
    }
}

pub(crate) fn classify(c: char) -> CharClass {
    use GeneralCategory as G;
    let category = match get_general_category(c) {
        G::Unassigned => CharCategory::Undefined,
        G::Control | G::Format | G::PrivateUse | G::Surrogate => CharCategory::Control,
        G::LowercaseLetter
        | G::ModifierLetter
        | G::OtherLetter
        | G::TitlecaseLetter
        | G::UppercaseLetter => CharCategory::Letter,
        G::SpacingMark | G::EnclosingMark | G::NonspacingMark => CharCategory::Mark,
        G::DecimalNumber | G::LetterNumber | G::OtherNumber => CharCategory::Number,
        G::ConnectorPunctuation
        | G::DashPunctuation
        | G::ClosePunctuation
        | G::FinalPunctuation
        | G::InitialPunctuation
        | G::OtherPunctuation
        | G::OpenPunctuation => CharCategory::Punctuation,
        G::CurrencySymbol | G::ModifierSymbol | G::MathSymbol | G::OtherSymbol => {
            CharCategory::Symbol
        }
        G::LineSeparator | G::ParagraphSeparator | G::SpaceSeparator => CharCategory::Separator,
        // The enum is non-exhaustive; a future category is unknown to us too.
        _ => CharCategory::Undefined,
    };
    CharClass {
        category,
        // Unicode's White_Space property, which is what char::is_whitespace tests.
        is_whitespace: c.is_whitespace(),
    }
}

/// GPT-2's reversible map from bytes to printable characters: printable
/// Latin-1 bytes stand for themselves, the rest are shifted to U+0100 onwards.
pub(crate) fn byte_to_char_table() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut shifted = 0u32;
    for byte in 0..=255u8 {
        let printable = (b'!'..=b'~').contains(&byte)
            || (0xA1..=0xAC).contains(&byte)
            || (0xAE..=0xFF).contains(&byte);
        table[byte as usize] = if printable {
            char::from(byte)
        } else {
            let c = char::from_u32(256 + shifted).unwrap_or('\u{FFFD}');
            shifted += 1;
            c
        };
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt2_table_is_a_bijection_with_known_points() {
        let table = byte_to_char_table();
        assert_eq!(table[b' ' as usize], '\u{120}');
        assert_eq!(table[b'\n' as usize], '\u{10A}');
        assert_eq!(table[b'a' as usize], 'a');
        let mut seen: Vec<char> = table.to_vec();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 256);
    }

    #[test]
    fn classes_of_common_characters() {
        assert!(classify('a').is_letter());
        assert!(classify('7').is_number());
        assert!(classify('\u{0301}').is_mark());
        assert!(classify('\u{3000}').is_whitespace);
        assert_eq!(classify('$').category, CharCategory::Symbol);
        assert_eq!(classify('!').category, CharCategory::Punctuation);
    }
}
