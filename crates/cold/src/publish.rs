//! The writer's side: publish the closed ranges of an `indexed` store.
//!
//! One round ([`publish`]): read the newest manifest; check it continues
//! this data dir's history; for each closed base range it does not list,
//! write a pack to a local temp file and upload it; upload the segment
//! files of the current tiling and the dictionaries it lacks; then create
//! the next manifest version, conditionally. Objects are content-addressed
//! and uploaded before the manifest that names them, so a crash at any
//! step leaves the previous manifest whole and valid, and the next round
//! redoes what is missing (an object already there with the same size is
//! not uploaded again).
//!
//! With the writer's event index ([`publish_with`]), a round also lists
//! its files that lie wholly inside the published range (uploading the
//! new ones), so replicas answer getEvents without indexing the history
//! again; they index the ledgers past the last listed file from the
//! packs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ledgerstore_db_api::DictSet;
use ledgerstore_pack::manifest::{dict_key, events_key, pack_key, segment_key};
use ledgerstore_pack::{
    DictRef, EventsGeometry, EventsRef, FrameDict, FrameEncoder, Framed, Manifest, Object,
    PackForm, PackRef, PackWriter, SegmentRef, frame_content,
};
use ledgerstore_store::{ClosedRanges, Ledgerstore};

use crate::choice::PackChoice;
use crate::error::{ColdError, ColdResult, blocking};
use crate::failpoint;
use crate::publish_mark::check_mark;
use crate::remote::Remote;

/// What one round did.
#[derive(Debug, Clone, Default)]
pub struct PublishReport {
    /// The manifest version created (None: nothing new to publish).
    pub version: Option<u64>,
    /// The published mark after the round.
    pub mark: Option<u32>,
    /// Base ranges packed and published this round.
    pub packs: Vec<(u32, u32)>,
    /// The form they were written in (None when no pack was written).
    pub pack_form: Option<PackForm>,
    /// Objects uploaded, and their bytes.
    pub uploaded: u64,
    /// Bytes uploaded.
    pub uploaded_bytes: u64,
    /// Objects already present (a round redone after a crash).
    pub skipped: u64,
    /// Wall time of the round.
    pub took: Duration,
    /// Event files found damaged (their own SHA-256 trailer fails), not
    /// published: the caller has its event index rebuild them.
    pub damaged_events: Vec<(u32, u32)>,
}

/// The writer's contract-event index, to publish beside the packs.
#[derive(Debug, Clone)]
pub struct LocalEvents {
    /// Its window geometry (its marker's).
    pub geometry: EventsGeometry,
    /// Its files, oldest first, disjoint.
    pub files: Vec<LocalEventFile>,
}

/// One file of [`LocalEvents`].
#[derive(Debug, Clone)]
pub struct LocalEventFile {
    /// First ledger.
    pub first: u32,
    /// Last ledger.
    pub last: u32,
    /// Events it indexes.
    pub events: u64,
    /// Where it is.
    pub path: PathBuf,
}

/// Publishes what `store` has closed and `remote` lacks. `work` is a
/// directory for packs being written (emptied first). Event files the
/// previous manifest lists stay listed.
pub async fn publish(
    store: Arc<Ledgerstore>,
    remote: &Remote,
    work: &Path,
) -> ColdResult<PublishReport> {
    publish_with(store, remote, work, None).await
}

/// [`publish`], listing `events`' files that lie inside the published
/// range (or keeping the previous manifest's list when it covers more).
pub async fn publish_with(
    store: Arc<Ledgerstore>,
    remote: &Remote,
    work: &Path,
    events: Option<LocalEvents>,
) -> ColdResult<PublishReport> {
    publish_until(
        store,
        remote,
        work,
        events,
        Arc::new(AtomicBool::new(false)),
    )
    .await
}

/// [`publish_with`], ending early with [`ColdError::Stopped`] once `stop`
/// is set. A pack being written stops at its next chunk of ledgers (a
/// daemon shutting down waits for that, not for the whole pack: a pack
/// runs to minutes at production ranges), and the blocking work it did
/// is over by the time this returns, so the caller may close the store.
/// The previous manifest stays valid; the next round writes the pack
/// again.
pub async fn publish_until(
    store: Arc<Ledgerstore>,
    remote: &Remote,
    work: &Path,
    events: Option<LocalEvents>,
    stop: Arc<AtomicBool>,
) -> ColdResult<PublishReport> {
    publish_as(store, remote, work, events, stop, PackForm::default()).await
}

/// [`publish_until`], writing new packs in `form` (`[cold] pack_version`,
/// `pack_zstd_level` and `pack_dict_kib`: a [`PackForm`], or the store's
/// own, [`PackChoice::StoresOwn`]; [`publish_until`] writes version 2).
/// Packs already published stay as they are: a store's packs may mix
/// versions.
pub async fn publish_as(
    store: Arc<Ledgerstore>,
    remote: &Remote,
    work: &Path,
    events: Option<LocalEvents>,
    stop: Arc<AtomicBool>,
    form: impl Into<PackChoice>,
) -> ColdResult<PublishReport> {
    let choice = form.into();
    let t = Instant::now();
    let s = Arc::clone(&store);
    let closed = blocking(move || s.closed_ranges().map_err(ColdError::from)).await?;
    let prev = remote.newest_manifest().await?;
    let mut report = PublishReport {
        mark: prev.as_ref().map(|m| m.mark),
        ..PublishReport::default()
    };
    let Some(last) = closed.last() else {
        return Ok(report);
    };
    check_continues(prev.as_ref(), &closed, remote.location())?;
    check_dicts(prev.as_ref(), &closed.dicts, remote.location())?;
    if let Some(m) = &prev {
        check_mark(&store, remote, m).await?;
    }
    let events_grow = |m: &Manifest| {
        events
            .as_ref()
            .and_then(|l| run_end(l, m.first, m.mark))
            .is_some_and(|end| Some(end) > m.events_through())
    };
    if prev
        .as_ref()
        .is_some_and(|m| m.mark >= last && !events_grow(m))
    {
        report.took = t.elapsed();
        return Ok(report);
    }
    if let Some(s) = closed.segments.iter().find(|s| s.file.is_err()) {
        return Err(ColdError::NotReady(format!(
            "ledgers {}..={} are being repaired locally; publishing waits for the rebuild",
            s.first, s.last
        )));
    }
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work).map_err(ColdError::io(format!("create {}", work.display())))?;

    let mut packs: Vec<PackRef> = prev.as_ref().map(|m| m.packs.clone()).unwrap_or_default();
    // The store's own version is read only when a pack is to be written
    // (the form is not used otherwise).
    let form = if closed.base.len() > packs.len() {
        let form = choice.resolve(remote, prev.as_ref()).await?;
        report.pack_form = Some(form);
        form
    } else {
        PackForm::default()
    };
    for &(first, end) in closed.base.iter().skip(packs.len()) {
        let s = Arc::clone(&store);
        let path = work.join(format!("pack-{first:010}-{end:010}.tmp"));
        let p = path.clone();
        let dicts = Arc::clone(&closed.pack_dicts);
        let st = Arc::clone(&stop);
        let info = blocking(move || write_pack(&s, &p, first, end, &dicts, form, 0, &st)).await?;
        let key = pack_key(first, end, &info.sha256);
        upload(remote, &key, &path, info.header.size, &mut report).await?;
        let _ = std::fs::remove_file(&path);
        packs.push(PackRef {
            first,
            last: end,
            bodies: info.header.bodies,
            object: Object {
                key,
                size: info.header.size,
                sha256: info.sha256,
            },
        });
        report.packs.push((first, end));
        failpoint::point("publish.after_pack").await;
    }

    let mut segments = Vec::new();
    for seg in &closed.segments {
        let reuse = prev
            .iter()
            .flat_map(|m| &m.segments)
            .find(|r| (r.first, r.last) == (seg.first, seg.last));
        if let Some(r) = reuse {
            segments.push(r.clone());
            continue;
        }
        let path: PathBuf = seg.file.clone().map_err(ColdError::NotReady)?;
        let p = path.clone();
        let sha = blocking(move || Ok(ledgerstore_pack::sha256_file(&p)?)).await?;
        let size = std::fs::metadata(&path)
            .map_err(ColdError::io(format!("stat {}", path.display())))?
            .len();
        let key = segment_key(seg.first, seg.last, &sha);
        upload(remote, &key, &path, size, &mut report).await?;
        segments.push(SegmentRef {
            first: seg.first,
            last: seg.last,
            object: Object {
                key,
                size,
                sha256: sha,
            },
        });
    }

    // The previous manifest's dictionaries stay listed: its packs need
    // them, whatever this data dir still holds.
    let mut dicts: Vec<DictRef> = prev.as_ref().map(|m| m.dicts.clone()).unwrap_or_default();
    for (version, bytes) in &closed.dicts {
        if dicts.iter().any(|d| d.version == *version) {
            continue;
        }
        let sha = ledgerstore_pack::sha256(bytes);
        let key = dict_key(*version, &sha);
        let size = bytes.len() as u64;
        if remote.has(&key, size).await? {
            report.skipped += 1;
        } else {
            let path = work.join(format!("dict-{version}.tmp"));
            std::fs::write(&path, bytes)
                .map_err(ColdError::io(format!("write {}", path.display())))?;
            remote.upload(&key, &path).await?;
            report.uploaded += 1;
            report.uploaded_bytes += size;
        }
        dicts.push(DictRef {
            version: *version,
            object: Object {
                key,
                size,
                sha256: sha,
            },
        });
    }

    dicts.sort_by_key(|d| d.version);
    let first = packs.first().map_or(0, |p| p.first);
    let (events_geometry, events) =
        publish_events(prev.as_ref(), events, first, last, remote, &mut report).await?;
    let s = Arc::clone(&store);
    let mark_record_sha256 = blocking(move || {
        let bytes = s
            .stored_ledger_value(last)?
            .ok_or_else(|| ColdError::NotReady(format!("ledger {last} is not stored")))?;
        Ok(ledgerstore_pack::sha256(&bytes))
    })
    .await?;
    if report.packs.is_empty()
        && let Some(m) = &prev
        && m.mark == last
        && (m.events_geometry, &m.events) == (events_geometry, &events)
    {
        // Nothing new after all (the event files that looked new were not
        // published: damaged, or merged away mid-round).
        let _ = std::fs::remove_dir_all(work);
        report.took = t.elapsed();
        return Ok(report);
    }
    let manifest = Manifest {
        format: ledgerstore_pack::manifest::FORMAT,
        version: prev.as_ref().map_or(1, |m| m.version + 1),
        created_unix_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        writer: writer_name(&store),
        range_ledgers: closed.policy.range_ledgers,
        first,
        mark: last,
        mark_record_sha256,
        packs,
        segments,
        dicts,
        events_geometry,
        events,
    };
    manifest
        .validate()
        .map_err(|e| ColdError::Diverged(format!("the manifest this round built: {e}")))?;
    failpoint::point("publish.before_manifest").await;
    remote.create_manifest(&manifest).await?;
    tracing::info!(version = manifest.version, mark = last, "published");
    failpoint::point("publish.after_manifest").await;
    let _ = std::fs::remove_dir_all(work);
    report.version = Some(manifest.version);
    report.mark = Some(last);
    report.took = t.elapsed();
    Ok(report)
}

/// Where the run of `local`'s files from `first` ends, at or below
/// `mark`.
fn run_end(local: &LocalEvents, first: u32, mark: u32) -> Option<u32> {
    let mut end: Option<u32> = None;
    for f in local
        .files
        .iter()
        .filter(|f| f.first >= first && f.last <= mark)
    {
        if end.map_or(first, |e| e.saturating_add(1)) != f.first {
            break;
        }
        end = Some(f.last);
    }
    end
}

/// The event files the new manifest lists: the writer's files inside
/// `first..=mark`, the contiguous run from the lowest (uploading the new
/// ones; a file merged away meanwhile ends the run), unless the previous
/// manifest's list reaches further (a writer rebuilding its index keeps
/// publishing what replicas have).
async fn publish_events(
    prev: Option<&Manifest>,
    local: Option<LocalEvents>,
    first: u32,
    mark: u32,
    remote: &Remote,
    report: &mut PublishReport,
) -> ColdResult<(Option<EventsGeometry>, Vec<EventsRef>)> {
    let inherited = prev
        .filter(|m| m.mark <= mark && m.first == first)
        .map(|m| (m.events_geometry, m.events.clone()))
        .unwrap_or_default();
    let Some(local) = local else {
        return Ok(inherited);
    };
    let same_geometry = inherited.0.is_none_or(|g| g == local.geometry);
    let mut run: Vec<EventsRef> = Vec::new();
    let mut next: Option<u32> = None;
    for f in local
        .files
        .iter()
        .filter(|f| f.first >= first && f.last <= mark)
    {
        // The run starts at the first published ledger (replicas index
        // with the same windows only from the same origin).
        if next.unwrap_or(first) != f.first {
            break;
        }
        let reuse = inherited
            .1
            .iter()
            .find(|r| same_geometry && (r.first, r.last) == (f.first, f.last));
        if let Some(r) = reuse {
            run.push(r.clone());
        } else {
            let p = f.path.clone();
            let hashed = blocking(move || {
                // Its own checks first (sections, SHA-256 trailer): damaged
                // bytes are never published under a matching object hash.
                let damage = ledgerstore_event_index::EventIndex::open(&p)
                    .and_then(|idx| idx.verify())
                    .err();
                let size = std::fs::metadata(&p)
                    .map_err(ColdError::io(format!("stat {}", p.display())))?
                    .len();
                Ok((damage, ledgerstore_pack::sha256_file(&p)?, size))
            })
            .await;
            let (sha, size) = match hashed {
                Ok((None, sha, size)) => (sha, size),
                Ok((Some(damage), ..)) => {
                    // The list ends before it until the index rebuilds it
                    // (the report names it to the caller).
                    tracing::warn!(file = %f.path.display(), error = %damage, "a damaged event file is not published");
                    report.damaged_events.push((f.first, f.last));
                    break;
                }
                Err(e) if !f.path.exists() => {
                    // Merged into a wider file since it was listed: the
                    // next round lists that one.
                    tracing::debug!(file = %f.path.display(), error = %e, "an event file went away while publishing");
                    break;
                }
                Err(e) => return Err(e),
            };
            let key = events_key(f.first, f.last, &sha);
            if let Err(e) = upload(remote, &key, &f.path, size, report).await {
                if f.path.exists() {
                    return Err(e);
                }
                break;
            }
            run.push(EventsRef {
                first: f.first,
                last: f.last,
                events: f.events,
                object: Object {
                    key,
                    size,
                    sha256: sha,
                },
            });
        }
        next = f.last.checked_add(1);
    }
    // A shorter run (an index rebuilding, perhaps with another geometry)
    // keeps the last list until it reaches as far.
    let end = |l: &[EventsRef]| l.last().map(|e| e.last);
    if run.is_empty() || end(&run) < end(&inherited.1) {
        return Ok(inherited);
    }
    Ok((Some(local.geometry), run))
}

/// Every dictionary version the previous manifest lists must have the
/// same bytes here: the inherited packs were compressed with them, and a
/// rebuilt data dir trains other bytes under the same version numbers.
fn check_dicts(
    prev: Option<&Manifest>,
    local: &[(u32, Vec<u8>)],
    location: &str,
) -> ColdResult<()> {
    let Some(m) = prev else { return Ok(()) };
    for (version, bytes) in local {
        let Some(published) = m.dicts.iter().find(|d| d.version == *version) else {
            continue;
        };
        let sha = ledgerstore_pack::sha256(bytes);
        if sha != published.object.sha256 {
            return Err(ColdError::DictReplaced {
                version: *version,
                published: published.object.sha256.clone(),
                local: sha,
                location: location.to_string(),
                manifest: m.version,
            });
        }
    }
    Ok(())
}

/// The published history must be a prefix of this dir's closed ranges.
fn check_continues(
    prev: Option<&Manifest>,
    closed: &ClosedRanges,
    location: &str,
) -> ColdResult<()> {
    let Some(m) = prev else { return Ok(()) };
    let last = closed.last().unwrap_or(0);
    let diverged = |why: String| {
        ColdError::Diverged(format!(
            "{location} holds manifest {} (ledgers {}..={}) that this data dir does not continue: \
             {why}. One store has one writer; publish this data dir to another location",
            m.version, m.first, m.mark
        ))
    };
    if m.range_ledgers != closed.policy.range_ledgers {
        return Err(diverged(format!(
            "its ranges are {} ledgers, this dir's {}",
            m.range_ledgers, closed.policy.range_ledgers
        )));
    }
    if m.mark > last {
        return Err(diverged(format!(
            "this dir has closed ledgers only up to {last}"
        )));
    }
    for (p, b) in m.packs.iter().zip(&closed.base) {
        if (p.first, p.last) != *b {
            return Err(diverged(format!(
                "it publishes {}..={} where this dir has {}..={}",
                p.first, p.last, b.0, b.1
            )));
        }
    }
    Ok(())
}

async fn upload(
    remote: &Remote,
    key: &str,
    path: &Path,
    size: u64,
    report: &mut PublishReport,
) -> ColdResult<()> {
    if remote.has(key, size).await? {
        report.skipped += 1;
        return Ok(());
    }
    remote.upload(key, path).await?;
    report.uploaded += 1;
    report.uploaded_bytes += size;
    Ok(())
}

/// The threads that read a pack's ledgers and recompress their raw bodies
/// (most of a pack's CPU: one thread published ~108 pubnet ledgers/s,
/// docs/benchmarks.md "End to end at 100,000 ledgers"). Their own rayon
/// pool, not the global one that ingest compresses its batches on, so a
/// publish round delays no ingest batch behind its work.
static PACK_POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();

/// Sizes the pack pool (`[cold] publish_threads`, resolved by the
/// binary); the first call wins, and a round before any call uses every
/// core. An error only when the OS refuses the threads.
pub fn init_publish_pool(threads: usize) -> ColdResult<()> {
    if PACK_POOL.get().is_none() {
        let pool = build_pool(threads)?;
        let _ = PACK_POOL.set(pool);
    }
    if let Some(p) = PACK_POOL.get()
        && p.current_num_threads() != threads.max(1)
    {
        tracing::warn!(
            asked = threads,
            running = p.current_num_threads(),
            "the publish pool was started before; it keeps its size"
        );
    }
    Ok(())
}

fn build_pool(threads: usize) -> ColdResult<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("ls-publish-{i}"))
        .build()
        .map_err(|e| ColdError::Task(format!("starting the publish threads: {e}")))
}

fn pack_pool() -> ColdResult<&'static rayon::ThreadPool> {
    if let Some(p) = PACK_POOL.get() {
        return Ok(p);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pool = build_pool(threads)?;
    Ok(PACK_POOL.get_or_init(|| pool))
}

/// Ledgers read at once per pack thread: a chunk holds `2 × threads`
/// ledgers' stored records and record-form bodies until they are pushed
/// in order (~0.2 MB a pubnet ledger; at most `2 × threads ×
/// limits.max_ledger_bytes`).
const LEDGERS_PER_THREAD: usize = 2;

/// Writes the pack of `first..=last` to `path` on the pack pool, reading
/// `chunk` ledgers at a time in parallel (0: `2 ×` the pool's threads).
/// The pack's bytes do not depend on `chunk`. Before each chunk it checks
/// `stop`, and returns [`ColdError::Stopped`] once it is set (the partial
/// file stays in the work dir, which the next round empties).
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_pack(
    store: &Ledgerstore,
    path: &Path,
    first: u32,
    last: u32,
    dicts: &DictSet,
    form: PackForm,
    chunk: u32,
    stop: &AtomicBool,
) -> ColdResult<ledgerstore_pack::PackInfo> {
    use rayon::prelude::*;
    let pool = pack_pool()?;
    let chunk = match chunk {
        0 => u32::try_from(pool.current_num_threads() * LEDGERS_PER_THREAD).unwrap_or(u32::MAX),
        n => n,
    };
    let missing = |seq: u32| {
        ColdError::NotReady(format!(
            "ledger {seq} of the closed range {first}..={last} is not stored"
        ))
    };
    let parts = |seq: u32| {
        store
            .frame_ledger_parts(seq, dicts)?
            .ok_or_else(|| missing(seq))
    };
    // Version 4: the pack's dictionary, from its sampled ledgers' frames.
    let dict = match form {
        PackForm::Frames { level, dict_kib } if dict_kib > 0 => {
            // A ledger not stored is skipped here: the pack's own loop
            // names the first one, in order.
            let content = |seq: u32| -> ColdResult<Option<Vec<u8>>> {
                match store.frame_ledger_parts(seq, dicts)? {
                    Some((record, bodies)) => Ok(Some(frame_content(&record, &bodies)?)),
                    None => Ok(None),
                }
            };
            let budget = dict_kib as usize * 1024;
            let d = FrameDict::of_ledgers(first, last, budget, level, content)?;
            Some(d.ok_or_else(|| {
                ColdError::NotReady(format!(
                    "none of the ledgers sampled for the dictionary of the closed range \
                     {first}..={last} is stored"
                ))
            })?)
        }
        _ => None,
    };
    let encoder = match form {
        PackForm::Entries => None,
        PackForm::Frames { level, .. } => Some(FrameEncoder::new(level, dict.as_ref())),
    };
    // A ledger as the pack holds it, read (and for frames, compressed) on
    // the pack pool.
    let read = |seq: u32| -> ColdResult<Packed> {
        match &encoder {
            None => {
                let (record, n) = store.stored_ledger(seq)?.ok_or_else(|| missing(seq))?;
                Ok(Packed::Entries(record, store.stored_bodies(seq, n, dicts)?))
            }
            Some(enc) => {
                let (record, bodies) = parts(seq)?;
                Ok(Packed::Frame(enc.frame(&record, &bodies)?))
            }
        }
    };
    let mut w = match (form, &dict) {
        (PackForm::Entries, _) => PackWriter::create(path, first, last)?,
        (PackForm::Frames { .. }, None) => PackWriter::create_frames(path, first, last)?,
        (PackForm::Frames { .. }, Some(d)) => {
            PackWriter::create_frames_with_dict(path, first, last, d)?
        }
    };
    failpoint::hold_until("publish.in_pack", stop);
    let mut from = first;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(ColdError::Stopped(format!(
                "the pack of ledgers {first}..={last} was finished ({} of {} ledgers written)",
                from - first,
                u64::from(last - first) + 1
            )));
        }
        let to = last.min(from.saturating_add(chunk.max(1) - 1));
        let ready: Vec<_> = pool.install(|| (from..=to).into_par_iter().map(read).collect());
        // In order, so the first missing or damaged ledger is the one named.
        for (seq, r) in (from..=to).zip(ready) {
            match r? {
                Packed::Entries(record, bodies) => w.push_ledger(seq, &record, &bodies)?,
                Packed::Frame(framed) => w.push_frame(seq, &framed)?,
            }
        }
        if to == last {
            break;
        }
        from = to + 1;
    }
    Ok(w.finish()?)
}

/// One ledger read for a pack, in its form.
enum Packed {
    /// Its stored record and bodies, each a frame (version 2).
    Entries(Vec<u8>, Vec<Vec<u8>>),
    /// Its frame (versions 3 and 4).
    Frame(Framed),
}

fn writer_name(store: &Ledgerstore) -> String {
    let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    format!(
        "{} pid {} {}",
        host.trim(),
        std::process::id(),
        store.path().display()
    )
}
