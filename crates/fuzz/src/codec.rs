//! The `codec` target: the stored forms the store reads back (tx and
//! ledger records, `indexed` tx bodies, zstd frames) and the keys and file
//! names it parses. The first byte picks the decoder; the rest is its
//! input.

use ledgerstore_db_api::codec::zstd_decompress;
use ledgerstore_db_api::{
    Decode, Decompress, DictSet, Dictionary, Encode, LedgerRecord, RAW_BODY, StoredLedger, TxBody,
    TxHash, TxPos, TxRecord, is_zstd_frame,
};
use ledgerstore_segment::{hashes, parse_file_name};
use ledgerstore_stellar::lake::parse_name;

/// Decoders, by the first byte modulo their count.
pub const DECODERS: [&str; 5] = ["tx record", "ledger record", "tx body", "zstd", "keys"];

/// Runs the decoder the first byte picks on the rest.
pub fn run(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    match pick as usize % DECODERS.len() {
        0 => tx_record(rest),
        1 => ledger_record(rest),
        2 => tx_body(rest),
        3 => zstd(rest),
        _ => keys(rest),
    }
}

/// A tx record that decodes is canonical: it re-encodes to its input.
fn tx_record(bytes: &[u8]) {
    if let Ok(rec) = TxRecord::decode(bytes) {
        assert!(
            rec.encode() == bytes,
            "a tx record does not re-encode to its input"
        );
    }
}

/// A ledger record that decodes is canonical, and a skeleton joined with
/// parts drawn from the input either fails or gives exactly the recorded
/// length and SHA-256 (a damaged length or cut table must not panic or
/// allocate past it).
fn ledger_record(bytes: &[u8]) {
    if let Ok(rec) = StoredLedger::decode(bytes) {
        assert!(
            rec.view().encode() == bytes,
            "a ledger record does not re-encode to its input"
        );
        if let ledgerstore_db_api::LedgerContent::Split(s) = &rec.content {
            let part = |tx: u32, p: ledgerstore_db_api::Part| -> Option<&[u8]> {
                let code = tx as usize * 3 + p.code() as usize;
                let from = code % bytes.len().max(1);
                let len = (code * 7 + 1) % 64;
                bytes.get(from..(from + len).min(bytes.len()))
            };
            if let Ok(raw) = s.join(rec.seq, part) {
                assert_eq!(raw.len(), s.raw_len as usize, "a join of another length");
                assert!(
                    ledgerstore_db_api::sha256(&raw) == s.sha256,
                    "a join that does not match its SHA-256"
                );
            }
        }
    }
    if let Ok(rec) = LedgerRecord::decode(bytes) {
        assert!(
            rec.encode() == bytes,
            "a whole ledger record does not re-encode to its input"
        );
    }
}

/// An `indexed` tx body: its framing re-encodes to its input, and its
/// frame (no dictionary is loaded, so only version 0 and raw bodies can
/// decode) either decodes to a canonical record or is refused.
fn tx_body(bytes: &[u8]) {
    let Ok(body) = TxBody::decompress(bytes) else {
        return;
    };
    assert!(
        body.to_bytes() == bytes,
        "a tx body does not re-frame to its input"
    );
    assert_eq!(
        TxBody::hash_of(bytes).ok(),
        Some(body.hash),
        "hash_of disagrees"
    );
    if let Ok(rec) = body.record(&DictSet::default()) {
        assert!(
            body.dict_version == 0 || body.dict_version == RAW_BODY,
            "a frame decoded with a dictionary not loaded"
        );
        if body.dict_version == RAW_BODY {
            // What a pack publishes of a raw body: a frame that decodes
            // to the same record, under the same hash.
            let packed = body
                .clone()
                .to_record_form(&DictSet::default(), 1)
                .expect("a raw body recompresses");
            assert!(
                packed.dict_version == 0 && packed.hash == body.hash,
                "a packed raw body is a plain frame under its hash"
            );
            let back = packed
                .record(&DictSet::default())
                .expect("a packed raw body decodes");
            assert!(back == rec, "a packed raw body holds its record");
        }
        let again = TxRecord::decode(&rec.encode()).expect("a decoded record decodes again");
        assert!(again == rec, "a tx body's record does not round-trip");
    }
}

/// A stored value of a compressed table: a frame that decompresses must
/// decode (or be refused) the same way as its contents. A `ledgers` value
/// without zstd's magic is a raw record (a format-3 dir's), read as it is
/// by every reader (`StoredLedger`, any version, skeletons included), and
/// one with the magic is never read as a raw record.
fn zstd(bytes: &[u8]) {
    let plain = zstd_decompress(bytes);
    let tx = TxRecord::decompress(bytes);
    let ledger = LedgerRecord::decompress(bytes);
    let stored = StoredLedger::decompress(bytes);
    if !is_zstd_frame(bytes) {
        assert_eq!(
            stored.as_ref().ok(),
            StoredLedger::decode(bytes).ok().as_ref(),
            "a raw ledgers value is its record"
        );
        assert_eq!(
            ledger.as_ref().ok(),
            LedgerRecord::decode(bytes).ok().as_ref(),
            "a raw ledgers value is its whole record"
        );
    }
    match plain {
        Ok(plain) => {
            assert_eq!(tx.ok(), TxRecord::decode(&plain).ok(), "tx record via zstd");
            if is_zstd_frame(bytes) {
                assert_eq!(
                    stored.ok(),
                    StoredLedger::decode(&plain).ok(),
                    "ledger record via zstd"
                );
                assert_eq!(
                    ledger.ok(),
                    LedgerRecord::decode(&plain).ok(),
                    "whole ledger record via zstd"
                );
            }
        }
        Err(_) => {
            assert!(tx.is_err(), "a tx record decoded from a frame zstd refused");
            assert!(
                !is_zstd_frame(bytes) || (stored.is_err() && ledger.is_err()),
                "a ledger record decoded from a frame zstd refused"
            );
        }
    }
}

/// Keys and file names parse only in their canonical form.
fn keys(bytes: &[u8]) {
    if let Ok(pos) = TxPos::decode(bytes) {
        assert_eq!(pos.encode().as_slice(), bytes, "tx position key");
    }
    if let Ok(hash) = TxHash::decode(bytes) {
        assert_eq!(hash.encode().as_ref(), bytes, "tx hash key");
    }
    if let Ok(seq) = u32::decode(bytes) {
        assert_eq!(seq.encode().as_ref(), bytes, "ledger key");
    }
    if let Some(v) = Dictionary::parse_key(bytes) {
        assert_eq!(Dictionary::key(v).as_slice(), bytes, "dictionary key");
    }
    let Ok(name) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Some((first, last)) = parse_file_name(name) {
        assert_eq!(
            ledgerstore_segment::file_name(first, last),
            name,
            "segment file name"
        );
    }
    if let Some((first, last)) = hashes::parse_file_name(name) {
        assert_eq!(hashes::file_name(first, last), name, "hash list file name");
    }
    if let Ok(Some((start, end))) = parse_name(name) {
        assert!(
            start <= end,
            "{name}: a lake file name parsed to {start}..={end}"
        );
    }
}
