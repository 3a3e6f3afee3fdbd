//! What the ingest engine takes: ledgers with their transactions, as they
//! arrive from a source (synthetic, Stellar files, or the gRPC stream).
//! Nothing here is validated yet; the store's validator does that.
//!
//! A ledger's bytes and its transactions' parts are [`Bytes`]: a source
//! that walked them out of one buffer (Stellar extraction) hands over
//! slices of it, not copies, and [`crate::check_cuts`] then knows a part
//! that is the very slice of `raw` its cut names without comparing bytes.

use bytes::Bytes;

/// One transaction of an incoming ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxInput {
    /// Transaction hash; must be 32 bytes.
    pub hash: Vec<u8>,
    /// Envelope bytes.
    pub envelope: Bytes,
    /// Result bytes.
    pub result: Bytes,
    /// Meta bytes.
    pub meta: Bytes,
    /// A second hash the transaction is found by (Stellar: a fee bump's
    /// inner transaction hash); 32 bytes, distinct from every other hash.
    pub alias: Option<Vec<u8>>,
}

impl TxInput {
    /// The bytes of one part.
    pub fn part(&self, part: Part) -> &[u8] {
        match part {
            Part::Envelope => &self.envelope,
            Part::Result => &self.result,
            Part::Meta => &self.meta,
        }
    }

    /// Bytes of the three bodies.
    pub fn body_len(&self) -> usize {
        self.envelope.len() + self.result.len() + self.meta.len()
    }
}

/// One incoming ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerInput {
    /// Ledger sequence.
    pub seq: u32,
    /// Close time, unix seconds.
    pub close_time: u64,
    /// Raw ledger bytes.
    pub raw: Bytes,
    /// Transactions in apply order.
    pub txs: Vec<TxInput>,
    /// Where the transactions' parts sit in `raw`, when the source knows
    /// (Stellar extraction does; synthetic and other ledgers leave it
    /// empty). A store that keeps bodies by position stores `raw` without
    /// these ranges (a skeleton) and puts the bodies back on read, so each
    /// transaction is stored once. Validated: in bounds, non-overlapping,
    /// non-empty, and each range's bytes equal to the part it names.
    pub cuts: Vec<Cut>,
}

/// Which part of a transaction a [`Cut`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Part {
    /// [`TxInput::envelope`].
    Envelope,
    /// [`TxInput::result`].
    Result,
    /// [`TxInput::meta`].
    Meta,
}

impl Part {
    /// All parts, in code order.
    pub const ALL: [Part; 3] = [Part::Envelope, Part::Result, Part::Meta];

    /// The stored code (0, 1, 2).
    pub fn code(self) -> u32 {
        match self {
            Part::Envelope => 0,
            Part::Result => 1,
            Part::Meta => 2,
        }
    }

    /// The part of a stored code.
    pub fn from_code(code: u32) -> Option<Part> {
        Part::ALL.get(code as usize).copied()
    }

    /// The field name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Part::Envelope => "envelope",
            Part::Result => "result",
            Part::Meta => "meta",
        }
    }
}

/// One transaction part's place in a ledger's raw bytes: it starts at
/// `offset` and is as long as the part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// Byte offset in [`LedgerInput::raw`].
    pub offset: u32,
    /// Apply index of the transaction (into [`LedgerInput::txs`]).
    pub tx: u32,
    /// Which of its parts.
    pub part: Part,
}

impl LedgerInput {
    /// A ledger of `raw` bytes that carries no transactions.
    pub fn without_txs(seq: u32, close_time: u64, raw: Bytes) -> LedgerInput {
        LedgerInput {
            seq,
            close_time,
            raw,
            txs: Vec::new(),
            cuts: Vec::new(),
        }
    }

    /// The same ledger without cuts: what a source that does not know
    /// where the parts sit gives (Stellar extraction's reference path).
    pub fn without_cuts(&self) -> LedgerInput {
        LedgerInput {
            cuts: Vec::new(),
            ..self.clone()
        }
    }

    /// Raw bytes of the ledger plus its transactions.
    pub fn total_len(&self) -> usize {
        self.raw.len() + self.txs.iter().map(TxInput::body_len).sum::<usize>()
    }

    /// Bytes this ledger keeps in memory: `raw`, plus its transactions'
    /// parts when they are buffers of their own (no cuts: synthetic
    /// ledgers). With cuts the parts are the ranges of `raw` they name.
    pub fn held_len(&self) -> usize {
        if self.cuts.is_empty() {
            self.total_len()
        } else {
            self.raw.len()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledgers(sizes: &[usize]) -> Vec<LedgerInput> {
        let ledger = |(n, seq)| LedgerInput::without_txs(seq, 0, vec![0u8; n].into());
        sizes.iter().copied().zip(1u32..).map(ledger).collect()
    }

    #[test]
    fn a_ledger_holds_its_parts_apart_only_without_cuts() {
        let tx = TxInput {
            hash: vec![7; 32],
            envelope: vec![1u8; 100].into(),
            result: vec![2u8; 20].into(),
            meta: vec![3u8; 300].into(),
            alias: None,
        };
        let mut l = ledgers(&[1000]).remove(0);
        l.txs = vec![tx];
        // Synthetic: the parts are buffers of their own, and count.
        assert_eq!(l.held_len(), 1420);
        // Cut from `raw` (Stellar extraction): only `raw` is held.
        l.cuts = vec![Cut {
            offset: 0,
            tx: 0,
            part: Part::Envelope,
        }];
        assert_eq!(l.held_len(), 1000);
    }
}
