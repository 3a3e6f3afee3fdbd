//! getEvents on a read replica: its own event index (`replica.events_dir`)
//! over the replica's reads, seeded with the event files the writer
//! published. A sync task fetches each file a new manifest lists
//! (checked against the manifest's size and SHA-256, then by the index
//! itself) and adopts it, replacing the files it covers; the index's
//! builder indexes, from the packs, only the ledgers past the last
//! published file (and any file whose fetch failed, so getEvents never
//! waits on a broken object).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ledgerstore_cold::Replica;
use ledgerstore_config::Config;
use ledgerstore_events::{EventStore, EventsConfig};
use ledgerstore_pack::{EventsRef, Manifest};
use tokio::sync::watch;

/// The longest wait before failed fetches are retried.
const MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);

/// Opens the replica's event index in `replica.events_dir`, with the
/// geometry of the manifest's event files when it lists some (an index
/// dir recorded with another geometry is emptied first: its files would
/// never tile the published ones), else `[events]`'s.
pub(crate) async fn open(cfg: &Config, replica: &Arc<Replica>) -> Result<Arc<EventStore>, String> {
    let dir = cfg.replica.events_dir.clone();
    let d = EventsConfig::default();
    let mut ecfg = EventsConfig {
        file_ledgers: cfg.events.file_ledgers.unwrap_or(d.file_ledgers),
        fan_out: cfg.events.fan_out.unwrap_or(d.fan_out),
        ..d
    };
    let manifest = replica.manifest();
    let mut expected = Vec::new();
    if let Some(m) = &manifest
        && let Some(g) = m.events_geometry
    {
        (ecfg.file_ledgers, ecfg.fan_out) = (g.file_ledgers, g.fan_out);
        expected = m.events.iter().map(|e| (e.first, e.last)).collect();
    }
    let reader = replica.clone() as Arc<dyn ledgerstore_store::Reader>;
    let shown = dir.display().to_string();
    let opened = tokio::task::spawn_blocking(move || {
        reset_if_other_geometry(&dir, &ecfg)?;
        EventStore::open_expecting(&dir, reader, ecfg, expected).map_err(|e| e.to_string())
    })
    .await
    .map_err(|j| format!("opening task failed: {j}"))?;
    match opened {
        Ok(e) => {
            tracing::info!(dir = %shown, indexed_through = ?e.indexed_through(), "replica event index open");
            Ok(Arc::new(e))
        }
        Err(e) => {
            tracing::error!(dir = %shown, error = %e, "the replica's event index failed to open; getEvents is off");
            Err(e)
        }
    }
}

/// Empties an events dir recorded with another geometry than `cfg`'s.
fn reset_if_other_geometry(dir: &Path, cfg: &EventsConfig) -> Result<(), String> {
    let Some((file_ledgers, fan_out, _)) =
        ledgerstore_events::local_files(dir).map_err(|e| e.to_string())?
    else {
        return Ok(());
    };
    if (file_ledgers, fan_out) == (cfg.file_ledgers, cfg.fan_out) {
        return Ok(());
    }
    tracing::warn!(
        dir = %dir.display(),
        file_ledgers,
        fan_out,
        published_file_ledgers = cfg.file_ledgers,
        published_fan_out = cfg.fan_out,
        "the replica's event index has other windows than the published one: emptied, to fetch the published files"
    );
    std::fs::remove_dir_all(dir).map_err(|e| format!("emptying {}: {e}", dir.display()))
}

/// Keeps the index in step with the served manifest until shutdown:
/// every `poll`, fetches and adopts the listed files it lacks.
pub(crate) async fn sync(
    replica: Arc<Replica>,
    events: Arc<EventStore>,
    poll: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut warned_geometry = false;
    // Files whose fetch failed, by key: their ranges are the builder's
    // until a retry (after a backoff, or at the next manifest) succeeds.
    let mut failed: HashSet<String> = HashSet::new();
    let mut synced: Option<u64> = None;
    let mut backoff = poll;
    let mut retry_at: Option<Instant> = None;
    loop {
        let due = retry_at.is_some_and(|t| Instant::now() >= t);
        if let Some(m) = replica
            .manifest()
            .filter(|m| Some(m.version) != synced || due)
        {
            synced = Some(m.version);
            if sync_once(&replica, &events, &m, &mut failed, &mut warned_geometry).await {
                (backoff, retry_at) = (poll, None);
            } else {
                retry_at = Some(Instant::now() + backoff);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(poll) => {}
            _ = stop.changed() => return,
        }
    }
}

/// One pass over `m`'s event files; true when nothing is left to retry.
async fn sync_once(
    replica: &Arc<Replica>,
    events: &Arc<EventStore>,
    m: &Manifest,
    failed: &mut HashSet<String>,
    warned_geometry: &mut bool,
) -> bool {
    let Some(g) = m.events_geometry else {
        events.expect(Vec::new());
        return true;
    };
    if (g.file_ledgers, g.fan_out) != events.geometry() {
        if !*warned_geometry {
            tracing::warn!(
                published_file_ledgers = g.file_ledgers,
                published_fan_out = g.fan_out,
                local = ?events.geometry(),
                "the published event files have other windows than this replica's index: it indexes the packs itself; restart it to fetch them"
            );
            *warned_geometry = true;
        }
        events.expect(Vec::new());
        return true;
    }
    let wanted: Vec<&EventsRef> = m
        .events
        .iter()
        .filter(|e| !events.covers(e.first, e.last))
        .collect();
    // The builder leaves these ranges to the fetches; a failed fetch
    // hands its range back to it.
    let mut expected: Vec<(u32, u32)> = wanted
        .iter()
        .filter(|e| !failed.contains(&e.object.key))
        .map(|e| (e.first, e.last))
        .collect();
    events.expect(expected.clone());
    let mut all_ok = true;
    for e in wanted {
        match fetch_and_adopt(replica, events, e).await {
            Ok(()) => {
                failed.remove(&e.object.key);
            }
            Err(why) => {
                tracing::warn!(key = %e.object.key, error = %why, "fetching a published event file failed; its ledgers are indexed from the packs");
                failed.insert(e.object.key.clone());
                expected.retain(|r| *r != (e.first, e.last));
                events.expect(expected.clone());
                all_ok = false;
            }
        }
    }
    events.expect(Vec::new());
    all_ok
}

async fn fetch_and_adopt(
    replica: &Arc<Replica>,
    events: &Arc<EventStore>,
    e: &EventsRef,
) -> Result<(), String> {
    let dest = events.fetch_path(e.first, e.last);
    replica
        .download(&e.object.key, e.object.size, &e.object.sha256, &dest)
        .await
        .map_err(|err| err.to_string())?;
    let (ev, first, last) = (events.clone(), e.first, e.last);
    tokio::task::spawn_blocking(move || ev.adopt(first, last, &dest))
        .await
        .map_err(|j| format!("adopting task failed: {j}"))?
        .map(|_| ())
        .map_err(|err| err.to_string())
}
