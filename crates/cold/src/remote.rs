//! The object store as the cold tier sees it: manifests (listed, read,
//! created conditionally), whole and ranged object reads that name the
//! object when they fail, and uploads of local files. Every read is
//! counted (GETs and bytes) for `stats` and `/metrics`.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures::StreamExt;
use ledgerstore_pack::Manifest;
use ledgerstore_pack::manifest::{MANIFEST_PREFIX, manifest_key, parse_manifest_key};
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use crate::error::{ColdError, ColdResult};

/// Files above this size are uploaded in parts.
const MULTIPART_OVER: u64 = 16 << 20;
/// Part size of multipart uploads, and the read buffer.
const PART: usize = 8 << 20;
/// Parts in flight per upload.
const PARTS_IN_FLIGHT: usize = 4;
/// The largest manifest read (a manifest lists a few hundred bytes per
/// range: this is a million ranges).
pub const MAX_MANIFEST_BYTES: u64 = 256 << 20;
/// The largest dictionary read (the store trains dictionaries of at most
/// a few MiB).
pub const MAX_DICT_BYTES: u64 = 64 << 20;

/// The cold tier's object store.
#[derive(Debug)]
pub struct Remote {
    store: Arc<dyn ObjectStore>,
    location: String,
    gets: AtomicU64,
    get_bytes: AtomicU64,
}

impl Remote {
    /// The store at `location` (shown in messages), rooted at its prefix.
    pub fn new(store: Arc<dyn ObjectStore>, location: impl Into<String>) -> Self {
        Self {
            store,
            location: location.into(),
            gets: AtomicU64::new(0),
            get_bytes: AtomicU64::new(0),
        }
    }

    /// The location, as given.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// GETs (whole and ranged) and the bytes they fetched, so far.
    pub fn reads(&self) -> (u64, u64) {
        (
            self.gets.load(Ordering::Relaxed),
            self.get_bytes.load(Ordering::Relaxed),
        )
    }

    fn failed(&self, key: &str, e: object_store::Error) -> ColdError {
        match e {
            object_store::Error::NotFound { .. } => {
                tracing::warn!(store = %self.location, object = key, error = %e, "object not found");
                ColdError::Damaged {
                    object: key.to_string(),
                    detail: "not found in the published store".into(),
                }
            }
            e => ColdError::Remote {
                object: key.to_string(),
                detail: "the object store could not be read (the cause is in the server's log); \
                         retry"
                    .into(),
                cause: format!("{} ({e})", self.location),
            },
        }
    }

    /// The newest manifest version, if it is newer than `after`: one
    /// listing of `manifest/` that starts after `after`'s key.
    pub async fn newest(&self, after: Option<u64>) -> ColdResult<Option<u64>> {
        let prefix = ObjPath::from(MANIFEST_PREFIX);
        let mut list = match after {
            Some(v) => self
                .store
                .list_with_offset(Some(&prefix), &ObjPath::from(manifest_key(v))),
            None => self.store.list(Some(&prefix)),
        };
        let mut newest = None;
        while let Some(meta) = list.next().await {
            let meta = meta.map_err(|e| self.failed(MANIFEST_PREFIX, e))?;
            if let Some(v) = parse_manifest_key(meta.location.as_ref()) {
                newest = newest.max(Some(v));
            }
        }
        Ok(newest.filter(|v| after.is_none_or(|a| *v > a)))
    }

    /// Reads and validates manifest `version` (at most
    /// [`MAX_MANIFEST_BYTES`]).
    pub async fn manifest(&self, version: u64) -> ColdResult<Manifest> {
        let key = manifest_key(version);
        let bytes = self
            .get_at_most(&key, MAX_MANIFEST_BYTES, "a manifest")
            .await?;
        Manifest::parse(&key, &bytes).map_err(|e| ColdError::damaged(&key, e.to_string()))
    }

    /// The newest manifest, if any.
    pub async fn newest_manifest(&self) -> ColdResult<Option<Manifest>> {
        match self.newest(None).await? {
            Some(v) => Ok(Some(self.manifest(v).await?)),
            None => Ok(None),
        }
    }

    /// Creates manifest `m.version`; fails with [`ColdError::Conflict`] if
    /// that version exists (`If-None-Match: *`) with other bytes. A
    /// refusal is checked by reading the object back: a retried request
    /// whose first attempt created it is refused too, and is this
    /// writer's own manifest, not a conflict.
    pub async fn create_manifest(&self, m: &Manifest) -> ColdResult<()> {
        let key = manifest_key(m.version);
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let bytes = m.to_bytes();
        match self
            .store
            .put_opts(&ObjPath::from(key.as_str()), bytes.clone().into(), opts)
            .await
        {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => {
                let there = self
                    .get_at_most(&key, MAX_MANIFEST_BYTES, "a manifest")
                    .await?;
                if there == bytes {
                    tracing::info!(
                        manifest = %key,
                        "the create was refused, and the manifest there is this round's: a \
                         retried request whose first attempt succeeded"
                    );
                    return Ok(());
                }
                Err(ColdError::Conflict { key })
            }
            Err(e) => Err(self.failed(&key, e)),
        }
    }

    /// A whole object of at most `max` bytes (`what` names it in the
    /// error): one larger is refused before its bytes are read, and the
    /// read stops past `max` if the object store sends more than it said.
    pub async fn get_at_most(&self, key: &str, max: u64, what: &str) -> ColdResult<Bytes> {
        let got = self
            .store
            .get(&ObjPath::from(key))
            .await
            .map_err(|e| self.failed(key, e))?;
        let too_big = |n: u64| {
            ColdError::damaged(
                key,
                format!("{n} bytes or more; {what} is at most {max} bytes"),
            )
        };
        if got.meta.size > max {
            return Err(too_big(got.meta.size));
        }
        let mut stream = got.into_stream();
        let mut out = Vec::new();
        let mut n = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.failed(key, e))?;
            n += chunk.len() as u64;
            if n > max {
                self.count(n as usize);
                return Err(too_big(n));
            }
            out.extend_from_slice(&chunk);
        }
        self.count(n as usize);
        Ok(Bytes::from(out))
    }

    /// Bytes `range` of an object; a short answer is damage.
    pub async fn get_range(&self, key: &str, range: Range<u64>) -> ColdResult<Bytes> {
        let Some(want) = range.end.checked_sub(range.start) else {
            return Err(ColdError::damaged(
                key,
                format!(
                    "bytes {}..{} asked for: an inverted range",
                    range.start, range.end
                ),
            ));
        };
        let bytes = self
            .store
            .get_range(&ObjPath::from(key), range.clone())
            .await
            .map_err(|e| self.failed(key, e))?;
        self.count(bytes.len());
        if bytes.len() as u64 != want {
            return Err(ColdError::damaged(
                key,
                format!(
                    "bytes {}..{} came back as {} bytes: the object is shorter than the manifest \
                     says",
                    range.start,
                    range.end,
                    bytes.len()
                ),
            ));
        }
        Ok(bytes)
    }

    fn count(&self, n: usize) {
        self.gets.fetch_add(1, Ordering::Relaxed);
        self.get_bytes.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Streams an object into `dest`, checking its size and SHA-256. The
    /// read stops as soon as the object is longer than `size`.
    pub async fn download(
        &self,
        key: &str,
        size: u64,
        sha256: &str,
        dest: &Path,
    ) -> ColdResult<()> {
        let got = self
            .store
            .get(&ObjPath::from(key))
            .await
            .map_err(|e| self.failed(key, e))?;
        let mut stream = got.into_stream();
        let mut file = tokio::fs::File::create(dest)
            .await
            .map_err(ColdError::io(format!("create {}", dest.display())))?;
        let (mut h, mut n) = (Sha256::new(), 0u64);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.failed(key, e))?;
            n += chunk.len() as u64;
            if n > size {
                self.count(n as usize);
                drop(file);
                let _ = tokio::fs::remove_file(dest).await;
                return Err(ColdError::damaged(
                    key,
                    format!(
                        "more than the {size} bytes the manifest records (the read stopped at \
                         {n})"
                    ),
                ));
            }
            h.update(&chunk);
            tokio::io::AsyncWriteExt::write_all(&mut file, &chunk)
                .await
                .map_err(ColdError::io(format!("write {}", dest.display())))?;
        }
        // tokio's File writes on a blocking thread: wait for the last one
        // before the file is renamed and mapped.
        tokio::io::AsyncWriteExt::flush(&mut file)
            .await
            .map_err(ColdError::io(format!("write {}", dest.display())))?;
        drop(file);
        self.count(n as usize);
        let got = hex::encode(h.finalize());
        if n != size || got != sha256 {
            let _ = tokio::fs::remove_file(dest).await;
            return Err(ColdError::damaged(
                key,
                format!(
                    "{n} bytes with SHA-256 {got}; the manifest records {size} bytes with SHA-256 \
                     {sha256}"
                ),
            ));
        }
        Ok(())
    }

    /// True if `key` exists with `size` bytes (an upload to skip: keys are
    /// content-addressed).
    pub async fn has(&self, key: &str, size: u64) -> ColdResult<bool> {
        match self.store.head(&ObjPath::from(key)).await {
            Ok(meta) => Ok(meta.size == size),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.failed(key, e)),
        }
    }

    /// Uploads a local file (in parts past 16 MiB).
    pub async fn upload(&self, key: &str, path: &Path) -> ColdResult<()> {
        let io = |what: &str| ColdError::io(format!("{what} {}", path.display()));
        let mut f = tokio::fs::File::open(path).await.map_err(io("open"))?;
        let size = f.metadata().await.map_err(io("stat"))?.len();
        let loc = ObjPath::from(key);
        if size <= MULTIPART_OVER {
            let mut buf = Vec::with_capacity(size as usize);
            f.read_to_end(&mut buf).await.map_err(io("read"))?;
            self.store
                .put(&loc, PutPayload::from(buf))
                .await
                .map_err(|e| self.failed(key, e))?;
            return Ok(());
        }
        let upload = self
            .store
            .put_multipart(&loc)
            .await
            .map_err(|e| self.failed(key, e))?;
        let mut w = WriteMultipart::new_with_chunk_size(upload, PART);
        let mut buf = vec![0u8; PART];
        loop {
            let n = f.read(&mut buf).await.map_err(io("read"))?;
            if n == 0 {
                break;
            }
            if let Err(e) = w.wait_for_capacity(PARTS_IN_FLIGHT).await {
                return Err(self.failed(key, e));
            }
            w.write(&buf[..n]);
        }
        w.finish().await.map_err(|e| self.failed(key, e))?;
        Ok(())
    }
}
