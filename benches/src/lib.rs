//! Shared code of ledgerstore's benches (`cargo bench`):
//!
//! - [`knobs`]: sizes and switches read from the environment, with errors
//!   that name the variable and the expected value;
//! - [`fixture`]: prebuilt stores for the criterion lookup benches, built
//!   once under the target dir and reused by later runs;
//! - [`lake_fixture`]: a SEP-54 lake of real pubnet ledgers, as large as
//!   asked (the data-lake benchmarks' input);
//! - [`study`]: the degradation study, which ingests the same synthetic
//!   ledgers batch after batch into every layout and reports per-batch,
//!   per-store I/O like the field study's logs, plus a CSV and a PNG plot.
//!
//! The bench targets themselves live in `benches/benches/`.

pub mod error;
pub mod fixture;
pub mod knobs;
pub mod lake_fixture;
pub mod study;

pub use error::{BenchError, BenchResult};

use ledgerstore_backends::Backends;
use ledgerstore_db_api::Layout;
use ledgerstore_store::{Ledgerstore, Limits, StoreOptions};
use std::path::Path;

/// Opens (creating if needed) a store of `layout` at `path` with the
/// production engine options, sized for bench batches.
pub fn open_store(path: &Path, layout: Layout) -> BenchResult<Ledgerstore> {
    let range = knobs::count("STUDY_SEGMENT_LEDGERS", 2_000, 1)?;
    let range = u32::try_from(range).map_err(|_| BenchError::Knob {
        name: "STUDY_SEGMENT_LEDGERS",
        value: range.to_string(),
        expected: "a whole number below 2^32",
    })?;
    open_store_with(
        path,
        layout,
        ledgerstore_store::IndexedOptions {
            range_ledgers: range,
            ..Default::default()
        },
    )
}

/// [`open_store`] with the `indexed` layout's segment options given.
pub fn open_store_with(
    path: &Path,
    layout: Layout,
    indexed: ledgerstore_store::IndexedOptions,
) -> BenchResult<Ledgerstore> {
    let opts = StoreOptions {
        layout: Some(layout),
        create: true,
        limits: Limits {
            max_batch_ledgers: 100_000,
            ..Limits::default()
        },
        indexed,
        ..StoreOptions::default()
    };
    Ok(Ledgerstore::open(path, opts, &Backends::default())?)
}

/// True unless the bench's command line holds filters
/// (`cargo bench --workspace -- FILTER`) and none is a substring of any of
/// `ids`, the bench ids a target would run. Lets a target skip its setup
/// (fixtures, stores) when a filter selects another target.
pub fn selected_by_filters(ids: &[String]) -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    filters.is_empty()
        || filters
            .iter()
            .any(|f| ids.iter().any(|id| id.contains(f.as_str())))
}

/// All layouts the benches compare, in report order.
pub const LAYOUTS: [Layout; 4] = Layout::ALL;
