//! What one render may spend. Templates come from model files, so a template
//! that runs away (endless loops, doubling strings, deep recursion, huge
//! padding) must stop with a typed error long before it exhausts time,
//! memory or the stack.
//!
//! Three measures bound a render: fuel (minijinja instructions), work (bytes
//! written or built plus a fixed cost per container item visited by the size
//! check) and the size of any single value (string bytes plus a fixed cost per
//! container item, nested at most `depth` deep). Work and value size grow with
//! the size of the request, so a long conversation is never refused where a
//! short one renders.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, Value};

/// What a container item counts for in work and value size.
pub(crate) const ITEM_COST: u64 = 16;

/// The limits of one render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatLimits {
    /// Template instructions one render may execute.
    pub fuel: u64,
    /// Work units one render may spend, plus 16 per byte of the request.
    pub work: u64,
    /// Size of the largest value, plus 4 per byte of the request.
    pub value_bytes: u64,
    /// How deeply values may nest.
    pub depth: usize,
    /// How deeply macros and recursive loops may call themselves.
    pub recursion: usize,
    /// The largest `tojson(indent=...)`.
    pub json_indent: usize,
    /// The largest width or precision in a `format` specification and the
    /// largest `indent` width.
    pub width: usize,
    /// The most items one `range(...)` may produce.
    pub range: u64,
}

impl Default for ChatLimits {
    /// Generous for every real template: the largest of the 70 in
    /// tests/golden/chat/templates spends well under a hundredth of each.
    fn default() -> Self {
        Self {
            fuel: 20_000_000,
            work: 256 << 20,
            value_bytes: 16 << 20,
            depth: 48,
            recursion: 64,
            json_indent: 64,
            width: 4096,
            range: 100_000,
        }
    }
}

/// Which limit a render hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatLimit {
    Fuel,
    Work,
    ValueSize,
    Depth,
    Recursion,
    JsonIndent,
    Width,
    Range,
    /// A namespace stored into a namespace (it could contain itself).
    NamespaceCycle,
}

impl std::fmt::Display for ChatLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Fuel => "instruction count (fuel)",
            Self::Work => "work (bytes built and written)",
            Self::ValueSize => "value size",
            Self::Depth => "value nesting depth",
            Self::Recursion => "recursion depth",
            Self::JsonIndent => "tojson indent",
            Self::Width => "format width",
            Self::Range => "range length",
            Self::NamespaceCycle => "namespace nesting",
        })
    }
}

/// The budget of one render, shared by the functions, filters and formatter
/// of its environment.
#[derive(Debug)]
pub(crate) struct Budget {
    work_left: AtomicU64,
    pub value_bytes: u64,
    pub depth: usize,
    pub json_indent: usize,
    pub width: usize,
    pub range: u64,
    tripped: Mutex<Option<ChatLimit>>,
}

impl Budget {
    /// The budget for a request whose input is `request_bytes` long.
    pub fn new(limits: &ChatLimits, request_bytes: u64) -> Self {
        Self {
            work_left: AtomicU64::new(
                limits
                    .work
                    .saturating_add(request_bytes.saturating_mul(ITEM_COST)),
            ),
            value_bytes: limits
                .value_bytes
                .saturating_add(request_bytes.saturating_mul(4)),
            depth: limits.depth,
            json_indent: limits.json_indent,
            width: limits.width,
            range: limits.range,
            tripped: Mutex::new(None),
        }
    }

    /// Records `limit` as the reason the render stops and returns the error
    /// that stops it.
    pub fn fail(&self, limit: ChatLimit, message: String) -> Error {
        let mut tripped = self.tripped.lock().unwrap_or_else(|e| e.into_inner());
        tripped.get_or_insert(limit);
        Error::new(ErrorKind::InvalidOperation, message)
    }

    /// The limit a failed render hit, if it hit one of the budget's.
    pub fn tripped(&self) -> Option<ChatLimit> {
        *self.tripped.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn charge(&self, units: u64) -> Result<(), Error> {
        let ok = self
            .work_left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(units)
            })
            .is_ok();
        if ok {
            Ok(())
        } else {
            self.work_left.store(0, Ordering::Relaxed);
            Err(self.fail(
                ChatLimit::Work,
                "the template did more work than the render's budget allows".into(),
            ))
        }
    }

    /// Checks a value an operation just built: its size and nesting, and (for
    /// `forbid_namespace`) that it holds no namespace. Charges the items
    /// visited and, for a string, its bytes (it may be new).
    pub fn check(&self, value: &Value, forbid_namespace: bool) -> Result<(), Error> {
        let mut walk = Walk {
            budget: self,
            size: 0,
            items: 0,
            forbid_namespace,
        };
        // minijinja folds `[1, 2, 3] * 9223372036854775807` at compile time
        // into a lazy list whose length overflows when it is first iterated
        // (a panic where overflow checks are on, as in debug builds). No
        // input may take the process down, so that panic becomes a limit
        // error here, where every such constant is first iterated (vm.rs).
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| walk.visit(value, 0)))
                .unwrap_or_else(|_| {
                    Err(self.fail(ChatLimit::ValueSize, "a value's length overflows".into()))
                });
        let fresh_bytes = value.as_str().map_or(0, |s| s.len() as u64);
        self.charge(
            walk.items
                .saturating_mul(ITEM_COST)
                .saturating_add(fresh_bytes),
        )?;
        result
    }
}

struct Walk<'a> {
    budget: &'a Budget,
    size: u64,
    items: u64,
    forbid_namespace: bool,
}

impl Walk<'_> {
    fn visit(&mut self, value: &Value, depth: usize) -> Result<(), Error> {
        if depth > self.budget.depth {
            return Err(self.budget.fail(
                ChatLimit::Depth,
                format!("a value nests deeper than {} levels", self.budget.depth),
            ));
        }
        self.items += 1;
        self.size = self.size.saturating_add(ITEM_COST);
        match value.kind() {
            ValueKind::String => {
                self.size = self
                    .size
                    .saturating_add(value.as_str().map_or(0, |s| s.len() as u64));
            }
            ValueKind::Bytes => {
                self.size = self
                    .size
                    .saturating_add(value.as_bytes().map_or(0, |b| b.len() as u64));
            }
            ValueKind::Seq | ValueKind::Iterable => {
                if let Ok(items) = value.try_iter() {
                    for item in items {
                        self.visit(&item, depth + 1)?;
                    }
                }
            }
            ValueKind::Map => {
                if self.forbid_namespace
                    && value
                        .downcast_object_ref::<super::bounded::Namespace>()
                        .is_some()
                {
                    return Err(self.budget.fail(
                        ChatLimit::NamespaceCycle,
                        "a namespace cannot be stored in a namespace".into(),
                    ));
                }
                if let Ok(keys) = value.try_iter() {
                    for key in keys {
                        let item = value.get_item(&key).unwrap_or_default();
                        self.visit(&key, depth + 1)?;
                        self.visit(&item, depth + 1)?;
                    }
                }
            }
            _ => {}
        }
        if self.size > self.budget.value_bytes {
            return Err(self.budget.fail(
                ChatLimit::ValueSize,
                format!(
                    "a value grew past {} bytes (the limit for this request)",
                    self.budget.value_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// Which limit a render error came from: the budget's record, else
/// minijinja's own fuel and recursion errors.
pub(crate) fn classify(budget: &Budget, error: &Error) -> Option<ChatLimit> {
    if let Some(limit) = budget.tripped() {
        return Some(limit);
    }
    if error.kind() == ErrorKind::OutOfFuel {
        return Some(ChatLimit::Fuel);
    }
    // minijinja reports its recursion limit only in the message.
    let detail = error.detail().unwrap_or_default();
    if detail.contains("recursion limit") {
        return Some(ChatLimit::Recursion);
    }
    None
}
