//! A byte-at-a-time recognizer of JSON text of one [`JsonShape`]: a
//! pushdown automaton whose stack holds one small `Copy` frame per open
//! value, so a candidate token is tried on a scratch copy cheaply.

use std::sync::Arc;

use super::schema::{
    ANY, ANY_ARRAY, ANY_OBJECT, BOOLEAN, JsonShape, NULL, NUMBER, Node, NodeId, STRING, SetId,
};

/// Indentation bytes allowed after a newline between two tokens of JSON.
const MAX_INDENT: u8 = 24;

/// The whitespace between two tokens of JSON so far. A gap is empty, one
/// space or tab, or one line break and an indentation: what compact and
/// pretty-printed JSON use. A small model offered more fills the whole
/// answer with blank lines.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Gap {
    Empty,
    Space,
    CarriageReturn,
    Indent(u8),
}

impl Gap {
    fn then(self, b: u8) -> Option<Gap> {
        match (self, b) {
            (Gap::Empty, b' ' | b'\t') => Some(Gap::Space),
            (Gap::Empty, b'\r') => Some(Gap::CarriageReturn),
            (Gap::Empty | Gap::CarriageReturn, b'\n') => Some(Gap::Indent(0)),
            (Gap::Indent(n), b' ' | b'\t') if n < MAX_INDENT => Some(Gap::Indent(n + 1)),
            _ => None,
        }
    }
}
/// Digits a number may have before its point, after it, and in its
/// exponent: past what f64 holds exactly, a model is only looping.
const MAX_INT_DIGITS: u8 = 16;
const MAX_FRAC_DIGITS: u8 = 16;
const MAX_EXP_DIGITS: u8 = 3;
/// Open values (objects, arrays) one text may nest.
const MAX_NESTING: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq)]
enum ObjectState {
    Open,
    Key,
    Colon,
    Value,
    AfterValue,
    AfterComma,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ArrayState {
    Open,
    Value,
    AfterValue,
    AfterComma,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum NumberState {
    Start,
    Minus,
    Zero,
    Int,
    FracStart,
    Frac,
    ExpStart,
    ExpSign,
    Exp,
}

impl NumberState {
    fn accepting(self) -> bool {
        matches!(self, Self::Zero | Self::Int | Self::Frac | Self::Exp)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Escape {
    None,
    Backslash,
    /// Hex digits still expected after `\u`.
    Unicode(u8),
    /// Inside a multi-byte UTF-8 character: `left` continuation bytes to
    /// go, the next one in `lo..=hi` (narrower than 0x80..=0xBF right
    /// after some lead bytes, which rules out overlong forms, surrogates
    /// and code points past U+10FFFF).
    Utf8 {
        left: u8,
        lo: u8,
        hi: u8,
    },
}

/// The listed property names a key being read still matches: `alive` over
/// the object's key set, `consumed` bytes of the quoted key read so far.
#[derive(Debug, Clone, Copy, PartialEq)]
struct KeyMatch {
    set: SetId,
    alive: u64,
    consumed: u16,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Frame {
    /// A value of this node is expected (leading whitespace allowed).
    Value(NodeId),
    Object {
        node: NodeId,
        seen: u64,
        state: ObjectState,
        /// The shape of the value after the key just read.
        pending: NodeId,
    },
    Array {
        node: NodeId,
        count: u32,
        state: ArrayState,
    },
    /// Inside a string, after its opening quote; `key` tracks which listed
    /// property an object key still matches.
    String {
        escape: Escape,
        key: Option<KeyMatch>,
    },
    /// One of the exact texts of a literal set (`alive` of them still match).
    Literal {
        set: SetId,
        alive: u64,
        consumed: u16,
    },
    Number {
        integer: bool,
        state: NumberState,
        digits: u8,
    },
}

/// What a frame did with a byte.
enum Step {
    Consumed,
    Reject,
    /// The frame is replaced and the byte goes to the new frame.
    Become(Frame),
    /// The frame is replaced; the byte was its.
    Update(Frame),
    /// The frame becomes `parent` and `child` is pushed above it; `refeed`
    /// says whether the byte goes to the child.
    Push {
        parent: Frame,
        child: Frame,
        refeed: bool,
    },
    /// The frame's value is complete: it pops, the parent learns which
    /// literal option (or listed key) it was; `refeed` says whether the
    /// byte (which ended it) goes to the parent.
    Done {
        option: Option<u32>,
        refeed: bool,
    },
}

/// The matcher: feed it bytes; it refuses the first byte that cannot
/// continue text of its shape.
#[derive(Debug)]
pub struct JsonMatcher {
    shape: Arc<JsonShape>,
    stack: Vec<Frame>,
    gap: Gap,
}

impl Clone for JsonMatcher {
    fn clone(&self) -> Self {
        Self {
            shape: Arc::clone(&self.shape),
            stack: self.stack.clone(),
            gap: self.gap,
        }
    }

    /// Reuses the stack's allocation: the token mask clones once per token
    /// of the vocabulary.
    fn clone_from(&mut self, source: &Self) {
        if !Arc::ptr_eq(&self.shape, &source.shape) {
            self.shape = Arc::clone(&source.shape);
        }
        self.stack.clone_from(&source.stack);
        self.gap = source.gap;
    }
}

impl JsonMatcher {
    pub fn new(shape: Arc<JsonShape>) -> Self {
        let root = shape.root;
        Self {
            shape,
            stack: vec![Frame::Value(root)],
            gap: Gap::Empty,
        }
    }

    /// The whole text is a complete value: nothing more may follow.
    pub fn is_finished(&self) -> bool {
        self.stack.is_empty()
    }

    /// The text read so far may end here: it is finished, or it is a
    /// top-level number or literal that is complete as it stands.
    pub fn can_end(&self) -> bool {
        match self.stack.as_slice() {
            [] => true,
            [Frame::Number { state, .. }] => state.accepting(),
            [
                Frame::Literal {
                    set,
                    alive,
                    consumed,
                },
            ] => self.exact_option(*set, *alive, *consumed).is_some(),
            _ => false,
        }
    }

    /// Feeds one byte; false if no text of the shape continues with it.
    pub fn feed(&mut self, b: u8) -> bool {
        let whitespace = matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        loop {
            let Some(&top) = self.stack.last() else {
                return false;
            };
            match self.step(top, b, whitespace) {
                Step::Consumed => {
                    if whitespace && !matches!(top, Frame::String { .. }) {
                        match self.gap.then(b) {
                            Some(gap) => self.gap = gap,
                            None => return false,
                        }
                    } else {
                        self.gap = Gap::Empty;
                    }
                    return true;
                }
                Step::Reject => return false,
                Step::Become(frame) => {
                    if let Some(last) = self.stack.last_mut() {
                        *last = frame;
                    }
                }
                Step::Update(frame) => {
                    if let Some(last) = self.stack.last_mut() {
                        *last = frame;
                    }
                    self.gap = Gap::Empty;
                    return true;
                }
                Step::Push {
                    parent,
                    child,
                    refeed,
                } => {
                    if self.stack.len() >= MAX_NESTING {
                        return false;
                    }
                    if let Some(last) = self.stack.last_mut() {
                        *last = parent;
                    }
                    self.stack.push(child);
                    if !refeed {
                        self.gap = Gap::Empty;
                        return true;
                    }
                }
                Step::Done { option, refeed } => {
                    self.stack.pop();
                    self.child_done(option);
                    if !refeed {
                        self.gap = Gap::Empty;
                        return true;
                    }
                }
            }
        }
    }

    /// The parent of a finished value moves on.
    fn child_done(&mut self, option: Option<u32>) {
        let shape = Arc::clone(&self.shape);
        let Some(top) = self.stack.last_mut() else {
            return;
        };
        match top {
            Frame::Object {
                node,
                seen,
                state,
                pending,
            } => {
                if *state == ObjectState::Key {
                    let Node::Object(object) = shape.node(*node) else {
                        return;
                    };
                    match option.and_then(|i| Some((i, *object.values.get(i as usize)?))) {
                        Some((index, value)) => {
                            *seen |= 1 << index;
                            *pending = value;
                        }
                        None => *pending = object.additional.unwrap_or(ANY),
                    }
                    *state = ObjectState::Colon;
                } else {
                    *state = ObjectState::AfterValue;
                }
            }
            Frame::Array { count, state, .. } => {
                *count = count.saturating_add(1);
                *state = ArrayState::AfterValue;
            }
            _ => {}
        }
    }

    fn exact_option(&self, set: SetId, alive: u64, consumed: u16) -> Option<u32> {
        self.shape
            .set(set)
            .iter()
            .enumerate()
            .find(|(i, text)| alive & (1 << i) != 0 && text.len() == consumed as usize)
            .map(|(i, _)| i as u32)
    }

    fn step(&self, frame: Frame, b: u8, whitespace: bool) -> Step {
        match frame {
            Frame::Value(node) => self.value_start(node, b, whitespace),
            Frame::Object {
                node,
                seen,
                state,
                pending,
            } => self.object_step(node, seen, state, pending, b, whitespace),
            Frame::Array { node, count, state } => {
                self.array_step(node, count, state, b, whitespace)
            }
            Frame::String { escape, key } => self.string_step(escape, key, b),
            Frame::Literal {
                set,
                alive,
                consumed,
            } => self.literal_step(set, alive, consumed, b),
            Frame::Number {
                integer,
                state,
                digits,
            } => number_step(integer, state, digits, b),
        }
    }

    fn value_start(&self, node: NodeId, b: u8, whitespace: bool) -> Step {
        if whitespace {
            return Step::Consumed;
        }
        let node = self.resolve(node, b);
        match self.shape.node(node) {
            Node::Object(_) if b == b'{' => Step::Update(Frame::Object {
                node,
                seen: 0,
                state: ObjectState::Open,
                pending: ANY,
            }),
            Node::Array { .. } if b == b'[' => Step::Update(Frame::Array {
                node,
                count: 0,
                state: ArrayState::Open,
            }),
            Node::String if b == b'"' => Step::Update(Frame::String {
                escape: Escape::None,
                key: None,
            }),
            Node::Number { integer } => Step::Become(Frame::Number {
                integer: *integer,
                state: NumberState::Start,
                digits: 0,
            }),
            Node::Literals(set) => Step::Become(Frame::Literal {
                set: *set,
                alive: mask_of(self.shape.set(*set).len()),
                consumed: 0,
            }),
            _ => Step::Reject,
        }
    }

    /// The node a value starting with `b` follows: `Any` and alternatives
    /// resolve by the first byte; alternatives that share it widen to any
    /// value of that kind.
    fn resolve(&self, node: NodeId, b: u8) -> NodeId {
        self.resolve_depth(node, b, 0)
    }

    fn resolve_depth(&self, node: NodeId, b: u8, depth: usize) -> NodeId {
        let kind_of = |b: u8| match b {
            b'{' => ANY_OBJECT,
            b'[' => ANY_ARRAY,
            b'"' => STRING,
            b't' | b'f' => BOOLEAN,
            b'n' => NULL,
            _ => NUMBER,
        };
        match self.shape.node(node) {
            Node::Any => kind_of(b),
            Node::OneOf(alternatives) => {
                let mut matching = alternatives
                    .iter()
                    .copied()
                    // An alternative that is the node itself (a `$ref`
                    // back to it) adds nothing the others do not.
                    .filter(|&alt| alt != node && self.shape.starts_with(alt, b));
                match (matching.next(), matching.next()) {
                    // A chain of single alternatives longer than any
                    // schema nests only comes from a `$ref` cycle.
                    (Some(only), None) if depth < MAX_NESTING => {
                        self.resolve_depth(only, b, depth + 1)
                    }
                    (Some(_), _) => kind_of(b),
                    _ => node,
                }
            }
            _ => node,
        }
    }

    fn key_frame(&self, node: NodeId, seen: u64) -> Option<Frame> {
        let Node::Object(object) = self.shape.node(node) else {
            return None;
        };
        let unseen = mask_of(object.values.len()) & !seen;
        if object.additional.is_some() {
            return Some(Frame::String {
                escape: Escape::None,
                key: Some(KeyMatch {
                    set: object.keys,
                    alive: unseen,
                    consumed: 1,
                }),
            });
        }
        (unseen != 0).then_some(Frame::Literal {
            set: object.keys,
            alive: unseen,
            consumed: 0,
        })
    }

    fn object_step(
        &self,
        node: NodeId,
        seen: u64,
        state: ObjectState,
        pending: NodeId,
        b: u8,
        whitespace: bool,
    ) -> Step {
        let Node::Object(object) = self.shape.node(node) else {
            return Step::Reject;
        };
        let with = |state| Frame::Object {
            node,
            seen,
            state,
            pending,
        };
        let may_close = object.required_mask & !seen == 0;
        let more_keys = object.additional.is_some() || mask_of(object.values.len()) & !seen != 0;
        if whitespace && state != ObjectState::Key && state != ObjectState::Value {
            return Step::Consumed;
        }
        match (state, b) {
            (ObjectState::Open, b'}') if may_close => Step::Done {
                option: None,
                refeed: false,
            },
            (ObjectState::Open | ObjectState::AfterComma, b'"') => {
                match self.key_frame(node, seen) {
                    // A listed-keys literal reads the quote itself; a free
                    // key string starts after it.
                    Some(child @ Frame::Literal { .. }) => {
                        self.push_after(with(ObjectState::Key), child, true)
                    }
                    Some(child) => self.push_after(with(ObjectState::Key), child, false),
                    None => Step::Reject,
                }
            }
            (ObjectState::Colon, b':') => {
                self.push_after(with(ObjectState::Value), Frame::Value(pending), false)
            }
            (ObjectState::AfterValue, b',') if more_keys => {
                Step::Update(with(ObjectState::AfterComma))
            }
            (ObjectState::AfterValue, b'}') if may_close => Step::Done {
                option: None,
                refeed: false,
            },
            _ => Step::Reject,
        }
    }

    fn array_step(
        &self,
        node: NodeId,
        count: u32,
        state: ArrayState,
        b: u8,
        whitespace: bool,
    ) -> Step {
        let Node::Array {
            items,
            min_items,
            max_items,
        } = *self.shape.node(node)
        else {
            return Step::Reject;
        };
        let with = |state| Frame::Array { node, count, state };
        if whitespace && state != ArrayState::Value {
            return Step::Consumed;
        }
        match (state, b) {
            (ArrayState::Open | ArrayState::AfterValue, b']') if count >= min_items => Step::Done {
                option: None,
                refeed: false,
            },
            (ArrayState::AfterValue, b',') if count < max_items => {
                Step::Update(with(ArrayState::AfterComma))
            }
            (ArrayState::Open, _) if max_items > 0 && self.shape.starts_with(items, b) => {
                self.push_after(with(ArrayState::Value), Frame::Value(items), true)
            }
            (ArrayState::AfterComma, _) if self.shape.starts_with(items, b) => {
                self.push_after(with(ArrayState::Value), Frame::Value(items), true)
            }
            _ => Step::Reject,
        }
    }

    /// The frame moves to `parent` and `child` is pushed above it.
    fn push_after(&self, parent: Frame, child: Frame, refeed: bool) -> Step {
        Step::Push {
            parent,
            child,
            refeed,
        }
    }

    fn string_step(&self, escape: Escape, key: Option<KeyMatch>, b: u8) -> Step {
        let key = key.map(|k| self.advance_key(k, b));
        let next = |escape| Step::Update(Frame::String { escape, key });
        match escape {
            Escape::None => match b {
                b'"' => Step::Done {
                    option: key.and_then(|k| self.exact_option(k.set, k.alive, k.consumed)),
                    refeed: false,
                },
                b'\\' => next(Escape::Backslash),
                0..=0x1f => Step::Reject,
                0x20..=0x7f => next(Escape::None),
                _ => match utf8_lead(b) {
                    Some(continuation) => next(continuation),
                    None => Step::Reject,
                },
            },
            Escape::Utf8 { left, lo, hi } if (lo..=hi).contains(&b) => next(if left > 1 {
                Escape::Utf8 {
                    left: left - 1,
                    lo: 0x80,
                    hi: 0xbf,
                }
            } else {
                Escape::None
            }),
            Escape::Utf8 { .. } => Step::Reject,
            Escape::Backslash => match b {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => next(Escape::None),
                b'u' => next(Escape::Unicode(4)),
                _ => Step::Reject,
            },
            Escape::Unicode(left) if b.is_ascii_hexdigit() => next(if left > 1 {
                Escape::Unicode(left - 1)
            } else {
                Escape::None
            }),
            Escape::Unicode(_) => Step::Reject,
        }
    }

    /// The listed keys that still match after byte `b` of the key.
    fn advance_key(&self, key: KeyMatch, b: u8) -> KeyMatch {
        let at = key.consumed as usize;
        let mut alive = 0;
        for (i, text) in self.shape.set(key.set).iter().enumerate() {
            if key.alive & (1 << i) != 0 && text.get(at) == Some(&b) {
                alive |= 1 << i;
            }
        }
        KeyMatch {
            alive,
            consumed: key.consumed.saturating_add(1),
            ..key
        }
    }

    fn literal_step(&self, set: SetId, alive: u64, consumed: u16, b: u8) -> Step {
        let at = consumed as usize;
        let mut next = 0;
        for (i, text) in self.shape.set(set).iter().enumerate() {
            if alive & (1 << i) != 0 && text.get(at) == Some(&b) {
                next |= 1 << i;
            }
        }
        if next != 0 {
            return Step::Update(Frame::Literal {
                set,
                alive: next,
                consumed: consumed.saturating_add(1),
            });
        }
        match self.exact_option(set, alive, consumed) {
            Some(option) => Step::Done {
                option: Some(option),
                refeed: true,
            },
            None => Step::Reject,
        }
    }
}

/// `digits` counts the digits of the part being read (integer, fraction
/// or exponent).
fn number_step(integer: bool, state: NumberState, digits: u8, b: u8) -> Step {
    use NumberState as S;
    let next = match (state, b) {
        (S::Start, b'-') => Some((S::Minus, 0)),
        (S::Start | S::Minus, b'0') => Some((S::Zero, 1)),
        (S::Start | S::Minus, b'1'..=b'9') => Some((S::Int, 1)),
        (S::Int, b'0'..=b'9') if digits < MAX_INT_DIGITS => Some((S::Int, digits + 1)),
        (S::Zero | S::Int, b'.') if !integer => Some((S::FracStart, 0)),
        (S::FracStart | S::Frac, b'0'..=b'9') if digits < MAX_FRAC_DIGITS => {
            Some((S::Frac, digits + 1))
        }
        (S::Zero | S::Int | S::Frac, b'e' | b'E') if !integer => Some((S::ExpStart, 0)),
        (S::ExpStart, b'+' | b'-') => Some((S::ExpSign, 0)),
        (S::ExpStart | S::ExpSign | S::Exp, b'0'..=b'9') if digits < MAX_EXP_DIGITS => {
            Some((S::Exp, digits + 1))
        }
        _ => None,
    };
    match next {
        Some((state, digits)) => Step::Update(Frame::Number {
            integer,
            state,
            digits,
        }),
        None if state.accepting() && !b.is_ascii_digit() => Step::Done {
            option: None,
            refeed: true,
        },
        None => Step::Reject,
    }
}

/// What must follow a UTF-8 lead byte (RFC 3629's table); `None` for a
/// byte that cannot start a character.
fn utf8_lead(b: u8) -> Option<Escape> {
    let (left, lo, hi) = match b {
        0xc2..=0xdf => (1, 0x80, 0xbf),
        0xe0 => (2, 0xa0, 0xbf),
        0xe1..=0xec | 0xee..=0xef => (2, 0x80, 0xbf),
        0xed => (2, 0x80, 0x9f),
        0xf0 => (3, 0x90, 0xbf),
        0xf1..=0xf3 => (3, 0x80, 0xbf),
        0xf4 => (3, 0x80, 0x8f),
        _ => return None,
    };
    Some(Escape::Utf8 { left, lo, hi })
}

fn mask_of(len: usize) -> u64 {
    if len >= 64 {
        u64::MAX
    } else {
        (1u64 << len) - 1
    }
}
