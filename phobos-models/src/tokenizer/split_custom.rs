//! Hand-written splitters for the common pre-tokenizer regexes. They follow
//! llama.cpp's own state machines (which are the reference the vocab test
//! vectors are checked against) and run in linear time, where a backtracking
//! regex with `\s+(?!\S)` would not.

use super::unicode::{CharClass, classify};

/// A view of one piece of text (code points plus their classes) that answers
/// "nothing" past its end, so lookahead never crosses into the next piece.
struct Piece<'a> {
    chars: &'a [char],
    classes: &'a [CharClass],
}

impl Piece<'_> {
    fn char_at(&self, pos: usize) -> Option<char> {
        self.chars.get(pos).copied()
    }
    fn class_at(&self, pos: usize) -> Option<CharClass> {
        self.classes.get(pos).copied()
    }
    fn is_letter(&self, pos: usize) -> bool {
        self.class_at(pos).is_some_and(CharClass::is_letter)
    }
    fn is_number(&self, pos: usize) -> bool {
        self.class_at(pos).is_some_and(CharClass::is_number)
    }
    fn is_whitespace(&self, pos: usize) -> bool {
        self.class_at(pos).is_some_and(|c| c.is_whitespace)
    }
    fn is_mark(&self, pos: usize) -> bool {
        self.class_at(pos).is_some_and(CharClass::is_mark)
    }
}

/// Collects piece lengths, skipping empty ones.
struct Cuts<'a> {
    lengths: &'a mut Vec<usize>,
    prev_end: usize,
}

impl Cuts<'_> {
    fn cut(&mut self, end: usize) -> usize {
        let len = end - self.prev_end;
        if len > 0 {
            self.lengths.push(len);
        }
        self.prev_end = end;
        len
    }
}

/// Length of a contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`) at
/// `pos`, or 0.
fn contraction_len(piece: &Piece<'_>, pos: usize, case_insensitive: bool) -> usize {
    if piece.char_at(pos) != Some('\'') {
        return 0;
    }
    let fold = |c: Option<char>| {
        c.map(|c| {
            if case_insensitive {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                c
            }
        })
    };
    let next = fold(piece.char_at(pos + 1));
    if matches!(next, Some('s' | 't' | 'm' | 'd')) {
        return 2;
    }
    let next_next = fold(piece.char_at(pos + 2));
    match (next, next_next) {
        (Some('r'), Some('e')) | (Some('v'), Some('e')) | (Some('l'), Some('l')) => 3,
        _ => 0,
    }
}

fn classes_of(chars: &[char]) -> Vec<CharClass> {
    chars.iter().map(|&c| classify(c)).collect()
}

/// GPT-2: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
pub(crate) fn split_gpt2(chars: &[char], lengths: &mut Vec<usize>) {
    let classes = classes_of(chars);
    let piece = Piece {
        chars,
        classes: &classes,
    };
    let end = chars.len();
    let mut cuts = Cuts {
        lengths,
        prev_end: 0,
    };
    let mut pos = 0;
    while pos < end {
        let c = chars[pos];
        let contraction = contraction_len(&piece, pos, false);
        if contraction > 0 {
            pos += cuts.cut(pos + contraction);
            continue;
        }
        let lead = if c == ' ' { pos + 1 } else { pos };
        let is_other = |p: usize| {
            piece
                .class_at(p)
                .is_some_and(|cl| !(cl.is_whitespace || cl.is_letter() || cl.is_number()))
        };
        if piece.is_letter(lead) {
            pos = lead;
            while piece.is_letter(pos) {
                pos += 1;
            }
            cuts.cut(pos);
            continue;
        }
        if piece.is_number(lead) {
            pos = lead;
            while piece.is_number(pos) {
                pos += 1;
            }
            cuts.cut(pos);
            continue;
        }
        if is_other(lead) {
            pos = lead;
            while is_other(pos) {
                pos += 1;
            }
            cuts.cut(pos);
            continue;
        }
        let mut n_spaces = 0;
        while piece.is_whitespace(pos + n_spaces) {
            n_spaces += 1;
        }
        if n_spaces > 1 && pos + n_spaces < end {
            pos += n_spaces - 1;
            cuts.cut(pos);
            continue;
        }
        if n_spaces > 0 {
            pos += n_spaces;
            cuts.cut(pos);
            continue;
        }
        pos += 1;
        cuts.cut(pos);
    }
}

/// The llama3 / qwen2 / qwen35 family:
/// `(?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
/// with qwen35 letting letter runs include marks (`[\p{L}\p{M}]+`).
pub(crate) fn split_llama3_family(
    chars: &[char],
    max_digits: usize,
    letters_take_marks: bool,
    lengths: &mut Vec<usize>,
) {
    let classes = classes_of(chars);
    let piece = Piece {
        chars,
        classes: &classes,
    };
    let end = chars.len();
    let mut cuts = Cuts {
        lengths,
        prev_end: 0,
    };
    let wordish = |p: usize| piece.is_letter(p) || (letters_take_marks && piece.is_mark(p));
    let is_other = |p: usize| {
        piece.class_at(p).is_some_and(|cl| {
            !(cl.is_whitespace
                || cl.is_letter()
                || cl.is_number()
                || (letters_take_marks && cl.is_mark()))
        })
    };
    let mut pos = 0;
    while pos < end {
        let c = chars[pos];
        let contraction = contraction_len(&piece, pos, true);
        if contraction > 0 {
            pos += cuts.cut(pos + contraction);
            continue;
        }
        if !(c == '\r' || c == '\n' || piece.is_number(pos)) && (wordish(pos) || wordish(pos + 1)) {
            pos += 1;
            while wordish(pos) {
                pos += 1;
            }
            cuts.cut(pos);
            continue;
        }
        if piece.is_number(pos) {
            let mut run_start = pos;
            while piece.is_number(pos) {
                pos += 1;
                if pos - run_start >= max_digits {
                    cuts.cut(pos);
                    run_start = pos;
                }
            }
            cuts.cut(pos);
            continue;
        }
        let lead = if c == ' ' { pos + 1 } else { pos };
        if is_other(lead) {
            pos = lead;
            while is_other(pos) {
                pos += 1;
            }
            while matches!(piece.char_at(pos), Some('\r' | '\n')) {
                pos += 1;
            }
            cuts.cut(pos);
            continue;
        }
        let mut n_spaces = 0;
        let mut end_of_last_newline = 0;
        while piece.is_whitespace(pos + n_spaces) {
            if matches!(piece.char_at(pos + n_spaces), Some('\r' | '\n')) {
                end_of_last_newline = pos + n_spaces + 1;
            }
            n_spaces += 1;
        }
        if end_of_last_newline > 0 {
            pos = end_of_last_newline;
            cuts.cut(pos);
            continue;
        }
        if n_spaces > 1 && pos + n_spaces < end {
            pos += n_spaces - 1;
            cuts.cut(pos);
            continue;
        }
        if n_spaces > 0 {
            pos += n_spaces;
            cuts.cut(pos);
            continue;
        }
        pos += 1;
        cuts.cut(pos);
    }
}

/// `[^\n]+|[\n]+`: runs of newlines and runs of everything else.
pub(crate) fn split_newline_runs(chars: &[char], lengths: &mut Vec<usize>) {
    let mut pos = 0;
    while pos < chars.len() {
        let is_newline = chars[pos] == '\n';
        let start = pos;
        while pos < chars.len() && (chars[pos] == '\n') == is_newline {
            pos += 1;
        }
        lengths.push(pos - start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str, split: impl Fn(&[char], &mut Vec<usize>)) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut lengths = Vec::new();
        split(&chars, &mut lengths);
        let mut out = Vec::new();
        let mut start = 0;
        for len in lengths {
            out.push(chars[start..start + len].iter().collect());
            start += len;
        }
        assert_eq!(start, chars.len(), "pieces must cover the text");
        out
    }

    #[test]
    fn gpt2_splits_words_numbers_and_spaces() {
        assert_eq!(
            pieces("Hello world's  123!!\n", split_gpt2),
            ["Hello", " world", "'s", " ", " 123", "!!", "\n"]
        );
    }

    #[test]
    fn llama3_groups_three_digits_and_newlines() {
        let split = |c: &[char], l: &mut Vec<usize>| split_llama3_family(c, 3, false, l);
        assert_eq!(
            pieces("1234567 I'M ok\n\n  x", split),
            ["123", "456", "7", " I", "'M", " ok", "\n\n", " ", " x"]
        );
    }

    #[test]
    fn qwen_takes_single_digits() {
        let split = |c: &[char], l: &mut Vec<usize>| split_llama3_family(c, 1, false, l);
        assert_eq!(pieces("12a", split), ["1", "2", "a"]);
    }

    #[test]
    fn newline_runs() {
        assert_eq!(
            pieces("a b\n\nc\n", split_newline_runs),
            ["a b", "\n\n", "c", "\n"]
        );
    }
}
