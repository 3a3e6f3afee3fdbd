//! Stellar views of stored records: what stellar-rpc's methods return,
//! cut from the exact XDR the store holds.
//!
//! A stored transaction keeps its `TransactionEnvelope`, its
//! `TransactionResultPair` and its `TransactionMeta`; a stored ledger keeps
//! the whole `LedgerCloseMeta`. Everything here is derived from those bytes:
//! nothing is re-encoded where a slice of the stored bytes is the answer,
//! so the XDR a client receives is byte-identical to what stellar-core
//! wrote.

use std::io::Cursor;

use ledgerstore_db_api::{LedgerRecord, TxRecord};
use stellar_xdr::{
    ContractEvent, DiagnosticEvent, LedgerCloseMetaExt, LedgerHeaderHistoryEntry, Limited, Limits,
    ReadXdr, TransactionEnvelope, TransactionEvent, TransactionMeta, TransactionResult,
    TransactionResultResult, WriteXdr,
};

use crate::error::{RpcError, RpcResult};

/// Deepest XDR nesting decoded (as the ingest path).
pub(crate) const MAX_DEPTH: u32 = 500;

fn limits(len: usize) -> Limits {
    Limits {
        depth: MAX_DEPTH,
        len,
    }
}

/// Decodes the whole of `bytes` as `T`, naming `what` on failure.
pub(crate) fn decode<T: ReadXdr>(bytes: &[u8], what: &str) -> RpcResult<T> {
    T::from_xdr(bytes, limits(bytes.len())).map_err(|e| {
        RpcError::NotStellar(format!(
            "the stored {what} is not Stellar XDR ({e}); this data dir holds ledgers that \
             were not ingested from Stellar LedgerCloseMeta (synthetic data?)"
        ))
    })
}

/// Encodes a decoded value again (canonical XDR: the same bytes).
pub(crate) fn encode<T: WriteXdr>(v: &T, what: &str) -> RpcResult<Vec<u8>> {
    v.to_xdr(Limits::none())
        .map_err(|e| RpcError::Internal(format!("encoding {what}: {e}")))
}

/// A ledger's header, with where its bytes lie in the stored meta.
#[derive(Debug)]
pub(crate) struct Header {
    pub entry: LedgerHeaderHistoryEntry,
    /// The `LedgerHeaderHistoryEntry`'s bytes in the stored
    /// `LedgerCloseMeta`.
    pub span: std::ops::Range<usize>,
}

/// The `LedgerHeaderHistoryEntry` at the start of a stored
/// `LedgerCloseMeta`, read without decoding the rest (a ledger's meta is
/// ~1.4 MB; its header a few hundred bytes).
pub(crate) fn ledger_header(rec: &LedgerRecord) -> RpcResult<Header> {
    header_of(rec.seq, &rec.raw)
}

/// [`ledger_header`] from ledger `seq`'s leading bytes (a
/// [`ledgerstore_store::LedgerHead`]'s are enough).
pub(crate) fn header_of(seq: u32, raw: &[u8]) -> RpcResult<Header> {
    let not_stellar = |e: String| {
        RpcError::NotStellar(format!(
            "ledger {} is not a Stellar LedgerCloseMeta ({e}); this data dir holds ledgers \
             that were not ingested from Stellar (synthetic data?), which the Stellar RPC \
             methods cannot serve",
            seq
        ))
    };
    let mut r = Limited::new(Cursor::new(raw), limits(raw.len()));
    let version = i32::read_xdr(&mut r).map_err(|e| not_stellar(e.to_string()))?;
    match version {
        0 => {}
        1 | 2 => {
            LedgerCloseMetaExt::read_xdr(&mut r).map_err(|e| not_stellar(e.to_string()))?;
        }
        v => return Err(not_stellar(format!("unknown LedgerCloseMeta version {v}"))),
    }
    let from = r.inner.position() as usize;
    let entry =
        LedgerHeaderHistoryEntry::read_xdr(&mut r).map_err(|e| not_stellar(e.to_string()))?;
    let span = from..r.inner.position() as usize;
    if entry.header.ledger_seq != seq {
        return Err(not_stellar(format!(
            "its header says ledger {}",
            entry.header.ledger_seq
        )));
    }
    Ok(Header { entry, span })
}

/// What a stored transaction is, in stellar-rpc's terms.
#[derive(Debug)]
pub(crate) struct TxView<'a> {
    pub rec: &'a TxRecord,
    /// txSUCCESS or txFEE_BUMP_INNER_SUCCESS.
    pub success: bool,
    pub fee_bump: bool,
    /// The `TransactionResult` of the stored pair (its bytes after the
    /// 32-byte hash).
    pub result: &'a [u8],
}

impl<'a> TxView<'a> {
    pub(crate) fn new(rec: &'a TxRecord) -> RpcResult<Self> {
        let at = || format!("transaction {} of ledger {}", rec.index + 1, rec.ledger_seq);
        // TransactionEnvelope: a 4-byte EnvelopeType, 5 = ENVELOPE_TYPE_TX_FEE_BUMP.
        let kind = rec.envelope.get(..4).ok_or_else(|| {
            RpcError::NotStellar(format!("{}: the stored envelope is empty", at()))
        })?;
        let fee_bump = i32::from_be_bytes([kind[0], kind[1], kind[2], kind[3]]) == 5;
        // TransactionResultPair: a 32-byte hash, then the TransactionResult.
        let result = rec.result.get(32..).ok_or_else(|| {
            RpcError::NotStellar(format!("{}: the stored result pair is truncated", at()))
        })?;
        let parsed: TransactionResult = decode(result, "TransactionResult")?;
        let success = matches!(
            parsed.result,
            TransactionResultResult::TxSuccess(_)
                | TransactionResultResult::TxFeeBumpInnerSuccess(_)
        );
        Ok(Self {
            rec,
            success,
            fee_bump,
            result,
        })
    }

    /// `SUCCESS` or `FAILED`.
    pub(crate) fn status(&self) -> &'static str {
        if self.success { "SUCCESS" } else { "FAILED" }
    }

    /// 1-based position in the ledger's apply order.
    pub(crate) fn application_order(&self) -> u32 {
        self.rec.index + 1
    }

    pub(crate) fn envelope(&self) -> RpcResult<TransactionEnvelope> {
        decode(&self.rec.envelope, "TransactionEnvelope")
    }

    pub(crate) fn result(&self) -> RpcResult<TransactionResult> {
        decode(self.result, "TransactionResult")
    }

    pub(crate) fn meta(&self) -> RpcResult<TransactionMeta> {
        decode(&self.rec.meta, "TransactionMeta")
    }
}

/// A transaction's events as stellar-rpc reports them: from
/// `TransactionMeta` V3 (Soroban meta: contract events of the one
/// operation, diagnostic events) and V4 (transaction-level events,
/// contract events per operation, diagnostic events). Older metas have
/// none.
#[derive(Debug, Default)]
pub(crate) struct TxEvents {
    pub diagnostic: Vec<DiagnosticEvent>,
    pub transaction: Vec<TransactionEvent>,
    /// One list per operation.
    pub contract: Vec<Vec<ContractEvent>>,
}

impl TxEvents {
    pub(crate) fn of(meta: &TransactionMeta) -> Self {
        match meta {
            TransactionMeta::V3(m) => match &m.soroban_meta {
                Some(s) => Self {
                    diagnostic: s.diagnostic_events.to_vec(),
                    transaction: Vec::new(),
                    contract: vec![s.events.to_vec()],
                },
                None => Self::default(),
            },
            TransactionMeta::V4(m) => Self {
                diagnostic: m.diagnostic_events.to_vec(),
                transaction: m.events.to_vec(),
                contract: m.operations.iter().map(|op| op.events.to_vec()).collect(),
            },
            TransactionMeta::V0(_) | TransactionMeta::V1(_) | TransactionMeta::V2(_) => {
                Self::default()
            }
        }
    }
}
