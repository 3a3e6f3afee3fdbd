//! Flags → config overrides. Each flag names its config key, so the
//! precedence (file < env < flags) is applied by `ledgerstore-config`.

use anyhow::{Context, Result};
use ledgerstore_config::Config;
use ledgerstore_db_api::Layout;
use toml::Value;

use crate::cli::{ColdFlags, DaemonFlags, EngineFlags, EventsFlags, FollowFlags, LakeFlags};

type Overrides = Vec<(&'static str, Value)>;

fn push<T: ?Sized>(o: &mut Overrides, key: &'static str, v: Option<&T>, f: impl Fn(&T) -> Value) {
    if let Some(v) = v {
        o.push((key, f(v)));
    }
}

fn int(v: &i64) -> Value {
    Value::Integer(*v)
}

fn string(v: &str) -> Value {
    Value::String(v.to_string())
}

fn path(v: &std::path::Path) -> Value {
    Value::String(v.display().to_string())
}

fn engine_overrides(e: &EngineFlags, o: &mut Overrides) {
    push(
        o,
        "rocksdb.write_buffer_mb",
        e.rocksdb_write_buffer_mb.as_ref(),
        int,
    );
    push(
        o,
        "rocksdb.block_cache_mb",
        e.rocksdb_block_cache_mb.as_ref(),
        int,
    );
    push(
        o,
        "rocksdb.max_open_files",
        e.rocksdb_max_open_files.as_ref(),
        int,
    );
    push(o, "mdbx.max_size_gib", e.mdbx_max_size_gib.as_ref(), int);
    push(
        o,
        "mdbx.growth_step_mib",
        e.mdbx_growth_step_mib.as_ref(),
        int,
    );
    push(
        o,
        "mdbx.tx_data_page_size",
        e.mdbx_tx_data_page_size.as_ref(),
        int,
    );
    push(
        o,
        "mdbx.tx_index_page_size",
        e.mdbx_tx_index_page_size.as_ref(),
        int,
    );
    push(
        o,
        "segments.range_ledgers",
        e.segments_range_ledgers.as_ref(),
        int,
    );
    push(
        o,
        "segments.merge_fanout",
        e.segments_merge_fanout.as_ref(),
        int,
    );
    push(
        o,
        "segments.merge_levels",
        e.segments_merge_levels.as_ref(),
        int,
    );
    push(o, "segments.warm_mib", e.segments_warm_mib.as_ref(), int);
    push(
        o,
        "segments.filter_mib",
        e.segments_filter_mib.as_ref(),
        int,
    );
    push(o, "segments.bodies", e.segments_bodies.as_deref(), string);
    push(o, "segments.block_kib", e.segments_block_kib.as_ref(), int);
    push(
        o,
        "segments.bulk_block_kib",
        e.segments_bulk_block_kib.as_ref(),
        int,
    );
    push(
        o,
        "segments.bulk_zstd_level",
        e.segments_bulk_zstd_level.as_ref(),
        int,
    );
    push(
        o,
        "segments.block_dict_kib",
        e.segments_block_dict_kib.as_ref(),
        int,
    );
    push(
        o,
        "segments.block_dict",
        e.segments_block_dict.as_deref(),
        string,
    );
}

fn lake_overrides(l: &LakeFlags, o: &mut Overrides) {
    push(o, "lake.endpoint", l.endpoint.as_deref(), string);
    push(o, "lake.region", l.region.as_deref(), string);
    push(o, "lake.credentials", l.credentials.as_deref(), string);
    push(o, "lake.access_key_id", l.access_key_id.as_deref(), string);
    push(
        o,
        "lake.secret_access_key_file",
        l.secret_access_key_file.as_deref(),
        string,
    );
    push(
        o,
        "lake.service_account_file",
        l.service_account_file.as_deref(),
        string,
    );
    if l.allow_http {
        o.push(("lake.allow_http", Value::Boolean(true)));
    }
    push(
        o,
        "lake.request_timeout_ms",
        l.request_timeout_ms.as_ref(),
        int,
    );
    push(
        o,
        "lake.connect_timeout_ms",
        l.connect_timeout_ms.as_ref(),
        int,
    );
    push(o, "lake.max_retries", l.max_retries.as_ref(), int);
    push(o, "lake.retry_timeout_ms", l.retry_timeout_ms.as_ref(), int);
    push(o, "lake.read_ahead", l.read_ahead.as_ref(), int);
    push(
        o,
        "lake.decoded_ahead_mib",
        l.decoded_ahead_mib.as_ref(),
        int,
    );
}

fn follow_overrides(f: &FollowFlags, o: &mut Overrides) {
    push(o, "follow.poll_ms", f.poll_ms.as_ref(), int);
    push(
        o,
        "follow.unreachable_after_ms",
        f.unreachable_after_ms.as_ref(),
        int,
    );
}

fn events_overrides(e: &EventsFlags, o: &mut Overrides) {
    push(o, "events.enabled", e.events_enabled.as_ref(), |b| {
        Value::Boolean(*b)
    });
    push(
        o,
        "events.file_ledgers",
        e.events_file_ledgers.as_ref(),
        int,
    );
    push(o, "events.fan_out", e.events_fan_out.as_ref(), int);
}

fn cold_overrides(c: &ColdFlags, o: &mut Overrides) {
    push(o, "cold.store", c.cold_store.as_deref(), string);
    push(
        o,
        "cold.publish_interval_ms",
        c.cold_publish_interval_ms.as_ref(),
        int,
    );
    push(
        o,
        "cold.keep_local_ranges",
        c.cold_keep_local_ranges.as_ref(),
        int,
    );
    if c.cold_publish_events {
        o.push(("cold.publish_events", Value::Boolean(true)));
    }
    push(
        o,
        "cold.publish_threads",
        c.cold_publish_threads.as_ref(),
        int,
    );
    push(o, "cold.pack_version", c.cold_pack_version.as_ref(), int);
    push(
        o,
        "cold.pack_zstd_level",
        c.cold_pack_zstd_level.as_ref(),
        int,
    );
    push(o, "cold.pack_dict_kib", c.cold_pack_dict_kib.as_ref(), int);
    push(o, "replica.store", c.replica_store.as_deref(), string);
    push(o, "replica.cache_dir", c.replica_cache_dir.as_deref(), path);
    push(o, "replica.cache_mb", c.replica_cache_mb.as_ref(), int);
    push(
        o,
        "replica.frame_memory_mb",
        c.replica_frame_memory_mb.as_ref(),
        int,
    );
    push(
        o,
        "replica.dict_memory_mb",
        c.replica_dict_memory_mb.as_ref(),
        int,
    );
    push(
        o,
        "replica.batch_memory_mb",
        c.replica_batch_memory_mb.as_ref(),
        int,
    );
    push(
        o,
        "replica.batch_gets_in_flight",
        c.replica_batch_gets_in_flight.as_ref(),
        int,
    );
    push(o, "replica.poll_ms", c.replica_poll_ms.as_ref(), int);
    push(
        o,
        "replica.events_dir",
        c.replica_events_dir.as_deref(),
        path,
    );
}

/// The daemon's effective config.
pub fn daemon(f: &DaemonFlags) -> Result<Config> {
    let mut o = Overrides::new();
    push(&mut o, "db.path", f.db_path.as_deref(), path);
    push(&mut o, "db.layout", f.db_layout.as_ref(), |l| {
        Value::String(Layout::from(*l).name().to_string())
    });
    push(&mut o, "db.zstd_level", f.db_zstd_level.as_ref(), int);
    push(&mut o, "grpc.listen", f.grpc_listen.as_deref(), string);
    push(&mut o, "grpc.tls_cert", f.grpc_tls_cert.as_deref(), path);
    push(&mut o, "grpc.tls_key", f.grpc_tls_key.as_deref(), path);
    push(
        &mut o,
        "grpc.max_message_bytes",
        f.grpc_max_message_bytes.as_ref(),
        int,
    );
    push(
        &mut o,
        "grpc.max_connections",
        f.grpc_max_connections.as_ref(),
        int,
    );
    push(
        &mut o,
        "grpc.max_connections_per_ip",
        f.grpc_max_connections_per_ip.as_ref(),
        int,
    );
    push(
        &mut o,
        "grpc.handshake_timeout_ms",
        f.grpc_handshake_timeout_ms.as_ref(),
        int,
    );
    push(
        &mut o,
        "grpc.max_unsent_bytes",
        f.grpc_max_unsent_bytes.as_ref(),
        int,
    );
    push(
        &mut o,
        "grpc.send_timeout_ms",
        f.grpc_send_timeout_ms.as_ref(),
        int,
    );
    push(
        &mut o,
        "metrics.listen",
        f.metrics_listen.as_deref(),
        string,
    );
    push(
        &mut o,
        "jsonrpc.listen",
        f.jsonrpc_listen.as_deref(),
        string,
    );
    push(&mut o, "jsonrpc.enabled", f.jsonrpc_enabled.as_ref(), |b| {
        Value::Boolean(*b)
    });
    push(&mut o, "ingest.token", f.ingest_token.as_deref(), string);
    push(
        &mut o,
        "ingest.bulk_batch_ledgers",
        f.ingest_bulk_batch_ledgers.as_ref(),
        int,
    );
    push(
        &mut o,
        "ingest.bulk_batch_mib",
        f.ingest_bulk_batch_mib.as_ref(),
        int,
    );
    push(
        &mut o,
        "ingest.live_max_latency_ms",
        f.ingest_live_max_latency_ms.as_ref(),
        int,
    );
    push(
        &mut o,
        "ingest.max_ledgers_per_request",
        f.ingest_max_ledgers_per_request.as_ref(),
        int,
    );
    push(
        &mut o,
        "query.max_batch_hashes",
        f.query_max_batch_hashes.as_ref(),
        int,
    );
    push(
        &mut o,
        "query.inline_read_us",
        f.query_inline_read_us.as_ref(),
        int,
    );
    push(
        &mut o,
        "query.read_threads",
        f.query_read_threads.as_ref(),
        int,
    );
    push(
        &mut o,
        "limits.max_ledger_bytes",
        f.limits_max_ledger_bytes.as_ref(),
        int,
    );
    push(
        &mut o,
        "limits.min_free_disk_mb",
        f.limits_min_free_disk_mb.as_ref(),
        int,
    );
    push(
        &mut o,
        "stellar.network",
        f.stellar_network.as_deref(),
        string,
    );
    push(&mut o, "log.format", f.log_format.as_deref(), string);
    push(&mut o, "follow.lake", f.follow_lake.as_deref(), string);
    push(&mut o, "follow.from", f.follow_from.as_ref(), int);
    follow_overrides(&f.follow, &mut o);
    lake_overrides(&f.lake, &mut o);
    cold_overrides(&f.cold, &mut o);
    events_overrides(&f.events, &mut o);
    engine_overrides(&f.engines, &mut o);
    Config::load(f.config.as_deref(), &o).context("loading the configuration")
}

/// Config for the offline commands: defaults < env < engine flags.
pub fn offline(e: &EngineFlags) -> Result<Config> {
    let mut o = Overrides::new();
    engine_overrides(e, &mut o);
    Config::load(None, &o).context("loading the configuration")
}

/// Config for commands that read a data lake: defaults < env < flags.
pub fn for_lake(l: &LakeFlags, f: Option<&FollowFlags>) -> Result<Config> {
    for_ingest(l, f, &EventsFlags::default())
}

/// Config for `ingest`: [`for_lake`]'s, with the `[events]` flags.
pub fn for_ingest(l: &LakeFlags, f: Option<&FollowFlags>, e: &EventsFlags) -> Result<Config> {
    let mut o = Overrides::new();
    lake_overrides(l, &mut o);
    if let Some(f) = f {
        follow_overrides(f, &mut o);
    }
    events_overrides(e, &mut o);
    Config::load(None, &o).context("loading the configuration")
}
