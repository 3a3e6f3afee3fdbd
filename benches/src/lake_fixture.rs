//! A SEP-54 data lake of real pubnet ledgers, as large as asked: the
//! fixture of `scripts/bench-lake.sh` and `scripts/bench-follow.sh`
//! (binary `lake-fixture`).
//!
//! The 20 consecutive pubnet ledgers of the fixture (5,188 txs) are written
//! `copies` times, ledger `i` of copy `c` as seq 63092982 + 20c + i. Copy c
//! raises every envelope's fee by c stroops (a fee bump's outer fee and its
//! inner transaction's fee both), and puts the new hashes, under the pubnet
//! passphrase, in the matching result pair (a fee bump's inner result pair
//! too), so every copy's transactions and fee-bump inner transactions hash
//! uniquely and the extractor's cross-check still holds; sizes and shapes
//! stay real. The public SEP-54 lake's objects are zstd level 19 (a real
//! object recompresses at level 19 to within 0.01% of its size), so byte
//! comparisons with the lake need [`LAKE_LEVEL`].

use std::collections::HashMap;
use std::path::Path;

use ledgerstore_stellar::Network;
use stellar_xdr::{
    FeeBumpTransactionInnerTx, GeneralizedTransactionSet, Hash, LedgerCloseMeta,
    LedgerCloseMetaBatch, Limits, ReadXdr, TransactionEnvelope, TransactionPhase,
    TransactionResultResult, TxSetComponent, WriteXdr,
};

/// The first ledger written.
pub const FIRST: u32 = 63_092_982;
/// The public lake's zstd level.
pub const LAKE_LEVEL: i32 = 19;

/// The fixture's errors (a bench tool's: boxed).
pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// How to write the lake.
#[derive(Debug, Clone, Copy)]
pub struct LakeShape {
    /// Times the 20 ledgers are written.
    pub copies: u32,
    /// `ledgersPerBatch`.
    pub ledgers_per_batch: u32,
    /// `batchesPerPartition`.
    pub batches_per_partition: u32,
    /// zstd level of each file.
    pub level: i32,
}

/// The 20 real ledgers the lake repeats.
pub fn base_ledgers() -> Res<Vec<LedgerCloseMeta>> {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/stellar/testdata/FC3D4709--63092982-63093001.xdr.zst");
    let plain = zstd::decode_all(&std::fs::read(fixture)?[..])?;
    Ok(LedgerCloseMetaBatch::from_xdr(&plain, Limits::none())?
        .ledger_close_metas
        .into())
}

/// Writes the lake under `out`; returns its last ledger and its bytes.
pub fn write_lake(out: &Path, shape: LakeShape) -> Res<(u32, u64)> {
    let LakeShape {
        copies,
        ledgers_per_batch: lpb,
        batches_per_partition: bpp,
        level,
    } = shape;
    if lpb == 0 || bpp == 0 || copies == 0 {
        return Err(
            "COPIES, LEDGERS_PER_BATCH and BATCHES_PER_PARTITION must be at least 1".into(),
        );
    }
    if !(1..=22).contains(&level) {
        return Err(format!("ZSTD_LEVEL is {level}; expected 1 to 22").into());
    }
    let base = base_ledgers()?;
    let network = Network::parse("pubnet")?;
    std::fs::create_dir_all(out)?;
    std::fs::write(
        out.join(".config.json"),
        format!(
            r#"{{"networkPassphrase":"{}","version":"1.0","compression":"zstd","ledgersPerBatch":{lpb},"batchesPerPartition":{bpp}}}"#,
            network.passphrase()
        ),
    )?;
    let mut pending: Vec<LedgerCloseMeta> = Vec::new();
    let mut bytes = 0u64;
    let last = FIRST + copies * base.len() as u32 - 1;
    for c in 0..copies {
        for (i, lcm) in base.iter().enumerate() {
            let seq = FIRST + c * base.len() as u32 + i as u32;
            let mut lcm = lcm.clone();
            rewrite(&mut lcm, seq, c, network.id())?;
            pending.push(lcm);
            if (seq + 1).is_multiple_of(lpb) || seq == last {
                bytes += write_batch(out, std::mem::take(&mut pending), &shape)?;
            }
        }
    }
    Ok((last, bytes))
}

fn rewrite(lcm: &mut LedgerCloseMeta, seq: u32, copy: u32, network_id: [u8; 32]) -> Res<()> {
    let LedgerCloseMeta::V2(m) = lcm else {
        return Err("the fixture's ledgers are LedgerCloseMeta V2".into());
    };
    m.ledger_header.header.ledger_seq = seq;
    let mut renamed: HashMap<[u8; 32], [u8; 32]> = HashMap::new();
    let GeneralizedTransactionSet::V1(set) = &mut m.tx_set;
    let mut bump = |env: &mut TransactionEnvelope| -> Res<()> {
        let old = env.hash(network_id)?;
        match env {
            TransactionEnvelope::TxV0(e) => e.tx.fee += copy,
            TransactionEnvelope::Tx(e) => e.tx.fee += copy,
            TransactionEnvelope::TxFeeBump(e) => {
                e.tx.fee += i64::from(copy);
                let old_inner = e.tx.inner_tx.hash(network_id)?;
                let FeeBumpTransactionInnerTx::Tx(inner) = &mut e.tx.inner_tx;
                inner.tx.fee += copy;
                renamed.insert(old_inner, e.tx.inner_tx.hash(network_id)?);
            }
        }
        renamed.insert(old, env.hash(network_id)?);
        Ok(())
    };
    for phase in set.phases.iter_mut() {
        match phase {
            TransactionPhase::V0(components) => {
                for c in components.iter_mut() {
                    let TxSetComponent::TxsetCompTxsMaybeDiscountedFee(c) = c;
                    for env in c.txs.iter_mut() {
                        bump(env)?;
                    }
                }
            }
            TransactionPhase::V1(parallel) => {
                for stage in parallel.execution_stages.iter_mut() {
                    for cluster in stage.0.iter_mut() {
                        for env in cluster.0.iter_mut() {
                            bump(env)?;
                        }
                    }
                }
            }
        }
    }
    for p in m.tx_processing.iter_mut() {
        let new = renamed
            .get(&p.result.transaction_hash.0)
            .ok_or("a result pair whose hash no envelope has")?;
        p.result.transaction_hash = Hash(*new);
        if let TransactionResultResult::TxFeeBumpInnerSuccess(inner)
        | TransactionResultResult::TxFeeBumpInnerFailed(inner) = &mut p.result.result.result
        {
            let new = renamed
                .get(&inner.transaction_hash.0)
                .ok_or("a fee bump's inner result pair whose hash no inner tx has")?;
            inner.transaction_hash = Hash(*new);
        }
    }
    Ok(())
}

fn write_batch(out: &Path, metas: Vec<LedgerCloseMeta>, shape: &LakeShape) -> Res<u64> {
    let (lpb, bpp) = (shape.ledgers_per_batch, shape.batches_per_partition);
    let seq_of = |m: &LedgerCloseMeta| match m {
        LedgerCloseMeta::V0(m) => m.ledger_header.header.ledger_seq,
        LedgerCloseMeta::V1(m) => m.ledger_header.header.ledger_seq,
        LedgerCloseMeta::V2(m) => m.ledger_header.header.ledger_seq,
    };
    let (first, last) = match (metas.first(), metas.last()) {
        (Some(a), Some(b)) => (seq_of(a), seq_of(b)),
        _ => return Ok(0),
    };
    let start = first / lpb * lpb;
    let end = start + lpb - 1;
    let mut key = String::new();
    if bpp > 1 {
        let size = lpb * bpp;
        let p = first / size * size;
        key.push_str(&format!("{:08X}--{p}-{}/", u32::MAX - p, p + size - 1));
    }
    key.push_str(&format!("{:08X}--{start}", u32::MAX - start));
    if end != start {
        key.push_str(&format!("-{end}"));
    }
    key.push_str(".xdr.zst");
    let batch = LedgerCloseMetaBatch {
        start_sequence: first,
        end_sequence: last,
        ledger_close_metas: metas.try_into()?,
    };
    let z = zstd::encode_all(&batch.to_xdr(Limits::none())?[..], shape.level)?;
    let path = out.join(key);
    std::fs::create_dir_all(path.parent().ok_or("no parent")?)?;
    std::fs::write(&path, &z)?;
    Ok(z.len() as u64)
}
