//! How a replica's disk cache keeps a version-4 pack's dictionary (the
//! entry `d/<key>`): a form byte, then either the dictionary unpacked
//! ([`DictReader::unpacked`]: raw with its CRC-32; ~1 MiB at the default
//! budget, opened again without decompressing anything) or the bytes the
//! pack stores ([`Header::dict_range`]: a zstd frame with its CRC-32,
//! ~160–180 KB, decompressed again at each open).
//!
//! Which one is chosen as each dictionary is cached ([`choose`]): unpacked
//! while the unpacked dictionaries of every pack the manifest lists would
//! take at most half of the pack pieces' budget, stored beyond that. A
//! cache that holds every stored dictionary but not every unpacked one
//! would fetch one again (a GET, a decompression and a write) where the
//! stored form would only have been decompressed: at pubnet's ~6,400
//! packs, the default 10 GiB cache's pieces (2.5 GiB) hold every stored
//! dictionary (~1.1 GB) with room for frames, and ~2,500 unpacked ones at
//! most (docs/benchmarks.md, "Dictionaries kept as stored where the
//! unpacked ones do not fit"). Both
//! forms are read whatever is chosen now: the choice changes as the
//! manifest grows, and the cache is emptied at every start.

use ledgerstore_pack::{DictReader, Header, PackError, PackResult};

/// The entry's first byte: the dictionary unpacked.
const UNPACKED: u8 = b'u';
/// The entry's first byte: the dictionary as its pack stores it.
const STORED: u8 = b's';

/// The form a dictionary is cached in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DictForm {
    /// Raw with its CRC-32: ~6× the stored bytes, ~0.3 ms less CPU an open.
    Unpacked,
    /// The pack's own bytes.
    Stored,
}

impl DictForm {
    /// Its name in logs.
    pub(crate) fn name(self) -> &'static str {
        match self {
            DictForm::Unpacked => "unpacked",
            DictForm::Stored => "stored",
        }
    }
}

/// The form for a dictionary of `raw_len` bytes raw, where the manifest
/// lists `packs` packs and the pack pieces may take `pieces_limit` bytes
/// of the disk cache: unpacked while `packs` such dictionaries unpacked
/// take at most half of it (the rest is the frames'), stored otherwise.
pub(crate) fn choose(packs: usize, raw_len: usize, pieces_limit: u64) -> DictForm {
    let unpacked = (packs as u64).saturating_mul((raw_len as u64).saturating_add(4));
    if unpacked <= pieces_limit / 2 {
        DictForm::Unpacked
    } else {
        DictForm::Stored
    }
}

/// The parts of the entry of a dictionary in `form`: `raw` its raw bytes,
/// `stored` the pack's bytes of it (written one after another, so neither
/// is copied again).
pub(crate) fn parts<'a>(
    form: DictForm,
    raw: &'a [u8],
    crc: &'a [u8; 4],
    stored: &'a [u8],
) -> Vec<&'a [u8]> {
    match form {
        DictForm::Unpacked => vec![&[UNPACKED], raw, crc],
        DictForm::Stored => vec![&[STORED], stored],
    }
}

/// The dictionary of an entry, checked (the unpacked form's CRC-32; the
/// stored form as a fetched copy is checked against pack header `h`).
pub(crate) fn open(entry: &[u8], h: &Header) -> PackResult<(DictReader, DictForm)> {
    match entry.split_first() {
        Some((&UNPACKED, rest)) => Ok((DictReader::of_unpacked(rest)?, DictForm::Unpacked)),
        Some((&STORED, rest)) => Ok((DictReader::open(h, rest)?, DictForm::Stored)),
        Some((b, _)) => Err(PackError::Format(format!(
            "a cached dictionary of unknown form {b:#04x}"
        ))),
        None => Err(PackError::Format("an empty cached dictionary".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpacked_while_every_packs_dictionary_takes_half_the_pieces_budget() {
        let mib = 1 << 20;
        // The default 10 GiB cache: 2.5 GiB of pieces.
        let pieces = (10u64 << 30) / 4;
        assert_eq!(choose(100, mib, pieces), DictForm::Unpacked);
        assert_eq!(choose(1_279, mib, pieces), DictForm::Unpacked);
        assert_eq!(choose(1_280, mib, pieces), DictForm::Stored);
        // Pubnet in packs of 10,000 ledgers.
        assert_eq!(choose(6_400, mib, pieces), DictForm::Stored);
        // The boundary, each dictionary's CRC-32 counted.
        assert_eq!(choose(2, 98, 408), DictForm::Unpacked);
        assert_eq!(choose(2, 98, 407), DictForm::Stored);
        assert_eq!(choose(0, mib, 0), DictForm::Unpacked);
        assert_eq!(choose(usize::MAX, usize::MAX, u64::MAX), DictForm::Stored);
    }

    /// A version-4 header whose dictionary is `stored` (its CRC-32 included).
    fn header_of(stored: &[u8]) -> Header {
        Header {
            version: 4,
            first: 1,
            last: 10,
            max_entry: 0,
            bodies: 0,
            ledger_table: 64,
            body_table: 100,
            size: 100 + stored.len() as u64,
            max_raw: 0,
        }
    }

    #[test]
    fn both_forms_open_checked_and_an_unknown_one_is_refused() {
        let sample: Vec<u8> = (0..4096u32).flat_map(|i| (i % 251).to_be_bytes()).collect();
        let dict = ledgerstore_pack::FrameDict::sampled([sample], 8192, 3).expect("dict");
        let raw = dict.raw();
        let stored = [dict.stored(), &crc32fast::hash(dict.stored()).to_be_bytes()].concat();
        let h = header_of(&stored);
        let crc = DictReader::unpacked_crc(raw);
        for form in [DictForm::Unpacked, DictForm::Stored] {
            let entry = parts(form, raw, &crc, &stored).concat();
            let (d, got) = open(&entry, &h).expect("opens");
            assert_eq!((got, d.raw_len()), (form, raw.len()), "{}", form.name());
            let mut bad = entry.clone();
            let at = entry.len() / 2;
            bad[at] ^= 0x01;
            assert!(open(&bad, &h).is_err(), "{}: a flipped byte", form.name());
        }
        assert_eq!(
            parts(DictForm::Unpacked, raw, &crc, &stored).concat()[1..],
            DictReader::unpacked(raw)
        );
        // The stored form read against another pack's header (a
        // dictionary range one byte longer) is refused.
        let other = Header {
            size: h.size + 1,
            ..h
        };
        let entry = parts(DictForm::Stored, raw, &crc, &stored).concat();
        let Err(e) = open(&entry, &other) else {
            panic!("a stored entry opened against another header")
        };
        let e = e.to_string();
        assert!(e.contains("expected"), "{e}");
        assert!(open(&[], &h).is_err());
        let unknown = [&[b'x'][..], &DictReader::unpacked(raw)].concat();
        let Err(e) = open(&unknown, &h) else {
            panic!("an entry of unknown form opened")
        };
        let e = e.to_string();
        assert!(e.contains("unknown form 0x78"), "{e}");
    }
}
