//! Stellar-native input for ledgerstore.
//!
//! - [`extract`]: a `LedgerCloseMeta` (V0, V1, V2) becomes a
//!   [`LedgerInput`](ledgerstore_db_api::LedgerInput): seq and close time
//!   from the header, and per transaction its hash, envelope, result
//!   (`TransactionResultPair`) and meta (`TransactionMeta`) as exact XDR, in
//!   apply order, with every hash computed from its envelope under the
//!   network passphrase and cross-checked against the result's.
//! - [`walk`]: extraction without a full decode: the byte ranges of the
//!   header fields, envelopes, result pairs and metas in a raw
//!   `LedgerCloseMeta`, found by a skipper generated from the XDR schema,
//!   and tx hashes from those slices. [`extract::ledger_from_xdr`] uses it;
//!   the full decode ([`extract::reference`]) is its reference.
//! - [`events`]: the contract events stellar-rpc's `getEvents` serves,
//!   cut out of a transaction's meta by the same skip functions, with
//!   stellar-rpc's ids; a typed decode is its reference.
//! - [`file`]: batch files (`LedgerCloseMetaBatch`) and record-marked
//!   streams, zstd or not.
//! - [`lake`]: SEP-54 data lakes (Galexie's layout) behind any
//!   `object_store`, read by the keys its `.config.json` implies.
//! - [`follow`]: a lake read from a ledger on, then polled for new files.
//! - [`source`]: any of those read and decoded ahead of the writer, in
//!   parallel and in order, with bounded memory.
//! - [`lead`]: decoded units queued for the writer within a bound on
//!   their bytes, so decoding goes on while a batch commits.
//!
//! The reference decode uses the `stellar-xdr` crate, whose schema the
//! walker is generated from. Nothing here writes.

pub mod error;
pub mod events;
pub mod extract;
pub mod file;
pub mod follow;
pub mod lake;
pub mod lead;
pub mod network;
pub mod source;
pub mod walk;

pub use error::{StellarError, StellarResult};
pub use extract::{extract, ledger_from_xdr};
pub use file::{ReadLimits, Shape, decode_file};
pub use follow::{FollowEvent, follow};
pub use lake::{DataLake, LakeFile, Listing, Schema};
pub use lead::{Forwarded, Lead, Led, forward};
pub use network::Network;
pub use source::{Chunk, Opened, SourceOptions, SourceSpec, open};
