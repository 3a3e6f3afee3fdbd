//! Reads of packs of ledger frames (pack versions 3 and 4): a body or a
//! ledger is read by reading its ledger's frame (the ledger table page,
//! then the frame: one ranged GET), checked against its CRC-32 and
//! decompressed no further than the pack's largest frame. A version-4
//! frame is decompressed with its pack's dictionary, read with one ranged
//! GET and then kept in the disk cache and, room allowing, in memory.
//!
//! Opened frames are kept in memory (by default up to [`FRAME_MEMORY`]
//! bytes, the most recently used; [`super::HeldMemory`]), so an alias and
//! the body it names, or lookups of one busy ledger, decompress its frame
//! once; so are dictionaries, by default up to [`DICT_MEMORY`]. A value
//! costing more than its bound is not kept. The disk cache holds the
//! compressed frames, as it holds any other piece, and the dictionaries
//! unpacked ([`DictReader::unpacked`]: one memory let go of is opened
//! again from there without being decompressed) or, where the unpacked
//! ones would not fit, as their packs store them ([`crate::dict_entry`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use ledgerstore_db_api::{
    Decompress, DictSet, LedgerRecord, TxBody, TxPos, TxRecord, ledger_record_seq,
};
use ledgerstore_pack::{DictReader, Header, LedgerEntry, LedgerFrame, PackRef};
use ledgerstore_store::StoreError;

use super::Replica;
use crate::cache::Kind;
use crate::dict_entry::{self, DictForm};
use crate::error::{ColdError, ColdResult};

/// Bytes of opened frames a replica keeps in memory by default
/// (`replica.frame_memory_mb`; what each holds decompressed, its part
/// table and its name).
pub const FRAME_MEMORY: usize = 32 << 20;

/// Bytes of pack dictionaries (version 4) a replica keeps in memory by
/// default (`replica.dict_memory_mb`; [`DictReader::memory`]): ~60 packs'
/// at the default 1 MiB budget, three at the largest (16 MiB).
pub const DICT_MEMORY: usize = 64 << 20;

/// What keeping a frame costs beyond its bytes: its name, the part table
/// (16 bytes a part) and the entry itself.
fn frame_cost(name: &str, f: &LedgerFrame) -> usize {
    const ENTRY: usize = 128;
    f.raw_len() + 16 * (f.bodies().count() + 1) + name.len() + ENTRY
}

/// What keeping a dictionary costs: its bytes, its name and the entry.
fn dict_cost(name: &str, d: &DictReader) -> usize {
    const ENTRY: usize = 128;
    d.memory() + name.len() + ENTRY
}

/// Values by piece name, each with its cost in bytes.
type Lru<T> = lru::LruCache<String, (Arc<T>, usize)>;

/// Opened frames or dictionaries by piece name, least recently used
/// evicted first, up to `cap` bytes (each value's cost, summed beside
/// them; a value costing more than that is not kept).
pub(super) struct Held<T> {
    cap: usize,
    held: Mutex<(Lru<T>, usize)>,
}

impl<T> Held<T> {
    pub(super) fn new(cap: usize) -> Self {
        Self {
            cap,
            held: Mutex::new((lru::LruCache::unbounded(), 0)),
        }
    }

    /// The bound on what it holds, bytes.
    pub(super) fn cap(&self) -> usize {
        self.cap
    }

    /// The bytes held now (the costs of the values kept).
    pub(super) fn bytes(&self) -> usize {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).1
    }

    pub(super) fn get(&self, name: &str) -> Option<Arc<T>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.0.get(name).map(|(f, _)| Arc::clone(f))
    }

    fn put(&self, name: String, f: Arc<T>, cost: usize) {
        if cost > self.cap {
            return;
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let (lru, bytes) = &mut *held;
        if let Some((_, old)) = lru.put(name, (f, cost)) {
            *bytes -= old;
        }
        *bytes += cost;
        while *bytes > self.cap {
            match lru.pop_lru() {
                Some((_, (_, c))) => *bytes -= c,
                None => break,
            }
        }
    }
}

/// Opened ledger frames, up to `replica.frame_memory_mb` ([`frame_cost`]).
pub(super) type Frames = Held<LedgerFrame>;

/// Pack dictionaries, up to `replica.dict_memory_mb` ([`dict_cost`]).
pub(super) type Dicts = Held<DictReader>;

/// The cache name of pack `key`'s dictionary.
pub(super) fn dict_name(key: &str) -> String {
    format!("d/{key}")
}

/// The cache name of ledger `seq`'s frame in pack `key`.
pub(super) fn frame_name(key: &str, seq: u32) -> String {
    format!("f/{key}/{seq}")
}

impl Replica {
    /// Ledger `seq`'s frame in pack `p` (versions 3 and 4), from memory, the
    /// disk cache, or one ranged GET.
    pub(super) fn frame(
        &self,
        p: &PackRef,
        h: &Header,
        le: &LedgerEntry,
        seq: u32,
    ) -> ColdResult<Arc<LedgerFrame>> {
        let key = &p.object.key;
        let name = frame_name(key, seq);
        if let Some(f) = self.frames.get(&name) {
            return Ok(f);
        }
        // A version-4 pack's dictionary first: one found damaged fails
        // here, before the frame is fetched. It stays in hand for the
        // frame, whether or not memory keeps it.
        let dict = self.frame_dict(p, h)?;
        let range = h
            .data_range(&le.record)
            .map_err(|e| ColdError::damaged(key, format!("ledger {seq}: {e}")))?;
        let bytes = self.piece(name.clone(), key, range)?;
        self.opened_frame(p, h, le, seq, name, &bytes, dict)
    }

    /// Fetched frame `bytes` (piece `name`) of ledger `seq` opened with
    /// its pack's dictionary `dict` (version 4) and checked, and kept in
    /// memory; a frame that fails leaves the disk cache.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn opened_frame(
        &self,
        p: &PackRef,
        h: &Header,
        le: &LedgerEntry,
        seq: u32,
        name: String,
        bytes: &[u8],
        dict: Option<Arc<DictReader>>,
    ) -> ColdResult<Arc<LedgerFrame>> {
        if let Some(f) = self.frames.get(&name) {
            return Ok(f);
        }
        let key = &p.object.key;
        let f = self.checked(&name, || {
            let damaged = |e: String| ColdError::damaged(key, format!("ledger {seq}: {e}"));
            let f = LedgerFrame::open(h, le, bytes, dict.as_deref())
                .map_err(|e| damaged(e.to_string()))?;
            // The frame must be this ledger's (a body's own record names
            // its ledger too, but a lookup confirms only its hash): its
            // record's sequence, without decompressing the record.
            let at = ledger_record_seq(f.record()).map_err(|e| damaged(e.to_string()))?;
            if at != seq {
                return Err(damaged(format!(
                    "the table's entry holds the frame of ledger {at}"
                )));
            }
            Ok(Arc::new(f))
        })?;
        let cost = frame_cost(&name, &f);
        self.frames.put(name, Arc::clone(&f), cost);
        Ok(f)
    }

    /// Pack `p`'s dictionary (version 4; `None` for version 3), from
    /// memory, the disk cache or one ranged GET, checked. Lookups that
    /// miss the same dictionary at once wait for one read of it (others
    /// do not wait); one found damaged is not read again for the
    /// segments' backoff, its error answered meanwhile, unless the disk
    /// cache holds a checked copy (cached from an earlier read that
    /// opened).
    pub(super) fn frame_dict(
        &self,
        p: &PackRef,
        h: &Header,
    ) -> ColdResult<Option<Arc<DictReader>>> {
        let Some(range) = h.dict_range() else {
            return Ok(None);
        };
        let key = &p.object.key;
        let name = dict_name(key);
        if let Some(d) = self.dicts.get(&name) {
            return Ok(Some(d));
        }
        let gate = {
            let mut loading = self.dict_loading.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(loading.entry(name.clone()).or_default())
        };
        let got = {
            // The first reader leaves what it opened in the gate, so the
            // ones waiting take it even when memory keeps no dictionary.
            // A read with a deadline waits for the first one's no later.
            let one = match ledgerstore_store::read_deadline() {
                None => Some(gate.lock()),
                Some(d) => gate.try_lock_until(d),
            };
            match one {
                None => Err(ColdError::Store(StoreError::DeadlinePassed {
                    what: format!("a lookup waiting for pack {key}'s dictionary"),
                })),
                Some(mut one) => match &*one {
                    Some(d) => Ok(Arc::clone(d)),
                    None => self.load_dict(key, &name, h, range).inspect(|d| {
                        *one = Some(Arc::clone(d));
                    }),
                },
            }
        };
        {
            // The last reader out removes the gate: each drops its own
            // handle under this lock (where readers take theirs), so the
            // last sees only the map's.
            let mut loading = self.dict_loading.lock().unwrap_or_else(|e| e.into_inner());
            drop(gate);
            if loading
                .get(&name)
                .is_some_and(|g| Arc::strong_count(g) == 1)
            {
                loading.remove(&name);
            }
        }
        got.map(Some)
    }

    /// Dictionaries being read now (their gates), for tests.
    #[cfg(test)]
    pub(crate) fn dicts_loading(&self) -> usize {
        self.dict_loading
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// The error pack `key`'s dictionary (piece `name`) was found damaged
    /// with, naming the pack, while its backoff runs.
    pub(super) fn dict_still_damaged(&self, key: &str, name: &str) -> ColdResult<()> {
        self.still_damaged(name).map_err(|e| match e {
            ColdError::Damaged { detail, .. } => ColdError::damaged(key, detail),
            other => other,
        })
    }

    /// [`Self::frame_dict`]'s read, under its gate: from memory if another
    /// reader got it meanwhile, else from the disk cache, else fetched
    /// unless its backoff runs.
    fn load_dict(
        &self,
        key: &str,
        name: &str,
        h: &Header,
        range: std::ops::Range<u64>,
    ) -> ColdResult<Arc<DictReader>> {
        if let Some(d) = self.dicts.get(name) {
            return Ok(d);
        }
        if let Some(d) = self.cached_dict(name, h) {
            return Ok(d);
        }
        self.dict_still_damaged(key, name)?;
        let (remote, k) = (Arc::clone(&self.remote), key.to_string());
        let bytes = self.block(async move { remote.get_range(&k, range).await })?;
        self.opened_dict(key, name, h, &bytes)
    }

    /// Pack dictionary `name` opened from the disk cache (in either of
    /// its forms, [`crate::dict_entry`]; unpacked, opening it decompresses
    /// nothing) and kept in memory; `None` if the cache does not hold it.
    /// An entry that fails its check (against pack header `h` for the
    /// stored form) leaves the cache (`None`: the pack's own copy is
    /// fetched again; the pack is not damaged for it).
    pub(super) fn cached_dict(&self, name: &str, h: &Header) -> Option<Arc<DictReader>> {
        let bytes = self.cache.get(name)?;
        match dict_entry::open(&bytes, h) {
            Ok((d, _)) => {
                // As a fetched copy that opens does: a pack whose own copy
                // was found damaged (by a read that raced the one that
                // cached this) starts its backoff afresh next time.
                self.clear_damage(name);
                Some(self.keep_dict(name, d))
            }
            Err(e) => {
                tracing::warn!(entry = %name, error = %e, "a cached dictionary is damaged; fetching it again");
                self.cache.remove(Kind::Piece, name);
                None
            }
        }
    }

    /// The form a dictionary of `raw_len` bytes is cached in now
    /// ([`dict_entry::choose`]: by the packs the manifest lists and the
    /// pack pieces' budget). The first dictionary cached in each form is
    /// logged (dictionaries differ in size, so both may be in use).
    fn dict_form(&self, raw_len: usize) -> DictForm {
        let packs = self.view().manifest.as_ref().map_or(0, |m| m.packs.len());
        let budget = self.cache.pieces_limit();
        let form = dict_entry::choose(packs, raw_len, budget);
        let bit = match form {
            DictForm::Unpacked => 1,
            DictForm::Stored => 2,
        };
        if self.dict_forms_logged.fetch_or(bit, Ordering::Relaxed) & bit == 0 {
            tracing::info!(
                form = form.name(),
                packs,
                dict_bytes = raw_len,
                pieces_budget = budget,
                "a pack dictionary is cached on disk {} (unpacked while the listed packs' \
                 dictionaries of its size would take at most half of the pack pieces' budget, \
                 a quarter of replica.cache_mb; logged once a form)",
                form.name()
            );
        }
        form
    }

    /// An opened dictionary counted and kept in memory, room allowing.
    fn keep_dict(&self, name: &str, d: DictReader) -> Arc<DictReader> {
        let d = Arc::new(d);
        self.pack_dict_opens.fetch_add(1, Ordering::Relaxed);
        self.dicts
            .put(name.to_string(), Arc::clone(&d), dict_cost(name, &d));
        d
    }

    /// Pack `key`'s fetched dictionary `bytes` (its stored form, piece
    /// `name`) opened and checked, kept in memory, and kept in the disk
    /// cache in the form [`Self::dict_form`] chooses (a failed cache write
    /// is logged, the dictionary served); one that fails is remembered as
    /// damaged (its backoff), one that opens clears that.
    pub(super) fn opened_dict(
        &self,
        key: &str,
        name: &str,
        h: &Header,
        bytes: &[u8],
    ) -> ColdResult<Arc<DictReader>> {
        let opened = DictReader::raw_of(h, bytes)
            .and_then(|raw| DictReader::of_raw(&raw).map(|d| (d, raw)))
            .map_err(|e| ColdError::damaged(key, e.to_string()));
        match opened {
            Ok((d, raw)) => {
                let crc = DictReader::unpacked_crc(&raw);
                let form = self.dict_form(raw.len());
                let parts = dict_entry::parts(form, &raw, &crc, bytes);
                if let Err(e) = self.cache.put_parts(name, &parts) {
                    tracing::warn!(entry = %name, error = %e, "caching a dictionary failed; serving it uncached");
                }
                drop(raw);
                self.clear_damage(name);
                Ok(self.keep_dict(name, d))
            }
            Err(e) => {
                if let ColdError::Damaged { detail, .. } = &e {
                    self.found_damaged(name, key, detail);
                }
                Err(e)
            }
        }
    }

    /// Pack `key`'s dictionary (piece `name`) if memory holds it.
    pub(super) fn dict_held(&self, name: &str) -> Option<Arc<DictReader>> {
        self.dicts.get(name)
    }

    /// The stored body at `pos` from its ledger's frame.
    pub(super) fn frame_body(
        &self,
        p: &PackRef,
        h: &Header,
        le: &LedgerEntry,
        pos: TxPos,
    ) -> ColdResult<TxBody> {
        let f = self.frame(p, h, le, pos.seq)?;
        body_of(p, &f, pos)
    }

    /// Ledger `seq` of a pack of frames, with exactly the bytes ingested
    /// (a skeleton record joined with its bodies, checked against its
    /// SHA-256).
    pub(super) fn frame_ledger(
        &self,
        p: &PackRef,
        h: &Header,
        le: &LedgerEntry,
        dicts: &DictSet,
        seq: u32,
    ) -> ColdResult<LedgerRecord> {
        let key = &p.object.key;
        let damaged = |e: String| ColdError::damaged(key, format!("ledger {seq}: {e}"));
        let f = self.frame(p, h, le, seq)?;
        let stored = super::record_of(key, seq, f.record())?;
        if !stored.needs_bodies() {
            return stored.into_whole().map_err(|e| damaged(e.to_string()));
        }
        let n = u32::try_from(stored.tx_hashes.len()).unwrap_or(u32::MAX);
        let records: Vec<TxRecord> = (0..n)
            .map(|i| {
                body_of(p, &f, TxPos { seq, index: i }).and_then(|body| {
                    body.record(dicts)
                        .map_err(|e| damaged(format!("body {i}: {e}")))
                })
            })
            .collect::<ColdResult<_>>()?;
        stored
            .join_records(&records)
            .map_err(|e| damaged(e.to_string()))
    }
}

/// Body `pos.index` of ledger frame `f` of pack `p`, parsed.
pub(super) fn body_of(p: &PackRef, f: &LedgerFrame, pos: TxPos) -> ColdResult<TxBody> {
    let damaged = |e: String| {
        ColdError::damaged(
            &p.object.key,
            format!("ledger {} body {}: {e}", pos.seq, pos.index),
        )
    };
    let b = f.body(pos.index).map_err(|e| damaged(e.to_string()))?;
    TxBody::decompress(b).map_err(|e| damaged(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ledgerstore_pack::format::HEADER;
    use ledgerstore_pack::{Entry, frame_ledger};

    /// An opened frame of `bytes` raw bytes of record.
    fn frame(bytes: usize) -> Arc<LedgerFrame> {
        let framed = frame_ledger(&vec![7u8; bytes], &[vec![1u8; 10]], 1).expect("frame");
        let h = Header {
            version: 3,
            first: 1,
            last: 1,
            max_entry: framed.frame.len() as u32,
            bodies: 1,
            ledger_table: HEADER + framed.frame.len() as u64,
            body_table: 0,
            size: 0,
            max_raw: framed.raw_len,
        };
        let le = LedgerEntry {
            record: Entry {
                offset: HEADER,
                len: framed.frame.len() as u32,
                crc: crc32fast::hash(&framed.frame),
            },
            first_body: 0,
            bodies: 1,
        };
        Arc::new(LedgerFrame::open(&h, &le, &framed.frame, None).expect("open"))
    }

    #[test]
    fn frames_in_memory_stay_within_their_bytes_least_recently_used_out_first() {
        let held = Frames::new(FRAME_MEMORY);
        let put = |name: &str, f: &Arc<LedgerFrame>| {
            held.put(name.into(), Arc::clone(f), frame_cost(name, f));
        };
        let f = frame(FRAME_MEMORY / 4);
        for name in ["a", "b", "c"] {
            put(name, &f);
        }
        assert!(held.get("a").is_some(), "three quarters fit");
        // A fourth quarter (and its overhead) evicts the least recently
        // used: "b", since "a" was just read.
        put("d", &f);
        assert!(held.get("b").is_none());
        assert!(held.get("a").is_some() && held.get("c").is_some() && held.get("d").is_some());
        let total = held.held.lock().expect("lock").1;
        assert!(total <= FRAME_MEMORY, "{total}");
        assert_eq!(total, 3 * frame_cost("a", &f));
        // The same name again replaces, not adds.
        put("d", &f);
        assert_eq!(held.held.lock().expect("lock").1, total);
        // A frame past the bound is not kept, and evicts nothing.
        put("huge", &frame(FRAME_MEMORY));
        assert!(held.get("huge").is_none() && held.get("a").is_some());
        // Many small frames: the count follows the bytes they cost.
        let small = frame(10);
        let cost = frame_cost("x-000000", &small);
        for i in 0..(2 * FRAME_MEMORY / cost) {
            put(&format!("x-{i:06}"), &small);
        }
        let (lru, bytes) = &*held.held.lock().expect("lock");
        assert!(*bytes <= FRAME_MEMORY && lru.len() <= FRAME_MEMORY / cost);
    }
}
