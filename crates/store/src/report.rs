//! The per-batch timing report, shaped like the field study's logs: time to
//! get ledgers from the source, to compress, and to compute (validate, check
//! and sort), then per store the I/O split into write / flush-or-commit /
//! compact, and the totals.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

/// I/O of one store in one batch.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StoreTiming {
    /// Table.
    pub table: &'static str,
    /// Engine.
    pub engine: &'static str,
    /// Puts into the engine.
    pub write_s: f64,
    /// Flush (RocksDB) or commit (MDBX).
    pub commit_s: f64,
    /// Forced compaction (RocksDB field setup).
    pub compact_s: f64,
    /// Keys written.
    pub keys: u64,
    /// Key + value bytes handed to the engine.
    pub bytes: u64,
}

impl StoreTiming {
    /// write + commit + compact.
    pub fn io_s(&self) -> f64 {
        self.write_s + self.commit_s + self.compact_s
    }
}

/// Everything measured about one committed batch.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BatchReport {
    /// Batch number in the data dir's life (1-based).
    pub batch: u64,
    /// Layout.
    pub layout: &'static str,
    /// First ledger written.
    pub first_ledger: u32,
    /// Last ledger written (the new mark).
    pub last_ledger: u32,
    /// Ledgers written.
    pub ledgers: u64,
    /// Transactions written.
    pub txs: u64,
    /// Getting the ledgers from the source (given by the caller).
    pub source_s: f64,
    /// Encoding + zstd, in parallel.
    pub compress_s: f64,
    /// Validation, the stored-hash check, and sorting.
    pub compute_s: f64,
    /// Writing the three stores (wall time; stores overlap where allowed).
    pub io_s: f64,
    /// Writing the mark.
    pub mark_s: f64,
    /// Wall time of the whole batch, source included.
    pub total_s: f64,
    /// Ledgers per second of `total_s`.
    pub ledgers_per_s: f64,
    /// Key + value bytes handed to the engines.
    pub bytes_written: u64,
    /// Bytes this process caused to be written to storage during the batch
    /// (`/proc/self/io` write_bytes), engines' background work included.
    pub device_bytes_written: Option<u64>,
    /// Per store.
    pub stores: Vec<StoreTiming>,
}

fn fmt_s(s: f64) -> String {
    if s >= 60.0 {
        format!("{}m{:.1}s", (s / 60.0).floor(), s % 60.0)
    } else if s >= 1.0 {
        format!("{s:.2}s")
    } else {
        format!("{:.1}ms", s * 1000.0)
    }
}

impl BatchReport {
    /// Human-readable block, one line per store, like the field study's log.
    pub fn render(&self) -> String {
        let mut out = format!(
            "batch #{} [{}] ledgers {}..={} ({} ledgers, {} tx) total {} ({:.1} ledgers/s)\n  \
             source {}  compress {}  compute {}  io {}  mark {}  bytes {:.1} MB",
            self.batch,
            self.layout,
            self.first_ledger,
            self.last_ledger,
            self.ledgers,
            self.txs,
            fmt_s(self.total_s),
            self.ledgers_per_s,
            fmt_s(self.source_s),
            fmt_s(self.compress_s),
            fmt_s(self.compute_s),
            fmt_s(self.io_s),
            fmt_s(self.mark_s),
            self.bytes_written as f64 / 1e6,
        );
        if let Some(d) = self.device_bytes_written {
            out.push_str(&format!("  device {:.1} MB", d as f64 / 1e6));
        }
        for s in &self.stores {
            out.push_str(&format!(
                "\n  {:<9} {:<8} write {:>9}  {} {:>9}  compact {:>9}  ({} keys)",
                s.table,
                s.engine,
                fmt_s(s.write_s),
                if s.engine == "mdbx" {
                    "commit"
                } else {
                    "flush "
                },
                fmt_s(s.commit_s),
                fmt_s(s.compact_s),
                s.keys
            ));
        }
        out
    }
}

/// Appends reports as JSON lines.
#[derive(Debug)]
pub struct JsonLinesSink {
    file: Mutex<File>,
}

impl JsonLinesSink {
    /// Opens `path` for appending.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            file: Mutex::new(file),
        })
    }

    /// Appends one report.
    pub fn write(&self, report: &BatchReport) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(report).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut f = self
            .file
            .lock()
            .map_err(|_| std::io::Error::other("report sink poisoned"))?;
        f.write_all(&line)
    }
}

/// Bytes written to storage by this process so far (`/proc/self/io`).
pub fn process_write_bytes() -> Option<u64> {
    ledgerstore_db_api::iostat::process_write_bytes()
}

pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_names_every_store_and_phase() {
        let r = BatchReport {
            batch: 3,
            layout: "hybrid",
            first_ledger: 1,
            last_ledger: 2000,
            ledgers: 2000,
            txs: 500_000,
            source_s: 1.0,
            compress_s: 2.0,
            compute_s: 0.1,
            io_s: 3.0,
            mark_s: 0.001,
            total_s: 75.0,
            ledgers_per_s: 26.6,
            bytes_written: 600_000_000,
            device_bytes_written: Some(700_000_000),
            stores: vec![StoreTiming {
                table: "tx_data",
                engine: "mdbx",
                write_s: 1.5,
                commit_s: 0.25,
                compact_s: 0.0,
                keys: 500_000,
                bytes: 1,
            }],
        };
        let text = r.render();
        assert!(
            text.contains("batch #3 [hybrid] ledgers 1..=2000"),
            "{text}"
        );
        assert!(text.contains("total 1m15.0s"), "{text}");
        assert!(
            text.contains("tx_data   mdbx     write     1.50s  commit   250.0ms"),
            "{text}"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("r.jsonl");
        let sink = JsonLinesSink::open(&p).expect("open");
        sink.write(&r).expect("write");
        sink.write(&r).expect("write");
        let text = std::fs::read_to_string(&p).expect("read");
        assert_eq!(text.lines().count(), 2);
        let v: serde_json::Value =
            serde_json::from_str(text.lines().next().expect("line")).expect("json");
        assert_eq!(v["stores"][0]["table"], "tx_data");
    }
}
