//! The same extraction by a full typed decode (`stellar-xdr`), the
//! reference [`super::tx_events`] is tested against: metas decoded whole,
//! events re-encoded, and for a whole ledger ([`ledger`]) hashes and
//! results read from the decoded `LedgerCloseMeta`, not from the walker's
//! slices. The rules are the module's (see [`super`]), written again over
//! the typed values.

use stellar_xdr::{
    ContractEvent, ContractEventBody, LedgerCloseMeta, ReadXdr, TransactionEventStage,
    TransactionMeta, TransactionResultResult, WriteXdr,
};

use super::{
    EventId, EventType, LedgerCounts, OP_MASK, OwnedEvent, Stage, TX_MASK, TxContext, bump,
};
use crate::error::{StellarError, StellarResult};
use crate::extract::limits;

/// One transaction's served events, from its meta decoded whole, in id
/// order; `counts` as in [`super::tx_events`].
pub fn tx(
    meta: &[u8],
    tx: &TxContext,
    counts: &mut LedgerCounts,
) -> StellarResult<Vec<OwnedEvent>> {
    let at = format!(
        "ledger {} tx {} (apply index) meta",
        tx.ledger, tx.apply_index
    );
    let m = TransactionMeta::from_xdr(meta, limits(meta.len()))
        .map_err(|e| StellarError::xdr(at.clone(), "TransactionMeta", e))?;
    decoded(&m, tx, counts, &at)
}

/// A decoded meta's served events, in id order.
pub fn decoded(
    m: &TransactionMeta,
    tx: &TxContext,
    counts: &mut LedgerCounts,
    at: &str,
) -> StellarResult<Vec<OwnedEvent>> {
    // (stage, operation, event) in the meta's order.
    let mut found: Vec<(Option<TransactionEventStage>, u32, &ContractEvent)> = Vec::new();
    match m {
        TransactionMeta::V0(_) | TransactionMeta::V1(_) | TransactionMeta::V2(_) => {}
        TransactionMeta::V3(v3) => {
            if let Some(s) = &v3.soroban_meta {
                found.extend(s.events.iter().map(|e| (None, 0, e)));
            }
        }
        TransactionMeta::V4(v4) => {
            for (i, op) in v4.operations.iter().enumerate() {
                let i = u32::try_from(i).unwrap_or(u32::MAX);
                found.extend(op.events.iter().map(|e| (None, i, e)));
            }
            found.extend(v4.events.iter().map(|e| (Some(e.stage), 0, &e.event)));
        }
    }
    let order = tx.apply_index.saturating_add(1);
    if !found.is_empty() && (order >= TX_MASK || tx.ledger > i32::MAX as u32) {
        return Err(StellarError::format(at, "no stellar-rpc event id"));
    }
    if found
        .iter()
        .any(|(stage, op, _)| stage.is_none() && *op >= OP_MASK)
    {
        return Err(StellarError::format(at, "no stellar-rpc event id"));
    }
    let mut out = Vec::with_capacity(found.len());
    let mut after_tx = 0;
    let mut per_op = (u32::MAX, 0u32);
    for (stage, op, e) in found {
        let (stage, tx_order, op, index) = match stage {
            Some(TransactionEventStage::BeforeAllTxs) => {
                (Stage::BeforeAllTxs, 0, 0, bump(&mut counts.before_all_txs))
            }
            Some(TransactionEventStage::AfterAllTxs) => (
                Stage::AfterAllTxs,
                TX_MASK,
                0,
                bump(&mut counts.after_all_txs),
            ),
            Some(TransactionEventStage::AfterTx) => {
                (Stage::AfterTx, order, OP_MASK, bump(&mut after_tx))
            }
            None => {
                if per_op.0 != op {
                    per_op = (op, 0);
                }
                (Stage::Operation(op), order, op, bump(&mut per_op.1))
            }
        };
        let ContractEventBody::V0(v0) = &e.body;
        out.push(OwnedEvent {
            id: EventId {
                ledger: tx.ledger,
                tx: tx_order,
                op,
                index,
            },
            stage,
            kind: match e.type_ as i32 {
                0 => EventType::System,
                1 => EventType::Contract,
                _ => EventType::Diagnostic,
            },
            apply_index: tx.apply_index,
            tx_hash: tx.hash,
            in_successful_contract_call: tx.successful,
            contract_id: e.contract_id.as_ref().map(|c| c.0.0),
            event: enc(e),
            topics: v0.topics.iter().map(enc).collect(),
            value: enc(&v0.data),
        });
    }
    out.sort_by_key(|e| e.id.key());
    Ok(out)
}

/// A decoded value's XDR (it always re-encodes: no limits).
fn enc<T: WriteXdr>(v: &T) -> Vec<u8> {
    v.to_xdr(stellar_xdr::Limits::none()).unwrap_or_default()
}

/// A whole ledger's served events from its `LedgerCloseMeta` decoded
/// whole: hashes from the result pairs, success from the decoded result
/// codes; in id order.
pub fn ledger(raw: &[u8]) -> StellarResult<Vec<OwnedEvent>> {
    let lcm = LedgerCloseMeta::from_xdr(raw, limits(raw.len()))
        .map_err(|e| StellarError::xdr("reference", "LedgerCloseMeta", e))?;
    let (seq, processing): (u32, Vec<_>) = match &lcm {
        LedgerCloseMeta::V0(m) => (
            m.ledger_header.header.ledger_seq,
            m.tx_processing
                .iter()
                .map(|p| (&p.result, &p.tx_apply_processing))
                .collect(),
        ),
        LedgerCloseMeta::V1(m) => (
            m.ledger_header.header.ledger_seq,
            m.tx_processing
                .iter()
                .map(|p| (&p.result, &p.tx_apply_processing))
                .collect(),
        ),
        LedgerCloseMeta::V2(m) => (
            m.ledger_header.header.ledger_seq,
            m.tx_processing
                .iter()
                .map(|p| (&p.result, &p.tx_apply_processing))
                .collect(),
        ),
    };
    let mut counts = LedgerCounts::default();
    let mut out = Vec::new();
    for (i, (pair, meta)) in processing.into_iter().enumerate() {
        let tx = TxContext {
            ledger: seq,
            apply_index: u32::try_from(i).unwrap_or(u32::MAX),
            hash: pair.transaction_hash.0,
            successful: matches!(
                pair.result.result,
                TransactionResultResult::TxSuccess(_)
                    | TransactionResultResult::TxFeeBumpInnerSuccess(_)
            ),
        };
        let at = format!("ledger {seq} tx {i} (apply index) meta");
        out.extend(decoded(meta, &tx, &mut counts, &at)?);
    }
    out.sort_by_key(|e| e.id.key());
    Ok(out)
}
