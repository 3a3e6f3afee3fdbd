//! zstd codec of the stored records (`cargo bench --workspace -- codec/`): encode +
//! compress and decompress + decode of a synthetic ~5 KB tx record and a
//! ~1.4 MB ledger record, at the levels an operator would choose between.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ledgerstore_db_api::{
    Compress, Decompress, LedgerRecord, LedgerRecordRef, TxRecord, TxRecordRef,
};
use ledgerstore_synth::{Synth, SynthConfig};

fn codec(c: &mut Criterion) {
    let ledger = Synth::new(SynthConfig::default()).ledger(2);
    let tx = &ledger.txs[0];
    let rec = TxRecordRef {
        ledger_seq: ledger.seq,
        close_time: ledger.close_time,
        index: 0,
        envelope: &tx.envelope,
        result: &tx.result,
        meta: &tx.meta,
    };
    let hashes: Vec<Vec<u8>> = ledger.txs.iter().map(|t| t.hash.clone()).collect();
    let lrec = LedgerRecordRef {
        seq: ledger.seq,
        close_time: ledger.close_time,
        tx_hashes: &hashes,
        raw: &ledger.raw,
    };

    let mut g = c.benchmark_group("codec/tx_record");
    g.throughput(Throughput::Bytes(rec.raw_len() as u64));
    for level in [1, 3, 9] {
        g.bench_function(format!("compress/zstd-{level}"), |b| {
            b.iter(|| black_box(rec.compress(level).expect("compress")))
        });
    }
    let stored = rec.compress(3).expect("compress");
    g.bench_function("decompress", |b| {
        b.iter(|| black_box(TxRecord::decompress(&stored).expect("decompress")))
    });
    g.finish();

    let mut g = c.benchmark_group("codec/ledger_record");
    g.throughput(Throughput::Bytes(lrec.raw_len() as u64));
    g.sample_size(20);
    for level in [1, 3] {
        g.bench_function(format!("compress/zstd-{level}"), |b| {
            b.iter(|| black_box(lrec.compress(level).expect("compress")))
        });
    }
    let stored = lrec.compress(3).expect("compress");
    g.bench_function("decompress", |b| {
        b.iter(|| black_box(LedgerRecord::decompress(&stored).expect("decompress")))
    });
    g.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
