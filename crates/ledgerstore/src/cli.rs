//! Command-line interface. Daemon flags mirror the config keys
//! (`--grpc.listen` sets `[grpc] listen`; the `[db]` keys are `--data-dir`,
//! `--layout` and `--zstd-level` in every verb); precedence is file < env <
//! flags.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ledgerstore_db_api::Layout;

pub use crate::cli_lake::{ColdFlags, EventsFlags, FollowFlags, LakeFlags};

#[derive(Debug, Parser)]
#[command(
    name = "ledgerstore",
    version,
    about = "Ingest blockchain ledgers and serve transactions by hash."
)]
pub struct Cli {
    /// Log as JSON lines (stderr). The level comes from RUST_LOG (default: warn,
    /// or the config's log.level for `serve`).
    #[arg(long, global = true)]
    pub log_json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the gRPC daemon (Ingest, Query, health, reflection, /metrics).
    Serve(ServeArgs),
    /// Show the effective configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Bulk-ingest ledgers (synthetic, or real Stellar ledgers from a data lake
    /// or a file) into a data dir, printing a timing report per batch.
    Ingest(IngestArgs),
    /// Stream ledgers into a running daemon (the reference ingestion client);
    /// Stellar ledgers go as raw LedgerCloseMeta, which the daemon extracts.
    Push(PushArgs),
    /// Read a ledger or a transaction from a data dir.
    #[command(subcommand)]
    Get(GetCommand),
    /// Per-store statistics: keys, bytes on disk, levels or pages, compression.
    Stats(StatsArgs),
    /// Publish the closed ranges of a stopped data dir (layout indexed) to
    /// [cold] store: one round, as the daemon runs them, then evict what
    /// [cold] keep_local_ranges allows.
    Publish(ServeArgs),
    /// Fetch a transaction from a running daemon.
    Tx(RemoteTxArgs),
    /// Fetch a ledger from a running daemon.
    Ledger(RemoteLedgerArgs),
    /// Verify a data dir: every record decodes, every index entry and every
    /// listed hash resolve, the mark matches. Exits 1 on any problem.
    Check(CheckArgs),
    /// Rebuild, offline, what `check` finds broken in the segments of a
    /// stopped data dir (layout indexed): every segment that is missing or
    /// fails its checks, from its hash lists or the ledger records, and
    /// every damaged hash list; then check the dir. Prints what it rebuilt;
    /// exits 1 naming what it could not.
    Repair(RepairArgs),
    /// Take a consistent backup cut at the high-water mark: from a running
    /// daemon (--endpoint, online) or from a stopped data dir (--data-dir).
    Backup(BackupArgs),
    /// Restore a backup into a new data dir, then check it.
    Restore(RestoreArgs),
    /// gRPC health check of a running daemon; exits 0 when SERVING.
    Health(HealthArgs),
    /// Load a running daemon's Query API with a light client: requests in
    /// flight over several connections, closed-loop or at a fixed rate;
    /// reports req/s, latency percentiles (HDR, corrected for coordinated
    /// omission) and, with --pid, the daemon's CPU per request.
    BenchQuery(BenchQueryArgs),
}

#[derive(Debug, Args)]
pub struct BenchQueryArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// The call to make.
    #[arg(long, value_enum, default_value_t = BenchCall::Get)]
    pub call: BenchCall,
    /// Requests in flight.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub concurrency: u32,
    /// TCP connections (HTTP/2) the requests are spread over. Above 100,
    /// raise the daemon's `grpc.max_connections_per_ip` (they all come
    /// from this one address).
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub connections: u32,
    /// Seconds of measured load.
    #[arg(long, value_name = "S", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub seconds: u64,
    /// Seconds of unmeasured load first (connections, caches, allocators).
    #[arg(long = "warmup-seconds", value_name = "S", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(0..=600))]
    pub warmup_seconds: u64,
    /// Requests per second, paced; each latency counts from the request's
    /// scheduled start, so a stall is not hidden (coordinated omission).
    /// 0: closed loop, each of the --concurrency requests sent as soon as
    /// the previous one returns.
    #[arg(long, value_name = "R", default_value_t = 0)]
    pub rate: u64,
    /// Hashes per BatchGetTransactions request.
    #[arg(long = "batch-hashes", value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub batch_hashes: u32,
    /// Ledgers, spread evenly over the store, whose transactions are the
    /// hashes asked for (read with GetLedger before the load).
    #[arg(long = "sample-ledgers", value_name = "N", default_value_t = 40,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub sample_ledgers: u32,
    /// Ask for hashes the store does not hold (random ones) instead.
    #[arg(long)]
    pub misses: bool,
    /// The daemon's process id: report its CPU time (utime + stime from
    /// /proc/PID/stat) per request.
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// A block device as /proc/diskstats names it (e.g. vda): report its
    /// reads per item, KiB read per item and queue depth over the measured
    /// window only, not over the sampling before it.
    #[arg(long, value_name = "NAME")]
    pub disk: Option<String>,
    /// Worker threads of the client's own runtime.
    #[arg(long = "client-threads", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub client_threads: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchCall {
    /// Query/GetTransaction.
    Get,
    /// Query/BatchGetTransactions (--batch-hashes a request).
    Batch,
    /// Query/GetTransactionLedger.
    TxLedger,
    /// Query/GetLedger with its raw bytes, of the sampled ledgers.
    Ledger,
    /// Query/StreamLedgers of 16 ledgers with raw bytes, from a sampled ledger.
    Stream,
    /// grpc.health.v1.Health/Check: an RPC that reads nothing, the
    /// transport's own cost.
    Health,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RepairArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Skip `check` after repairing.
    #[arg(long)]
    pub no_check: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Destination directory (absent or empty). With --endpoint it is a path
    /// on the daemon's host, made absolute here.
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// Back up a stopped data dir directly, opened with the engine flags
    /// below (not --mdbx.max-size-gib or --mdbx.growth-step-mib: the open
    /// would keep them in the dir).
    #[arg(long = "data-dir", value_name = "DIR", conflicts_with = "endpoint")]
    pub data_dir: Option<PathBuf>,
    /// Ask a running daemon for an online backup (Admin.Backup).
    #[arg(long, value_name = "URL", required_unless_present = "data_dir")]
    pub endpoint: Option<String>,
    /// CA certificate (PEM) to trust for https:// endpoints.
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// The daemon's ingest token, when it has one.
    #[arg(long, value_name = "TOKEN", env = "LEDGERSTORE_INGEST_TOKEN")]
    pub token: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Engine sizing for --data-dir (a daemon backs up with its own).
    #[command(flatten)]
    pub engines: EngineFlags,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A complete backup (it holds BACKUP.json).
    #[arg(long, value_name = "DIR")]
    pub from: PathBuf,
    /// The new data dir (absent or empty).
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
    /// Skip `check` after restoring (which the engine flags below size).
    #[arg(long)]
    pub no_check: bool,
    /// Engine sizing for the check after restoring.
    #[command(flatten)]
    pub engines: EngineFlags,
}

#[derive(Debug, Args)]
pub struct HealthArgs {
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Service to check ("" is the whole server).
    #[arg(long, value_name = "NAME", default_value = "")]
    pub service: String,
    /// Give up after this many milliseconds.
    #[arg(long = "timeout-ms", value_name = "MS", default_value_t = 3000)]
    pub timeout_ms: u64,
}

/// Daemon settings; each flag overrides the config key it is named after.
#[derive(Debug, Args, Clone, Default)]
pub struct DaemonFlags {
    /// TOML config file (default: the embedded defaults).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Data directory ([db] path; also accepted as --db.path).
    #[arg(long = "data-dir", alias = "db.path", value_name = "DIR")]
    pub db_path: Option<PathBuf>,
    /// Layout of a new data dir; an existing dir keeps the one it was
    /// created with, and a different value is an error ([db] layout; also
    /// --db.layout).
    #[arg(long = "layout", alias = "db.layout", value_enum)]
    pub db_layout: Option<LayoutArg>,
    /// zstd level for tx and ledger records ([db] zstd_level; also
    /// --db.zstd-level).
    #[arg(long = "zstd-level", alias = "db.zstd-level", value_name = "LEVEL")]
    pub db_zstd_level: Option<i64>,
    /// [grpc] listen address.
    #[arg(long = "grpc.listen", value_name = "ADDR")]
    pub grpc_listen: Option<String>,
    /// [grpc] tls_cert (PEM).
    #[arg(long = "grpc.tls-cert", value_name = "FILE")]
    pub grpc_tls_cert: Option<PathBuf>,
    /// [grpc] tls_key (PEM).
    #[arg(long = "grpc.tls-key", value_name = "FILE")]
    pub grpc_tls_key: Option<PathBuf>,
    /// [grpc] max_message_bytes.
    #[arg(long = "grpc.max-message-bytes", value_name = "BYTES")]
    pub grpc_max_message_bytes: Option<i64>,
    /// [grpc] max_connections: connections open at once (default 1000).
    #[arg(long = "grpc.max-connections", value_name = "N")]
    pub grpc_max_connections: Option<i64>,
    /// [grpc] max_connections_per_ip: connections open at once from one
    /// client address, an IPv6 address with its /64 (default 100; 0: off,
    /// as behind a proxy).
    #[arg(long = "grpc.max-connections-per-ip", value_name = "N")]
    pub grpc_max_connections_per_ip: Option<i64>,
    /// [grpc] handshake_timeout_ms: a new connection's TLS handshake and
    /// HTTP/2 preface must arrive within this (default 10000).
    #[arg(long = "grpc.handshake-timeout-ms", value_name = "MS")]
    pub grpc_handshake_timeout_ms: Option<i64>,
    /// [grpc] max_unsent_bytes: Query answers not yet written to their
    /// connections, all together (default 268435456).
    #[arg(long = "grpc.max-unsent-bytes", value_name = "BYTES")]
    pub grpc_max_unsent_bytes: Option<i64>,
    /// [grpc] send_timeout_ms: a connection one of whose calls owes
    /// answers and writes no piece of them for this long is closed
    /// (default 30000).
    #[arg(long = "grpc.send-timeout-ms", value_name = "MS")]
    pub grpc_send_timeout_ms: Option<i64>,
    /// [metrics] listen address of /metrics.
    #[arg(long = "metrics.listen", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// [jsonrpc] listen address of the Stellar RPC (JSON-RPC) endpoint.
    #[arg(long = "jsonrpc.listen", value_name = "ADDR")]
    pub jsonrpc_listen: Option<String>,
    /// [jsonrpc] enabled: serve the Stellar RPC endpoint (true or false).
    #[arg(long = "jsonrpc.enabled", value_name = "BOOL")]
    pub jsonrpc_enabled: Option<bool>,
    /// [ingest] token: bearer token required by the Ingest service.
    #[arg(long = "ingest.token", value_name = "TOKEN")]
    pub ingest_token: Option<String>,
    /// [ingest] bulk_batch_ledgers.
    #[arg(long = "ingest.bulk-batch-ledgers", value_name = "N")]
    pub ingest_bulk_batch_ledgers: Option<i64>,
    /// [ingest] bulk_batch_mib: a bulk batch also ends at this many MiB of
    /// its ledgers' bytes.
    #[arg(long = "ingest.bulk-batch-mib", value_name = "MIB")]
    pub ingest_bulk_batch_mib: Option<i64>,
    /// [ingest] live_max_latency_ms.
    #[arg(long = "ingest.live-max-latency-ms", value_name = "MS")]
    pub ingest_live_max_latency_ms: Option<i64>,
    /// [ingest] max_ledgers_per_request.
    #[arg(long = "ingest.max-ledgers-per-request", value_name = "N")]
    pub ingest_max_ledgers_per_request: Option<i64>,
    /// [query] max_batch_hashes.
    #[arg(long = "query.max-batch-hashes", value_name = "N")]
    pub query_max_batch_hashes: Option<i64>,
    /// [query] inline_read_us (0: every read on the read threads).
    #[arg(long = "query.inline-read-us", value_name = "US")]
    pub query_inline_read_us: Option<i64>,
    /// [query] read_threads: threads blocking reads run on, at most.
    #[arg(long = "query.read-threads", value_name = "N")]
    pub query_read_threads: Option<i64>,
    /// [limits] max_ledger_bytes.
    #[arg(long = "limits.max-ledger-bytes", value_name = "BYTES")]
    pub limits_max_ledger_bytes: Option<i64>,
    /// [stellar] network of raw LedgerCloseMeta: pubnet, testnet, futurenet,
    /// standalone, or a passphrase.
    #[arg(long = "stellar.network", value_name = "NETWORK")]
    pub stellar_network: Option<String>,
    /// [limits] min_free_disk_mb: free space the data dir keeps.
    #[arg(long = "limits.min-free-disk-mb", value_name = "MiB")]
    pub limits_min_free_disk_mb: Option<i64>,
    /// [log] format: text or json.
    #[arg(long = "log.format", value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// [follow] lake: a data lake to follow (s3://, gs://, https:// or a
    /// directory): caught up in bulk from the mark, then polled.
    #[arg(long = "follow.lake", value_name = "URL|DIR")]
    pub follow_lake: Option<String>,
    /// [follow] from: the first ledger when the data dir is empty (0: the
    /// lake's oldest).
    #[arg(long = "follow.from", value_name = "SEQ")]
    pub follow_from: Option<i64>,
    #[command(flatten)]
    pub follow: FollowFlags,
    #[command(flatten)]
    pub lake: LakeFlags,
    #[command(flatten)]
    pub cold: ColdFlags,
    #[command(flatten)]
    pub events: EventsFlags,
    #[command(flatten)]
    pub engines: EngineFlags,
}

/// Engine sizing flags, shared by the daemon and the offline commands.
#[derive(Debug, Args, Clone, Default, PartialEq, Eq)]
pub struct EngineFlags {
    /// [rocksdb] write_buffer_mb: memtable size (default: the layout's profile;
    /// the field study used 512).
    #[arg(long = "rocksdb.write-buffer-mb", value_name = "MiB")]
    pub rocksdb_write_buffer_mb: Option<i64>,
    /// [rocksdb] block_cache_mb: each RocksDB table's block cache (default:
    /// 256; `indexed` has two tables; the `rocksdb` layout keeps RocksDB's
    /// own).
    #[arg(long = "rocksdb.block-cache-mb", value_name = "MiB")]
    pub rocksdb_block_cache_mb: Option<i64>,
    /// [rocksdb] max_open_files: SST files each RocksDB table keeps open
    /// (default: 5000; -1: every file). Each holds a file descriptor.
    #[arg(
        long = "rocksdb.max-open-files",
        value_name = "FILES",
        allow_negative_numbers = true
    )]
    pub rocksdb_max_open_files: Option<i64>,
    /// [mdbx] max_size_gib: upper bound of each MDBX file.
    #[arg(long = "mdbx.max-size-gib", value_name = "GiB")]
    pub mdbx_max_size_gib: Option<i64>,
    /// [mdbx] growth_step_mib.
    #[arg(long = "mdbx.growth-step-mib", value_name = "MiB")]
    pub mdbx_growth_step_mib: Option<i64>,
    /// [mdbx] tx_data_page_size (fixed when the dir is created).
    #[arg(long = "mdbx.tx-data-page-size", value_name = "BYTES")]
    pub mdbx_tx_data_page_size: Option<i64>,
    /// [mdbx] tx_index_page_size (fixed when the dir is created).
    #[arg(long = "mdbx.tx-index-page-size", value_name = "BYTES")]
    pub mdbx_tx_index_page_size: Option<i64>,
    /// [segments] range_ledgers: ledgers per immutable index segment (layout indexed).
    #[arg(long = "segments.range-ledgers", value_name = "N")]
    pub segments_range_ledgers: Option<i64>,
    /// [segments] merge_fanout: windows of level k hold range_ledgers × fanout^k ledgers.
    #[arg(long = "segments.merge-fanout", value_name = "N")]
    pub segments_merge_fanout: Option<i64>,
    /// [segments] merge_levels: merge levels above the base range (0: no merging).
    #[arg(long = "segments.merge-levels", value_name = "N")]
    pub segments_merge_levels: Option<i64>,
    /// [segments] warm_mib: MiB of the newest segments' index read into the page cache at start (0: off).
    #[arg(long = "segments.warm-mib", value_name = "MIB")]
    pub segments_warm_mib: Option<i64>,
    /// [segments] filter_mib: heap MiB for the newest segments' fingerprints (0: off).
    #[arg(long = "segments.filter-mib", value_name = "MIB")]
    pub segments_filter_mib: Option<i64>,
    /// [segments] bodies: how a new dir stores tx bodies, "blocks" or "records"
    /// (recorded in the dir; an existing dir must match).
    #[arg(long = "segments.bodies", value_name = "FORM")]
    pub segments_bodies: Option<String>,
    /// [segments] block_kib: KiB of raw bodies per compressed block ("blocks" bodies,
    /// and a format-3 or 4 dir's ledger records).
    #[arg(long = "segments.block-kib", value_name = "KIB")]
    pub segments_block_kib: Option<i64>,
    /// [segments] bulk_block_kib: KiB of raw bodies per compressed block for
    /// bodies (and a format-3 or 4 dir's ledger records) written in bulk (a
    /// backfill's batches: history).
    #[arg(long = "segments.bulk-block-kib", value_name = "KIB")]
    pub segments_bulk_block_kib: Option<i64>,
    /// [segments] bulk_zstd_level: zstd level of bodies (and ledger records)
    /// written in bulk (unset: db.zstd_level).
    #[arg(long = "segments.bulk-zstd-level", value_name = "LEVEL")]
    pub segments_bulk_zstd_level: Option<i64>,
    /// [segments] block_dict_kib: largest dictionary per engine file, KiB (0: none).
    #[arg(long = "segments.block-dict-kib", value_name = "KIB")]
    pub segments_block_dict_kib: Option<i64>,
    /// [segments] block_dict: how a file's dictionary is made, "trained" or "samples".
    #[arg(long = "segments.block-dict", value_name = "FORM")]
    pub segments_block_dict: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub flags: DaemonFlags,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective config (defaults < file < env < flags) as TOML.
    Show(ServeArgs),
}

/// An offline data dir and its engine sizing.
#[derive(Debug, Args, Clone)]
pub struct StoreArgs {
    /// Data directory ([db] path; also accepted as --db.path).
    #[arg(long = "data-dir", alias = "db.path", value_name = "DIR")]
    pub data_dir: PathBuf,
    #[command(flatten)]
    pub engines: EngineFlags,
}

/// Where ledgers come from: exactly one of these.
#[derive(Debug, Args, Clone)]
#[group(required = true, multiple = false)]
pub struct SourceArgs {
    /// Generate Stellar-shaped synthetic ledgers (needs --ledgers).
    #[arg(long)]
    pub synthetic: bool,
    /// Real Stellar ledgers from a data lake in the SEP-54 layout (Galexie's):
    /// s3://bucket/prefix, gs://bucket/prefix, https://host/path or a local
    /// directory. Keys come from the lake's .config.json; see --lake.*.
    #[arg(long = "stellar-datalake", value_name = "URL|DIR")]
    pub stellar_datalake: Option<String>,
    /// Real Stellar ledgers from one file: a LedgerCloseMetaBatch (a data-lake
    /// file) or a record-marked LedgerCloseMeta stream, zstd or not.
    #[arg(long = "stellar-file", value_name = "FILE")]
    pub stellar_file: Option<PathBuf>,
}

/// How Stellar ledgers are read.
#[derive(Debug, Args, Clone)]
pub struct StellarArgs {
    /// Network whose passphrase the tx hashes use: pubnet, testnet, futurenet,
    /// standalone, or a passphrase. Required, except for a data lake whose
    /// .config.json names it.
    #[arg(long, value_name = "NETWORK")]
    pub network: Option<String>,
    /// First ledger to read (default: the source's first, or the one after
    /// the mark when resuming).
    #[arg(long, value_name = "SEQ")]
    pub from: Option<u32>,
    /// Last ledger to read, inclusive (default: the source's last).
    #[arg(long, value_name = "SEQ")]
    pub to: Option<u32>,
    #[command(flatten)]
    pub lake: LakeFlags,
}

/// Shape of the synthetic workload (deterministic from --seed).
#[derive(Debug, Args, Clone)]
pub struct SynthArgs {
    /// Synthetic ledgers to send in this run (after the mark, if there is one).
    #[arg(long, value_name = "N")]
    pub ledgers: Option<u32>,
    /// First ledger when the store is empty; later runs continue from the mark.
    #[arg(long = "start-ledger", value_name = "SEQ", default_value_t = 1)]
    pub start_ledger: u32,
    /// Transactions per synthetic ledger.
    #[arg(long = "tx-per-ledger", value_name = "N", default_value_t = 250)]
    pub tx_per_ledger: u32,
    /// Raw bytes per synthetic transaction (envelope + result + meta).
    #[arg(long = "tx-bytes", value_name = "BYTES", default_value_t = 5000)]
    pub tx_bytes: usize,
    /// Raw bytes per synthetic ledger.
    #[arg(
        long = "ledger-bytes",
        value_name = "BYTES",
        default_value_t = 1_400_000
    )]
    pub ledger_bytes: usize,
    /// Seed of the synthetic workload.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub stellar: StellarArgs,
    #[command(flatten)]
    pub synth: SynthArgs,
    /// Ledgers per store batch.
    #[arg(long = "batch-ledgers", value_name = "N", default_value_t = 2000)]
    pub batch_ledgers: u32,
    /// A Stellar source's batch also ends once its ledgers' raw bytes
    /// reach this many MiB (dense ledgers: fewer than --batch-ledgers).
    #[arg(long = "batch-mib", value_name = "MIB", default_value_t = 128)]
    pub batch_mib: u32,
    /// Layout of a new data dir (default: indexed); an existing dir keeps
    /// the one it was created with, and a different value is an error
    /// ([db] layout; also --db.layout).
    #[arg(long = "layout", alias = "db.layout", value_enum)]
    pub layout: Option<LayoutArg>,
    /// zstd level for tx and ledger records ([db] zstd_level; also
    /// --db.zstd-level).
    #[arg(long = "zstd-level", alias = "db.zstd-level", value_name = "LEVEL", default_value_t = 3,
          value_parser = clap::value_parser!(i32).range(1..=22))]
    pub zstd_level: i32,
    /// Append each batch report as a JSON line here (default: DIR/batch-reports.jsonl).
    #[arg(long = "report-jsonl", value_name = "PATH")]
    pub report_jsonl: Option<PathBuf>,
    /// No progress bar (for logs).
    #[arg(long)]
    pub no_progress: bool,
    /// Layout indexed: longest to wait, before a batch, for the repair of a
    /// lost or damaged segment (which the batch's duplicate check needs);
    /// the wait also ends, with an error, once the repair failed 3 times
    /// in a row.
    #[arg(long = "repair-wait-seconds", value_name = "S", default_value_t = 3600)]
    pub repair_wait_seconds: u64,
    /// After the lake's newest ledger, keep polling it and commit each new
    /// file as it appears (a data lake only; stop with Ctrl-C).
    #[arg(long, conflicts_with = "to")]
    pub follow: bool,
    #[command(flatten)]
    pub follow_flags: FollowFlags,
    #[command(flatten)]
    pub events: EventsFlags,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub stellar: StellarArgs,
    #[command(flatten)]
    pub synth: SynthArgs,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Bearer token of the daemon's Ingest service.
    #[arg(long, value_name = "TOKEN", env = "LEDGERSTORE_INGEST_TOKEN")]
    pub token: Option<String>,
    /// bulk: the daemon batches (ingest.bulk_batch_ledgers and
    /// ingest.bulk_batch_mib); live: every
    /// ledger commits within ingest.live_max_latency_ms.
    #[arg(long, value_enum, default_value_t = Mode::Bulk)]
    pub mode: Mode,
    /// Ledgers per IngestRequest message.
    #[arg(long = "request-ledgers", value_name = "N", default_value_t = 20)]
    pub request_ledgers: u32,
    /// Pause between requests, milliseconds (e.g. 5000 to mimic live Stellar).
    #[arg(long = "interval-ms", value_name = "MS", default_value_t = 0)]
    pub interval_ms: u64,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Mode {
    Bulk,
    Live,
}

#[derive(Debug, Args, Clone)]
pub struct RemoteArgs {
    /// Daemon endpoint, e.g. http://127.0.0.1:50051 (https:// for TLS).
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:50051")]
    pub endpoint: String,
    /// CA certificate (PEM) to trust for https:// endpoints.
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LayoutArg {
    /// Ledgers in RocksDB, tx data and tx index in libmdbx.
    Hybrid,
    /// All in RocksDB, the field study's setup (flush + compaction per batch).
    Rocksdb,
    /// All in RocksDB, well configured (BlobDB, blooms, background compaction).
    RocksdbTuned,
    /// Txs in ledger order (RocksDB), a hot hash index (libmdbx) and
    /// immutable perfect-hash segments for closed ledger ranges.
    Indexed,
}

impl From<LayoutArg> for Layout {
    fn from(l: LayoutArg) -> Self {
        match l {
            LayoutArg::Hybrid => Layout::Hybrid,
            LayoutArg::Rocksdb => Layout::Rocksdb,
            LayoutArg::RocksdbTuned => Layout::RocksdbTuned,
            LayoutArg::Indexed => Layout::Indexed,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum GetCommand {
    /// A ledger by sequence: header fields and its tx hashes.
    Ledger(GetLedgerArgs),
    /// A transaction by hash: its ledger, index and exact bytes.
    Tx(GetTxArgs),
}

#[derive(Debug, Args)]
pub struct GetLedgerArgs {
    /// Ledger sequence.
    pub seq: u32,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct GetTxArgs {
    /// Transaction hashes, 64 hex digits each. With several and --json, one
    /// JSON object per line.
    #[arg(required = true, num_args = 1.., value_name = "HASH")]
    pub hashes: Vec<String>,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub out: TxOutput,
}

/// How a transaction is printed.
#[derive(Debug, Args, Clone, Copy)]
pub struct TxOutput {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Encoding of the envelope, result and meta bytes.
    #[arg(long, value_enum, default_value_t = Encoding::Base64)]
    pub encoding: Encoding,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Encoding {
    Hex,
    Base64,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RemoteTxArgs {
    /// Transaction hash, 64 hex digits.
    pub hash: String,
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(flatten)]
    pub out: TxOutput,
}

#[derive(Debug, Args)]
pub struct RemoteLedgerArgs {
    /// Ledger sequence.
    pub seq: u32,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}
