//! Extraction without a full decode: a schema-driven XDR walker.
//!
//! [`walk`] reads a raw `LedgerCloseMeta` once, front to back, and builds
//! no decoded value. It returns the byte ranges ([`Span`]s) the store
//! needs: the header's ledger seq and close time, every envelope of the tx
//! set in set order (V0 `TransactionSet`; V1/V2 `GeneralizedTransactionSet`
//! phases: V0 components, V1 parallel stages → clusters), and every
//! `TransactionResultMeta(V1)` of `txProcessing` in apply order with its
//! `TransactionResultPair` and `TransactionMeta`. Transaction hashes come
//! from those slices ([`tx_hash`], [`inner_hash`]): SHA-256 of the network
//! id, the envelope type and the transaction's bytes as they sit in the
//! ledger; nothing is re-encoded.
//!
//! # How the skipper is derived
//!
//! `skip.rs` holds one skip function per XDR type reachable from
//! `LedgerCloseMeta` and `LedgerCloseMetaBatch`, generated from the schema
//! `stellar-xdr` ships (`xdr-definitions-json/xdr.json`) by
//! `tests/walk_schema.rs`, which regenerates it on every test run and fails
//! if the checked-in file differs. A handful of types are *recorded*
//! ([`cursor::Kind`]): their skip function also notes where they start and
//! end (for the header, where each field starts), and the walker assembles
//! the ledger's slices from those events. [`walk`] and [`walk_batch`] run
//! the generated function of their root; a batch's events are split by
//! ledger at each recorded `LedgerCloseMeta`. The generator also fails if
//! any path from `LedgerCloseMeta` to a recorded type changes, if a
//! reachable field is boxed that it does not know of, or if
//! `LedgerCloseMetaBatch` changes.
//!
//! # The invariant
//!
//! The walker accepts exactly the `LedgerCloseMeta`s that
//! `LedgerCloseMeta::from_xdr(bytes, limits(bytes.len()))` accepts **and**
//! that are canonical (re-encode to the same bytes), and on those its
//! slices are exactly the bytes the full decode re-encodes. It follows
//! `stellar-xdr`'s reader rule by rule: 4-byte alignment with zero padding,
//! optionals' flags 0 or 1, union discriminants that name an arm, enum
//! values the enum declares, lengths within the declared maximum and the
//! remaining bytes (nothing is allocated from a length), no trailing bytes,
//! and the depth limit ([`MAX_XDR_DEPTH`](MAX_XDR_DEPTH))
//! spent level for level where `read_xdr` spends it.
//!
//! # The one deliberate difference: bools
//!
//! `stellar-xdr` 30 reads a bool from any word (all but 1 are false, so
//! the value does not re-encode to its bytes). The walker accepts only 0
//! and 1, as XDR (RFC 4506 §4.4) and stellar-core do: the store keeps
//! slices of the input as they are, so they must be the canonical
//! encoding, and stellar-core never writes another word. Such a ledger is
//! refused with [`Why::Bool`](cursor::Why::Bool), whose message names the byte, the value,
//! and that XDR bools are 0 or 1 so the ledger is not canonical XDR. Tests
//! and the `xdr` fuzz target accept this refusal only where it applies
//! ([`check_refusal`](crate::extract::check_refusal)): at the first word
//! the reference re-encodes differently, with the re-encoded ledger then
//! walking to the reference's ledger. The tests (`tests/walk.rs`,
//! `tests/walk_review.rs`) and the fuzz target check the invariant on
//! every corpus and on mutated input.

pub mod cursor;
mod hash;
pub(crate) mod parts;
#[rustfmt::skip]
mod skip;

use cursor::{Cur, Event, Fail, Kind, Why};
pub use hash::{inner_hash, tx_hash};

/// Deepest XDR nesting accepted (as soroban-env's default read limit).
pub const MAX_XDR_DEPTH: u32 = 500;

/// A byte range of the walked input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// Its first byte.
    pub offset: usize,
    /// Its length.
    pub len: usize,
}

impl Span {
    fn between(start: usize, end: usize) -> Self {
        Self {
            offset: start,
            len: end.saturating_sub(start),
        }
    }

    /// The range, to index the walked bytes with.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.offset..self.offset + self.len
    }

    /// The bytes of `raw` (the input the span was found in) it covers;
    /// empty if `raw` is not that input and too short.
    pub fn of<'a>(&self, raw: &'a [u8]) -> &'a [u8] {
        raw.get(self.range()).unwrap_or(&[])
    }

    /// [`Self::of`] as a slice of the shared buffer `raw`: the same bytes,
    /// not copied (empty where [`Self::of`] is).
    pub fn slice_of(&self, raw: &bytes::Bytes) -> bytes::Bytes {
        match self.offset.checked_add(self.len) {
            Some(end) if end <= raw.len() => raw.slice(self.offset..end),
            _ => bytes::Bytes::new(),
        }
    }

    fn shift(self, by: usize) -> Self {
        Self {
            offset: self.offset - by,
            len: self.len,
        }
    }
}

/// The kind of a transaction envelope (its `EnvelopeType` tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvelopeKind {
    /// `ENVELOPE_TYPE_TX_V0` (0): a `TransactionV0Envelope`.
    TxV0,
    /// `ENVELOPE_TYPE_TX` (2): a `TransactionV1Envelope`.
    Tx,
    /// `ENVELOPE_TYPE_TX_FEE_BUMP` (5): a `FeeBumpTransactionEnvelope`.
    TxFeeBump,
}

/// One envelope of the tx set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeSlices {
    /// The whole `TransactionEnvelope` (tag included).
    pub envelope: Span,
    /// Its kind.
    pub kind: EnvelopeKind,
    /// What its hash covers: the `TransactionV0`, `Transaction` or
    /// `FeeBumpTransaction`.
    pub tx: Span,
    /// A fee bump's inner `Transaction`.
    pub inner_tx: Option<Span>,
}

/// One entry of `txProcessing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppliedSlices {
    /// The `TransactionResultPair` (`result`): the tx hash, then the result.
    pub result: Span,
    /// The `TransactionMeta` (`txApplyProcessing`).
    pub meta: Span,
}

impl AppliedSlices {
    /// The `transactionHash` of the result pair (its first 32 bytes).
    pub fn hash(&self, raw: &[u8]) -> [u8; 32] {
        let mut h = [0u8; 32];
        if let Some(b) = raw.get(self.result.offset..self.result.offset + 32) {
            h.copy_from_slice(b);
        }
        h
    }
}

/// Where everything the store keeps of a ledger sits in its raw
/// `LedgerCloseMeta`. Spans are offsets into those bytes (for a ledger of
/// a batch, into the ledger's own bytes, see [`walk_batch`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LedgerSlices {
    /// The `LedgerCloseMeta` arm: 0, 1 or 2.
    pub version: u32,
    /// The header's `ledgerSeq`.
    pub seq: u32,
    /// The header's `scpValue.closeTime`.
    pub close_time: u64,
    /// The 4 bytes of `ledgerSeq`.
    pub seq_at: Span,
    /// The 8 bytes of `closeTime`.
    pub close_time_at: Span,
    /// The tx set's envelopes, in set order.
    pub envelopes: Vec<EnvelopeSlices>,
    /// `txProcessing`, in apply order.
    pub applied: Vec<AppliedSlices>,
}

/// Why bytes were refused: what, and at which byte of the walked input.
pub type WalkError = Fail;

/// Walks one `LedgerCloseMeta` (all of `raw`, nothing after it), at the
/// decoder's depth limit.
pub fn walk(raw: &[u8]) -> Result<LedgerSlices, WalkError> {
    walk_limited(raw, MAX_XDR_DEPTH)
}

/// [`walk`] with `depth` levels (as `Limits::depth`); tests hold its
/// depth accounting to the decoder's at every depth.
pub fn walk_limited(raw: &[u8], depth: u32) -> Result<LedgerSlices, WalkError> {
    let mut c = Cur::new(raw);
    skip::s_ledger_close_meta(&mut c, depth)?;
    end(&c)?;
    let mut all = ledgers(&c)?;
    match (all.pop(), all.is_empty()) {
        (Some((_, slices)), true) => Ok(slices),
        _ => Err(c.fail(0, Why::Shape("one LedgerCloseMeta"))),
    }
}

/// A walked `LedgerCloseMetaBatch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSlices {
    /// `startSequence`.
    pub start: u32,
    /// `endSequence`.
    pub end: u32,
    /// Each ledger's bytes in the batch, and its slices (relative to them).
    pub ledgers: Vec<(Span, LedgerSlices)>,
}

/// Walks a `LedgerCloseMetaBatch` (all of `plain`) with the generated
/// skipper, like a lone ledger; `tests/walk_schema.rs` checks that the
/// batch is `{uint32 startSequence; uint32 endSequence; LedgerCloseMeta
/// ledgerCloseMetas<>;}`, whose first two words are read here.
pub fn walk_batch(plain: &[u8]) -> Result<BatchSlices, WalkError> {
    let mut c = Cur::new(plain);
    skip::s_ledger_close_meta_batch(&mut c, MAX_XDR_DEPTH)?;
    end(&c)?;
    let word = |at: usize| -> u32 {
        plain
            .get(at..at + 4)
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    Ok(BatchSlices {
        start: word(0),
        end: word(4),
        ledgers: ledgers(&c)?,
    })
}

fn end(c: &Cur<'_>) -> Result<(), Fail> {
    if c.pos() != c.buf().len() {
        return Err(c.fail(c.pos(), Why::Trailing));
    }
    Ok(())
}

/// The walked `LedgerCloseMeta`s: the cursor's events split at each
/// `LedgerCloseMeta` (post-order: a ledger's events come before its own),
/// each ledger's span and its slices, relative to where it starts.
fn ledgers(c: &Cur<'_>) -> Result<Vec<(Span, LedgerSlices)>, Fail> {
    let mut out = Vec::new();
    let mut first = 0;
    for (i, e) in c.events.iter().enumerate() {
        if e.kind == Kind::LedgerCloseMeta {
            let m = c.marks_of(e);
            let whole = Span::between(m[0], m[m.len() - 1]);
            out.push((whole, ledger(c, &c.events[first..i], whole.offset)?));
            first = i + 1;
        }
    }
    if first != c.events.len() {
        return Err(c.fail(0, Why::Shape("events outside a LedgerCloseMeta")));
    }
    Ok(out)
}

/// Assembles one ledger's slices from its events (`base`: where the
/// ledger starts; spans are relative to it).
fn ledger(c: &Cur<'_>, events: &[Event], base: usize) -> Result<LedgerSlices, Fail> {
    let buf = c.buf();
    let word = |at: usize| -> u32 {
        buf.get(at..at + 4)
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut out = LedgerSlices {
        version: word(base),
        ..LedgerSlices::default()
    };
    let mut pending: Vec<Event> = Vec::with_capacity(2);
    let mut results = Vec::new();
    let mut metas = Vec::new();
    let mut headers = 0;
    for e in events {
        let m = c.marks_of(e);
        let whole = Span::between(m[0], m[m.len() - 1]).shift(base);
        match e.kind {
            Kind::TransactionV0 | Kind::Transaction | Kind::FeeBumpTransaction => {
                pending.push(*e);
            }
            Kind::TransactionEnvelope => {
                let span = |e: &Event| {
                    let m = c.marks_of(e);
                    Span::between(m[0], m[m.len() - 1]).shift(base)
                };
                let kinds: Vec<Kind> = pending.iter().map(|e| e.kind).collect();
                let env = match (word(m[0]), kinds.as_slice()) {
                    (0, [Kind::TransactionV0]) => EnvelopeSlices {
                        envelope: whole,
                        kind: EnvelopeKind::TxV0,
                        tx: span(&pending[0]),
                        inner_tx: None,
                    },
                    (2, [Kind::Transaction]) => EnvelopeSlices {
                        envelope: whole,
                        kind: EnvelopeKind::Tx,
                        tx: span(&pending[0]),
                        inner_tx: None,
                    },
                    (5, [Kind::Transaction, Kind::FeeBumpTransaction]) => EnvelopeSlices {
                        envelope: whole,
                        kind: EnvelopeKind::TxFeeBump,
                        tx: span(&pending[1]),
                        inner_tx: Some(span(&pending[0])),
                    },
                    _ => {
                        return Err(c.fail(m[0], Why::Shape("an envelope's transactions")));
                    }
                };
                pending.clear();
                out.envelopes.push(env);
            }
            Kind::LedgerCloseMeta => {
                return Err(c.fail(m[0], Why::Shape("a LedgerCloseMeta inside a ledger")));
            }
            Kind::TransactionResultPair => results.push(whole),
            Kind::TransactionMeta => metas.push(whole),
            Kind::LedgerHeader => {
                headers += 1;
                // Marks: the start of each of the 15 fields, then the end.
                // scpValue (field 2) starts with txSetHash (32 bytes), then
                // closeTime; ledgerSeq is field 5.
                if m.len() != 16 {
                    return Err(c.fail(m[0], Why::Shape("the LedgerHeader's fields")));
                }
                let (seq_at, ct_at) = (m[5], m[2] + 32);
                out.seq = word(seq_at);
                out.close_time = (u64::from(word(ct_at)) << 32) | u64::from(word(ct_at + 4));
                out.seq_at = Span {
                    offset: seq_at,
                    len: 4,
                }
                .shift(base);
                out.close_time_at = Span {
                    offset: ct_at,
                    len: 8,
                }
                .shift(base);
            }
        }
    }
    if headers != 1 || !pending.is_empty() || results.len() != metas.len() {
        return Err(c.fail(base, Why::Shape("the LedgerCloseMeta's recorded values")));
    }
    out.applied = results
        .into_iter()
        .zip(metas)
        .map(|(result, meta)| AppliedSlices { result, meta })
        .collect();
    Ok(out)
}
