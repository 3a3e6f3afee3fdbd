//! What tests read of a replica, and the faults they set in it, beside
//! its public figures.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{Replica, frames};
use crate::cache::DiskCache;

impl Replica {
    /// The most any batch held fetched and not yet opened at once
    /// ([`super::HeldMemory::batch`] bounds it), and what batches fetched in
    /// all, bytes.
    pub(crate) fn batch_bytes(&self) -> (u64, u64) {
        (
            self.batch_peak.load(Ordering::Relaxed),
            self.batch_fetched.load(Ordering::Relaxed),
        )
    }

    /// Its disk cache, for tests.
    pub(crate) fn disk_cache(&self) -> &DiskCache {
        &self.cache
    }

    /// Marks pack `key`'s dictionary found damaged, as a failed fetch
    /// does, its backoff running or (`over`) already over, for tests.
    pub(crate) fn damage_dict(&self, key: &str, over: bool) {
        let name = frames::dict_name(key);
        self.found_damaged(&name, key, "damaged by a test");
        if !over {
            return;
        }
        if let Some(d) = self
            .damaged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(&name)
        {
            d.until = Instant::now();
        }
    }

    /// The times in a row pack `key`'s dictionary was found damaged
    /// (`None`: not damaged, or opened since), for tests.
    pub(crate) fn dict_damage_failures(&self, key: &str) -> Option<u32> {
        self.damaged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&frames::dict_name(key))
            .map(|d| d.failures)
    }

    /// The most opened frames and dictionaries any batch kept in hand
    /// through a round's GETs that the round did not read.
    pub(crate) fn batch_carried(&self) -> u64 {
        self.batch_carried.load(Ordering::Relaxed)
    }
}
