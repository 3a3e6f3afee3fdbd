//! Reads on a prebuilt store per layout (`cargo bench --workspace -- lookups/`):
//! point lookups by hash (hit and miss), the tx index alone, batch gets of
//! 100 hashes, and ledger reads. Fixtures are built once under
//! `target/tmp/bench-fixtures/` (size: `BENCH_FIXTURE_LEDGERS` x
//! `BENCH_FIXTURE_TX`, default 800 x 250 = 200K tx) and reused.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ledgerstore_benches::fixture::{Fixture, FixtureShape, fixture};
use ledgerstore_benches::{LAYOUTS, selected_by_filters};

const BATCH: usize = 100;

fn bench_layout(c: &mut Criterion, f: &Fixture) {
    let name = f.layout.name();
    assert!(
        !f.hits.is_empty(),
        "fixture of {name} has no lookup targets"
    );
    let mut g = c.benchmark_group(format!("lookups/{name}"));
    g.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    g.bench_function("get_tx/hit", |b| {
        b.iter(|| {
            i = (i + 1) % f.hits.len();
            black_box(f.store.get_tx(&f.hits[i]).expect("read").expect("stored"))
        })
    });
    let mut i = 0usize;
    g.bench_function("get_tx/miss", |b| {
        b.iter(|| {
            i = (i + 1) % f.misses.len();
            let got = f.store.get_tx(&f.misses[i]).expect("read");
            assert!(got.is_none(), "a random hash was found");
        })
    });
    let mut i = 0usize;
    g.bench_function("get_tx_ledger/hit", |b| {
        b.iter(|| {
            i = (i + 1) % f.hits.len();
            black_box(
                f.store
                    .get_tx_ledger(&f.hits[i])
                    .expect("read")
                    .expect("stored"),
            )
        })
    });
    g.throughput(Throughput::Elements(BATCH as u64));
    let chunks: Vec<&[_]> = f.hits.chunks_exact(BATCH).collect();
    if !chunks.is_empty() {
        let mut i = 0usize;
        g.bench_function(format!("batch_get_txs/{BATCH}"), |b| {
            b.iter(|| {
                i = (i + 1) % chunks.len();
                let got = f.store.batch_get_txs(chunks[i]).expect("read");
                assert!(got.iter().all(Option::is_some), "a stored tx is missing");
                black_box(got)
            })
        });
    }
    g.throughput(Throughput::Elements(1));
    let (first, last) = (*f.ledgers.start(), *f.ledgers.end());
    let mut seq = first;
    g.bench_function("get_ledger", |b| {
        b.iter(|| {
            // A stride that visits every ledger in a scattered order.
            seq = first + (seq - first + 7919) % (last - first + 1);
            black_box(f.store.get_ledger(seq).expect("read").expect("stored"))
        })
    });
    g.finish();
}

fn lookups(c: &mut Criterion) {
    let shape = FixtureShape::from_env().unwrap_or_else(|e| panic!("{e}"));
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-fixtures");
    eprintln!(
        "lookups on fixtures of {} ledgers x {} tx ({} tx) under {}",
        shape.ledgers,
        shape.tx_per_ledger,
        shape.txs(),
        root.display()
    );
    for layout in LAYOUTS {
        // Build or open a fixture only when a filter (`cargo bench -- get_tx`)
        // selects one of its benches.
        let prefix = format!("lookups/{}", layout.name());
        if !selected_by_filters(&ids(&prefix)) {
            continue;
        }
        let f = fixture(&root, layout, &shape).unwrap_or_else(|e| panic!("{e}"));
        bench_layout(c, &f);
    }
}

/// The ids of `prefix`'s benches.
fn ids(prefix: &str) -> Vec<String> {
    [
        "get_tx/hit",
        "get_tx/miss",
        "get_tx_ledger/hit",
        "batch_get_txs/100",
        "get_ledger",
    ]
    .iter()
    .map(|n| format!("{prefix}/{n}"))
    .collect()
}

criterion_group!(benches, lookups);
criterion_main!(benches);
