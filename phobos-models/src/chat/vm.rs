//! Compiling and running a template with its growth bounded.
//!
//! Some of minijinja's operations grow values with no hook to stop them
//! (`a ~ a` doubles a string, `[l, l]` doubles a nested list's expanded
//! size, raw template text inside a loop bypasses the formatter). So the
//! compiled program is rewritten before it runs: raw text becomes a constant
//! emitted through the charged formatter, every operation that builds a value
//! is followed by a call to the size check, `*` goes through a pre-checked
//! multiply, `+` through Python's semantics (a safe string plus a string
//! escapes the string, as markupsafe's `Markup.__add__` does; lists add to a
//! list), a `for` over none fails as in Python, and namespace assignment goes
//! through a checked setter. Constant
//! containers (folded at compile time by minijinja's own operators) are
//! checked where they are loaded. Jump targets
//! are remapped to the new instruction positions.

use std::collections::BTreeMap;
use std::sync::Arc;

use minijinja::machinery::{
    CompiledTemplate, Instruction, Instructions, TemplateConfig, Vm, WhitespaceConfig,
    make_string_output,
};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::ValueKind;
use minijinja::{AutoEscape, Environment, Error, Value};

/// The size check run on the value an operation just built.
pub(crate) const CHECK: &str = "__phobos_check";
/// `a * b` with the result's size checked before it is built.
pub(crate) const MUL: &str = "__phobos_mul";
/// `a + b` with Python's semantics where minijinja's differ.
pub(crate) const ADD: &str = "__phobos_add";
/// `a ~ b` with Python's `str()` of each side.
pub(crate) const CONCAT: &str = "__phobos_concat";
/// What a `for` loop iterates: none is refused, as in Python.
pub(crate) const LOOP_ITERABLE: &str = "__phobos_loop_iterable";
/// `ns.attr = value` (value, namespace, name).
pub(crate) const SET_ATTR: &str = "__phobos_setattr";

/// The parsed, rewritten program.
pub(crate) struct Program<'s> {
    instructions: Instructions<'s>,
    blocks: BTreeMap<&'s str, Instructions<'s>>,
}

/// Parses `source` with the Hugging Face whitespace rules (trim_blocks,
/// lstrip_blocks, no kept trailing newline).
// SyntaxConfig is a unit struct unless minijinja's `custom_syntax` feature is
// on (feature unification may turn it on), so build it with `default()`.
#[allow(clippy::default_constructed_unit_structs)]
pub(crate) fn compile(source: &str) -> Result<Program<'_>, Error> {
    let config = TemplateConfig {
        syntax_config: SyntaxConfig::default(),
        ws_config: WhitespaceConfig {
            keep_trailing_newline: false,
            lstrip_blocks: true,
            trim_blocks: true,
        },
        default_auto_escape: Arc::new(|_: &str| AutoEscape::None),
    };
    let compiled = CompiledTemplate::new("chat_template", source, &config)?;
    Ok(Program {
        instructions: rewrite(&compiled.instructions),
        blocks: compiled
            .blocks
            .iter()
            .map(|(name, block)| (*name, rewrite(block)))
            .collect(),
    })
}

/// Runs `program` against `root`; the output goes through the environment's
/// (charged) formatter.
pub(crate) fn run(
    env: &Environment<'_>,
    program: &Program<'_>,
    root: Value,
) -> Result<String, Error> {
    let mut rendered = String::new();
    {
        let mut output = make_string_output(&mut rendered);
        Vm::new(env).eval(
            &program.instructions,
            root,
            &program.blocks,
            &mut output,
            AutoEscape::None,
        )?;
    }
    Ok(rendered)
}

fn expand<'s>(instruction: &Instruction<'s>) -> Vec<Instruction<'s>> {
    use Instruction as I;
    let checked = |i: Instruction<'s>| vec![i, I::CallFunction(CHECK, Some(1))];
    match instruction {
        I::EmitRaw(text) => vec![I::LoadConst(Value::from(*text)), I::Emit],
        // Constant folding runs minijinja's own operators at compile time:
        // `[1, 2] * 2**62` becomes one lazy constant of 2^63 items.
        I::LoadConst(value)
            if matches!(
                value.kind(),
                ValueKind::Seq | ValueKind::Iterable | ValueKind::Map
            ) =>
        {
            checked(instruction.clone())
        }
        I::Mul => vec![I::CallFunction(MUL, Some(2))],
        I::Add => vec![I::CallFunction(ADD, Some(2))],
        I::StringConcat => vec![I::CallFunction(CONCAT, Some(2))],
        I::PushLoop(flags) => vec![I::CallFunction(LOOP_ITERABLE, Some(1)), I::PushLoop(*flags)],
        I::SetAttr(name) => vec![
            I::LoadConst(Value::from(*name)),
            I::CallFunction(SET_ATTR, Some(3)),
            I::DiscardTop,
        ],
        I::BuildList(_)
        | I::BuildMap(_)
        | I::ApplyFilter(..)
        | I::CallMethod(..)
        | I::CallObject(_) => checked(instruction.clone()),
        I::CallFunction(name, _) if *name != CHECK => checked(instruction.clone()),
        other => vec![other.clone()],
    }
}

fn retarget<'s>(instruction: Instruction<'s>, map: &[u32]) -> Instruction<'s> {
    use Instruction as I;
    let at = |target: u32| map.get(target as usize).copied().unwrap_or(target);
    match instruction {
        I::Jump(t) => I::Jump(at(t)),
        I::JumpIfFalse(t) => I::JumpIfFalse(at(t)),
        I::JumpIfFalseOrPop(t) => I::JumpIfFalseOrPop(at(t)),
        I::JumpIfTrueOrPop(t) => I::JumpIfTrueOrPop(at(t)),
        I::Iterate(t) => I::Iterate(at(t)),
        I::BuildMacro(name, offset, flags) => I::BuildMacro(name, at(offset), flags),
        other => other,
    }
}

fn rewrite<'s>(old: &Instructions<'s>) -> Instructions<'s> {
    let expanded: Vec<Vec<Instruction<'s>>> = (0..old.len())
        .map(|i| old.get(i as u32).map(expand).unwrap_or_default())
        .collect();
    // map[i]: where old instruction i starts in the new program; one past the
    // end for jumps to the end.
    let mut map = Vec::with_capacity(expanded.len() + 1);
    let mut next = 0u32;
    for group in &expanded {
        map.push(next);
        next += group.len() as u32;
    }
    map.push(next);
    let mut new = Instructions::new(old.name(), old.source());
    for (i, group) in expanded.into_iter().enumerate() {
        let span = old.get_span(i as u32);
        let line = old.get_line(i as u32);
        for instruction in group {
            let instruction = retarget(instruction, &map);
            match (span, line) {
                (Some(span), _) => new.add_with_span(instruction, span),
                (None, Some(line)) => {
                    new.add_with_line(instruction, u16::try_from(line).unwrap_or(u16::MAX))
                }
                (None, None) => new.add(instruction),
            };
        }
    }
    new
}
