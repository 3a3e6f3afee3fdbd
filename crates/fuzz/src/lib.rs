//! Fuzz targets for every parser that reads bytes it did not write.
//!
//! Each target is a plain function from bytes to nothing that panics only
//! when the code under test breaks one of its own promises: a panic inside
//! a parser, an allocation it cannot make, or an answer that contradicts
//! what the input said (a decode that does not re-encode to its input, a
//! lookup outside the segment's range, a validator that accepts what the
//! rules refuse). Refusing bad input with an error is the expected outcome
//! for most inputs and is not a failure.
//!
//! Two drivers run the same functions:
//!
//! - AFL++ through `cargo-afl` (the `fuzz/` package beside the workspace,
//!   `scripts/fuzz.sh`): coverage-guided, on stable Rust, the long form
//!   (≥ 10M executions per target) and a short form in CI.
//! - The test suite (`tests/replay.rs`): every seed of [`seeds::seeds`],
//!   every saved crash under `regressions/<target>/`, and a bounded set of
//!   deterministic mutations of each seed.
//!
//! | target | reads | checks beyond "no panic" |
//! |---|---|---|
//! | `xdr` | a Stellar ledger file: zstd or plain, `LedgerCloseMetaBatch` or record-marked `LedgerCloseMeta` frames | the XDR walker and the full decode agree (both refuse, or the same ledgers; the walker alone refuses only non-canonical input), on the file and on a mutated word of each ledger; every tx hash is 32 bytes; each ledger's raw XDR extracts again to the same ledger |
//! | `codec` | tx and ledger records, tx bodies, zstd frames, table keys, file names | a decode re-encodes to exactly its input; a name parses only if it is the canonical name of what it parsed to |
//! | `segment` | a segment file (`seg-*.idx`) or a hash list (`hashes-*.bin`) | every position a lookup returns is inside the segment's range; the heap fingerprint filter never changes an answer; a hash list read back is in position order and has the header's count |
//! | `pack` | a published pack (header, table pages, entries; format versions 1 to 4, whose ledger frames are opened, in version 4 with the dictionary it holds) or a manifest | every entry a table yields is inside the data section, within the header's largest entry, and its bodies inside the body table (versions 3 and 4: a dictionary that opens is within MAX_DICT; a frame that opens holds the record and exactly the ledger's bodies, within the header's largest frame); a manifest that parses validates, re-parses, and finds each pack by its ledgers |
//! | `batch` | a batch of ledgers drawn from the bytes (`arbitrary`) | the validator accepts exactly the batches a reference implementation of the rules accepts, with the same plan |
//! | `events` | a `TransactionMeta` (with a drawn context and offset), a ledger's metas in sequence, or a whole `LedgerCloseMeta` | the skip-based event walk and the typed decode (`events::reference`) agree (both refuse, or the same events, ids and stage counters; the walk alone refuses only a non-canonical bool, as in `xdr`); the walk's verdict is the generated skipper's; a refusal changes nothing; spans lie in their meta and tile each event |
//! | `event_index` | an event index file, or events and queries drawn from the bytes | a file that opens answers with errors or hits in strictly increasing ordinals, pauses that move on, ids that map back; an index built from drawn events maps every ordinal to its id and back, answers every query as a naive scan of go-stellar-sdk's rules (at once, step by step, page by page), refuses exactly the requests getEvents refuses, and merged from adjacent parts is the very file built whole |

pub mod batch;
pub mod codec;
mod error;
pub mod event_index;
pub mod events;
pub mod pack;
mod scratch;
pub mod seeds;
pub mod segment;
pub mod xdr;

pub use error::{FuzzError, FuzzResult};

/// One fuzz target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Its name: the AFL binary, the corpus and the regressions folder.
    pub name: &'static str,
    /// What it reads.
    pub reads: &'static str,
    /// Runs one input.
    pub run: fn(&[u8]),
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "xdr",
        reads: "Stellar ledger files (zstd or plain; batch or record-marked stream)",
        run: xdr::run,
    },
    Target {
        name: "codec",
        reads: "tx and ledger records, tx bodies, zstd frames, keys and file names",
        run: codec::run,
    },
    Target {
        name: "segment",
        reads: "segment files and hash lists",
        run: segment::run,
    },
    Target {
        name: "pack",
        reads: "published packs (headers, table pages, entries) and manifests",
        run: pack::run,
    },
    Target {
        name: "batch",
        reads: "batches of ledgers for the batch validator",
        run: batch::run,
    },
    Target {
        name: "events",
        reads: "transaction metas and ledgers for the contract-event walk",
        run: events::run,
    },
    Target {
        name: "event_index",
        reads: "event index files, and events and queries to build and check one",
        run: event_index::run,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The targets' names, comma-separated.
pub fn target_names() -> String {
    TARGETS
        .iter()
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(", ")
}
