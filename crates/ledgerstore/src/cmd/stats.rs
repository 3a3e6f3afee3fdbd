//! `ledgerstore stats`.

use anyhow::Result;
use ledgerstore_store::StoreStats;

use crate::cli::StatsArgs;
use crate::open;

pub fn run(a: StatsArgs) -> Result<()> {
    let store = open::existing(&a.store)?;
    let stats = store.stats()?;
    let events = ledgerstore_events::describe(&a.store.data_dir.join("events"))?;
    if a.json {
        let mut v = serde_json::to_value(&stats)?;
        if let Some(m) = v.as_object_mut() {
            m.insert("events".into(), serde_json::to_value(&events)?);
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", render(&stats));
        print!("{}", render_events(events.as_ref(), stats.last_ledger));
    }
    Ok(())
}

/// The event index's line: how far it reaches against the store's mark
/// (the daemon builds the rest in the background), its files and size.
fn render_events(e: Option<&ledgerstore_events::DirSummary>, mark: Option<u32>) -> String {
    let Some(e) = e else {
        return "[events] none yet (the daemon builds it from the stored ledgers when it serves this dir with events.enabled)\n".into();
    };
    let covered: Vec<String> = e
        .covered
        .iter()
        .map(|(a, b)| format!("{a}..={b}"))
        .collect();
    let reach = match (e.covered.first(), mark) {
        (Some(&(first, _)), Some(m)) => {
            let through = e.covered[0].1;
            let total = u64::from(m.saturating_sub(first)) + 1;
            let done = u64::from(through.saturating_sub(first)) + 1;
            format!(
                "  {:.1}% of ledgers {first}..={m} in files (the newest, fewer than {}, are indexed in memory)",
                100.0 * done as f64 / total as f64,
                e.file_ledgers
            )
        }
        _ => String::new(),
    };
    format!(
        "[events] files {} ({})  events {}  covered {}{}  file ledgers {}, fan-out {}{}\n",
        e.files,
        mb(e.bytes),
        e.events,
        if covered.is_empty() {
            "-".into()
        } else {
            covered.join(", ")
        },
        reach,
        e.file_ledgers,
        e.fan_out,
        if e.leftovers > 0 {
            format!(
                "  {} leftover file(s), removed at the next open",
                e.leftovers
            )
        } else {
            String::new()
        }
    ) + &e
        .damaged
        .iter()
        .map(|(name, why)| {
            format!("    damaged {name}: {why} (the daemon rebuilds it at its next open)\n")
        })
        .chain(e.problems.iter().map(|p| format!("    problem: {p}\n")))
        .collect::<String>()
}

fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

fn render(s: &StoreStats) -> String {
    let mut out = format!(
        "layout {}  ledgers {} ({}..={})  txs {}  batches {}  on disk {}\n",
        s.layout,
        s.ledgers,
        s.first_ledger.map_or("-".into(), |v| v.to_string()),
        s.last_ledger.map_or("-".into(), |v| v.to_string()),
        s.txs,
        s.batches,
        mb(s.disk_bytes)
    );
    for t in &s.tables {
        let e = &t.engine_stats;
        out.push_str(&format!(
            "[{}] engine {}  keys {}  on disk {}  raw {} -> stored {} ({:+.0}%)\n",
            t.table,
            t.engine,
            t.keys,
            mb(e.disk_bytes),
            mb(t.raw_bytes),
            mb(t.stored_bytes),
            -t.compression_savings_pct
        ));
        if !e.files_per_level.is_empty() {
            out.push_str(&format!(
                "    files per level {:?}  pending compaction {}",
                e.files_per_level,
                mb(e.pending_compaction_bytes.unwrap_or(0))
            ));
            if let Some(b) = e.blob_bytes {
                out.push_str(&format!("  blob files {}", mb(b)));
            }
            if let Some(n) = e.shards {
                out.push_str(&format!("  shards {n}"));
            }
            out.push('\n');
        }
        if let (Some(depth), Some(pages)) = (e.tree_depth, e.pages) {
            out.push_str(&format!(
                "    depth {depth}  page size {}  pages {pages} (leaf {}, overflow {})  free pages {}  readers {}  reader lag {}\n",
                e.page_size.unwrap_or(0),
                e.leaf_pages.unwrap_or(0),
                e.overflow_pages.unwrap_or(0),
                e.free_pages.unwrap_or(0),
                e.readers.unwrap_or(0),
                e.reader_lag.unwrap_or(0),
            ));
        }
    }
    if let Some(seg) = &s.segments {
        out.push_str(&format!(
            "[segments] {} (base range {} ledgers, merge fan-out {}, {} levels)  probes per lookup <= {}  keys {}  files {}  hot from {} ({} keys, map {})  filters {}  built {} in {:.2}s, merged {} in {:.2}s, scrubbed {} since open{}{}\n",
            seg.segments.len(),
            seg.range_ledgers,
            seg.merge_fanout,
            seg.merge_levels,
            seg.probes,
            seg.keys,
            mb(seg.file_bytes),
            seg.hot_from.map_or("-".into(), |v| v.to_string()),
            seg.hot_keys,
            mb(seg.hot_map_bytes),
            mb(seg.filter_bytes),
            seg.builds,
            seg.build_total_s,
            seg.merges,
            seg.merge_total_s,
            seg.scrubs,
            seg.last_error
                .as_ref()
                .filter(|_| seg.failures > 0)
                .map_or(String::new(), |e| format!(
                    "  FAILING ({} in a row, retrying): {e}",
                    seg.failures
                )),
            seg.repairing
                .iter()
                .map(|r| format!("\n    REPAIRING {r}"))
                .collect::<String>(),
        ));
        for i in &seg.segments {
            out.push_str(&format!(
                "    {}..={}  keys {}  {}  {:.2} bits/key (MPH {:.2})  built in {:.3}s\n",
                i.first,
                i.last,
                i.keys,
                mb(i.file_bytes),
                i.bits_per_key,
                i.mph_bits_per_key,
                i.build_s
            ));
        }
    }
    if let Some(form) = s.bodies {
        out.push_str(&match form {
            "blocks" => "[bodies] blocks: raw bodies, compressed by RocksDB in blocks \
                         (tx_data's stored column is raw; its disk column is compressed)\n"
                .to_string(),
            other => format!("[bodies] {other}: each body its own zstd frame\n"),
        });
    }
    if let Some(form) = s.ledger_records {
        out.push_str(&match form {
            "blocks" => "[ledger records] blocks: raw records, compressed by RocksDB in blocks \
                         (ledgers' stored column is raw; its disk column is compressed)\n"
                .to_string(),
            other => format!("[ledger records] {other}: each record its own zstd frame\n"),
        });
    }
    if let Some(d) = &s.dictionaries {
        let versions: Vec<String> = d
            .versions
            .iter()
            .map(|(v, bytes)| format!("v{v} ({bytes} B)"))
            .collect();
        out.push_str(&format!(
            "[dictionaries] current v{}  {}\n",
            d.current,
            if versions.is_empty() {
                "none trained yet".to_string()
            } else {
                versions.join(", ")
            }
        ));
    }
    out
}
