//! Before a writer publishes more to a location, its own history must hold
//! the ledger the location's newest manifest was published up to (the
//! mark): one store has one writer, and a second history would interleave.
//!
//! The manifest records `mark_record_sha256`, taken of the record as its
//! writer stored it: a zstd frame in a format-1 or 2 data dir (also the
//! pack's bytes), the raw record in a format-3 dir. So a hash of this dir's
//! record as stored, or as packed (a format-3 dir's raw record compressed
//! at its level), settles the common cases without a read. A recorded hash
//! of another form (history re-ingested into a dir of another format, at
//! another zstd level, or by another route: a skeleton where the other
//! stored the whole ledger) is settled by what the records say: the mark's
//! record is read from the manifest's pack (its header checked against the
//! manifest, its entry against its CRC, its bytes against the recorded
//! hash), and both are compared by ledger, close time, hashes, aliases and
//! the whole ledger's length and SHA-256.

use std::sync::Arc;

use ledgerstore_db_api::codec::MAX_DECOMPRESSED_BYTES;
use ledgerstore_db_api::{
    Alias, LedgerContent, StoredLedger, TxHash, ledger_record_bytes, sha256 as digest,
};
use ledgerstore_pack::format::HEADER;
use ledgerstore_pack::{DictReader, LedgerFrame, Manifest, PackRef, sha256};
use ledgerstore_store::{Ledgerstore, StoreError};

use crate::error::{ColdError, ColdResult, blocking};
use crate::remote::Remote;

/// What a ledger record says about its ledger, whatever its form.
#[derive(Debug, PartialEq, Eq)]
struct Identity {
    seq: u32,
    close_time: u64,
    tx_hashes: Vec<TxHash>,
    aliases: Vec<Alias<TxHash>>,
    raw_len: u64,
    raw_sha256: [u8; 32],
}

impl Identity {
    fn of(rec: StoredLedger) -> Self {
        let (raw_len, raw_sha256) = match &rec.content {
            LedgerContent::Whole(raw) => (raw.len() as u64, digest(raw)),
            LedgerContent::Split(s) => (u64::from(s.raw_len), s.sha256),
        };
        Self {
            seq: rec.seq,
            close_time: rec.close_time,
            tx_hashes: rec.tx_hashes,
            aliases: rec.aliases,
            raw_len,
            raw_sha256,
        }
    }
}

/// This dir's ledger at the mark, against the recorded hash.
enum Local {
    /// Not stored here.
    Missing,
    /// Its record as stored or as packed hashes to the recorded hash.
    Matches,
    /// It hashes otherwise: what it says, to compare with the pack's.
    Differs(Identity),
}

/// Fails with [`ColdError::Diverged`] unless this dir stores the same
/// ledger as the one `m` was published up to; with
/// [`ColdError::Damaged`] when that takes the pack's record and it cannot
/// be read or does not match the manifest.
pub(crate) async fn check_mark(
    store: &Arc<Ledgerstore>,
    remote: &Remote,
    m: &Manifest,
) -> ColdResult<()> {
    let at = m.mark;
    let recorded = m.mark_record_sha256.clone();
    let s = Arc::clone(store);
    let local = blocking(move || {
        let Some(value) = s.stored_ledger_value(at)? else {
            return Ok(Local::Missing);
        };
        if sha256(&value) == recorded {
            return Ok(Local::Matches);
        }
        let packed = s.stored_ledger(at)?.map(|(p, _)| p);
        if packed.as_deref().is_some_and(|p| sha256(p) == recorded) {
            return Ok(Local::Matches);
        }
        let rec = StoredLedger::decode(&ledger_record_bytes(&value).map_err(StoreError::from)?)
            .map_err(StoreError::from)?;
        Ok(Local::Differs(Identity::of(rec)))
    })
    .await?;
    let head = || {
        format!(
            "{} holds manifest {} published up to ledger {at}",
            remote.location(),
            m.version
        )
    };
    let mine = match local {
        Local::Missing => {
            return Err(ColdError::Diverged(format!(
                "{}, which this data dir does not store (never ingested, or evicted): this \
                 dir does not continue it. One store has one writer; publish this data dir \
                 to another location",
                head()
            )));
        }
        Local::Matches => return Ok(()),
        Local::Differs(mine) => mine,
    };
    let Some(p) = m.pack_of(at) else {
        return Err(ColdError::Diverged(format!(
            "{}, whose record's SHA-256 is not this dir's ledger {at} as stored or as packed, \
             and no pack of the manifest holds it to compare: another writer's history",
            head()
        )));
    };
    let theirs = published_identity(remote, m, p)
        .await
        .map_err(|e| match e {
            ColdError::Damaged { object, detail } => ColdError::Damaged {
                object,
                detail: format!(
                    "cannot tell whether this data dir continues manifest {} (ledger {at}'s \
                 record hashes differently here): {detail}",
                    m.version
                ),
            },
            e => e,
        })?;
    if theirs == mine {
        return Ok(());
    }
    Err(ColdError::Diverged(format!(
        "{}, whose record (read from its pack) is not this data dir's ledger {at}: another \
         writer's history. One store has one writer; publish this data dir to another \
         location",
        head()
    )))
}

/// What the mark's record in pack `p` of `m` says: the header checked
/// against the manifest, the entry against its CRC and the manifest's
/// `mark_record_sha256` (of the bytes, or of the record they hold), the
/// record against its ledger.
async fn published_identity(remote: &Remote, m: &Manifest, p: &PackRef) -> ColdResult<Identity> {
    let at = m.mark;
    let key = p.object.key.clone();
    let damaged = |e: String| ColdError::damaged(&key, e);
    let head = remote.get_range(&key, 0..HEADER).await?;
    let h = p.header(&head).map_err(damaged)?;
    let (page, _) = h.ledger_page_of(at).map_err(|e| damaged(e.to_string()))?;
    let range = h.ledger_page(page).map_err(|e| damaged(e.to_string()))?;
    let page = remote.get_range(&key, range).await?;
    let le = h
        .ledger_entry(&page, at)
        .map_err(|e| damaged(e.to_string()))?;
    let range = h
        .data_range(&le.record)
        .map_err(|e| damaged(e.to_string()))?;
    if range.end - range.start > MAX_DECOMPRESSED_BYTES as u64 {
        return Err(damaged(format!(
            "ledger {at}'s record is {} bytes, more than any record",
            range.end - range.start
        )));
    }
    let bytes = remote.get_range(&key, range).await?;
    // A version-4 pack's frames need its dictionary (one more ranged GET).
    let dict = match h.dict_range() {
        Some(r) => Some(remote.get_range(&key, r).await?),
        None => None,
    };
    le.record
        .check(&bytes)
        .map_err(|e| damaged(e.to_string()))?;
    let recorded = m.mark_record_sha256.clone();
    blocking(move || {
        let damaged = |e: String| ColdError::damaged(&key, e);
        // A pack of ledger frames holds the record as stored inside its
        // ledger's frame.
        let bytes = if h.frames() {
            let dict = dict
                .map(|d| DictReader::open(&h, &d))
                .transpose()
                .map_err(|e| damaged(e.to_string()))?;
            let f = LedgerFrame::open(&h, &le, &bytes, dict.as_ref())
                .map_err(|e| damaged(format!("ledger {at}: {e}")))?;
            f.record().to_vec()
        } else {
            bytes.to_vec()
        };
        let plain = ledger_record_bytes(&bytes).map_err(|e| damaged(e.to_string()))?;
        if sha256(&bytes) != recorded && sha256(&plain) != recorded {
            return Err(damaged(format!(
                "ledger {at}'s record matches neither way the manifest's mark_record_sha256"
            )));
        }
        let rec = StoredLedger::decode(&plain).map_err(|e| damaged(e.to_string()))?;
        if rec.seq != at {
            return Err(damaged(format!(
                "the table's entry for ledger {at} holds ledger {}'s record",
                rec.seq
            )));
        }
        Ok(Identity::of(rec))
    })
    .await
}
