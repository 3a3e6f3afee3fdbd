//! The tiered store: three tables routed to engines by a [`Layout`], a
//! durable high-water mark, validated and timed batch ingest, and reads.
//!
//! The store depends only on `ledgerstore-db-api`; the engines are handed
//! in through an [`EngineFactory`] by the binary.
//!
//! # Invariants
//! - A batch is validated whole before anything is written.
//! - Within a batch the `ledgers` table is durable before any write to the
//!   hash tables can become durable; the mark is written last. So every
//!   hash-table entry above the mark is listed by a durable ledger record
//!   above the mark, and [`Ledgerstore::open`] can roll it back.
//! - No read returns a ledger or transaction above the mark.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use ledgerstore_db_api::{
    Access, BodyForm, EngineFactory, KvStore, Layout, TableId, ValueCompression,
};

mod backup;
mod check;
pub mod datadir;
mod deadline;
pub mod error;
pub mod failpoint;
mod indexed;
mod ingest;
mod policy;
mod read;
pub mod reader;
pub mod report;
mod rollback;
mod stats;
pub mod validate;

pub use backup::{BACKUP_INFO, BackupInfo, read_backup_info, restore};
pub use check::{CheckReport, MAX_LISTED_PROBLEMS};
pub use datadir::{DataDir, Forms, Manifest, MarkState, TableTotals};
pub use deadline::{read_deadline, with_read_deadline};
pub use error::{StoreError, StoreResult};
pub use indexed::{
    ClosedRanges, ClosedSegment, DEFAULT_BLOCK_BYTES, DEFAULT_BLOCK_DICT_BYTES, DamagedList,
    DictOptions, DictStats, EvictStep, Evicted, ExplicitPolicy, IndexedOptions, LedgerParts,
    MergePolicy, OldestLedger, SegmentStats,
};
pub use ingest::IngestOutcome;
pub use ledgerstore_segment::SegmentInfo;
pub use read::LedgerRange;
pub use reader::{LedgerHead, Reader, ReaderStatus, ReplicaStatus, ledger_head_iter, ledger_iter};
pub use report::{BatchReport, JsonLinesSink, StoreTiming};
pub use stats::{StoreStats, TableStats};
pub use validate::Limits;

// The offline repair and the wait for a writer's repairs (layout indexed).
pub use indexed::segments::{
    RepairEvent, RepairFailure, RepairReport, RepairWait, RepairWaitOutcome, RepairedRange,
    RewrittenList,
};

/// Keys per read transaction in the store's own multi-key point reads (the
/// duplicate-hash check, rollback at open): each chunk is its own
/// short transaction, so on a cold page cache (one random read per key)
/// a chunk stays far inside `mdbx.max_read_txn_ms` even on a slow disk.
pub(crate) const MAINTENANCE_READ_KEYS: usize = 1024;

/// How to open a store.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Layout for a new dir; for an existing dir, the layout it must have
    /// (None: whatever it was created with).
    pub layout: Option<Layout>,
    /// Create the dir if it does not exist.
    pub create: bool,
    /// zstd level for compressed tables.
    pub compression_level: i32,
    /// Batch limits.
    pub limits: Limits,
    /// Where to append batch reports as JSON lines (None: nowhere).
    pub report_jsonl: Option<PathBuf>,
    /// Segment ranges and dictionaries of the `indexed` layout.
    pub indexed: IndexedOptions,
    /// An offline reader (`stats`, `get`, `check`, an offline `backup`):
    /// opening it changes none of the dir's data (an offline backup's
    /// engines are read-write, so RocksDB writes its own MANIFEST, OPTIONS
    /// and LOG, and replays a WAL a crash left). It builds no segments, does
    /// not roll back what an interrupted batch left above the mark (the
    /// mark hides it from reads, and the next writer's open removes it),
    /// does not finish an interrupted segment drop, and refuses `ingest`.
    pub offline: bool,
    /// How the engines open their tables. [`Access::ReadOnly`] (for
    /// `stats`, `get`, `check`) changes no byte of any table's data files;
    /// it needs `offline`. An offline backup keeps read-write engines,
    /// because a RocksDB checkpoint needs them.
    pub engine_access: Access,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            layout: None,
            create: true,
            compression_level: 3,
            limits: Limits::default(),
            report_jsonl: None,
            indexed: IndexedOptions::default(),
            offline: false,
            engine_access: Access::ReadWrite,
        }
    }
}

/// The tiered store.
pub struct Ledgerstore {
    dir: DataDir,
    layout: Layout,
    ledgers: Arc<dyn KvStore>,
    tx_data: Box<dyn KvStore>,
    /// Shared with the segment builder (layout `indexed`).
    tx_index: Arc<dyn KvStore>,
    /// Segments and dictionaries (layout `indexed` only).
    indexed: Option<indexed::IndexedTier>,
    mark: RwLock<MarkState>,
    /// `last + 1` of the mark, 0 while empty: the read path's visibility test.
    visible_end: AtomicU64,
    /// Serializes ingest; says what must happen before the next batch.
    ingest_lock: Mutex<WriteState>,
    level: i32,
    /// How tx bodies are stored (`indexed`; recorded in the dir).
    bodies: BodyForm,
    /// How ledger records are stored (`blocks`: raw, in a format-3 dir).
    ledger_form: BodyForm,
    limits: Limits,
    sink: Option<JsonLinesSink>,
    last_report: RwLock<Option<BatchReport>>,
    /// Test hook: runs right after a batch's mark is published.
    #[cfg(test)]
    after_publish: Mutex<Option<AfterPublish>>,
}

/// A format-3 dir's ledger records handed to the engine in one batch of
/// at least this many bytes are written in bulk (SST files of bulk blocks,
/// compressed once): a backfill batch's records are ~15 MB, far below the
/// engine's 32 MiB chunk, and a live ledger's ~0.1 MB go through the
/// memtable. Each bulk write makes at least one SST file.
const LEDGER_BULK_MIN_BYTES: usize = 4 << 20;

#[cfg(test)]
type AfterPublish = Box<dyn Fn(&Ledgerstore) + Send>;

impl std::fmt::Debug for Ledgerstore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledgerstore")
            .field("dir", &self.dir.path())
            .field("layout", &self.layout)
            .finish()
    }
}

/// What ingest must do before its next batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteState {
    /// Nothing: the engines hold nothing above the mark.
    Clean,
    /// A failed batch may have left data above the mark (its rollback
    /// failed too); roll back before writing.
    Dirty,
    /// A `MARK` write failed after its rename. The file may hold the new
    /// mark, durably or not, so no in-process rollback can know what is
    /// safe to delete: writes are refused until the store is reopened,
    /// which reads `MARK` back from disk and rolls back above what it says.
    MarkFailed(String),
    /// An offline reader: never writes.
    Offline,
}

impl Ledgerstore {
    /// Opens the store at `path`, rolling back anything above the mark that
    /// a crash left behind (unless `opts.offline`).
    pub fn open(path: &Path, opts: StoreOptions, engines: &dyn EngineFactory) -> StoreResult<Self> {
        if opts.engine_access == Access::ReadOnly && !opts.offline {
            return Err(StoreError::DataDir {
                dir: path.to_path_buf(),
                reason: "read-only engines need an offline store (StoreOptions::offline)".into(),
            });
        }
        let mut opts = opts;
        if opts.offline {
            // Reading does not depend on the form: an offline reader takes
            // whatever the dir recorded.
            opts.indexed.explicit_policy.bodies = None;
        }
        if let (Some(layout), Some(requested)) = (opts.layout, opts.indexed.explicit_policy.bodies)
            && layout != Layout::Indexed
        {
            // Refused before the dir is touched (a new dir is not created).
            return Err(StoreError::DataDir {
                dir: path.to_path_buf(),
                reason: format!(
                    "segments.bodies = {requested} applies to layout indexed only, not {layout}"
                ),
            });
        }
        let policy = MergePolicy {
            range_ledgers: opts.indexed.range_ledgers,
            fanout: opts.indexed.merge_fanout,
            levels: opts.indexed.merge_levels,
        };
        let dir = DataDir::open(
            path,
            opts.layout,
            opts.create && !opts.offline,
            Some(policy),
            Forms {
                bodies: opts
                    .indexed
                    .explicit_policy
                    .bodies
                    .unwrap_or(opts.indexed.bodies),
                ledgers: opts.indexed.ledgers,
                unsharded: false,
            },
        )?;
        let layout = dir.manifest().layout;
        let bodies = dir.manifest().body_form();
        let ledger_form = dir.manifest().ledger_form();
        if layout != Layout::Indexed
            && let Some(requested) = opts.indexed.explicit_policy.bodies
        {
            // Only `indexed` has a body form; asking for one elsewhere is
            // refused rather than ignored.
            return Err(StoreError::SettingMismatch {
                dir: dir.path().to_path_buf(),
                setting: "segments.bodies",
                recorded: format!("none (layout {layout} has no body form; only indexed does)"),
                requested: requested.to_string(),
            });
        }
        if layout == Layout::Indexed {
            // Recorded in ledgerstore.json at creation (or, in a dir from an
            // earlier release, in segments/SEGMENTS once segments opened).
            let recorded = match dir.manifest().segments {
                Some(p) => Some(p),
                None => indexed::recorded_policy(&dir.path().join("segments"))?,
            };
            // Before any engine opens, so a refused open changes nothing.
            indexed::check_explicit_policy(dir.path(), recorded, &opts.indexed.explicit_policy)?;
            if let Some(requested) = opts.indexed.explicit_policy.bodies
                && requested != bodies
            {
                return Err(StoreError::SettingMismatch {
                    dir: dir.path().to_path_buf(),
                    setting: "segments.bodies",
                    recorded: bodies.to_string(),
                    requested: requested.to_string(),
                });
            }
            if let Some(p) = recorded {
                opts.indexed.range_ledgers = p.range_ledgers;
                opts.indexed.merge_fanout = p.fanout;
                opts.indexed.merge_levels = p.levels;
            }
        }
        // A `blocks` dir's bodies are raw: RocksDB compresses them. So are
        // a format-3 or 4 dir's ledger records, in blocks of the same sizes and
        // levels but without a per-file dictionary (measured for bodies
        // only), and written in bulk from a smaller batch: a backfill
        // batch's records (~15 MB) share 1 MiB blocks, ~9 skeletons a
        // block (docs/benchmarks.md, "Skeletons in blocks").
        // Format 4 records that its block tables were made sharded.
        let sharded = dir.manifest().format == datadir::FORMAT_SHARDED;
        let blocks = |dict_bytes: usize, bulk_min_bytes: Option<usize>| ValueCompression::Blocks {
            level: opts.compression_level,
            block_bytes: opts.indexed.block_bytes,
            dict_bytes,
            dict_form: opts.indexed.block_dict_form,
            bulk_block_bytes: opts.indexed.bulk_block_bytes,
            bulk_level: opts.indexed.bulk_level.unwrap_or(opts.compression_level),
            bulk_min_bytes,
            sharded,
        };
        let compression = |t: TableId| match (t, bodies, ledger_form) {
            (TableId::TxData, BodyForm::Blocks, _) => blocks(opts.indexed.block_dict_bytes, None),
            (TableId::Ledgers, _, BodyForm::Blocks) => blocks(0, Some(LEDGER_BULK_MIN_BYTES)),
            _ => ValueCompression::App,
        };
        let open = |t: TableId| {
            engines.open_table(
                layout,
                t,
                &dir.table_path(t),
                opts.engine_access,
                compression(t),
            )
        };
        // The MDBX tables (the hash maps) open first: an MDBX open checks
        // the recorded page size before it writes anything, so a refused
        // open leaves every table as it was.
        let tx_index: Arc<dyn KvStore> = Arc::from(open(TableId::TxIndex)?);
        let tx_data = open(TableId::TxData)?;
        let ledgers: Arc<dyn KvStore> = Arc::from(open(TableId::Ledgers)?);
        let mark = match dir.read_mark()? {
            Some(m) => m,
            None => {
                refuse_missing_mark(&dir, [ledgers.as_ref(), tx_data.as_ref(), &*tx_index])?;
                // An empty dir without its MARK: created by a build that
                // wrote the MARK after the manifest (or none until the
                // first commit) and killed in between. Write the empty
                // MARK before anything else, so a batch whose own MARK
                // write is cut short leaves data above an empty mark (rolled
                // back at the next open), never data with no MARK at all.
                let empty = MarkState {
                    dict_version: Some(0),
                    ..MarkState::default()
                };
                if !opts.offline {
                    dir.write_mark(&empty)?;
                }
                empty
            }
        };
        let sink = match &opts.report_jsonl {
            Some(p) => Some(
                JsonLinesSink::open(p)
                    .map_err(StoreError::io(format!("opening {}", p.display())))?,
            ),
            None => None,
        };
        let indexed = match layout {
            Layout::Indexed => Some(indexed::IndexedTier::open(
                dir.path(),
                &indexed::TierOpen {
                    opts: opts.indexed.clone(),
                    level: opts.compression_level,
                    dict_version: mark.dict_version,
                    writable: !opts.offline,
                },
                Arc::clone(&tx_index),
                Arc::clone(&ledgers),
                tx_data.as_ref(),
            )?),
            _ => None,
        };
        let store = Self {
            visible_end: AtomicU64::new(visible_end(&mark)),
            mark: RwLock::new(mark),
            dir,
            layout,
            ledgers,
            tx_data,
            tx_index,
            indexed,
            ingest_lock: Mutex::new(if opts.offline {
                WriteState::Offline
            } else {
                WriteState::Clean
            }),
            level: opts.compression_level,
            bodies,
            ledger_form,
            limits: opts.limits,
            sink,
            last_report: RwLock::new(None),
            #[cfg(test)]
            after_publish: Mutex::new(None),
        };
        if opts.offline {
            return Ok(store);
        }
        let rolled = store.rollback_above_mark()?;
        if rolled.ledgers > 0 || rolled.txs > 0 {
            tracing::warn!(
                ledgers = rolled.ledgers,
                txs = rolled.txs,
                "rolled back writes above the durable mark left by an interrupted batch"
            );
        }
        if let Some(tier) = &store.indexed {
            let mark = store.mark();
            tier.segments.start(mark.first, mark.last)?;
        }
        Ok(store)
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// How the dir stores tx bodies (`records` in every layout but a
    /// format-2 or 3 `indexed` dir).
    pub fn body_form(&self) -> BodyForm {
        self.bodies
    }

    /// How the dir stores ledger records (`blocks` only in a format-3 or 4
    /// `indexed` dir).
    pub fn ledger_form(&self) -> BodyForm {
        self.ledger_form
    }

    /// The data dir's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A copy of the durable mark.
    pub fn mark(&self) -> MarkState {
        self.mark
            .read()
            .map(|m| m.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// The first ledger ever committed (None while empty), without
    /// copying the mark: read on every Stellar RPC lookup.
    pub fn first_ledger(&self) -> Option<u32> {
        match self.mark.read() {
            Ok(m) => m.first,
            Err(p) => p.into_inner().first,
        }
    }

    /// The last durable ledger (None while empty).
    pub fn last_ledger(&self) -> Option<u32> {
        match self.visible_end.load(Ordering::Acquire) {
            0 => None,
            end => Some((end - 1) as u32),
        }
    }

    /// The report of the last batch committed since open.
    pub fn last_report(&self) -> Option<BatchReport> {
        self.last_report.read().ok().and_then(|r| r.clone())
    }

    /// The batch limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The store holding `table`.
    pub fn table(&self, table: TableId) -> &dyn KvStore {
        match table {
            TableId::Ledgers => self.ledgers.as_ref(),
            TableId::TxData => self.tx_data.as_ref(),
            TableId::TxIndex => self.tx_index.as_ref(),
        }
    }

    /// Flushes the engines for a clean shutdown. Waits for a batch in
    /// progress to finish first.
    pub fn close(&self) -> StoreResult<()> {
        let _guard = self.ingest_lock.lock();
        if let Some(tier) = &self.indexed {
            tier.segments.stop();
        }
        for t in TableId::ALL {
            self.table(t).close()?;
        }
        Ok(())
    }

    #[cfg(test)]
    fn run_after_publish_hook(&self) {
        if let Ok(hook) = self.after_publish.lock()
            && let Some(f) = hook.as_ref()
        {
            f(self);
        }
    }

    /// Why writes are refused until the store is reopened, if they are (a
    /// failed `MARK` write). An offline reader refuses them too, by design,
    /// and is not reported here.
    pub fn writes_refused(&self) -> Option<String> {
        match &*self.ingest_lock.lock().ok()? {
            WriteState::MarkFailed(r) => Some(r.clone()),
            WriteState::Offline | WriteState::Clean | WriteState::Dirty => None,
        }
    }

    fn is_visible(&self, seq: u32) -> bool {
        u64::from(seq) < self.visible_end.load(Ordering::Acquire)
    }

    fn publish_mark(&self, mark: MarkState) {
        let end = visible_end(&mark);
        match self.mark.write() {
            Ok(mut m) => *m = mark,
            Err(p) => *p.into_inner() = mark,
        }
        self.visible_end.store(end, Ordering::Release);
    }
}

impl Drop for Ledgerstore {
    fn drop(&mut self) {
        if let Some(tier) = &self.indexed {
            tier.segments.stop();
        }
    }
}

/// A dir without `MARK` is empty, or damaged: every dir this build creates
/// gets an empty `MARK` with its manifest, so tables holding data without
/// one mean the file was lost or the dir copied without it. Reading that as
/// an empty store would roll every ledger back.
fn refuse_missing_mark(dir: &DataDir, tables: [&dyn KvStore; 3]) -> StoreResult<()> {
    let mut holding = Vec::new();
    for kv in tables {
        if !kv.scan(&[], 1)?.is_empty() {
            holding.push(kv.table().to_string());
        }
    }
    let segments = dir.path().join("segments");
    let has_segments = std::fs::read_dir(&segments).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            ledgerstore_segment::parse_file_name(&e.file_name().to_string_lossy()).is_some()
        })
    });
    if has_segments {
        holding.push("segments".into());
    }
    if holding.is_empty() {
        return Ok(());
    }
    Err(StoreError::DataDir {
        dir: dir.path().to_path_buf(),
        reason: format!(
            "{} is missing but {} hold data; nothing was changed. The dir was copied without \
             its MARK, or the file was lost: put the MARK back from where the dir came from, \
             or restore a backup (`ledgerstore restore`). A dir that never committed a batch \
             can be removed and ingested again",
            dir.mark_path().display(),
            holding.join(", ")
        ),
    })
}

fn visible_end(mark: &MarkState) -> u64 {
    mark.last.map_or(0, |l| u64::from(l) + 1)
}

#[cfg(test)]
mod alias_tests;
#[cfg(test)]
mod backup_tests;
#[cfg(test)]
mod body_form_tests;
#[cfg(test)]
mod durability_tests;
#[cfg(test)]
mod ledger_form_tests;
#[cfg(test)]
mod skeleton_tests;
#[cfg(test)]
mod test_engines;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod validate_props;
