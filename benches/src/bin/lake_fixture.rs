//! Writes a SEP-54 data lake of real pubnet ledgers, as large as asked, for
//! the data-lake benchmark (`scripts/bench-lake.sh`).
//!
//! ```text
//! lake-fixture OUT COPIES [LEDGERS_PER_BATCH] [BATCHES_PER_PARTITION]
//! ```
//!
//! The 20 consecutive pubnet ledgers of the fixture (5,188 txs) are written
//! COPIES times, ledger `i` of copy `c` as seq 63092982 + 20c + i. Copy c
//! raises every envelope's fee (the outer fee of a fee bump) by c stroops
//! and puts the new hash, under the pubnet passphrase, in the matching
//! result pair, so every copy's transactions hash uniquely and the
//! extractor's cross-check still holds; sizes and shapes stay real. Files
//! are zstd level 3, as Galexie writes them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ledgerstore_stellar::Network;
use stellar_xdr::{
    GeneralizedTransactionSet, Hash, LedgerCloseMeta, LedgerCloseMetaBatch, Limits, ReadXdr,
    TransactionEnvelope, TransactionPhase, TxSetComponent, WriteXdr,
};

const FIRST: u32 = 63_092_982;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err(
            "usage: lake-fixture OUT COPIES [LEDGERS_PER_BATCH] [BATCHES_PER_PARTITION]".into(),
        );
    }
    let out = PathBuf::from(&args[1]);
    let copies: u32 = args[2].parse()?;
    let lpb: u32 = args.get(3).map_or(Ok(1), |s| s.parse())?;
    let bpp: u32 = args.get(4).map_or(Ok(64_000), |s| s.parse())?;
    if lpb == 0 || bpp == 0 || copies == 0 {
        return Err(
            "COPIES, LEDGERS_PER_BATCH and BATCHES_PER_PARTITION must be at least 1".into(),
        );
    }
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/stellar/testdata/FC3D4709--63092982-63093001.xdr.zst");
    let plain = zstd::decode_all(&std::fs::read(fixture)?[..])?;
    let base = LedgerCloseMetaBatch::from_xdr(&plain, Limits::none())?.ledger_close_metas;
    let network = Network::parse("pubnet")?;
    std::fs::create_dir_all(&out)?;
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
                bytes += write_batch(&out, std::mem::take(&mut pending), lpb, bpp)?;
            }
        }
    }
    println!(
        "lake {}: ledgers {FIRST}..={last}, {:.1} MB",
        out.display(),
        bytes as f64 / 1e6
    );
    Ok(())
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
            TransactionEnvelope::TxFeeBump(e) => e.tx.fee += i64::from(copy),
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
    }
    Ok(())
}

fn write_batch(out: &Path, metas: Vec<LedgerCloseMeta>, lpb: u32, bpp: u32) -> Res<u64> {
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
    let z = zstd::encode_all(&batch.to_xdr(Limits::none())?[..], 3)?;
    let path = out.join(key);
    std::fs::create_dir_all(path.parent().ok_or("no parent")?)?;
    std::fs::write(&path, &z)?;
    Ok(z.len() as u64)
}
