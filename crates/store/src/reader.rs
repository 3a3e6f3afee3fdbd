//! [`Reader`]: what the query APIs (gRPC Query, Stellar RPC) read. A local
//! [`Ledgerstore`] is one; a read replica of the ranges a writer published
//! to object storage (`ledgerstore-cold`) is another. Both answer with the
//! store's own types and errors, so the mapping to status codes stays in
//! one place per API.

use ledgerstore_db_api::{Alias, LedgerContent, LedgerRecord, StoredLedger, TxHash, TxRecord};
use serde::Serialize;

use crate::error::StoreResult;
use crate::{BatchReport, Ledgerstore, StoreStats};

/// Read access to committed history. Nothing above the reader's mark (a
/// store's durable mark, a replica's published mark) is ever returned.
pub trait Reader: Send + Sync + 'static {
    /// A transaction by hash (or by a fee bump's inner hash).
    fn get_tx(&self, hash: &TxHash) -> StoreResult<Option<TxRecord>>;
    /// The ledger that holds a transaction.
    fn get_tx_ledger(&self, hash: &TxHash) -> StoreResult<Option<u32>>;
    /// Many transactions; answers in the order of `hashes`.
    fn batch_get_txs(&self, hashes: &[TxHash]) -> StoreResult<Vec<Option<TxRecord>>>;
    /// [`Reader::batch_get_txs`] for a request that is answered (as
    /// timed out) at `deadline`: a reader whose reads wait on the network
    /// stops reading once it passes, and fails; others ignore it.
    fn batch_get_txs_until(
        &self,
        hashes: &[TxHash],
        deadline: std::time::Instant,
    ) -> StoreResult<Vec<Option<TxRecord>>> {
        let _ = deadline;
        self.batch_get_txs(hashes)
    }
    /// A ledger by seq.
    fn get_ledger(&self, seq: u32) -> StoreResult<Option<LedgerRecord>>;
    /// The close time (unix seconds) of ledger `seq`, as every Stellar RPC
    /// response reports it for the oldest ledger. A writer whose oldest
    /// ledger was evicted answers from its eviction record, so the answer
    /// does not wait on (or fail with) the published store.
    fn close_time(&self, seq: u32) -> StoreResult<Option<u64>> {
        Ok(self.get_ledger(seq)?.map(|l| l.close_time))
    }
    /// Up to `max` ledgers of `from..=end` that exist, ascending.
    fn ledger_chunk(&self, from: u32, end: u32, max: usize) -> StoreResult<Vec<LedgerRecord>>;
    /// Ledger `seq` without its transactions put back ([`LedgerHead`]):
    /// for callers that need only its hashes, close time or header. A
    /// store that keeps skeletons answers from the record alone, so such
    /// a caller never reassembles (or fails on a damaged body of) a ledger
    /// it does not return.
    fn ledger_head(&self, seq: u32) -> StoreResult<Option<LedgerHead>> {
        Ok(self.get_ledger(seq)?.map(LedgerHead::from))
    }
    /// [`Self::ledger_chunk`] as [`LedgerHead`]s.
    fn ledger_head_chunk(&self, from: u32, end: u32, max: usize) -> StoreResult<Vec<LedgerHead>> {
        Ok(self
            .ledger_chunk(from, end, max)?
            .into_iter()
            .map(LedgerHead::from)
            .collect())
    }
    /// The oldest ledger held.
    fn first_ledger(&self) -> Option<u32>;
    /// The newest ledger held (the mark).
    fn last_ledger(&self) -> Option<u32>;
    /// The mark, for "not found" messages: what a client that missed
    /// should know (a replica names its published mark and the writer).
    fn mark_text(&self) -> String;
    /// True when a point read may wait on the network: it must never run
    /// inline on an async worker.
    fn reads_may_block(&self) -> bool {
        false
    }
    /// Figures for GetStatus.
    fn status(&self) -> StoreResult<ReaderStatus>;
}

/// A ledger as its record holds it, without its transactions put back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerHead {
    /// Ledger sequence.
    pub seq: u32,
    /// Close time, unix seconds.
    pub close_time: u64,
    /// Hashes of its transactions, in apply order.
    pub tx_hashes: Vec<TxHash>,
    /// Second hashes of some of them (a fee bump's inner hash), in
    /// ascending index.
    pub aliases: Vec<Alias<TxHash>>,
    /// The ledger's leading bytes: at least everything before its first
    /// transaction part (a Stellar ledger's header), and the whole ledger
    /// when the record holds it whole.
    pub head: Vec<u8>,
}

impl From<LedgerRecord> for LedgerHead {
    fn from(l: LedgerRecord) -> Self {
        Self {
            seq: l.seq,
            close_time: l.close_time,
            tx_hashes: l.tx_hashes,
            aliases: l.aliases,
            head: l.raw,
        }
    }
}

impl From<StoredLedger> for LedgerHead {
    fn from(l: StoredLedger) -> Self {
        let head = match l.content {
            LedgerContent::Whole(raw) => raw,
            LedgerContent::Split(mut s) => {
                let first = s.cuts.first().map_or(s.bytes.len(), |c| c.at as usize);
                s.bytes.truncate(first);
                s.bytes
            }
        };
        Self {
            seq: l.seq,
            close_time: l.close_time,
            tx_hashes: l.tx_hashes,
            aliases: l.aliases,
            head,
        }
    }
}

/// What [`Reader::status`] reports.
#[derive(Debug, Clone)]
pub enum ReaderStatus {
    /// A local store.
    Store(Box<StoreStats>, Option<BatchReport>),
    /// A read replica.
    Replica(ReplicaStatus),
}

/// A read replica's figures (GetStatus, `/metrics`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplicaStatus {
    /// The manifest version it serves (0: none published yet).
    pub manifest_version: u64,
    /// Seconds since that manifest was written.
    pub manifest_age_s: f64,
    /// The first and last published ledgers.
    pub first_ledger: Option<u32>,
    /// The published mark.
    pub published_mark: Option<u32>,
    /// Transactions in the published ranges.
    pub txs: u64,
    /// Published ranges (packs) and segments.
    pub packs: u64,
    /// Segments listed by the manifest.
    pub segments: u64,
    /// Bytes in the disk cache now, and its bound.
    pub cache_bytes: u64,
    /// The cache's bound (`replica.cache_mb`).
    pub cache_limit_bytes: u64,
    /// Cache hits and misses (each miss is one GET).
    pub cache_hits: u64,
    /// Cache misses.
    pub cache_misses: u64,
    /// Entries evicted to stay under the bound.
    pub cache_evictions: u64,
    /// Object reads (GETs and ranged GETs) and their bytes.
    pub object_gets: u64,
    /// Bytes those reads fetched.
    pub object_get_bytes: u64,
    /// Lookups answered (transactions, ledgers).
    pub lookups: u64,
    /// Memory the pack dictionaries held take (version 4): what zstd
    /// counts for each, and ~150 bytes of bookkeeping.
    pub pack_dict_bytes: u64,
    /// Their bound (`replica.dict_memory_mb`).
    pub pack_dict_limit_bytes: u64,
    /// Pack dictionaries opened (read, decoded and checked) since start:
    /// about once a pack while memory holds them all (reads that miss the
    /// same one at once may each open it), about once a lookup when it
    /// holds too few for the packs looked up.
    pub pack_dict_opens: u64,
    /// Why the latest poll of the manifest failed, if it did, in words a
    /// client may see: never the store's location or endpoint (the
    /// server's log has the cause).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follow_error: Option<String>,
}

impl Reader for Ledgerstore {
    fn get_tx(&self, hash: &TxHash) -> StoreResult<Option<TxRecord>> {
        Ledgerstore::get_tx(self, hash)
    }

    fn get_tx_ledger(&self, hash: &TxHash) -> StoreResult<Option<u32>> {
        Ledgerstore::get_tx_ledger(self, hash)
    }

    fn batch_get_txs(&self, hashes: &[TxHash]) -> StoreResult<Vec<Option<TxRecord>>> {
        Ledgerstore::batch_get_txs(self, hashes)
    }

    fn get_ledger(&self, seq: u32) -> StoreResult<Option<LedgerRecord>> {
        Ledgerstore::get_ledger(self, seq)
    }

    fn ledger_chunk(&self, from: u32, end: u32, max: usize) -> StoreResult<Vec<LedgerRecord>> {
        self.ledgers(from, end, max).take(max).collect()
    }

    fn ledger_head(&self, seq: u32) -> StoreResult<Option<LedgerHead>> {
        Ledgerstore::ledger_head(self, seq)
    }

    fn ledger_head_chunk(&self, from: u32, end: u32, max: usize) -> StoreResult<Vec<LedgerHead>> {
        self.ledger_heads(from, end, max)
    }

    fn close_time(&self, seq: u32) -> StoreResult<Option<u64>> {
        Ok(Ledgerstore::ledger_head(self, seq)?.map(|h| h.close_time))
    }

    fn first_ledger(&self) -> Option<u32> {
        Ledgerstore::first_ledger(self)
    }

    fn last_ledger(&self) -> Option<u32> {
        Ledgerstore::last_ledger(self)
    }

    fn mark_text(&self) -> String {
        self.last_ledger().map_or("the store is empty".into(), |l| {
            format!("durable mark: ledger {l}")
        })
    }

    fn status(&self) -> StoreResult<ReaderStatus> {
        Ok(ReaderStatus::Store(
            Box::new(self.stats()?),
            self.last_report(),
        ))
    }
}

/// Ledgers `start..=end` of any reader, `chunk` at a time, ascending.
pub fn ledger_iter(
    reader: &dyn Reader,
    start: u32,
    end: u32,
    chunk: usize,
) -> impl Iterator<Item = StoreResult<LedgerRecord>> + '_ {
    chunked(
        start,
        end,
        chunk,
        |l: &LedgerRecord| l.seq,
        move |f, e, n| reader.ledger_chunk(f, e, n),
    )
}

/// [`ledger_iter`] as [`LedgerHead`]s.
pub fn ledger_head_iter(
    reader: &dyn Reader,
    start: u32,
    end: u32,
    chunk: usize,
) -> impl Iterator<Item = StoreResult<LedgerHead>> + '_ {
    chunked(
        start,
        end,
        chunk,
        |l: &LedgerHead| l.seq,
        move |f, e, n| reader.ledger_head_chunk(f, e, n),
    )
}

fn chunked<'a, T: 'a>(
    start: u32,
    end: u32,
    chunk: usize,
    seq_of: impl Fn(&T) -> u32 + 'a,
    fetch: impl Fn(u32, u32, usize) -> StoreResult<Vec<T>> + 'a,
) -> impl Iterator<Item = StoreResult<T>> + 'a {
    let chunk = chunk.max(1);
    let mut next = (start <= end).then_some(start);
    let mut buf = std::collections::VecDeque::new();
    std::iter::from_fn(move || {
        if buf.is_empty() {
            let from = next?;
            match fetch(from, end, chunk) {
                Ok(got) => {
                    next = match got.last().map(&seq_of) {
                        Some(seq) if got.len() == chunk && seq < end => Some(seq + 1),
                        _ => None,
                    };
                    buf.extend(got);
                }
                Err(e) => {
                    next = None;
                    return Some(Err(e));
                }
            }
        }
        buf.pop_front().map(Ok)
    })
}
