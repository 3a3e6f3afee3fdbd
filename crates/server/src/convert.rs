//! Protobuf ↔ store types, shared by the services and the clients.

use ledgerstore_db_api::{Alias, LedgerInput, LedgerRecord, TxHash, TxInput, TxRecord};
use ledgerstore_proto::v1 as pb;
use ledgerstore_store::{BatchReport, LedgerHead, ReplicaStatus, StoreStats};
use tonic::Status;

use crate::status::bad_hash;

/// An incoming ledger as the store takes it.
pub fn ledger_in(l: pb::Ledger) -> LedgerInput {
    LedgerInput {
        seq: l.seq,
        close_time: l.close_time,
        raw: l.raw.into(),
        txs: l
            .transactions
            .into_iter()
            .map(|t| TxInput {
                hash: t.hash,
                envelope: t.envelope.into(),
                result: t.result.into(),
                meta: t.meta.into(),
                alias: (!t.alias.is_empty()).then_some(t.alias),
            })
            .collect(),
        // The gRPC ledger names no cuts: stored whole. Raw Stellar
        // ledgers (`stellar_ledgers`) are extracted here, with cuts.
        cuts: Vec::new(),
    }
}

/// Parses a 32-byte hash field.
pub fn hash(field: &str, bytes: &[u8]) -> Result<TxHash, Status> {
    TxHash::from_slice(bytes).ok_or_else(|| bad_hash(field, bytes.len()))
}

/// A ledger as a pipeline sends it (the inverse of [`ledger_in`]).
pub fn ledger_pb(l: LedgerInput) -> pb::Ledger {
    pb::Ledger {
        seq: l.seq,
        close_time: l.close_time,
        raw: l.raw.into(),
        transactions: l
            .txs
            .into_iter()
            .map(|t| pb::Transaction {
                hash: t.hash,
                envelope: t.envelope.into(),
                result: t.result.into(),
                meta: t.meta.into(),
                alias: t.alias.unwrap_or_default(),
            })
            .collect(),
    }
}

/// A transaction as a client receives it (the inverse of [`tx_out`]).
pub fn tx_from_pb(r: pb::TransactionRecord) -> TxRecord {
    TxRecord {
        ledger_seq: r.ledger_seq,
        close_time: r.close_time,
        index: r.index,
        envelope: r.envelope,
        result: r.result,
        meta: r.meta,
    }
}

/// A ledger as a client receives it (the inverse of [`ledger_out`]).
pub fn ledger_from_pb(l: pb::LedgerRecord) -> LedgerRecord {
    LedgerRecord {
        seq: l.seq,
        close_time: l.close_time,
        tx_hashes: l
            .tx_hashes
            .iter()
            .filter_map(|h| TxHash::from_slice(h))
            .collect(),
        aliases: l
            .aliases
            .iter()
            .filter_map(|a| {
                Some(Alias {
                    index: a.index,
                    hash: TxHash::from_slice(&a.hash)?,
                })
            })
            .collect(),
        raw: l.raw,
    }
}

/// A stored transaction as the API returns it.
pub fn tx_out(hash: TxHash, r: TxRecord) -> pb::TransactionRecord {
    pb::TransactionRecord {
        hash: hash.0.to_vec(),
        ledger_seq: r.ledger_seq,
        close_time: r.close_time,
        index: r.index,
        envelope: r.envelope,
        result: r.result,
        meta: r.meta,
    }
}

/// A stored ledger as the API returns it.
pub fn ledger_out(l: LedgerRecord) -> pb::LedgerRecord {
    record_out(l.seq, l.close_time, l.raw, l.tx_hashes, l.aliases)
}

/// A ledger without its raw bytes (`omit_raw`), as its record holds it:
/// nothing was reassembled to answer it.
pub fn head_out(h: LedgerHead) -> pb::LedgerRecord {
    record_out(h.seq, h.close_time, Vec::new(), h.tx_hashes, h.aliases)
}

fn record_out(
    seq: u32,
    close_time: u64,
    raw: Vec<u8>,
    tx_hashes: Vec<TxHash>,
    aliases: Vec<Alias<TxHash>>,
) -> pb::LedgerRecord {
    pb::LedgerRecord {
        seq,
        close_time,
        raw,
        tx_hashes: tx_hashes.into_iter().map(|h| h.0.to_vec()).collect(),
        aliases: aliases
            .into_iter()
            .map(|a| pb::TransactionAlias {
                index: a.index,
                hash: a.hash.0.to_vec(),
            })
            .collect(),
    }
}

/// A batch report as the API returns it.
pub fn report_out(r: &BatchReport) -> pb::BatchReport {
    pb::BatchReport {
        batch: r.batch,
        first_ledger: r.first_ledger,
        last_ledger: r.last_ledger,
        ledgers: r.ledgers,
        transactions: r.txs,
        source_seconds: r.source_s,
        compress_seconds: r.compress_s,
        compute_seconds: r.compute_s,
        total_seconds: r.total_s,
        ledgers_per_second: r.ledgers_per_s,
        bytes_written: r.bytes_written,
        stores: r
            .stores
            .iter()
            .map(|s| pb::PhaseTiming {
                table: s.table.into(),
                engine: s.engine.into(),
                write_seconds: s.write_s,
                commit_seconds: s.commit_s,
                compact_seconds: s.compact_s,
                bytes: s.bytes,
                keys: s.keys,
            })
            .collect(),
    }
}

/// Store statistics as the API returns them.
/// A read replica's GetStatus.
pub fn replica_status_out(r: &ReplicaStatus) -> pb::Status {
    pb::Status {
        layout: "replica".into(),
        has_durable_ledger: r.published_mark.is_some(),
        durable_ledger: r.published_mark.unwrap_or(0),
        first_ledger: r.first_ledger.unwrap_or(0),
        ledgers: match (r.first_ledger, r.published_mark) {
            (Some(a), Some(b)) => u64::from(b) - u64::from(a) + 1,
            _ => 0,
        },
        transactions: r.txs,
        version: env!("CARGO_PKG_VERSION").into(),
        replica: Some(pb::ReplicaStatus {
            manifest_version: r.manifest_version,
            manifest_age_seconds: r.manifest_age_s,
            packs: r.packs,
            segments: r.segments,
            cache_bytes: r.cache_bytes,
            cache_limit_bytes: r.cache_limit_bytes,
            cache_hits: r.cache_hits,
            cache_misses: r.cache_misses,
            cache_evictions: r.cache_evictions,
            object_gets: r.object_gets,
            object_get_bytes: r.object_get_bytes,
            lookups: r.lookups,
            pack_dict_bytes: r.pack_dict_bytes,
            pack_dict_limit_bytes: r.pack_dict_limit_bytes,
            pack_dict_opens: r.pack_dict_opens,
            follow_error: r.follow_error.clone().unwrap_or_default(),
            cache_hit_ratio: ratio(r.cache_hits, r.cache_hits + r.cache_misses),
            gets_per_lookup: ratio(r.object_gets, r.lookups),
            bytes_per_lookup: ratio(r.object_get_bytes, r.lookups),
            // `store` (deprecated) stays empty: clients are not told the
            // bucket or its endpoint; the start log names the location.
            ..pb::ReplicaStatus::default()
        }),
        ..pb::Status::default()
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// A store's GetStatus.
pub fn status_out(s: &StoreStats, last: Option<&BatchReport>) -> pb::Status {
    pb::Status {
        layout: s.layout.into(),
        has_durable_ledger: s.last_ledger.is_some(),
        durable_ledger: s.last_ledger.unwrap_or(0),
        first_ledger: s.first_ledger.unwrap_or(0),
        ledgers: s.ledgers,
        transactions: s.txs,
        stores: s
            .tables
            .iter()
            .map(|t| pb::StoreStatus {
                table: t.table.into(),
                engine: t.engine.into(),
                keys: t.keys,
                disk_bytes: t.engine_stats.disk_bytes,
                raw_bytes: t.raw_bytes,
                stored_bytes: t.stored_bytes,
            })
            .collect(),
        last_batch: last.map(report_out),
        version: env!("CARGO_PKG_VERSION").into(),
        segments: s
            .segments
            .iter()
            .flat_map(|seg| &seg.segments)
            .map(|i| pb::SegmentStatus {
                first_ledger: i.first,
                last_ledger: i.last,
                keys: i.keys,
                file_bytes: i.file_bytes,
                bits_per_key: i.bits_per_key,
                mph_bits_per_key: i.mph_bits_per_key,
                build_seconds: i.build_s,
            })
            .collect(),
        dictionary_version: s.dictionaries.as_ref().map_or(0, |d| d.current),
        index_probes: s
            .segments
            .as_ref()
            .map_or(0, |seg| u32::try_from(seg.probes).unwrap_or(u32::MAX)),
        repairing: s
            .segments
            .as_ref()
            .map_or_else(Vec::new, |seg| seg.repairing.clone()),
        replica: None,
    }
}
