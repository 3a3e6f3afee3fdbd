//! The data dir's own files:
//!
//! - `ledgerstore.json`: the manifest (format version, layout, where each
//!   table lives). Written once, when the dir is created.
//! - `MARK`: the durable high-water mark and running totals, replaced
//!   atomically (write `MARK.tmp`, fsync, rename, fsync the dir) after every
//!   committed batch. A new dir gets an empty `MARK` before its manifest
//!   (the manifest's rename is the instant the dir exists), so a dir whose
//!   `MARK` is missing while its tables hold data was damaged or copied
//!   incompletely: [`crate::Ledgerstore::open`] refuses it instead of
//!   reading it as empty (and rolling everything back). An empty dir
//!   without a `MARK` (made by an older build, killed between its manifest
//!   and its `MARK`) gets its empty `MARK` at the first writable open,
//!   before any batch.
//! - `LOCK`: an exclusive `flock`, so two processes never open one dir.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use ledgerstore_db_api::{BodyForm, Layout, TableId};
use serde::{Deserialize, Serialize};

use crate::error::{StoreError, StoreResult};
use crate::policy::MergePolicy;

/// On-disk format of a data dir whose bodies are per-record (every dir
/// before block-compressed bodies, and every layout but `indexed`).
pub const FORMAT_VERSION: u32 = 1;

/// On-disk format of an `indexed` dir with [`BodyForm::Blocks`] bodies and
/// per-record ledger records: its raw bodies are unreadable to builds of
/// format 1, which refuse it by this number. This build reads it.
pub const FORMAT_BLOCKS: u32 = 2;

/// On-disk format of an `indexed` dir whose ledger records are stored raw
/// too (`"ledgers":"blocks"`): the engine compresses the `ledgers` table in
/// blocks of consecutive records, so skeletons share a frame's context
/// across ledgers. Builds of formats 1 and 2 would read those records as
/// zstd frames; they refuse the dir by this number. Every new `blocks` dir
/// had this format until [`FORMAT_SHARDED`].
pub const FORMAT_LEDGER_BLOCKS: u32 = 3;

/// Format 3 whose block-compressed tables (`tx_bodies`, `ledgers`) were
/// made sharded: each range of 2^18 ledgers in a RocksDB column family of
/// its own (ARCHITECTURE.md invariant 23). Builds before it would open
/// only the `default` column family of such a table read-only (RocksDB
/// allows that) and see it empty; they refuse the dir by this number.
/// Every new dir with blocks bodies and ledger records has this format
/// (with per-record ledger records: format 2). The tables themselves record
/// whether they are sharded, so this build reads formats 3 and 4 alike.
pub const FORMAT_SHARDED: u32 = 4;

const MANIFEST: &str = "ledgerstore.json";
const MARK: &str = "MARK";
const LOCK: &str = "LOCK";

/// The manifest recorded when a data dir is created.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// On-disk format version.
    pub format: u32,
    /// The layout, fixed for the dir's life.
    pub layout: Layout,
    /// Table name → engine directory, relative to the data dir.
    pub tables: BTreeMap<String, String>,
    /// Layout `indexed`: the segment policy, recorded with the dir itself so
    /// that it is fixed from the instant the dir exists (dirs from earlier
    /// releases record it only in `segments/SEGMENTS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<MergePolicy>,
    /// Layout `indexed`: how tx bodies are stored. Absent (format 1): per
    /// record; `blocks` comes with format 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bodies: Option<BodyForm>,
    /// Layout `indexed` with `blocks` bodies: how ledger records are
    /// stored. Absent (formats 1 and 2): each a zstd frame; `blocks` comes
    /// with format 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledgers: Option<BodyForm>,
}

impl Manifest {
    /// The manifest of a new dir with `layout` (and, for `indexed`, its
    /// segment policy and the forms of its bodies and ledger records;
    /// ledger records are in blocks only where bodies are).
    pub fn new(layout: Layout, segments: Option<MergePolicy>, forms: Forms) -> Self {
        let tables = TableId::ALL
            .into_iter()
            .map(|t| (t.name().to_string(), table_dir(layout, t)))
            .collect();
        let blocks = layout == Layout::Indexed && forms.bodies == BodyForm::Blocks;
        let ledger_blocks = blocks && forms.ledgers == BodyForm::Blocks;
        Self {
            format: match (blocks, ledger_blocks) {
                (true, true) if forms.unsharded => FORMAT_LEDGER_BLOCKS,
                (true, true) => FORMAT_SHARDED,
                (true, false) => FORMAT_BLOCKS,
                _ => FORMAT_VERSION,
            },
            layout,
            tables,
            segments: segments.filter(|_| layout == Layout::Indexed),
            bodies: blocks.then_some(BodyForm::Blocks),
            ledgers: ledger_blocks.then_some(BodyForm::Blocks),
        }
    }

    /// How this dir stores tx bodies (per record unless it says blocks).
    pub fn body_form(&self) -> BodyForm {
        self.bodies.unwrap_or(BodyForm::Records)
    }

    /// How this dir stores ledger records (per record unless it says
    /// blocks).
    pub fn ledger_form(&self) -> BodyForm {
        self.ledgers.unwrap_or(BodyForm::Records)
    }

    /// Both forms.
    pub fn forms(&self) -> Forms {
        Forms {
            bodies: self.body_form(),
            ledgers: self.ledger_form(),
            unsharded: self.format == FORMAT_LEDGER_BLOCKS,
        }
    }

    /// The formats a manifest with these forms may carry, or why the
    /// combination is refused.
    fn expected_formats(&self) -> Result<&'static [u32], String> {
        match (self.body_form(), self.ledger_form()) {
            (BodyForm::Records, BodyForm::Records) => Ok(&[FORMAT_VERSION]),
            (BodyForm::Blocks, BodyForm::Records) => Ok(&[FORMAT_BLOCKS]),
            (BodyForm::Blocks, BodyForm::Blocks) => Ok(&[FORMAT_LEDGER_BLOCKS, FORMAT_SHARDED]),
            (BodyForm::Records, BodyForm::Blocks) => Err(format!(
                "{MANIFEST} records \"ledgers\": \"blocks\" without \"bodies\": \"blocks\" \
                 (ledger records in blocks with per-record bodies); only a dir with blocks \
                 bodies stores ledger records in blocks"
            )),
        }
    }
}

/// How a new dir stores its values: tx bodies, and ledger records.
/// [`BodyForm::Records`]: each value a zstd frame the application made;
/// [`BodyForm::Blocks`]: values raw, the engine compresses blocks of
/// consecutive ones. An existing dir keeps the forms it recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Forms {
    /// `tx_bodies` (layout `indexed`).
    pub bodies: BodyForm,
    /// `ledgers` (layout `indexed` with blocks bodies).
    pub ledgers: BodyForm,
    /// Block tables made in one column family, as before shards: a copy
    /// of a format-3 dir (a backup) keeps format 3, since its tables are
    /// the source's. New dirs leave it false (format 4, sharded).
    pub unsharded: bool,
}

/// Directory of `table` under the data dir: `<engine>/<table>`.
pub fn table_dir(layout: Layout, table: TableId) -> String {
    format!("{}/{}", layout.engine_for(table).name(), table.name())
}

/// Running totals of one table, advanced with the mark.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct TableTotals {
    /// Keys written.
    pub keys: u64,
    /// Key + value bytes before compression.
    pub raw_bytes: u64,
    /// Key + value bytes after compression (what the engine is handed).
    pub stored_bytes: u64,
}

/// The durable high-water mark.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct MarkState {
    /// First ledger ever committed (None while empty).
    pub first: Option<u32>,
    /// Last fully committed ledger (None while empty).
    pub last: Option<u32>,
    /// Batches committed.
    pub batches: u64,
    /// Transactions committed.
    pub txs: u64,
    /// Per-table totals.
    pub tables: BTreeMap<String, TableTotals>,
    /// Layout `indexed`: the newest tx-body dictionary version that
    /// committed data may use (0: none). A dictionary stored above it was
    /// trained for a batch that did not commit. None in a MARK written
    /// before this field existed: every stored dictionary counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dict_version: Option<u32>,
}

impl MarkState {
    /// Ledgers committed.
    pub fn ledgers(&self) -> u64 {
        match (self.first, self.last) {
            (Some(f), Some(l)) => u64::from(l) - u64::from(f) + 1,
            _ => 0,
        }
    }

    /// The next seq the store accepts; None while empty (any start).
    pub fn next_expected(&self) -> Option<u32> {
        self.last.map(|l| l.saturating_add(1))
    }
}

/// An open data dir: its path, manifest and lock.
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
    manifest: Manifest,
    _lock: File,
    /// Test hook: faults the next `MARK` writes take, first one first.
    #[cfg(test)]
    pub(crate) mark_faults: std::sync::Mutex<Vec<MarkFault>>,
}

/// Test hook: where a `MARK` write fails.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkFault {
    /// Before `MARK.tmp` is renamed over `MARK`: the old `MARK` stays.
    BeforeRename,
    /// After the rename, at the directory fsync: the new `MARK` is in place
    /// but its durability is unknown.
    AfterRename,
}

impl DataDir {
    /// Opens `path`, creating it with `layout` (or the default) and, for
    /// `indexed`, the segment policy `segments` and body form `bodies` if
    /// it is new. Fails if it was created with a different layout than
    /// `layout`.
    pub fn open(
        path: &Path,
        layout: Option<Layout>,
        create: bool,
        segments: Option<MergePolicy>,
        forms: Forms,
    ) -> StoreResult<Self> {
        let dir_err = |reason: String| StoreError::DataDir {
            dir: path.to_path_buf(),
            reason,
        };
        if !path.exists() {
            if !create {
                return Err(dir_err("does not exist".into()));
            }
            fs::create_dir_all(path)
                .map_err(StoreError::io(format!("creating {}", path.display())))?;
        }
        let lock = lock_dir(path)?;
        let manifest_path = path.join(MANIFEST);
        let manifest = if manifest_path.exists() {
            let text = fs::read_to_string(&manifest_path).map_err(StoreError::io(format!(
                "reading {}",
                manifest_path.display()
            )))?;
            let m: Manifest = serde_json::from_str(&text)
                .map_err(|e| dir_err(format!("unreadable {MANIFEST}: {e}")))?;
            let expected = m.expected_formats().map_err(dir_err)?;
            if !expected.contains(&m.format) {
                return Err(dir_err(format!(
                    "on-disk format {} with {} bodies and {} ledger records is not supported \
                     by this build (it reads format {FORMAT_VERSION}: per-record bodies and \
                     records, no \"bodies\" or \"ledgers\" in {MANIFEST}; {FORMAT_BLOCKS}: \
                     \"bodies\": \"blocks\"; {FORMAT_LEDGER_BLOCKS} and {FORMAT_SHARDED}: \
                     \"bodies\" and \"ledgers\": \"blocks\", {FORMAT_SHARDED} with sharded \
                     tables)",
                    m.format,
                    m.body_form(),
                    m.ledger_form()
                )));
            }
            if (m.bodies.is_some() || m.ledgers.is_some()) && m.layout != Layout::Indexed {
                return Err(dir_err(format!(
                    "{MANIFEST} records a value form for layout {}; only indexed has one",
                    m.layout
                )));
            }
            if let Some(requested) = layout
                && requested != m.layout
            {
                return Err(StoreError::LayoutMismatch {
                    dir: path.to_path_buf(),
                    recorded: m.layout,
                    requested,
                });
            }
            m
        } else {
            refuse_foreign(path)?;
            if !create {
                return Err(dir_err(format!(
                    "no {MANIFEST}: not a ledgerstore data dir"
                )));
            }
            let m = Manifest::new(layout.unwrap_or_default(), segments, forms);
            let json = serde_json::to_vec_pretty(&m)
                .map_err(|e| dir_err(format!("encoding manifest: {e}")))?;
            // The empty MARK first, the manifest last: the manifest's
            // rename is the instant the dir exists, so a dir with a
            // manifest always has its MARK (a kill between the two leaves
            // a dir that is still new, see `refuse_foreign`).
            let empty = MarkState {
                dict_version: Some(0),
                ..MarkState::default()
            };
            write_atomic(path, MARK, &encode_mark(&empty)?)?;
            crate::failpoint::abort_at("datadir-before-manifest");
            write_atomic(path, MANIFEST, &json)?;
            m
        };
        Ok(Self {
            path: path.to_path_buf(),
            manifest,
            _lock: lock,
            #[cfg(test)]
            mark_faults: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// The data dir's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Directory of `table`.
    pub fn table_path(&self, table: TableId) -> PathBuf {
        self.path.join(table_dir(self.manifest.layout, table))
    }

    /// The path of the `MARK` file.
    pub fn mark_path(&self) -> PathBuf {
        self.path.join(MARK)
    }

    /// Reads the mark; None when the file does not exist (a dir created by
    /// a build that wrote no `MARK` until the first commit, or a damaged
    /// one: the caller decides which).
    pub fn read_mark(&self) -> StoreResult<Option<MarkState>> {
        let p = self.mark_path();
        match fs::read(&p) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| StoreError::Corrupt(format!("{}: {e}", p.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(format!("reading {}", p.display()))(e)),
        }
    }

    /// Replaces the mark durably and atomically. On error the file may hold
    /// the old mark or the new one, and the new one may not be durable.
    pub fn write_mark(&self, mark: &MarkState) -> StoreResult<()> {
        let json = encode_mark(mark)?;
        #[cfg(test)]
        {
            let fault = self
                .mark_faults
                .lock()
                .ok()
                .and_then(|mut f| (!f.is_empty()).then(|| f.remove(0)));
            let injected = |what: &str| {
                Err(StoreError::io(format!("syncing {}", self.path.display()))(
                    std::io::Error::other(format!("injected: {what}")),
                ))
            };
            match fault {
                Some(MarkFault::BeforeRename) => return injected("MARK.tmp not renamed"),
                Some(MarkFault::AfterRename) => {
                    write_atomic(&self.path, MARK, &json)?;
                    return injected("directory fsync after the rename");
                }
                None => {}
            }
        }
        write_atomic(&self.path, MARK, &json)
    }
}

/// Refuses a dir with no manifest that holds anything but what an
/// interrupted creation leaves: `LOCK`, the temp files, and an empty
/// `MARK` (written before the manifest). Such a dir is still new.
fn refuse_foreign(path: &Path) -> StoreResult<()> {
    let leftovers = [
        LOCK.to_string(),
        format!("{MANIFEST}.tmp"),
        format!("{MARK}.tmp"),
    ];
    for e in fs::read_dir(path)
        .map_err(StoreError::io(format!("listing {}", path.display())))?
        .flatten()
    {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if leftovers.iter().any(|l| *l == name) {
            continue;
        }
        if name == MARK && mark_is_empty(&e.path()) {
            continue;
        }
        return Err(StoreError::DataDir {
            dir: path.to_path_buf(),
            reason: format!(
                "has files but no {MANIFEST} (`{name}` among them): not a ledgerstore data dir"
            ),
        });
    }
    Ok(())
}

/// Whether `p` holds a mark with nothing committed.
fn mark_is_empty(p: &Path) -> bool {
    fs::read(p)
        .ok()
        .and_then(|b| serde_json::from_slice::<MarkState>(&b).ok())
        .is_some_and(|m| m.last.is_none() && m.first.is_none())
}

fn encode_mark(mark: &MarkState) -> StoreResult<Vec<u8>> {
    serde_json::to_vec(mark).map_err(|e| StoreError::Corrupt(format!("encoding mark: {e}")))
}

/// Bytes free to an unprivileged writer on the filesystem holding `path`.
pub(crate) fn free_bytes(path: &Path) -> StoreResult<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c =
        std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| StoreError::DataDir {
            dir: path.to_path_buf(),
            reason: "the path holds a NUL byte".into(),
        })?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    #[allow(unsafe_code)]
    // SAFETY: statvfs writes into the struct we pass; `c` outlives the call.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(StoreError::io(format!("statvfs {}", path.display()))(
            std::io::Error::last_os_error(),
        ));
    }
    #[allow(unsafe_code)]
    // SAFETY: statvfs returned 0, so it filled the struct.
    let st = unsafe { st.assume_init() };
    // fsblkcnt_t and c_ulong are u64 here but narrower on 32-bit targets.
    #[allow(clippy::useless_conversion)]
    let free = u64::from(st.f_bavail).saturating_mul(u64::from(st.f_frsize));
    Ok(free)
}

fn lock_dir(path: &Path) -> StoreResult<File> {
    let p = path.join(LOCK);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .map_err(StoreError::io(format!("opening {}", p.display())))?;
    #[allow(unsafe_code)]
    // SAFETY: flock on a file descriptor we own; no memory is involved.
    let rc = unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };
    if rc != 0 {
        return Err(StoreError::DataDir {
            dir: path.to_path_buf(),
            reason: "in use by another ledgerstore process (LOCK is held)".into(),
        });
    }
    Ok(file)
}

/// Writes `dir/name` atomically and durably.
pub(crate) fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> StoreResult<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let dst = dir.join(name);
    let mut f =
        File::create(&tmp).map_err(StoreError::io(format!("creating {}", tmp.display())))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(StoreError::io(format!("writing {}", tmp.display())))?;
    fs::rename(&tmp, &dst).map_err(StoreError::io(format!("renaming to {}", dst.display())))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(StoreError::io(format!("syncing {}", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_recorded_and_enforced() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let p = tmp.path().join("d");
        {
            let d = DataDir::open(&p, Some(Layout::Rocksdb), true, None, Forms::default())
                .expect("create");
            assert_eq!(d.manifest().layout, Layout::Rocksdb);
            assert!(
                DataDir::open(&p, None, true, None, Forms::default()).is_err(),
                "second opener is locked out"
            );
        }
        let err = DataDir::open(&p, Some(Layout::Hybrid), true, None, Forms::default())
            .expect_err("mismatch");
        assert!(matches!(err, StoreError::LayoutMismatch { .. }), "{err}");
        assert!(
            err.to_string().contains("created with layout rocksdb"),
            "{err}"
        );
        let d = DataDir::open(&p, None, false, None, Forms::default())
            .expect("open with recorded layout");
        assert_eq!(d.manifest().layout, Layout::Rocksdb);
    }

    #[test]
    fn mark_round_trips_and_starts_empty() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let d = DataDir::open(tmp.path(), None, true, None, Forms::default()).expect("create");
        let empty = d.read_mark().expect("read").expect("a new dir has a MARK");
        assert_eq!(empty.last, None);
        assert_eq!(empty.dict_version, Some(0));
        let m = MarkState {
            first: Some(10),
            last: Some(19),
            batches: 2,
            txs: 40,
            tables: BTreeMap::new(),
            dict_version: Some(1),
        };
        d.write_mark(&m).expect("write");
        assert_eq!(d.read_mark().expect("read"), Some(m.clone()));
        assert_eq!(m.ledgers(), 10);
        assert_eq!(m.next_expected(), Some(20));
        std::fs::remove_file(d.mark_path()).expect("remove");
        assert_eq!(d.read_mark().expect("read"), None);
    }

    #[test]
    fn a_mark_written_before_dict_version_existed_still_reads() {
        let old = r#"{"first":1,"last":9,"batches":1,"txs":3,"tables":{}}"#;
        let m: MarkState = serde_json::from_str(old).expect("legacy MARK");
        assert_eq!((m.last, m.dict_version), (Some(9), None));
    }

    #[test]
    fn foreign_dirs_are_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        fs::write(tmp.path().join("something"), b"x").expect("write");
        let err =
            DataDir::open(tmp.path(), None, true, None, Forms::default()).expect_err("foreign");
        assert!(
            err.to_string().contains("not a ledgerstore data dir"),
            "{err}"
        );
        let missing = tmp.path().join("missing");
        assert!(DataDir::open(&missing, None, false, None, Forms::default()).is_err());
    }

    #[test]
    fn a_creation_killed_before_the_manifest_rename_is_still_new() {
        // What a SIGKILL between `ledgerstore.json.tmp`'s write and its
        // rename leaves: the lock and a partial temp manifest.
        let tmp = tempfile::tempdir().expect("tempdir");
        fs::write(tmp.path().join(LOCK), b"").expect("lock");
        fs::write(tmp.path().join(format!("{MANIFEST}.tmp")), b"{\"form").expect("tmp");
        let err = DataDir::open(tmp.path(), None, false, None, Forms::default())
            .expect_err("not created yet");
        assert!(err.to_string().contains("no ledgerstore.json"), "{err}");
        let d = DataDir::open(
            tmp.path(),
            Some(Layout::Rocksdb),
            true,
            None,
            Forms::default(),
        )
        .expect("create");
        assert_eq!(d.manifest().layout, Layout::Rocksdb);
        assert!(d.read_mark().expect("read").is_some());
        assert!(!tmp.path().join(format!("{MANIFEST}.tmp")).exists());
    }

    #[test]
    fn a_creation_killed_between_its_mark_and_its_manifest_is_still_new() {
        // What a SIGKILL at `datadir-before-manifest` leaves: the lock and
        // the empty MARK (the manifest is written last).
        let tmp = tempfile::tempdir().expect("tempdir");
        fs::write(tmp.path().join(LOCK), b"").expect("lock");
        let empty = MarkState {
            dict_version: Some(0),
            ..MarkState::default()
        };
        fs::write(tmp.path().join(MARK), encode_mark(&empty).expect("mark")).expect("mark");
        fs::write(tmp.path().join(format!("{MANIFEST}.tmp")), b"{").expect("tmp");
        let d = DataDir::open(
            tmp.path(),
            Some(Layout::Indexed),
            true,
            None,
            Forms::default(),
        )
        .expect("create");
        assert_eq!(d.manifest().layout, Layout::Indexed);
        assert_eq!(d.read_mark().expect("read"), Some(empty));
    }

    #[test]
    fn a_mark_with_data_and_no_manifest_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let held = MarkState {
            first: Some(1),
            last: Some(9),
            ..MarkState::default()
        };
        fs::write(tmp.path().join(MARK), encode_mark(&held).expect("mark")).expect("mark");
        let err =
            DataDir::open(tmp.path(), None, true, None, Forms::default()).expect_err("not new");
        let msg = err.to_string();
        assert!(msg.contains("not a ledgerstore data dir"), "{msg}");
        assert!(msg.contains("`MARK`"), "{msg}");
        assert_eq!(
            fs::read(tmp.path().join(MARK)).expect("kept"),
            encode_mark(&held).expect("mark")
        );
    }
}
