//! Batched transaction lookups of a [`Replica`]: one batch answers
//! exactly what one [`Replica::get_tx`] per hash would, in far fewer
//! sequential object-store round trips.
//!
//! - Positions come from the mapped segments (CPU only), newest segment
//!   first, as for a single lookup.
//! - The candidates' bodies are read in phases (pack headers, ledger table
//!   pages, body table pages, bodies; in packs of ledger frames, versions
//!   3 and 4, the frames instead of the last two, with each version-4
//!   pack's dictionary neither memory nor the disk cache holds), each
//!   piece once however many
//!   candidates need it, each phase's GETs in flight together
//!   ([`super::HeldMemory::batch_gets`]) and nearby ranges of one object merged into
//!   one GET ([`fetch::MERGE_GAP`], [`fetch::MERGE_MAX`]). A merged GET that fails is
//!   retried as its parts, so each piece fails with its own error. A
//!   dictionary memory or the disk cache held when the batch began is
//!   taken from there when its pack is reached; one memory let go of
//!   since is read again on its own, as a lookup reads it, and one the
//!   disk cache let go of before its pack's first round is fetched with
//!   that round.
//! - A candidate that does not confirm its hash (or a failure) moves the
//!   hash to its next segment, as in [`Replica::find`]; an alias moves it
//!   to the body it names.
//! - A batch given a deadline stops at it: the GETs in flight are dropped,
//!   no new phase starts, and the batch fails (its caller has answered).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use ledgerstore_db_api::{ALIAS_BODY, Decompress, TxBody, TxHash, TxPos, TxRecord};
use ledgerstore_pack::format::HEADER;
use ledgerstore_pack::{Entry, Header, LedgerEntry, Manifest, PackRef, SegmentRef};
use ledgerstore_segment::Segment;
use ledgerstore_store::{StoreError, StoreResult};

use super::Replica;
use crate::error::{ColdError, ColdResult, dup};
use fetch::{Want, in_time};

#[path = "replica_batch_frames.rs"]
mod batch_frames;
#[path = "replica_fetch.rs"]
mod fetch;

/// Where a candidate's read stands.
struct Read<'m> {
    pos: TxPos,
    p: &'m PackRef,
    h: Option<Header>,
    le: Option<LedgerEntry>,
    e: Option<Entry>,
}

impl Replica {
    /// The headers of packs `ps` (known ones without a request).
    fn headers_of(
        &self,
        ps: &[&PackRef],
        deadline: Option<Instant>,
    ) -> ColdResult<HashMap<String, ColdResult<Header>>> {
        let mut out = HashMap::new();
        let mut missing: Vec<&PackRef> = Vec::new();
        for p in ps {
            let key = &p.object.key;
            if out.contains_key(key) || missing.iter().any(|m| m.object.key == *key) {
                continue;
            }
            match self.known_header(key) {
                Some(h) => {
                    out.insert(key.clone(), Ok(h));
                }
                None => missing.push(p),
            }
        }
        let reqs = missing
            .iter()
            .map(|p| (p.object.key.clone(), 0..HEADER))
            .collect();
        for (p, got) in missing.iter().zip(self.fetch_all(reqs, deadline)?) {
            let h = got.and_then(|bytes| self.parsed_header(p, &bytes));
            out.insert(p.object.key.clone(), h);
        }
        Ok(out)
    }

    /// The stored bodies at `positions`, as [`Replica::body`] answers for
    /// each, read together.
    fn bodies(
        &self,
        m: &Manifest,
        positions: &[TxPos],
        deadline: Option<Instant>,
    ) -> ColdResult<HashMap<TxPos, ColdResult<Option<TxBody>>>> {
        let mut out: HashMap<TxPos, ColdResult<Option<TxBody>>> = HashMap::new();
        let mut reads: Vec<Read<'_>> = Vec::new();
        for &pos in positions {
            if out.contains_key(&pos) || reads.iter().any(|r| r.pos == pos) {
                continue;
            }
            match m.pack_of(pos.seq) {
                None => {
                    out.insert(pos, Ok(None));
                }
                Some(p) => reads.push(Read {
                    pos,
                    p,
                    h: None,
                    le: None,
                    e: None,
                }),
            }
        }
        let fail =
            |out: &mut HashMap<TxPos, ColdResult<Option<TxBody>>>, r: &Read, e: ColdError| {
                out.insert(r.pos, Err(e.for_ledgers(r.p.first, r.p.last)));
            };
        let body_damaged = |r: &Read, e: String| {
            ColdError::damaged(
                &r.p.object.key,
                format!("ledger {} body {}: {e}", r.pos.seq, r.pos.index),
            )
        };

        // Headers.
        let packs: Vec<&PackRef> = reads.iter().map(|r| r.p).collect();
        let headers = self.headers_of(&packs, deadline)?;
        for r in &mut reads {
            match &headers[&r.p.object.key] {
                Ok(h) => r.h = Some(*h),
                Err(e) => fail(&mut out, r, dup(e)),
            }
        }
        reads.retain(|r| r.h.is_some());

        // Ledger table pages.
        let mut wants = Vec::new();
        let mut asking = Vec::new();
        for r in &reads {
            let (key, seq) = (&r.p.object.key, r.pos.seq);
            let h = r.h.expect("a header");
            let damaged = |e: ledgerstore_pack::PackError| {
                ColdError::damaged(key, format!("ledger {seq}: {e}"))
            };
            let at = h
                .ledger_page_of(seq)
                .and_then(|(page, _)| Ok((page, h.ledger_page(page)?)));
            match at {
                Ok((page, range)) => {
                    wants.push(Want {
                        name: Some(format!("lt/{key}/{page}")),
                        key: key.clone(),
                        range,
                    });
                    asking.push(true);
                }
                Err(e) => {
                    out.insert(r.pos, Err(damaged(e).for_ledgers(r.p.first, r.p.last)));
                    asking.push(false);
                }
            }
        }
        reads = keep(reads, &asking);
        let pages = self.pieces(&wants, deadline)?;
        for ((r, w), page) in reads.iter_mut().zip(&wants).zip(&pages) {
            let (key, seq) = (&r.p.object.key, r.pos.seq);
            let h = r.h.expect("a header");
            let name = w.name.as_deref().unwrap_or_default();
            let le = match &**page {
                Ok(bytes) => self.checked(name, || {
                    h.ledger_entry(bytes, seq)
                        .map_err(|e| ColdError::damaged(key, format!("ledger {seq}: {e}")))
                }),
                Err(e) => Err(dup(e)),
            };
            match le {
                Ok(le) => r.le = Some(le),
                Err(e) => fail(&mut out, r, e),
            }
        }
        reads.retain(|r| r.le.is_some());

        // Packs of ledger frames (versions 3 and 4): the bodies come from their
        // ledgers' frames, not body table pages.
        let (framed, rest): (Vec<Read<'_>>, Vec<Read<'_>>) = reads
            .into_iter()
            .partition(|r| r.h.is_some_and(|h| h.frames()));
        reads = rest;
        self.frame_bodies(&framed, &mut out, deadline)?;

        // Body table pages.
        let mut wants = Vec::new();
        let mut asking = Vec::new();
        for r in &reads {
            let (h, le) = (r.h.expect("a header"), r.le.expect("an entry"));
            let at = h
                .body_page_of(&le, r.pos.index)
                .and_then(|(page, _)| Ok((page, h.body_page(page)?)));
            match at {
                Ok((page, range)) => {
                    wants.push(Want {
                        name: Some(format!("bt/{}/{page}", r.p.object.key)),
                        key: r.p.object.key.clone(),
                        range,
                    });
                    asking.push(true);
                }
                Err(e) => {
                    fail(&mut out, r, body_damaged(r, e.to_string()));
                    asking.push(false);
                }
            }
        }
        reads = keep(reads, &asking);
        let pages = self.pieces(&wants, deadline)?;
        for ((r, w), page) in reads.iter_mut().zip(&wants).zip(&pages) {
            let (h, le) = (r.h.expect("a header"), r.le.expect("an entry"));
            let name = w.name.as_deref().unwrap_or_default();
            let e = match &**page {
                Ok(bytes) => self.checked(name, || {
                    h.body_entry(bytes, &le, r.pos.index)
                        .map_err(|e| body_damaged(r, e.to_string()))
                }),
                Err(e) => Err(dup(e)),
            };
            match e {
                Ok(e) => r.e = Some(e),
                Err(e) => fail(&mut out, r, e),
            }
        }
        reads.retain(|r| r.e.is_some());

        // Bodies.
        let mut wants = Vec::new();
        let mut asking = Vec::new();
        for r in &reads {
            let (h, le, e) = (
                r.h.expect("a header"),
                r.le.expect("an entry"),
                r.e.expect("a body entry"),
            );
            match h.data_range(&e) {
                Ok(range) => {
                    let o = u64::from(le.first_body) + u64::from(r.pos.index);
                    wants.push(Want {
                        name: Some(format!("b/{}/{o}", r.p.object.key)),
                        key: r.p.object.key.clone(),
                        range,
                    });
                    asking.push(true);
                }
                Err(e) => {
                    fail(&mut out, r, body_damaged(r, e.to_string()));
                    asking.push(false);
                }
            }
        }
        reads = keep(reads, &asking);
        let bodies = self.pieces(&wants, deadline)?;
        for ((r, w), body) in reads.iter().zip(&wants).zip(&bodies) {
            let e = r.e.expect("a body entry");
            let name = w.name.as_deref().unwrap_or_default();
            let b = match &**body {
                Ok(bytes) => self.checked(name, || {
                    e.check(bytes).map_err(|e| body_damaged(r, e.to_string()))?;
                    TxBody::decompress(bytes).map_err(|e| body_damaged(r, e.to_string()))
                }),
                Err(e) => Err(dup(e)),
            };
            match b {
                Ok(b) => {
                    out.insert(r.pos, Ok(Some(b)));
                }
                Err(e) => fail(&mut out, r, e),
            }
        }
        Ok(out)
    }

    /// What [`Replica::confirm`] answers for each of `wants` (hash,
    /// position), read together.
    #[allow(clippy::type_complexity)]
    fn confirm_all(
        &self,
        m: &Manifest,
        wants: &[(TxHash, TxPos)],
        deadline: Option<Instant>,
    ) -> ColdResult<Vec<ColdResult<Option<(TxPos, TxBody)>>>> {
        let positions: Vec<TxPos> = wants.iter().map(|w| w.1).collect();
        let got = self.bodies(m, &positions, deadline)?;
        let key = |pos: TxPos| {
            m.pack_of(pos.seq)
                .map(|p| p.object.key.clone())
                .unwrap_or_default()
        };
        let mut out: Vec<Option<ColdResult<Option<(TxPos, TxBody)>>>> = Vec::new();
        // (answer slot, alias position, aliased index)
        let mut aliases: Vec<(usize, TxPos, u32)> = Vec::new();
        for (slot, (hash, pos)) in wants.iter().enumerate() {
            let answer = match &got[pos] {
                Err(e) => Some(Err(dup(e))),
                Ok(None) => Some(Ok(None)),
                Ok(Some(body)) if body.hash != *hash => Some(Ok(None)),
                Ok(Some(body)) => match body.alias_of() {
                    Err(e) => Some(Err(ColdError::damaged(&key(*pos), e.to_string()))),
                    Ok(None) => Some(Ok(Some((*pos, body.clone())))),
                    Ok(Some(index)) => {
                        aliases.push((slot, *pos, index));
                        None
                    }
                },
            };
            out.push(answer);
        }
        if !aliases.is_empty() {
            in_time(deadline)?;
            let at: Vec<TxPos> = aliases
                .iter()
                .map(|&(_, pos, index)| TxPos {
                    seq: pos.seq,
                    index,
                })
                .collect();
            let got = self.bodies(m, &at, deadline)?;
            for (&(slot, pos, index), at) in aliases.iter().zip(at) {
                out[slot] = Some(match &got[&at] {
                    Err(e) => Err(dup(e)),
                    Ok(Some(b)) if b.dict_version != ALIAS_BODY => Ok(Some((at, b.clone()))),
                    Ok(_) => Err(ColdError::damaged(
                        &key(pos),
                        format!(
                            "the alias at ledger {} index {} names index {index}, which holds \
                             no transaction",
                            pos.seq, pos.index
                        ),
                    )),
                });
            }
        }
        Ok(out
            .into_iter()
            .map(|a| a.unwrap_or_else(|| Err(ColdError::Task("a lookup was lost".into()))))
            .collect())
    }

    /// The segment of `r` for a batch: fetched (or failed) once per batch,
    /// except that a damaged one answers as [`Replica::segment`] does for
    /// each lookup (its backoff answers without a request).
    fn batch_segment(
        &self,
        i: usize,
        r: &SegmentRef,
        memo: &mut HashMap<usize, ColdResult<Arc<Segment>>>,
        deadline: Option<Instant>,
    ) -> ColdResult<Arc<Segment>> {
        match memo.get(&i) {
            Some(Ok(seg)) => return Ok(Arc::clone(seg)),
            Some(Err(e)) => return Err(dup(e)),
            None => {}
        }
        // A batch without a deadline of its own (getTransactions) waits for
        // another's fetch no later than its read's; its GETs still run to
        // their end, so what they fetch is cached for the retry.
        let wait = deadline.or_else(ledgerstore_store::read_deadline);
        match self.segment_until(r, wait) {
            Ok(seg) => {
                memo.insert(i, Ok(Arc::clone(&seg)));
                Ok(seg)
            }
            Err(
                e @ (ColdError::Damaged { .. }
                | ColdError::Store(StoreError::DeadlinePassed { .. })),
            ) => Err(e),
            Err(e) => {
                memo.insert(i, Err(dup(&e)));
                Err(e)
            }
        }
    }

    /// Transactions `hashes`, in order: what [`Replica::get_tx`] answers
    /// for each (the first failure, in the order asked, fails the batch),
    /// read together. With a `deadline`, the batch stops once it passes.
    pub(crate) fn batch(
        &self,
        hashes: &[TxHash],
        deadline: Option<Instant>,
    ) -> StoreResult<Vec<Option<TxRecord>>> {
        self.lookups
            .fetch_add(hashes.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let view = self.view();
        let Some(m) = &view.manifest else {
            return Ok(vec![None; hashes.len()]);
        };
        let segs: Vec<&SegmentRef> = m.segments.iter().rev().collect();
        // Per hash: the next segment to probe, the first failure met, the
        // confirmed body, and whether it is answered.
        let mut next = vec![0usize; hashes.len()];
        let mut failed: Vec<Option<ColdError>> = (0..hashes.len()).map(|_| None).collect();
        let mut found: Vec<Option<(TxPos, TxBody)>> = vec![None; hashes.len()];
        let mut done = vec![false; hashes.len()];
        let mut memo = HashMap::new();
        loop {
            in_time(deadline)?;
            let mut asking: Vec<usize> = Vec::new();
            let mut wants: Vec<(TxHash, TxPos)> = Vec::new();
            for (i, hash) in hashes.iter().enumerate() {
                while !done[i] {
                    let Some(r) = segs.get(next[i]) else {
                        done[i] = true;
                        break;
                    };
                    let s = next[i];
                    next[i] += 1;
                    if !memo.contains_key(&s) {
                        // A segment not read yet may be a download.
                        in_time(deadline)?;
                    }
                    match self.batch_segment(s, r, &mut memo, deadline) {
                        Ok(seg) => {
                            if let Some(pos) = seg.lookup(&hash.0) {
                                asking.push(i);
                                wants.push((*hash, pos));
                                break;
                            }
                        }
                        Err(e @ ColdError::Store(StoreError::DeadlinePassed { .. })) => {
                            return Err(e.into());
                        }
                        Err(e) => {
                            failed[i].get_or_insert(e);
                        }
                    }
                }
            }
            if wants.is_empty() {
                break;
            }
            let answers = self.confirm_all(m, &wants, deadline)?;
            for (i, a) in asking.into_iter().zip(answers) {
                match a {
                    Ok(Some(hit)) => {
                        found[i] = Some(hit);
                        done[i] = true;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        failed[i].get_or_insert(e);
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(hashes.len());
        for (hit, failed) in found.into_iter().zip(failed) {
            match (hit, failed) {
                (Some((pos, body)), _) => out.push(Some(record(m, &view.dicts, pos, &body)?)),
                (None, Some(e)) => return Err(e.into()),
                (None, None) => out.push(None),
            }
        }
        Ok(out)
    }

    /// What [`Replica::get_tx_at`] answers for each of `wants` (hash,
    /// position), in order, read together. The outer error is the
    /// deadline's.
    pub fn get_txs_at(
        &self,
        wants: &[(TxHash, TxPos)],
        deadline: Option<Instant>,
    ) -> StoreResult<Vec<StoreResult<Option<TxRecord>>>> {
        self.lookups
            .fetch_add(wants.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let view = self.view();
        let Some(m) = &view.manifest else {
            return Ok(wants.iter().map(|_| Ok(None)).collect());
        };
        let answers = self.confirm_all(m, wants, deadline)?;
        Ok(answers
            .into_iter()
            .map(|a| match a? {
                Some((at, body)) => record(m, &view.dicts, at, &body).map(Some),
                None => Ok(None),
            })
            .collect())
    }
}

/// The record of a confirmed body; one that does not decode is damage of
/// its pack.
pub(super) fn record(
    m: &Manifest,
    dicts: &ledgerstore_db_api::DictSet,
    at: TxPos,
    body: &TxBody,
) -> StoreResult<TxRecord> {
    body.record(dicts).map_err(|e| {
        let key = m.pack_of(at.seq).map(|p| p.object.key.clone());
        ColdError::damaged(&key.unwrap_or_default(), format!("ledger {}: {e}", at.seq)).into()
    })
}

/// The reads `asking` marks.
fn keep<'m>(reads: Vec<Read<'m>>, asking: &[bool]) -> Vec<Read<'m>> {
    reads
        .into_iter()
        .zip(asking)
        .filter_map(|(r, &a)| a.then_some(r))
        .collect()
}
