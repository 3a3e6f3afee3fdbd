//! The `batch` target: the batch validator every write goes through
//! (`ledgerstore_store::validate`), against a reference written from its
//! rules alone. The bytes are drawn into a batch, the store's mark and the
//! limits with `arbitrary`, over small alphabets so that duplicates, gaps,
//! empty fields and limits are hit often.

use std::collections::HashSet;

use arbitrary::{Result, Unstructured};
use ledgerstore_db_api::{LedgerInput, TxInput};
use ledgerstore_store::Limits;
use ledgerstore_store::validate::validate;

/// One drawn case.
#[derive(Debug)]
pub struct Case {
    /// The batch.
    pub batch: Vec<LedgerInput>,
    /// The store's last ledger (`None`: empty).
    pub last: Option<u32>,
    /// The limits.
    pub limits: Limits,
}

/// Seqs near the edges of `u32`, where `seq + 1` and `mark + 1` overflow.
const BASES: [u32; 5] = [0, 1, 1_000, u32::MAX - 4, u32::MAX];

impl Case {
    /// Draws a case from `u`.
    pub fn draw(u: &mut Unstructured<'_>) -> Result<Self> {
        let limits = Limits {
            max_batch_ledgers: u.int_in_range(1..=8)?,
            max_txs_per_ledger: u.int_in_range(0..=4)?,
            max_ledger_bytes: u.int_in_range(1..=6)?,
            max_tx_bytes: u.int_in_range(3..=9)?,
            min_free_disk_bytes: 0,
        };
        let base = *u.choose(&BASES)?;
        let last = if u.arbitrary()? {
            Some(base.wrapping_add(u.int_in_range(0..=6)?))
        } else {
            None
        };
        let mut seq = base.wrapping_add(u.int_in_range(0..=8)?);
        let mut batch = Vec::new();
        for i in 0..u.int_in_range(0..=9)? {
            if i > 0 {
                // Mostly the next ledger; sometimes a gap, a repeat or a wrap.
                seq = if u.ratio(1, 6)? {
                    seq.wrapping_add(u.int_in_range(0..=3u32)?.wrapping_sub(1))
                } else {
                    seq.wrapping_add(1)
                };
            }
            let mut txs = Vec::new();
            for _ in 0..u.int_in_range(0..=5)? {
                txs.push(draw_tx(u)?);
            }
            batch.push(LedgerInput {
                seq,
                close_time: u.arbitrary()?,
                raw: vec![7; u.int_in_range(0..=7)?].into(),
                txs,
                cuts: Vec::new(),
            });
        }
        Ok(Self {
            batch,
            last,
            limits,
        })
    }
}

fn draw_tx(u: &mut Unstructured<'_>) -> Result<TxInput> {
    let len = if u.ratio(1, 8)? {
        u.int_in_range(0..=33)?
    } else {
        32
    };
    // Six hash values in all, so duplicates are common.
    let hash = vec![u.int_in_range(0..=5)?; len];
    let mut body = || -> Result<Vec<u8>> { Ok(vec![1; u.int_in_range(0..=3)?]) };
    Ok(TxInput {
        hash,
        envelope: body()?.into(),
        result: body()?.into(),
        meta: body()?.into(),
        alias: None,
    })
}

/// The rules (see `validate`'s module docs), written independently:
/// `Some((skipped, txs))` for a batch the store must accept.
pub fn reference(case: &Case) -> Option<(usize, usize)> {
    let Case {
        batch,
        last,
        limits,
    } = case;
    if batch.is_empty() || batch.len() > limits.max_batch_ledgers {
        return None;
    }
    // Contiguous: each seq is the previous one plus one, without wrapping.
    let contiguous = batch
        .iter()
        .zip(batch.iter().skip(1))
        .all(|(a, b)| u64::from(a.seq) + 1 == u64::from(b.seq));
    if !contiguous {
        return None;
    }
    let skipped = batch
        .iter()
        .filter(|l| last.is_some_and(|m| l.seq <= m))
        .count();
    let new = &batch[skipped..];
    if let (Some(m), Some(first)) = (last, new.first())
        && u64::from(first.seq) != u64::from(*m) + 1
    {
        return None;
    }
    let mut seen = HashSet::new();
    let mut txs = 0;
    for l in new {
        if l.raw.is_empty()
            || l.raw.len() > limits.max_ledger_bytes
            || l.txs.len() > limits.max_txs_per_ledger
        {
            return None;
        }
        for tx in &l.txs {
            let bodies = [&tx.envelope, &tx.result, &tx.meta];
            if tx.hash.len() != 32
                || bodies.iter().any(|b| b.is_empty())
                || bodies.iter().map(|b| b.len()).sum::<usize>() > limits.max_tx_bytes
                || !seen.insert(tx.hash.clone())
            {
                return None;
            }
        }
        txs += l.txs.len();
    }
    Some((skipped, txs))
}

/// Draws a case and checks the validator against [`reference`]; a
/// refusal must name what it refused.
pub fn run(data: &[u8]) {
    let Ok(case) = Case::draw(&mut Unstructured::new(data)) else {
        return;
    };
    let got = validate(&case.batch, case.last, &case.limits);
    let want = reference(&case);
    match (&got, want) {
        (Ok(plan), Some((skipped, txs))) => {
            assert_eq!((plan.skipped, plan.txs), (skipped, txs), "plan of {case:?}");
        }
        (Err(e), None) => {
            let msg = e.to_string();
            assert!(
                msg.contains("ledger") || msg.contains("gap"),
                "a refusal that names nothing: {msg}"
            );
        }
        _ => panic!("validator {got:?}, reference {want:?}, for {case:?}"),
    }
}
