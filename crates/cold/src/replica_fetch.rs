//! A batch's reads from the object store (`replica_batch.rs`): pieces
//! from the disk cache, or fetched together, nearby ranges of one object
//! merged into one GET ([`MERGE_GAP`], [`MERGE_MAX`]) and
//! `replica.batch_gets_in_flight` GETs in flight ([`super::HeldMemory::batch_gets`]),
//! stopped at the batch's deadline.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use ledgerstore_store::StoreError;

use super::Replica;
use crate::error::{ColdError, ColdResult};

/// Ranges of one object at most this far apart are read by one GET.
pub const MERGE_GAP: u64 = 8 << 10;
/// The longest range one merged GET reads.
pub const MERGE_MAX: u64 = 1 << 20;

/// The answer of a batch whose deadline passed: DEADLINE_EXCEEDED, not a
/// store failure a client would retry at once.
fn deadline_passed() -> ColdError {
    ColdError::Store(StoreError::DeadlinePassed {
        what: "a batch of transactions".into(),
    })
}

pub(super) fn in_time(deadline: Option<Instant>) -> ColdResult<()> {
    match deadline {
        Some(d) if Instant::now() >= d => Err(deadline_passed()),
        _ => Ok(()),
    }
}

/// A piece of an object to read, cached as `name` (None: not cached).
pub(super) struct Want {
    pub(super) name: Option<String>,
    pub(super) key: String,
    pub(super) range: Range<u64>,
}

/// One GET: a range of `key` covering the wants `members`.
struct Span {
    key: String,
    range: Range<u64>,
    members: Vec<(usize, Range<u64>)>,
}

/// Groups ranges of one object that lie close into one GET each.
fn spans(reqs: &[(String, Range<u64>)]) -> Vec<Span> {
    let mut order: Vec<usize> = (0..reqs.len()).collect();
    order.sort_by(|&a, &b| {
        (&reqs[a].0, reqs[a].1.start, reqs[a].1.end).cmp(&(
            &reqs[b].0,
            reqs[b].1.start,
            reqs[b].1.end,
        ))
    });
    let mut out: Vec<Span> = Vec::new();
    for i in order {
        let (key, r) = &reqs[i];
        if let Some(s) = out.last_mut() {
            let end = s.range.end.max(r.end);
            if s.key == *key
                && r.start <= s.range.end.saturating_add(MERGE_GAP)
                && end - s.range.start <= MERGE_MAX
            {
                s.range.end = end;
                s.members.push((i, r.clone()));
                continue;
            }
        }
        out.push(Span {
            key: key.clone(),
            range: r.clone(),
            members: vec![(i, r.clone())],
        });
    }
    out
}

impl Replica {
    /// Bytes of `reqs` (object, range), in order: one wait on the object
    /// store for them all, their GETs in flight together and nearby
    /// ranges merged. Fails as a whole only when `deadline` passes (or
    /// the runtime fails).
    pub(super) fn fetch_all(
        &self,
        reqs: Vec<(String, Range<u64>)>,
        deadline: Option<Instant>,
    ) -> ColdResult<Vec<ColdResult<Bytes>>> {
        if reqs.is_empty() {
            return Ok(Vec::new());
        }
        in_time(deadline)?;
        let n = reqs.len();
        let spans = spans(&reqs);
        let remote = Arc::clone(&self.remote);
        let in_flight = self.batch_gets;
        let work = async move {
            futures::stream::iter(spans)
                .map(|s| {
                    let remote = Arc::clone(&remote);
                    async move {
                        let got = remote.get_range(&s.key, s.range.clone()).await;
                        match got {
                            Ok(b) => s
                                .members
                                .into_iter()
                                .map(|(i, r)| {
                                    let at = (r.start - s.range.start) as usize;
                                    (i, Ok(b.slice(at..at + (r.end - r.start) as usize)))
                                })
                                .collect::<Vec<_>>(),
                            Err(e) if s.members.len() == 1 => vec![(s.members[0].0, Err(e))],
                            // Each part fails (or not) on its own.
                            // One at a time: the span held one of the
                            // slots, and a store that failed it may be
                            // throttling.
                            Err(_) => {
                                let mut out = Vec::with_capacity(s.members.len());
                                for (i, r) in s.members {
                                    out.push((i, remote.get_range(&s.key, r).await));
                                }
                                out
                            }
                        }
                    }
                })
                .buffer_unordered(in_flight)
                .flat_map(futures::stream::iter)
                .collect::<Vec<_>>()
                .await
        };
        let got = self.block(async move {
            match deadline {
                Some(d) => tokio::time::timeout_at(tokio::time::Instant::from_std(d), work)
                    .await
                    .map_err(|_| deadline_passed()),
                None => Ok(work.await),
            }
        })?;
        let mut out: Vec<Option<ColdResult<Bytes>>> = (0..n).map(|_| None).collect();
        for (i, r) in got {
            out[i] = Some(r);
        }
        Ok(out
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(ColdError::Task("a read was lost".into()))))
            .collect())
    }

    /// Pieces `wants`, by index: from the cache, else fetched together
    /// (and cached; a failed cache write is logged, the bytes served).
    pub(super) fn pieces(
        &self,
        wants: &[Want],
        deadline: Option<Instant>,
    ) -> ColdResult<Vec<Arc<ColdResult<Bytes>>>> {
        let mut out: Vec<Option<Arc<ColdResult<Bytes>>>> = vec![None; wants.len()];
        let mut seen: HashMap<(&str, u64, u64), usize> = HashMap::new();
        let mut missing: Vec<usize> = Vec::new();
        let mut same: Vec<(usize, usize)> = Vec::new();
        for (i, w) in wants.iter().enumerate() {
            let k = (w.key.as_str(), w.range.start, w.range.end);
            if let Some(&first) = seen.get(&k) {
                same.push((i, first));
                continue;
            }
            seen.insert(k, i);
            match w.name.as_deref().and_then(|n| self.cache.get(n)) {
                Some(b) => out[i] = Some(Arc::new(Ok(Bytes::from(b)))),
                None => missing.push(i),
            }
        }
        let reqs = missing
            .iter()
            .map(|&i| (wants[i].key.clone(), wants[i].range.clone()))
            .collect();
        for (&i, got) in missing.iter().zip(self.fetch_all(reqs, deadline)?) {
            if let (Ok(bytes), Some(name)) = (&got, &wants[i].name)
                && let Err(e) = self.cache.put(name, bytes)
            {
                tracing::warn!(entry = %name, error = %e, "caching a piece failed; serving it uncached");
            }
            out[i] = Some(Arc::new(got));
        }
        for (i, first) in same {
            out[i] = out[first].clone();
        }
        Ok(out
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Arc::new(Err(ColdError::Task("a read was lost".into())))))
            .collect())
    }
}
