//! A replica's disk cache: objects' pieces (segment files whole; pack
//! headers, table pages, ledgers and bodies) as files in one directory,
//! bounded in bytes, evicted least recently used first. It is emptied when
//! the replica starts: a replica keeps no state across restarts.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use lru::LruCache;

use crate::error::{ColdError, ColdResult};

/// The file that marks a directory as a cache (and so safe to empty).
const MARKER: &str = ".ledgerstore-cache";

/// Figures for `stats` and `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheFigures {
    /// Bytes held now.
    pub bytes: u64,
    /// The bound.
    pub limit: u64,
    /// Entries held now.
    pub entries: u64,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that had to fetch.
    pub misses: u64,
    /// Entries evicted to stay under the bound.
    pub evictions: u64,
}

struct Inner {
    /// Entry name → its bytes, most recently used last out.
    lru: LruCache<String, u64>,
    bytes: u64,
}

/// The cache.
pub struct DiskCache {
    dir: PathBuf,
    limit: u64,
    inner: Mutex<Inner>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    /// Names writes in progress apart.
    writes: AtomicU64,
}

impl std::fmt::Debug for DiskCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskCache")
            .field("dir", &self.dir)
            .field("figures", &self.figures())
            .finish()
    }
}

impl DiskCache {
    /// A cache in `dir` (emptied: created if missing) of at most `limit`
    /// bytes.
    pub fn open(dir: &Path, limit: u64) -> ColdResult<Self> {
        let marker = dir.join(MARKER);
        if dir.exists() {
            let empty = fs::read_dir(dir)
                .map_err(ColdError::io(format!("list {}", dir.display())))?
                .next()
                .is_none();
            if !empty && !marker.exists() {
                return Err(ColdError::Io {
                    context: format!(
                        "cache dir {}: not empty, and not a ledgerstore cache (no {MARKER}); \
                         name a new or empty directory",
                        dir.display()
                    ),
                    source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
                });
            }
            fs::remove_dir_all(dir).map_err(ColdError::io(format!("empty {}", dir.display())))?;
        }
        fs::create_dir_all(dir).map_err(ColdError::io(format!("create {}", dir.display())))?;
        fs::write(
            &marker,
            b"a ledgerstore replica cache: emptied at every start\n",
        )
        .map_err(ColdError::io(format!("write {}", marker.display())))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            limit,
            inner: Mutex::new(Inner {
                lru: LruCache::unbounded(),
                bytes: 0,
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The file an entry is (or would be) kept in. Names are flat:
    /// `/` becomes `~`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name.replace('/', "~"))
    }

    /// An entry's bytes, if held (marks it recently used).
    pub fn get(&self, name: &str) -> Option<Vec<u8>> {
        let held = self.lock().lru.get(name).is_some();
        let got = held.then(|| fs::read(self.path(name)).ok()).flatten();
        match got {
            Some(_) => self.hits.fetch_add(1, Ordering::Relaxed),
            None => self.misses.fetch_add(1, Ordering::Relaxed),
        };
        got
    }

    /// True if the entry is held (marks it recently used, and counts a hit
    /// or a miss): for entries used through their file (segments).
    pub fn touch(&self, name: &str) -> bool {
        let held = self.lock().lru.get(name).is_some();
        let c = if held { &self.hits } else { &self.misses };
        c.fetch_add(1, Ordering::Relaxed);
        held
    }

    /// Stores an entry's bytes, then evicts down to the bound.
    pub fn put(&self, name: &str, bytes: &[u8]) -> ColdResult<()> {
        let path = self.path(name);
        let n = self.writes.fetch_add(1, Ordering::Relaxed);
        let tmp = self.dir.join(format!(".tmp{n}-{}", name.replace('/', "~")));
        fs::write(&tmp, bytes).map_err(ColdError::io(format!("write {}", tmp.display())))?;
        fs::rename(&tmp, &path).map_err(ColdError::io(format!("rename {}", path.display())))?;
        self.adopt(name, bytes.len() as u64);
        Ok(())
    }

    /// Records a file already written at [`DiskCache::path`], then evicts
    /// down to the bound (the new entry last: a file larger than the whole
    /// bound is evicted at once, and its user keeps it open meanwhile).
    pub fn adopt(&self, name: &str, size: u64) {
        let mut evicted = Vec::new();
        {
            let mut g = self.lock();
            if let Some(old) = g.lru.put(name.to_string(), size) {
                g.bytes -= old;
            }
            g.bytes += size;
            while g.bytes > self.limit {
                let Some((k, v)) = g.lru.pop_lru() else { break };
                g.bytes -= v;
                evicted.push(k);
            }
        }
        for k in evicted {
            self.evictions.fetch_add(1, Ordering::Relaxed);
            let _ = fs::remove_file(self.path(&k));
        }
    }

    /// The figures now.
    pub fn figures(&self) -> CacheFigures {
        let g = self.lock();
        CacheFigures {
            bytes: g.bytes,
            limit: self.limit,
            entries: g.lru.len() as u64,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used_down_to_the_bound() {
        let dir = tempfile::tempdir().expect("tmp");
        let c = DiskCache::open(&dir.path().join("c"), 250).expect("open");
        c.put("a/1", &[1; 100]).expect("a");
        c.put("b", &[2; 100]).expect("b");
        assert_eq!(c.get("a/1"), Some(vec![1; 100])); // a is now newer than b
        c.put("c", &[3; 100]).expect("c"); // 300 > 250: b goes
        assert_eq!(c.get("b"), None);
        assert!(!c.path("b").exists());
        assert!(c.path("a/1").exists() && c.touch("c"));
        let f = c.figures();
        assert_eq!((f.bytes, f.entries, f.evictions), (200, 2, 1));
        assert_eq!((f.hits, f.misses), (2, 1));
        c.put("huge", &[4; 1000]).expect("huge"); // bigger than the bound
        let f = c.figures();
        assert_eq!((f.bytes, f.entries), (0, 0));
        assert_eq!(
            std::fs::read_dir(dir.path().join("c")).expect("ls").count(),
            1
        ); // the marker
    }

    #[test]
    fn open_empties_what_a_previous_run_left() {
        let dir = tempfile::tempdir().expect("tmp");
        let c = DiskCache::open(dir.path(), 1 << 20).expect("open");
        c.put("x", b"stale").expect("put");
        drop(c);
        let c = DiskCache::open(dir.path(), 1 << 20).expect("reopen");
        assert_eq!(c.get("x"), None);
        assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 1); // the marker
        let other = tempfile::tempdir().expect("tmp");
        std::fs::write(other.path().join("precious"), b"x").expect("write");
        let e = DiskCache::open(other.path(), 1)
            .expect_err("not a cache")
            .to_string();
        assert!(e.contains("not a ledgerstore cache"), "{e}");
        assert!(other.path().join("precious").exists());
    }
}
