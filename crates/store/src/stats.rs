//! Per-store statistics, as in the field study's stats blocks.

use ledgerstore_db_api::{EngineStats, TableId};
use serde::Serialize;

use crate::Ledgerstore;
use crate::error::StoreResult;
use crate::indexed::{DictStats, SegmentStats};

/// Statistics of one table.
#[derive(Debug, Clone, Serialize)]
pub struct TableStats {
    /// Table.
    pub table: &'static str,
    /// Engine.
    pub engine: &'static str,
    /// Keys committed (from the mark's totals).
    pub keys: u64,
    /// Bytes before compression.
    pub raw_bytes: u64,
    /// Bytes after compression.
    pub stored_bytes: u64,
    /// 1 - stored/raw, in percent (the field study's "−77%"): what the
    /// application saved (0 for the raw bodies of a `blocks` dir, which
    /// the engine compresses; see `engine_stats.disk_bytes`).
    pub compression_savings_pct: f64,
    /// The engine's own figures.
    pub engine_stats: EngineStats,
}

/// Statistics of the whole store.
#[derive(Debug, Clone, Serialize)]
pub struct StoreStats {
    /// Layout.
    pub layout: &'static str,
    /// First ledger.
    pub first_ledger: Option<u32>,
    /// Durable mark.
    pub last_ledger: Option<u32>,
    /// Ledgers committed.
    pub ledgers: u64,
    /// Transactions committed.
    pub txs: u64,
    /// Batches committed.
    pub batches: u64,
    /// Bytes on disk, all tables.
    pub disk_bytes: u64,
    /// Per table.
    pub tables: Vec<TableStats>,
    /// Layout `indexed`: the immutable segments of closed ledger ranges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<SegmentStats>,
    /// Layout `indexed`: how tx bodies are stored (`records`: each a zstd
    /// frame; `blocks`: raw, compressed by the engine in blocks, so the
    /// table's `stored_bytes` are raw and its `disk_bytes` compressed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bodies: Option<&'static str>,
    /// Layout `indexed`: how ledger records are stored (`records`: each a
    /// zstd frame; `blocks`, format 3: raw, compressed by the engine in
    /// blocks, so the `ledgers` table's `stored_bytes` are raw).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger_records: Option<&'static str>,
    /// Layout `indexed`: tx-body dictionaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dictionaries: Option<DictStats>,
    /// Why ingest is refused until the store is reopened (a failed `MARK`
    /// write), if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes_refused: Option<String>,
}

impl Ledgerstore {
    /// Statistics of every table.
    pub fn stats(&self) -> StoreResult<StoreStats> {
        let mark = self.mark();
        let mut tables = Vec::new();
        for t in TableId::ALL {
            let store = self.table(t);
            let totals = mark.tables.get(t.name()).cloned().unwrap_or_default();
            let engine_stats = store.stats()?;
            // Bytes handed to the engine against bytes before compression:
            // a `blocks` dir's raw bodies (and a format-3 dir's raw ledger
            // records) save nothing here (the engine compresses them; its
            // disk figure shows what that saved).
            let savings = if totals.raw_bytes > 0 {
                100.0 * (1.0 - totals.stored_bytes as f64 / totals.raw_bytes as f64)
            } else {
                0.0
            };
            tables.push(TableStats {
                table: t.name(),
                engine: store.engine().name(),
                keys: totals.keys,
                raw_bytes: totals.raw_bytes,
                stored_bytes: totals.stored_bytes,
                compression_savings_pct: savings,
                engine_stats,
            });
        }
        let (segments, dictionaries) = self.indexed_stats().unzip();
        let segment_bytes = segments.as_ref().map_or(0, |s| s.file_bytes);
        Ok(StoreStats {
            layout: self.layout.name(),
            bodies: self.indexed.as_ref().map(|_| self.bodies.name()),
            ledger_records: self.indexed.as_ref().map(|_| self.ledger_form.name()),
            first_ledger: mark.first,
            last_ledger: mark.last,
            ledgers: mark.ledgers(),
            txs: mark.txs,
            batches: mark.batches,
            disk_bytes: tables
                .iter()
                .map(|t| t.engine_stats.disk_bytes)
                .sum::<u64>()
                + segment_bytes,
            tables,
            segments,
            dictionaries,
            writes_refused: self.writes_refused(),
        })
    }
}
