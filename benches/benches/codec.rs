//! zstd codec of the stored records (`cargo bench --workspace -- codec/`): encode +
//! compress and decompress + decode of a synthetic ~5 KB tx record and a
//! ~1.4 MB ledger record, at the levels an operator would choose between.
//! `codec/stellar`: decoding and extracting the real pubnet ledger 53312000
//! (372 KB of XDR, 163 txs), which is what the source side of a Stellar
//! ingest costs per ledger.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ledgerstore_db_api::{
    Compress, Decompress, LedgerBytes, LedgerRecord, LedgerRecordRef, TxRecord, TxRecordRef,
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
        aliases: &[],
        bytes: LedgerBytes::Whole(&ledger.raw),
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
    stellar(c);
}

fn stellar(c: &mut Criterion) {
    use ledgerstore_stellar::{Network, ReadLimits, decode_file, file::maybe_decompress};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/stellar/testdata/FCD285FF--53312000.xdr.zstd");
    let file = std::fs::read(path).expect("fixture");
    let plain = maybe_decompress(&file, "f", 1 << 30).expect("zstd");
    let net = Network::parse("pubnet").expect("net");
    let mut g = c.benchmark_group("codec/stellar");
    g.throughput(Throughput::Bytes(plain.len() as u64));
    g.sample_size(30);
    g.bench_function("extract_pubnet_53312000/xdr", |b| {
        b.iter(|| black_box(decode_file(&plain, "f", &net, ReadLimits::default()).expect("x")))
    });
    g.bench_function("extract_pubnet_53312000/zstd_file", |b| {
        b.iter(|| black_box(decode_file(&file, "f", &net, ReadLimits::default()).expect("x")))
    });
    g.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
