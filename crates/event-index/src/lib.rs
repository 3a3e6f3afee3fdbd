//! Immutable contract-event index files.
//!
//! One file indexes the events getEvents serves (stellar-rpc v28: the
//! transaction-level and operation events, never the diagnostic list; see
//! `ledgerstore_stellar::events`) of one closed ledger range
//! `first..=last`. Events are numbered by ordinal `0..n` in id order; the
//! file maps ordinals to ids and back, and holds posting lists of
//! ordinals:
//!
//! - per contract id (32 bytes, exact);
//! - per topic position (0 to 3) and value: the key is 64 bits of SHA-256
//!   over the position and the `SCVal` XDR bytes ([`topic_key`]);
//! - per type (`system`, `contract`; an event of type `diagnostic` among
//!   them is on neither list, so only filters without a type match it)
//!   and per topic count (0, 1, 2, 3, 4, more), so that a pattern's
//!   length is matched by the index too.
//!
//! A query ([`EventIndex::matches`]) turns getEvents' filters into unions
//! and intersections of these lists and walks them from the start id,
//! yielding candidates in id order until the caller stops; it never scans
//! events. Since topic keys are hashes, a candidate can be a false
//! positive (two values sharing a key, with odds about 2^-64 per pair):
//! the reader, which reads each event to serve it, confirms it with
//! [`Query::matches`] on the real topics.
//!
//! Files are written once ([`EventIndexBuilder`], or [`merge`] of adjacent
//! ranges' files), synced, and published by the caller's rename; an open
//! file ([`EventIndex`]) is memory-mapped.
//!
//! # File layout (all integers little-endian)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `LSEVTIDX` |
//! | 8 | 4 | format version: 2 |
//! | 12 | 4 | reserved (zero) |
//! | 16 | 4 | first ledger |
//! | 20 | 4 | last ledger |
//! | 24 | 8 | events `n` (below 2^32) |
//! | 32 | 8 | contract ids `c` |
//! | 40 | 8 | topic keys `t` |
//! | 48 | 4 | topic directory bits `d` (at most 24) |
//! | 52 | 4 | reserved (zero) |
//! | 56 | 144 | the 9 sections' offsets and lengths (`u64` pairs), in the order below |
//! | 200 | | `postings`: the lists of 2 ordinals or more, each as `postings.rs` describes: its length, its blocks' byte length, for lists of more than 512 blocks an upper table (the last ordinal of every 512th skip entry), a skip table of (last ordinal, end) per block of 128, the blocks' deltas bit-packed (`bitpacking`'s `BitPacker4x`), the last `< 128` as varint deltas |
//! | | `8 × (last − first + 2)` | `ledgers`: per ledger, its first ordinal and where its runs start (`u32` each); the last entry is `(n, runs length)` |
//! | | | `runs`: per ledger, its events' ids as runs `(Δtx, op, first index, count)`, varints (`ids.rs`) |
//! | | 64 | `fixed`: the refs of the lists of type `system`, type `contract`, and topic counts 0, 1, 2, 3, 4, more |
//! | | `40 × c` | `contracts`: sorted by id: the 32-byte contract id, its list's ref |
//! | | `4 × (2^d + 1)` | `directory`: for each `d`-bit prefix, the index of the first topic key with that prefix or more; the last entry is `t` |
//! | | `16 × t` | `topics`: sorted by key: the 64-bit key, its list's ref |
//! | | `4 × ⌈(last − first + 2) / 512⌉` | `ledger_sample`: the first ordinal of ledger table entries 0, 512, 1024, … (the last entry counts) |
//! | | `32 × ⌈c / 64⌉` | `contract_sample`: contract ids 0, 64, 128, … of `contracts` |
//! | | 32 | SHA-256 of everything before it |
//!
//! A list's ref (`u64`) is its offset in `postings`, or, with bit 63 set,
//! its only ordinal (inline: most topic values occur once), or `u64::MAX`
//! for an empty list.
//!
//! # Cold reads
//!
//! The map is advised random (`MADV_RANDOM`): a fault reads its page and
//! no more. Left to its default the kernel reads `read_ahead_kb` around
//! every fault of a file mapping (8 MiB on the benchmark VM: most of a
//! cold query's time was reading those, 28 MB a query at 10M events).
//! Opening reads the header, the ends of the ledger table and of the topic
//! directory (checks), and the two samples, which lie together at the end
//! of the file (one read, advised `WILLNEED`), onto the heap (1/512 of the
//! ledger table and 1/64 of the contract ids, 28 KB at 100M events).
//!
//! So a cold lookup of a contract id is a binary search in the heap sample
//! and one or two pages of `contracts`; of a topic value, one directory
//! page and one page of about 16 keys; then the list's head (its length,
//! upper table) and one page of its skip table, and one block per seek
//! (later seeks gallop forward from the block they are on). An id lookup
//! is one page of the ledger table (the sample narrows it to 512 entries;
//! a page of hits gallops from the previous hit's ledger) and a page of
//! the ledger's runs: a page of hits scattered over many ledgers costs
//! about a page of runs a hit, the floor of this layout.
//!
//! Reads that do not depend on each other are asked for together
//! (`MADV_WILLNEED` queues them and returns): at open, the checks' pages
//! and the samples; for a query, its contract entries, topic directory
//! entries and start ledger, then its topic keys and runs, then its lists'
//! heads, then their first seeks' skip pages, then their blocks; and
//! [`EventIndex::query`] finds a page's ordinals first, then asks for all
//! their ledger table pages, then all their runs pages. A cold query waits
//! for the disk some 8–10 times in sequence, however many lists or
//! scattered hits it has (see docs/benchmarks.md).
//!
//! Opening checks the header and that the sections tile the file exactly
//! with the sizes the counts imply (constant work); every read inside a
//! section is bounds-checked and every decoded block checked (increasing,
//! below `n`, ending at its skip entry), so a damaged or hostile file gives
//! [`EventIndexError::Corrupt`], never a panic or an allocation beyond one
//! block (and the samples, whose sizes the counts imply and the file
//! holds). [`EventIndex::verify`] checks the SHA-256 (for scrubs).

mod error;
mod eval;
mod ids;
mod keys;
mod merge;
mod postings;
mod query;
mod read;
mod search;
mod varint;
mod write;

pub use error::{EventIndexError, EventIndexResult};
pub use eval::{Hit, Matches, Step};
pub use keys::{TOPIC_POSITIONS, topic_key};
pub use merge::merge;
pub use postings::BLOCK;
pub use query::{Filter, MAX_CONTRACT_IDS, MAX_FILTERS, MAX_TOPICS, Query, Segment, TopicPattern};
pub use read::EventIndex;
pub use write::EventIndexBuilder;

const MAGIC: &[u8; 8] = b"LSEVTIDX";
const VERSION: u32 = 2;
const HEADER: usize = 200;
const SECTIONS: usize = 9;
const SECTION_NAMES: [&str; SECTIONS] = [
    "postings",
    "ledgers",
    "runs",
    "fixed",
    "contracts",
    "directory",
    "topics",
    "ledger_sample",
    "contract_sample",
];
/// Ledger table entries per ledger sample entry (4 KiB of table).
const LEDGER_SAMPLE: usize = 512;
/// Contract entries per contract sample entry (2,560 bytes of entries).
const CONTRACT_SAMPLE: usize = 64;

/// The posting-list codec on its own, for `examples/posting_codecs.rs`
/// (which measures it against `roaring`); not part of the API.
#[doc(hidden)]
pub mod codec {
    use crate::error::EventIndexResult;
    use crate::postings::{Cursor, List};

    /// Appends the encoding of `vals` (strictly increasing, at least 2).
    pub fn encode(vals: &[u32], out: &mut Vec<u8>) {
        crate::postings::encode(vals, out);
    }

    /// Up to `limit` ordinals `≥ from` of the intersection of the lists
    /// encoded in `lists` (one list: its page), by seeks.
    pub fn page(
        lists: &[&[u8]],
        universe: u32,
        from: u32,
        limit: usize,
    ) -> EventIndexResult<Vec<u32>> {
        let mut cs = Vec::new();
        for l in lists {
            cs.push(Cursor::new(List::parse(l, universe)?, universe));
        }
        let mut out = Vec::new();
        let mut x = from;
        'next: while out.len() < limit {
            for c in cs.iter_mut() {
                match c.seek(x)? {
                    None => break 'next,
                    Some(y) if y > x => {
                        x = y;
                        continue 'next;
                    }
                    Some(_) => {}
                }
            }
            out.push(x);
            x += 1;
        }
        Ok(out)
    }
}
