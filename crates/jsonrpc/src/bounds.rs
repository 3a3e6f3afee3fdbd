//! The range the store holds, with close times, as every response
//! reports it (`latestLedger`, `oldestLedger` and their close times).
//!
//! A close time needs the ledger record (a zstd frame of ~1.4 MB raw, or
//! in a format-3 dir the block of raw records that holds it),
//! so the two ends are cached by seq: the oldest rarely changes, the
//! latest once per ledger, and a lookup must not decompress two ledgers.
//! The oldest end needs only its close time ([`Reader::close_time`]): a
//! writer that evicted its oldest ledger answers it from local state, so
//! every response does not depend on its published store.

use std::sync::Mutex;

use ledgerstore_store::Reader;

use crate::error::{RpcError, RpcResult};

/// One end of the range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct End {
    pub seq: u32,
    /// Unix seconds.
    pub close_time: u64,
}

/// The newest ledger, with its header's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Latest {
    pub seq: u32,
    /// Unix seconds.
    pub close_time: u64,
    /// The header's `ledgerVersion`.
    pub protocol_version: u32,
}

/// The range held now.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Range {
    pub oldest: End,
    pub latest: Latest,
}

impl Range {
    /// Ledgers held (`ledgerRetentionWindow`).
    pub(crate) fn len(&self) -> u32 {
        self.latest.seq - self.oldest.seq + 1
    }
}

/// Cache of the two ends.
#[derive(Debug, Default)]
pub(crate) struct Bounds {
    oldest: Mutex<Option<End>>,
    latest: Mutex<Option<Latest>>,
}

impl Bounds {
    /// The range of `store` as of its durable mark. An empty store is an
    /// error: stellar-rpc answers nothing before its first ledger either.
    pub(crate) fn get(&self, store: &dyn Reader) -> RpcResult<Range> {
        // The last first: a mark that has a last ledger has a first one.
        let last = store.last_ledger();
        let (Some(first), Some(last)) = (store.first_ledger(), last) else {
            return Err(RpcError::Unavailable(
                "the store holds no ledgers yet: ingest some first".into(),
            ));
        };
        Ok(Range {
            oldest: cached(&self.oldest, first, |e| e.seq, || oldest(store, first))?,
            latest: cached(&self.latest, last, |e| e.seq, || latest(store, last))?,
        })
    }
}

/// The value in `slot` if it is ledger `seq`'s, else `read`'s (kept).
fn cached<T: Copy>(
    slot: &Mutex<Option<T>>,
    seq: u32,
    seq_of: impl Fn(&T) -> u32,
    read: impl FnOnce() -> RpcResult<T>,
) -> RpcResult<T> {
    if let Ok(g) = slot.lock()
        && let Some(e) = *g
        && seq_of(&e) == seq
    {
        return Ok(e);
    }
    let e = read()?;
    if let Ok(mut g) = slot.lock() {
        *g = Some(e);
    }
    Ok(e)
}

fn missing(seq: u32) -> RpcError {
    RpcError::Internal(format!("ledger {seq} is inside the mark but not stored"))
}

fn oldest(store: &dyn Reader, seq: u32) -> RpcResult<End> {
    let close_time = store.close_time(seq)?.ok_or_else(|| missing(seq))?;
    Ok(End { seq, close_time })
}

fn latest(store: &dyn Reader, seq: u32) -> RpcResult<Latest> {
    // The record alone: the header lies before every transaction part.
    let rec = store.ledger_head(seq)?.ok_or_else(|| missing(seq))?;
    let header = crate::xdr::header_of(seq, &rec.head)?.entry.header;
    Ok(Latest {
        seq,
        close_time: rec.close_time,
        protocol_version: header.ledger_version,
    })
}
