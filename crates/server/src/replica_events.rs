//! getEvents on a read replica: its own event index (`replica.events_dir`)
//! over the replica's reads, seeded with the event files the writer
//! published (`cold.publish_events`).
//!
//! - The index opens once the served manifest lists event files, with
//!   their geometry. The dir records the store it was filled from
//!   (`SOURCE`: the location, the first ledger and the first pack's
//!   SHA-256); a dir of another store or geometry is moved aside and
//!   deleted, since its files would answer for other ledgers.
//! - The builder asks, at every round, which ranges are on their way: the
//!   listed files (but those whose fetch failed, which it indexes from
//!   the packs), and, when the listed files end far below the published
//!   mark (a writer whose index lags), everything past them, so a replica
//!   never reads a long history from the packs.
//! - A sync task fetches each listed file the index lacks (checked against
//!   the manifest's size and SHA-256), and adopts it. A failed fetch is
//!   retried after a backoff (per object, up to 15 min).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
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
    let events = match open(&cfg, &replica, &manifest, &failed).await {
        Ok(e) => e,
        Err(why) => {
            tracing::error!(dir = %cfg.replica.events_dir.display(), error = %why, "the replica's event index failed to open; getEvents is off");
            state.set_events(Err(why));
            return;
        }
    };
    state.set_events(Ok(events.clone()));
    crate::watch_events(&state, &metrics, cfg.metrics.refresh_secs, &stop);
    sync(replica, events, failed, poll, stop).await;
}

/// The store the published files come from, as `SOURCE` records it.
fn identity(location: &str, m: &Manifest) -> String {
    let first_pack = m.packs.first().map_or("", |p| p.object.sha256.as_str());
    format!(
        "ledgerstore-replica-events 1\nstore {location}\nfirst {}\nfirst_pack {first_pack}\n",
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
    let source = identity(replica.location(), m);
    let expected = expected_source(replica.clone(), failed.clone());
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
/// whose fetch failed, and, when the listed files end more than two
/// merged windows (`file_ledgers × fan_out²` ledgers) below the mark,
/// everything past them.
fn expected_source(replica: Arc<Replica>, failed: Failed) -> ExpectedRanges {
    Arc::new(move || {
        let Some(m) = replica.manifest() else {
            return Vec::new();
        };
        let failed = failed.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<(u32, u32)> = m
            .events
            .iter()
            .filter(|e| !failed.contains_key(&e.object.key))
            .map(|e| (e.first, e.last))
            .collect();
        if let Some(g) = m.events_geometry {
            let through = m.events_through().unwrap_or(m.first.saturating_sub(1));
            let bound = u64::from(g.file_ledgers) * u64::from(g.fan_out).pow(2);
            if u64::from(m.mark.saturating_sub(through)) > bound {
                out.push((through.saturating_add(1), u32::MAX));
            }
        }
        out
    })
}

/// Makes `dir` a dir of this store's event index with `cfg`'s geometry:
/// one of another store or geometry (or of an unknown one) is moved aside
/// and deleted, under its lock, so a dir another process has open is
/// never touched.
fn prepare(dir: &Path, source: &str, cfg: &EventsConfig) -> Result<(), String> {
    if dir.exists() {
        let recorded = std::fs::read_to_string(dir.join(SOURCE)).ok();
        let geometry = ledgerstore_events::local_files(dir)
            .ok()
            .flatten()
            .map(|(f, k, _)| (f, k));
        let empty = std::fs::read_dir(dir)
            .map_err(|e| format!("listing {}: {e}", dir.display()))?
            .next()
            .is_none();
        let ours = recorded.as_deref() == Some(source)
            && geometry.is_none_or(|g| g == (cfg.file_ledgers, cfg.fan_out));
        if !ours && !empty {
            set_aside(dir, recorded.as_deref(), geometry)?;
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let path = dir.join(SOURCE);
    if std::fs::read_to_string(&path).ok().as_deref() != Some(source) {
        let tmp = dir.join("tmp-source");
        std::fs::write(&tmp, source)
            .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
            .and_then(|()| std::fs::rename(&tmp, &path))
            .and_then(|()| std::fs::File::open(dir)?.sync_all())
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Moves a foreign index dir aside (one rename: a crash leaves either
/// the old dir or none) and deletes it.
fn set_aside(
    dir: &Path,
    recorded: Option<&str>,
    geometry: Option<(u32, u32)>,
) -> Result<(), String> {
    // Only an events dir: a misconfigured path to anything else is
    // refused, never deleted.
    for entry in std::fs::read_dir(dir).map_err(|e| format!("listing {}: {e}", dir.display()))? {
        let name = entry
            .map_err(|e| format!("listing {}: {e}", dir.display()))?
            .file_name()
            .to_string_lossy()
            .into_owned();
        let ours = [ledgerstore_events::MARKER, LOCK, SOURCE].contains(&name.as_str())
            || name.starts_with("tmp-")
            || (name.starts_with("ev-") && name.ends_with(".idx"));
        if !ours {
            return Err(format!(
                "replica.events_dir = {}: holds {name:?}, so it is not an events dir; name an empty \
                 directory or one a replica created",
                dir.display()
            ));
        }
    }
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK))
        .map_err(|e| format!("opening {}: {e}", dir.join(LOCK).display()))?;
    if lock.try_lock().is_err() {
        return Err(format!(
            "{} is in use by another process (its LOCK is held): one daemon per events dir",
            dir.display()
        ));
    }
    let aside = PathBuf::from(format!("{}.old-{}", dir.display(), std::process::id()));
    tracing::warn!(
        dir = %dir.display(),
        recorded_source = ?recorded,
        recorded_geometry = ?geometry,
        "the replica's events dir holds another store's (or another geometry's) index: deleted, to fetch this store's"
    );
    std::fs::rename(dir, &aside).map_err(|e| format!("moving {} aside: {e}", dir.display()))?;
    drop(lock);
    if let Err(e) = std::fs::remove_dir_all(&aside) {
        tracing::warn!(dir = %aside.display(), error = %e, "deleting the old events dir failed");
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
        assert_eq!(names(&dir), vec![SOURCE]);
        std::fs::write(dir.join("ev-0000000000-0000000003.idx"), b"x").expect("file");
        prepare(&dir, "store b", &cfg(4)).expect("store");
        assert_eq!(names(&dir), vec![SOURCE]);
        assert_eq!(
            std::fs::read_to_string(dir.join(SOURCE)).expect("source"),
            "store b"
        );
        assert!(
            !tmp.path()
                .join(format!("events.old-{}", std::process::id()))
                .exists()
        );

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
        assert!(home.join("notes.txt").exists());
    }
}
