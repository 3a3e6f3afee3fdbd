//! Ingest of one batch per layout (`cargo bench --workspace -- ingest/`): validate,
//! compress, write and commit `BENCH_INGEST_LEDGERS` (default 10) ledgers
//! of 250 tx into a store that starts empty and grows by one batch per
//! iteration. Ledgers are generated outside the timed section.

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use ledgerstore_benches::fixture::FIRST_LEDGER;
use ledgerstore_benches::{LAYOUTS, knobs, open_store};
use ledgerstore_synth::{Synth, SynthConfig};

fn ingest(c: &mut Criterion) {
    let ledgers = knobs::count("BENCH_INGEST_LEDGERS", 10, 1).unwrap_or_else(|e| panic!("{e}"));
    let ledgers = u32::try_from(ledgers).unwrap_or_else(|e| panic!("{e}"));
    let synth = Synth::new(SynthConfig::default());
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-ingest");
    let mut g = c.benchmark_group("ingest");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(20))
        .throughput(Throughput::Elements(
            u64::from(ledgers) * u64::from(synth.config().tx_per_ledger),
        ));
    for layout in LAYOUTS {
        let id = format!("ingest/{ledgers}_ledgers/{}", layout.name());
        if !ledgerstore_benches::selected_by_filters(&[id]) {
            continue;
        }
        let dir = root.join(layout.name());
        if dir.exists() {
            std::fs::remove_dir_all(&dir).expect("remove the previous run's store");
        }
        let store = open_store(&dir, layout).unwrap_or_else(|e| panic!("{e}"));
        let mut next = FIRST_LEDGER;
        g.bench_function(
            BenchmarkId::new(format!("{ledgers}_ledgers"), layout.name()),
            |b| {
                b.iter_custom(|iters| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        let batch = synth.batch(next, ledgers);
                        next += ledgers;
                        let t = Instant::now();
                        store.ingest(&batch, Duration::ZERO).expect("ingest");
                        spent += t.elapsed();
                    }
                    spent
                })
            },
        );
        for t in ledgerstore_db_api::TableId::ALL {
            store.table(t).wait_for_background_work().expect("drain");
        }
        drop(store);
        std::fs::remove_dir_all(&dir).expect("remove the bench store");
    }
    g.finish();
}

criterion_group!(benches, ingest);
criterion_main!(benches);
