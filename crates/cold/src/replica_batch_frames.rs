//! A batch's reads in packs of ledger frames (versions 3 and 4;
//! `replica_batch.rs`): each ledger's frame once, and each version-4
//! pack's dictionary once, fetched in rounds of whole ledgers bounded by
//! `replica.batch_memory_mb`, and opened a pack and a ledger at a time.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use ledgerstore_db_api::{TxBody, TxPos};
use ledgerstore_pack::{DictReader, Header, LedgerFrame};
use ledgerstore_store::StoreError;

use super::super::frames::{body_of, dict_name, frame_name};
use super::fetch::{Want, in_time};
use super::{Read, Replica};
use crate::error::{ColdError, ColdResult, dup};

/// A version-4 pack's dictionary as a batch finds it.
enum DictState {
    /// In memory when the batch began: its packs are opened first, each
    /// taking it from memory again then (read again, as a lookup reads
    /// it, if another reader's let it go meanwhile), so a batch keeps in
    /// hand no dictionary but the one of the pack it is opening.
    Held,
    /// In the disk cache, unpacked, when the batch began: opened from
    /// there when its pack is reached (fetched then, as a lookup fetches
    /// it, if the cache let it go meanwhile). Its packs come after those
    /// of `Held` dictionaries, which opening it could push out.
    Cached,
    /// Fetched with the frames of the round its pack's first ledger is
    /// read in.
    Wanted(Want),
    /// Found damaged, in its backoff: the pack's reads fail without a GET.
    Failed(ColdError),
}

/// Pack `key`'s dictionary (its `range`) as neither memory nor the disk
/// cache holds it: fetched (`opened_dict` caches it unpacked), or failed
/// while the backoff of a damaged copy runs.
fn wanted_or_damaged(rep: &Replica, key: &str, range: std::ops::Range<u64>) -> DictState {
    match rep.dict_still_damaged(key, &dict_name(key)) {
        Ok(()) => DictState::Wanted(Want {
            name: None,
            key: key.to_string(),
            range,
        }),
        Err(e) => DictState::Failed(e),
    }
}

/// The dictionary and the frame a batch last opened (by pack key, and
/// key and ledger), kept while the next reads need them.
#[derive(Default)]
struct Opening<'k> {
    dict: Option<(&'k str, ColdResult<Option<Arc<DictReader>>>)>,
    frame: Option<(&'k str, u32, ColdResult<Arc<LedgerFrame>>)>,
}

impl<'k> Opening<'k> {
    /// Lets go of what the reads of `round` (the next round) do not need
    /// before its GETs: the last frame (a round holds whole ledgers, so
    /// the next one never reads it again), and the last dictionary unless
    /// the round goes on in its pack (`frame_bodies` sorts a pack's reads
    /// together, so a dictionary of another pack is done with).
    fn let_go_before(&mut self, round: &[(&Read<'_>, String)]) {
        self.frame = None;
        let first = round.first().map(|(r, _)| r.p.object.key.as_str());
        if self.dict.as_ref().is_some_and(|(k, _)| Some(*k) != first) {
            self.dict = None;
        }
    }

    /// How many of the opened frame and dictionary no read of `round`
    /// needs (kept in hand while its GETs run).
    fn unneeded_by(&self, round: &[(&Read<'_>, String)]) -> u64 {
        let reads = |key: &str, seq: Option<u32>| {
            round
                .iter()
                .any(|(r, _)| r.p.object.key == key && seq.is_none_or(|s| s == r.pos.seq))
        };
        let frame = self
            .frame
            .as_ref()
            .is_some_and(|(k, s, _)| !reads(k, Some(*s)));
        let dict = self.dict.as_ref().is_some_and(|(k, _)| !reads(k, None));
        u64::from(frame) + u64::from(dict)
    }
}

/// The bytes `got` holds (a piece asked twice counted once).
fn held_bytes(got: &[Arc<ColdResult<Bytes>>]) -> u64 {
    let mut seen = std::collections::HashSet::new();
    got.iter()
        .filter(|g| seen.insert(Arc::as_ptr(g)))
        .map(|g| g.as_ref().as_ref().map_or(0, |b| b.len() as u64))
        .sum()
}

impl Replica {
    /// The bodies of `reads` (in packs of ledger frames, their ledger
    /// entries read) into `out`: each ledger's frame once, from memory,
    /// the disk cache, or fetched together with the others, and in the
    /// same phase each version-4 pack's dictionary neither memory nor the
    /// disk cache holds (those it holds are opened from there). A pack
    /// whose dictionary was found damaged fails its reads during its
    /// backoff without fetching their frames.
    pub(super) fn frame_bodies(
        &self,
        reads: &[Read<'_>],
        out: &mut HashMap<TxPos, ColdResult<Option<TxBody>>>,
        deadline: Option<Instant>,
    ) -> ColdResult<()> {
        // Frames not in memory, with their ranges.
        let mut missing = Vec::new();
        for r in reads {
            let (key, seq) = (&r.p.object.key, r.pos.seq);
            let (h, le) = (r.h.expect("a header"), r.le.expect("an entry"));
            let name = frame_name(key, seq);
            if let Some(f) = self.frames.get(&name) {
                let body = body_of(r.p, &f, r.pos).map_err(|e| e.for_ledgers(r.p.first, r.p.last));
                out.insert(r.pos, body.map(Some));
                continue;
            }
            match h.data_range(&le.record) {
                Ok(range) => missing.push((r, name, range)),
                Err(e) => {
                    let e = ColdError::damaged(key, format!("ledger {seq}: {e}"));
                    out.insert(r.pos, Err(e.for_ledgers(r.p.first, r.p.last)));
                }
            }
        }
        // Each pack's dictionary, once, with its header.
        let mut dicts: HashMap<&str, (Header, DictState)> = HashMap::new();
        for (r, _, _) in &missing {
            let (key, h) = (r.p.object.key.as_str(), r.h.expect("a header"));
            let Some(range) = h.dict_range() else {
                continue;
            };
            if dicts.contains_key(key) {
                continue;
            }
            let name = dict_name(key);
            let state = if self.dict_held(&name).is_some() {
                DictState::Held
            } else if self.cache.holds(&name) {
                // A checked copy: it serves even while the pack's own is
                // in its backoff.
                DictState::Cached
            } else {
                wanted_or_damaged(self, key, range)
            };
            dicts.insert(key, (h, state));
        }
        let mut items = Vec::new();
        for (r, name, range) in missing {
            if let Some((_, DictState::Failed(e))) = dicts.get(r.p.object.key.as_str()) {
                out.insert(r.pos, Err(dup(e).for_ledgers(r.p.first, r.p.last)));
                continue;
            }
            items.push((r, name, range));
        }
        // A pack at a time and a ledger at a time: each dictionary and each
        // frame is opened once in this pass and held (with its fetched
        // bytes) no longer than the reads that need it, whatever
        // `replica.dict_memory_mb` and `frame_memory_mb` keep. The packs
        // whose dictionary memory held first, then those whose dictionary
        // the disk cache held, so that the ones this batch opens do not
        // push the held ones out before they are used.
        let rank = |key: &str| match dicts.get(key) {
            Some((_, DictState::Held)) => 0,
            Some((_, DictState::Cached)) => 1,
            _ => 2,
        };
        items.sort_by(|(a, _, _), (b, _, _)| {
            let (ka, kb) = (a.p.object.key.as_str(), b.p.object.key.as_str());
            (rank(ka), ka, a.pos.seq).cmp(&(rank(kb), kb, b.pos.seq))
        });
        let mut open = Opening::default();
        // The pack key and ledger of the last item taken into a round.
        let mut prev: Option<(&str, u32)> = None;
        let mut items = items.into_iter().peekable();
        while items.peek().is_some() {
            // A round: whole ledgers, as many as `replica.batch_memory_mb`
            // holds fetched (frames, and the dictionaries of the packs
            // first met), one at least; fetched together, opened, then let
            // go of before the next round's GETs.
            let mut round = Vec::new();
            let mut wants = Vec::new();
            let mut dict_wants = Vec::new();
            let mut bytes = 0u64;
            while let Some((r, _, range)) = items.peek() {
                let (key, seq) = (r.p.object.key.as_str(), r.pos.seq);
                if prev != Some((key, seq)) {
                    let new_pack = prev.is_none_or(|(k, _)| k != key);
                    if new_pack {
                        self.still_cached(key, &mut dicts);
                    }
                    let dict = match dicts.get(key) {
                        Some((_, DictState::Wanted(w))) if new_pack => Some(w),
                        _ => None,
                    };
                    let cost =
                        (range.end - range.start) + dict.map_or(0, |w| w.range.end - w.range.start);
                    if !round.is_empty() && bytes.saturating_add(cost) > self.batch_memory as u64 {
                        break;
                    }
                    bytes = bytes.saturating_add(cost);
                    if let Some(w) = dict {
                        dict_wants.push((
                            key,
                            Want {
                                name: w.name.clone(),
                                key: w.key.clone(),
                                range: w.range.clone(),
                            },
                        ));
                    }
                }
                prev = Some((key, seq));
                let (r, name, range) = items.next().expect("peeked");
                wants.push(Want {
                    name: Some(name.clone()),
                    key: r.p.object.key.clone(),
                    range,
                });
                round.push((r, name));
            }
            let frame_wants = wants.len();
            let dict_keys: Vec<&str> = dict_wants.iter().map(|(k, _)| *k).collect();
            wants.extend(dict_wants.into_iter().map(|(_, w)| w));
            open.let_go_before(&round);
            if cfg!(test) {
                self.batch_carried
                    .fetch_max(open.unneeded_by(&round), Ordering::Relaxed);
            }
            let mut got = self.pieces(&wants, deadline)?;
            let held = held_bytes(&got);
            self.batch_peak.fetch_max(held, Ordering::Relaxed);
            self.batch_fetched.fetch_add(held, Ordering::Relaxed);
            // Each fetched dictionary's bytes, let go of once it is opened.
            let mut fetched: HashMap<&str, Arc<ColdResult<Bytes>>> = dict_keys
                .into_iter()
                .zip(got.split_off(frame_wants))
                .collect();
            for ((r, name), got) in round.into_iter().zip(got) {
                let body = self.open_and_read(
                    r,
                    name,
                    &got,
                    &mut dicts,
                    &mut fetched,
                    &mut open,
                    deadline,
                )?;
                out.insert(r.pos, body.map(Some));
            }
        }
        Ok(())
    }

    /// Whether pack `key`'s dictionary, `Cached` when the batch began, is
    /// still in the disk cache as the round that first meets its pack is
    /// made (marked recently used, so that the round's frames evict it
    /// last); one let go of meanwhile becomes `Wanted`, fetched with that
    /// round's frames rather than alone when its pack is opened.
    fn still_cached(&self, key: &str, dicts: &mut HashMap<&str, (Header, DictState)>) {
        if let Some((h, state @ DictState::Cached)) = dicts.get_mut(key)
            && !self.cache.holds(&dict_name(key))
            && let Some(range) = h.dict_range()
        {
            *state = wanted_or_damaged(self, key, range);
        }
    }

    /// The body of `r` from its ledger's frame (`got`, fetched), opening
    /// the frame, and its pack's dictionary, unless `open` holds them (the
    /// last ones opened; each let go of once another is opened, or before
    /// a round that does not read it: [`Opening::let_go_before`]). Fails
    /// as a whole only when the batch's deadline passes.
    #[allow(clippy::too_many_arguments)]
    fn open_and_read<'k>(
        &self,
        r: &'k Read<'_>,
        name: String,
        got: &ColdResult<Bytes>,
        dicts: &mut HashMap<&'k str, (Header, DictState)>,
        fetched: &mut HashMap<&'k str, Arc<ColdResult<Bytes>>>,
        open: &mut Opening<'k>,
        deadline: Option<Instant>,
    ) -> ColdResult<ColdResult<TxBody>> {
        let (h, le) = (r.h.expect("a header"), r.le.expect("an entry"));
        let (key, seq) = (r.p.object.key.as_str(), r.pos.seq);
        if open.dict.as_ref().is_none_or(|(k, _)| *k != key) {
            // The last pack's let go of before this one's is opened.
            drop(open.dict.take());
            let d = match dicts.remove(key) {
                None if h.dict_range().is_none() => Ok(None),
                // Taken already and let go of: its pack's reads were not
                // one after another (see the sort in `frame_bodies`). Its
                // remaining reads fail rather than read without it.
                None => Err(ColdError::Task(format!(
                    "the dictionary of {key} was let go of before its last read"
                ))),
                // From memory again, or the disk cache; read as a lookup
                // reads it if they let it go meanwhile (another reader's,
                // or this batch's own). Not started past
                // the batch's deadline, nor waited for past it at the gate
                // of another reader's read (a GET this starts runs to its
                // end, as a lookup's does); a deadline passed fails the
                // whole batch, as in its phases.
                Some((h, DictState::Held | DictState::Cached)) => {
                    in_time(deadline)?;
                    let read = || self.frame_dict(r.p, &h);
                    let d = match deadline {
                        Some(at) => ledgerstore_store::with_read_deadline(at, read),
                        None => read(),
                    };
                    match d {
                        Err(e @ ColdError::Store(StoreError::DeadlinePassed { .. })) => {
                            return Err(e);
                        }
                        d => d,
                    }
                }
                Some((h, DictState::Wanted(_))) => match fetched.remove(key).as_deref() {
                    Some(Ok(bytes)) => self.opened_dict(key, &dict_name(key), &h, bytes).map(Some),
                    Some(Err(e)) => Err(dup(e)),
                    None => Err(ColdError::Task("a dictionary was not fetched".into())),
                },
                Some((_, DictState::Failed(e))) => Err(e),
            };
            open.dict = Some((key, d));
        }
        if open
            .frame
            .as_ref()
            .is_none_or(|(k, s, _)| *k != key || *s != seq)
        {
            // The last ledger's let go of before this one's is opened.
            drop(open.frame.take());
            let d = &open.dict.as_ref().expect("this pack's, set above").1;
            let f = match (d, got) {
                (Err(e), _) | (Ok(_), Err(e)) => Err(dup(e)),
                (Ok(d), Ok(bytes)) => self.opened_frame(r.p, &h, &le, seq, name, bytes, d.clone()),
            };
            open.frame = Some((key, seq, f));
        }
        let body = match &open.frame.as_ref().expect("this ledger's, set above").2 {
            Ok(f) => body_of(r.p, f, r.pos),
            Err(e) => Err(dup(e)),
        };
        Ok(body.map_err(|e| e.for_ledgers(r.p.first, r.p.last)))
    }
}
