//! Ledgers gathered into store batches. A batch ends at a count of
//! ledgers, or with the ledger whose [`LedgerInput::held_len`] brings it
//! to a number of bytes, whichever comes first. A batch bounded by count
//! alone holds 2,000 dense Stellar ledgers (~2 GB); the bytes keep it near
//! the cap whatever the ledgers' size. Used by every bulk writer: `ingest`
//! from a Stellar source, the daemon's lake follower and its
//! IngestLedgers streams.

use crate::input::LedgerInput;

/// How many of `pending` the next batch takes: up to `max_ledgers`,
/// ending with the ledger that brings the batch to `max_bytes` (so at
/// least one ledger, when any is pending and `max_ledgers` ≥ 1).
pub fn batch_len(pending: &[LedgerInput], max_ledgers: usize, max_bytes: u64) -> usize {
    let mut bytes = 0u64;
    for (i, l) in pending.iter().take(max_ledgers).enumerate() {
        bytes += l.held_len() as u64;
        if bytes >= max_bytes {
            return i + 1;
        }
    }
    pending.len().min(max_ledgers)
}

/// Pending ledgers, in order, and their held bytes.
#[derive(Debug)]
pub struct Batcher {
    max_ledgers: usize,
    max_bytes: u64,
    pending: Vec<LedgerInput>,
    bytes: u64,
}

impl Batcher {
    /// Batches of at most `max_ledgers` ledgers and about `max_bytes`
    /// bytes (each bound at least 1, so every batch takes a ledger).
    pub fn new(max_ledgers: usize, max_bytes: u64) -> Self {
        Self {
            max_ledgers: max_ledgers.max(1),
            max_bytes: max_bytes.max(1),
            pending: Vec::new(),
            bytes: 0,
        }
    }

    /// Appends `ledgers` after those pending.
    pub fn push(&mut self, ledgers: impl IntoIterator<Item = LedgerInput>) {
        for l in ledgers {
            self.bytes += l.held_len() as u64;
            self.pending.push(l);
        }
    }

    /// Ledgers pending.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// No ledger pending.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The pending ledgers' held bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The next batch, once the pending ledgers reach either bound.
    pub fn full(&mut self) -> Option<Vec<LedgerInput>> {
        if self.pending.len() < self.max_ledgers && self.bytes < self.max_bytes {
            return None;
        }
        Some(self.take(batch_len(&self.pending, self.max_ledgers, self.max_bytes)))
    }

    /// The first batch's worth of pending ledgers (all of them when they
    /// reach neither bound); the rest stay pending.
    pub fn first(&mut self) -> Vec<LedgerInput> {
        self.take(batch_len(&self.pending, self.max_ledgers, self.max_bytes))
    }

    /// Every pending ledger.
    pub fn take_all(&mut self) -> Vec<LedgerInput> {
        self.bytes = 0;
        std::mem::take(&mut self.pending)
    }

    /// Drops every pending ledger.
    pub fn clear(&mut self) {
        self.take_all();
    }

    fn take(&mut self, n: usize) -> Vec<LedgerInput> {
        let rest = self.pending.split_off(n);
        let batch = std::mem::replace(&mut self.pending, rest);
        self.bytes -= batch.iter().map(|l| l.held_len() as u64).sum::<u64>();
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledgers(sizes: &[usize]) -> Vec<LedgerInput> {
        let ledger = |(n, seq)| LedgerInput::without_txs(seq, 0, vec![0u8; n].into());
        sizes.iter().copied().zip(1u32..).map(ledger).collect()
    }

    fn seqs(b: &[LedgerInput]) -> Vec<u32> {
        b.iter().map(|l| l.seq).collect()
    }

    #[test]
    fn a_batch_ends_at_its_ledger_count_or_with_the_ledger_that_reaches_its_bytes() {
        let l = ledgers(&[10, 10, 10, 10, 10]);
        // The count ends it before the bytes do.
        assert_eq!(batch_len(&l, 2, 1000), 2);
        // The third ledger reaches 30 bytes: it is the batch's last.
        assert_eq!(batch_len(&l, 5, 30), 3);
        assert_eq!(batch_len(&l, 5, 25), 3);
        // A ledger larger than the cap is a batch of its own.
        assert_eq!(batch_len(&ledgers(&[100, 1]), 5, 30), 1);
        // Neither reached: every pending ledger (the caller's tail).
        assert_eq!(batch_len(&l, 9, 1000), 5);
        assert_eq!(batch_len(&l[..0], 9, 1000), 0);
    }

    #[test]
    fn the_batcher_cuts_full_batches_in_order_and_keeps_its_byte_count() {
        let mut b = Batcher::new(5, 25);
        b.push(ledgers(&[10, 10]));
        assert_eq!((b.len(), b.bytes()), (2, 20));
        assert!(b.full().is_none(), "neither bound reached");
        // A unit of four more: the bytes (not the count of 5) end the
        // first batch at its third ledger, then the rest (30 bytes) holds
        // another.
        b.push(ledgers(&[1, 2, 3, 4]).into_iter().map(|mut l| {
            l.seq += 2;
            l.raw = vec![0u8; 10].into();
            l
        }));
        assert_eq!(b.bytes(), 60);
        assert_eq!(b.full().map(|x| seqs(&x)), Some(vec![1, 2, 3]));
        assert_eq!(b.full().map(|x| seqs(&x)), Some(vec![4, 5, 6]));
        assert!(b.full().is_none());
        assert_eq!((b.len(), b.bytes()), (0, 0));
        // A ledger over the byte cap is a batch alone; the count caps too.
        let mut b = Batcher::new(2, 25);
        b.push(ledgers(&[100, 1, 1, 1]));
        assert_eq!(b.full().map(|x| seqs(&x)), Some(vec![1]));
        assert_eq!(b.full().map(|x| seqs(&x)), Some(vec![2, 3]));
        assert!(b.full().is_none());
        assert_eq!(b.bytes(), 1);
        assert_eq!(seqs(&b.take_all()), vec![4]);
        assert_eq!((b.len(), b.bytes()), (0, 0));
        // `first`: one batch's worth, the rest stays.
        b.push(ledgers(&[5, 5, 5]));
        assert_eq!(seqs(&b.first()), vec![1, 2]);
        assert_eq!((b.len(), b.bytes()), (1, 5));
        b.clear();
        assert!(b.is_empty() && b.bytes() == 0);
        // Zero bounds are taken as 1: every batch still takes a ledger.
        let mut b = Batcher::new(0, 0);
        b.push(ledgers(&[1, 1]));
        assert_eq!(b.full().map(|x| seqs(&x)), Some(vec![1]));
    }
}
