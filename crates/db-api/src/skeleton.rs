//! Skeleton ledgers: a ledger's raw bytes with its transactions' parts
//! taken out, and what puts them back.
//!
//! A Stellar `LedgerCloseMeta` holds every transaction's envelope, result
//! and meta, about 90% of its bytes, and the `indexed` layout stores each
//! of them again as the transaction's body. [`split`] removes the ranges
//! the source named ([`Cut`]s) from `raw`; [`Skeleton::join`] inserts the
//! bodies' parts back and checks the result against the SHA-256 of the
//! whole raw, recorded at split time. So each transaction is stored once,
//! and a damaged skeleton or body is an error naming the ledger, never
//! other bytes.
//!
//! A cut is stored as the skeleton offset it is inserted at, the apply
//! index and the part: its length is the part's, found in the body.

use sha2::{Digest, Sha256};

use crate::error::{DbError, DbResult};
use crate::input::{Cut, Part, TxInput};

/// Where one part goes back: at skeleton offset `at` (the number of
/// skeleton bytes before it), the `part` of apply index `tx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkelCut {
    /// Skeleton bytes before the part. Non-decreasing along the cut list.
    pub at: u32,
    /// Apply index of the transaction whose part goes here.
    pub tx: u32,
    /// Which part.
    pub part: Part,
}

/// A ledger's raw bytes minus its cut ranges, and how to rebuild them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skeleton {
    /// `raw` with every cut range removed.
    pub bytes: Vec<u8>,
    /// The cuts in raw order.
    pub cuts: Vec<SkelCut>,
    /// Length of the whole raw.
    pub raw_len: u32,
    /// SHA-256 of the whole raw: what a join must reproduce.
    pub sha256: [u8; 32],
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The order of `cuts` by offset, after checking each one against `raw`
/// and `txs`: the transaction exists, its part is not empty, the range is
/// inside `raw`, holds exactly the part's bytes, and overlaps no other
/// cut. The first fault is [`DbError::BadCut`] naming the cut's index.
pub fn check_cuts(raw: &[u8], cuts: &[Cut], txs: &[TxInput]) -> DbResult<Vec<usize>> {
    let bad = |cut: usize, reason: String| DbError::BadCut { cut, reason };
    if raw.len() > u32::MAX as usize && !cuts.is_empty() {
        return Err(bad(0, format!("raw is {} bytes, over 4 GiB", raw.len())));
    }
    let mut seen = vec![false; txs.len() * 3];
    for (i, c) in cuts.iter().enumerate() {
        let Some(tx) = txs.get(c.tx as usize) else {
            return Err(bad(
                i,
                format!("names tx {}, but the ledger has {}", c.tx, txs.len()),
            ));
        };
        let code = c.tx as usize * 3 + c.part.code() as usize;
        if std::mem::replace(&mut seen[code], true) {
            return Err(bad(i, format!("names tx {} {} again", c.tx, c.part.name())));
        }
        let part = tx.part(c.part);
        if part.is_empty() {
            return Err(bad(
                i,
                format!(
                    "tx {} {} is empty; an empty part is never cut",
                    c.tx,
                    c.part.name()
                ),
            ));
        }
        let start = c.offset as usize;
        let held = start
            .checked_add(part.len())
            .and_then(|end| raw.get(start..end));
        match held {
            None => {
                return Err(bad(
                    i,
                    format!(
                        "{}..+{} is outside raw ({} bytes)",
                        start,
                        part.len(),
                        raw.len()
                    ),
                ));
            }
            // A part walked out of `raw` is the slice its cut names
            // (same address, same length): equal without comparing.
            Some(b) if !std::ptr::eq(b.as_ptr(), part.as_ptr()) && b != part => {
                return Err(bad(
                    i,
                    format!("the bytes at {start} are not tx {} {}", c.tx, c.part.name()),
                ));
            }
            Some(_) => {}
        }
    }
    let mut order: Vec<usize> = (0..cuts.len()).collect();
    order.sort_unstable_by_key(|&i| cuts[i].offset);
    let end =
        |i: usize| cuts[i].offset as usize + txs[cuts[i].tx as usize].part(cuts[i].part).len();
    for w in order.windows(2) {
        if end(w[0]) > cuts[w[1]].offset as usize {
            return Err(bad(
                w[1],
                format!("starts at {}, inside cuts[{}]", cuts[w[1]].offset, w[0]),
            ));
        }
    }
    Ok(order)
}

/// `raw` without the ranges `cuts` name (checked by [`check_cuts`]), the
/// cut table, and the SHA-256 of `raw`.
pub fn split(raw: &[u8], cuts: &[Cut], txs: &[TxInput]) -> DbResult<Skeleton> {
    let order = check_cuts(raw, cuts, txs)?;
    let cut_bytes: usize = cuts
        .iter()
        .map(|c| txs[c.tx as usize].part(c.part).len())
        .sum();
    let mut bytes = Vec::with_capacity(raw.len() - cut_bytes);
    let mut table = Vec::with_capacity(cuts.len());
    let mut from = 0usize;
    for i in order {
        let c = cuts[i];
        let start = c.offset as usize;
        bytes.extend_from_slice(&raw[from..start]);
        table.push(SkelCut {
            at: bytes.len() as u32,
            tx: c.tx,
            part: c.part,
        });
        from = start + txs[c.tx as usize].part(c.part).len();
    }
    bytes.extend_from_slice(&raw[from..]);
    Ok(Skeleton {
        bytes,
        cuts: table,
        raw_len: raw.len() as u32,
        sha256: sha256(raw),
    })
}

impl Skeleton {
    /// The whole raw of ledger `seq`: the skeleton with each cut's part
    /// (`part(tx, part)`) put back, checked against the recorded length
    /// and SHA-256. Any mismatch is [`DbError::Reassembly`] naming `seq`.
    pub fn join<'a>(
        &self,
        seq: u32,
        part: impl Fn(u32, Part) -> Option<&'a [u8]>,
    ) -> DbResult<Vec<u8>> {
        let damaged = |detail: String| DbError::Reassembly { seq, detail };
        let raw_len = self.raw_len as usize;
        // The parts first, and their lengths against the record's, so a
        // damaged length or cut table allocates nothing past the ledger.
        let mut parts = Vec::with_capacity(self.cuts.len());
        let mut total = self.bytes.len();
        for c in &self.cuts {
            let p = part(c.tx, c.part)
                .ok_or_else(|| damaged(format!("no body holds tx {} {}", c.tx, c.part.name())))?;
            total = total.saturating_add(p.len());
            if total > raw_len {
                return Err(damaged(format!(
                    "tx {} {} runs past the recorded {raw_len} bytes",
                    c.tx,
                    c.part.name()
                )));
            }
            parts.push(p);
        }
        if total != raw_len {
            return Err(damaged(format!(
                "the skeleton and its parts hold {total} bytes, the record says {raw_len}"
            )));
        }
        let mut out = Vec::with_capacity(raw_len);
        let mut from = 0usize;
        for (c, p) in self.cuts.iter().zip(parts) {
            let at = c.at as usize;
            let gap = self.bytes.get(from..at).ok_or_else(|| {
                damaged(format!(
                    "cut at skeleton offset {at} is out of order or past its end"
                ))
            })?;
            out.extend_from_slice(gap);
            out.extend_from_slice(p);
            from = at;
        }
        out.extend_from_slice(self.bytes.get(from..).unwrap_or_default());
        if out.len() != raw_len {
            return Err(damaged(format!(
                "reassembled {} bytes, the record says {raw_len}",
                out.len()
            )));
        }
        if sha256(&out) != self.sha256 {
            return Err(damaged(
                "the reassembled bytes do not match the recorded SHA-256".into(),
            ));
        }
        Ok(out)
    }

    /// Appends the stored form: `u32 raw_len, 32-byte sha256, u32 cut
    /// count, per cut (varint at-delta, varint tx × 3 + part), bytes
    /// skeleton`.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.raw_len.to_be_bytes());
        out.extend_from_slice(&self.sha256);
        out.extend_from_slice(&(self.cuts.len() as u32).to_be_bytes());
        let mut prev = 0u32;
        for c in &self.cuts {
            put_varint(out, u64::from(c.at - prev));
            put_varint(out, u64::from(c.tx) * 3 + u64::from(c.part.code()));
            prev = c.at;
        }
        crate::codec::put_bytes(out, &self.bytes);
    }

    /// Upper bound of [`Self::encode_into`]'s length.
    pub(crate) fn encoded_len(&self) -> usize {
        4 + 32 + 4 + 15 * self.cuts.len() + 4 + self.bytes.len()
    }

    /// Reads the stored form of a ledger of `txs` transactions: each cut
    /// names one of them, and no cut lies past the skeleton's end.
    pub(crate) fn decode(r: &mut crate::codec::Reader<'_>, txs: usize) -> DbResult<Self> {
        let corrupt = |detail: String| DbError::Corrupt {
            what: "ledger record",
            detail,
        };
        let raw_len = r.u32()?;
        let sha256 = r.array::<32>()?;
        let count = r.u32()? as usize;
        // Each cut takes at least two bytes: no allocation from a length.
        let mut cuts = Vec::with_capacity(count.min(r.remaining() / 2));
        // Each (tx, part) is cut at most once: a repeated one would let a
        // small record name gigabytes of parts.
        let mut seen = vec![0u64; (txs * 3).div_ceil(64)];
        let mut at = 0u64;
        for i in 0..count {
            let delta = get_varint(r)?;
            at = at
                .checked_add(delta)
                .filter(|a| *a <= u64::from(u32::MAX))
                .ok_or_else(|| corrupt(format!("cut {i} lies past 4 GiB")))?;
            let code = get_varint(r)?;
            let (tx, part) = (code / 3, (code % 3) as u32);
            if tx >= txs as u64 {
                return Err(corrupt(format!(
                    "cut {i} names tx {tx} at {at}, of {txs} transactions"
                )));
            }
            let bit = code as usize;
            if seen[bit / 64] & (1 << (bit % 64)) != 0 {
                return Err(corrupt(format!(
                    "cut {i} names tx {tx} {} again",
                    Part::from_code(part).unwrap_or(Part::Meta).name()
                )));
            }
            seen[bit / 64] |= 1 << (bit % 64);
            cuts.push(SkelCut {
                at: at as u32,
                tx: tx as u32,
                part: Part::from_code(part).unwrap_or(Part::Meta),
            });
        }
        let bytes = r.bytes()?;
        if at > bytes.len() as u64 {
            return Err(corrupt(format!(
                "a cut at {at} lies past the {}-byte skeleton",
                bytes.len()
            )));
        }
        Ok(Skeleton {
            bytes,
            cuts,
            raw_len,
            sha256,
        })
    }
}

/// LEB128: seven bits a byte, low first.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads what [`put_varint`] writes, and only that: a varint with a
/// redundant zero byte or bits past 64 is corrupt, so every record that
/// decodes re-encodes to its own bytes.
fn get_varint(r: &mut crate::codec::Reader<'_>) -> DbResult<u64> {
    let corrupt = |detail: &str| DbError::Corrupt {
        what: "ledger record",
        detail: detail.into(),
    };
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = r.u8()?;
        if shift == 63 && b > 1 {
            return Err(corrupt("a varint runs past 64 bits"));
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            if b == 0 && shift > 0 {
                return Err(corrupt("a varint is not in its shortest form"));
            }
            return Ok(v);
        }
    }
    Err(corrupt("a varint runs past 64 bits"))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn tx(envelope: &[u8], result: &[u8], meta: &[u8]) -> TxInput {
        TxInput {
            hash: vec![0; 32],
            envelope: Bytes::copy_from_slice(envelope),
            result: Bytes::copy_from_slice(result),
            meta: Bytes::copy_from_slice(meta),
            alias: None,
        }
    }

    fn cut(offset: u32, tx: u32, part: Part) -> Cut {
        Cut { offset, tx, part }
    }

    /// raw = H E0 E1 x R1 M1 R0 M0 t: envelopes in set order (0, 1),
    /// results and metas in another order, as a Stellar ledger has them.
    fn ledger() -> (Vec<u8>, Vec<TxInput>, Vec<Cut>) {
        let raw = b"HHe0e0E1E1E1xR1m1m1r0M0M0t".to_vec();
        let txs = vec![tx(b"e0e0", b"r0", b"M0M0"), tx(b"E1E1E1", b"R1", b"m1m1")];
        let cuts = vec![
            cut(2, 0, Part::Envelope),
            cut(6, 1, Part::Envelope),
            cut(13, 1, Part::Result),
            cut(15, 1, Part::Meta),
            cut(19, 0, Part::Result),
            cut(21, 0, Part::Meta),
        ];
        (raw, txs, cuts)
    }

    fn part_of<'a>(txs: &'a [TxInput]) -> impl Fn(u32, Part) -> Option<&'a [u8]> {
        |t, p| txs.get(t as usize).map(|t| t.part(p))
    }

    #[test]
    fn split_keeps_only_the_skeleton_and_join_restores_raw() {
        let (raw, txs, cuts) = ledger();
        let s = split(&raw, &cuts, &txs).expect("split");
        assert_eq!(s.bytes, b"HHxt");
        assert_eq!(s.raw_len as usize, raw.len());
        assert_eq!(s.join(9, part_of(&txs)).expect("join"), raw);
        // Given out of order, the same skeleton.
        let mut rev = cuts.clone();
        rev.reverse();
        assert_eq!(split(&raw, &rev, &txs).expect("split"), s);
        // No cuts: the skeleton is raw.
        let whole = split(&raw, &[], &txs).expect("split");
        assert_eq!(whole.bytes, raw);
    }

    /// Parts that are slices of `raw` itself, as Stellar extraction hands
    /// them over: a slice at its cut's offset is taken without comparing
    /// bytes; a slice of `raw` from elsewhere is still compared, so one
    /// holding other bytes is refused and one holding the same bytes is
    /// not.
    #[test]
    fn parts_sliced_from_raw_are_checked_by_where_they_sit() {
        let (raw, owned, cuts) = ledger();
        let raw = Bytes::from(raw);
        let sliced = |at: &[(usize, usize, usize)]| -> Vec<TxInput> {
            at.iter()
                .map(|&(e, r, m)| {
                    let of = |start: usize, part: Part| {
                        let len = owned.iter().find_map(|t| {
                            let p = t.part(part);
                            raw[start..].starts_with(p).then_some(p.len())
                        });
                        raw.slice(start..start + len.expect("a part starts there"))
                    };
                    TxInput {
                        hash: vec![0; 32],
                        envelope: of(e, Part::Envelope),
                        result: of(r, Part::Result),
                        meta: of(m, Part::Meta),
                        alias: None,
                    }
                })
                .collect()
        };
        let txs = sliced(&[(2, 19, 21), (6, 13, 15)]);
        assert_eq!(txs[1].envelope, owned[1].envelope);
        let s = split(&raw, &cuts, &txs).expect("slices at their cuts");
        assert_eq!(s, split(&raw, &cuts, &owned).expect("copies"));
        // Tx 1's result sliced from where tx 0's sits ("r0" at 19, cut
        // at 13 where "R1" is): other bytes, refused as a copy would be.
        let wrong = sliced(&[(2, 19, 21), (6, 19, 15)]);
        assert!(matches!(
            check_cuts(&raw, &cuts, &wrong),
            Err(DbError::BadCut { cut: 2, .. })
        ));
        // Tx 0's result sliced from a second "r0" after the tail, its
        // cut still at 19: the same bytes elsewhere, compared and taken.
        let mut longer = raw.to_vec();
        longer.extend_from_slice(b"r0");
        let longer = Bytes::from(longer);
        let mut elsewhere = owned.clone();
        elsewhere[0].result = longer.slice(26..28);
        assert_eq!(
            check_cuts(&longer, &cuts, &elsewhere).expect("same bytes"),
            check_cuts(&longer, &cuts, &owned).expect("copies")
        );
    }

    #[test]
    fn encoding_round_trips() {
        let (raw, txs, cuts) = ledger();
        let s = split(&raw, &cuts, &txs).expect("split");
        let mut out = Vec::new();
        s.encode_into(&mut out);
        assert!(out.len() <= s.encoded_len());
        let mut r = crate::codec::Reader::new("t", &out);
        assert_eq!(Skeleton::decode(&mut r, 2).expect("decode"), s);
        r.finish().expect("all read");
        // A cut naming a transaction the ledger lacks is corrupt.
        let mut r = crate::codec::Reader::new("t", &out);
        assert!(Skeleton::decode(&mut r, 1).is_err());
    }

    #[test]
    fn varints_round_trip_and_only_the_shortest_form_reads() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut r = crate::codec::Reader::new("t", &out);
            assert_eq!(get_varint(&mut r).expect("read"), v);
        }
        for bad in [&[0x80u8, 0x00][..], &[0xff; 10][..], &[0x80; 11][..]] {
            let mut r = crate::codec::Reader::new("t", bad);
            assert!(get_varint(&mut r).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bad_cuts_are_refused_naming_the_cut() {
        let (raw, txs, cuts) = ledger();
        let refused = |cuts: &[Cut], txs: &[TxInput], want: usize| match split(&raw, cuts, txs) {
            Err(DbError::BadCut { cut, .. }) => assert_eq!(cut, want, "{cuts:?}"),
            other => panic!("{cuts:?}: {other:?}"),
        };
        let with = |i: usize, c: Cut| {
            let mut v = cuts.clone();
            v[i] = c;
            v
        };
        // Wrong bytes, out of bounds, missing tx.
        refused(&with(1, cut(7, 1, Part::Envelope)), &txs, 1);
        refused(&with(5, cut(24, 0, Part::Meta)), &txs, 5);
        refused(&with(0, cut(2, 5, Part::Envelope)), &txs, 0);
        // Overlap: the same range twice.
        let mut twice = cuts.clone();
        twice.push(cuts[2]);
        assert!(matches!(
            split(&raw, &twice, &txs),
            Err(DbError::BadCut { .. })
        ));
        // An empty part is never cut.
        let mut empty = txs.clone();
        empty[0].result.clear();
        refused(&cuts, &empty, 4);
    }

    #[test]
    fn damage_is_a_reassembly_error_naming_the_ledger() {
        let (raw, txs, cuts) = ledger();
        let s = split(&raw, &cuts, &txs).expect("split");
        let is_reassembly =
            |r: DbResult<Vec<u8>>| matches!(r, Err(DbError::Reassembly { seq: 9, .. }));
        // A body that changed (same length, other bytes; other length).
        let mut other = txs.clone();
        other[1].meta = Bytes::from_static(b"m1m2");
        assert!(is_reassembly(s.join(9, part_of(&other))));
        other[1].meta = Bytes::from_static(b"m1m1m1");
        assert!(is_reassembly(s.join(9, part_of(&other))));
        // A skeleton byte flipped; a missing body.
        let mut flipped = s.clone();
        flipped.bytes[0] ^= 1;
        assert!(is_reassembly(flipped.join(9, part_of(&txs))));
        assert!(is_reassembly(s.join(9, part_of(&txs[..1]))));
        let msg = s
            .join(9, part_of(&txs[..1]))
            .expect_err("missing")
            .to_string();
        assert!(msg.contains("ledger 9"), "{msg}");
    }

    /// A record names each part once, and its offsets fit in 4 GiB: a
    /// small damaged record cannot name gigabytes of parts, and every
    /// record that decodes re-encodes to its own bytes.
    #[test]
    fn repeated_parts_and_offset_overflow_are_corrupt() {
        let (raw, txs, cuts) = ledger();
        let s = split(&raw, &cuts, &txs).expect("split");
        let decode = |sk: &Skeleton| {
            let mut out = Vec::new();
            sk.encode_into(&mut out);
            Skeleton::decode(&mut crate::codec::Reader::new("t", &out), 2)
        };
        let mut again = s.clone();
        again.cuts.push(SkelCut { at: 4, ..s.cuts[3] });
        let err = decode(&again).expect_err("a repeated part");
        assert!(err.to_string().contains("again"), "{err}");
        // check_cuts refuses the same part at another, non-overlapping
        // offset too.
        let (mut raw2, mut cuts2) = (raw.clone(), cuts.clone());
        raw2.extend_from_slice(b"r0");
        cuts2.push(cut(raw.len() as u32, 0, Part::Result));
        match split(&raw2, &cuts2, &txs) {
            Err(DbError::BadCut { cut, reason }) => {
                assert!(reason.contains("again"), "{reason}");
                assert_eq!(cut, 6);
            }
            other => panic!("{other:?}"),
        }
        // Deltas that add past u64 (or past u32) are corrupt, not a panic.
        let mut out = Vec::new();
        out.extend_from_slice(&(raw.len() as u32).to_be_bytes());
        out.extend_from_slice(&[0; 32]);
        out.extend_from_slice(&2u32.to_be_bytes());
        put_varint(&mut out, 1);
        put_varint(&mut out, 0);
        put_varint(&mut out, u64::MAX);
        put_varint(&mut out, 1);
        crate::codec::put_bytes(&mut out, b"HHxt");
        let err =
            Skeleton::decode(&mut crate::codec::Reader::new("t", &out), 2).expect_err("overflow");
        assert!(err.to_string().contains("4 GiB"), "{err}");
    }

    /// A recorded length that disagrees with the skeleton and its parts
    /// is refused before anything of that length is allocated.
    #[test]
    fn a_damaged_length_is_refused_before_allocating_it() {
        let (raw, txs, cuts) = ledger();
        let mut s = split(&raw, &cuts, &txs).expect("split");
        s.raw_len = u32::MAX;
        let err = s.join(9, part_of(&txs)).expect_err("too long");
        assert!(err.to_string().contains("the record says"), "{err}");
        s.raw_len = 3;
        let err = s.join(9, part_of(&txs)).expect_err("too short");
        assert!(err.to_string().contains("runs past"), "{err}");
    }
}
