//! Layouts map each table to an engine. A layout is chosen when a data dir
//! is created and recorded in it.

use serde::{Deserialize, Serialize};

use crate::table::TableId;

/// Which engine serves a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// RocksDB (an LSM tree).
    Rocksdb,
    /// libmdbx (a copy-on-write B+tree).
    Mdbx,
}

impl EngineKind {
    /// Engine name for reports and metrics.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::Mdbx => "mdbx",
        }
    }
}

/// How the three tables are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// Ledgers in RocksDB; tx data and tx index in libmdbx: the design the
    /// degradation study measures. Flat while its B+trees fit in memory;
    /// beyond that every insert reads a leaf from disk.
    Hybrid,
    /// All three in RocksDB, with the field study's exact setup: a flush and
    /// a forced CompactRange of every table after each batch.
    Rocksdb,
    /// All three in RocksDB, configured well: BlobDB for tx data, bloom
    /// filters, background compaction only.
    RocksdbTuned,
    /// Transactions in ledger order: ledgers and tx bodies (keyed by
    /// position, so writes are sequential) in RocksDB, the hash index of
    /// the open ledger range in libmdbx, and immutable minimal-perfect-hash
    /// segments for closed ranges. The default for new data dirs: it won
    /// the out-of-cache study (docs/benchmarks.md).
    #[default]
    Indexed,
}

impl Layout {
    /// Every layout.
    pub const ALL: [Layout; 4] = [
        Layout::Hybrid,
        Layout::Rocksdb,
        Layout::RocksdbTuned,
        Layout::Indexed,
    ];

    /// The name used on the command line and in the data dir.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Hybrid => "hybrid",
            Layout::Rocksdb => "rocksdb",
            Layout::RocksdbTuned => "rocksdb-tuned",
            Layout::Indexed => "indexed",
        }
    }

    /// True when transactions are stored by position (`tx_bodies`) and
    /// found through a hot index plus segments (`tx_hot_index`).
    pub fn is_indexed(self) -> bool {
        self == Layout::Indexed
    }

    /// Which engine serves `table`.
    pub fn engine_for(self, table: TableId) -> EngineKind {
        match (self, table) {
            (Layout::Hybrid, TableId::TxData | TableId::TxIndex) => EngineKind::Mdbx,
            (Layout::Indexed, TableId::TxIndex) => EngineKind::Mdbx,
            _ => EngineKind::Rocksdb,
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Layout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Layout::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                format!("unknown layout {s:?}: expected hybrid, rocksdb, rocksdb-tuned or indexed")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_routes_hash_tables_to_mdbx() {
        assert_eq!(
            Layout::Hybrid.engine_for(TableId::Ledgers),
            EngineKind::Rocksdb
        );
        assert_eq!(Layout::Hybrid.engine_for(TableId::TxData), EngineKind::Mdbx);
        assert_eq!(
            Layout::Hybrid.engine_for(TableId::TxIndex),
            EngineKind::Mdbx
        );
        for t in TableId::ALL {
            assert_eq!(Layout::Rocksdb.engine_for(t), EngineKind::Rocksdb);
            assert_eq!(Layout::RocksdbTuned.engine_for(t), EngineKind::Rocksdb);
        }
        assert_eq!(
            Layout::Indexed.engine_for(TableId::TxData),
            EngineKind::Rocksdb
        );
        assert_eq!(
            Layout::Indexed.engine_for(TableId::TxIndex),
            EngineKind::Mdbx
        );
    }

    #[test]
    fn names_parse_back() {
        for l in Layout::ALL {
            assert_eq!(l.name().parse::<Layout>(), Ok(l));
        }
        let err = "lsm".parse::<Layout>().expect_err("unknown");
        assert!(err.contains("hybrid, rocksdb, rocksdb-tuned or indexed"));
    }
}
