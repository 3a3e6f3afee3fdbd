//! Opening an index file: header and section bounds checked in constant
//! time; lookups bounds-checked; [`EventIndex::verify`] checks the SHA-256.

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use ledgerstore_stellar::events::EventId;
use memmap2::Mmap;
use sha2::{Digest, Sha256};

use crate::error::{EventIndexError, EventIndexResult};
use crate::ids::Ids;
use crate::keys::{FIXED, ListRef, u32_at, u64_at};
use crate::postings::{Cursor, List};
use crate::write::bucket_of;
use crate::{
    CONTRACT_SAMPLE, HEADER, LEDGER_SAMPLE, MAGIC, SECTION_NAMES, SECTIONS, VERSION, search,
};

enum Bytes {
    Map(Mmap),
    Heap(Vec<u8>),
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes", self.as_ref().len())
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Heap(v) => v,
        }
    }
}

const POSTINGS: usize = 0;
const LEDGERS: usize = 1;
const RUNS: usize = 2;
const FIXED_SEC: usize = 3;
const CONTRACTS: usize = 4;
const DIR: usize = 5;
const TOPICS: usize = 6;
const LEDGER_SAMPLE_SEC: usize = 7;
const CONTRACT_SAMPLE_SEC: usize = 8;

/// An open event index file (memory-mapped, or bytes on the heap).
#[derive(Debug)]
pub struct EventIndex {
    bytes: Bytes,
    first: u32,
    last: u32,
    n: u32,
    contracts: usize,
    topics: usize,
    dir_bits: u32,
    sections: [Range<usize>; SECTIONS],
    /// The samples, copied to the heap at open (1/512 of the ledger
    /// table, 1/64 of the contract ids: bounded by the file's own size).
    ledger_sample: Vec<u32>,
    contract_sample: Vec<[u8; 32]>,
}

fn corrupt(what: impl Into<String>) -> EventIndexError {
    EventIndexError::corrupt(what)
}

impl EventIndex {
    /// Maps and opens the file at `path`.
    pub fn open(path: &Path) -> EventIndexResult<Self> {
        let file = File::open(path).map_err(EventIndexError::io(path, "opening"))?;
        // The file is immutable once published (written, synced, renamed).
        #[allow(unsafe_code)]
        let map = unsafe { Mmap::map(&file) }.map_err(EventIndexError::io(path, "mapping"))?;
        // A query touches a few scattered pages: without this the kernel
        // reads around each fault (`read_ahead_kb`, 8 MiB on this VM's
        // disk: 8 MiB a fault, most of a cold query's time).
        let _ = map.advise(memmap2::Advice::Random);
        Self::parse(Bytes::Map(map))
    }

    /// Opens an index held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> EventIndexResult<Self> {
        Self::parse(Bytes::Heap(bytes))
    }

    fn parse(bytes: Bytes) -> EventIndexResult<Self> {
        let b = bytes.as_ref();
        let len = b.len();
        if len < HEADER + 32 || &b[..8] != MAGIC {
            return Err(corrupt("not an event index (magic or size)"));
        }
        if u32_at(b, 8) != VERSION {
            return Err(corrupt(format!("unknown version {}", u32_at(b, 8))));
        }
        let (first, last) = (u32_at(b, 16), u32_at(b, 20));
        let n = u32::try_from(u64_at(b, 24)).map_err(|_| corrupt("event count over 2^32"))?;
        if first > last || last > i32::MAX as u32 {
            return Err(corrupt("bad ledger range"));
        }
        let (nc, nt, bits) = (u64_at(b, 32), u64_at(b, 40), u32_at(b, 48));
        if bits > 24 {
            return Err(corrupt("directory too large"));
        }
        let want = [
            None,
            Some(8 * (u64::from(last - first) + 2)),
            None,
            Some(8 * FIXED as u64),
            Some(
                nc.checked_mul(40)
                    .ok_or_else(|| corrupt("contract count"))?,
            ),
            Some(4 * ((1u64 << bits) + 1)),
            Some(
                nt.checked_mul(16)
                    .ok_or_else(|| corrupt("topic key count"))?,
            ),
            Some(4 * (u64::from(last - first) + 2).div_ceil(LEDGER_SAMPLE as u64)),
            Some(32 * nc.div_ceil(CONTRACT_SAMPLE as u64)),
        ];
        let mut sections: [Range<usize>; SECTIONS] = Default::default();
        let mut at = HEADER as u64;
        for (i, s) in sections.iter_mut().enumerate() {
            let (off, slen) = (u64_at(b, 56 + 16 * i), u64_at(b, 64 + 16 * i));
            let end = off.checked_add(slen).filter(|&e| e <= (len - 32) as u64);
            let Some(end) = end.filter(|_| off == at) else {
                return Err(corrupt(format!(
                    "section {} out of place",
                    SECTION_NAMES[i]
                )));
            };
            if want[i].is_some_and(|w| w != slen) {
                return Err(corrupt(format!(
                    "section {} has the wrong size",
                    SECTION_NAMES[i]
                )));
            }
            *s = off as usize..end as usize;
            at = end;
        }
        if at != (len - 32) as u64 {
            return Err(corrupt("sections do not reach the checksum"));
        }
        // What the checks below and the samples read, asked for together
        // (the samples lie together at the end: one read for both), so
        // that a cold open waits for the disk once after the header.
        if let Bytes::Map(m) = &bytes {
            let (t, d) = (&sections[LEDGERS], &sections[DIR]);
            let from = sections[LEDGER_SAMPLE_SEC].start;
            for (at, len) in [
                (t.start, 8),
                (t.end - 8, 8),
                (d.start, 4),
                (d.end - 4, 4),
                (from, sections[CONTRACT_SAMPLE_SEC].end - from),
            ] {
                let _ = m.advise_range(memmap2::Advice::WillNeed, at, len);
            }
        }
        let ledger_sample = b[sections[LEDGER_SAMPLE_SEC].clone()]
            .chunks_exact(4)
            .map(|c| u32_at(c, 0))
            .collect();
        let contract_sample = b[sections[CONTRACT_SAMPLE_SEC].clone()]
            .chunks_exact(32)
            .map(|c| {
                let mut id = [0u8; 32];
                id.copy_from_slice(c);
                id
            })
            .collect();
        let idx = EventIndex {
            first,
            last,
            n,
            contracts: nc as usize,
            topics: nt as usize,
            dir_bits: bits,
            sections,
            ledger_sample,
            contract_sample,
            bytes,
        };
        let table = idx.section(LEDGERS);
        let end = table.len() - 8;
        let runs = idx.section(RUNS).len() as u64;
        if u32_at(table, 0) != 0
            || u32_at(table, 4) != 0
            || u32_at(table, end) != n
            || u64::from(u32_at(table, end + 4)) != runs
        {
            return Err(corrupt("ledger table does not span the events"));
        }
        let dir = idx.section(DIR);
        if u32_at(dir, 0) != 0 || u64::from(u32_at(dir, dir.len() - 4)) != nt {
            return Err(corrupt("topic directory does not span the keys"));
        }
        Ok(idx)
    }

    fn section(&self, i: usize) -> &[u8] {
        &self.bytes.as_ref()[self.sections[i].clone()]
    }

    /// Checks the SHA-256 trailer against the bytes before it.
    pub fn verify(&self) -> EventIndexResult<()> {
        let b = self.bytes.as_ref();
        let body = b.len() - 32;
        if Sha256::digest(&b[..body]).as_slice() != &b[body..] {
            return Err(EventIndexError::Checksum);
        }
        Ok(())
    }

    /// The first ledger of the range.
    pub fn first_ledger(&self) -> u32 {
        self.first
    }

    /// The last ledger of the range.
    pub fn last_ledger(&self) -> u32 {
        self.last
    }

    /// Events indexed (ordinals are `0..events()`).
    pub fn events(&self) -> u32 {
        self.n
    }

    /// Each section's name and size in bytes, then the header's and the
    /// trailer's.
    pub fn section_sizes(&self) -> Vec<(&'static str, usize)> {
        let mut v: Vec<_> = SECTION_NAMES
            .iter()
            .zip(&self.sections)
            .map(|(name, r)| (*name, r.len()))
            .collect();
        v.push(("header+sha", HEADER + 32));
        v
    }

    /// Contract ids and topic keys in the dictionaries.
    pub fn keys(&self) -> (usize, usize) {
        (self.contracts, self.topics)
    }

    fn ids(&self) -> Ids<'_> {
        Ids {
            first: self.first,
            table: self.section(LEDGERS),
            runs: self.section(RUNS),
            sample: &self.ledger_sample,
        }
    }

    /// The id of event `ordinal`.
    pub fn id_of(&self, ordinal: u32) -> EventIndexResult<EventId> {
        if ordinal >= self.n {
            return Err(EventIndexError::Query(format!(
                "ordinal {ordinal} past the end"
            )));
        }
        self.ids().id_of(ordinal)
    }

    /// [`id_of`](Self::id_of) searching from ledger index `near` (see
    /// `Ids::id_near`); also gives the ledger's index.
    pub(crate) fn id_near(&self, ordinal: u32, near: usize) -> EventIndexResult<(EventId, usize)> {
        if ordinal >= self.n {
            return Err(EventIndexError::Query(format!(
                "ordinal {ordinal} past the end"
            )));
        }
        self.ids().id_near(ordinal, near)
    }

    /// Asks the kernel to read bytes `range` of section `sec` now
    /// (`MADV_WILLNEED`: it queues the reads and returns), so that reads
    /// that do not depend on each other wait for the disk once, together,
    /// rather than one after the other. Nothing for bytes on the heap.
    pub(crate) fn prefetch(&self, sec: usize, range: Range<usize>) {
        let Bytes::Map(m) = &self.bytes else {
            return;
        };
        let s = &self.sections[sec];
        let (a, b) = (
            s.start.saturating_add(range.start).min(s.end),
            s.start.saturating_add(range.end).min(s.end),
        );
        if a < b {
            let _ = m.advise_range(memmap2::Advice::WillNeed, a, b - a);
        }
    }

    /// The ids of `ords` (increasing, each `< n`), searched from ledger
    /// index `near` on: their ledger table pages prefetched together, then
    /// their runs pages together, so a page of hits scattered over many
    /// ledgers waits for the disk about twice, not twice a hit.
    pub(crate) fn ids_of(&self, ords: &[u32], mut near: usize) -> EventIndexResult<Vec<EventId>> {
        let ids = self.ids();
        if matches!(self.bytes, Bytes::Map(_)) && ords.len() > 1 {
            let mut last = None;
            for &o in ords {
                let span = ids.span(o);
                if last != Some(span) {
                    self.prefetch(LEDGERS, 8 * span.0..8 * span.1 + 16);
                    last = Some(span);
                }
            }
            let (mut l, mut last) = (near, None);
            for &o in ords {
                l = ids.ledger_near(o, l)?;
                if last != Some(l) {
                    let (r0, r1) = ids.runs_span(l);
                    self.prefetch(RUNS, r0..r1.max(r0));
                    last = Some(l);
                }
            }
        }
        let mut out = Vec::with_capacity(ords.len());
        for &o in ords {
            if o >= self.n {
                return Err(EventIndexError::Query(format!("ordinal {o} past the end")));
            }
            near = ids.ledger_near(o, near)?;
            out.push(ids.id_in(o, near)?);
        }
        Ok(out)
    }

    /// Prefetches the bytes of `s`, a slice of this index's bytes.
    pub(crate) fn prefetch_slice(&self, s: &[u8]) {
        let Bytes::Map(m) = &self.bytes else {
            return;
        };
        let at = (s.as_ptr() as usize).wrapping_sub(m.as_ptr() as usize);
        if !s.is_empty() && at < m.len() && s.len() <= m.len() - at {
            let _ = m.advise_range(memmap2::Advice::WillNeed, at, s.len());
        }
    }

    /// Whether reads go to a file mapping (prefetching means something).
    pub(crate) fn mapped(&self) -> bool {
        matches!(self.bytes, Bytes::Map(_))
    }

    /// Prefetches the head of list `r` (its length, blocks' length, upper
    /// table and the start of its skip table: 4 KiB).
    pub(crate) fn prefetch_list(&self, r: ListRef) {
        if let ListRef::At(off) = r {
            let off = usize::try_from(off).unwrap_or(usize::MAX);
            self.prefetch(POSTINGS, off..off.saturating_add(4096));
        }
    }

    /// Prefetches topic `key`'s directory entry, or (`entries`) its
    /// bucket's keys, the directory entry having been read.
    pub(crate) fn prefetch_topic(&self, key: u64, entries: bool) {
        let bucket = bucket_of(key, self.dir_bits) as usize;
        if !entries {
            self.prefetch(DIR, 4 * bucket..4 * bucket + 8);
            return;
        }
        let dir = self.section(DIR);
        let (lo, hi) = (
            u32_at(dir, 4 * bucket) as usize,
            u32_at(dir, 4 * bucket + 4) as usize,
        );
        self.prefetch(TOPICS, 16 * lo..16 * hi.min(self.topics).max(lo));
    }

    /// Prefetches ledger `ledger`'s table entry, or (`runs`) its runs,
    /// the entry having been read (the start of a query).
    pub(crate) fn prefetch_ledger(&self, ledger: u32, runs: bool) {
        let Some(l) = ledger.checked_sub(self.first).map(|l| l as usize) else {
            return;
        };
        if l > (self.last - self.first) as usize {
            return;
        }
        if runs {
            let (r0, r1) = self.ids().runs_span(l);
            self.prefetch(RUNS, r0..r1.max(r0));
        } else {
            self.prefetch(LEDGERS, 8 * l..8 * l + 16);
        }
    }

    /// Prefetches the contract entries of `ids` together (their groups in
    /// the sample), before a query looks them up one by one.
    pub(crate) fn prefetch_contracts<'a>(&self, ids: impl Iterator<Item = &'a [u8; 32]>) {
        if !matches!(self.bytes, Bytes::Map(_)) {
            return;
        }
        for id in ids {
            let g = search::partition(0, self.contract_sample.len(), |k| {
                self.contract_sample[k] <= *id
            });
            if g > 0 {
                self.prefetch(
                    CONTRACTS,
                    40 * CONTRACT_SAMPLE * (g - 1)..40 * CONTRACT_SAMPLE * g,
                );
            }
        }
    }

    /// The first ordinal whose id is at least `id` (0 before the range,
    /// `events()` after it).
    pub fn ordinal_from(&self, id: EventId) -> EventIndexResult<u32> {
        self.ids().ordinal_from(id)
    }

    pub(crate) fn fixed(&self, i: usize) -> EventIndexResult<ListRef> {
        ListRef::from_u64(u64_at(self.section(FIXED_SEC), 8 * i)).ok_or_else(|| corrupt("bad ref"))
    }

    /// The list of a contract id: its group of [`CONTRACT_SAMPLE`] in the
    /// sample, then a binary search over the group's entries (a page or
    /// two of the file).
    pub(crate) fn contract(&self, id: &[u8; 32]) -> EventIndexResult<ListRef> {
        let s = self.section(CONTRACTS);
        let g = search::partition(0, self.contract_sample.len(), |k| {
            self.contract_sample[k] <= *id
        });
        if g == 0 {
            return Ok(ListRef::Empty);
        }
        let (mut lo, mut hi) = (
            CONTRACT_SAMPLE * (g - 1),
            (CONTRACT_SAMPLE * g).min(self.contracts),
        );
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match s[40 * mid..40 * mid + 32].cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    return ListRef::from_u64(u64_at(s, 40 * mid + 32))
                        .ok_or_else(|| corrupt("bad ref"));
                }
            }
        }
        Ok(ListRef::Empty)
    }

    /// The list of a topic key: its directory bucket, then a binary search
    /// in the bucket (about 16 keys, one page).
    pub(crate) fn topic(&self, key: u64) -> EventIndexResult<ListRef> {
        let dir = self.section(DIR);
        let bucket = bucket_of(key, self.dir_bits) as usize;
        let (mut lo, mut hi) = (
            u32_at(dir, 4 * bucket) as usize,
            u32_at(dir, 4 * bucket + 4) as usize,
        );
        if lo > hi || hi > self.topics {
            return Err(corrupt("topic directory out of range"));
        }
        let s = self.section(TOPICS);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let k = u64_at(s, 16 * mid);
            if k < key {
                lo = mid + 1;
            } else if k > key {
                hi = mid;
            } else {
                return ListRef::from_u64(u64_at(s, 16 * mid + 8))
                    .ok_or_else(|| corrupt("bad ref"));
            }
        }
        Ok(ListRef::Empty)
    }

    /// A cursor over a list, and its length (0 for an empty list).
    pub(crate) fn cursor(&self, r: ListRef) -> EventIndexResult<Option<(Cursor<'_>, usize)>> {
        match r {
            ListRef::Empty => Ok(None),
            ListRef::Single(v) if v < self.n => Ok(Some((Cursor::single(v), 1))),
            ListRef::Single(_) => Err(corrupt("inline ordinal out of range")),
            ListRef::At(off) => {
                let p = self.section(POSTINGS);
                let buf = usize::try_from(off)
                    .ok()
                    .and_then(|o| p.get(o..))
                    .ok_or_else(|| corrupt("list past the postings"))?;
                let list = List::parse(buf, self.n)?;
                let len = list.len();
                Ok(Some((Cursor::new(list, self.n), len)))
            }
        }
    }

    /// Every ordinal of a list (merges).
    pub(crate) fn decode(&self, r: ListRef, base: u32, out: &mut Vec<u32>) -> EventIndexResult<()> {
        if let Some((mut c, _)) = self.cursor(r)? {
            let mut t = 0;
            while let Some(v) = c.seek(t)? {
                out.push(v + base);
                t = v + 1;
            }
        }
        Ok(())
    }

    /// The contract dictionary's entries, in key order (merges).
    pub(crate) fn contract_entries(&self) -> impl Iterator<Item = ([u8; 32], u64)> + '_ {
        self.section(CONTRACTS).chunks_exact(40).map(|e| {
            let mut id = [0u8; 32];
            id.copy_from_slice(&e[..32]);
            (id, u64_at(e, 32))
        })
    }

    /// The topic dictionary's entries, in key order (merges).
    pub(crate) fn topic_entries(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.section(TOPICS)
            .chunks_exact(16)
            .map(|e| (u64_at(e, 0), u64_at(e, 8)))
    }

    pub(crate) fn id_sections(&self) -> (&[u8], &[u8]) {
        (self.section(LEDGERS), self.section(RUNS))
    }
}
