//! `ledgerstore repair`: the offline repair of a stopped data dir's
//! segments, then `check`; and the wait for a writer's own repairs that
//! `ingest` runs before a batch needs them.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use indicatif::ProgressBar;
use ledgerstore_store::{Ledgerstore, RepairEvent, RepairReport, RepairWait, RepairWaitOutcome};

use crate::cli::RepairArgs;
use crate::cmd::ops::render_check;
use crate::open;

pub fn run(a: RepairArgs) -> Result<()> {
    let store = open::existing(&a.store)?;
    let dir = a.store.data_dir.display().to_string();
    if store.layout() != ledgerstore_db_api::Layout::Indexed && !a.json {
        println!(
            "{dir}: layout {} keeps no index segments: nothing to rebuild",
            store.layout()
        );
    }
    let json = a.json;
    let report = store.repair_segments(&mut |ev| {
        if !json {
            println!("{}", render_event(ev));
        }
    })?;
    let check = if a.no_check {
        None
    } else {
        Some(store.check()?)
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "repair": report,
                "check": check,
            }))?
        );
    } else {
        println!("{}", render_summary(&dir, &report));
        if let Some(r) = &check {
            print!("{}", render_check(&a.store.data_dir, r));
        }
    }
    if !report.is_ok() {
        let what: Vec<String> = report
            .failed
            .iter()
            .map(|f| format!("ledgers {}..={}: {}", f.first, f.last, f.error))
            .collect();
        bail!(
            "repair failed: {} range(s) of {dir} could not be rebuilt: {}",
            report.failed.len(),
            what.join("; ")
        );
    }
    if let Some(r) = check.filter(|r| !r.is_ok()) {
        bail!(
            "repair rebuilt what it could, but check still finds {} problem(s) in {dir}: {}",
            r.problem_count,
            r.problems.first().map_or("", String::as_str)
        );
    }
    Ok(())
}

fn render_event(ev: &RepairEvent) -> String {
    match ev {
        RepairEvent::Rebuilding {
            first,
            last,
            reason,
        } => format!("rebuilding the segment of ledgers {first}..={last}: {reason}"),
        RepairEvent::Rebuilt(r) => format!(
            "rebuilt ledgers {}..={}: {} keys from {} hash list(s) and {} range(s) of ledger \
             records in {:.2}s",
            r.first, r.last, r.keys, r.from_hash_lists, r.from_ledgers, r.seconds
        ),
        RepairEvent::Rewritten(l) => format!(
            "rewrote the hash list of ledgers {}..={} from the ledger records ({} hashes): {}",
            l.first, l.last, l.keys, l.reason
        ),
        RepairEvent::Failed(f) => format!("FAILED ledgers {}..={}: {}", f.first, f.last, f.error),
    }
}

fn render_summary(dir: &str, r: &RepairReport) -> String {
    let rebuilt: Vec<String> = r
        .rebuilt
        .iter()
        .map(|x| format!("{}..={}", x.first, x.last))
        .collect();
    let mut out = format!(
        "repair {dir}: {} segment(s) and {} hash list(s) read; ",
        r.segments, r.hash_lists
    );
    if rebuilt.is_empty() && r.rewritten_lists.is_empty() && r.failed.is_empty() {
        out.push_str("nothing needed rebuilding");
    } else {
        out.push_str(&format!(
            "rebuilt {} segment(s) [{}], rewrote {} hash list(s), {} failed",
            rebuilt.len(),
            rebuilt.join(", "),
            r.rewritten_lists.len(),
            r.failed.len()
        ));
    }
    out
}

/// Layout indexed: when a listed segment cannot serve (lost or damaged),
/// waits for the writer's builder to rebuild it, showing its progress on
/// `bar` (or, hidden, a line at the start and one at the end). Errors
/// name the ranges and why once the repair failed 3 times in a row, or
/// when `timeout` runs out.
pub(crate) fn wait_for_repairs(
    store: &Ledgerstore,
    timeout: Duration,
    bar: &ProgressBar,
) -> Result<()> {
    let now = store.segments_repairing();
    if now.ranges.is_empty() {
        return Ok(());
    }
    let started = Instant::now();
    bar.suspend(|| {
        println!(
            "segments: ledgers {} cannot serve ({}); waiting for their rebuild (at most {} s) \
             before ingesting, since a batch's duplicate check needs them",
            now.names(),
            now.ranges
                .iter()
                .map(|r| r.2.as_str())
                .collect::<Vec<_>>()
                .join("; "),
            timeout.as_secs()
        );
    });
    let message = bar.message();
    let outcome = store.wait_for_repairs(timeout, &mut |w| {
        bar.set_message(format!(
            "repairing ledgers {}: {}/{} ledgers{}",
            w.names(),
            w.done,
            w.ledgers,
            if w.failures > 0 {
                format!(", {} failure(s), retrying", w.failures)
            } else {
                String::new()
            }
        ));
    })?;
    bar.set_message(message);
    let dir = store.path().display();
    match outcome {
        RepairWaitOutcome::Repaired(ranges) => {
            let names: Vec<String> = ranges.iter().map(|(a, b)| format!("{a}..={b}")).collect();
            bar.suspend(|| {
                println!(
                    "segments: repaired ledgers {} in {:.1}s",
                    names.join(", "),
                    started.elapsed().as_secs_f64()
                );
            });
            Ok(())
        }
        RepairWaitOutcome::Failed(w) => bail!(
            "the repair of ledgers {} failed {} times in a row: {}. The batch that needs them \
             was not written; run `ledgerstore repair --data-dir {dir}` for a report",
            w.names(),
            w.failures,
            last_error(&w)
        ),
        RepairWaitOutcome::TimedOut(w) => bail!(
            "ledgers {} were still being repaired after {} s ({}/{} ledgers of the rebuild done; \
             {}). The batch that needs them was not written; rerun with a larger --repair-wait-seconds, \
             or run `ledgerstore repair --data-dir {dir}`",
            w.names(),
            timeout.as_secs(),
            w.done,
            w.ledgers,
            last_error(&w)
        ),
        RepairWaitOutcome::NotRunning(w) => bail!(
            "ledgers {} cannot serve and no segment builder runs; run `ledgerstore repair \
             --data-dir {dir}`",
            w.names()
        ),
    }
}

fn last_error(w: &RepairWait) -> String {
    w.last_error
        .clone()
        .unwrap_or_else(|| "no failure reported".into())
}
