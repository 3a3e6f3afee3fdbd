//! Contract events as stellar-rpc v28's `getEvents` serves them, cut out
//! of a transaction's `TransactionMeta` bytes without decoding it.
//!
//! # What stellar-rpc does
//!
//! Read at stellar-rpc 41b2f0ff (Protocol 28 GA, the `protocol-next`
//! merge) and go-stellar-sdk, which it calls:
//!
//! - **Which events.** `cmd/stellar-rpc/internal/db/event.go`,
//!   `InsertEvents`, reads each ledger's transactions in apply order
//!   (`ingest.LedgerTransactionReader`; `tx.Index` is 1-based) and stores
//!   what `tx.GetTransactionEvents()` returns as `TransactionEvents`
//!   (transaction-level) and `OperationEvents`; its `DiagnosticEvents`
//!   are never stored, so getEvents never returns a `diagnosticEvents`
//!   entry. Failed transactions are not skipped (their fee events count).
//!   go-stellar-sdk `ingest/ledger_transaction.go`,
//!   `GetTransactionEvents`:
//!   - meta V1, V2: no events;
//!   - V3 (protocols 20 to 22): only for a Soroban transaction
//!     (`IsSorobanTx`: its envelope carries `SorobanTransactionData`),
//!     operation 0's events are `sorobanMeta.events` (none without a
//!     `sorobanMeta`: `xdr/transaction_meta.go`,
//!     `GetContractEventsForOperation`); no transaction-level events;
//!   - V4 (protocol 23 on): `events` (each a `TransactionEvent` with its
//!     stage) and each `operations[i].events`;
//!   - V0 and unknown versions: an error that stops ingestion.
//! - **Ids** (`InsertEvents`; the id is `protocol.Cursor`'s string,
//!   [`EventId`]): a `TransactionEvent` of stage `BEFORE_ALL_TXS` gets
//!   (ledger, tx 0, op 0, n) and one of `AFTER_ALL_TXS` (ledger, tx
//!   `0xFFFFF`, op 0, n), n counting such events over the whole ledger in
//!   apply order; `AFTER_TX` gets (ledger, tx, op `0xFFF`, n), n over the
//!   transaction; operation i's k-th event gets (ledger, tx, i, k). A
//!   query returns events in id order (`ORDER BY id`).
//! - **The answer's fields** (`cmd/stellar-rpc/internal/methods/get_events.go`,
//!   `eventInfoForEvent`): `transactionIndex` and `operationIndex` are the
//!   id's tx and op (so 0, `0xFFFFF` or `0xFFF` for the stage events
//!   above); `type` is the `ContractEvent`'s type (`system`, `contract`,
//!   `diagnostic`: go-stellar-sdk `protocols/rpc/get_events.go`);
//!   `contractId` its contract id as a strkey; `topic`/`value` its
//!   `ContractEventV0` topics and data; `inSuccessfulContractCall` is the
//!   transaction's success (`tx.Successful()`: result code `txSUCCESS` or
//!   `txFEE_BUMP_INNER_SUCCESS`) for every event, whatever its stage.
//! - **Filters**: since v23 a filter's `type` may only be `system` or
//!   `contract` (`EventFilter.Valid`); `diagnostic` is refused.
//!
//! # Choices where ledgerstore must pick
//!
//! - A V3 meta's events are taken from its `sorobanMeta`, whatever the
//!   envelope: the meta is all this module sees. stellar-core writes a
//!   `sorobanMeta` only for Soroban transactions, so this is
//!   stellar-rpc's rule on real ledgers; the oracle
//!   (`testdata/events_oracle.py`) applies the envelope rule and the tests
//!   compare.
//! - A V0 meta (no events) is not an error: stellar-rpc never ingests one
//!   (captive core writes V2 or later even replaying old ledgers), but a
//!   full history may hold them.
//! - Ids stellar-rpc cannot build (Go's `toid.ToInt64` panics) are
//!   refused with an error: a ledger above `i32::MAX`, an application
//!   order of `0xFFFFF` or more, an operation index of `0xFFF` or more
//!   (those would also collide with the stage ids).
//!
//! # Shape
//!
//! [`tx_events`] walks one meta with the generated skip functions of
//! [`crate::walk`] (`meta.rs`), recording each served `ContractEvent`'s
//! range, its topics' and value's ranges and its contract id's offset;
//! nothing is decoded or allocated per value. [`ledger_events`] runs it
//! over a walked ledger's metas, [`input_events`] over the metas of a
//! ledger [`crate::extract::from_slices`] made (so the ledger is not
//! walked twice). [`reference`](mod@reference) is the same
//! extraction by a full typed decode with `stellar-xdr`, for tests and
//! fuzzing.

mod id;
mod meta;
pub mod reference;
mod types;

pub use id::{EventId, OP_MASK, TX_MASK};
pub use types::{Event, EventType, Events, LedgerCounts, OwnedEvent, Stage, TxContext};

use ledgerstore_db_api::{LedgerInput, Part};

use crate::error::{StellarError, StellarResult};
use crate::extract::MAX_XDR_DEPTH;
use crate::walk::cursor::{Cur, Fail, Why};
use crate::walk::{LedgerSlices, Span, WalkError, parts};
use meta::{Place, Sink};

/// Whether a `TransactionResultPair` (its XDR) is a success as
/// stellar-rpc counts it: result code `txSUCCESS` (0) or
/// `txFEE_BUMP_INNER_SUCCESS` (1). The code is the word after the hash
/// (32 bytes) and `feeCharged` (8).
pub fn successful(result_pair: &[u8]) -> StellarResult<bool> {
    match result_pair.get(40..44) {
        Some(w) => Ok(matches!(
            i32::from_be_bytes([w[0], w[1], w[2], w[3]]),
            0 | 1
        )),
        None => Err(StellarError::format(
            "TransactionResultPair",
            format!(
                "{} bytes: too short to hold a result code",
                result_pair.len()
            ),
        )),
    }
}

/// The generated skipper's verdict on a whole `TransactionMeta` (all of
/// `meta`): what [`tx_events`] must agree with on any bytes.
pub fn validate_meta(meta: &[u8]) -> Result<(), WalkError> {
    let mut c = Cur::new(meta);
    parts::transaction_meta(&mut c, MAX_XDR_DEPTH)?;
    end(&c)
}

fn end(c: &Cur<'_>) -> Result<(), Fail> {
    if c.pos() != c.buf().len() {
        return Err(c.fail(c.pos(), Why::Trailing));
    }
    Ok(())
}

/// Walks one transaction's `TransactionMeta` (all of `meta`) and appends
/// the events getEvents serves for it to `out`, in id order, with spans
/// shifted by `base` (where `meta` starts in the bytes the spans should
/// index; 0 for `meta` itself). `counts` holds the ledger's stage events
/// before this transaction and is advanced past its own; call it for the
/// ledger's transactions in apply order (as [`ledger_events`] does).
/// Refuses bytes the walker refuses (truncated, trailing, out-of-range
/// values, too deep) and ids stellar-rpc cannot build, leaving `counts`
/// and `out` unchanged; never panics.
pub fn tx_events(
    meta: &[u8],
    base: usize,
    tx: &TxContext,
    counts: &mut LedgerCounts,
    out: &mut Events,
) -> StellarResult<()> {
    let at = || {
        format!(
            "ledger {} tx {} (apply index) meta",
            tx.ledger, tx.apply_index
        )
    };
    let mut sink = Sink::default();
    let mut c = Cur::new(meta);
    meta::transaction_meta(&mut c, MAX_XDR_DEPTH, &mut sink)
        .and_then(|()| end(&c))
        .map_err(|f| StellarError::walk(at(), "TransactionMeta", f))?;
    if sink.found.is_empty() {
        out.diagnostic_not_served += sink.diagnostic;
        return Ok(());
    }
    let order = tx.apply_index.checked_add(1).filter(|&o| o < TX_MASK);
    let (Some(order), true) = (order, tx.ledger <= i32::MAX as u32) else {
        return Err(StellarError::format(
            at(),
            "a ledger above 2^31 - 1 or an application order of 0xFFFFF or more has no \
             stellar-rpc event id",
        ));
    };
    // Checked before anything is counted or appended: an error leaves
    // `counts` and `out` as they were.
    if let Some(op) = sink.found.iter().find_map(|f| match f.place {
        Place::Operation(op) if op >= OP_MASK => Some(op),
        _ => None,
    }) {
        return Err(StellarError::format(
            at(),
            format!("operation {op} has no stellar-rpc event id (0xFFF or more)"),
        ));
    }
    out.diagnostic_not_served += sink.diagnostic;
    let first = out.list.len();
    let mut after_tx = 0u32;
    let mut next_index = (u32::MAX, 0u32); // (operation, its next event index)
    for f in &sink.found {
        let (stage, tx_order, op, index) = match f.place {
            Place::Stage(0) => (Stage::BeforeAllTxs, 0, 0, bump(&mut counts.before_all_txs)),
            Place::Stage(2) => (
                Stage::AfterAllTxs,
                TX_MASK,
                0,
                bump(&mut counts.after_all_txs),
            ),
            Place::Stage(_) => (Stage::AfterTx, order, OP_MASK, bump(&mut after_tx)),
            Place::Operation(op) => {
                if next_index.0 != op {
                    next_index = (op, 0);
                }
                (Stage::Operation(op), order, op, bump(&mut next_index.1))
            }
        };
        let contract_id = f.contract_id.and_then(|o| meta.get(o..o + 32)).map(|b| {
            let mut id = [0u8; 32];
            id.copy_from_slice(b);
            id
        });
        let shift = |s: Span| Span {
            offset: s.offset.saturating_add(base),
            len: s.len,
        };
        let topics = out.topics.len()..out.topics.len() + f.topics.1;
        out.topics.extend(
            sink.topics
                .get(f.topics.0..f.topics.0 + f.topics.1)
                .unwrap_or_default()
                .iter()
                .map(|&s| shift(s)),
        );
        out.list.push(Event {
            id: EventId {
                ledger: tx.ledger,
                tx: tx_order,
                op,
                index,
            },
            stage,
            kind: EventType::from_xdr(f.kind),
            apply_index: tx.apply_index,
            tx_hash: tx.hash,
            in_successful_contract_call: tx.successful,
            contract_id,
            event: shift(f.event),
            topics,
            value: shift(f.value),
        });
    }
    out.list[first..].sort_by_key(|e| e.id.key());
    Ok(())
}

/// `*n`, then `n += 1`.
fn bump(n: &mut u32) -> u32 {
    let v = *n;
    *n = n.saturating_add(1);
    v
}

/// The events getEvents serves for a walked ledger ([`crate::walk::walk`]
/// of `raw`), in id order; spans index `raw`.
pub fn ledger_events(raw: &[u8], slices: &LedgerSlices) -> StellarResult<Events> {
    let mut out = Events::default();
    let mut counts = LedgerCounts::default();
    for (i, a) in slices.applied.iter().enumerate() {
        let tx = TxContext {
            ledger: slices.seq,
            apply_index: u32::try_from(i).unwrap_or(u32::MAX),
            hash: a.hash(raw),
            successful: successful(a.result.of(raw))?,
        };
        tx_events(a.meta.of(raw), a.meta.offset, &tx, &mut counts, &mut out)?;
    }
    out.list.sort_by_key(|e| e.id.key());
    Ok(out)
}

/// [`ledger_events`] of a ledger [`crate::extract::from_slices`] made
/// from the walk of `l.raw`: its cuts say where each transaction's meta
/// sits, and its parts are the result pairs and metas the walk found, so
/// only the metas are walked again, not the whole ledger. The same
/// [`Events`] as walking `l.raw` (tested on every corpus). None when `l`
/// names no cut for some transaction's meta (a synthetic ledger, one
/// from the reference [`crate::extract::extract`], or the gRPC stream's,
/// which names none) or has no transaction (nothing says its bytes are a
/// `LedgerCloseMeta`): walk `l.raw` then.
pub fn input_events(l: &LedgerInput) -> Option<StellarResult<Events>> {
    if l.txs.is_empty() {
        return None;
    }
    let mut metas = vec![None; l.txs.len()];
    for c in l.cuts.iter().filter(|c| c.part == Part::Meta) {
        *metas.get_mut(c.tx as usize)? = Some(c.offset as usize);
    }
    let metas: Vec<usize> = metas.into_iter().collect::<Option<_>>()?;
    let mut out = Events::default();
    let mut counts = LedgerCounts::default();
    let run = |out: &mut Events, counts: &mut LedgerCounts| -> StellarResult<()> {
        for (i, (tx, at)) in l.txs.iter().zip(metas).enumerate() {
            let mut hash = [0u8; 32];
            if let Some(h) = tx.result.get(..32) {
                hash.copy_from_slice(h);
            }
            let ctx = TxContext {
                ledger: l.seq,
                apply_index: u32::try_from(i).unwrap_or(u32::MAX),
                hash,
                successful: successful(&tx.result)?,
            };
            tx_events(&tx.meta, at, &ctx, counts, out)?;
        }
        Ok(())
    };
    if let Err(e) = run(&mut out, &mut counts) {
        return Some(Err(e));
    }
    out.list.sort_by_key(|e| e.id.key());
    Some(Ok(out))
}
