//! Configuration of the ledgerstore daemon.
//!
//! One serde struct per section, each with defaults and checked by
//! [`Config::validate`]. Sources merge in this order, later winning:
//! embedded defaults < TOML file (`--config`) < environment
//! (`LEDGERSTORE_<SECTION>__<KEY>`, e.g. `LEDGERSTORE_DB__PATH`) < flags
//! (`--grpc.listen`; the data dir is `--data-dir`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use ledgerstore_db_api::{BlockDict, BodyForm, Layout};
use serde::{Deserialize, Serialize};

mod cold;
mod jsonrpc;
mod lake;
pub use cold::{ColdConfig, ReplicaConfig};
pub use jsonrpc::JsonRpcConfig;
pub use lake::{FollowConfig, LakeConfig};

/// Environment variable prefix.
pub const ENV_PREFIX: &str = "LEDGERSTORE_";

/// Configuration errors.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A source could not be read or did not fit the schema.
    #[error("config: {0}")]
    Load(#[from] Box<figment::Error>),
    /// A value is out of range.
    #[error("config: {key} = {value}: {expected}")]
    Invalid {
        /// Dotted key, e.g. `grpc.listen`.
        key: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: String,
    },
}

/// The whole configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// `[db]`: data dir and layout.
    pub db: DbConfig,
    /// `[mdbx]`: the MDBX environments.
    pub mdbx: MdbxConfig,
    /// `[rocksdb]`: the RocksDB instances.
    pub rocksdb: RocksdbConfig,
    /// `[grpc]`: the gRPC listener.
    pub grpc: GrpcConfig,
    /// `[ingest]`: streaming ingest.
    pub ingest: IngestConfig,
    /// `[query]`: the query service.
    pub query: QueryConfig,
    /// `[limits]`: record and batch limits.
    pub limits: LimitsConfig,
    /// `[metrics]`: the Prometheus endpoint.
    pub metrics: MetricsConfig,
    /// `[log]`: logging.
    pub log: LogConfig,
    /// `[stellar]`: Stellar-native ingest.
    pub stellar: StellarConfig,
    /// `[segments]`: immutable index segments (layout `indexed`).
    pub segments: SegmentsConfig,
    /// `[dict]`: trained zstd dictionaries for tx bodies (layout `indexed`).
    pub dict: DictConfig,
    /// `[lake]`: how data lakes (object storage) are reached.
    pub lake: LakeConfig,
    /// `[follow]`: a data lake the daemon follows.
    pub follow: FollowConfig,
    /// `[jsonrpc]`: the Stellar RPC (JSON-RPC 2.0) endpoint.
    pub jsonrpc: JsonRpcConfig,
    /// `[cold]`: publishing closed ranges to object storage.
    pub cold: ColdConfig,
    /// `[replica]`: serving what a writer published, read-only.
    pub replica: ReplicaConfig,
    /// `[events]`: the contract-event index behind getEvents.
    pub events: EventsConfig,
}

/// `[db]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DbConfig {
    /// Data directory.
    pub path: PathBuf,
    /// Layout. Unset: `indexed` for a new data dir, and whatever an existing
    /// dir was created with. Set: an existing dir must match.
    pub layout: Option<Layout>,
    /// zstd level, 1..=22.
    pub zstd_level: i32,
    /// Batch reports as JSON lines; empty: `<path>/batch-reports.jsonl`.
    pub report_jsonl: Option<PathBuf>,
}

impl Default for DbConfig {
    fn default() -> Self {
        Self {
            path: PathBuf::from("./ledgerstore-data"),
            layout: None,
            zstd_level: 3,
            report_jsonl: None,
        }
    }
}

/// `[mdbx]`. The geometry and page sizes are stored in each MDBX file
/// when the data dir is created: unset, an existing dir keeps its own and a
/// new one gets the defaults (8192 GiB, 16 MiB, 4096 B). A page size set
/// for an existing dir must match; a size or step set for one changes it
/// (logged) when a writer opens it. Readers never change it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MdbxConfig {
    /// Upper bound of each MDBX file, GiB (new dirs: 8192).
    pub max_size_gib: Option<u64>,
    /// Growth step, MiB (new dirs: 16).
    pub growth_step_mib: Option<u64>,
    /// Page size of tx_data, bytes (new dirs: 4096).
    pub tx_data_page_size: Option<usize>,
    /// Page size of tx_index, bytes (new dirs: 4096).
    pub tx_index_page_size: Option<usize>,
    /// Longest a multi-key read may hold its MDBX read transaction before
    /// it gives up (DEADLINE_EXCEEDED). Bounds how long a reader can pin
    /// old pages and so how far the file can grow behind it.
    pub max_read_txn_ms: u64,
}

impl Default for MdbxConfig {
    fn default() -> Self {
        Self {
            max_size_gib: None,
            growth_step_mib: None,
            tx_data_page_size: None,
            tx_index_page_size: None,
            max_read_txn_ms: 5000,
        }
    }
}

/// Fewest files [`RocksdbConfig::max_open_files`] allows (RocksDB raises
/// anything lower to 20).
pub const MIN_OPEN_FILES: i32 = 20;
/// Most files [`RocksdbConfig::max_open_files`] allows short of -1
/// (Linux's default ceiling on a process's descriptors, `fs.nr_open`).
pub const MAX_OPEN_FILES: i32 = 1 << 20;

/// `[rocksdb]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RocksdbConfig {
    /// Memtable size, MiB (unset: the layout's profile). The tx bodies of
    /// a `blocks` dir use at most 64 MiB, their file size.
    pub write_buffer_mb: Option<usize>,
    /// Each RocksDB table's block cache, MiB (unset: the layout's profile,
    /// 256 for every table that has one; `indexed` has two tables, so
    /// twice this). Raw blocks of a `blocks` dir's bodies are cached
    /// uncompressed, so this bounds most of a serving daemon's memory.
    pub block_cache_mb: Option<usize>,
    /// SST files each RocksDB table keeps open, with their index and
    /// properties (unset: the profile's 5000; -1: every file, opened at
    /// start). A lookup in a file not open opens it first: another read.
    /// A backfill writes a file or two a batch into each table (~0.9M
    /// bodies files and ~0.5M ledgers files over pubnet); each open one
    /// holds a file descriptor, and RocksDB keeps at most the process's
    /// soft descriptor limit open.
    pub max_open_files: Option<i32>,
}

/// `[grpc]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct GrpcConfig {
    /// Listen address. Loopback by default.
    pub listen: String,
    /// Largest ingest request message and largest answer, bytes (a Query
    /// request is held to max(64 KiB, 70 bytes × `query.max_batch_hashes`)).
    pub max_message_bytes: usize,
    /// HTTP/2 streams per connection.
    pub max_concurrent_streams: u32,
    /// Connections open at once; one more is refused (an HTTP/2 GOAWAY
    /// naming this setting, without TLS) and closed.
    pub max_connections: u32,
    /// Connections open at once from one client address (an IPv6 address
    /// counts with its /64); one more is refused as past
    /// `max_connections`, naming this setting. 0: off, as behind a proxy,
    /// whose connections all have its address.
    pub max_connections_per_ip: u32,
    /// A new connection that has not finished its TLS handshake (with TLS)
    /// and sent the HTTP/2 preface within this many milliseconds is closed,
    /// so connections that say nothing cannot hold every place.
    pub handshake_timeout_ms: u64,
    /// Bytes of Query answers built and not yet written to their
    /// connections, all connections together; an answer that does not fit
    /// is refused (RESOURCE_EXHAUSTED naming this setting). At least
    /// `max_message_bytes` + 1 MiB.
    pub max_unsent_bytes: u64,
    /// A connection one of whose Query calls owes answers and has written
    /// no piece of them for this many milliseconds is closed, which frees
    /// their bytes (nginx's `send_timeout`): a client reading a stream must
    /// not pause longer.
    pub send_timeout_ms: u64,
    /// TLS certificate chain (PEM); TLS is on when both cert and key are set.
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    pub tls_key: Option<PathBuf>,
}

impl Default for GrpcConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:50051".into(),
            max_message_bytes: 64 << 20,
            max_concurrent_streams: 256,
            max_connections: 1000,
            max_connections_per_ip: 100,
            handshake_timeout_ms: 10_000,
            max_unsent_bytes: 256 << 20,
            send_timeout_ms: 30_000,
            tls_cert: None,
            tls_key: None,
        }
    }
}

/// `[ingest]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct IngestConfig {
    /// Ledgers per store batch in bulk mode (IngestLedgers and the
    /// follower).
    pub bulk_batch_ledgers: u32,
    /// A bulk batch also ends once its ledgers' bytes (raw, plus a
    /// synthetic ledger's transactions) reach this many MiB.
    pub bulk_batch_mib: u32,
    /// Live mode: a ledger is committed within this many milliseconds.
    pub live_max_latency_ms: u64,
    /// Batches queued between a stream's reader and the writer.
    pub queue_batches: usize,
    /// Ledgers in one IngestRequest.
    pub max_ledgers_per_request: usize,
    /// Concurrent IngestLedgers streams.
    pub max_streams: usize,
    /// Bearer token required by the Ingest service (unset: none required).
    pub token: Option<String>,
    /// File holding the token (alternative to `token`).
    pub token_file: Option<PathBuf>,
}

impl Default for IngestConfig {
    fn default() -> Self {
        Self {
            bulk_batch_ledgers: 2000,
            bulk_batch_mib: 128,
            live_max_latency_ms: 1000,
            queue_batches: 2,
            max_ledgers_per_request: 1000,
            max_streams: 4,
            token: None,
            token_file: None,
        }
    }
}

/// `[query]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct QueryConfig {
    /// Hashes in one BatchGetTransactions.
    pub max_batch_hashes: usize,
    /// Ledgers in one StreamLedgers.
    pub max_stream_ledgers: u32,
    /// Deadline of a unary query, milliseconds.
    pub timeout_ms: u64,
    /// Single-key reads (GetTransaction, GetTransactionLedger) longer than
    /// this many microseconds are slow. They run inline on the async workers
    /// while under 1% of recent ones were slow, and on the read threads
    /// (`read_threads`) otherwise. 0: always on the read threads.
    pub inline_read_us: u64,
    /// Threads the query APIs' blocking reads run on (gRPC reads not run
    /// inline, StreamLedgers, and the Stellar RPC calls): at most this
    /// many at once, the rest waiting in line within their deadline. A
    /// read replica's read waits on its object store, so this bounds the
    /// lookups it has in flight.
    pub read_threads: usize,
}

impl Default for QueryConfig {
    fn default() -> Self {
        Self {
            max_batch_hashes: 1000,
            max_stream_ledgers: 100_000,
            timeout_ms: 10_000,
            inline_read_us: 100,
            read_threads: 64,
        }
    }
}

/// `[limits]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Raw bytes of one ledger.
    pub max_ledger_bytes: usize,
    /// Envelope + result + meta bytes of one transaction.
    pub max_tx_bytes: usize,
    /// Transactions in one ledger.
    pub max_txs_per_ledger: usize,
    /// Free space (MiB) the data dir's filesystem keeps: a batch is refused
    /// with RESOURCE_EXHAUSTED, before any write, unless this plus twice the
    /// batch's stored size is free.
    pub min_free_disk_mb: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_ledger_bytes: 32 << 20,
            max_tx_bytes: 8 << 20,
            max_txs_per_ledger: 100_000,
            min_free_disk_mb: 256,
        }
    }
}

/// `[metrics]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// Serve Prometheus metrics.
    pub enabled: bool,
    /// Listen address of `/metrics`.
    pub listen: String,
    /// Seconds between store statistics refreshes.
    pub refresh_secs: u64,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            listen: "127.0.0.1:9464".into(),
            refresh_secs: 10,
        }
    }
}

/// `[log]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `text` or `json`.
    pub format: String,
    /// tracing filter, e.g. `info` or `ledgerstore=debug` (RUST_LOG wins).
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            format: "text".into(),
            level: "info".into(),
        }
    }
}

/// `[stellar]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StellarConfig {
    /// Network of raw `LedgerCloseMeta` sent to IngestLedgers without a
    /// `stellar_network`: pubnet, testnet, futurenet, standalone, or a full
    /// passphrase. Transaction hashes are computed with it.
    pub network: String,
}

impl Default for StellarConfig {
    fn default() -> Self {
        Self {
            network: "pubnet".into(),
        }
    }
}

/// `[segments]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SegmentsConfig {
    /// Ledgers per base index segment (the hot index's window). Ranges are
    /// aligned to multiples of it; a range's segment is built once the mark
    /// passes its end, and its keys then leave the hot index. The hot
    /// index's in-memory map holds ~26 bytes per key of the open range (~80
    /// MB for 10,000 ledgers of 300 txs); a base build holds ~50 bytes per
    /// key of its range plus one partition (at most 2^22 keys, ~340 MB); a
    /// segment file holds ~5.4 bytes per key, memory-mapped. Recorded in the
    /// data dir at creation and reused: unset, an existing dir keeps its
    /// own and a new one gets 10,000; set, it must match an existing dir's.
    pub range_ledgers: Option<u32>,
    /// Merge fan-out: windows of level `k` hold `range_ledgers ×
    /// merge_fanout^k` ledgers. Recorded at creation, like
    /// `range_ledgers` (new dirs: 10).
    pub merge_fanout: Option<u32>,
    /// Merge levels above the base range (0: no merging). A lookup probes
    /// at most one segment per closed top window plus `merge_levels`, plus
    /// the hot index. Recorded at creation, like `range_ledgers` (new
    /// dirs: 3).
    pub merge_levels: Option<u32>,
    /// After a writer opens the store, the builder reads the index
    /// sections (fingerprints, positions, ledger offsets) of the newest
    /// segments into the page cache, up to this many MiB, so the first
    /// lookups after a restart do not each wait for a disk read (0: off).
    /// Not recorded: it may change at every start.
    pub warm_mib: u64,
    /// Heap MiB for the newest segments' fingerprints (2 bytes a tx), so
    /// a miss in them is decided in memory even when the page cache was
    /// evicted (newest first while the budget lasts; a loaded filter stays
    /// until a merge replaces its segment). 0: off. Not recorded.
    pub filter_mib: u64,
    /// How tx bodies are stored: `blocks` (raw bodies that RocksDB
    /// compresses in blocks of consecutive transactions, zstd at
    /// `db.zstd_level`, a dictionary per file optional; data dir format 4,
    /// whose ledger records are raw in blocks too, without a dictionary) or
    /// `records` (each body its own zstd frame with a trained dictionary,
    /// as every dir before format 2). Recorded in the data dir at
    /// creation: unset, an existing dir keeps its own and a new one gets
    /// `blocks`; set, it must match an existing dir's, and is refused with
    /// any layout but `indexed` (offline readers ignore it).
    pub bodies: Option<BodyForm>,
    /// `blocks` bodies (and a format-3 or 4 dir's ledger records): KiB of raw
    /// bodies per compressed block. Larger
    /// blocks compress better and cost a lookup more to decompress (it
    /// decompresses one block). Not recorded: it may change at every start
    /// and applies to files written from then on.
    pub block_kib: u32,
    /// `blocks` bodies written in bulk (a backfill's batches, or a daemon
    /// catching up: batches whose bodies reach 32 MiB, handed to RocksDB
    /// as whole SST files): KiB of raw bodies per compressed block. This
    /// is history, read rarely, so its blocks are larger than the live
    /// tail's `block_kib`: 1 MiB stored the fixture's bodies in 17% fewer
    /// bytes than 64 KiB for the same ingest CPU, and a lookup in it
    /// costs ~0.3 ms more CPU (docs/benchmarks.md, "History in larger
    /// blocks"). A format-3 dir's ledger records written in bulk (a
    /// batch's records reaching 4 MiB) take it too: ~9 skeletons a 1 MiB
    /// block, 23% fewer bytes than a frame each (docs/benchmarks.md,
    /// "Skeletons in blocks"). Not recorded.
    pub bulk_block_kib: u32,
    /// `blocks` bodies (and a format-3 or 4 dir's ledger records) written in
    /// bulk: their zstd level (unset:
    /// `db.zstd_level`). Level 7 with 4 MiB blocks stored the fixture's
    /// bodies in 0.92× the lake's bytes, for about twice the ingest CPU.
    /// Not recorded.
    pub bulk_zstd_level: Option<i32>,
    /// `blocks` bodies: the largest dictionary RocksDB makes per file, in
    /// KiB (0: none, the default: every dictionary measured cost ingest
    /// CPU and ~20% more CPU a warm lookup, see `block_dict` and
    /// docs/benchmarks.md). Not recorded.
    pub block_dict_kib: u32,
    /// `blocks` bodies with `block_dict_kib` above 0: how RocksDB makes a
    /// file's dictionary, `trained` (zstd's trainer: 64 KiB saved 14% of
    /// the body bytes for +9 ms of ingest CPU a pubnet ledger) or
    /// `samples` (blocks of the file used as they are: 256 KiB saved 10%
    /// and 1 MiB 14%, for +2 ms). A cold read of a file whose dictionary
    /// is not cached reads the dictionary too. Not recorded.
    pub block_dict: BlockDict,
}

impl Default for SegmentsConfig {
    fn default() -> Self {
        Self {
            range_ledgers: None,
            merge_fanout: None,
            merge_levels: None,
            warm_mib: 1024,
            filter_mib: 256,
            bodies: None,
            block_kib: 64,
            bulk_block_kib: 1024,
            bulk_zstd_level: None,
            block_dict_kib: 0,
            block_dict: BlockDict::Trained,
        }
    }
}

/// `[events]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct EventsConfig {
    /// Keep the contract-event index that Stellar RPC's getEvents reads,
    /// in `<data dir>/events/`: the daemon builds it in the background
    /// from the stored ledgers (a dir without one, or with files lost,
    /// is indexed from its first ledger) and follows ingest one poll
    /// behind. Data dirs of ledgers that are not Stellar
    /// `LedgerCloseMeta` stop it with a message in `stats`.
    pub enabled: bool,
    /// Ledgers per level-0 index file: the newest ledgers (fewer than
    /// this) are indexed in memory, rebuilt at each new ledger. Recorded
    /// in the events dir at creation and reused: unset, an existing index
    /// keeps its own and a new one gets 64.
    pub file_ledgers: Option<u32>,
    /// Files of one level merged into one of the next (a query opens at
    /// most `fan_out − 1` files a level). Recorded like `file_ledgers`
    /// (new indexes: 16).
    pub fan_out: Option<u32>,
}

impl Default for EventsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            file_ledgers: None,
            fan_out: None,
        }
    }
}

impl EventsConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        // The events crate's bounds (`FILE_LEDGERS_MAX`, `FAN_OUT_MAX`).
        if let Some(n) = self.file_ledgers
            && !(1..=65_536).contains(&n)
        {
            return Err(invalid("events.file_ledgers", n, "1 to 65536"));
        }
        if let Some(n) = self.fan_out
            && !(2..=1024).contains(&n)
        {
            return Err(invalid("events.fan_out", n, "2 to 1024"));
        }
        Ok(())
    }
}

/// `[dict]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DictConfig {
    /// Train and use dictionaries.
    pub enabled: bool,
    /// Train the first dictionary once the store holds this many txs.
    pub train_after_txs: u64,
    /// Records sampled per training (the earliest not yet covered).
    pub samples: usize,
    /// Largest dictionary, KiB.
    pub max_kib: usize,
    /// Train a new version after this many more txs (0: never).
    pub retrain_every_txs: u64,
}

impl Default for DictConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            train_after_txs: 20_000,
            samples: 4_000,
            max_kib: 110,
            retrain_every_txs: 0,
        }
    }
}

fn invalid(key: &'static str, value: impl ToString, expected: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        value: value.to_string(),
        expected: expected.into(),
    }
}

impl Config {
    /// Loads defaults < `file` < environment < `overrides` (dotted key,
    /// value pairs from flags), then validates.
    pub fn load(
        file: Option<&Path>,
        overrides: &[(&'static str, toml::Value)],
    ) -> Result<Self, ConfigError> {
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        if let Some(f) = file {
            if !f.exists() {
                return Err(invalid("--config", f.display(), "an existing TOML file"));
            }
            fig = fig.merge(Toml::file(f));
        }
        // Only `LEDGERSTORE_<SECTION>__<KEY>` is config: other LEDGERSTORE_*
        // variables (a client's LEDGERSTORE_INGEST_TOKEN, say) are not.
        fig = fig.merge(
            Env::prefixed(ENV_PREFIX)
                .filter(|k| k.as_str().contains("__"))
                .split("__"),
        );
        for (key, value) in overrides {
            fig = fig.merge(Serialized::default(key, value));
        }
        let cfg: Config = fig.extract().map_err(Box::new)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every value's range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=22).contains(&self.db.zstd_level) {
            return Err(invalid("db.zstd_level", self.db.zstd_level, "1 to 22"));
        }
        for (key, v) in [
            ("mdbx.tx_data_page_size", self.mdbx.tx_data_page_size),
            ("mdbx.tx_index_page_size", self.mdbx.tx_index_page_size),
        ] {
            if let Some(v) = v
                && (!v.is_power_of_two() || !(256..=65536).contains(&v))
            {
                return Err(invalid(key, v, "a power of two from 256 to 65536"));
            }
        }
        if let Some(mb) = self.rocksdb.block_cache_mb
            && !(1..=1 << 20).contains(&mb)
        {
            return Err(invalid("rocksdb.block_cache_mb", mb, "1 to 1048576"));
        }
        if let Some(n) = self.rocksdb.max_open_files
            && n != -1
            && !(MIN_OPEN_FILES..=MAX_OPEN_FILES).contains(&n)
        {
            return Err(invalid(
                "rocksdb.max_open_files",
                n,
                format!("-1 (every file) or {MIN_OPEN_FILES} to {MAX_OPEN_FILES}"),
            ));
        }
        if self.mdbx.max_size_gib == Some(0) {
            return Err(invalid("mdbx.max_size_gib", 0, "at least 1"));
        }
        if let Some(step) = self.mdbx.growth_step_mib {
            let max_mib = self.mdbx.max_size_gib.unwrap_or(8192).saturating_mul(1024);
            if step == 0 || step > max_mib {
                return Err(invalid(
                    "mdbx.growth_step_mib",
                    step,
                    "at least 1 and at most mdbx.max_size_gib",
                ));
            }
        }
        for (key, addr) in [
            ("grpc.listen", &self.grpc.listen),
            ("metrics.listen", &self.metrics.listen),
            ("jsonrpc.listen", &self.jsonrpc.listen),
        ] {
            if addr.parse::<SocketAddr>().is_err() {
                return Err(invalid(
                    key,
                    addr,
                    "an IP:port socket address, e.g. 127.0.0.1:50051",
                ));
            }
        }
        if self.grpc.tls_cert.is_some() != self.grpc.tls_key.is_some() {
            return Err(invalid(
                "grpc.tls_cert",
                "only one of tls_cert/tls_key",
                "both or neither",
            ));
        }
        if self.grpc.max_message_bytes < 1024 {
            return Err(invalid(
                "grpc.max_message_bytes",
                self.grpc.max_message_bytes,
                "at least 1024",
            ));
        }
        if !(1..=1_000_000).contains(&self.grpc.max_connections) {
            return Err(invalid(
                "grpc.max_connections",
                self.grpc.max_connections,
                "1 to 1000000",
            ));
        }
        // At or above max_connections it is off in effect: allowed, so that
        // lowering max_connections alone stays valid.
        if self.grpc.max_connections_per_ip > 1_000_000 {
            return Err(invalid(
                "grpc.max_connections_per_ip",
                self.grpc.max_connections_per_ip,
                "0 (off) to 1000000",
            ));
        }
        // The largest answer, and the 1 MiB free a call needs to start.
        let least = (self.grpc.max_message_bytes as u64).saturating_add(1 << 20);
        if !(least..=1 << 40).contains(&self.grpc.max_unsent_bytes) {
            return Err(invalid(
                "grpc.max_unsent_bytes",
                self.grpc.max_unsent_bytes,
                format!("grpc.max_message_bytes + 1 MiB ({least}) to 1099511627776"),
            ));
        }
        if !(1000..=3_600_000).contains(&self.grpc.send_timeout_ms) {
            return Err(invalid(
                "grpc.send_timeout_ms",
                self.grpc.send_timeout_ms,
                "1000 to 3600000",
            ));
        }
        // A Query request is held to 70 bytes a hash: never past the
        // largest message.
        let most = (self.grpc.max_message_bytes / 70).max(1);
        if self.query.max_batch_hashes > most {
            return Err(invalid(
                "query.max_batch_hashes",
                self.query.max_batch_hashes,
                format!("at most grpc.max_message_bytes / 70 = {most}"),
            ));
        }
        if !(100..=600_000).contains(&self.grpc.handshake_timeout_ms) {
            return Err(invalid(
                "grpc.handshake_timeout_ms",
                self.grpc.handshake_timeout_ms,
                "100 to 600000",
            ));
        }
        self.jsonrpc.validate()?;
        self.cold.validate()?;
        self.replica.validate(&self.cold)?;
        self.events.validate()?;
        let i = &self.ingest;
        if i.bulk_batch_ledgers == 0 || i.bulk_batch_ledgers > 100_000 {
            return Err(invalid(
                "ingest.bulk_batch_ledgers",
                i.bulk_batch_ledgers,
                "1 to 100000",
            ));
        }
        if !(1..=65_536).contains(&i.bulk_batch_mib) {
            return Err(invalid(
                "ingest.bulk_batch_mib",
                i.bulk_batch_mib,
                "1 to 65536",
            ));
        }
        if i.live_max_latency_ms == 0 {
            return Err(invalid("ingest.live_max_latency_ms", 0, "at least 1"));
        }
        for (key, v) in [
            ("ingest.queue_batches", i.queue_batches),
            ("ingest.max_ledgers_per_request", i.max_ledgers_per_request),
            ("ingest.max_streams", i.max_streams),
            ("query.max_batch_hashes", self.query.max_batch_hashes),
            ("limits.max_ledger_bytes", self.limits.max_ledger_bytes),
            ("limits.max_tx_bytes", self.limits.max_tx_bytes),
            ("limits.max_txs_per_ledger", self.limits.max_txs_per_ledger),
        ] {
            if v == 0 {
                return Err(invalid(key, 0, "at least 1"));
            }
        }
        if i.token.is_some() && i.token_file.is_some() {
            return Err(invalid(
                "ingest.token",
                "both token and token_file",
                "one of them",
            ));
        }
        if i.token.as_deref() == Some("") {
            return Err(invalid("ingest.token", "\"\"", "a non-empty token"));
        }
        let s = &self.segments;
        if s.range_ledgers == Some(0) {
            return Err(invalid("segments.range_ledgers", 0, "at least 1"));
        }
        if let Some(f) = s.merge_fanout
            && !(2..=1_000).contains(&f)
        {
            return Err(invalid("segments.merge_fanout", f, "2..=1000"));
        }
        if let Some(l) = s.merge_levels
            && l > 8
        {
            return Err(invalid("segments.merge_levels", l, "0..=8"));
        }
        for (key, mib) in [
            ("segments.warm_mib", self.segments.warm_mib),
            ("segments.filter_mib", self.segments.filter_mib),
        ] {
            if mib > 1 << 30 {
                return Err(invalid(key, mib, "0..=1073741824"));
            }
        }
        for (key, kib) in [
            ("segments.block_kib", s.block_kib),
            ("segments.bulk_block_kib", s.bulk_block_kib),
        ] {
            if !(4..=16_384).contains(&kib) {
                return Err(invalid(key, kib, "4..=16384"));
            }
        }
        if let Some(level) = s.bulk_zstd_level
            && !(1..=22).contains(&level)
        {
            return Err(invalid("segments.bulk_zstd_level", level, "1 to 22"));
        }
        if s.block_dict_kib > 1024 {
            return Err(invalid(
                "segments.block_dict_kib",
                s.block_dict_kib,
                "0..=1024",
            ));
        }
        // A per-file dictionary trains on at least 16 blocks of a file
        // of at most 64 MiB (fewer samples and zstd trains none): the
        // engine's `MIN_DICT_SAMPLE_BLOCKS` and file size, which this
        // crate does not depend on.
        if s.block_dict_kib > 0 && s.block_kib > 4096 {
            return Err(invalid(
                "segments.block_kib",
                s.block_kib,
                "4..=4096 while segments.block_dict_kib is above 0 (a file's dictionary \
                 trains on at least 16 of its blocks, and a file holds 64 MiB)",
            ));
        }
        // Bulk files are written on up to 4 threads at once, each holding
        // its file's first 16 blocks uncompressed until the dictionary is
        // made: 16 MiB a thread at 1 MiB.
        if s.block_dict_kib > 0 && s.bulk_block_kib > 1024 {
            return Err(invalid(
                "segments.bulk_block_kib",
                s.bulk_block_kib,
                "4..=1024 while segments.block_dict_kib is above 0 (each of up to 4 bulk \
                 writers holds 16 blocks uncompressed until its file's dictionary is made)",
            ));
        }
        if self.dict.enabled && (self.dict.samples < 16 || !(1..=4096).contains(&self.dict.max_kib))
        {
            return Err(invalid(
                "dict.samples",
                format!(
                    "samples {}, max_kib {}",
                    self.dict.samples, self.dict.max_kib
                ),
                "samples at least 16 and max_kib from 1 to 4096",
            ));
        }
        if self.mdbx.max_read_txn_ms == 0 {
            return Err(invalid("mdbx.max_read_txn_ms", 0, "at least 1"));
        }
        if self.query.timeout_ms == 0 || self.query.max_stream_ledgers == 0 {
            return Err(invalid(
                "query.timeout_ms",
                self.query.timeout_ms,
                "at least 1",
            ));
        }
        if self.query.inline_read_us > 10_000 {
            return Err(invalid(
                "query.inline_read_us",
                self.query.inline_read_us,
                "0 (never inline) to 10000: a read that long stalls an async worker",
            ));
        }
        // 256: with tokio's 512 blocking threads, under the 1024 reader
        // slots an MDBX hot index has.
        if !(1..=256).contains(&self.query.read_threads) {
            return Err(invalid(
                "query.read_threads",
                self.query.read_threads,
                "1 to 256",
            ));
        }
        if let Err(e) = ledgerstore_stellar::Network::parse(&self.stellar.network) {
            return Err(invalid(
                "stellar.network",
                &self.stellar.network,
                e.to_string(),
            ));
        }
        if !matches!(self.log.format.as_str(), "text" | "json") {
            return Err(invalid("log.format", &self.log.format, "text or json"));
        }
        lake::validate(&self.lake, &self.follow)
    }

    /// The effective config as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render config: {e}\n"))
    }

    /// The ingest token, read from `token_file` if that is set.
    pub fn ingest_token(&self) -> Result<Option<String>, ConfigError> {
        match (&self.ingest.token, &self.ingest.token_file) {
            (Some(t), _) => Ok(Some(t.clone())),
            (None, Some(f)) => std::fs::read_to_string(f)
                .map(|t| Some(t.trim().to_string()))
                .map_err(|e| {
                    invalid(
                        "ingest.token_file",
                        f.display(),
                        format!("a readable file ({e})"),
                    )
                }),
            (None, None) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests;
