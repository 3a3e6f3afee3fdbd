//! Finding a lake's newest and oldest ledgers.
//!
//! - Newest, where the store lists in key order (S3, GCS): the first batch
//!   file of a listing, one request, since the reversed hex prefixes sort
//!   the newest partition and file first.
//! - Newest elsewhere: from a file known to exist, probe 1, 2, 4, … files
//!   ahead until one is missing, then bisect: about 2·log2(n) HEADs.
//! - Oldest: bisect for the first file that exists below the newest
//!   (a lake is contiguous from its oldest file to its newest).
//!
//! Both assume what SEP-54 promises: no holes between the oldest and the
//! newest file. A hole is found, and named, when the range is read.

use futures::StreamExt;

use super::{DataLake, EXT_LONG, EXT_SHORT, Listing, Schema, parse_name};
use crate::error::StellarResult;
use std::sync::atomic::Ordering;

impl DataLake {
    /// The newest ledger the lake holds (`None`: none). `known`, a ledger
    /// known to be in the lake, starts the probe where the store cannot
    /// list in order.
    pub async fn newest(&self, known: Option<u32>) -> StellarResult<Option<u32>> {
        let Some(schema) = self.schema().await?.cloned() else {
            return Ok(self.files().await?.last().map(|f| f.end));
        };
        match self.listing {
            Listing::Ordered => self.newest_listed().await,
            Listing::Unordered if known.is_none() => Ok(self.files().await?.last().map(|f| f.end)),
            _ => self.newest_probed(&schema, known).await,
        }
    }

    async fn newest_listed(&self) -> StellarResult<Option<u32>> {
        let mut listing = self.store.list(None);
        while let Some(item) = listing.next().await {
            let meta = item.map_err(|e| self.store_err("(listing)", &e))?;
            let Some(name) = meta.location.filename() else {
                continue;
            };
            match parse_name(name) {
                Ok(Some((_, end))) => {
                    let ext = if name.ends_with(".xdr.zstd") {
                        EXT_LONG
                    } else {
                        EXT_SHORT
                    };
                    self.ext.store(ext, Ordering::Relaxed);
                    return Ok(Some(end));
                }
                Ok(None) => {}
                Err(e) => return Err(self.err(e)),
            }
        }
        Ok(None)
    }

    async fn newest_probed(
        &self,
        schema: &Schema,
        known: Option<u32>,
    ) -> StellarResult<Option<u32>> {
        let start = match known {
            Some(k) if self.exists(schema, k).await? => k,
            Some(_) => return Ok(None),
            None => match self.first_probe(schema).await? {
                Some(s) => s,
                None => return Ok(None),
            },
        };
        let lpb = u64::from(schema.ledgers_per_batch);
        let max = u64::from(u32::MAX) / lpb;
        // Batch indices: `lo` exists, `hi` (when found) does not.
        let mut lo = u64::from(start) / lpb;
        let mut step = 1u64;
        let mut hi = loop {
            let cand = lo + step;
            if cand > max {
                break max + 1;
            }
            if !self.exists(schema, (cand * lpb) as u32).await? {
                break cand;
            }
            lo = cand;
            step *= 2;
        };
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.exists(schema, (mid * lpb) as u32).await? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(Some(schema.batch_end((lo * lpb) as u32)))
    }

    /// A lake that cannot be listed and has no known ledger: its first
    /// file is looked for at ledgers 0, 1 and 2 (pubnet's history starts
    /// at 2).
    async fn first_probe(&self, schema: &Schema) -> StellarResult<Option<u32>> {
        for seq in [0, 1, 2] {
            if self.exists(schema, seq).await? {
                return Ok(Some(seq));
            }
        }
        Err(self.err(
            "cannot be listed, and holds no file for ledgers 0..=2: give the first ledger to \
             read (--from, or follow.from for the daemon)",
        ))
    }

    /// The oldest ledger the lake holds, given its newest.
    pub async fn oldest(&self, newest: u32) -> StellarResult<Option<u32>> {
        let Some(schema) = self.schema().await?.cloned() else {
            return Ok(self.files().await?.first().map(|f| f.start));
        };
        if self.listing == Listing::Unordered {
            return Ok(self.files().await?.first().map(|f| f.start));
        }
        let lpb = u64::from(schema.ledgers_per_batch);
        // Batch indices: `hi` exists; find the first that does.
        let mut hi = u64::from(newest) / lpb;
        if !self.exists(&schema, (hi * lpb) as u32).await? {
            return Ok(None);
        }
        let mut lo = 0u64;
        if self.exists(&schema, 0).await? {
            return Ok(Some(0));
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.exists(&schema, (mid * lpb) as u32).await? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        // The first file may begin before the history does (pubnet's
        // starts at ledger 2): the ledgers outside are dropped on read.
        Ok(Some((hi * lpb) as u32))
    }
}
