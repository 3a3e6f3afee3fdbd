//! Validates a whole batch before anything is written.
//!
//! Rules: ledger seqs are contiguous and ascending; the first new ledger is
//! the mark + 1 (any start while the store is empty); ledgers at or below
//! the mark are skipped (acknowledged, never rewritten); every hash and
//! alias is 32 bytes and unique within the batch (an alias is a hash too);
//! no record is empty or over its limit.

use std::collections::HashMap;

use ledgerstore_db_api::{DbError, LedgerInput, TxHash, check_cuts};

use crate::error::{StoreError, StoreResult};

/// Size limits applied to every batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Ledgers in one batch.
    pub max_batch_ledgers: usize,
    /// Transactions in one ledger.
    pub max_txs_per_ledger: usize,
    /// Raw bytes of one ledger.
    pub max_ledger_bytes: usize,
    /// Envelope + result + meta bytes of one transaction.
    pub max_tx_bytes: usize,
    /// Free space the data dir's filesystem must keep: a batch is refused
    /// (nothing written) unless this much, plus twice the batch's stored
    /// bytes, is free. Keeps the engines from ever meeting ENOSPC mid-write.
    pub min_free_disk_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_batch_ledgers: 10_000,
            max_txs_per_ledger: 100_000,
            max_ledger_bytes: 256 << 20,
            max_tx_bytes: 32 << 20,
            min_free_disk_bytes: 256 << 20,
        }
    }
}

/// What a valid batch asks for.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    /// Leading ledgers at or below the mark: acknowledged, not written.
    pub skipped: usize,
    /// Transactions in the ledgers to write.
    pub txs: usize,
}

fn invalid(field: String, reason: impl Into<String>) -> StoreError {
    StoreError::InvalidBatch {
        field,
        reason: reason.into(),
    }
}

fn too_large(field: String, got: usize, limit: usize, unit: &'static str) -> StoreError {
    StoreError::TooLarge {
        field,
        got: got as u64,
        limit: limit as u64,
        unit,
    }
}

/// Checks `batch` against the mark's `last` ledger and `limits`.
pub fn validate(batch: &[LedgerInput], last: Option<u32>, limits: &Limits) -> StoreResult<Plan> {
    if batch.is_empty() {
        return Err(invalid("ledgers".into(), "must hold at least one ledger"));
    }
    if batch.len() > limits.max_batch_ledgers {
        return Err(too_large(
            "ledgers".into(),
            batch.len(),
            limits.max_batch_ledgers,
            "ledgers",
        ));
    }
    for (i, pair) in batch.windows(2).enumerate() {
        let expected = pair[0].seq.checked_add(1);
        if expected != Some(pair[1].seq) {
            return Err(invalid(
                format!("ledgers[{}].seq", i + 1),
                format!(
                    "must be {} (contiguous after ledgers[{i}].seq {}), got {}",
                    expected.map_or("none".into(), |e| e.to_string()),
                    pair[0].seq,
                    pair[1].seq
                ),
            ));
        }
    }
    let skipped = match last {
        Some(last) => batch.iter().take_while(|l| l.seq <= last).count(),
        None => 0,
    };
    if let (Some(last), Some(next)) = (last, batch.get(skipped))
        && next.seq != last.saturating_add(1)
    {
        return Err(StoreError::Gap {
            expected: last.saturating_add(1),
            got: next.seq,
        });
    }
    // hash or alias → (ledger, tx, is alias): where it was first seen
    let mut seen: HashMap<TxHash, (usize, usize, bool)> = HashMap::new();
    let name = |(l, t, alias): (usize, usize, bool)| {
        let key = if alias { "alias" } else { "hash" };
        format!("ledgers[{l}].transactions[{t}].{key}")
    };
    let mut txs = 0usize;
    for (li, ledger) in batch.iter().enumerate().skip(skipped) {
        check_ledger(li, ledger, limits)?;
        for (ti, tx) in ledger.txs.iter().enumerate() {
            let field = || format!("ledgers[{li}].transactions[{ti}]");
            let hash = TxHash::from_slice(&tx.hash).ok_or_else(|| {
                invalid(
                    format!("{}.hash", field()),
                    format!("must be 32 bytes, got {}", tx.hash.len()),
                )
            })?;
            for (name, body) in [
                ("envelope", &tx.envelope),
                ("result", &tx.result),
                ("meta", &tx.meta),
            ] {
                if body.is_empty() {
                    return Err(invalid(format!("{}.{name}", field()), "must not be empty"));
                }
            }
            if tx.body_len() > limits.max_tx_bytes {
                return Err(too_large(
                    field(),
                    tx.body_len(),
                    limits.max_tx_bytes,
                    "bytes",
                ));
            }
            let alias = match &tx.alias {
                None => None,
                Some(a) => Some(TxHash::from_slice(a).ok_or_else(|| {
                    invalid(
                        format!("{}.alias", field()),
                        format!("must be 32 bytes, got {}", a.len()),
                    )
                })?),
            };
            for (key, at) in
                std::iter::once((hash, (li, ti, false))).chain(alias.map(|a| (a, (li, ti, true))))
            {
                if let Some(prev) = seen.insert(key, at) {
                    return Err(invalid(
                        name(at),
                        format!("duplicate of {} ({key})", name(prev)),
                    ));
                }
            }
        }
        txs += ledger.txs.len();
    }
    Ok(Plan { skipped, txs })
}

fn check_ledger(li: usize, ledger: &LedgerInput, limits: &Limits) -> StoreResult<()> {
    if ledger.raw.is_empty() {
        return Err(invalid(format!("ledgers[{li}].raw"), "must not be empty"));
    }
    if ledger.raw.len() > limits.max_ledger_bytes {
        return Err(too_large(
            format!("ledgers[{li}].raw"),
            ledger.raw.len(),
            limits.max_ledger_bytes,
            "bytes",
        ));
    }
    if ledger.txs.len() > limits.max_txs_per_ledger {
        return Err(too_large(
            format!("ledgers[{li}].transactions"),
            ledger.txs.len(),
            limits.max_txs_per_ledger,
            "transactions",
        ));
    }
    // A cut that names other bytes than its part would store a ledger
    // that never reassembles: refused before anything is written.
    match check_cuts(&ledger.raw, &ledger.cuts, &ledger.txs) {
        Ok(_) => Ok(()),
        Err(DbError::BadCut { cut, reason }) => {
            Err(invalid(format!("ledgers[{li}].cuts[{cut}]"), reason))
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use ledgerstore_db_api::TxInput;

    use super::*;

    fn tx(h: u8) -> TxInput {
        TxInput {
            hash: vec![h; 32],
            envelope: vec![1].into(),
            result: vec![2].into(),
            meta: vec![3].into(),
            alias: None,
        }
    }

    fn ledger(seq: u32, txs: Vec<TxInput>) -> LedgerInput {
        LedgerInput {
            seq,
            close_time: 1,
            raw: vec![9; 8].into(),
            txs,
            cuts: Vec::new(),
        }
    }

    fn err(batch: &[LedgerInput], last: Option<u32>) -> String {
        validate(batch, last, &Limits::default())
            .expect_err("must be refused")
            .to_string()
    }

    #[test]
    fn accepts_any_start_when_empty_and_counts_txs() {
        let b = [ledger(100, vec![tx(1), tx(2)]), ledger(101, vec![])];
        assert_eq!(
            validate(&b, None, &Limits::default()).expect("valid"),
            Plan { skipped: 0, txs: 2 }
        );
    }

    #[test]
    fn skips_ledgers_at_or_below_the_mark() {
        let b = [
            ledger(5, vec![tx(1)]),
            ledger(6, vec![tx(2)]),
            ledger(7, vec![tx(3)]),
        ];
        assert_eq!(
            validate(&b, Some(6), &Limits::default()).expect("valid"),
            Plan { skipped: 2, txs: 1 }
        );
        assert_eq!(
            validate(&b, Some(9), &Limits::default()).expect("valid"),
            Plan { skipped: 3, txs: 0 }
        );
    }

    #[test]
    fn refuses_gaps_naming_the_expected_seq() {
        let b = [ledger(12, vec![])];
        let e = validate(&b, Some(10), &Limits::default()).expect_err("gap");
        assert!(
            matches!(
                e,
                StoreError::Gap {
                    expected: 11,
                    got: 12
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("expected ledger seq 11"));
    }

    #[test]
    fn refuses_malformed_batches_naming_the_field() {
        assert!(err(&[], None).contains("ledgers: must hold at least one ledger"));
        let e = err(&[ledger(1, vec![]), ledger(3, vec![])], None);
        assert!(e.contains("ledgers[1].seq: must be 2"), "{e}");
        let e = err(&[ledger(3, vec![]), ledger(2, vec![])], None);
        assert!(e.contains("ledgers[1].seq: must be 4"), "{e}");
        let mut short = tx(1);
        short.hash.truncate(31);
        let e = err(&[ledger(1, vec![short])], None);
        assert!(
            e.contains("transactions[0].hash: must be 32 bytes, got 31"),
            "{e}"
        );
        let e = err(
            &[ledger(1, vec![tx(4)]), ledger(2, vec![tx(5), tx(4)])],
            None,
        );
        assert!(
            e.contains("ledgers[1].transactions[1].hash: duplicate of ledgers[0].transactions[0]"),
            "{e}"
        );
        let mut empty = tx(1);
        empty.meta.clear();
        let e = err(&[ledger(1, vec![empty])], None);
        assert!(e.contains("transactions[0].meta: must not be empty"), "{e}");
        let mut l = ledger(1, vec![]);
        l.raw.clear();
        assert!(err(&[l], None).contains("ledgers[0].raw: must not be empty"));
        // A cut must hold its part's bytes (raw is 8 × 9; the envelope 1).
        let mut l = ledger(1, vec![tx(1)]);
        l.cuts = vec![ledgerstore_db_api::Cut {
            offset: 2,
            tx: 0,
            part: ledgerstore_db_api::Part::Envelope,
        }];
        let e = err(&[l.clone()], None);
        assert!(
            e.contains("ledgers[0].cuts[0]: the bytes at 2 are not tx 0 envelope"),
            "{e}"
        );
        let mut raw = l.raw.to_vec();
        raw[2] = 1;
        l.raw = raw.into();
        validate(&[l], None, &Limits::default()).expect("a cut holding its part");
    }

    #[test]
    fn enforces_limits() {
        let limits = Limits {
            max_batch_ledgers: 2,
            max_txs_per_ledger: 1,
            max_ledger_bytes: 8,
            max_tx_bytes: 3,
            ..Limits::default()
        };
        let e = validate(
            &[ledger(1, vec![]), ledger(2, vec![]), ledger(3, vec![])],
            None,
            &limits,
        )
        .expect_err("too many ledgers");
        assert!(
            e.to_string().contains("ledgers is 3 ledgers, limit 2"),
            "{e}"
        );
        let e = validate(&[ledger(1, vec![tx(1), tx(2)])], None, &limits).expect_err("txs");
        assert!(matches!(e, StoreError::TooLarge { .. }), "{e}");
        let mut big = ledger(1, vec![]);
        big.raw = vec![0; 9].into();
        assert!(validate(&[big], None, &limits).is_err());
        let mut fat = tx(1);
        fat.meta = vec![0; 2].into();
        let e = validate(&[ledger(1, vec![fat])], None, &limits).expect_err("tx bytes");
        assert!(
            e.to_string()
                .contains("transactions[0] is 4 bytes, limit 3"),
            "{e}"
        );
    }
}
