//! getEvents on a read replica: its own event index (`replica.events_dir`)
//! over the replica's reads, seeded with the event files the writer
//! published (`cold.publish_events`).
//!
//! - The index opens once the served manifest lists event files, with
//!   their geometry. The dir records the history it was filled from
//!   (`SOURCE`: the first ledger and the first pack's SHA-256); a dir of
//!   another history or geometry is emptied in place under its lock,
//!   since its files would answer for other ledgers.
//! - The builder asks, at every round, which ranges are on their way: the
//!   listed files (but those whose fetch failed, which it indexes from
//!   the packs), and, while the replica fills up to listed files that end
//!   far below the published mark (a writer whose index lags), everything
//!   past them, so a new replica never reads a long history from the
//!   packs.
//! - A sync task fetches each listed file the index lacks (checked against
//!   the manifest's size and SHA-256), and adopts it. A failed fetch is
//!   retried after a backoff (per object, up to 15 min).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ledgerstore_cold::Replica;
use ledgerstore_config::Config;
use ledgerstore_events::{EventStore, EventsConfig, ExpectedRanges, LOCK, SOURCE};
use ledgerstore_pack::{EventsRef, Manifest};
use tokio::sync::watch;

use crate::metrics::Metrics;
use crate::state::AppState;

/// The longest wait before a failed fetch is retried.
const MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);

/// Fetches that failed, by object key: when to try again, and the next
/// wait.
type Failed = Arc<Mutex<HashMap<String, (Instant, Duration)>>>;

/// Opens the replica's event index once the served manifest lists event
/// files, then keeps it in step with the manifest until shutdown.
pub(crate) async fn run(
    cfg: Arc<Config>,
    replica: Arc<Replica>,
    state: Arc<AppState>,
    metrics: Arc<Metrics>,
    poll: Duration,
    mut stop: watch::Receiver<bool>,
) {
    state.set_events_pending(Some(
        "getEvents: the published store lists no event index yet (its writer publishes its \
         event files with cold.publish_events = true, once it has built them); retry later"
            .into(),
    ));
    let manifest = loop {
        if let Some(m) = replica.manifest().filter(|m| m.events_geometry.is_some()) {
            break m;
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = stop.changed() => return,
        }
    };
    let failed: Failed = Arc::new(Mutex::new(HashMap::new()));
    state.set_events_pending(Some(
        "getEvents: the replica's event index is opening (it fetches the published event \
         files); retry shortly"
            .into(),
    ));
    let mut backoff = Duration::from_secs(5);
    let events = loop {
        let m = replica.manifest().unwrap_or_else(|| manifest.clone());
        match open(&cfg, &replica, &m, &failed).await {
            Ok(e) => break e,
            Err(why) => {
                tracing::error!(dir = %cfg.replica.events_dir.display(), error = %why, retry_in = ?backoff, "the replica's event index failed to open; getEvents is off until it does");
                state.set_events_pending(Some(format!(
                    "getEvents: the replica's event index failed to open ({why}); retrying"
                )));
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => return,
        }
        backoff = (backoff * 2).min(Duration::from_secs(300));
    };
    state.set_events(Ok(events.clone()));
    crate::watch_events(&state, &metrics, cfg.metrics.refresh_secs, &stop);
    sync(replica, events, failed, poll, stop).await;
}

/// The history the published files index, as `SOURCE` records it: its
/// first ledger and its first pack's SHA-256 (not the location, which
/// may be spelled several ways).
fn identity(m: &Manifest) -> String {
    let first_pack = m.packs.first().map_or("", |p| p.object.sha256.as_str());
    format!(
        "ledgerstore-replica-events 1\nfirst {}\nfirst_pack {first_pack}\n",
        m.first
    )
}

async fn open(
    cfg: &Config,
    replica: &Arc<Replica>,
    m: &Manifest,
    failed: &Failed,
) -> Result<Arc<EventStore>, String> {
    let g = m
        .events_geometry
        .ok_or("the manifest lists no event geometry")?;
    let ecfg = EventsConfig {
        file_ledgers: g.file_ledgers,
        fan_out: g.fan_out,
        ..EventsConfig::default()
    };
    ecfg.validate().map_err(|e| {
        format!(
            "manifest {}: the published event files' geometry: {e}",
            m.version
        )
    })?;
    let dir = cfg.replica.events_dir.clone();
    let source = identity(m);
    let expected = expected_source(
        replica.clone(),
        failed.clone(),
        (ecfg.file_ledgers, ecfg.fan_out),
    );
    let reader = replica.clone() as Arc<dyn ledgerstore_store::Reader>;
    let shown = dir.display().to_string();
    let opened = tokio::task::spawn_blocking(move || {
        prepare(&dir, &source, &ecfg)?;
        EventStore::open_expecting(&dir, reader, ecfg, Some(expected)).map_err(|e| e.to_string())
    })
    .await
    .map_err(|j| format!("opening task failed: {j}"))??;
    tracing::info!(dir = %shown, indexed_through = ?opened.indexed_through(), "replica event index open");
    Ok(Arc::new(opened))
}

/// What the builder leaves to the fetches: the listed files but those
/// whose fetch failed, and, while the index's own files end below the
/// listed ones (a replica filling up) and those end more than two merged
/// windows (`file_ledgers × fan_out²` ledgers) below the mark,
/// everything past them, so a new replica never reads a long history
/// from the packs. Nothing when the listed files have another geometry
/// than the index (the builder then indexes on its own). Computed once
/// per manifest version and set of failed fetches.
fn expected_source(replica: Arc<Replica>, failed: Failed, geometry: (u32, u32)) -> ExpectedRanges {
    struct Cached {
        key: (u64, Vec<String>),
        listed: Vec<(u32, u32)>,
        through: Option<u32>,
        far_behind: bool,
    }
    let cache: Mutex<Option<Cached>> = Mutex::new(None);
    Arc::new(move |files_end: Option<u32>| {
        let Some(version) = replica.manifest_version() else {
            return Vec::new();
        };
        let mut failed_keys: Vec<String> = failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect();
        failed_keys.sort();
        let key = (version, failed_keys);
        let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
        if c.as_ref().is_none_or(|c| c.key != key) {
            let Some(m) = replica.manifest() else {
                return Vec::new();
            };
            let (listed, through, far_behind) = coming(&m, &key.1, geometry);
            *c = Some(Cached {
                key,
                listed,
                through,
                far_behind,
            });
        }
        let Some(c) = c.as_ref() else {
            return Vec::new();
        };
        with_far_behind(c.listed.clone(), c.through, c.far_behind, files_end)
    })
}

/// Of `m`: the listed files' ranges but the `failed` keys' (sorted),
/// where they end, and whether that is more than two merged windows below
/// the mark; nothing for another geometry.
fn coming(
    m: &Manifest,
    failed: &[String],
    geometry: (u32, u32),
) -> (Vec<(u32, u32)>, Option<u32>, bool) {
    let same = m
        .events_geometry
        .is_some_and(|g| (g.file_ledgers, g.fan_out) == geometry);
    if !same {
        return (Vec::new(), None, false);
    }
    let listed = m
        .events
        .iter()
        .filter(|e| failed.binary_search(&e.object.key).is_err())
        .map(|e| (e.first, e.last))
        .collect();
    let through = m.events_through();
    let bound = u64::from(geometry.0) * u64::from(geometry.1).pow(2);
    let far_behind = through.is_some_and(|t| u64::from(m.mark.saturating_sub(t)) > bound);
    (listed, through, far_behind)
}

/// `listed`, plus everything past `through` while the index's own files
/// end below it and the listed files are far behind the mark.
fn with_far_behind(
    mut listed: Vec<(u32, u32)>,
    through: Option<u32>,
    far_behind: bool,
    files_end: Option<u32>,
) -> Vec<(u32, u32)> {
    if let Some(t) = through
        && far_behind
        && files_end.is_none_or(|e| e < t)
    {
        listed.push((t.saturating_add(1), u32::MAX));
    }
    listed
}

/// Makes `dir` a dir of this store's event index with `cfg`'s geometry,
/// under the dir's lock (so a dir another process has open is never
/// touched): one of another history or geometry, or of none recorded, is
/// emptied in place (`SOURCE` first, so a crash midway leaves a dir that
/// is emptied again), then `SOURCE` is written. A directory holding
/// anything but an events dir's names is refused, never emptied.
fn prepare(dir: &Path, source: &str, cfg: &EventsConfig) -> Result<(), String> {
    if dir.exists() {
        refuse_foreign(dir)?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let lock = ledgerstore_events::lock_dir(dir).map_err(|e| e.to_string())?;
    let path = dir.join(SOURCE);
    let recorded = std::fs::read_to_string(&path).ok();
    let geometry = ledgerstore_events::local_files(dir)
        .ok()
        .flatten()
        .map(|(f, k, _)| (f, k));
    let ours = recorded.as_deref() == Some(source)
        && geometry.is_none_or(|g| g == (cfg.file_ledgers, cfg.fan_out));
    if !ours {
        empty(dir, recorded.as_deref(), geometry)?;
        let tmp = dir.join("tmp-source");
        std::fs::write(&tmp, source)
            .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
            .and_then(|()| std::fs::rename(&tmp, &path))
            .and_then(|()| std::fs::File::open(dir)?.sync_all())
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    drop(lock);
    Ok(())
}

/// The names in `dir`.
fn listing(dir: &Path) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| format!("listing {}: {e}", dir.display()))? {
        let entry = entry.map_err(|e| format!("listing {}: {e}", dir.display()))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// Refuses a directory that holds anything but an events dir's names.
fn refuse_foreign(dir: &Path) -> Result<(), String> {
    let ours = |n: &str| {
        [ledgerstore_events::MARKER, LOCK, SOURCE].contains(&n)
            || n.starts_with("tmp-")
            || (n.starts_with("ev-") && n.ends_with(".idx"))
    };
    if let Some(other) = listing(dir)?.iter().find(|n| !ours(n)) {
        return Err(format!(
            "replica.events_dir = {}: holds {other:?}, so it is not an events dir; name an empty \
             directory or one a replica created",
            dir.display()
        ));
    }
    Ok(())
}

/// Deletes an events dir's entries but its lock, `SOURCE` first.
fn empty(dir: &Path, recorded: Option<&str>, geometry: Option<(u32, u32)>) -> Result<(), String> {
    refuse_foreign(dir)?;
    let names = listing(dir)?;
    if names.iter().any(|n| n != LOCK) {
        tracing::warn!(
            dir = %dir.display(),
            recorded_source = ?recorded,
            recorded_geometry = ?geometry,
            "the replica's events dir holds another history's (or another geometry's) index: emptied, to fetch this store's"
        );
    }
    let remove = |name: &str| -> Result<(), String> {
        let p = dir.join(name);
        match std::fs::remove_file(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("deleting {}: {e}", p.display())),
        }
    };
    remove(SOURCE)?;
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("syncing {}: {e}", dir.display()))?;
    for n in names
        .iter()
        .filter(|n| n.as_str() != LOCK && n.as_str() != SOURCE)
    {
        remove(n)?;
    }
    Ok(())
}

/// Keeps the index in step with the served manifest until shutdown:
/// every `poll`, fetches and adopts the listed files it lacks.
async fn sync(
    replica: Arc<Replica>,
    events: Arc<EventStore>,
    failed: Failed,
    poll: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut warned_geometry = false;
    let mut synced: Option<u64> = None;
    loop {
        let due = {
            let f = failed.lock().unwrap_or_else(|p| p.into_inner());
            f.values().any(|(at, _)| Instant::now() >= *at)
        };
        if let Some(m) = replica
            .manifest()
            .filter(|m| Some(m.version) != synced || due)
        {
            synced = Some(m.version);
            sync_once(&replica, &events, &m, &failed, &mut warned_geometry).await;
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = stop.changed() => return,
        }
    }
}

/// One pass over `m`'s event files: fetches those not covered and not
/// waiting out a backoff.
async fn sync_once(
    replica: &Arc<Replica>,
    events: &Arc<EventStore>,
    m: &Manifest,
    failed: &Failed,
    warned_geometry: &mut bool,
) {
    let Some(g) = m.events_geometry else {
        return;
    };
    // Only listed files the index lacks are retried.
    failed
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|key, _| {
            m.events
                .iter()
                .any(|e| &e.object.key == key && !events.covers(e.first, e.last))
        });
    if (g.file_ledgers, g.fan_out) != events.geometry() {
        if !*warned_geometry {
            tracing::warn!(
                published_file_ledgers = g.file_ledgers,
                published_fan_out = g.fan_out,
                local = ?events.geometry(),
                "the published event files have other windows than this replica's index: restart the replica to fetch them"
            );
            *warned_geometry = true;
        }
        return;
    }
    for e in m.events.iter().filter(|e| !events.covers(e.first, e.last)) {
        let waiting = {
            let f = failed.lock().unwrap_or_else(|p| p.into_inner());
            f.get(&e.object.key)
                .is_some_and(|(at, _)| Instant::now() < *at)
        };
        if waiting {
            continue;
        }
        let got = fetch_and_adopt(replica, events, e).await;
        let mut f = failed.lock().unwrap_or_else(|p| p.into_inner());
        match got {
            Ok(()) => {
                f.remove(&e.object.key);
            }
            Err(why) => {
                let wait = f
                    .get(&e.object.key)
                    .map_or(Duration::from_secs(5), |(_, w)| (*w * 2).min(MAX_BACKOFF));
                tracing::warn!(key = %e.object.key, error = %why, retry_in = ?wait, "fetching a published event file failed; its ledgers are indexed from the packs meanwhile");
                f.insert(e.object.key.clone(), (Instant::now() + wait, wait));
                drop(f);
                events.notify();
            }
        }
    }
}

async fn fetch_and_adopt(
    replica: &Arc<Replica>,
    events: &Arc<EventStore>,
    e: &EventsRef,
) -> Result<(), String> {
    let dest = events.fetch_path(e.first, e.last);
    if let Err(err) = replica
        .download(&e.object.key, e.object.size, &e.object.sha256, &dest)
        .await
    {
        let _ = tokio::fs::remove_file(&dest).await;
        return Err(err.to_string());
    }
    let (ev, first, last) = (events.clone(), e.first, e.last);
    tokio::task::spawn_blocking(move || ev.adopt(first, last, &dest))
        .await
        .map_err(|j| format!("adopting task failed: {j}"))?
        .map(|_| ())
        .map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(file_ledgers: u32) -> EventsConfig {
        EventsConfig {
            file_ledgers,
            fan_out: 2,
            ..EventsConfig::default()
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn manifest(events: &[(u32, u32)], mark: u32, geometry: (u32, u32)) -> Manifest {
        let object = |key: String| ledgerstore_pack::Object {
            key,
            size: 1,
            sha256: "0".repeat(64),
        };
        Manifest {
            format: 1,
            version: 7,
            created_unix_ms: 0,
            writer: String::new(),
            range_ledgers: 10,
            first: 0,
            mark,
            mark_record_sha256: "0".repeat(64),
            packs: Vec::new(),
            segments: Vec::new(),
            dicts: Vec::new(),
            events_geometry: Some(ledgerstore_pack::EventsGeometry {
                file_ledgers: geometry.0,
                fan_out: geometry.1,
            }),
            events: events
                .iter()
                .map(|&(first, last)| EventsRef {
                    first,
                    last,
                    events: 0,
                    object: object(format!("events/{first}")),
                })
                .collect(),
        }
    }

    #[test]
    fn the_builder_leaves_listed_files_to_fetches_and_a_far_behind_run_only_while_filling() {
        // Files of 4 ledgers, fan-out 2: "far" is more than 16 ledgers.
        let near = manifest(&[(0, 7), (8, 11)], 20, (4, 2));
        let (listed, through, far) = coming(&near, &[], (4, 2));
        assert_eq!(
            (listed.clone(), through, far),
            (vec![(0, 7), (8, 11)], Some(11), false)
        );
        assert_eq!(
            with_far_behind(listed, through, far, None),
            vec![(0, 7), (8, 11)]
        );
        // A failed fetch is the builder's.
        let (listed, ..) = coming(&near, &["events/8".to_string()], (4, 2));
        assert_eq!(listed, vec![(0, 7)]);
        // Far behind: nothing past the run while the index fills up to
        // it; once it has, the builder indexes past it from the packs.
        let far_m = manifest(&[(0, 7), (8, 11)], 100, (4, 2));
        let (listed, through, far) = coming(&far_m, &[], (4, 2));
        assert!(far);
        assert_eq!(
            with_far_behind(listed.clone(), through, far, Some(7)),
            vec![(0, 7), (8, 11), (12, u32::MAX)]
        );
        assert_eq!(
            with_far_behind(listed, through, far, Some(11)),
            vec![(0, 7), (8, 11)]
        );
        // Another geometry: nothing is expected.
        assert_eq!(coming(&near, &[], (64, 16)), (Vec::new(), None, false));
    }

    #[test]
    fn a_dir_of_another_store_or_geometry_is_replaced_and_a_foreign_dir_refused() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("events");
        prepare(&dir, "store a", &cfg(4)).expect("new dir");
        assert_eq!(
            std::fs::read_to_string(dir.join(SOURCE)).expect("source"),
            "store a"
        );
        std::fs::write(
            dir.join(ledgerstore_events::MARKER),
            "ledgerstore-events 1\nfile_ledgers 4\nfan_out 2\n",
        )
        .expect("marker");
        std::fs::write(dir.join("ev-0000000000-0000000003.idx"), b"x").expect("file");

        // The same store and geometry: kept as it is.
        prepare(&dir, "store a", &cfg(4)).expect("same");
        assert!(dir.join("ev-0000000000-0000000003.idx").exists());
        // Another geometry, then another store: emptied.
        prepare(&dir, "store a", &cfg(8)).expect("geometry");
        assert_eq!(names(&dir), vec![LOCK, SOURCE]);
        std::fs::write(dir.join("ev-0000000000-0000000003.idx"), b"x").expect("file");
        prepare(&dir, "store b", &cfg(4)).expect("store");
        assert_eq!(names(&dir), vec![LOCK, SOURCE]);
        assert_eq!(
            std::fs::read_to_string(dir.join(SOURCE)).expect("source"),
            "store b"
        );
        // A crash after SOURCE was deleted: the next start empties again.
        std::fs::write(dir.join("ev-0000000000-0000000003.idx"), b"x").expect("file");
        std::fs::remove_file(dir.join(SOURCE)).expect("crash");
        prepare(&dir, "store b", &cfg(4)).expect("again");
        assert_eq!(names(&dir), vec![LOCK, SOURCE]);

        // A dir in use is never touched.
        std::fs::write(dir.join("ev-0000000000-0000000003.idx"), b"x").expect("file");
        let held = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK))
            .expect("lock file");
        held.try_lock().expect("lock");
        let e = prepare(&dir, "store c", &cfg(4)).expect_err("in use");
        assert!(e.contains("in use by another process"), "{e}");
        drop(held);

        // A directory that is not an events dir is refused, never deleted.
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::write(home.join("notes.txt"), b"keep me").expect("notes");
        let e = prepare(&home, "store a", &cfg(4)).expect_err("foreign");
        assert!(
            e.contains("holds \"notes.txt\", so it is not an events dir"),
            "{e}"
        );
        assert_eq!(names(&home), vec!["notes.txt"]);
    }
}
