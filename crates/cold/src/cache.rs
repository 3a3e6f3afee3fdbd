//! A replica's disk cache: objects' pieces (segment files whole; pack
//! headers, table pages, ledgers and bodies) as files in one directory,
//! bounded in bytes, evicted least recently used first. Segments and pack
//! pieces have budgets of their own (a [`PIECE_SHARE`]th of the bound
//! for pieces, the rest for segments), so paging through ledgers never evicts a segment that every
//! lookup probes. It is emptied when the replica starts: a replica keeps
//! no state across restarts.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use lru::LruCache;

use crate::error::{ColdError, ColdResult};

/// The file that marks a directory as a cache (and so safe to empty).
const MARKER: &str = ".ledgerstore-cache";
/// Pack pieces may use one [`PIECE_SHARE`]th of the bound; segment files
/// the rest.
pub const PIECE_SHARE: u64 = 4;

/// What an entry is: each kind has its own budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole segment file, used through its mapping.
    Segment,
    /// A piece of a pack: a header, a table page, a ledger or a body.
    Piece,
}

/// Figures for `stats` and `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheFigures {
    /// Bytes held now.
    pub bytes: u64,
    /// The bound.
    pub limit: u64,
    /// Bytes of segment files held now.
    pub segment_bytes: u64,
    /// The segment files' budget (the rest of the bound is pack pieces').
    pub segment_limit: u64,
    /// Entries held now.
    pub entries: u64,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that had to fetch.
    pub misses: u64,
    /// Entries evicted to stay under the bound.
    pub evictions: u64,
}

/// One kind's entries: name → bytes, most recently used last out.
struct Lru {
    lru: LruCache<String, u64>,
    bytes: u64,
    limit: u64,
}

impl Lru {
    fn new(limit: u64) -> Self {
        Self {
            lru: LruCache::unbounded(),
            bytes: 0,
            limit,
        }
    }

    fn remove(&mut self, name: &str) -> bool {
        match self.lru.pop(name) {
            Some(size) => {
                self.bytes -= size;
                true
            }
            None => false,
        }
    }
}

struct Inner {
    segments: Lru,
    pieces: Lru,
}

impl Inner {
    fn of(&mut self, kind: Kind) -> &mut Lru {
        match kind {
            Kind::Segment => &mut self.segments,
            Kind::Piece => &mut self.pieces,
        }
    }
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

/// A new file at `path` of the bytes of `parts`, one after another.
fn write_parts(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = fs::File::create(path)?;
    for p in parts {
        f.write_all(p)?;
    }
    Ok(())
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
        let pieces = limit / PIECE_SHARE;
        Ok(Self {
            dir: dir.to_path_buf(),
            limit,
            inner: Mutex::new(Inner {
                segments: Lru::new(limit - pieces),
                pieces: Lru::new(pieces),
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

    /// The pack pieces' budget, bytes (a [`PIECE_SHARE`]th of the bound).
    pub fn pieces_limit(&self) -> u64 {
        self.lock().pieces.limit
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file an entry is (or would be) kept in. Names are flat:
    /// `/` becomes `~`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name.replace('/', "~"))
    }

    /// A piece's bytes, if held (marks it recently used).
    pub fn get(&self, name: &str) -> Option<Vec<u8>> {
        let held = self.lock().pieces.lru.get(name).is_some();
        let got = held.then(|| fs::read(self.path(name)).ok()).flatten();
        match got {
            Some(_) => self.hits.fetch_add(1, Ordering::Relaxed),
            None => self.misses.fetch_add(1, Ordering::Relaxed),
        };
        got
    }

    /// True if piece `name` is held, marking it recently used (so that
    /// what is put next evicts it last). A piece not held counts a miss
    /// (its caller fetches it instead); one held counts no hit:
    /// [`Self::get`] does, when it is read.
    pub fn holds(&self, name: &str) -> bool {
        let held = self.lock().pieces.lru.get(name).is_some();
        if !held {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
        held
    }

    /// True if the segment entry is held (marks it recently used, and
    /// counts a hit or a miss): segments are used through their file.
    pub fn touch(&self, name: &str) -> bool {
        let held = self.lock().segments.lru.get(name).is_some();
        let c = if held { &self.hits } else { &self.misses };
        c.fetch_add(1, Ordering::Relaxed);
        held
    }

    /// Stores a piece's bytes, then evicts pieces down to their budget. A
    /// failed write leaves no file behind.
    pub fn put(&self, name: &str, bytes: &[u8]) -> ColdResult<()> {
        self.put_parts(name, &[bytes])
    }

    /// [`Self::put`] of the bytes of `parts`, one after another. A piece
    /// larger than the pieces' whole budget is not kept (it would evict
    /// every other piece, then itself): Ok, and nothing is written.
    pub fn put_parts(&self, name: &str, parts: &[&[u8]]) -> ColdResult<()> {
        let size: u64 = parts.iter().map(|p| p.len() as u64).sum();
        if size > self.lock().pieces.limit {
            return Ok(());
        }
        let path = self.path(name);
        let n = self.writes.fetch_add(1, Ordering::Relaxed);
        let tmp = self.dir.join(format!(".tmp{n}-{}", name.replace('/', "~")));
        let written = write_parts(&tmp, parts)
            .map_err(ColdError::io(format!("write {}", tmp.display())))
            .and_then(|()| {
                fs::rename(&tmp, &path).map_err(ColdError::io(format!("rename {}", path.display())))
            });
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        self.adopt(Kind::Piece, name, size);
        Ok(())
    }

    /// Records a file already written at [`DiskCache::path`], then evicts
    /// entries of its kind down to their budget (the new entry last: a
    /// file larger than the whole budget is evicted at once, and its user
    /// keeps it open meanwhile). Returns the names evicted, so that their
    /// users let go of them (a mapped file's disk space is freed only
    /// once it is unmapped).
    pub fn adopt(&self, kind: Kind, name: &str, size: u64) -> Vec<String> {
        let mut evicted = Vec::new();
        {
            let mut g = self.lock();
            let l = g.of(kind);
            l.remove(name);
            l.lru.put(name.to_string(), size);
            l.bytes += size;
            while l.bytes > l.limit {
                let Some((k, v)) = l.lru.pop_lru() else { break };
                l.bytes -= v;
                evicted.push(k);
            }
        }
        for k in &evicted {
            self.evictions.fetch_add(1, Ordering::Relaxed);
            let _ = fs::remove_file(self.path(k));
        }
        evicted
    }

    /// Drops an entry (a superseded segment) and its file, if held.
    pub fn remove(&self, kind: Kind, name: &str) {
        if self.lock().of(kind).remove(name) {
            let _ = fs::remove_file(self.path(name));
        }
    }

    /// The figures now.
    pub fn figures(&self) -> CacheFigures {
        let g = self.lock();
        CacheFigures {
            bytes: g.segments.bytes + g.pieces.bytes,
            limit: self.limit,
            segment_bytes: g.segments.bytes,
            segment_limit: g.segments.limit,
            entries: (g.segments.lru.len() + g.pieces.lru.len()) as u64,
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
        // Pieces get 250 bytes of the 1000, segments 750.
        let c = DiskCache::open(&dir.path().join("c"), 1000).expect("open");
        c.put("a/1", &[1; 100]).expect("a");
        c.put("b", &[2; 100]).expect("b");
        assert_eq!(c.get("a/1"), Some(vec![1; 100])); // a is now newer than b
        c.put("c", &[3; 100]).expect("c"); // 300 > 250: b goes
        assert_eq!(c.get("b"), None);
        assert!(!c.path("b").exists());
        assert!(c.path("a/1").exists() && c.path("c").exists());
        let f = c.figures();
        assert_eq!((f.bytes, f.entries, f.evictions), (200, 2, 1));
        assert_eq!((f.hits, f.misses), (1, 1));
        assert_eq!((f.segment_limit, f.limit), (750, 1000));
        // Bigger than the budget: not kept, and nothing else evicted.
        c.put_parts("huge", &[&[4; 200], &[5; 51]]).expect("huge");
        assert_eq!(c.get("huge"), None);
        let f = c.figures();
        assert_eq!((f.bytes, f.entries, f.evictions), (200, 2, 1));
        assert_eq!(
            std::fs::read_dir(dir.path().join("c")).expect("ls").count(),
            3
        ); // a/1, c and the marker
        // Just the budget, in parts: kept whole, and the rest evicted.
        c.put_parts("full", &[&[6; 200], &[7; 50]]).expect("full");
        let mut want = vec![6; 200];
        want.extend([7; 50]);
        assert_eq!(c.get("full"), Some(want));
        let f = c.figures();
        assert_eq!((f.bytes, f.entries, f.evictions), (250, 1, 3));
        // `holds` counts a miss for a piece it does not hold (its caller
        // fetches it), no hit for one it does (`get` counts that).
        let before = (f.hits, f.misses);
        assert!(c.holds("full") && !c.holds("gone"));
        let f = c.figures();
        assert_eq!((f.hits, f.misses), (before.0, before.1 + 1));
    }

    #[test]
    fn segments_and_pieces_have_budgets_of_their_own() {
        let dir = tempfile::tempdir().expect("tmp");
        let c = DiskCache::open(&dir.path().join("c"), 1000).expect("open");
        for (name, size) in [("seg/a", 400u64), ("seg/b", 300)] {
            std::fs::write(c.path(name), vec![0; size as usize]).expect("write");
            assert!(c.adopt(Kind::Segment, name, size).is_empty());
        }
        // Paging through many pieces never evicts a segment.
        for i in 0..50 {
            c.put(&format!("l/p/{i}"), &[9; 100]).expect("piece");
        }
        assert!(c.touch("seg/a") && c.touch("seg/b"));
        let f = c.figures();
        assert_eq!((f.segment_bytes, f.bytes), (700, 900));
        // A third segment evicts the least recently used one, and says so.
        std::fs::write(c.path("seg/c"), vec![0; 100]).expect("write");
        assert_eq!(c.adopt(Kind::Segment, "seg/c", 100), vec!["seg/a"]);
        assert!(!c.path("seg/a").exists() && !c.touch("seg/a"));
        c.remove(Kind::Segment, "seg/b");
        assert!(!c.path("seg/b").exists() && !c.touch("seg/b"));
        assert_eq!(c.figures().segment_bytes, 100);
    }

    #[test]
    fn a_failed_write_leaves_no_file() {
        let dir = tempfile::tempdir().expect("tmp");
        let c = DiskCache::open(&dir.path().join("c"), 1000).expect("open");
        // A directory where the entry's file goes: the rename fails (even
        // for root).
        std::fs::create_dir_all(c.path("x").join("in-the-way")).expect("dir");
        c.put("x", b"bytes").expect_err("rename onto a directory");
        let names: Vec<_> = std::fs::read_dir(c.dir())
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.starts_with(".tmp")), "{names:?}");
        assert_eq!(c.get("x"), None);
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
