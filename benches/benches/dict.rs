//! Trained zstd dictionaries for tx records (`cargo bench --workspace --
//! dict`): the compression ratio and speed of single tx records with and
//! without a dictionary, at zstd-3, on synthetic records and on the real
//! Stellar fixtures in `crates/stellar/testdata/`.
//!
//! Each dataset is split: the dictionary is trained on one part and
//! measured on the other, so no record is compressed with a dictionary
//! that saw it. Prints one table.

use std::hint::black_box;
use std::time::Instant;

use ledgerstore_db_api::{DictSet, Dictionary, LedgerInput, TxRecordRef};
use ledgerstore_stellar::{Network, ReadLimits, decode_file};
use ledgerstore_synth::{Synth, SynthConfig};

const LEVEL: i32 = 3;
const DICT_BYTES: usize = 110 << 10;
const ROUNDS: usize = 20;

/// A name, the records to train on, and the records to measure.
type Dataset = (String, Vec<Vec<u8>>, Vec<Vec<u8>>);

fn records(ledgers: &[LedgerInput]) -> Vec<Vec<u8>> {
    ledgers
        .iter()
        .flat_map(|l| {
            l.txs
                .iter()
                .enumerate()
                .map(move |(i, t)| TxRecordRef::of(l, i as u32, t).encode())
        })
        .collect()
}

fn fixture(name: &str, network: &str) -> Vec<LedgerInput> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/stellar/testdata")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let net = Network::parse(network).expect("network");
    decode_file(&bytes, name, &net, ReadLimits::default()).expect("decode")
}

/// (ratio, compress MB/s, decompress MB/s) of `test` with `dicts`.
fn measure(dicts: &DictSet, test: &[Vec<u8>]) -> (f64, f64, f64) {
    let raw: usize = test.iter().map(Vec::len).sum();
    let frames: Vec<(u32, Vec<u8>)> = test
        .iter()
        .map(|r| dicts.compress(r, LEVEL).expect("compress"))
        .collect();
    let stored: usize = frames.iter().map(|f| f.1.len()).sum();
    let t = Instant::now();
    for _ in 0..ROUNDS {
        for r in test {
            black_box(dicts.compress(r, LEVEL).expect("compress"));
        }
    }
    let c = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for _ in 0..ROUNDS {
        for (v, f) in &frames {
            black_box(dicts.decompress(*v, f).expect("decompress"));
        }
    }
    let d = t.elapsed().as_secs_f64();
    let mb = (raw * ROUNDS) as f64 / 1e6;
    (raw as f64 / stored as f64, mb / c, mb / d)
}

fn main() {
    if !ledgerstore_benches::selected_by_filters(&["dict/tx_record".into()]) {
        return;
    }
    let synth = Synth::new(SynthConfig::default());
    let mut datasets: Vec<Dataset> = vec![(
        "synthetic (ledger 2 trains, ledger 3 measured)".into(),
        records(&[synth.ledger(2)]),
        records(&[synth.ledger(3)]),
    )];
    for (name, net) in [
        ("FCD285FF--53312000.xdr.zstd", "pubnet"),
        ("load-test-ledgers-v23-standalone.xdr.zstd", "standalone"),
    ] {
        let recs = records(&fixture(name, net));
        let (train, test): (Vec<_>, Vec<_>) =
            recs.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
        datasets.push((
            format!("{name} (even txs train, odd measured)"),
            train.into_iter().map(|x| x.1).collect(),
            test.into_iter().map(|x| x.1).collect(),
        ));
    }
    println!(
        "tx records one by one at zstd-{LEVEL}, dictionary ≤ {} KiB:\n",
        DICT_BYTES >> 10
    );
    println!(
        "| data | train / measured records | mean record (B) | ratio plain | ratio dict | compress MB/s plain / dict | decompress MB/s plain / dict | dict (B) | train (s) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, train, test) in datasets {
        let plain = DictSet::default();
        let t = Instant::now();
        let d = Dictionary::train(1, &train, DICT_BYTES, LEVEL).expect("train");
        let train_s = t.elapsed().as_secs_f64();
        let dict_len = d.bytes().len();
        let mut with = DictSet::default();
        with.insert(d);
        let (rp, cp, dp) = measure(&plain, &test);
        let (rd, cd, dd) = measure(&with, &test);
        let mean = test.iter().map(Vec::len).sum::<usize>() / test.len().max(1);
        println!(
            "| {name} | {} / {} | {mean} | {rp:.2} | {rd:.2} | {cp:.0} / {cd:.0} | {dp:.0} / {dd:.0} | {dict_len} | {train_s:.2} |",
            train.len(),
            test.len()
        );
    }
}
