//! The published cold tier (ARCHITECTURE.md, "Published ranges"): object
//! storage as ledgerstore's distributed tier, with one writer and any
//! number of stateless readers.
//!
//! - [`publish`]: the writer uploads each closed base range of an
//!   `indexed` store as a pack, the segment files of the current tiling and
//!   the dictionaries, then creates the next manifest version with a
//!   conditional put.
//! - [`Replica`]: a read replica follows the newest manifest and answers
//!   the query APIs ([`ledgerstore_store::Reader`]) for the published
//!   ranges, through a bounded disk cache ([`DiskCache`]).
//! - [`Remote`]: the object store, with every read counted.

#[cfg(test)]
mod batch_tests;
mod cache;
mod choice;
mod dict_entry;
mod error;
#[cfg(test)]
mod events_tests;
pub mod failpoint;
#[cfg(test)]
mod faulty;
mod publish;
#[cfg(test)]
mod publish_form_tests;
mod publish_mark;
mod remote;
mod replica;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_faults;
mod tiered;

pub use cache::{CacheFigures, DiskCache};
pub use choice::PackChoice;
pub use error::{ColdError, ColdResult};
pub use ledgerstore_pack::PackForm;
pub use publish::{
    LocalEventFile, LocalEvents, PublishReport, init_publish_pool, publish, publish_as,
    publish_until, publish_with,
};
pub use remote::Remote;
pub use replica::{HeldMemory, Replica};
pub use tiered::{Tiered, evict, evict_until};
