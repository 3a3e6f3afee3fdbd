//! A data lake in the SEP-54 layout, as Galexie writes it, behind any
//! `object_store` (a local directory, S3, GCS, a plain HTTP tree).
//!
//! With a `.config.json` ([`Schema`]) the key of every file is computed
//! from the ledger it holds, so a range is read without listing the
//! bucket. A listing is used only to find the newest ledger, and only
//! where it comes back in key order (S3, GCS): one request, since the
//! reversed hex prefix sorts newest first. Elsewhere the newest is found
//! by probing keys (exponential, then binary search: about 2·log2(n)
//! HEAD requests). A lake without `.config.json` is listed whole (local
//! test lakes, and lakes of loose files).

mod probe;
mod schema;

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::sync::OnceCell;

use crate::error::{StellarError, StellarResult};
use crate::network::Network;

pub use schema::{Manifest, Schema, parse_name};

const EXT_UNKNOWN: u8 = 0;
/// The manifest's own extension (`.xdr.zst` for zstd).
const EXT_SHORT: u8 = 1;
/// `.xdr.zstd`, which older Galexie releases wrote.
const EXT_LONG: u8 = 2;
/// The largest `.config.json` read (Galexie's is a few hundred bytes).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The largest batch file read, compressed (the decoder bounds it again
/// after decompression: `ReadLimits::max_file_bytes`, also 1 GiB).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// How the store behind a lake lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// In key order, lazily, a page a request (S3, GCS).
    Ordered,
    /// Whole, in no order (a local directory).
    Unordered,
    /// Not at all (a plain HTTP tree).
    Unavailable,
}

/// One batch file of the lake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LakeFile {
    /// Location inside the lake.
    pub path: ObjPath,
    /// First ledger.
    pub start: u32,
    /// Last ledger.
    pub end: u32,
    /// Size in bytes (compressed), when a listing told it.
    pub size: Option<u64>,
}

/// What a range of the lake is read as.
pub struct Plan {
    /// First ledger wanted.
    pub first: u32,
    /// Last ledger wanted.
    pub last: u32,
    /// Files to read.
    pub files: u64,
    /// Compressed bytes, when a listing told them.
    pub bytes: Option<u64>,
    /// The files, in order, produced lazily (the whole pubnet history is
    /// tens of millions of them).
    pub iter: Box<dyn Iterator<Item = LakeFile> + Send>,
}

impl Plan {
    /// Nothing to read: the lake holds nothing from `first` on.
    fn empty(first: u32) -> Self {
        Self {
            first,
            last: first.saturating_sub(1),
            files: 0,
            bytes: None,
            iter: Box::new(std::iter::empty()),
        }
    }
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Plan({}..={}, {} files)",
            self.first, self.last, self.files
        )
    }
}

/// A SEP-54 data lake.
pub struct DataLake {
    root: String,
    store: Arc<dyn ObjectStore>,
    listing: Listing,
    manifest: OnceCell<Manifest>,
    /// The extension the lake's files use: unknown until one is found.
    ext: AtomicU8,
}

impl std::fmt::Debug for DataLake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataLake({})", self.root)
    }
}

impl DataLake {
    /// A lake in a local directory.
    pub fn local(root: &std::path::Path) -> StellarResult<Self> {
        let name = root.display().to_string();
        if !root.is_dir() {
            return Err(StellarError::Lake {
                root: name,
                detail: "not a directory".into(),
            });
        }
        Ok(Self::new(
            name,
            Arc::new(LocalFileSystem::new_with_prefix(root)?),
            Listing::Unordered,
        ))
    }

    /// A lake behind any object store, rooted at the lake's root.
    pub fn new(root: impl Into<String>, store: Arc<dyn ObjectStore>, listing: Listing) -> Self {
        Self {
            root: root.into(),
            store,
            listing,
            manifest: OnceCell::new(),
            ext: AtomicU8::new(EXT_UNKNOWN),
        }
    }

    /// The lake's name in messages.
    pub fn root(&self) -> &str {
        &self.root
    }

    pub(crate) fn err(&self, detail: impl Into<String>) -> StellarError {
        StellarError::Lake {
            root: self.root.clone(),
            detail: detail.into(),
        }
    }

    /// An object store error on `key`, naming the lake and the object.
    pub(crate) fn store_err(&self, key: &str, e: &object_store::Error) -> StellarError {
        self.err(format!("{key}: {}", short(e)))
    }

    /// The manifest, read once (empty when the lake has no
    /// `.config.json`).
    pub async fn manifest(&self) -> StellarResult<&Manifest> {
        self.manifest
            .get_or_try_init(|| async {
                let key = ".config.json";
                let m = match self.store.get(&ObjPath::from(key)).await {
                    Ok(r) => {
                        let bytes = self.read_capped(key, r, MAX_CONFIG_BYTES).await?;
                        Manifest::parse(&bytes).map_err(|e| self.err(e))?
                    }
                    Err(object_store::Error::NotFound { .. }) => Manifest {
                        passphrase: None,
                        schema: None,
                    },
                    Err(e) => return Err(self.store_err(key, &e)),
                };
                if m.schema.is_none() && self.listing == Listing::Unavailable {
                    return Err(self.err(
                        "has no .config.json with ledgersPerBatch and batchesPerPartition, and \
                         an HTTP lake cannot be listed: SEP-54 lakes publish one",
                    ));
                }
                Ok(m)
            })
            .await
    }

    /// The key layout (`None`: the lake is listed).
    pub async fn schema(&self) -> StellarResult<Option<&Schema>> {
        Ok(self.manifest().await?.schema.as_ref())
    }

    /// The manifest's network passphrase, when it names one.
    pub async fn manifest_passphrase(&self) -> StellarResult<Option<String>> {
        Ok(self.manifest().await?.passphrase.clone())
    }

    /// Refuses a lake whose manifest names another network.
    pub async fn check_network(&self, network: &Network) -> StellarResult<()> {
        match self.manifest_passphrase().await? {
            Some(p) if p != network.passphrase() => Err(self.err(format!(
                ".config.json says networkPassphrase {p:?}, but --network is {network}"
            ))),
            _ => Ok(()),
        }
    }

    /// Every batch file, sorted by start ledger (a whole listing).
    pub async fn files(&self) -> StellarResult<Vec<LakeFile>> {
        if self.listing == Listing::Unavailable {
            return Err(self.err("an HTTP lake cannot be listed"));
        }
        let mut out = Vec::new();
        let mut listing = self.store.list(None);
        while let Some(meta) = listing
            .try_next()
            .await
            .map_err(|e| self.store_err("(listing)", &e))?
        {
            let Some(name) = meta.location.filename() else {
                continue;
            };
            match parse_name(name) {
                Ok(Some((start, end))) => out.push(LakeFile {
                    path: meta.location.clone(),
                    start,
                    end,
                    size: Some(meta.size),
                }),
                Ok(None) => {}
                Err(e) => return Err(self.err(e)),
            }
        }
        out.sort_by_key(|f| (f.start, f.end));
        Ok(out)
    }

    /// The file that holds `seq`, by the manifest.
    pub fn file_for(&self, schema: &Schema, seq: u32) -> LakeFile {
        LakeFile {
            path: ObjPath::from(schema.key(seq)),
            start: schema.batch_start(seq),
            end: schema.batch_end(seq),
            size: None,
        }
    }

    /// The files that hold `from..=to`, in order. `from` unset: the lake's
    /// oldest ledger; `to` unset: its newest. Refuses a range the lake
    /// does not cover and, for a listed lake, any gap or overlap between
    /// the chosen files (a lake read by its manifest names a missing file
    /// when it is reached).
    pub async fn plan(&self, from: Option<u32>, to: Option<u32>) -> StellarResult<Plan> {
        let Some(schema) = self.schema().await?.cloned() else {
            return self.plan_listed(from, to).await;
        };
        let newest = match (to, from) {
            (Some(t), _) => t,
            (None, from) => match self.newest(from).await? {
                Some(n) => n,
                // Everything through the ledger before `from` was read: a
                // re-run of a finished backfill has nothing new to read.
                None if let Some(f) = from.filter(|f| *f > 0)
                    && self.exists(&schema, f - 1).await? =>
                {
                    return Ok(Plan::empty(f));
                }
                None => {
                    return Err(self.err(match from {
                        Some(f) => {
                            format!("holds no file for ledger {f}, nor for the one before it")
                        }
                        None => "holds no batch files".into(),
                    }));
                }
            },
        };
        let first = match from {
            Some(f) => f,
            None => self
                .oldest(newest)
                .await?
                .ok_or_else(|| self.err("holds no batch files"))?,
        };
        if newest < first {
            if u64::from(newest) + 1 == u64::from(first) && to.is_none() {
                return Ok(Plan::empty(first));
            }
            return Err(self.err(match to {
                Some(t) => format!("--to {t} is before the first ledger wanted, {first}"),
                None => format!(
                    "the newest ledger it holds is {newest}, before the first wanted, {first}"
                ),
            }));
        }
        let lpb = schema.ledgers_per_batch;
        let (a, b) = (schema.batch_start(first), schema.batch_start(newest));
        let files = u64::from(b - a) / u64::from(lpb) + 1;
        let iter = (0..files).map(move |i| {
            let seq = (u64::from(a) + i * u64::from(lpb)) as u32;
            LakeFile {
                path: ObjPath::from(schema.key(seq)),
                start: schema.batch_start(seq),
                end: schema.batch_end(seq),
                size: None,
            }
        });
        Ok(Plan {
            first,
            last: newest,
            files,
            bytes: None,
            iter: Box::new(iter),
        })
    }

    async fn plan_listed(&self, from: Option<u32>, to: Option<u32>) -> StellarResult<Plan> {
        let all = self.files().await?;
        let (Some(first), Some(last)) = (all.first(), all.last()) else {
            return Err(self.err("holds no batch files (names like FCD285FF--53312000.xdr.zst)"));
        };
        let from = from.unwrap_or(first.start);
        let to = to.unwrap_or(last.end);
        if to < from {
            return Err(self.err(format!("--to {to} is before --from {from}")));
        }
        if from < first.start || to > last.end {
            return Err(self.err(format!(
                "holds ledgers {}..={}, which does not cover {from}..={to}",
                first.start, last.end
            )));
        }
        let chosen: Vec<LakeFile> = all
            .into_iter()
            .filter(|f| f.end >= from && f.start <= to)
            .collect();
        for w in chosen.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            if u64::from(b.start) != u64::from(a.end) + 1 {
                let what = if b.start <= a.end {
                    "overlaps"
                } else {
                    "leaves a gap after"
                };
                return Err(StellarError::Gap {
                    detail: format!(
                        "in {}: {} (ledgers {}..={}) {what} {} (ledgers {}..={}); expected the next \
                         file to start at ledger {}",
                        self.root,
                        b.path,
                        b.start,
                        b.end,
                        a.path,
                        a.start,
                        a.end,
                        u64::from(a.end) + 1
                    ),
                });
            }
        }
        Ok(Plan {
            first: from,
            last: to,
            files: chosen.len() as u64,
            bytes: Some(chosen.iter().filter_map(|f| f.size).sum()),
            iter: Box::new(chosen.into_iter()),
        })
    }

    /// A file's bytes. A missing file is a gap naming it and its ledgers.
    pub async fn read(&self, f: &LakeFile) -> StellarResult<bytes::Bytes> {
        match self.try_read(f).await? {
            Some(b) => Ok(b),
            None => Err(StellarError::Gap {
                detail: format!(
                    "{}/{} is missing: the lake has no file for ledgers {}..={}",
                    self.root, f.path, f.start, f.end
                ),
            }),
        }
    }

    /// A file's bytes, or `None` when it does not exist (yet). Until the
    /// lake's extension is known, a missing `.xdr.zst` file is looked for
    /// as `.xdr.zstd` (older Galexie); whichever is found first fixes the
    /// extension of every later key.
    pub async fn try_read(&self, f: &LakeFile) -> StellarResult<Option<bytes::Bytes>> {
        self.try_read_inner(f).await.map_err(|e| match e {
            StellarError::Lake { root, detail } => StellarError::Lake {
                root,
                detail: format!("ledgers {}..={}: {detail}", f.start, f.end),
            },
            other => other,
        })
    }

    async fn try_read_inner(&self, f: &LakeFile) -> StellarResult<Option<bytes::Bytes>> {
        let key = f.path.as_ref();
        let Some(short) = key.strip_suffix(".xdr.zst") else {
            return self.get(&f.path).await;
        };
        let long = || ObjPath::from(format!("{short}.xdr.zstd"));
        match self.ext.load(Ordering::Relaxed) {
            EXT_LONG => return self.get(&long()).await,
            EXT_SHORT => return self.get(&f.path).await,
            _ => {}
        }
        if let Some(b) = self.get(&f.path).await? {
            self.ext.store(EXT_SHORT, Ordering::Relaxed);
            return Ok(Some(b));
        }
        let got = self.get(&long()).await?;
        if got.is_some() {
            self.ext.store(EXT_LONG, Ordering::Relaxed);
        }
        Ok(got)
    }

    /// Whether the file that holds `seq` exists (a HEAD request).
    pub(crate) async fn exists(&self, schema: &Schema, seq: u32) -> StellarResult<bool> {
        let f = self.file_for(schema, seq);
        let key = f.path.as_ref();
        let long = self.ext.load(Ordering::Relaxed) == EXT_LONG;
        let path = match key.strip_suffix(".xdr.zst") {
            Some(short) if long => ObjPath::from(format!("{short}.xdr.zstd")),
            _ => f.path.clone(),
        };
        match self.store.head(&path).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => {
                if self.ext.load(Ordering::Relaxed) == EXT_UNKNOWN
                    && let Some(short) = key.strip_suffix(".xdr.zst")
                {
                    let long = ObjPath::from(format!("{short}.xdr.zstd"));
                    return match self.store.head(&long).await {
                        Ok(_) => {
                            self.ext.store(EXT_LONG, Ordering::Relaxed);
                            Ok(true)
                        }
                        Err(object_store::Error::NotFound { .. }) => Ok(false),
                        Err(e) => Err(self.store_err(long.as_ref(), &e)),
                    };
                }
                Ok(false)
            }
            Err(e) => Err(self.store_err(path.as_ref(), &e)),
        }
    }

    async fn get(&self, path: &ObjPath) -> StellarResult<Option<bytes::Bytes>> {
        let key = path.as_ref();
        match self.store.get(path).await {
            Ok(r) => Ok(Some(self.read_capped(key, r, MAX_FILE_BYTES).await?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.store_err(key, &e)),
        }
    }
}

impl DataLake {
    /// An object's bytes, refused before they are read when the store
    /// says it is larger than `max`, and cut off past `max` if the store
    /// sends more than it said.
    async fn read_capped(
        &self,
        key: &str,
        r: object_store::GetResult,
        max: u64,
    ) -> StellarResult<bytes::Bytes> {
        let too_big = |n: u64| {
            self.err(format!(
                "{key}: {n} bytes or more; a lake object is read only up to {max} bytes"
            ))
        };
        if r.meta.size > max {
            return Err(too_big(r.meta.size));
        }
        let mut out = Vec::with_capacity(usize::try_from(r.meta.size).unwrap_or(0));
        let mut stream = r.into_stream();
        while let Some(chunk) = stream
            .try_next()
            .await
            .map_err(|e| self.store_err(key, &e))?
        {
            if (out.len() + chunk.len()) as u64 > max {
                return Err(too_big((out.len() + chunk.len()) as u64));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(bytes::Bytes::from(out))
    }
}

/// object_store's message, without the retry chatter's repetition.
fn short(e: &object_store::Error) -> String {
    let s = e.to_string();
    if s.len() > 600 {
        format!("{}…", &s[..s.floor_char_boundary(600)])
    } else {
        s
    }
}
