//! Where a single-key query's store read runs.
//!
//! A warm lookup (hot index in memory, the body in RocksDB's block cache or
//! the page cache) takes ~10–20 µs, while handing it to tokio's blocking
//! pool and back costs two thread wake-ups: on this machine 80 → 59 µs of
//! daemon CPU per GetTransaction when the read ran inline instead
//! (docs/benchmarks.md, "Daemon CPU per lookup"). A read that goes to disk
//! must not stall an async worker, though: with 2 workers that would cap
//! the disk queue at 2 and delay every other request behind it.
//!
//! So the placer counts slow reads: a read longer than
//! `query.inline_read_us` (measured around the read itself, wherever it
//! ran) is slow. Reads run inline while a moving ratio of slow reads (each
//! read weighs 1/64) stays under 1%; then they go to the read threads,
//! where many can wait on the disk at once. One slow read after a run of
//! fast ones lifts the ratio to 1.6%, so the next reads go to the pool at
//! once; ~28 fast reads in a row bring them back. A mean of read times
//! would not do: a store that is 80% cached has a mean well under the limit
//! while a third of its reads wait on the disk. Batches, ledgers and status
//! always use the pool.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Weight of the newest read in the ratio: 1/2^SHIFT.
const SHIFT: u32 = 6;
/// The ratio's fixed-point one (parts per million).
const ONE: u32 = 1_000_000;
/// Reads run inline while the ratio of slow reads is under this (1%).
const MAX_SLOW: u32 = ONE / 100;

/// The moving ratio of slow single-key reads and the limit that makes a
/// read slow.
#[derive(Debug)]
pub struct ReadPlacer {
    /// A read longer than this is slow; zero never runs reads inline.
    limit: Duration,
    /// Parts per million.
    slow_ppm: AtomicU32,
}

impl ReadPlacer {
    /// Reads longer than `limit_us` count as slow; 0 sends every read to
    /// the read threads.
    pub fn new(limit_us: u64) -> Self {
        Self {
            limit: Duration::from_micros(limit_us),
            slow_ppm: AtomicU32::new(0),
        }
    }

    /// True when the next single-key read should run inline.
    pub fn inline(&self) -> bool {
        !self.limit.is_zero() && self.slow_ppm.load(Ordering::Relaxed) < MAX_SLOW
    }

    /// Folds one read's time into the ratio. Concurrent updates may lose
    /// one another's step; the ratio stays a fair estimate.
    pub fn observe(&self, took: Duration) {
        let x = if took > self.limit { ONE } else { 0 };
        let r = self.slow_ppm.load(Ordering::Relaxed);
        let next = if x >= r {
            r + ((x - r) >> SHIFT)
        } else {
            r - ((r - x) >> SHIFT)
        };
        self.slow_ppm.store(next, Ordering::Relaxed);
    }

    /// The moving ratio of slow reads, 0 to 1.
    pub fn slow_ratio(&self) -> f64 {
        f64::from(self.slow_ppm.load(Ordering::Relaxed)) / f64::from(ONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn fast_reads_stay_inline_and_one_slow_read_moves_them_to_the_pool() {
        let p = ReadPlacer::new(100);
        assert!(p.inline(), "a new placer starts inline");
        for _ in 0..1000 {
            p.observe(15 * US);
        }
        assert!(p.inline(), "15 µs reads: {}", p.slow_ratio());
        // One read from disk: the next reads go to the pool at once.
        p.observe(1000 * US);
        assert!(!p.inline(), "after a 1 ms read: {}", p.slow_ratio());
        // Fast reads bring them back, not at once.
        let mut n = 0;
        while !p.inline() {
            p.observe(15 * US);
            n += 1;
            assert!(n < 100, "never came back: {}", p.slow_ratio());
        }
        assert!((20..=40).contains(&n), "came back after {n} fast reads");
    }

    #[test]
    fn a_partly_cached_store_keeps_reads_on_the_pool() {
        // 80% fast and 20% from disk: the mean (~42 µs) is under the limit,
        // but a fifth of the reads would stall a worker.
        let p = ReadPlacer::new(100);
        let mut inline = 0;
        for i in 0..1000 {
            p.observe(if i % 5 == 0 { 150 * US } else { 15 * US });
            inline += u32::from(p.inline());
        }
        assert!(inline < 50, "{inline} of 1000 reads would have run inline");
        assert!((0.1..0.3).contains(&p.slow_ratio()), "{}", p.slow_ratio());
    }

    #[test]
    fn a_rare_slow_read_costs_a_short_stay_on_the_pool() {
        // One slow read in 500: reads run inline most of the time.
        let p = ReadPlacer::new(100);
        let mut inline = 0;
        for i in 0..5000 {
            p.observe(if i % 500 == 0 { 500 * US } else { 15 * US });
            inline += u32::from(p.inline());
        }
        assert!(inline > 4500, "{inline} of 5000 reads ran inline");
    }

    #[test]
    fn zero_limit_never_runs_inline() {
        let p = ReadPlacer::new(0);
        assert!(!p.inline());
        p.observe(Duration::ZERO);
        assert!(!p.inline());
    }
}
