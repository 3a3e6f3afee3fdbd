//! Ordinal ↔ event id: per ledger, its first ordinal and its runs, each a
//! `(tx, op)` with consecutive indexes.
//!
//! The ledger table has an entry per ledger of the range and one more:
//! the ledger's first ordinal and where its runs start in the runs
//! section (`u32` each); the last entry is `(n, runs length)`. A ledger's
//! runs are varints: the transaction order's delta from the previous run's
//! (0 for the first), the operation, the first index and the count.

use ledgerstore_stellar::events::{EventId, OP_MASK, TX_MASK};

use crate::error::{EventIndexError, EventIndexResult};
use crate::keys::u32_at;
use crate::{LEDGER_SAMPLE, search, varint};

/// Builds the ledger table and the runs from ids in increasing order.
#[derive(Debug)]
pub(crate) struct IdsBuilder {
    first: u32,
    last: u32,
    pub(crate) table: Vec<u8>,
    pub(crate) runs: Vec<u8>,
    /// The ledger whose runs are being collected, and its runs.
    ledger: u32,
    open: Vec<(u32, u32, u32, u32)>,
    count: u32,
    prev: Option<EventId>,
}

impl IdsBuilder {
    pub(crate) fn new(first: u32, last: u32) -> Self {
        IdsBuilder {
            first,
            last,
            table: Vec::new(),
            runs: Vec::new(),
            ledger: first,
            open: Vec::new(),
            count: 0,
            prev: None,
        }
    }

    /// Closes ledgers up to (not including) `upto`.
    fn close_until(&mut self, upto: u32) {
        while self.ledger < upto {
            let at = self.table.len();
            self.table.resize(at + 8, 0);
            let start = self.count - self.open.iter().map(|r| r.3).sum::<u32>();
            self.table[at..at + 4].copy_from_slice(&start.to_le_bytes());
            let off = self.runs.len() as u32;
            self.table[at + 4..at + 8].copy_from_slice(&off.to_le_bytes());
            let mut tx = 0;
            for (t, op, first, count) in self.open.drain(..) {
                for v in [t - tx, op, first, count] {
                    varint::put(&mut self.runs, u64::from(v));
                }
                tx = t;
            }
            self.ledger += 1;
        }
    }

    /// Adds the next event's id; ids must increase and lie in the range.
    pub(crate) fn push(&mut self, id: EventId) -> EventIndexResult<()> {
        if id.ledger < self.first || id.ledger > self.last {
            return Err(EventIndexError::Invalid(format!(
                "event {id} outside ledgers {}..={}",
                self.first, self.last
            )));
        }
        if id.tx > TX_MASK || id.op > OP_MASK {
            return Err(EventIndexError::Invalid(format!(
                "event {id}: tx or op out of range"
            )));
        }
        if self.prev.is_some_and(|p| p >= id) {
            return Err(EventIndexError::Invalid(format!("event {id} out of order")));
        }
        if self.count == u32::MAX {
            return Err(EventIndexError::Invalid("more than 2^32 - 1 events".into()));
        }
        self.close_until(id.ledger);
        match self.open.last_mut() {
            Some(r) if r.0 == id.tx && r.1 == id.op && r.2.checked_add(r.3) == Some(id.index) => {
                r.3 += 1;
            }
            _ => self.open.push((id.tx, id.op, id.index, 1)),
        }
        self.count += 1;
        self.prev = Some(id);
        Ok(())
    }

    /// Closes every ledger and writes the final entry.
    pub(crate) fn finish(&mut self) -> EventIndexResult<u32> {
        self.close_until(self.last + 1);
        if self.runs.len() > u32::MAX as usize {
            return Err(EventIndexError::Invalid("runs over 4 GiB".into()));
        }
        let at = self.table.len();
        self.table.resize(at + 8, 0);
        self.table[at..at + 4].copy_from_slice(&self.count.to_le_bytes());
        let off = self.runs.len() as u32;
        self.table[at + 4..at + 8].copy_from_slice(&off.to_le_bytes());
        Ok(self.count)
    }
}

/// The id sections of an open index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ids<'a> {
    pub(crate) first: u32,
    pub(crate) table: &'a [u8],
    pub(crate) runs: &'a [u8],
    /// The ledger sample: the first ordinal of every [`LEDGER_SAMPLE`]th
    /// table entry (empty: search the whole table).
    pub(crate) sample: &'a [u32],
}

fn corrupt(what: &str) -> EventIndexError {
    EventIndexError::corrupt(format!("ids: {what}"))
}

impl<'a> Ids<'a> {
    fn ledgers(&self) -> usize {
        self.table.len() / 8 - 1
    }

    /// Ledger `l`'s (first ordinal, end ordinal, runs).
    fn ledger(&self, l: usize) -> EventIndexResult<(u32, u32, &'a [u8])> {
        let (o0, r0) = (u32_at(self.table, 8 * l), u32_at(self.table, 8 * l + 4));
        let (o1, r1) = (
            u32_at(self.table, 8 * l + 8),
            u32_at(self.table, 8 * l + 12),
        );
        if o0 > o1 || r0 > r1 {
            return Err(corrupt("ledger table not increasing"));
        }
        let runs = self
            .runs
            .get(r0 as usize..r1 as usize)
            .ok_or_else(|| corrupt("runs past the end"))?;
        Ok((o0, o1, runs))
    }

    /// Walks ledger `l`'s runs: `f(tx, op, first, count)` until it returns
    /// false; checks the counts add up to the ledger's events.
    fn walk(
        &self,
        l: usize,
        mut f: impl FnMut(u32, u32, u32, u32) -> bool,
    ) -> EventIndexResult<()> {
        let (o0, o1, runs) = self.ledger(l)?;
        let (mut pos, mut tx, mut total) = (0, 0u32, 0u64);
        while pos < runs.len() {
            let mut next = || varint::get_u32(runs, &mut pos).ok_or_else(|| corrupt("bad run"));
            let (dt, op, first, count) = (next()?, next()?, next()?, next()?);
            tx = tx.checked_add(dt).ok_or_else(|| corrupt("bad run"))?;
            if tx > TX_MASK || op > OP_MASK || count == 0 || first.checked_add(count).is_none() {
                return Err(corrupt("run out of range"));
            }
            total += u64::from(count);
            // Checked before `f` sees the run: callers add counts up.
            if total > u64::from(o1 - o0) {
                return Err(corrupt("runs hold more events than their ledger"));
            }
            if !f(tx, op, first, count) {
                return Ok(());
            }
        }
        if total != u64::from(o1 - o0) {
            return Err(corrupt("runs do not cover the ledger's events"));
        }
        Ok(())
    }

    /// The id of ordinal `ord` (< n).
    pub(crate) fn id_of(&self, ord: u32) -> EventIndexResult<EventId> {
        Ok(self.id_near(ord, 0)?.0)
    }

    /// The id of ordinal `ord` (< n) and its ledger's index in the range,
    /// found by galloping from ledger `near` when `ord` is at or after
    /// that ledger's first event (a page of hits: each from the previous
    /// hit's ledger, so a cold table costs the pages between them), else
    /// by a binary search over the whole table.
    pub(crate) fn id_near(&self, ord: u32, near: usize) -> EventIndexResult<(EventId, usize)> {
        let l = self.ledger_near(ord, near)?;
        Ok((self.id_in(ord, l)?, l))
    }

    /// The ledger table entries where ordinal `ord`'s ledger is searched:
    /// one sample's span (4 KiB of table) when the sample has a second
    /// entry (sample `j` is entry `LEDGER_SAMPLE × j`, so if it is ≤ ord
    /// the answer is at or after that ledger, else before it), else the
    /// whole table. The search reads entries `from..=to`.
    pub(crate) fn span(&self, ord: u32) -> (usize, usize) {
        let ledgers = self.ledgers();
        match search::partition(1, self.sample.len(), |k| self.sample[k] <= ord) {
            j if self.sample.len() > 1 => (
                (LEDGER_SAMPLE * (j - 1)).min(ledgers),
                (LEDGER_SAMPLE * j).min(ledgers),
            ),
            _ => (0, ledgers),
        }
    }

    /// The index of ordinal `ord`'s ledger (see [`id_near`](Self::id_near)).
    pub(crate) fn ledger_near(&self, ord: u32, near: usize) -> EventIndexResult<usize> {
        let ledgers = self.ledgers();
        // The last ledger whose first ordinal is ≤ ord and that has events.
        let ends_at_or_before = |l: usize| u32_at(self.table, 8 * (l + 1)) <= ord;
        let (from, to) = self.span(ord);
        let lo = if near > from && near < to && u32_at(self.table, 8 * near) <= ord {
            search::gallop(near, to, ends_at_or_before)
        } else {
            search::partition(from, to, ends_at_or_before)
        };
        if lo >= ledgers {
            return Err(corrupt("ordinal past the last ledger"));
        }
        Ok(lo)
    }

    /// Where ledger `l`'s runs lie in the runs section (unchecked: for
    /// prefetching).
    pub(crate) fn runs_span(&self, l: usize) -> (usize, usize) {
        (
            u32_at(self.table, 8 * l + 4) as usize,
            u32_at(self.table, 8 * l + 12) as usize,
        )
    }

    /// The id of ordinal `ord` in ledger `lo` (an error if it is not
    /// there).
    pub(crate) fn id_in(&self, ord: u32, lo: usize) -> EventIndexResult<EventId> {
        let (o0, _, _) = self.ledger(lo)?;
        let mut left = ord
            .checked_sub(o0)
            .ok_or_else(|| corrupt("ordinal before its ledger"))?;
        let mut found = None;
        self.walk(lo, |tx, op, first, count| {
            if left < count {
                found = Some((tx, op, first + left));
                return false;
            }
            left -= count;
            true
        })?;
        let (tx, op, index) = found.ok_or_else(|| corrupt("ordinal not in its ledger's runs"))?;
        Ok(EventId {
            ledger: self.first + lo as u32,
            tx,
            op,
            index,
        })
    }

    /// The first ordinal whose id is `≥ id`: 0 before the range, n after.
    pub(crate) fn ordinal_from(&self, id: EventId) -> EventIndexResult<u32> {
        let ledgers = self.ledgers();
        let l = id.ledger.saturating_sub(self.first) as usize;
        if id.ledger < self.first {
            return Ok(0);
        }
        if l >= ledgers {
            return Ok(u32_at(self.table, 8 * ledgers));
        }
        let (o0, _, _) = self.ledger(l)?;
        let mut skip = 0u32;
        self.walk(l, |tx, op, first, count| {
            match (tx, op).cmp(&(id.tx, id.op)) {
                std::cmp::Ordering::Less => {
                    skip += count;
                    true
                }
                std::cmp::Ordering::Equal => {
                    skip += id.index.saturating_sub(first).min(count);
                    id.index >= first + count
                }
                std::cmp::Ordering::Greater => false,
            }
        })?;
        o0.checked_add(skip)
            .ok_or_else(|| corrupt("runs hold more events than the file"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `id_near` gives `id_of`'s answer from any hint: a ledger at or
    /// before the ordinal's (galloping, over empty ledgers too), one after
    /// it or past the range (a binary search), and gives the ledger back.
    #[test]
    fn id_near_agrees_with_id_of_from_any_hint() {
        let (first, last) = (50u32, 1300u32);
        let mut b = IdsBuilder::new(first, last);
        let mut ids = Vec::new();
        for ledger in first..=last {
            // Empty ledgers in runs, one with many events.
            let count = match ledger % 7 {
                0 | 3 => 0,
                5 => 30,
                k => k,
            };
            for i in 0..count {
                let id = EventId {
                    ledger,
                    tx: 1 + i / 5,
                    op: (i % 5) / 2,
                    index: i,
                };
                b.push(id).expect("push");
                ids.push(id);
            }
        }
        let n = b.finish().expect("finish");
        let [sample, _] = crate::write::samples(&b.table, &[]);
        let sample: Vec<u32> = sample.chunks(4).map(|c| u32_at(c, 0)).collect();
        assert_eq!(sample.len(), 3);
        for sample in [&[][..], &sample] {
            let r = Ids {
                first,
                table: &b.table,
                runs: &b.runs,
                sample,
            };
            let ledgers = (last - first + 1) as usize;
            for (ord, want) in ids.iter().enumerate() {
                let ord = ord as u32;
                assert_eq!(r.id_of(ord).expect("id"), *want);
                let at = (want.ledger - first) as usize;
                for near in [0, 1, 7, 511, 512, 513, 1024, 1250, 1251, 5000]
                    .into_iter()
                    .chain([at.saturating_sub(600), at.saturating_sub(3), at, at + 1])
                {
                    let (got, l) = r.id_near(ord, near).expect("id");
                    assert_eq!((got, l), (*want, at));
                    assert!(l < ledgers);
                }
            }
            assert!(r.id_near(n, 3).is_err());
        }
    }

    /// A well-framed ledger whose runs hold more events than its table
    /// says (counts of 2^32 − 1): refused before any count is added up,
    /// never an overflow (the hostile review's file).
    #[test]
    fn runs_holding_more_than_their_ledger_are_refused_not_added_up() {
        let mut runs = Vec::new();
        for op in 0..3u32 {
            for v in [0, op, 0, u32::MAX] {
                crate::varint::put(&mut runs, u64::from(v));
            }
        }
        let mut table = Vec::new();
        for v in [0u32, 0, 3, runs.len() as u32] {
            table.extend_from_slice(&v.to_le_bytes());
        }
        let ids = Ids {
            first: 10,
            table: &table,
            runs: &runs,
            sample: &[],
        };
        let id = EventId {
            ledger: 10,
            tx: 0,
            op: 5,
            index: 0,
        };
        let err = ids.ordinal_from(id).expect_err("damaged runs");
        assert!(err.to_string().contains("more events"), "{err}");
        assert!(ids.id_of(1).is_err());
    }
}
