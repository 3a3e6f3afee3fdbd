//! The ingest engine: validate, compress in parallel, write the three
//! stores (concurrently where the engines allow), commit, advance the mark.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use ledgerstore_db_api::{
    Alias, BodyForm, Compress, DbError, DictSet, KvStore, LedgerBytes, LedgerInput,
    LedgerRecordRef, TableId, TxBody, TxHash, TxPos, TxRecordRef, split,
};
use rayon::prelude::*;

use crate::datadir::MarkState;
use crate::error::{StoreError, StoreResult};
use crate::report::{BatchReport, StoreTiming, process_write_bytes, secs};
use crate::validate::validate;
use crate::{Ledgerstore, WriteState};

/// What [`Ledgerstore::ingest`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestOutcome {
    /// Leading ledgers at or below the mark, acknowledged without writing.
    pub skipped: usize,
    /// Ledgers written and committed.
    pub committed: usize,
    /// The durable mark after the call.
    pub mark: Option<u32>,
    /// The timing report, when something was written.
    pub report: Option<BatchReport>,
}

/// Key/value pairs for one table, sorted by key.
struct Entries<K> {
    pairs: Vec<(K, Vec<u8>)>,
    raw_bytes: u64,
}

impl<K: AsRef<[u8]>> Entries<K> {
    fn stored_bytes(&self) -> u64 {
        self.pairs
            .iter()
            .map(|(k, v)| (k.as_ref().len() + v.len()) as u64)
            .sum()
    }
}

/// A `tx_data` key: a hash, or (layout `indexed`) a position or a
/// dictionary.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum TxKey {
    Hash(TxHash),
    Pos([u8; 8]),
    Dict([u8; 9]),
}

impl AsRef<[u8]> for TxKey {
    fn as_ref(&self) -> &[u8] {
        match self {
            TxKey::Hash(h) => &h.0,
            TxKey::Pos(p) => p,
            TxKey::Dict(d) => d,
        }
    }
}

struct Prepared {
    ledgers: Entries<[u8; 4]>,
    tx_data: Entries<TxKey>,
    /// Hash → seq, or (layout `indexed`) position → hash.
    tx_index: Entries<TxKey>,
}

impl Ledgerstore {
    /// Ingests an ordered batch of ledgers. `source` is the time the caller
    /// spent getting them, for the report.
    ///
    /// Ledgers at or below the mark are acknowledged without being written;
    /// the rest must continue from the mark. The batch is refused whole
    /// (nothing written) if any part of it is invalid. When this returns
    /// `Ok` with `committed > 0`, the ledgers are durable.
    pub fn ingest(&self, batch: &[LedgerInput], source: Duration) -> StoreResult<IngestOutcome> {
        let started = Instant::now();
        let mut state = self
            .ingest_lock
            .lock()
            .map_err(|_| StoreError::Corrupt("ingest lock poisoned by a panic".into()))?;
        match &*state {
            WriteState::Clean => {}
            WriteState::Dirty => {
                self.rollback_above_mark()?;
                *state = WriteState::Clean;
            }
            WriteState::MarkFailed(reason) => {
                return Err(StoreError::WritesRefused {
                    reason: reason.clone(),
                });
            }
            WriteState::Offline => {
                return Err(StoreError::WritesRefused {
                    reason: "the store was opened by an offline reader".into(),
                });
            }
        }
        let mark = self.mark();
        let t = Instant::now();
        let plan = validate(batch, mark.last, &self.limits)?;
        let new = &batch[plan.skipped..];
        if new.is_empty() {
            return Ok(IngestOutcome {
                skipped: plan.skipped,
                committed: 0,
                mark: mark.last,
                report: None,
            });
        }
        self.check_hashes_not_stored(new)?;
        let mut compute = t.elapsed();

        let t = Instant::now();
        let trained = match &self.indexed {
            Some(tier) => tier.maybe_train(self.tx_data.as_ref(), &mark, self.level)?,
            None => None,
        };
        compute += t.elapsed();

        let t = Instant::now();
        let dicts = match (&trained, &self.indexed) {
            (Some(tr), _) => Some(std::sync::Arc::new(tr.dicts.clone())),
            (None, Some(tier)) => Some(tier.dicts()),
            (None, None) => None,
        };
        let mut prepared = prepare(
            new,
            self.level,
            dicts.as_deref(),
            self.bodies,
            self.ledger_form,
        )?;
        if let Some(tr) = &trained {
            prepared
                .tx_data
                .pairs
                .push((TxKey::Dict(tr.key), tr.value.clone()));
        }
        let compress = t.elapsed();
        let t2 = Instant::now();
        prepared
            .tx_data
            .pairs
            .par_sort_unstable_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        prepared
            .tx_index
            .pairs
            .par_sort_unstable_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        compute += t2.elapsed();

        self.check_free_space(&prepared)?;
        let io_before = process_write_bytes();
        let t = Instant::now();
        let writing = self
            .indexed
            .as_ref()
            .map(|t| IngestWriting::new(&t.segments));
        let written = self.write_stores(&prepared);
        drop(writing);
        let stores = match written {
            Ok(s) => s,
            Err(e) => {
                if !self.rollback_after_failure(&e) {
                    *state = WriteState::Dirty;
                }
                return Err(e);
            }
        };
        let io = t.elapsed();

        let t = Instant::now();
        let mut next = advance(&mark, new, &prepared);
        if let Some(d) = &dicts {
            // The version this batch compressed with (layout `indexed`).
            next.dict_version = Some(d.current().map_or(0, |d| d.version()));
        }
        if let Err(e) = self.dir.write_mark(&next) {
            *state = self.after_mark_failure(&mark, new, &e);
            return Err(e);
        }
        if let Some(tier) = &self.indexed {
            // Before the mark moves: a reader that sees the batch must find
            // its dictionary and its hashes.
            if let (Some(tr), Ok(mut d)) = (trained, tier.dicts.write()) {
                *d = std::sync::Arc::new(tr.dicts);
            }
            tier.segments.hot_map.insert(hot_entries(&prepared));
        }
        self.publish_mark(next.clone());
        #[cfg(test)]
        self.run_after_publish_hook();
        if let Some(tier) = &self.indexed {
            tier.segments.notify(next.first, next.last);
        }
        let mark_s = t.elapsed();
        let total = started.elapsed() + source;

        let report = BatchReport {
            batch: next.batches,
            layout: self.layout.name(),
            first_ledger: new[0].seq,
            last_ledger: new[new.len() - 1].seq,
            ledgers: new.len() as u64,
            txs: plan.txs as u64,
            source_s: secs(source),
            compress_s: secs(compress),
            compute_s: secs(compute),
            io_s: secs(io),
            mark_s: secs(mark_s),
            total_s: secs(total),
            ledgers_per_s: new.len() as f64 / secs(total).max(1e-9),
            bytes_written: stores.iter().map(|s| s.bytes).sum(),
            device_bytes_written: io_before
                .zip(process_write_bytes())
                .map(|(a, b)| b.saturating_sub(a)),
            stores,
        };
        self.emit(&report);
        Ok(IngestOutcome {
            skipped: plan.skipped,
            committed: new.len(),
            mark: next.last,
            report: Some(report),
        })
    }

    /// Refuses hashes that are already stored: overwriting one would repoint
    /// a committed transaction, and rolling back would delete it.
    fn check_hashes_not_stored(&self, new: &[LedgerInput]) -> StoreResult<()> {
        // (hash or alias, ledger, tx, which of the two)
        let mut hashes: Vec<(&[u8], usize, usize, &'static str)> = new
            .iter()
            .enumerate()
            .flat_map(|(li, l)| {
                l.txs.iter().enumerate().flat_map(move |(ti, t)| {
                    std::iter::once((&t.hash[..], li, ti, "hash"))
                        .chain(t.alias.as_deref().map(|a| (a, li, ti, "alias")))
                })
            })
            .collect();
        hashes.par_sort_unstable_by(|a, b| a.0.cmp(b.0));
        let last = self.last_ledger();
        if self.indexed.is_some() {
            return self.check_hashes_not_indexed(&hashes);
        }
        for chunk in hashes.chunks(crate::MAINTENANCE_READ_KEYS) {
            let keys: Vec<&[u8]> = chunk.iter().map(|h| h.0).collect();
            let found = self.tx_index.multi_get(&keys)?;
            for (&(hash, li, ti, key), value) in chunk.iter().zip(found) {
                let Some(v) = value else { continue };
                let ledger = <u32 as ledgerstore_db_api::Decompress>::decompress(&v)?;
                if last.is_some_and(|l| ledger <= l) {
                    return Err(StoreError::HashExists {
                        field: format!("ledgers[{li}].transactions[{ti}].{key}"),
                        hash: hex::encode(hash),
                        ledger,
                    });
                }
            }
        }
        Ok(())
    }

    /// Writes the three stores. The ledgers table commits first; a hash
    /// table whose engine keeps staged writes private until commit (MDBX)
    /// writes concurrently and only commits once the ledgers are durable;
    /// one that may persist early (RocksDB) starts writing after that.
    fn write_stores(&self, p: &Prepared) -> StoreResult<Vec<StoreTiming>> {
        let gate = Gate::default();
        let results = std::thread::scope(|s| {
            let ledgers = s.spawn(|| {
                // Opens the gate as failed if the write panics, so the
                // other writers never wait for a signal that cannot come.
                let guard = GateGuard(&gate);
                let r = write_table(self.ledgers.as_ref(), TableId::Ledgers, &p.ledgers, None);
                gate.open(r.is_ok());
                drop(guard);
                r
            });
            let data = s.spawn(|| {
                write_table(
                    self.tx_data.as_ref(),
                    TableId::TxData,
                    &p.tx_data,
                    Some(&gate),
                )
            });
            let index = s.spawn(|| {
                write_table(
                    self.tx_index.as_ref(),
                    TableId::TxIndex,
                    &p.tx_index,
                    Some(&gate),
                )
            });
            [ledgers.join(), data.join(), index.join()]
        });
        let mut timings = Vec::with_capacity(3);
        let mut first_err = None;
        for r in results {
            match r {
                Ok(Ok(Some(t))) => timings.push(t),
                Ok(Ok(None)) => {}
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(StoreError::Corrupt("a writer thread panicked".into()));
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(timings),
        }
    }

    /// What a failed `MARK` write leaves. The file is read back: if it still
    /// holds the old mark (the new one was never renamed into place), the
    /// old mark is the durable truth and the batch rolls back as any failed
    /// batch does. Otherwise the file may hold the new mark, durably or not
    /// (a failed directory fsync), and deleting anything above the old mark
    /// could delete ledgers the file calls committed: writes are refused
    /// until the store is reopened, which reads the file back again.
    fn after_mark_failure(
        &self,
        old: &MarkState,
        new: &[LedgerInput],
        cause: &StoreError,
    ) -> WriteState {
        let on_disk = self.dir.read_mark();
        if matches!(&on_disk, Ok(Some(m)) if m == old) {
            tracing::warn!(error = %cause, "MARK write failed before its rename; rolling the batch back");
            return if self.rollback_after_failure(cause) {
                WriteState::Clean
            } else {
                WriteState::Dirty
            };
        }
        let found = match on_disk {
            Ok(Some(m)) => format!("it now says ledger {:?}", m.last),
            Ok(None) => "it is missing".into(),
            Err(e) => format!("reading it back failed: {e}"),
        };
        tracing::error!(error = %cause, found, "MARK write failed after its rename; ingest is refused until the store is reopened");
        WriteState::MarkFailed(format!(
            "writing the mark for ledgers {}..={} failed ({cause}), and {found}",
            new[0].seq,
            new[new.len() - 1].seq
        ))
    }

    /// Rolls back after a failed batch (the mark, in memory and on disk, is
    /// the one before it); returns whether that worked. When it did not,
    /// data above the mark may remain and the next ingest retries first.
    fn rollback_after_failure(&self, cause: &StoreError) -> bool {
        match self.rollback_above_mark() {
            Ok(_) => true,
            Err(e) => {
                tracing::error!(%cause, error = %e, "rollback after a failed batch failed; will retry before the next batch");
                false
            }
        }
    }

    fn emit(&self, report: &BatchReport) {
        tracing::info!(
            batch = report.batch,
            layout = report.layout,
            first = report.first_ledger,
            last = report.last_ledger,
            txs = report.txs,
            total_s = report.total_s,
            "{}",
            report.render()
        );
        if let Some(sink) = &self.sink
            && let Err(e) = sink.write(report)
        {
            tracing::warn!(error = %e, "could not append the batch report");
        }
        if let Ok(mut r) = self.last_report.write() {
            *r = Some(report.clone());
        }
    }
}

/// Encodes and compresses the batch, in parallel across all cores.
impl Ledgerstore {
    /// Refuses the batch, before any write, when the data dir's filesystem
    /// lacks `min_free_disk_bytes` plus twice the batch's stored bytes.
    fn check_free_space(&self, p: &Prepared) -> StoreResult<()> {
        let batch: u64 = (p.ledgers.pairs.iter())
            .map(|(_, v)| 4 + v.len() as u64)
            // Raw bodies (a `blocks` dir) count whole: the engine may not
            // shrink them, and a WAL and its flush may both be on disk.
            .chain(p.tx_data.pairs.iter().map(|(_, v)| 32 + v.len() as u64))
            .chain((p.tx_index.pairs.iter()).map(|(k, v)| (k.as_ref().len() + v.len()) as u64))
            .sum();
        let needed = self.limits.min_free_disk_bytes.saturating_add(2 * batch);
        let free = crate::datadir::free_bytes(self.path())?;
        if free < needed {
            let mib = |b: u64| b as f64 / f64::from(1u32 << 20);
            return Err(StoreError::DiskFull {
                path: self.path().display().to_string(),
                free_mib: mib(free),
                needed_mib: mib(needed),
                batch_mib: mib(batch),
            });
        }
        Ok(())
    }
}

/// The hash and record view of the `i`-th tx of `l`.
fn tx_parts<'a>(
    l: &'a LedgerInput,
    i: usize,
    t: &'a ledgerstore_db_api::TxInput,
) -> StoreResult<(TxHash, TxRecordRef<'a>)> {
    let hash = TxHash::from_slice(&t.hash).ok_or_else(|| StoreError::InvalidBatch {
        field: "hash".into(),
        reason: "must be 32 bytes".into(),
    })?;
    Ok((hash, TxRecordRef::of(l, i as u32, t)))
}

/// The 32-byte alias of `t`, if it has one.
fn alias_hash(t: &ledgerstore_db_api::TxInput) -> StoreResult<Option<TxHash>> {
    match &t.alias {
        None => Ok(None),
        Some(a) => TxHash::from_slice(a)
            .map(Some)
            .ok_or_else(|| StoreError::InvalidBatch {
                field: "alias".into(),
                reason: "must be 32 bytes".into(),
            }),
    }
}

/// The aliases of `l` as its ledger record lists them.
fn aliases_of(l: &LedgerInput) -> Vec<Alias<&[u8]>> {
    l.txs
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            t.alias.as_deref().map(|hash| Alias {
                index: i as u32,
                hash,
            })
        })
        .collect()
}

/// `dicts` is Some for the `indexed` layout: tx bodies are keyed by
/// position and compressed with its current dictionary.
fn prepare(
    new: &[LedgerInput],
    level: i32,
    dicts: Option<&DictSet>,
    bodies: BodyForm,
    ledger_form: BodyForm,
) -> StoreResult<Prepared> {
    let ledgers: Vec<([u8; 4], Vec<u8>, usize)> = new
        .par_iter()
        .map(|l| {
            let hashes: Vec<&[u8]> = l.txs.iter().map(|t| &t.hash[..]).collect();
            let aliases = aliases_of(l);
            // Bodies keyed by position (`indexed`) put a skeleton back in
            // one range read; bodies keyed by hash would cost a point read
            // per transaction, so those layouts keep the whole raw.
            let skeleton = match (dicts, l.cuts.is_empty()) {
                (Some(_), false) => Some(split(&l.raw, &l.cuts, &l.txs)?),
                _ => None,
            };
            let rec = LedgerRecordRef {
                seq: l.seq,
                close_time: l.close_time,
                tx_hashes: &hashes,
                aliases: &aliases,
                bytes: match &skeleton {
                    Some(s) => LedgerBytes::Split(s),
                    None => LedgerBytes::Whole(&l.raw),
                },
            };
            // A format-3 dir stores the record raw; the engine compresses
            // blocks of consecutive records.
            let value = match ledger_form {
                BodyForm::Blocks => rec.encode(),
                BodyForm::Records => rec.compress(level)?,
            };
            Ok::<_, DbError>((l.seq.to_be_bytes(), value, rec.raw_len()))
        })
        .collect::<Result<_, _>>()?;
    if let Some(dicts) = dicts {
        return prepare_indexed(new, ledgers, level, dicts, bodies);
    }
    let mut txs: Vec<(TxHash, Vec<u8>, usize, u32)> = new
        .par_iter()
        .flat_map_iter(|l| l.txs.iter().enumerate().map(move |(i, t)| (l, i, t)))
        .map(|(l, i, t)| {
            let (hash, rec) = tx_parts(l, i, t)?;
            Ok::<_, StoreError>((hash, rec.compress(level)?, rec.raw_len(), l.seq))
        })
        .collect::<Result<_, _>>()?;
    // An alias is a second key to the same compressed record, in both hash
    // tables.
    let mut at = 0;
    let mut copies = Vec::new();
    for l in new {
        for t in &l.txs {
            if let Some(alias) = alias_hash(t)? {
                let (_, v, raw, seq) = &txs[at];
                copies.push((alias, v.clone(), *raw, *seq));
            }
            at += 1;
        }
    }
    txs.extend(copies);
    // Raw and stored sizes both count key + value, so ratios compare like
    // with like.
    let ledgers = Entries {
        raw_bytes: ledgers.iter().map(|l| 4 + l.2 as u64).sum(),
        pairs: ledgers.into_iter().map(|(k, v, _)| (k, v)).collect(),
    };
    let tx_index = Entries {
        raw_bytes: (32 + 4) * txs.len() as u64,
        pairs: txs
            .iter()
            .map(|(h, _, _, seq)| (TxKey::Hash(*h), seq.to_be_bytes().to_vec()))
            .collect(),
    };
    let tx_data = Entries {
        raw_bytes: txs.iter().map(|t| 32 + t.2 as u64).sum(),
        pairs: txs
            .into_iter()
            .map(|(h, v, _, _)| (TxKey::Hash(h), v))
            .collect(),
    };
    Ok(Prepared {
        ledgers,
        tx_data,
        tx_index,
    })
}

/// The `indexed` layout's entries: bodies under their position, and the
/// hot index from position to hash (both already in key order).
fn prepare_indexed(
    new: &[LedgerInput],
    ledgers: Vec<([u8; 4], Vec<u8>, usize)>,
    level: i32,
    dicts: &DictSet,
    bodies: BodyForm,
) -> StoreResult<Prepared> {
    let mut txs: Vec<(TxHash, TxPos, Vec<u8>, usize)> = new
        .par_iter()
        .flat_map_iter(|l| l.txs.iter().enumerate().map(move |(i, t)| (l, i, t)))
        .map(|(l, i, t)| {
            let (hash, rec) = tx_parts(l, i, t)?;
            // A `blocks` dir stores the record raw; the engine compresses
            // blocks of consecutive bodies.
            let body = match bodies {
                BodyForm::Blocks => TxBody::raw_bytes(hash, &rec),
                BodyForm::Records => {
                    TxBody::compress_record(hash, &rec.encode(), dicts, level)?.to_bytes()
                }
            };
            let pos = TxPos {
                seq: l.seq,
                index: i as u32,
            };
            Ok::<_, StoreError>((hash, pos, body, 8 + 36 + rec.raw_len()))
        })
        .collect::<Result<_, _>>()?;
    // The k-th alias of a ledger of n transactions is an alias body (the
    // alias hash and the index it names) at position n + k: segments and
    // the hot index then key it like any transaction, and a lookup
    // confirms it against the body's own hash, then reads the body named.
    for l in new {
        let mut k = 0;
        for (i, t) in l.txs.iter().enumerate() {
            if let Some(alias) = alias_hash(t)? {
                let pos = TxPos {
                    seq: l.seq,
                    index: (l.txs.len() + k) as u32,
                };
                let body = TxBody::alias(alias, i as u32).to_bytes();
                txs.push((alias, pos, body, 8 + 40));
                k += 1;
            }
        }
    }
    let ledgers = Entries {
        raw_bytes: ledgers.iter().map(|l| 4 + l.2 as u64).sum(),
        pairs: ledgers.into_iter().map(|(k, v, _)| (k, v)).collect(),
    };
    let tx_index = Entries {
        raw_bytes: (32 + 8) * txs.len() as u64,
        pairs: txs
            .iter()
            .map(|(h, p, _, _)| (TxKey::Pos(p.to_bytes()), h.0.to_vec()))
            .collect(),
    };
    let tx_data = Entries {
        raw_bytes: txs.iter().map(|t| t.3 as u64).sum(),
        pairs: txs
            .into_iter()
            .map(|(_, p, v, _)| (TxKey::Pos(p.to_bytes()), v))
            .collect(),
    };
    Ok(Prepared {
        ledgers,
        tx_data,
        tx_index,
    })
}

/// The hot index entries of a prepared `indexed` batch, as (hash,
/// position).
fn hot_entries(p: &Prepared) -> impl Iterator<Item = (&[u8; 32], TxPos)> {
    p.tx_index.pairs.iter().filter_map(|(k, v)| match k {
        TxKey::Pos(pos) => Some((
            <&[u8; 32]>::try_from(v.as_slice()).ok()?,
            TxPos::from_bytes(pos)?,
        )),
        _ => None,
    })
}

/// Writes one table; with a gate, waits for the ledgers table to be
/// durable before anything of this table can become durable. Returns None
/// when the gate closed (the ledgers write failed).
fn write_table<K: AsRef<[u8]>>(
    store: &dyn KvStore,
    table: TableId,
    entries: &Entries<K>,
    gate: Option<&Gate>,
) -> StoreResult<Option<StoreTiming>> {
    let early = gate.is_some() && !store.durable_only_on_commit();
    if early && gate.is_some_and(|g| !g.wait()) {
        return Ok(None);
    }
    let t = Instant::now();
    let mut w = store.begin_write()?;
    // In key order for the hash maps (sorted above), which lets an engine
    // write a large batch in bulk; any order is correct.
    let pairs: Vec<(&[u8], &[u8])> = entries
        .pairs
        .iter()
        .map(|(k, v)| (k.as_ref(), v.as_slice()))
        .collect();
    w.put_sorted(&pairs)?;
    w.finish()?;
    let write = t.elapsed();
    if !early && gate.is_some_and(|g| !g.wait()) {
        return Ok(None); // dropping `w` aborts the staged writes
    }
    let c = w.commit()?;
    Ok(Some(StoreTiming {
        table: table.name(),
        engine: store.engine().name(),
        write_s: secs(write),
        commit_s: secs(c.commit),
        compact_s: secs(c.compact),
        keys: entries.pairs.len() as u64,
        bytes: entries.stored_bytes(),
    }))
}

/// The mark after committing `new`.
fn advance(mark: &MarkState, new: &[LedgerInput], p: &Prepared) -> MarkState {
    let mut next = mark.clone();
    next.first = next.first.or(new.first().map(|l| l.seq));
    next.last = new.last().map(|l| l.seq).or(mark.last);
    next.batches += 1;
    next.txs += new.iter().map(|l| l.txs.len() as u64).sum::<u64>();
    for (table, keys, raw, stored) in [
        (
            TableId::Ledgers,
            p.ledgers.pairs.len(),
            p.ledgers.raw_bytes,
            p.ledgers.stored_bytes(),
        ),
        (
            TableId::TxData,
            p.tx_data.pairs.len(),
            p.tx_data.raw_bytes,
            p.tx_data.stored_bytes(),
        ),
        (
            TableId::TxIndex,
            p.tx_index.pairs.len(),
            p.tx_index.raw_bytes,
            p.tx_index.stored_bytes(),
        ),
    ] {
        let t = next.tables.entry(table.name().to_string()).or_default();
        t.keys += keys as u64;
        t.raw_bytes += raw;
        t.stored_bytes += stored;
    }
    next
}

/// A one-shot signal: "the ledgers table is durable" (true) or "it failed"
/// (false).
#[derive(Default)]
struct Gate {
    state: Mutex<Option<bool>>,
    cv: Condvar,
}

/// Tells the segment builder that ingest writes, until dropped (layout
/// `indexed`: its hot-index drop then yields MDBX's writer to ingest).
struct IngestWriting<'a>(&'a crate::indexed::segments::SegmentSet);

impl<'a> IngestWriting<'a> {
    fn new(set: &'a crate::indexed::segments::SegmentSet) -> Self {
        set.ingest_writing(true);
        Self(set)
    }
}

impl Drop for IngestWriting<'_> {
    fn drop(&mut self) {
        self.0.ingest_writing(false);
    }
}

/// Opens its gate as failed when dropped before the gate was opened (a
/// panic in the ledgers writer).
struct GateGuard<'a>(&'a Gate);

impl Drop for GateGuard<'_> {
    fn drop(&mut self) {
        self.0.open_if_closed(false);
    }
}

impl Gate {
    fn open(&self, ok: bool) {
        if let Ok(mut s) = self.state.lock() {
            *s = Some(ok);
        }
        self.cv.notify_all();
    }

    fn open_if_closed(&self, ok: bool) {
        // A poisoned lock needs nothing: the waiters see it and give up.
        if let Ok(mut s) = self.state.lock() {
            s.get_or_insert(ok);
        }
        self.cv.notify_all();
    }

    fn wait(&self) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        loop {
            if let Some(ok) = *s {
                return ok;
            }
            s = match self.cv.wait(s) {
                Ok(s) => s,
                Err(_) => return false,
            };
        }
    }
}
