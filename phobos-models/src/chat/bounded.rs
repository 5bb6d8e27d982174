//! The environment's charged and pre-checked pieces: the formatter, the
//! functions the rewritten program calls (vm.rs), a namespace that cannot
//! contain itself, and the filters and methods whose numeric arguments
//! multiply their output (padding widths, batch sizes, repeat counts,
//! separators and replacements) checked before they allocate.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, Mutex};

use minijinja::value::{Enumerator, Kwargs, Object, ObjectRepr, Rest, StringInput, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, Value};

use super::limits::{Budget, ChatLimit, ITEM_COST};
use super::{pystr, vm};

/// A Jinja namespace. minijinja's own lets a namespace be stored in itself;
/// this one refuses namespaces as attribute values, and (as Hugging Face's)
/// refuses underscore-prefixed names.
#[derive(Debug, Default)]
pub(crate) struct Namespace(Mutex<BTreeMap<String, Value>>);

impl Object for Namespace {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let attrs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        attrs.get(key.as_str()?).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let attrs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        Enumerator::Values(attrs.keys().map(|k| Value::from(k.as_str())).collect())
    }
}

impl Namespace {
    fn set(&self, budget: &Budget, name: &str, value: Value) -> Result<(), Error> {
        if name.starts_with('_') {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("namespace attributes cannot start with '_': {name:?}"),
            ));
        }
        budget.check(&value, true)?;
        let mut attrs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        attrs.insert(name.to_owned(), value);
        Ok(())
    }
}

/// minijinja's own operators, for what the checked versions delegate.
static PLAIN: LazyLock<Environment<'static>> = LazyLock::new(Environment::new);

fn plain_binop(op: &str, a: &Value, b: &Value) -> Result<Value, Error> {
    let expression = PLAIN.compile_expression(op)?;
    expression.eval(minijinja::context! { a => a.clone(), b => b.clone() })
}

fn check_width(budget: &Budget, width: u64, what: &str) -> Result<(), Error> {
    if width > budget.width as u64 {
        return Err(budget.fail(
            ChatLimit::Width,
            format!("{what} {width} is larger than the limit {}", budget.width),
        ));
    }
    Ok(())
}

fn check_size(budget: &Budget, bytes: u64, what: &str) -> Result<(), Error> {
    if bytes > budget.value_bytes {
        return Err(budget.fail(
            ChatLimit::ValueSize,
            format!(
                "{what} would be {bytes} bytes, more than the limit {}",
                budget.value_bytes
            ),
        ));
    }
    Ok(())
}

/// The numbers in the width/precision part of each `%` (printf) or `{:...}`
/// (str.format) specification of `format`: every digit run reached from a
/// `%` or `:` through flag, alignment, digit and at most one fill character.
fn spec_numbers(format: &str) -> Vec<u64> {
    const SPEC: &str = "-+ #0123456789.,_<>^=";
    let chars: Vec<char> = format.chars().collect();
    let mut numbers = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        let mut n = 0u64;
        while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
            n = n.saturating_mul(10).saturating_add(u64::from(d));
            i += 1;
        }
        let mut fills = 0;
        let in_spec = chars[..start].iter().rev().find_map(|&c| match c {
            '%' | ':' => Some(true),
            c if SPEC.contains(c) => None,
            _ if fills == 0 => {
                fills += 1;
                None
            }
            _ => Some(false),
        });
        if in_spec == Some(true) {
            numbers.push(n);
        }
    }
    numbers
}

fn check_format(budget: &Budget, format: &str) -> Result<(), Error> {
    for width in spec_numbers(format) {
        check_width(budget, width, "format width")?;
    }
    Ok(())
}

/// The size `s.replace(old, new)` would have.
fn replaced_len(s: &str, old: &str, new: &str) -> u64 {
    let count = if old.is_empty() {
        s.chars().count() as u64 + 1
    } else {
        s.matches(old).count() as u64
    };
    (s.len() as u64).saturating_add(count.saturating_mul(new.len() as u64))
}

/// The size joining `items` with `separator` would have, at most.
fn joined_len(budget: &Budget, items: &Value, separator: &str) -> Result<u64, Error> {
    let count = items.len().map_or(0, |n| n as u64);
    let mut total = count.saturating_mul(separator.len() as u64);
    check_size(budget, total, "the joined string")?;
    if let Ok(iter) = items.try_iter() {
        for item in iter {
            total = total.saturating_add(match item.as_str() {
                Some(s) => s.len() as u64,
                None => ITEM_COST,
            });
        }
    }
    Ok(total)
}

/// markupsafe's HTML escaping.
fn markup_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `a + b` as Python computes it for the values templates see.
fn python_add(a: &Value, b: &Value) -> Result<Value, Error> {
    if let (Some(x), Some(y)) = (a.as_str(), b.as_str()) {
        return Ok(match (a.is_safe(), b.is_safe()) {
            (false, false) => Value::from([x, y].concat()),
            (true, true) => Value::from_safe_string([x, y].concat()),
            (true, false) => Value::from_safe_string(format!("{x}{}", markup_escape(y))),
            (false, true) => Value::from_safe_string(format!("{}{y}", markup_escape(x))),
        });
    }
    let seq = |v: &Value| matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable);
    if seq(a) && seq(b) {
        let items: Vec<Value> = a.try_iter()?.chain(b.try_iter()?).collect();
        return Ok(Value::from(items));
    }
    plain_binop("a + b", a, b)
}

/// A writer into the output that charges every byte to the budget.
struct Charged<'a, 'b> {
    out: &'a mut minijinja::Output<'b>,
    budget: &'a Budget,
}

impl std::fmt::Write for Charged<'_, '_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.budget
            .charge(s.len() as u64)
            .map_err(|_| std::fmt::Error)?;
        self.out.write_str(s)
    }
}

/// Installs the charged pieces into `env`.
pub(crate) fn install(env: &mut Environment<'_>, budget: &Arc<Budget>) {
    let b = budget.clone();
    env.set_formatter(move |out, _state, value| {
        if value.is_undefined() {
            return Ok(());
        }
        let mut writer = Charged { out, budget: &b };
        pystr::write_str(&mut writer, value, b.depth + 1).map_err(|_| {
            b.tripped().map_or_else(
                || Error::new(ErrorKind::WriteFailure, "writing the output failed"),
                |limit| {
                    Error::new(
                        ErrorKind::InvalidOperation,
                        format!("{limit} limit reached"),
                    )
                },
            )
        })
    });

    let b = budget.clone();
    env.add_function(vm::CHECK, move |value: Value| -> Result<Value, Error> {
        b.check(&value, false)?;
        Ok(value)
    });

    let b = budget.clone();
    env.add_function(vm::MUL, move |a: Value, c: Value| -> Result<Value, Error> {
        let (text, count) = match (a.kind(), c.kind()) {
            (ValueKind::Number, _) => (&c, &a),
            _ => (&a, &c),
        };
        if let Some(n) = count.as_i64().filter(|n| *n > 0) {
            let n = n as u64;
            if let Some(s) = text.as_str() {
                check_size(
                    &b,
                    (s.len() as u64).saturating_mul(n),
                    "the repeated string",
                )?;
            } else if matches!(text.kind(), ValueKind::Seq | ValueKind::Iterable) {
                let len = text.len().map_or(0, |l| l as u64);
                check_size(
                    &b,
                    len.saturating_mul(n).saturating_mul(ITEM_COST),
                    "the repeated list",
                )?;
            }
        }
        let product = plain_binop("a * b", &a, &c)?;
        b.check(&product, false)?;
        Ok(product)
    });

    let b = budget.clone();
    env.add_function(vm::ADD, move |a: Value, c: Value| -> Result<Value, Error> {
        let sum = python_add(&a, &c)?;
        b.check(&sum, false)?;
        Ok(sum)
    });

    let b = budget.clone();
    env.add_function(
        vm::CONCAT,
        move |a: Value, c: Value| -> Result<Value, Error> {
            let text = |v: &Value| {
                pystr::to_str(v, b.depth + 1).map_err(|_| {
                    b.fail(
                        ChatLimit::Depth,
                        format!("a value nests deeper than {} levels", b.depth),
                    )
                })
            };
            let joined = Value::from(text(&a)? + &text(&c)?);
            b.check(&joined, false)?;
            Ok(joined)
        },
    );

    let b = budget.clone();
    env.add_filter("string", move |value: Value| -> Result<Value, Error> {
        if value.as_str().is_some() {
            return Ok(value);
        }
        pystr::to_str(&value, b.depth + 1)
            .map(Value::from)
            .map_err(|_| {
                b.fail(
                    ChatLimit::Depth,
                    format!("a value nests deeper than {} levels", b.depth),
                )
            })
    });

    env.add_function(vm::LOOP_ITERABLE, |value: Value| -> Result<Value, Error> {
        if value.is_none() {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "'NoneType' object is not iterable",
            ));
        }
        Ok(value)
    });

    // Python's iter() accepts strings, containers and jinja2's Undefined,
    // not none or numbers (minijinja's test also accepts none).
    env.add_test("iterable", |value: Value| -> bool {
        matches!(
            value.kind(),
            ValueKind::String
                | ValueKind::Bytes
                | ValueKind::Seq
                | ValueKind::Map
                | ValueKind::Iterable
                | ValueKind::Undefined
        )
    });

    // jinja2's map, select, reject, selectattr and rejectattr return
    // generators: `length` and `tojson` fail on them as in Python, `list`,
    // `join` and loops take them.
    env.add_filter("__builtin_map", minijinja::filters::map);
    env.add_filter("__builtin_select", minijinja::filters::select);
    env.add_filter("__builtin_reject", minijinja::filters::reject);
    env.add_filter("__builtin_selectattr", minijinja::filters::selectattr);
    env.add_filter("__builtin_rejectattr", minijinja::filters::rejectattr);
    for name in ["map", "select", "reject", "selectattr", "rejectattr"] {
        env.add_filter(
            name,
            move |state: &State, value: Value, args: Rest<Value>| -> Result<Value, Error> {
                let mut all = vec![value];
                all.extend(args.iter().cloned());
                let result = state.apply_filter(&format!("__builtin_{name}"), &all)?;
                let items: Vec<Value> = result.try_iter()?.collect();
                Ok(Value::make_iterable(move || items.clone().into_iter()))
            },
        );
    }

    let b = budget.clone();
    env.add_function(
        vm::SET_ATTR,
        move |value: Value, target: Value, name: String| -> Result<Value, Error> {
            match target.downcast_object_ref::<Namespace>() {
                Some(ns) => ns.set(&b, &name, value)?,
                None => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "can only assign to namespaces",
                    ));
                }
            }
            Ok(Value::UNDEFINED)
        },
    );

    let b = budget.clone();
    env.add_function(
        "namespace",
        move |init: Option<Value>, kwargs: Kwargs| -> Result<Value, Error> {
            let ns = Namespace::default();
            if let Some(init) = init {
                for key in init.try_iter()? {
                    let name = key.as_str().unwrap_or_default().to_owned();
                    ns.set(&b, &name, init.get_item(&key)?)?;
                }
            }
            for name in kwargs.args() {
                ns.set(&b, name, kwargs.get::<Value>(name)?)?;
            }
            Ok(Value::from_object(ns))
        },
    );

    let b = budget.clone();
    env.add_function(
        "range",
        move |lower: i64, upper: Option<i64>, step: Option<i64>| -> Result<Value, Error> {
            let (start, end) = upper.map_or((0, lower), |upper| (lower, upper));
            let step = step.unwrap_or(1);
            let span = i128::from(end) - i128::from(start);
            let count = match step {
                0 => 0,
                s if (s > 0) == (span > 0) => {
                    (span.abs() + i128::from(s).abs() - 1) / i128::from(s).abs()
                }
                _ => 0,
            };
            if count > i128::from(b.range) {
                return Err(b.fail(
                    ChatLimit::Range,
                    format!(
                        "range of {count} items is longer than the limit {}",
                        b.range
                    ),
                ));
            }
            let as_isize = |v: i64| {
                isize::try_from(v).map_err(|_| {
                    Error::new(ErrorKind::InvalidOperation, "range bound out of range")
                })
            };
            minijinja::functions::range(
                as_isize(lower)?,
                upper.map(as_isize).transpose()?,
                Some(as_isize(step)?),
            )
        },
    );

    let b = budget.clone();
    env.add_filter(
        "indent",
        move |value: String,
              width: Option<Value>,
              first: Option<bool>,
              blank: Option<bool>,
              kwargs: Kwargs|
              -> Result<Value, Error> {
            let width = match width {
                None => " ".repeat(4),
                Some(w) => match w.as_str() {
                    Some(s) => s.to_owned(),
                    None => {
                        let n = i128::try_from(w)?.max(0);
                        check_width(&b, n.min(i128::from(u64::MAX)) as u64, "indent width")?;
                        " ".repeat(n as usize)
                    }
                },
            };
            let first = kwargs
                .get::<Option<bool>>("first")?
                .or(first)
                .unwrap_or(false);
            let blank = kwargs
                .get::<Option<bool>>("blank")?
                .or(blank)
                .unwrap_or(false);
            kwargs.assert_all_used()?;
            let lines = value.lines().count() as u64 + 1;
            check_size(
                &b,
                (value.len() as u64).saturating_add(lines.saturating_mul(width.len() as u64)),
                "the indented string",
            )?;
            Ok(Value::from(pystr::indent(&value, &width, first, blank)))
        },
    );

    for (name, slice) in [("batch", false), ("slice", true)] {
        let b = budget.clone();
        env.add_filter(
            name,
            move |state: &State,
                  value: Value,
                  count: usize,
                  fill: Option<Value>|
                  -> Result<Value, Error> {
                check_size(&b, (count as u64).saturating_mul(ITEM_COST), "the batches")?;
                if slice {
                    minijinja::filters::slice(state, value, count, fill)
                } else {
                    minijinja::filters::batch(state, value, count, fill)
                }
            },
        );
    }

    let b = budget.clone();
    env.add_filter(
        "join",
        move |state: &State,
              value: &Value,
              joiner: Option<StringInput<'_>>|
              -> Result<Value, Error> {
            let separator = joiner.as_ref().map_or("", |j| j.as_str());
            let total = joined_len(&b, value, separator)?;
            check_size(&b, total, "the joined string")?;
            if value.as_str().is_some() {
                return minijinja::filters::join(state, value, joiner);
            }
            // jinja2 joins str() of each item.
            let mut joined = String::new();
            for (i, item) in value.try_iter()?.enumerate() {
                if i > 0 {
                    joined.push_str(separator);
                }
                pystr::write_str(&mut joined, &item, b.depth + 1).map_err(|_| {
                    b.fail(
                        ChatLimit::Depth,
                        format!("a value nests deeper than {} levels", b.depth),
                    )
                })?;
            }
            Ok(Value::from(joined))
        },
    );

    let b = budget.clone();
    env.add_filter(
        "replace",
        move |state: &State,
              value: StringInput<'_>,
              from: StringInput<'_>,
              to: StringInput<'_>|
              -> Result<Value, Error> {
            let len = replaced_len(value.as_str(), from.as_str(), to.as_str());
            check_size(&b, len, "the replaced string")?;
            minijinja::filters::replace(state, value, from, to)
        },
    );

    let b = budget.clone();
    env.add_filter(
        "format",
        move |state: &State, format: &Value, args: Rest<Value>| -> Result<Value, Error> {
            check_format(&b, format.as_str().unwrap_or_default())?;
            minijinja::filters::format(state, format, args)
        },
    );

    let b = budget.clone();
    env.set_unknown_method_callback(move |state, value, method, args| {
        if let Some(s) = value.as_str() {
            let text = |i: usize| args.get(i).and_then(Value::as_str).unwrap_or_default();
            match method {
                "replace" => {
                    check_size(&b, replaced_len(s, text(0), text(1)), "the replaced string")?
                }
                "join" => {
                    let items = args.first().cloned().unwrap_or_default();
                    let total = joined_len(&b, &items, s)?;
                    check_size(&b, total, "the joined string")?;
                }
                "format" => check_format(&b, s)?,
                _ => {}
            }
        }
        minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
    });
}
