//! A table's keys kept in column families by range ("shards"), so that a
//! commit's cost does not grow with all of history.
//!
//! Every change of a column family's files (a flush, a compaction, and each
//! bulk ingestion, which makes two) rebuilds that column family's version:
//! RocksDB walks, sorts and checks every file of the level it changes. A
//! backfill's bulk files go to the bottom level and are never merged, one
//! or more a batch, so in one column family a commit cost ~1.1 ms more for
//! every thousand files stored (0.23 s at 200,000 files, 0.95 s at
//! 400,000; docs/benchmarks.md, "A commit's cost with history's files"),
//! and all of pubnet leaves ~1.4 million. With each range of keys in a
//! column family of its own, a commit rebuilds the version of the shards
//! it writes, whose files are bounded by the shard's span, not by history.
//!
//! A key's shard is its first 4 bytes, big-endian (shorter keys padded
//! with zeros), shifted right by the table's shift: for keys that begin
//! with a ledger sequence (`tx_bodies` positions, `ledgers`), a shift of
//! 18 puts 262,144 ledgers in a shard. Shards are named
//! `shard-XXXXXXXX` (the shard in 8 hex digits, so names sort as shards
//! do) and made when first written. The shift is recorded in the table
//! itself, as the name of an empty column family `ledgerstore-shards-N`
//! made with the table, and the table keeps it for its life. A table made
//! without one (by an earlier build, or with sharding off) keeps every key
//! in `default`, as it always did. The caller says which it expects (the
//! data dir's format records it), and a table of the other layout is
//! refused at open: an earlier build would read a sharded table's
//! `default` alone, and see it empty. Keys ascend from shard to shard, so
//! a scan reads the shards in order, at one snapshot.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use rocksdb::{BoundColumnFamily, DBWithThreadMode, MultiThreaded};

/// The RocksDB instance of a table: column families made while it is open.
pub(crate) type Db = DBWithThreadMode<MultiThreaded>;

/// A column family of [`Db`].
pub(crate) type Cf<'a> = Arc<BoundColumnFamily<'a>>;

/// The name of the empty column family that records a table's shift.
const MARKER: &str = "ledgerstore-shards-";

/// The column family every key of an unsharded table is in.
pub(crate) const DEFAULT: &str = "default";

/// The column family of `shard`.
pub(crate) fn shard_name(shard: u32) -> String {
    format!("shard-{shard:08x}")
}

/// The marker column family of a table sharded by `shift`.
pub(crate) fn marker_name(shift: u32) -> String {
    format!("{MARKER}{shift}")
}

/// The largest shift: a shard of all keys.
pub const MAX_SHIFT: u32 = 31;

/// How a sharded table splits its keys, and which shards it has.
#[derive(Debug)]
pub(crate) struct Shards {
    shift: u32,
    /// Shards whose column family exists.
    known: RwLock<BTreeSet<u32>>,
}

impl Shards {
    pub(crate) fn new(shift: u32, known: BTreeSet<u32>) -> Self {
        Self {
            shift,
            known: RwLock::new(known),
        }
    }

    /// The shard of `key`.
    pub(crate) fn of(&self, key: &[u8]) -> u32 {
        let mut b = [0u8; 4];
        let n = key.len().min(4);
        b[..n].copy_from_slice(&key[..n]);
        u32::from_be_bytes(b) >> self.shift
    }

    pub(crate) fn known(&self) -> std::sync::RwLockReadGuard<'_, BTreeSet<u32>> {
        self.known
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many shards have a column family.
    pub(crate) fn count(&self) -> u64 {
        self.known().len() as u64
    }

    pub(crate) fn add(&self, shard: u32) {
        self.known
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(shard);
    }
}

/// The layout an existing table's column families record: `None` for an
/// unsharded table (`default` alone), else its shift and shards. Any other
/// column family is refused: this build would not read it.
pub(crate) fn layout_of(names: &[String]) -> Result<Option<Shards>, String> {
    let mut shift = None;
    let mut shards = BTreeSet::new();
    for name in names {
        if name == DEFAULT {
            continue;
        }
        if let Some(s) = name.strip_prefix(MARKER) {
            let s: u32 = s
                .parse()
                .ok()
                .filter(|s| *s <= MAX_SHIFT && marker_name(*s) == *name)
                .ok_or_else(|| {
                    format!("column family {name:?}: not a shift from 0 to {MAX_SHIFT}")
                })?;
            if shift.replace(s).is_some() {
                return Err(format!("two shard markers, the second {name:?}"));
            }
        } else if let Some(hex) = name.strip_prefix("shard-")
            && let Ok(shard) = u32::from_str_radix(hex, 16)
            && shard_name(shard) == *name
        {
            shards.insert(shard);
        } else {
            return Err(format!(
                "column family {name:?} is not one this build reads (a table made by a later build?)"
            ));
        }
    }
    match shift {
        Some(shift) => {
            if let Some(last) = shards.last()
                && u64::from(*last) > u64::from(u32::MAX >> shift)
            {
                return Err(format!("shard {last} is past the last of shift {shift}"));
            }
            Ok(Some(Shards::new(shift, shards)))
        }
        None if shards.is_empty() => Ok(None),
        None => Err("shard column families without the marker that records their shift".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_key_s_shard_is_its_first_four_bytes_shifted() {
        let s = Shards::new(18, BTreeSet::new());
        assert_eq!(s.of(&[0, 0, 0, 0, 0x44]), 0);
        assert_eq!(s.of(&(262_143u32).to_be_bytes()), 0);
        assert_eq!(s.of(&(262_144u32).to_be_bytes()), 1);
        assert_eq!(s.of(&[0, 0x04, 0, 0, 9, 9, 9, 9]), 1);
        assert_eq!(s.of(&[0xff]), 0xff00_0000 >> 18);
        assert_eq!(s.of(&[]), 0);
        assert_eq!(Shards::new(0, BTreeSet::new()).of(&[0, 0, 1, 2]), 258);
        assert_eq!(Shards::new(31, BTreeSet::new()).of(&[0xff; 4]), 1);
    }

    #[test]
    fn names_sort_as_shards_do() {
        let mut n: Vec<String> = [300u32, 2, 0x1_0000, 17]
            .into_iter()
            .map(shard_name)
            .collect();
        n.sort();
        assert_eq!(
            n,
            names(&[
                "shard-00000002",
                "shard-00000011",
                "shard-0000012c",
                "shard-00010000"
            ])
        );
    }

    #[test]
    fn the_layout_is_read_from_the_column_families() {
        assert!(layout_of(&names(&["default"])).expect("plain").is_none());
        let s = layout_of(&names(&[
            "default",
            "ledgerstore-shards-18",
            "shard-00000003",
            "shard-00000001",
        ]))
        .expect("sharded")
        .expect("some");
        assert_eq!(s.shift, 18);
        assert_eq!(s.known().iter().copied().collect::<Vec<_>>(), vec![1, 3]);
        for (bad, says) in [
            (&["default", "other"][..], "not one this build reads"),
            (&["default", "shard-00000001"][..], "without the marker"),
            (&["default", "ledgerstore-shards-32"][..], "not a shift"),
            (&["default", "ledgerstore-shards-018"][..], "not a shift"),
            (
                &["default", "ledgerstore-shards-1", "ledgerstore-shards-2"][..],
                "two shard markers",
            ),
            (
                &["default", "ledgerstore-shards-31", "shard-00000002"][..],
                "past the last",
            ),
            (
                &["default", "ledgerstore-shards-1", "shard-1"][..],
                "not one this build reads",
            ),
        ] {
            let e = layout_of(&names(bad)).expect_err(says);
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}
