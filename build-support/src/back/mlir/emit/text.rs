//! A small writer of MLIR text: fresh SSA names, indentation, and the few
//! types the back end uses. Kept dumb on purpose: what to emit is decided in
//! the sibling modules, this only spells it.

use std::fmt;

use crate::ir::DType;

/// An MLIR scalar type as the emitter uses it. Signedness lives in the
/// source [`DType`], not here: MLIR integers are signless.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Ty {
    I1,
    I8,
    I16,
    I32,
    I64,
    F16,
    Bf16,
    F32,
    F64,
}

impl Ty {
    pub(crate) fn of(dtype: DType) -> Ty {
        match dtype {
            DType::Bool => Ty::I1,
            DType::I8 | DType::U8 => Ty::I8,
            DType::I16 | DType::U16 => Ty::I16,
            DType::I32 | DType::U32 => Ty::I32,
            DType::I64 => Ty::I64,
            DType::F16 => Ty::F16,
            DType::Bf16 => Ty::Bf16,
            DType::F32 => Ty::F32,
            DType::F64 => Ty::F64,
        }
    }

    /// The type a value of `dtype` has in memory: `bool` is a byte there.
    pub(crate) fn in_memory(dtype: DType) -> Ty {
        match dtype {
            DType::Bool => Ty::I8,
            other => Ty::of(other),
        }
    }

    pub(crate) fn is_float(self) -> bool {
        matches!(self, Ty::F16 | Ty::Bf16 | Ty::F32 | Ty::F64)
    }

    pub(crate) fn size_bytes(self) -> u64 {
        match self {
            Ty::I1 | Ty::I8 => 1,
            Ty::I16 | Ty::F16 | Ty::Bf16 => 2,
            Ty::I32 | Ty::F32 => 4,
            Ty::I64 | Ty::F64 => 8,
        }
    }

    /// Bits of an integer type (floats answer their storage width).
    pub(crate) fn bits(self) -> u32 {
        match self {
            Ty::I1 => 1,
            other => (other.size_bytes() * 8) as u32,
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ty::I1 => "i1",
            Ty::I8 => "i8",
            Ty::I16 => "i16",
            Ty::I32 => "i32",
            Ty::I64 => "i64",
            Ty::F16 => "f16",
            Ty::Bf16 => "bf16",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
        })
    }
}

/// An SSA value: its name (with `%`) and type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Val {
    pub name: String,
    pub ty: Ty,
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// Where a memref buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Space {
    /// Shared by the CTA (`.shared`).
    Workgroup,
    /// One per thread (registers after LLVM's SROA, else local memory).
    Private,
}

/// A fixed-size buffer declared as an attribution of the kernel function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Buffer {
    pub name: String,
    pub ty: Ty,
    pub len: u64,
    pub space: Space,
}

impl Buffer {
    pub(crate) fn memref_type(&self) -> String {
        let space = match self.space {
            Space::Workgroup => "workgroup",
            Space::Private => "private",
        };
        format!(
            "memref<{}x{}, #gpu.address_space<{space}>>",
            self.len, self.ty
        )
    }

    pub(crate) fn size_bytes(&self) -> u64 {
        self.len * self.ty.size_bytes()
    }
}

/// The lines of a function body being written.
#[derive(Default)]
pub(crate) struct Text {
    lines: Vec<String>,
    indent: usize,
    next_id: usize,
}

impl Text {
    pub(crate) fn fresh(&mut self, hint: &str) -> String {
        let id = self.next_id;
        self.next_id += 1;
        format!("%{hint}{id}")
    }

    /// Writes `%new = rhs` and returns the new value of type `ty`.
    pub(crate) fn def(&mut self, ty: Ty, rhs: impl fmt::Display) -> Val {
        let name = self.fresh("v");
        self.line(format!("{name} = {rhs}"));
        Val { name, ty }
    }

    pub(crate) fn line(&mut self, text: impl Into<String>) {
        let text = text.into();
        self.lines
            .push(format!("{}{}", "  ".repeat(self.indent), text));
    }

    pub(crate) fn open(&mut self, text: impl Into<String>) {
        self.line(text);
        self.indent += 1;
    }

    pub(crate) fn close(&mut self, text: impl Into<String>) {
        self.indent = self.indent.saturating_sub(1);
        self.line(text);
    }

    /// Ends one region and starts the next at the same depth
    /// (`} else {`, `} do {`).
    pub(crate) fn reopen(&mut self, text: impl Into<String>) {
        self.indent = self.indent.saturating_sub(1);
        self.line(text);
        self.indent += 1;
    }

    /// The last line written, for merging adjacent barriers.
    pub(crate) fn last_line(&self) -> Option<&str> {
        self.lines.last().map(|l| l.trim())
    }

    pub(crate) fn set_indent(&mut self, indent: usize) {
        self.indent = indent;
    }

    pub(crate) fn into_lines(self) -> Vec<String> {
        self.lines
    }
}

/// A float literal MLIR parses exactly: the bit pattern in hex, for every
/// float type. f16/bf16 are written as f32 and truncated by the caller.
pub(crate) fn float_bits_literal(value: f64, ty: Ty) -> String {
    match ty {
        Ty::F64 => format!("0x{:016X}", value.to_bits()),
        _ => format!("0x{:08X}", (value as f32).to_bits()),
    }
}
