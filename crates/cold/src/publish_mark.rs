//! Before a writer publishes more to a location, its own history must hold
//! the ledger the location's newest manifest was published up to (the
//! mark): one store has one writer, and a second history would interleave.
//!
//! The manifest records `mark_record_sha256`, taken of the record as its
//! writer stored it: a zstd frame in a format-1 or 2 data dir (also the
//! pack's bytes), the raw record in a format-3 dir. So a hash of this dir's
//! record as stored, or as packed (a format-3 dir's raw record compressed
//! at its level), settles the common cases without a read. A recorded hash
//! of another form or level (history re-ingested into a dir of another
//! format, or at another zstd level, publishing on at the same location)
//! is settled by the records themselves: the mark's record is read from
//! the newest pack (checked against its entry's CRC) and compared,
//! decompressed, with this dir's.

use std::sync::Arc;

use ledgerstore_db_api::ledger_record_bytes;
use ledgerstore_pack::format::HEADER;
use ledgerstore_pack::{Header, Manifest, sha256};
use ledgerstore_store::{Ledgerstore, StoreError};

use crate::error::{ColdError, ColdResult};
use crate::remote::Remote;

/// Fails with [`ColdError::Diverged`] unless this dir stores the same
/// ledger record as the one `m` was published up to.
pub(crate) async fn check_mark(
    store: &Arc<Ledgerstore>,
    remote: &Remote,
    m: &Manifest,
) -> ColdResult<()> {
    let at = m.mark;
    let s = Arc::clone(store);
    let local = tokio::task::spawn_blocking(move || -> ColdResult<_> {
        let Some(value) = s.stored_ledger_value(at)? else {
            return Ok(None);
        };
        let packed = s.stored_ledger(at)?.map(|(p, _)| p);
        Ok(Some((value, packed)))
    })
    .await
    .map_err(|e| ColdError::Task(e.to_string()))??;
    let diverged = |why: String| {
        ColdError::Diverged(format!(
            "{} holds manifest {} published up to ledger {at}, {why}: another writer's \
             history. One store has one writer; publish this data dir to another location",
            remote.location(),
            m.version
        ))
    };
    let Some((value, packed)) = local else {
        return Err(diverged("which this data dir does not store".to_string()));
    };
    let recorded = m.mark_record_sha256.as_str();
    if sha256(&value) == recorded || packed.as_deref().is_some_and(|p| sha256(p) == recorded) {
        return Ok(());
    }
    let published = published_record(remote, m).await?;
    let mine = ledger_record_bytes(&value).map_err(StoreError::from)?;
    if published.as_deref() == Some(mine.as_ref()) {
        return Ok(());
    }
    Err(diverged(format!(
        "whose record is not this data dir's ledger {at} (by its SHA-256 as stored and as \
         packed, and by the pack's record)"
    )))
}

/// The mark's record as the newest manifest's pack holds it,
/// decompressed; None when no pack of `m` holds the mark.
async fn published_record(remote: &Remote, m: &Manifest) -> ColdResult<Option<Vec<u8>>> {
    let at = m.mark;
    let Some(p) = m.pack_of(at) else {
        return Ok(None);
    };
    let key = p.object.key.as_str();
    let damaged = |e: String| ColdError::damaged(key, format!("ledger {at}'s record: {e}"));
    let head = remote.get_range(key, 0..HEADER).await?;
    let h = Header::parse(&head).map_err(|e| damaged(e.to_string()))?;
    let (page, _) = h.ledger_page_of(at).map_err(|e| damaged(e.to_string()))?;
    let range = h.ledger_page(page).map_err(|e| damaged(e.to_string()))?;
    let page = remote.get_range(key, range).await?;
    let le = h
        .ledger_entry(&page, at)
        .map_err(|e| damaged(e.to_string()))?;
    let range = h
        .data_range(&le.record)
        .map_err(|e| damaged(e.to_string()))?;
    let bytes = remote.get_range(key, range).await?;
    le.record
        .check(&bytes)
        .map_err(|e| damaged(e.to_string()))?;
    let plain = ledger_record_bytes(&bytes).map_err(|e| damaged(e.to_string()))?;
    Ok(Some(plain.into_owned()))
}
