//! `LedgerCloseMeta` → [`LedgerInput`]: the ledger's seq and close time
//! from its header, and each transaction's hash, envelope, result and meta
//! in apply order.
//!
//! A ledger lists its transactions twice: the tx set (envelopes, in set
//! order, split into phases and, since protocol 23, parallel stages) and
//! `tx_processing` (results and meta, in apply order). They are joined by
//! hash: each envelope's hash is computed with the network passphrase and
//! must equal the `TransactionResultPair.transactionHash` of exactly one
//! processing entry. A wrong passphrase therefore fails loudly at the
//! first transaction instead of storing hashes nobody can look up.
//!
//! What is stored per transaction, as exact XDR:
//! - envelope: `TransactionEnvelope`;
//! - result: `TransactionResultPair` (hash + `TransactionResult`);
//! - meta: `TransactionMeta` (`txApplyProcessing`);
//! - alias (fee bumps only): the inner transaction's hash, a second key the
//!   transaction is found by.
//!
//! The fee changes (`feeProcessing`, `postTxApplyFeeProcessing`) stay in
//! the ledger's raw `LedgerCloseMeta`. The production path also records
//! where each part sits in raw ([`LedgerInput::cuts`]), so a store can keep
//! the ledger as a skeleton and each part once; the reference leaves the
//! cuts empty (tests compare the two without them, and check the walker's
//! cuts against the reference's re-encoded parts).
//!
//! Two implementations give the same [`LedgerInput`]:
//! - the production path, [`ledger_from_xdr`] and [`from_slices`]: the
//!   [`walk`](crate::walk) finds the byte ranges without decoding, hashes
//!   come from slices, and the parts are slices of `raw` (one buffer,
//!   shared: nothing is copied);
//! - the reference, [`reference`] and [`extract`]: a full `stellar-xdr`
//!   decode, `TransactionEnvelope::hash`, and each part re-encoded. Tests
//!   and the `xdr` fuzz target hold the two to each other.

use std::collections::HashMap;

use ledgerstore_db_api::{Bytes, Cut, LedgerInput, Part, TxInput};
use stellar_xdr::{
    GeneralizedTransactionSet, LedgerCloseMeta, LedgerHeader, Limits, ReadXdr, TransactionEnvelope,
    TransactionMeta, TransactionPhase, TransactionResultPair, TxSetComponent, WriteXdr,
};

use crate::error::{StellarError, StellarResult};
use crate::network::Network;
use crate::walk::{EnvelopeSlices, LedgerSlices, inner_hash, tx_hash, walk};

pub use crate::walk::MAX_XDR_DEPTH;

/// Read limits for `len` bytes of untrusted XDR.
pub fn limits(len: usize) -> Limits {
    Limits {
        depth: MAX_XDR_DEPTH,
        len,
    }
}

/// Walks one `LedgerCloseMeta` in `bytes` (the whole slice) and extracts
/// it; `raw` of the result is `bytes`. `at` names the source in errors
/// (e.g. `stellar_ledgers[3]` or `file.xdr frame 2`).
pub fn ledger_from_xdr(
    bytes: impl Into<Bytes>,
    network: &Network,
    at: &str,
) -> StellarResult<LedgerInput> {
    let bytes = bytes.into();
    let slices = walk(&bytes).map_err(|f| StellarError::walk(at, "LedgerCloseMeta", f))?;
    from_slices(&slices, bytes, network)
}

/// The reference for [`ledger_from_xdr`]: a full decode, then [`extract`].
pub fn reference(
    bytes: impl Into<Bytes>,
    network: &Network,
    at: &str,
) -> StellarResult<LedgerInput> {
    let bytes = bytes.into();
    let lcm = LedgerCloseMeta::from_xdr(&bytes, limits(bytes.len()))
        .map_err(|e| StellarError::xdr(at, "LedgerCloseMeta", e))?;
    extract(&lcm, bytes, network)
}

/// A walked ledger ([`walk`]) to its [`LedgerInput`]: the same checks,
/// errors and output as [`extract`], with every hash from slices of `raw`
/// (the bytes `slices` were walked from) and every part a slice of it.
pub fn from_slices(
    slices: &LedgerSlices,
    raw: Bytes,
    network: &Network,
) -> StellarResult<LedgerInput> {
    let seq = slices.seq;
    let mismatch = |detail: String| StellarError::Mismatch { seq, detail };
    let (set, applied) = (&slices.envelopes, &slices.applied);
    if set.len() != applied.len() {
        return Err(mismatch(format!(
            "the tx set holds {} envelopes but tx_processing has {} results",
            set.len(),
            applied.len()
        )));
    }
    let network_id = network.id();
    let mut by_hash: HashMap<[u8; 32], (usize, &EnvelopeSlices)> =
        HashMap::with_capacity(set.len());
    for (i, env) in set.iter().enumerate() {
        let hash = tx_hash(&raw, env, &network_id);
        if let Some((first, _)) = by_hash.insert(hash, (i, env)) {
            return Err(mismatch(format!(
                "tx set[{i}] repeats the envelope of tx set[{first}] (hash {})",
                hex(&hash)
            )));
        }
    }
    let mut txs = Vec::with_capacity(applied.len());
    let mut cuts = Vec::with_capacity(3 * applied.len());
    for (index, a) in applied.iter().enumerate() {
        let hash = a.hash(&raw);
        let Some((_, env)) = by_hash.remove(&hash) else {
            return Err(mismatch(format!(
                "tx_processing[{index}] has transactionHash {}, but no envelope of the tx set \
                 hashes to it under the network passphrase {network} (wrong --network, or a \
                 corrupt ledger?)",
                hex(&hash)
            )));
        };
        for (span, part) in [
            (env.envelope, Part::Envelope),
            (a.result, Part::Result),
            (a.meta, Part::Meta),
        ] {
            cuts.push(Cut {
                offset: span_offset(span.offset, seq)?,
                tx: index as u32,
                part,
            });
        }
        txs.push(TxInput {
            hash: hash.to_vec(),
            envelope: env.envelope.slice_of(&raw),
            result: a.result.slice_of(&raw),
            meta: a.meta.slice_of(&raw),
            alias: inner_hash(&raw, env, &network_id).map(|h| h.to_vec()),
        });
    }
    Ok(LedgerInput {
        seq,
        close_time: slices.close_time,
        raw,
        txs,
        cuts,
    })
}

/// A part's offset as a cut records it (raw is bounded far below 4 GiB by
/// the read limits; a larger one is refused, not truncated).
fn span_offset(offset: usize, seq: u32) -> StellarResult<u32> {
    u32::try_from(offset).map_err(|_| StellarError::Mismatch {
        seq,
        detail: format!("a transaction part starts at byte {offset}, past 4 GiB"),
    })
}

/// The ledger sequence in a `LedgerCloseMeta`'s header.
pub fn ledger_seq(lcm: &LedgerCloseMeta) -> u32 {
    header(lcm).ledger_seq
}

fn header(lcm: &LedgerCloseMeta) -> &LedgerHeader {
    match lcm {
        LedgerCloseMeta::V0(m) => &m.ledger_header.header,
        LedgerCloseMeta::V1(m) => &m.ledger_header.header,
        LedgerCloseMeta::V2(m) => &m.ledger_header.header,
    }
}

/// Envelopes of the tx set, in set order.
fn envelopes(lcm: &LedgerCloseMeta) -> Vec<&TransactionEnvelope> {
    match lcm {
        LedgerCloseMeta::V0(m) => m.tx_set.txs.iter().collect(),
        LedgerCloseMeta::V1(m) => generalized(&m.tx_set),
        LedgerCloseMeta::V2(m) => generalized(&m.tx_set),
    }
}

fn generalized(set: &GeneralizedTransactionSet) -> Vec<&TransactionEnvelope> {
    let GeneralizedTransactionSet::V1(v1) = set;
    let mut out = Vec::new();
    for phase in v1.phases.iter() {
        match phase {
            TransactionPhase::V0(components) => {
                for c in components.iter() {
                    let TxSetComponent::TxsetCompTxsMaybeDiscountedFee(c) = c;
                    out.extend(c.txs.iter());
                }
            }
            TransactionPhase::V1(parallel) => {
                for stage in parallel.execution_stages.iter() {
                    for cluster in stage.0.iter() {
                        out.extend(cluster.0.iter());
                    }
                }
            }
        }
    }
    out
}

/// Results and meta, in apply order.
fn processing(lcm: &LedgerCloseMeta) -> Vec<(&TransactionResultPair, &TransactionMeta)> {
    match lcm {
        LedgerCloseMeta::V0(m) => m
            .tx_processing
            .iter()
            .map(|p| (&p.result, &p.tx_apply_processing))
            .collect(),
        LedgerCloseMeta::V1(m) => m
            .tx_processing
            .iter()
            .map(|p| (&p.result, &p.tx_apply_processing))
            .collect(),
        LedgerCloseMeta::V2(m) => m
            .tx_processing
            .iter()
            .map(|p| (&p.result, &p.tx_apply_processing))
            .collect(),
    }
}

/// Extracts a decoded ledger (the reference extraction). `raw` is stored
/// as the ledger's bytes; pass the `LedgerCloseMeta` XDR it was decoded
/// from.
pub fn extract(
    lcm: &LedgerCloseMeta,
    raw: impl Into<Bytes>,
    network: &Network,
) -> StellarResult<LedgerInput> {
    let raw = raw.into();
    let h = header(lcm);
    let seq = h.ledger_seq;
    let mismatch = |detail: String| StellarError::Mismatch { seq, detail };
    let set = envelopes(lcm);
    let applied = processing(lcm);
    if set.len() != applied.len() {
        return Err(mismatch(format!(
            "the tx set holds {} envelopes but tx_processing has {} results",
            set.len(),
            applied.len()
        )));
    }
    let network_id = network.id();
    let mut by_hash: HashMap<[u8; 32], (usize, &TransactionEnvelope)> =
        HashMap::with_capacity(set.len());
    for (i, env) in set.iter().enumerate() {
        let hash = env
            .hash(network_id)
            .map_err(|e| StellarError::xdr(format!("ledger {seq} tx set[{i}]"), "envelope", e))?;
        if let Some((first, _)) = by_hash.insert(hash, (i, env)) {
            return Err(mismatch(format!(
                "tx set[{i}] repeats the envelope of tx set[{first}] (hash {})",
                hex(&hash)
            )));
        }
    }
    let mut txs = Vec::with_capacity(applied.len());
    for (index, (pair, meta)) in applied.into_iter().enumerate() {
        let hash = pair.transaction_hash.0;
        let Some((_, env)) = by_hash.remove(&hash) else {
            return Err(mismatch(format!(
                "tx_processing[{index}] has transactionHash {}, but no envelope of the tx set \
                 hashes to it under the network passphrase {network} (wrong --network, or a \
                 corrupt ledger?)",
                hex(&hash)
            )));
        };
        // A fee bump is found by its inner transaction's hash too, as
        // stellar-rpc finds it.
        let alias = match env {
            TransactionEnvelope::TxFeeBump(fb) => Some(
                fb.tx
                    .inner_tx
                    .hash(network_id)
                    .map_err(|e| {
                        StellarError::xdr(format!("ledger {seq} tx {index}"), "inner tx", e)
                    })?
                    .to_vec(),
            ),
            TransactionEnvelope::TxV0(_) | TransactionEnvelope::Tx(_) => None,
        };
        txs.push(TxInput {
            hash: hash.to_vec(),
            envelope: to_xdr(env, seq, index, "envelope")?.into(),
            result: to_xdr(pair, seq, index, "result")?.into(),
            meta: to_xdr(meta, seq, index, "meta")?.into(),
            alias,
        });
    }
    Ok(LedgerInput {
        seq,
        close_time: h.scp_value.close_time.0,
        raw,
        txs,
        cuts: Vec::new(),
    })
}

fn to_xdr(v: &impl WriteXdr, seq: u32, index: usize, what: &'static str) -> StellarResult<Vec<u8>> {
    v.to_xdr(Limits::none())
        .map_err(|e| StellarError::xdr(format!("ledger {seq} tx {index} {what}"), what, e))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The one refusal the walker may make of bytes the reference takes, held
/// to account (for tests and the `xdr` fuzz target). `original` is what
/// the walker refused with `refusal`, `canonical` the reference's decode of
/// it re-encoded. The excuse holds only if they differ, and the walker
/// refused at the first word where they differ, for a bool that is not 0
/// or 1: it says nothing of any other refusal, so a non-canonical bool in
/// one place cannot excuse a refusal of something else elsewhere.
pub fn check_refusal(
    original: &[u8],
    canonical: &[u8],
    refusal: &crate::walk::WalkError,
) -> Result<(), String> {
    use crate::walk::cursor::Why;
    if original.len() != canonical.len() {
        return Err(format!(
            "the reference re-encodes {} bytes to {}: the walker's refusal ({refusal}) is not \
             a bool's",
            original.len(),
            canonical.len()
        ));
    }
    let Some(first) = original.iter().zip(canonical).position(|(a, b)| a != b) else {
        return Err(format!(
            "the walker refuses canonical XDR the reference takes: {refusal}"
        ));
    };
    let word = first - first % 4;
    if refusal.at != word || !matches!(refusal.why, Why::Bool(v) if v > 1) {
        return Err(format!(
            "the walker refuses {refusal}, but the first word the reference re-encodes \
             differently is at byte {word} ({:02x?} → {:02x?})",
            &original[word..(word + 4).min(original.len())],
            &canonical[word..(word + 4).min(canonical.len())],
        ));
    }
    Ok(())
}

/// [`check_refusal`] for one `LedgerCloseMeta` the walker refused and the
/// reference takes, then the rest of the excuse: the reference's decode
/// re-encoded (`from_xdr` then `to_xdr`, whatever its size) must walk, and
/// extract to the reference's ledger. Returns that ledger.
pub fn check_refused_ledger(
    bytes: &[u8],
    refusal: &crate::walk::WalkError,
    network: &Network,
) -> Result<LedgerInput, String> {
    let lcm = LedgerCloseMeta::from_xdr(bytes, limits(bytes.len()))
        .map_err(|e| format!("the reference refuses it too ({e}): nothing to excuse"))?;
    let canonical = lcm
        .to_xdr(Limits::none())
        .map_err(|e| format!("the reference's decode does not re-encode: {e}"))?;
    check_refusal(bytes, &canonical, refusal)?;
    let walked = ledger_from_xdr(canonical.clone(), network, "re-encoded")
        .map_err(|e| format!("the walker refuses the canonical re-encoding too: {e}"))?;
    let want = reference(canonical, network, "re-encoded")
        .map_err(|e| format!("the reference refuses its own re-encoding: {e}"))?;
    // The reference names no cuts; everything else must agree.
    if walked.without_cuts() != want {
        return Err("walker and reference extract the canonical re-encoding differently".into());
    }
    Ok(walked)
}
