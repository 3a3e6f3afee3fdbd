//! `[cold]`: a writer publishes closed ranges to object storage, and
//! `[replica]`: a read replica serves what a writer published. Both reach
//! object storage with `[lake]`'s settings (endpoint, region, credentials,
//! timeouts, retries).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{ConfigError, invalid};

/// `[cold]` (layout `indexed`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ColdConfig {
    /// Where closed ranges are published: `s3://bucket/prefix`,
    /// `gs://bucket/prefix`, or a directory. Empty: nothing is published.
    pub store: String,
    /// Time between publish rounds, ms. A round publishes every range
    /// closed since the last one.
    pub publish_interval_ms: u64,
    /// Published base ranges whose ledgers and bodies stay on local disk,
    /// newest first (0: keep everything). Older published ranges are
    /// evicted from the data dir and served through the object store.
    pub keep_local_ranges: u32,
    /// Publish the event index's files (with `[events] enabled`) beside
    /// the packs, so replicas answer getEvents. Off by default: replicas
    /// and writers before this build refuse a manifest that lists event
    /// files, so turn it on once every replica (and any build a writer may
    /// roll back to) reads them.
    pub publish_events: bool,
    /// Threads that read and recompress a pack's ledgers (a round's CPU
    /// is nearly all this). 0: half the cores (at least 1) in the daemon,
    /// where ingest and lookups share them, and every core for the
    /// offline `ledgerstore publish`. Each thread holds up to 2 ledgers
    /// at once (~0.2 MB a pubnet ledger).
    pub publish_threads: u32,
    /// The pack format new packs are written in: 2, each record and body
    /// a frame of its own (read by every build); 3, each ledger's record
    /// and bodies one zstd frame (0.77× the bytes of 2 on 2026 pubnet
    /// ledgers; read by the builds since 5702fe7); or 4, those frames
    /// compressed with a dictionary sampled from the pack's own ledgers
    /// (`pack_dict_kib`; 0.87–0.98× the bytes of 3, docs/benchmarks.md;
    /// read by the builds since dac08fd). Unset or 0 (the default): the
    /// store's own, the version of its newest pack (version 1 goes on as
    /// 2), and 4 for a store with no pack yet (set 2 if its replicas, or a
    /// build the writer may roll back to, predate dac08fd). Packs already
    /// published stay as they are. Set 3 or 4 for an existing store once
    /// every replica (and any build the writer may roll back to) reads it:
    /// older builds answer DATA_LOSS for a pack of a version they do not
    /// know.
    pub pack_version: u32,
    /// The zstd level of version-3 and 4 ledger frames (1 to 22): publish
    /// CPU against bytes in the bucket.
    pub pack_zstd_level: i32,
    /// Version 4: the dictionary's budget, KiB (64 to 16384): raw frames
    /// of the pack's own ledgers, spread across its range. zstd indexes
    /// only a dictionary's last 1 MiB at level 3 (128 KiB at 1, 512 KiB
    /// at 2, 2 MiB at 4, 4 MiB at 6), so more than that helps only higher
    /// levels. A replica reads it once per pack and keeps the most
    /// recently used in memory (`replica.dict_memory_mb`, 64 MiB by
    /// default), each its budget and ~27 KiB (~60 at 1 MiB, three at 16
    /// MiB).
    pub pack_dict_kib: u32,
}

impl Default for ColdConfig {
    fn default() -> Self {
        Self {
            store: String::new(),
            publish_interval_ms: 30_000,
            keep_local_ranges: 0,
            publish_events: false,
            publish_threads: 0,
            pack_version: 0,
            pack_zstd_level: 3,
            pack_dict_kib: 1024,
        }
    }
}

/// `[replica]`: serve the ranges a writer published, read-only.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ReplicaConfig {
    /// The store a writer publishes to (its `[cold] store`). Empty: this
    /// daemon is not a replica.
    pub store: String,
    /// The disk cache's directory (emptied at start; created if missing;
    /// a non-empty directory that is not a cache is refused).
    pub cache_dir: PathBuf,
    /// The disk cache's bound, MiB: segment files (three quarters), pack
    /// table pages, ledgers, bodies and dictionaries (one quarter; a
    /// version-4 pack's dictionary is kept unpacked, ~1 MiB at the default
    /// `cold.pack_dict_kib`, while every pack the manifest lists would
    /// take at most half of that quarter so, and as its pack stores it,
    /// ~160–180 KB, beyond that), least recently used evicted first. A piece
    /// larger than that quarter is not kept (a dictionary larger is
    /// fetched at each open).
    pub cache_mb: u64,
    /// Opened ledger frames (pack versions 3 and 4) kept decompressed in
    /// memory, MiB, the most recently used: lookups of one busy ledger
    /// decompress its frame once. 0 keeps none (nor does a bound below one
    /// frame's size). Also the writer's, for the ranges it evicted.
    pub frame_memory_mb: u64,
    /// Pack dictionaries (version 4) kept decompressed in memory, MiB, the
    /// most recently used (each counts its size plus zstd's tables, ~1.03
    /// MiB at the default `cold.pack_dict_kib`). A lookup in
    /// a pack whose dictionary is not held opens it again from the disk
    /// cache (~0.1 ms of CPU where it is kept unpacked, ~0.4 ms where it is
    /// kept stored: `cache_mb`), or fetches it. 0 keeps none (nor does a bound below
    /// one dictionary's cost). Also the writer's, for the ranges it
    /// evicted.
    pub dict_memory_mb: u64,
    /// What one batch of lookups (BatchGetTransactions, getTransactions)
    /// holds fetched and not yet opened, MiB: the ledger frames and pack
    /// dictionaries (versions 3 and 4) it reads from the disk cache or the
    /// store. A batch needing more reads them in rounds, a ledger at least
    /// a round, so a replica's batches hold at most `query.read_threads`
    /// times this. 1 to 1048576. Also the writer's, for the ranges it
    /// evicted.
    pub batch_memory_mb: u64,
    /// Object-store GETs one batch of lookups keeps in flight (each a
    /// range of one object, nearby ranges merged up to 1 MiB): a batch's
    /// phases and rounds each wait for their GETs, so against a store
    /// with a round trip a batch takes about that round trip for every
    /// this many GETs a phase or round makes. Each GET holds a connection
    /// (a file descriptor) while it runs, and `query.read_threads` batches
    /// run at once. 1 to 1024. Also the writer's, for the ranges it
    /// evicted.
    pub batch_gets_in_flight: u32,
    /// Time between looks for a newer manifest, ms.
    pub poll_ms: u64,
    /// The replica's contract-event index for getEvents (with
    /// `[events] enabled`): the writer's published event files, fetched
    /// whole, and the files it builds from the packs past them. Kept
    /// across restarts (not a cache: it holds every published file, ~10
    /// bytes an event).
    pub events_dir: PathBuf,
}

impl Default for ReplicaConfig {
    fn default() -> Self {
        Self {
            store: String::new(),
            cache_dir: PathBuf::from("./ledgerstore-replica-cache"),
            cache_mb: 10_240,
            frame_memory_mb: 32,
            dict_memory_mb: 64,
            batch_memory_mb: 32,
            batch_gets_in_flight: 32,
            poll_ms: 5_000,
            events_dir: PathBuf::from("./ledgerstore-replica-events"),
        }
    }
}

impl ColdConfig {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if self.publish_interval_ms < 100 {
            return Err(invalid(
                "cold.publish_interval_ms",
                self.publish_interval_ms,
                "at least 100",
            ));
        }
        if !matches!(self.pack_version, 0 | 2..=4) {
            return Err(invalid(
                "cold.pack_version",
                self.pack_version,
                "2 (a frame a record or body), 3 (a frame a ledger), 4 (a frame a ledger, with \
                 the pack's dictionary), or 0 or unset (the store's own: its newest pack's \
                 version, 4 for a new store)",
            ));
        }
        // 16384: the pack crate's MAX_DICT, what a reader allows.
        if !(64..=16384).contains(&self.pack_dict_kib) {
            return Err(invalid(
                "cold.pack_dict_kib",
                self.pack_dict_kib,
                "64 to 16384 (KiB)",
            ));
        }
        if !(1..=22).contains(&self.pack_zstd_level) {
            return Err(invalid(
                "cold.pack_zstd_level",
                self.pack_zstd_level,
                "a zstd level, 1 to 22",
            ));
        }
        // A sanity bound: threads past the cores add only memory (2
        // ledgers each) and RocksDB readers.
        if self.publish_threads > 256 {
            return Err(invalid(
                "cold.publish_threads",
                self.publish_threads,
                "0 (automatic) to 256",
            ));
        }
        Ok(())
    }

    /// The pack threads `publish_threads` asks for: `offline` is the
    /// `publish` verb, which has the machine to itself.
    pub fn publish_threads_for(&self, offline: bool) -> usize {
        match self.publish_threads {
            0 => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                if offline { cores } else { (cores / 2).max(1) }
            }
            n => n as usize,
        }
    }
}

/// The largest `replica.frame_memory_mb`, `dict_memory_mb` and
/// `batch_memory_mb`: 1 TiB.
const MAX_HELD_MB: u64 = 1 << 20;

/// The most `replica.batch_gets_in_flight`: each GET is a connection
/// (and a file descriptor) while it runs, and a replica runs up to
/// `query.read_threads` batches at once.
const MAX_BATCH_GETS: u32 = 1024;

impl ReplicaConfig {
    /// `frame_memory_mb` in bytes (at most the address space).
    pub fn frame_memory_bytes(&self) -> usize {
        usize::try_from(self.frame_memory_mb << 20).unwrap_or(usize::MAX)
    }

    /// `dict_memory_mb` in bytes (at most the address space).
    pub fn dict_memory_bytes(&self) -> usize {
        usize::try_from(self.dict_memory_mb << 20).unwrap_or(usize::MAX)
    }

    /// `batch_memory_mb` in bytes (at most the address space).
    pub fn batch_memory_bytes(&self) -> usize {
        usize::try_from(self.batch_memory_mb << 20).unwrap_or(usize::MAX)
    }

    pub(crate) fn validate(&self, cold: &ColdConfig) -> Result<(), ConfigError> {
        if self.cache_mb == 0 {
            return Err(invalid("replica.cache_mb", 0, "at least 1"));
        }
        if self.poll_ms < 100 {
            return Err(invalid("replica.poll_ms", self.poll_ms, "at least 100"));
        }
        if !(1..=MAX_HELD_MB).contains(&self.batch_memory_mb) {
            return Err(invalid(
                "replica.batch_memory_mb",
                self.batch_memory_mb,
                "1 to 1048576 (MiB)",
            ));
        }
        if !(1..=MAX_BATCH_GETS).contains(&self.batch_gets_in_flight) {
            return Err(invalid(
                "replica.batch_gets_in_flight",
                self.batch_gets_in_flight,
                "1 to 1024",
            ));
        }
        for (field, mb) in [
            ("replica.frame_memory_mb", self.frame_memory_mb),
            ("replica.dict_memory_mb", self.dict_memory_mb),
        ] {
            if mb > MAX_HELD_MB {
                return Err(invalid(field, mb, "0 to 1048576 (MiB)"));
            }
        }
        if !self.store.is_empty() && !cold.store.is_empty() {
            return Err(invalid(
                "replica.store",
                &self.store,
                "empty while cold.store is set: a replica has no data dir to publish",
            ));
        }
        if !self.store.is_empty() && self.cache_dir.as_os_str().is_empty() {
            return Err(invalid("replica.cache_dir", "\"\"", "a directory"));
        }
        if !self.store.is_empty() && self.events_dir.as_os_str().is_empty() {
            return Err(invalid("replica.events_dir", "\"\"", "a directory"));
        }
        if !self.store.is_empty()
            && (self.events_dir.starts_with(&self.cache_dir)
                || self.cache_dir.starts_with(&self.events_dir))
        {
            return Err(invalid(
                "replica.events_dir",
                self.events_dir.display(),
                "a directory apart from replica.cache_dir (the cache is emptied at every start)",
            ));
        }
        Ok(())
    }
}
