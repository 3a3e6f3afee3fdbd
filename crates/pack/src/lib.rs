//! The published cold tier's formats (ARCHITECTURE.md, "Published
//! ranges"): the pack of one closed base range ([`format`]) and the
//! manifest that lists published objects ([`manifest`]). Bytes only: the
//! object-store traffic is `ledgerstore-cold`'s.

pub mod dict;
mod error;
pub mod format;
pub mod frame;
#[cfg(test)]
mod frame_tests;
pub mod manifest;
#[cfg(test)]
mod tests;
pub mod writer;

pub use dict::{DictReader, FrameDict, dict_samples};
pub use error::{PackError, PackResult};
pub use format::MAX_DICT;
pub use format::{Entry, Header, LedgerEntry, sha256, sha256_file};
pub use frame::{
    DEFAULT_DICT_KIB, DEFAULT_FRAME_LEVEL, FrameEncoder, Framed, LedgerFrame, MAX_FRAME_RAW,
    PackForm, frame_content, frame_ledger,
};
pub use manifest::{DictRef, EventsGeometry, EventsRef, Manifest, Object, PackRef, SegmentRef};
pub use writer::{PackInfo, PackWriter};
