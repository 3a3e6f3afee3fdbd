//! Flags of the `[lake]` and `[follow]` sections, shared by `ingest`,
//! `push` and `serve` (one vocabulary: `--lake.<key>`, `--follow.<key>`).

use clap::Args;

/// `[lake]`: how object storage is reached.
#[derive(Debug, Args, Clone, Default)]
pub struct LakeFlags {
    /// [lake] endpoint: an S3-compatible server's URL, or a GCS server's
    /// base URL (default for S3: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or
    /// AWS_ENDPOINT when set, else the cloud's own).
    #[arg(id = "lake.endpoint", long = "lake.endpoint", value_name = "URL")]
    pub endpoint: Option<String>,
    /// [lake] region of an S3 bucket (the public pubnet lake: us-east-2).
    #[arg(id = "lake.region", long = "lake.region", value_name = "REGION")]
    pub region: Option<String>,
    /// [lake] credentials: auto (the standard environment variables when
    /// set, else anonymous), anonymous, env, or instance (the cloud SDK's
    /// chain, which may ask an instance-metadata endpoint).
    #[arg(
        id = "lake.credentials",
        long = "lake.credentials",
        value_name = "MODE"
    )]
    pub credentials: Option<String>,
    /// [lake] access_key_id of S3 (with --lake.secret-access-key-file;
    /// default: AWS_ACCESS_KEY_ID).
    #[arg(
        id = "lake.access-key-id",
        long = "lake.access-key-id",
        value_name = "ID"
    )]
    pub access_key_id: Option<String>,
    /// [lake] secret_access_key_file: a file holding the S3 secret (default:
    /// AWS_SECRET_ACCESS_KEY).
    #[arg(
        id = "lake.secret-access-key-file",
        long = "lake.secret-access-key-file",
        value_name = "FILE"
    )]
    pub secret_access_key_file: Option<String>,
    /// [lake] service_account_file: a GCS service-account key (default:
    /// GOOGLE_SERVICE_ACCOUNT or GOOGLE_APPLICATION_CREDENTIALS).
    #[arg(
        id = "lake.service-account-file",
        long = "lake.service-account-file",
        value_name = "FILE"
    )]
    pub service_account_file: Option<String>,
    /// [lake] allow_http: allow plain http:// lakes and endpoints.
    #[arg(id = "lake.allow-http", long = "lake.allow-http")]
    pub allow_http: bool,
    /// [lake] request_timeout_ms: longest one request may take.
    #[arg(
        id = "lake.request-timeout-ms",
        long = "lake.request-timeout-ms",
        value_name = "MS"
    )]
    pub request_timeout_ms: Option<i64>,
    /// [lake] connect_timeout_ms.
    #[arg(
        id = "lake.connect-timeout-ms",
        long = "lake.connect-timeout-ms",
        value_name = "MS"
    )]
    pub connect_timeout_ms: Option<i64>,
    /// [lake] max_retries of one request (5xx, 429, timeouts, resets).
    #[arg(id = "lake.max-retries", long = "lake.max-retries", value_name = "N")]
    pub max_retries: Option<i64>,
    /// [lake] retry_timeout_ms: no retry starts later than this.
    #[arg(
        id = "lake.retry-timeout-ms",
        long = "lake.retry-timeout-ms",
        value_name = "MS"
    )]
    pub retry_timeout_ms: Option<i64>,
    /// [lake] read_ahead: files fetched and decoded ahead of the writer, in
    /// parallel (also --read-ahead).
    #[arg(
        id = "lake.read-ahead",
        long = "lake.read-ahead",
        alias = "read-ahead",
        value_name = "N"
    )]
    pub read_ahead: Option<i64>,
    /// [lake] decoded_ahead_mib: decoded ledgers (MiB of their raw bytes)
    /// that may wait for the writer (ingest's, and the daemon's follower),
    /// so the source keeps decoding while a batch commits.
    #[arg(
        id = "lake.decoded-ahead-mib",
        long = "lake.decoded-ahead-mib",
        value_name = "MIB"
    )]
    pub decoded_ahead_mib: Option<i64>,
}

/// `[follow]`: polling a lake for new files.
#[derive(Debug, Args, Clone, Default)]
pub struct FollowFlags {
    /// [follow] poll_ms: pause between polls once caught up.
    #[arg(id = "follow.poll-ms", long = "follow.poll-ms", value_name = "MS")]
    pub poll_ms: Option<i64>,
    /// [follow] unreachable_after_ms: the daemon's Ingest health turns
    /// NOT_SERVING after the lake has failed this long.
    #[arg(
        id = "follow.unreachable-after-ms",
        long = "follow.unreachable-after-ms",
        value_name = "MS"
    )]
    pub unreachable_after_ms: Option<i64>,
}

/// `[cold]` and `[replica]`: publishing closed ranges to object storage,
/// and serving them from read replicas (both reach the store with the
/// `--lake.*` settings).
#[derive(Debug, Args, Clone, Default)]
pub struct ColdFlags {
    /// [cold] store: publish closed ranges (layout indexed) to this object
    /// store (s3://bucket/prefix, gs://bucket/prefix, or a directory).
    #[arg(long = "cold.store", value_name = "URL|DIR")]
    pub cold_store: Option<String>,
    /// [cold] publish_interval_ms: time between publish rounds.
    #[arg(long = "cold.publish-interval-ms", value_name = "MS")]
    pub cold_publish_interval_ms: Option<i64>,
    /// [cold] keep_local_ranges: published base ranges kept on local disk,
    /// newest first (0: all); older ones are served from the object store.
    #[arg(long = "cold.keep-local-ranges", value_name = "N")]
    pub cold_keep_local_ranges: Option<i64>,
    /// [cold] publish_events: publish the event index's files beside the
    /// packs, so replicas answer getEvents (once every replica runs a
    /// build that reads them).
    #[arg(id = "cold.publish-events", long = "cold.publish-events")]
    pub cold_publish_events: bool,
    /// [cold] publish_threads: threads that read and recompress a pack's
    /// ledgers (0: half the cores in the daemon, all for `publish`).
    #[arg(long = "cold.publish-threads", value_name = "N")]
    pub cold_publish_threads: Option<i64>,
    /// [cold] pack_version: the format of new packs, 2 (a frame a record
    /// or body, read by every build), 3 (a zstd frame a ledger) or 4 (a
    /// zstd frame a ledger with the pack's dictionary). 0 or unset: the
    /// store's own (its newest pack's version; 4 for a new store).
    #[arg(long = "cold.pack-version", value_name = "0|2|3|4")]
    pub cold_pack_version: Option<i64>,
    /// [cold] pack_zstd_level: the zstd level of version-3 and 4 ledger
    /// frames.
    #[arg(long = "cold.pack-zstd-level", value_name = "LEVEL")]
    pub cold_pack_zstd_level: Option<i64>,
    /// [cold] pack_dict_kib: version 4's dictionary budget, KiB.
    #[arg(long = "cold.pack-dict-kib", value_name = "KIB")]
    pub cold_pack_dict_kib: Option<i64>,
    /// [replica] store: serve, read-only, what a writer published there
    /// (also --replica.store).
    #[arg(long = "replica", alias = "replica.store", value_name = "URL|DIR")]
    pub replica_store: Option<String>,
    /// [replica] cache_dir: the replica's disk cache (emptied at start).
    #[arg(long = "replica.cache-dir", value_name = "DIR")]
    pub replica_cache_dir: Option<std::path::PathBuf>,
    /// [replica] cache_mb: the disk cache's bound.
    #[arg(long = "replica.cache-mb", value_name = "MiB")]
    pub replica_cache_mb: Option<i64>,
    /// [replica] frame_memory_mb: opened ledger frames kept in memory.
    #[arg(long = "replica.frame-memory-mb", value_name = "MiB")]
    pub replica_frame_memory_mb: Option<i64>,
    /// [replica] dict_memory_mb: pack dictionaries kept in memory.
    #[arg(long = "replica.dict-memory-mb", value_name = "MiB")]
    pub replica_dict_memory_mb: Option<i64>,
    /// [replica] batch_memory_mb: what one batch of lookups holds fetched.
    #[arg(long = "replica.batch-memory-mb", value_name = "MiB")]
    pub replica_batch_memory_mb: Option<i64>,
    /// [replica] batch_gets_in_flight: object-store GETs one batch of
    /// lookups keeps in flight.
    #[arg(long = "replica.batch-gets-in-flight", value_name = "N")]
    pub replica_batch_gets_in_flight: Option<i64>,
    /// [replica] poll_ms: time between looks for a newer manifest.
    #[arg(long = "replica.poll-ms", value_name = "MS")]
    pub replica_poll_ms: Option<i64>,
    /// [replica] events_dir: the replica's event index for getEvents
    /// (published files fetched whole; kept across restarts).
    #[arg(long = "replica.events-dir", value_name = "DIR")]
    pub replica_events_dir: Option<std::path::PathBuf>,
}

/// `[events]`: the contract-event index getEvents reads, kept by the
/// daemon and built by `ingest` as it goes.
#[derive(Debug, Args, Clone, Default)]
pub struct EventsFlags {
    /// [events] enabled: keep the event index (`<data dir>/events`).
    #[arg(long = "events.enabled", value_name = "BOOL")]
    pub events_enabled: Option<bool>,
    /// [events] file_ledgers: ledgers per level-0 index file of a new
    /// index (an existing one keeps its own).
    #[arg(long = "events.file-ledgers", value_name = "N")]
    pub events_file_ledgers: Option<i64>,
    /// [events] fan_out: files of one level merged into one of the next,
    /// for a new index.
    #[arg(long = "events.fan-out", value_name = "N")]
    pub events_fan_out: Option<i64>,
}
