//! Integrity check of a data dir (`ledgerstore check`).
//!
//! Three passes over the engines, bypassing the mark filter of the read
//! path:
//! 1. `ledgers`, in seq order: every record decompresses and decodes, its
//!    key matches its seq, the seqs run without gaps from the mark's `first`
//!    to its `last`, and every hash it lists resolves in `tx_index` (to this
//!    ledger) and in `tx_data` (to a record that decodes and names this
//!    ledger and index).
//! 2. `tx_index` and 3. `tx_data`, in key order: every key is a 32-byte
//!    hash and every entry belongs to a ledger that lists it. Pass 1 has
//!    shown that listed hashes are present; an entry count above the number
//!    of listed hashes means orphans, which a second look names.
//!
//! Finally the mark's running totals must match what the tables hold.
//!
//! Entries above the mark that an interrupted batch left (a ledger record
//! above the mark, and the hash entries, bodies and dictionary it brought)
//! are not problems: reads never see them and the next writer's open rolls
//! them back. An offline reader does not roll back, so `check` counts them
//! in [`CheckReport::above_mark`] and leaves them out of every comparison.

use std::collections::{HashMap, HashSet};

use ledgerstore_db_api::{
    BodyForm, Decode, Decompress, KvStore, StoredLedger, TableId, TxHash, TxRecord, is_zstd_frame,
};

use rayon::prelude::*;

use crate::Ledgerstore;
use crate::error::StoreResult;
use crate::indexed::check::ListedContext;

/// Problems listed by name; beyond this only the count grows.
pub const MAX_LISTED_PROBLEMS: usize = 100;

/// Ledger records read at once; their verification runs on every core
/// (256 was no faster on two cores, 29.1–30.2 s against 28.3–29.7 on
/// 10,000 dense ledgers, and held up to ~0.1 GB more).
const LEDGER_CHUNK: usize = 64;
const HASH_CHUNK: usize = 2048;

/// What [`Ledgerstore::check`] found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CheckReport {
    /// The mark's last ledger.
    pub mark: Option<u32>,
    /// Ledger records read.
    pub ledgers: u64,
    /// Transactions listed by ledger records (each one verified in both
    /// tables).
    pub txs: u64,
    /// Aliases listed by ledger records (a fee bump's inner hash), each
    /// verified like a transaction's hash.
    pub aliases: u64,
    /// Skeleton ledger records (v3) put back together with their bodies
    /// and matched against the SHA-256 recorded at ingest.
    pub reassembled: u64,
    /// Entries in `tx_index`.
    pub tx_index_entries: u64,
    /// Entries in `tx_data`.
    pub tx_data_entries: u64,
    /// Layout `indexed`: listed txs that lie in a segment's range (each
    /// one found by that segment at its position).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment_keys: Option<u64>,
    /// Entries above the mark left by an interrupted batch (ledger records,
    /// hash entries, bodies, dictionaries): invisible to reads, rolled back
    /// by the next writer's open, and not problems.
    pub above_mark: u64,
    /// Layout `indexed`: ledgers below this one were evicted to the
    /// published store (`[cold] keep_local_ranges`); they are not read, and
    /// the MARK's totals, which count them, are not compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evicted_below: Option<u32>,
    /// Problems found (may exceed `problems.len()`).
    pub problem_count: u64,
    /// The first [`MAX_LISTED_PROBLEMS`] problems, each naming the table,
    /// the key and what is wrong.
    pub problems: Vec<String>,
}

impl CheckReport {
    /// True when nothing is wrong.
    pub fn is_ok(&self) -> bool {
        self.problem_count == 0
    }

    pub(crate) fn problem(&mut self, p: String) {
        self.problem_count += 1;
        if self.problems.len() < MAX_LISTED_PROBLEMS {
            self.problems.push(p);
        }
    }

    /// Adds what checking one ledger's listed hashes found: its problems
    /// after this report's, and its segment keys (all such a check
    /// reports).
    fn absorb(&mut self, part: CheckReport) {
        // Every field named: one added later must be placed here too.
        let CheckReport {
            problem_count,
            problems,
            segment_keys,
            mark: _,
            ledgers: _,
            txs: _,
            aliases: _,
            reassembled: _,
            tx_index_entries: _,
            tx_data_entries: _,
            above_mark: _,
            evicted_below: _,
        } = part;
        let unlisted = problem_count - problems.len() as u64;
        for p in problems {
            self.problem(p);
        }
        self.problem_count += unlisted;
        if let Some(k) = segment_keys {
            *self.segment_keys.get_or_insert(0) += k;
        }
    }
}

/// The smallest key after `key` in byte order.
pub(crate) fn after(key: &[u8]) -> Vec<u8> {
    let mut k = key.to_vec();
    k.push(0);
    k
}

impl Ledgerstore {
    /// Verifies every table against the others and the mark. Reads
    /// everything once; takes as long as a full scan of the data dir.
    ///
    /// On a writer, it first waits for the segment builder to be idle: a
    /// build that swaps a range from the hot index into a segment while
    /// the scan runs would make the counts of the two disagree. A builder
    /// that keeps failing is not waited for; the report names its ranges.
    /// Run it without concurrent ingest (the CLI's `check` opens the dir
    /// offline, where no builder runs).
    pub fn check(&self) -> StoreResult<CheckReport> {
        if let Err(e) = self.wait_for_segments() {
            tracing::warn!(error = %e, "check: the segment builder is not idle; checking anyway");
        }
        let mark = self.mark();
        let mut r = CheckReport {
            mark: mark.last,
            ..Default::default()
        };
        let residue = self.check_ledgers(&mut r)?;
        if self.indexed.is_some() {
            self.check_indexed_tables(&residue, &mut r)?;
            return Ok(r);
        }
        let listed = r.txs + r.aliases;
        r.tx_index_entries = self.check_hash_table(TableId::TxIndex, listed, &residue, &mut r)?;
        r.tx_data_entries = self.check_hash_table(TableId::TxData, listed, &residue, &mut r)?;
        if mark.txs != r.txs {
            r.problem(format!(
                "MARK: counts {} transactions, the ledger records list {}",
                mark.txs, r.txs
            ));
        }
        for (table, found) in [
            (TableId::TxData, r.tx_data_entries),
            (TableId::TxIndex, r.tx_index_entries),
            (TableId::Ledgers, r.ledgers),
        ] {
            if let Some(t) = mark.tables.get(table.name())
                && t.keys != found
            {
                r.problem(format!(
                    "MARK: counts {} keys in {}, the table holds {found}",
                    t.keys,
                    table.name()
                ));
            }
        }
        Ok(r)
    }

    fn check_ledgers(&self, r: &mut CheckReport) -> StoreResult<Residue> {
        let mark = self.mark();
        let mut residue = Residue::default();
        let evicted = self.evicted().map(|e| e.below);
        r.evicted_below = evicted;
        let mut expected = match (mark.first, evicted) {
            (Some(f), Some(b)) => Some(f.max(b)),
            (f, _) => f,
        };
        let mut last_seen = None;
        let mut from = 0u32.to_be_bytes().to_vec();
        loop {
            let chunk = self.ledgers.scan(&from, LEDGER_CHUNK)?;
            let Some((last_key, _)) = chunk.last() else {
                break;
            };
            from = after(last_key);
            // The chunk's records in seq order: what reading each found,
            // and what it leaves to verify.
            let mut work: Vec<Item> = Vec::with_capacity(chunk.len());
            for (key, value) in &chunk {
                let mut item = Item::default();
                let Ok(seq) = u32::decode(key) else {
                    item.pre.push(format!(
                        "ledgers: key {} is not a 4-byte seq",
                        hex::encode(key)
                    ));
                    work.push(item);
                    continue;
                };
                if mark.last.is_none_or(|l| seq > l) {
                    let mut above = CheckReport::default();
                    residue.add(seq, value, &mut above);
                    r.above_mark += above.above_mark;
                    item.pre = above.problems;
                    work.push(item);
                    continue;
                }
                r.ledgers += 1;
                match expected {
                    Some(e) if seq > e => item.pre.push(format!(
                        "ledgers: {e}..={} are missing (the next record is ledger {seq})",
                        seq - 1
                    )),
                    Some(e) if seq < e => item.pre.push(format!(
                        "ledgers[{seq}]: before the mark's first ledger {e}"
                    )),
                    _ => {}
                }
                expected = seq.checked_add(1);
                last_seen = Some(seq);
                let rec = match StoredLedger::decompress(value) {
                    Ok(rec) => rec,
                    Err(e) => {
                        item.pre
                            .push(format!("ledgers[{seq}]: record does not decode: {e}"));
                        work.push(item);
                        continue;
                    }
                };
                if self.ledger_form == BodyForm::Records && !is_zstd_frame(value) {
                    item.pre.push(format!(
                        "ledgers[{seq}]: a raw record in a dir whose ledger records are zstd \
                         frames (format {}): the releases that made the dir cannot read it",
                        self.dir.manifest().format
                    ));
                }
                if rec.seq != seq {
                    item.pre
                        .push(format!("ledgers[{seq}]: record says seq {}", rec.seq));
                }
                let n = rec.tx_hashes.len();
                r.txs += n as u64;
                r.aliases += rec.aliases.len() as u64;
                item.listed.reserve(rec.lookup_count());
                for (i, h) in rec.tx_hashes.iter().enumerate() {
                    let i = u32::try_from(i).unwrap_or(u32::MAX);
                    item.listed.push(Listed::new(*h, seq, i, i));
                }
                for (k, a) in rec.aliases.iter().enumerate() {
                    let pos = u32::try_from(n + k).unwrap_or(u32::MAX);
                    item.listed.push(Listed::new(a.hash, seq, pos, a.index));
                }
                item.skeleton = rec.needs_bodies().then_some((seq, rec));
                work.push(item);
            }
            match self.indexed {
                // Taken a chunk at a time: on a writer, a build the
                // segment builder retries may install a segment (and drop
                // its hot entries) while a check runs.
                Some(_) => self.verify_indexed(&self.listed_context()?, work, r)?,
                None => self.verify_hash_keyed(work, r)?,
            }
        }
        if last_seen != mark.last {
            r.problem(format!(
                "MARK: last ledger {:?}, the ledgers table ends at {last_seen:?}",
                mark.last
            ));
        }
        Ok(residue)
    }

    /// Verifies a chunk's ledgers (layout `indexed`): each skeleton put
    /// back together and matched against its SHA-256, and each listed hash
    /// resolved, one ledger a task on every core (most of a check's time:
    /// decompressing the bodies, twice, and hashing the ledger). Problems
    /// are reported as a single thread finds them: each record's own, then
    /// its reassembly's, in seq order; then the chunk's listed hashes in
    /// position order.
    fn verify_indexed(
        &self,
        cx: &ListedContext,
        work: Vec<Item>,
        r: &mut CheckReport,
    ) -> StoreResult<()> {
        let (pre, tasks): (Vec<_>, Vec<_>) = work
            .into_iter()
            .map(|i| (i.pre, (i.skeleton, i.listed)))
            .unzip();
        let done: Vec<StoreResult<(Option<String>, bool, CheckReport)>> = tasks
            .into_par_iter()
            .map(|(skeleton, mut listed)| {
                let (problem, reassembled) = match skeleton {
                    Some((seq, rec)) => self.reassembly(seq, rec),
                    None => (None, false),
                };
                let mut found = CheckReport::default();
                self.check_listed_indexed(cx, &mut listed, &mut found)?;
                Ok((problem, reassembled, found))
            })
            .collect();
        let done = done.into_iter().collect::<StoreResult<Vec<_>>>()?;
        let mut listed = Vec::with_capacity(done.len());
        for (pre, (problem, reassembled, found)) in pre.into_iter().zip(done) {
            for p in pre.into_iter().chain(problem) {
                r.problem(p);
            }
            r.reassembled += u64::from(reassembled);
            listed.push(found);
        }
        for found in listed {
            r.absorb(found);
        }
        Ok(())
    }

    /// The skeleton stored under key `seq` put back together: a problem
    /// (named by the key, as the record's other problems are), or whether
    /// it was verified (a ledger below the eviction boundary whose bodies
    /// are already gone, an eviction a crash cut short and open resumes,
    /// is neither).
    fn reassembly(&self, seq: u32, rec: StoredLedger) -> (Option<String>, bool) {
        match self.whole_ledger(rec) {
            Ok(Some(_)) => (None, true),
            Ok(None) => (None, false),
            Err(e) => (Some(format!("ledgers[{seq}]: {e}")), false),
        }
    }

    /// Verifies a chunk's ledgers in a hash-keyed layout: reassembly (a
    /// skeleton there is damage, which it reports), then every listed hash
    /// in both hash tables at once.
    fn verify_hash_keyed(&self, work: Vec<Item>, r: &mut CheckReport) -> StoreResult<()> {
        let mut listed = Vec::new();
        for item in work {
            for p in item.pre {
                r.problem(p);
            }
            if let Some((seq, rec)) = item.skeleton {
                let (problem, reassembled) = self.reassembly(seq, rec);
                r.reassembled += u64::from(reassembled);
                if let Some(p) = problem {
                    r.problem(p);
                }
            }
            listed.extend(item.listed);
        }
        self.check_listed(&mut listed, r)
    }

    /// Checks that the listed hashes resolve in both hash tables.
    fn check_listed(&self, listed: &mut [Listed], r: &mut CheckReport) -> StoreResult<()> {
        listed.sort_unstable_by_key(|l| l.hash);
        let keys: Vec<&[u8]> = listed.iter().map(|l| &l.hash.0[..]).collect();
        let index = self.tx_index.multi_get(&keys)?;
        let data = self.tx_data.multi_get(&keys)?;
        for ((l, ix), dv) in listed.iter().zip(index).zip(data) {
            let (h, seq, i) = (&l.hash, &l.seq, &l.index);
            let at = l.at();
            match ix.as_deref().map(u32::decompress) {
                None => r.problem(format!("tx_index: {h} is missing ({at})")),
                Some(Err(e)) => r.problem(format!("tx_index: {h}: {e}")),
                Some(Ok(v)) if v != *seq => {
                    r.problem(format!("tx_index: {h} points at ledger {v} ({at})"))
                }
                Some(Ok(_)) => {}
            }
            match dv.as_deref().map(TxRecord::decompress) {
                None => r.problem(format!("tx_data: {h} is missing ({at})")),
                Some(Err(e)) => r.problem(format!("tx_data: {h}: record does not decode: {e}")),
                Some(Ok(rec)) if rec.ledger_seq != *seq || rec.index != *i => r.problem(format!(
                    "tx_data: {h}: record says ledger {} index {} ({at})",
                    rec.ledger_seq, rec.index
                )),
                Some(Ok(_)) => {}
            }
        }
        Ok(())
    }

    /// Counts a hash table's entries, checks their keys, and names the
    /// entries no ledger lists when there are more entries than listed
    /// hashes.
    /// Returns the entries at or below the mark (those above it, listed by
    /// a ledger record above it, are counted in `r.above_mark`).
    fn check_hash_table(
        &self,
        table: TableId,
        listed: u64,
        residue: &Residue,
        r: &mut CheckReport,
    ) -> StoreResult<u64> {
        let kv = self.table(table);
        let name = table.name();
        let mut pending = 0u64;
        let count = scan_all(kv, |key, _| match TxHash::from_slice(key) {
            None => r.problem(format!(
                "{name}: key {} is not a 32-byte hash",
                hex::encode(key)
            )),
            Some(h) if residue.hashes.contains(&h) => pending += 1,
            Some(_) => {}
        })?;
        r.above_mark += pending;
        let count = count - pending;
        if count > listed {
            r.problem(format!(
                "{name}: holds {count} entries, the ledger records list {listed}"
            ));
            self.name_orphans(table, residue, r)?;
        }
        Ok(count)
    }

    fn name_orphans(
        &self,
        table: TableId,
        residue: &Residue,
        r: &mut CheckReport,
    ) -> StoreResult<()> {
        let kv = self.table(table);
        let mut owners: HashMap<u32, Option<HashSet<TxHash>>> = HashMap::new();
        let mut entries = Vec::new();
        scan_all(kv, |key, value| {
            if let Some(h) = TxHash::from_slice(key)
                && !residue.hashes.contains(&h)
            {
                entries.push((h, value.to_vec()));
            }
        })?;
        for (h, value) in entries {
            let owner = match table {
                TableId::TxIndex => u32::decompress(&value).ok(),
                _ => TxRecord::decompress(&value).ok().map(|rec| rec.ledger_seq),
            };
            let Some(seq) = owner else {
                r.problem(format!("{}: {h}: value does not decode", table.name()));
                continue;
            };
            if owners.len() > 4096 {
                owners.clear();
            }
            let hashes = match owners.get(&seq) {
                Some(v) => v,
                None => {
                    let set = match self.ledgers.get(&seq.to_be_bytes())? {
                        Some(b) => StoredLedger::decompress(&b)
                            .ok()
                            .map(|rec| rec.lookup_hashes().copied().collect()),
                        None => None,
                    };
                    owners.entry(seq).or_insert(set)
                }
            };
            if !hashes.as_ref().is_some_and(|s| s.contains(&h)) {
                r.problem(format!(
                    "{}: {h} belongs to ledger {seq}, which does not list it",
                    table.name()
                ));
            }
        }
        Ok(())
    }
}

/// One ledger record of a chunk as [`Ledgerstore::check`] read it, in
/// seq order: the problems reading it found, and what is left to verify
/// (its key's seq and skeleton, None for a whole record; the hashes it
/// lists).
#[derive(Default)]
struct Item {
    pre: Vec<String>,
    skeleton: Option<(u32, StoredLedger)>,
    listed: Vec<Listed>,
}

/// A hash a ledger record lists: a transaction's, or an alias naming one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Listed {
    pub hash: TxHash,
    pub seq: u32,
    /// Its position in the ledger (layout `indexed` keys bodies by it): the
    /// apply index, or `n + k` for the `k`-th alias of `n` transactions.
    pub pos: u32,
    /// The apply index of the transaction it finds.
    pub index: u32,
}

impl Listed {
    fn new(hash: TxHash, seq: u32, pos: u32, index: u32) -> Self {
        Self {
            hash,
            seq,
            pos,
            index,
        }
    }

    /// Where a problem's hash came from.
    pub(crate) fn at(&self) -> String {
        if self.pos == self.index {
            format!("listed by ledgers[{}] at index {}", self.seq, self.index)
        } else {
            format!(
                "listed by ledgers[{}] as an alias of index {} (position {})",
                self.seq, self.index, self.pos
            )
        }
    }
}

/// What an interrupted batch left above the mark, as the ledger records
/// above it list it.
#[derive(Default)]
pub(crate) struct Residue {
    /// Ledger seq → positions its record lists (transactions, then
    /// aliases).
    pub(crate) ledgers: HashMap<u32, u32>,
    /// Every hash those records list.
    pub(crate) hashes: HashSet<TxHash>,
}

impl Residue {
    fn add(&mut self, seq: u32, value: &[u8], r: &mut CheckReport) {
        r.above_mark += 1;
        match StoredLedger::decompress(value) {
            Ok(rec) => {
                self.ledgers
                    .insert(seq, u32::try_from(rec.lookup_count()).unwrap_or(u32::MAX));
                self.hashes.extend(rec.lookup_hashes().copied());
            }
            // Rollback refuses a record it cannot read, so this one would
            // block the next writer's open.
            Err(e) => r.problem(format!(
                "ledgers[{seq}]: above the mark and its record does not decode, so rollback \
                 cannot remove it: {e}"
            )),
        }
    }

    /// True when `pos` is a body the residue's ledgers list.
    pub(crate) fn lists(&self, seq: u32, index: u32) -> bool {
        self.ledgers.get(&seq).is_some_and(|&n| index < n)
    }
}

/// Visits every entry of `kv` in key order; returns the count.
pub(crate) fn scan_all(kv: &dyn KvStore, mut f: impl FnMut(&[u8], &[u8])) -> StoreResult<u64> {
    let mut from = Vec::new();
    let mut count = 0u64;
    loop {
        let chunk = kv.scan(&from, HASH_CHUNK)?;
        let Some((last, _)) = chunk.last() else {
            return Ok(count);
        };
        from = after(last);
        for (k, v) in &chunk {
            f(k, v);
        }
        count += chunk.len() as u64;
    }
}
