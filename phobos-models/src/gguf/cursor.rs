//! Bounds-checked little-endian reads; every failure names the field and
//! the byte offset it was read at.

use super::error::{GgufError, Result};

pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Bytes that entries still to be read after the current one need at
    /// the least (siblings of the value being read, later metadata entries,
    /// the tensor directory). Counts are checked against what is left after
    /// them, so nested arrays cannot each size an allocation by the same
    /// remaining bytes.
    reserved: u64,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            pos: 0,
            reserved: 0,
        }
    }

    /// Sets aside `bytes` for entries read after the next one; returns the
    /// previous reservation for [`Cursor::restore`].
    pub(crate) fn reserve(&mut self, bytes: u64) -> u64 {
        let saved = self.reserved;
        self.reserved = saved.saturating_add(bytes);
        saved
    }

    pub(crate) fn restore(&mut self, saved: u64) {
        self.reserved = saved;
    }

    pub(crate) fn pos(&self) -> u64 {
        self.pos as u64
    }

    pub(crate) fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    pub(crate) fn take(&mut self, len: u64, field: &str) -> Result<&'a [u8]> {
        let available = self.remaining();
        if len > available {
            return Err(GgufError::Truncated {
                field: field.to_owned(),
                offset: self.pos(),
                needed: len,
                available,
            });
        }
        // len <= remaining, which is a usize, so the cast is lossless.
        let start = self.pos;
        self.pos += len as usize;
        Ok(&self.bytes[start..self.pos])
    }

    fn array<const N: usize>(&mut self, field: &str) -> Result<[u8; N]> {
        let slice = self.take(N as u64, field)?;
        let mut out = [0u8; N];
        out.copy_from_slice(slice);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, field: &str) -> Result<u8> {
        Ok(self.array::<1>(field)?[0])
    }
    pub(crate) fn i8(&mut self, field: &str) -> Result<i8> {
        Ok(i8::from_le_bytes(self.array(field)?))
    }
    pub(crate) fn u16(&mut self, field: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }
    pub(crate) fn i16(&mut self, field: &str) -> Result<i16> {
        Ok(i16::from_le_bytes(self.array(field)?))
    }
    pub(crate) fn u32(&mut self, field: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }
    pub(crate) fn i32(&mut self, field: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array(field)?))
    }
    pub(crate) fn u64(&mut self, field: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }
    pub(crate) fn i64(&mut self, field: &str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array(field)?))
    }
    pub(crate) fn f32(&mut self, field: &str) -> Result<f32> {
        Ok(f32::from_le_bytes(self.array(field)?))
    }
    pub(crate) fn f64(&mut self, field: &str) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array(field)?))
    }

    pub(crate) fn bool(&mut self, field: &str) -> Result<bool> {
        let offset = self.pos();
        match self.u8(field)? {
            0 => Ok(false),
            1 => Ok(true),
            byte => Err(GgufError::InvalidBool {
                field: field.to_owned(),
                offset,
                byte,
            }),
        }
    }

    /// A u64 length followed by that many UTF-8 bytes.
    pub(crate) fn string(&mut self, field: &str) -> Result<String> {
        let len = self.u64(field)?;
        let offset = self.pos();
        let bytes = self.take(len, field)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(GgufError::InvalidUtf8 {
                field: field.to_owned(),
                offset,
            }),
        }
    }

    /// Rejects `count` items of at least `min_len` bytes each when they
    /// cannot fit in what is left after the reserved bytes, so no
    /// allocation is sized by a lie and the sizes of all allocations made
    /// for open (nested) containers add up to at most the file's length
    /// times the largest in-memory/on-disk size ratio.
    pub(crate) fn check_count(
        &self,
        count: u64,
        min_len: u64,
        what: &'static str,
        field: &str,
        offset: u64,
    ) -> Result<usize> {
        let available = self.remaining().saturating_sub(self.reserved);
        let fits = count
            .checked_mul(min_len)
            .is_some_and(|total| total <= available);
        if !fits {
            return Err(GgufError::CountTooLarge {
                field: field.to_owned(),
                offset,
                count,
                what,
                available,
            });
        }
        // count * min_len <= remaining, a usize, so this cannot fail.
        usize::try_from(count).map_err(|_| GgufError::CountTooLarge {
            field: field.to_owned(),
            offset,
            count,
            what,
            available,
        })
    }
}
