//! The cursor the generated skip functions drive: bounds-checked reads of
//! XDR primitives over a byte slice, the depth limit spent exactly as
//! `stellar-xdr`'s reader spends it, and the events of recorded types.
//!
//! Depth: every `read_xdr` of `stellar-xdr` runs inside one level of the
//! depth limit, primitives included. A skip function gets `d`, the levels
//! left when it is called; [`Cur::level`] spends one (failing at 0, as
//! `with_limited_depth` does), and a primitive read needs one more.

/// Why a walk stopped: what was wrong, where (byte offset in the input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fail {
    /// Offset of the offending value in the walked bytes.
    pub at: usize,
    /// What is wrong with it.
    pub why: Why,
}

/// What was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The bytes end inside a value.
    Truncated,
    /// Nested deeper than the depth limit.
    Depth,
    /// A union discriminant that names no arm of this union.
    Arm(&'static str),
    /// A value this enum does not declare.
    Enum(&'static str),
    /// A bool word other than 0 or 1 (the word): refused by the walker
    /// alone, see the module docs of [`crate::walk`].
    Bool(u32),
    /// An optional's flag other than 0 or 1 (the word).
    Flag(u32),
    /// A length above the type's maximum.
    TooLong,
    /// Padding bytes that are not zero.
    Padding,
    /// Bytes after the value.
    Trailing,
    /// A structure the walker does not expect (a schema change).
    Shape(&'static str),
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Truncated => write!(f, "truncated: the bytes end inside a value"),
            Why::Depth => write!(f, "nested deeper than the decode depth limit"),
            Why::Arm(t) => write!(f, "an unknown union arm of {t}"),
            Why::Enum(t) => write!(f, "a value {t} does not declare"),
            Why::Bool(v) => write!(
                f,
                "a bool of {v} ({v:#x}): XDR bools are 0 or 1, so the ledger is not canonical XDR \
                 (stellar-core never writes it; the store keeps ledgers as canonical bytes and \
                 refuses it)"
            ),
            Why::Flag(v) => write!(f, "an optional's flag of {v} ({v:#x}), not 0 or 1"),
            Why::TooLong => write!(f, "a length above the type's maximum"),
            Why::Padding => write!(f, "non-zero padding"),
            Why::Trailing => write!(f, "trailing bytes after the value"),
            Why::Shape(s) => write!(f, "unexpected structure: {s}"),
        }
    }
}

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at byte {}: {}", self.at, self.why)
    }
}

/// The skip functions' result.
pub type Res = Result<(), Fail>;

/// The recorded types (see `tests/walk_schema.rs`, `RECORDED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A `LedgerCloseMeta` (the walked ledger, or one of a batch).
    LedgerCloseMeta,
    /// A `TransactionEnvelope` (tx set).
    TransactionEnvelope,
    /// A `TransactionV0` (inside a V0 envelope).
    TransactionV0,
    /// A `Transaction` (a V1 envelope's, or a fee bump's inner one).
    Transaction,
    /// A `FeeBumpTransaction`.
    FeeBumpTransaction,
    /// A `TransactionResultPair` (tx processing).
    TransactionResultPair,
    /// A `TransactionMeta` (tx processing).
    TransactionMeta,
    /// The `LedgerHeader`.
    LedgerHeader,
}

/// A recorded value: its kind and its marks in [`Cur::marks`]: its start
/// and its end, and for a `LedgerHeader` the start of each field between
/// them (see `FIELD_MARKS` in `tests/walk_schema.rs`).
#[derive(Debug, Clone, Copy)]
pub struct Event {
    /// What it is.
    pub kind: Kind,
    /// Index of its first mark.
    pub first: usize,
    /// Number of marks.
    pub count: usize,
}

/// A cursor over untrusted XDR.
#[derive(Debug)]
pub struct Cur<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Recorded values, in the order they end (post-order).
    pub events: Vec<Event>,
    /// Their marks (offsets into `buf`).
    pub marks: Vec<usize>,
}

impl<'a> Cur<'a> {
    /// A cursor at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            events: Vec::new(),
            marks: Vec::new(),
        }
    }

    /// The bytes.
    pub fn buf(&self) -> &'a [u8] {
        self.buf
    }

    /// The offset of the next byte.
    #[inline(always)]
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// A failure at `at`.
    #[cold]
    pub fn fail(&self, at: usize, why: Why) -> Fail {
        Fail { at, why }
    }

    /// Spends one level of depth.
    #[inline(always)]
    pub fn level(&self, d: u32) -> Result<u32, Fail> {
        match d.checked_sub(1) {
            Some(d) => Ok(d),
            None => Err(self.fail(self.pos, Why::Depth)),
        }
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<&'a [u8], Fail> {
        match self.buf.get(self.pos..).and_then(|rest| rest.get(..n)) {
            Some(b) => {
                self.pos += n;
                Ok(b)
            }
            None => Err(self.fail(self.pos, Why::Truncated)),
        }
    }

    /// A 4-byte word (u32 / i32), at depth `d`.
    #[inline(always)]
    pub fn word(&mut self, d: u32) -> Result<u32, Fail> {
        self.level(d)?;
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A signed 4-byte word (a discriminant or an enum value).
    #[inline(always)]
    pub fn int(&mut self, d: u32) -> Result<i32, Fail> {
        self.word(d).map(|w| w as i32)
    }

    /// An 8-byte word (u64 / i64).
    #[inline(always)]
    pub fn dword(&mut self, d: u32) -> Res {
        self.level(d)?;
        self.take(8).map(drop)
    }

    /// A bool: stricter than `stellar-xdr` 30, which reads any word and
    /// takes all but 1 as false; the walker takes only 0 and 1, as XDR
    /// (RFC 4506 §4.4) and stellar-core do, so that the bytes it keeps are
    /// always the canonical encoding.
    #[inline(always)]
    pub fn boolean(&mut self, d: u32) -> Res {
        let d = self.level(d)?;
        let at = self.pos;
        match self.word(d)? {
            0 | 1 => Ok(()),
            v => Err(self.fail(at, Why::Bool(v))),
        }
    }

    #[inline(always)]
    fn padding(&mut self, n: usize) -> Res {
        let pad = (4 - n % 4) % 4;
        let at = self.pos;
        let p = self.take(pad)?;
        if p.iter().any(|&b| b != 0) {
            return Err(self.fail(at, Why::Padding));
        }
        Ok(())
    }

    /// Fixed-length opaque (`[u8; n]`), with its padding.
    #[inline(always)]
    pub fn fixed(&mut self, d: u32, n: usize) -> Res {
        self.level(d)?;
        self.take(n)?;
        self.padding(n)
    }

    /// Variable-length opaque or string of at most `max` bytes.
    #[inline(always)]
    pub fn opaque(&mut self, d: u32, max: u32) -> Res {
        let d = self.level(d)?;
        let at = self.pos;
        let len = self.word(d)?;
        if len > max {
            return Err(self.fail(at, Why::TooLong));
        }
        let len = len as usize;
        self.take(len)?;
        self.padding(len)
    }

    /// An optional value.
    #[inline(always)]
    pub fn optional(&mut self, d: u32, f: impl FnOnce(&mut Self, u32) -> Res) -> Res {
        let d = self.level(d)?;
        let at = self.pos;
        match self.word(d)? {
            0 => Ok(()),
            1 => f(self, d),
            v => Err(self.fail(at, Why::Flag(v))),
        }
    }

    /// A variable-length array of at most `max` elements. Nothing is
    /// allocated from the length: each element is at least 4 bytes, so a
    /// length past the input fails at its end.
    #[inline(always)]
    pub fn array(&mut self, d: u32, max: u32, mut f: impl FnMut(&mut Self, u32) -> Res) -> Res {
        let d = self.level(d)?;
        let at = self.pos;
        let len = self.word(d)?;
        if len > max {
            return Err(self.fail(at, Why::TooLong));
        }
        for _ in 0..len {
            f(self, d)?;
        }
        Ok(())
    }

    /// A fixed-length array of `n` elements.
    #[inline(always)]
    pub fn fixed_array(
        &mut self,
        d: u32,
        n: usize,
        mut f: impl FnMut(&mut Self, u32) -> Res,
    ) -> Res {
        let d = self.level(d)?;
        for _ in 0..n {
            f(self, d)?;
        }
        Ok(())
    }

    /// Records a value of a recorded type.
    #[inline(always)]
    pub fn record(&mut self, kind: Kind, marks: &[usize]) {
        self.events.push(Event {
            kind,
            first: self.marks.len(),
            count: marks.len(),
        });
        self.marks.extend_from_slice(marks);
    }

    /// The marks of `e`.
    pub fn marks_of(&self, e: &Event) -> &[usize] {
        self.marks.get(e.first..e.first + e.count).unwrap_or(&[])
    }
}
