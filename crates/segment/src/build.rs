//! Building a segment file (and, for a base range, its hash list).

use std::path::Path;

use crate::repeat::{self, Repeat};
use crate::writer::{PART_KEYS, Retry, SegmentWriter};
use crate::{
    KeyScheme, MAX_SALTS, MPH_PREFIX, MPH_SALTED_NH, SegmentError, SegmentInfo, SegmentResult,
    TxPos, fresh_salt, hex,
};

/// Builds a segment from `(hash, position)` pairs of one range.
#[derive(Debug)]
pub struct SegmentBuilder {
    pub(crate) first: u32,
    pub(crate) last: u32,
    pub(crate) entries: Vec<([u8; 32], TxPos)>,
}

impl SegmentBuilder {
    /// A builder for `first..=last`.
    pub fn new(first: u32, last: u32) -> SegmentResult<Self> {
        if first > last {
            return Err(SegmentError::Invalid(format!(
                "segment range {first}..={last} is empty"
            )));
        }
        Ok(Self {
            first,
            last,
            entries: Vec::new(),
        })
    }

    /// Adds one transaction. Positions must lie in the range.
    pub fn push(&mut self, hash: [u8; 32], pos: TxPos) -> SegmentResult<()> {
        if pos.seq < self.first || pos.seq > self.last {
            return Err(SegmentError::Invalid(format!(
                "tx {} at ledger {} lies outside the segment range {}..={}",
                hex(&hash),
                pos.seq,
                self.first,
                self.last
            )));
        }
        self.entries.push((hash, pos));
        Ok(())
    }

    /// Keys added so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no key was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Builds the segment and writes it to `path` (fsynced). The caller
    /// publishes it by renaming; see [`publish`](crate::publish). Any set
    /// of distinct hashes builds; a hash pushed twice is refused by name.
    pub fn write(self, path: &Path) -> SegmentResult<SegmentInfo> {
        self.write_with(path, None, MPH_SALTED_NH, &mut fresh_salt, PART_KEYS)
    }

    /// [`write`](Self::write), and also the range's hash list to
    /// `hashes` (fsynced; see [`crate::hashes`]), the source later merges
    /// and repairs rebuild from.
    pub fn write_with_hashes(self, path: &Path, hashes: &Path) -> SegmentResult<SegmentInfo> {
        self.write_with(
            path,
            Some(hashes),
            MPH_SALTED_NH,
            &mut fresh_salt,
            PART_KEYS,
        )
    }

    /// Sorts the entries into ordinal order (ledger, then apply order) and
    /// returns the per-ledger first ordinals, refusing repeated positions,
    /// non-dense apply indexes and repeated hashes by name.
    fn order(&mut self, kind: u32) -> SegmentResult<Vec<u32>> {
        let ledgers = (self.last - self.first) as usize + 1;
        let n = self.entries.len();
        if u32::try_from(n).is_err() {
            return Err(SegmentError::Invalid(format!(
                "{n} keys exceed a segment's 2^32 limit: use a smaller range"
            )));
        }
        self.entries.sort_unstable_by_key(|e| e.1);
        if let Some(w) = self.entries.windows(2).find(|w| w[0].1 == w[1].1) {
            return Err(SegmentError::Invalid(format!(
                "two hashes at ledger {} index {}",
                w[0].1.seq, w[0].1.index
            )));
        }
        let mut counts = vec![0u32; ledgers];
        for (_, pos) in &self.entries {
            let li = (pos.seq - self.first) as usize;
            counts[li] = counts[li].max(pos.index + 1);
        }
        let mut offsets = vec![0u32; ledgers + 1];
        for (li, c) in counts.iter().enumerate() {
            offsets[li + 1] = offsets[li] + c;
        }
        if offsets[ledgers] as usize != n {
            return Err(SegmentError::Invalid(format!(
                "apply indexes are not dense: {} positions for {n} keys (a ledger's txs must be 0..count)",
                offsets[ledgers]
            )));
        }
        // No MPH separates identical keys: refuse a repeated hash by name.
        let e = &self.entries;
        match repeat::find(e.len(), |i| &e[i].0, kind == MPH_PREFIX) {
            Some(Repeat::Hash(a, b)) => Err(SegmentError::Invalid(format!(
                "tx hash {} appears twice, at ledger {} index {} and ledger {} index {}",
                hex(&e[a].0),
                e[a].1.seq,
                e[a].1.index,
                e[b].1.seq,
                e[b].1.index
            ))),
            Some(Repeat::Prefix(a, _)) => Err(SegmentError::Invalid(format!(
                "two hashes share the 128-bit prefix {} (MPH kind 1)",
                hex(&e[a].0[..16])
            ))),
            None => Ok(offsets),
        }
    }

    /// [`write`](Self::write) with an optional hash list, MPH `kind`, a
    /// source of salts (kind 2 draws one per attempt) and keys per
    /// partition. Kind 1 is only written by tests, to check that such
    /// files still open.
    pub(crate) fn write_with(
        mut self,
        path: &Path,
        hashes: Option<&Path>,
        kind: u32,
        salts: &mut dyn FnMut() -> [u64; 2],
        part_keys: u64,
    ) -> SegmentResult<SegmentInfo> {
        let offsets = self.order(kind)?;
        if let Some(hashes) = hashes {
            crate::hashes::write(
                hashes,
                self.first,
                self.last,
                &offsets,
                self.entries.iter().map(|e| &e.0),
            )?;
        }
        let n = self.entries.len();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let scheme = match kind {
                MPH_PREFIX => KeyScheme::Prefix,
                MPH_SALTED_NH => KeyScheme::salted(salts()),
                _ => {
                    return Err(SegmentError::Invalid(format!(
                        "cannot write MPH kind {kind}"
                    )));
                }
            };
            let mut w =
                SegmentWriter::with(self.first, self.last, n as u64, path, scheme, part_keys)?;
            for ledger in self.entries.chunk_by(|a, b| a.1.seq == b.1.seq) {
                let hashes: Vec<[u8; 32]> = ledger.iter().map(|e| e.0).collect();
                w.push_ledger(ledger[0].1.seq, &hashes)?;
            }
            match w.finish_or_retry(path)? {
                Ok(info) => return Ok(info),
                Err(_) if scheme != KeyScheme::Prefix && attempt < MAX_SALTS => {}
                Err(why) => {
                    return Err(SegmentError::Invalid(format!(
                        "no MPH separates these {n} keys (MPH kind {kind}, {attempt} attempts; {})",
                        match why {
                            Retry::Collision => "the last salt mixed two hashes to one key",
                            Retry::NoConverge => "the MPH build did not converge",
                        }
                    )));
                }
            }
        }
    }
}
