//! The data-lake benchmarks' fixture goes through ingest: every copy's
//! transactions and fee-bump inner transactions hash uniquely, so a store
//! takes the whole lake (before the fix, copy 1 repeated copy 0's inner
//! hashes and ingest refused it as a duplicate alias), and every hash and
//! alias answers, the first 40 ledgers written in bulk (SST files).

use std::path::{Path, PathBuf};
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_benches::lake_fixture::{FIRST, LakeShape, write_lake};
use ledgerstore_db_api::{Layout, LedgerInput, TxHash};
use ledgerstore_stellar::{Network, ledger_from_xdr};
use ledgerstore_store::{Ledgerstore, StoreOptions};
use stellar_xdr::{LedgerCloseMetaBatch, Limits, ReadXdr, WriteXdr};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("list").flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.to_string_lossy().ends_with(".xdr.zst") {
            out.push(p);
        }
    }
}

#[test]
fn the_lake_fixture_ingests_whole_and_every_hash_and_alias_answers() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let lake = tmp.path().join("lake");
    let shape = LakeShape {
        copies: 3,
        ledgers_per_batch: 4,
        batches_per_partition: 8,
        level: 1,
    };
    let (last, _) = write_lake(&lake, shape).expect("write the lake");
    assert_eq!(last, FIRST + 59);
    let network = Network::parse("pubnet").expect("pubnet");
    let mut paths = Vec::new();
    files(&lake, &mut paths);
    let mut ledgers: Vec<LedgerInput> = Vec::new();
    for p in &paths {
        let plain = zstd::decode_all(&std::fs::read(p).expect("read")[..]).expect("zstd");
        let batch = LedgerCloseMetaBatch::from_xdr(&plain, Limits::none()).expect("xdr");
        for lcm in batch.ledger_close_metas.iter() {
            let bytes = lcm.to_xdr(Limits::none()).expect("encode");
            let at = p.display().to_string();
            ledgers.push(ledger_from_xdr(bytes, &network, &at).expect("extract"));
        }
    }
    ledgers.sort_by_key(|l| l.seq);
    assert_eq!(ledgers.len(), 60);
    let store = Ledgerstore::open(
        &tmp.path().join("data"),
        StoreOptions {
            layout: Some(Layout::Indexed),
            ..StoreOptions::default()
        },
        &Backends::for_tests(),
    )
    .expect("open");
    // The first 40 ledgers in one batch: ~36 MB of raw bodies, past a
    // 32 MiB chunk, so they take the bulk path (SST files written and
    // ingested, not memtables flushed); the rest ten at a time.
    store
        .ingest(&ledgers[..40], Duration::ZERO)
        .expect("ingest");
    let stats = store.stats().expect("stats");
    let bodies = &stats
        .tables
        .iter()
        .find(|t| t.table == "tx_data")
        .expect("tx_data")
        .engine_stats;
    assert!(
        bodies.ingested_bytes > Some(1 << 20),
        "bulk bodies ingested as SST files: {bodies:?}"
    );
    for batch in ledgers[40..].chunks(10) {
        store.ingest(batch, Duration::ZERO).expect("ingest");
    }
    assert_eq!(store.last_ledger(), Some(last));
    let (mut txs, mut aliases) = (0, 0);
    for l in &ledgers {
        for (i, tx) in l.txs.iter().enumerate() {
            let mut keys = vec![&tx.hash];
            keys.extend(tx.alias.as_ref());
            for key in keys {
                let h = TxHash::from_slice(key).expect("32 bytes");
                let rec = store
                    .get_tx(&h)
                    .expect("read")
                    .unwrap_or_else(|| panic!("ledger {} tx {i}: not found", l.seq));
                assert_eq!((rec.ledger_seq, rec.index as usize), (l.seq, i));
            }
            txs += 1;
            aliases += usize::from(tx.alias.is_some());
        }
    }
    assert_eq!(txs, 3 * 5_188);
    assert!(aliases > 0, "the fixture has fee bumps");
}
