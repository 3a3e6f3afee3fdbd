//! Text and markdown output of the study: per-batch rows shaped like the
//! field study's logs, a side-by-side table, and the summary.

use serde::Serialize;

use super::{BatchRow, ColdOpen, LayoutRun, Lookups, MemSample, SegmentSummary, cache_word};

/// Seconds as the field study printed them (ms below 1 s, m+s above 60 s).
pub fn fmt_s(s: f64) -> String {
    if s >= 60.0 {
        format!("{}m{:.1}s", (s / 60.0).floor(), s % 60.0)
    } else if s >= 1.0 {
        format!("{s:.2}s")
    } else {
        format!("{:.0}ms", s * 1000.0)
    }
}

fn gb(b: u64) -> String {
    format!("{:.2}", b as f64 / 1e9)
}

fn mb(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| format!("{:.1}", b as f64 / 1e6))
}

fn mib(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| {
        format!("{:.0}", b as f64 / f64::from(1u32 << 20))
    })
}

/// One line per batch: total, source, CPU, then per store
/// write / flush-or-commit / compact.
pub fn render_row(r: &BatchRow) -> String {
    let mut out = format!(
        "{:<13} #{:<4} total {:>8}  source {:>7}  cpu {:>7}",
        r.layout,
        r.batch,
        fmt_s(r.total_s),
        fmt_s(r.source_s),
        fmt_s(r.cpu_s)
    );
    for s in &r.stores {
        out.push_str(&format!(
            " | {} {} {}/{}/{}",
            s.table,
            s.engine,
            fmt_s(s.write_s),
            fmt_s(s.commit_s),
            fmt_s(s.compact_s)
        ));
    }
    if let Some(m) = &r.memory {
        out.push_str(&format!(
            " | RssAnon {} MiB VmRSS {} MiB VmHWM {} MiB",
            mib(m.rss_anon_bytes),
            mib(m.vm_rss_bytes),
            mib(m.vm_hwm_bytes)
        ));
    }
    out
}

/// A markdown table of one layout's batches, with each store's I/O split
/// into write / flush-or-commit / compact (seconds).
pub fn render_layout_table(run: &LayoutRun) -> String {
    let Some(first) = run.rows.first() else {
        return String::new();
    };
    let mut out = String::from("| batch | total | source |");
    let mut sep = String::from("|---|---|---|");
    for s in &first.stores {
        out.push_str(&format!(" {} ({}) w / f / c |", s.table, s.engine));
        sep.push_str("---|");
    }
    out.push('\n');
    out.push_str(&sep);
    out.push('\n');
    for r in &run.rows {
        out.push_str(&format!(
            "| {} | {:.2} | {:.2} |",
            r.batch, r.total_s, r.source_s
        ));
        for s in &r.stores {
            out.push_str(&format!(
                " {:.2} / {:.2} / {:.2} |",
                s.write_s, s.commit_s, s.compact_s
            ));
        }
        out.push('\n');
    }
    out
}

/// A markdown table with one row per batch and, per store, one column per
/// layout holding that store's I/O seconds (write + flush/commit + compact).
pub fn render_side_by_side(runs: &[LayoutRun]) -> String {
    let Some(first) = runs.first().and_then(|r| r.rows.first()) else {
        return String::new();
    };
    let tables: Vec<&str> = first.stores.iter().map(|s| s.table).collect();
    let mut out = String::from("| batch |");
    let mut sep = String::from("|---|");
    for t in &tables {
        for r in runs {
            out.push_str(&format!(" {t} {} |", r.layout));
            sep.push_str("---|");
        }
    }
    for r in runs {
        out.push_str(&format!(" total {} |", r.layout));
        sep.push_str("---|");
    }
    out.push('\n');
    out.push_str(&sep);
    out.push('\n');
    let batches = runs.iter().map(|r| r.rows.len()).max().unwrap_or(0);
    for b in 0..batches {
        out.push_str(&format!("| {} |", b + 1));
        for t in &tables {
            for r in runs {
                let v = r
                    .rows
                    .get(b)
                    .and_then(|row| row.stores.iter().find(|s| s.table == *t))
                    .map_or("-".into(), |s| format!("{:.2}", s.io_s()));
                out.push_str(&format!(" {v} |"));
            }
        }
        for r in runs {
            let v = r
                .rows
                .get(b)
                .map_or("-".into(), |row| format!("{:.2}", row.total_s));
            out.push_str(&format!(" {v} |"));
        }
        out.push('\n');
    }
    out
}

/// Totals of one store in one layout.
#[derive(Debug, Clone, Serialize)]
pub struct StoreSummary {
    /// Layout.
    pub layout: &'static str,
    /// Table.
    pub table: &'static str,
    /// Engine.
    pub engine: &'static str,
    /// Sum of per-batch I/O.
    pub io_total_s: f64,
    /// Mean per-batch I/O of the first `window` batches.
    pub first_mean_s: f64,
    /// Mean per-batch I/O of the last `window` batches.
    pub last_mean_s: f64,
    /// `last_mean_s / first_mean_s`.
    pub growth: f64,
    /// Key + value bytes handed to the engine.
    pub logical_bytes: u64,
    /// Bytes the engine wrote, background work included.
    pub bytes_written: Option<u64>,
    /// `bytes_written / logical_bytes`.
    pub write_amp: Option<f64>,
    /// Final size of the store's files.
    pub disk_bytes: u64,
    /// MDBX: bytes in the table's pages.
    pub used_bytes: Option<u64>,
}

/// Totals of one layout.
#[derive(Debug, Clone, Serialize)]
pub struct LayoutSummary {
    /// Layout.
    pub layout: &'static str,
    /// Ledgers ingested.
    pub ledgers: u64,
    /// Transactions ingested.
    pub txs: u64,
    /// Sum of batch wall times, generation included.
    pub wall_s: f64,
    /// Sum of the generator's time (`source_s`).
    pub generator_s: f64,
    /// `generator_s / wall_s`.
    pub generator_share: f64,
    /// Sum of batch wall times without generation.
    pub ingest_s: f64,
    /// Background work left after the last batch.
    pub drain_s: f64,
    /// Ledgers per second of `ingest_s + drain_s`.
    pub ledgers_per_s: f64,
    /// Bytes the process wrote to storage over all batches and the drain.
    pub device_bytes: Option<u64>,
    /// Size on disk of every store (segment files included).
    pub disk_bytes: u64,
    /// Lookup rates.
    pub lookups: Option<Lookups>,
    /// The same lookups repeated at once (warm).
    pub lookups_warm: Option<Lookups>,
    /// Layout `indexed`: segments.
    pub segments: Option<SegmentSummary>,
    /// The process's memory at each checkpoint and after the drain.
    pub memory: Vec<MemCheckpoint>,
    /// The timed reopen of the closed store.
    pub open: Option<ColdOpen>,
    /// Layout `indexed`: most index probes per lookup.
    pub probes_max: Option<usize>,
}

/// The process's memory at one checkpoint of a layout's run.
#[derive(Debug, Clone, Serialize)]
pub struct MemCheckpoint {
    /// "batch N" or "end (drained)".
    pub after: String,
    /// The batch, for batch checkpoints.
    pub batch: Option<u32>,
    /// Transactions ingested so far.
    pub txs: u64,
    /// The sample.
    #[serde(flatten)]
    pub memory: MemSample,
}

/// The checkpoints of `run`: its sampled batches, then the end.
fn checkpoints(run: &LayoutRun) -> Vec<MemCheckpoint> {
    let mut txs = 0;
    let mut out = Vec::new();
    for r in &run.rows {
        txs += r.txs;
        if let Some(memory) = r.memory {
            out.push(MemCheckpoint {
                after: format!("batch {}", r.batch),
                batch: Some(r.batch),
                txs,
                memory,
            });
        }
    }
    out.push(MemCheckpoint {
        after: "end (drained)".into(),
        batch: None,
        txs,
        memory: run.end_memory,
    });
    out
}

/// The study's summary.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Batches averaged at each end for the growth ratio.
    pub window: usize,
    /// Per layout.
    pub layouts: Vec<LayoutSummary>,
    /// Per layout × store.
    pub stores: Vec<StoreSummary>,
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Computes the summary. The growth ratio is the mean of the last 3
/// batches over the mean of the first 3 (fewer when there are under 6).
pub fn summarize(runs: &[LayoutRun]) -> Summary {
    let batches = runs.iter().map(|r| r.rows.len()).min().unwrap_or(0);
    let window = (batches / 2).clamp(1, 3);
    let mut layouts = Vec::new();
    let mut stores = Vec::new();
    for run in runs {
        let wall_s: f64 = run.rows.iter().map(|r| r.total_s).sum();
        let generator_s: f64 = run.rows.iter().map(|r| r.source_s).sum();
        let ingest_s = wall_s - generator_s;
        let ledgers: u64 = run.rows.iter().map(|r| r.ledgers).sum();
        layouts.push(LayoutSummary {
            layout: run.layout,
            ledgers,
            txs: run.rows.iter().map(|r| r.txs).sum(),
            wall_s,
            generator_s,
            generator_share: if wall_s > 0.0 {
                generator_s / wall_s
            } else {
                0.0
            },
            ingest_s,
            drain_s: run.drain_s,
            ledgers_per_s: ledgers as f64 / (ingest_s + run.drain_s).max(1e-9),
            device_bytes: run
                .rows
                .iter()
                .map(|r| r.device_bytes)
                .sum::<Option<u64>>()
                .map(|b| b + run.drain_device_bytes.unwrap_or(0)),
            disk_bytes: run.finals.iter().map(|f| f.disk_bytes).sum(),
            lookups: run.lookups.clone(),
            lookups_warm: run.lookups_warm.clone(),
            segments: run.segments.clone(),
            memory: checkpoints(run),
            open: run.open.clone(),
            probes_max: run.probes_max,
        });
        for fin in &run.finals {
            let io: Vec<f64> = run
                .rows
                .iter()
                .filter_map(|r| r.stores.iter().find(|s| s.table == fin.table))
                .map(|s| s.io_s())
                .collect();
            let logical: u64 = run
                .rows
                .iter()
                .filter_map(|r| r.stores.iter().find(|s| s.table == fin.table))
                .map(|s| s.logical_bytes)
                .sum();
            let first = mean(&io[..window.min(io.len())]);
            let last = mean(&io[io.len().saturating_sub(window)..]);
            stores.push(StoreSummary {
                layout: run.layout,
                table: fin.table,
                engine: fin.engine,
                // `+ 0.0`: an empty f64 sum is -0.0.
                io_total_s: io.iter().sum::<f64>() + 0.0,
                first_mean_s: first,
                last_mean_s: last,
                growth: if first > 0.0 { last / first } else { 0.0 },
                logical_bytes: logical,
                bytes_written: fin.bytes_written,
                write_amp: fin
                    .bytes_written
                    .filter(|_| logical > 0)
                    .map(|w| w as f64 / logical as f64),
                disk_bytes: fin.disk_bytes,
                used_bytes: fin.used_bytes,
            });
        }
    }
    Summary {
        window,
        layouts,
        stores,
    }
}

/// The summary as markdown: per store, then per layout the ingest, the
/// reopen and the lookups, then the segments.
pub fn render_summary(s: &Summary) -> String {
    let mut out = render_store_table(s);
    out.push('\n');
    out.push_str(&render_ingest_table(&s.layouts));
    out.push('\n');
    out.push_str(&render_reopen_table(&s.layouts));
    out.push('\n');
    out.push_str(&render_lookups_table(&s.layouts));
    out.push_str(&render_segments(&s.layouts));
    out
}

fn render_store_table(s: &Summary) -> String {
    let mut out = format!(
        "| layout | store | engine | I/O sum (s) | first {w} mean (s) | last {w} mean (s) | growth | written (GB) | logical (GB) | write amp | on disk (GB) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
        w = s.window
    );
    for st in &s.stores {
        let disk = match st.used_bytes {
            Some(u) => format!("{} (pages {})", gb(st.disk_bytes), gb(u)),
            None => gb(st.disk_bytes),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2}x | {} | {} | {} | {} |\n",
            st.layout,
            st.table,
            st.engine,
            st.io_total_s,
            st.first_mean_s,
            st.last_mean_s,
            st.growth,
            st.bytes_written.map_or("-".into(), gb),
            gb(st.logical_bytes),
            st.write_amp.map_or("-".into(), |w| format!("{w:.2}")),
            disk,
        ));
    }
    out
}

/// Ingest per layout: wall time split into the generator and the rest,
/// the drain, bytes, and the memory left after the drain.
fn render_ingest_table(layouts: &[LayoutSummary]) -> String {
    let mut out = String::from(
        "| layout | ledgers | txs | wall (s) | generator (s) | generator share | ingest (s) | drain (s) | ledgers/s | device written (GB) | on disk (GB) | end RssAnon (MiB) | end VmRSS (MiB) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for l in layouts {
        let end = l.memory.last().map(|m| m.memory).unwrap_or_default();
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} | {:.1} | {:.1}% | {:.1} | {:.1} | {:.1} | {} | {} | {} | {} |\n",
            l.layout,
            l.ledgers,
            l.txs,
            l.wall_s,
            l.generator_s,
            l.generator_share * 100.0,
            l.ingest_s,
            l.drain_s,
            l.ledgers_per_s,
            l.device_bytes.map_or("-".into(), gb),
            gb(l.disk_bytes),
            mib(end.rss_anon_bytes),
            mib(end.vm_rss_bytes),
        ));
    }
    out
}

/// The timed reopen per layout: cache state, the open, the background work
/// it started, and the index probes a lookup makes at most.
fn render_reopen_table(layouts: &[LayoutSummary]) -> String {
    let mut out = String::from(
        "| layout | cache | open (s) | read by open (MB) | settle after open (s) | read while settling (MB) | probes (max) |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for l in layouts {
        let Some(o) = &l.open else {
            continue;
        };
        out.push_str(&format!(
            "| {} | {} | {:.2} | {} | {:.2} | {} | {} |\n",
            l.layout,
            o.cache(),
            o.open_s,
            mb(o.open_read_bytes),
            o.settle_s,
            mb(o.settle_read_bytes),
            l.probes_max.map_or("-".into(), |p| p.to_string()),
        ));
    }
    out
}

/// Lookups per layout, on the reopened store: rates, latencies and the
/// disk bytes each one read.
fn render_lookups_table(layouts: &[LayoutSummary]) -> String {
    let mut out = String::from(
        "| layout | cache | lookups | tx hits/s | hit p50 (µs) | hit p99 (µs) | read B/hit | tx misses/s | miss p50 (µs) | miss p99 (µs) | read B/miss |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let read = |b: Option<f64>| b.map_or("-".into(), |b| format!("{b:.0}"));
    for (l, x) in layouts.iter().flat_map(|l| {
        [&l.lookups, &l.lookups_warm]
            .into_iter()
            .flatten()
            .map(move |x| (l, x))
    }) {
        out.push_str(&format!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} | {} | {:.0} | {:.0} | {:.0} | {} |\n",
            l.layout,
            cache_word(x.cold),
            x.count,
            x.hits_per_s,
            x.hit_p50_us,
            x.hit_p99_us,
            read(x.hit_read_bytes),
            x.misses_per_s,
            x.miss_p50_us,
            x.miss_p99_us,
            read(x.miss_read_bytes),
        ));
    }
    out
}

fn render_segments(layouts: &[LayoutSummary]) -> String {
    let mut out = String::new();
    for l in layouts {
        if let Some(seg) = &l.segments {
            out.push_str(&format!(
                "\n{}: {} segments, {} keys, {} on disk, {:.2} bits/key ({:.2} of them the MPH), built in {:.2} s ({:.2} s per million keys)\n",
                l.layout,
                seg.count,
                seg.keys,
                gb(seg.file_bytes),
                seg.bits_per_key,
                seg.mph_bits_per_key,
                seg.build_s,
                seg.build_s_per_mkeys,
            ));
        }
    }
    out
}

/// One layout's memory checkpoints as a markdown table (MiB).
pub fn render_memory_table(l: &LayoutSummary) -> String {
    let mut out = String::from(
        "| after | txs | RssAnon (MiB) | VmRSS (MiB) | peak VmRSS so far (MiB) |\n\
         |---|---|---|---|---|\n",
    );
    for m in &l.memory {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            m.after,
            m.txs,
            mib(m.memory.rss_anon_bytes),
            mib(m.memory.vm_rss_bytes),
            mib(m.memory.vm_hwm_bytes)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::testdata::run;

    #[test]
    fn growth_uses_the_last_three_over_the_first_three() {
        let s = summarize(&[run("hybrid", &[1.0, 1.0, 1.0, 5.0, 3.0, 3.0, 3.0])]);
        assert_eq!(s.window, 3);
        let st = &s.stores[0];
        assert!((st.growth - 3.0).abs() < 1e-9, "{}", st.growth);
        assert!((st.io_total_s - 17.0).abs() < 1e-9);
        assert_eq!(st.logical_bytes, 3500);
        assert!((st.write_amp.expect("known") - 2.0).abs() < 1e-9);
        let l = &s.layouts[0];
        // 7 batches of (t + 1 - 0.5) plus a 2 s drain, 70 ledgers.
        assert!((l.ingest_s - 20.5).abs() < 1e-9, "{}", l.ingest_s);
        assert!((l.ledgers_per_s - 70.0 / 22.5).abs() < 1e-9);
    }

    #[test]
    fn short_runs_shrink_the_window_and_tables_have_every_batch() {
        let runs = [run("hybrid", &[1.0, 2.0]), run("rocksdb", &[1.0, 4.0])];
        let s = summarize(&runs);
        assert_eq!(s.window, 1);
        assert!((s.stores[1].growth - 4.0).abs() < 1e-9);
        let side = render_side_by_side(&runs);
        assert!(
            side.starts_with("| batch | tx_data hybrid | tx_data rocksdb |"),
            "{side}"
        );
        assert!(side.contains("| 2 | 2.00 | 4.00 | 3.00 | 5.00 |"), "{side}");
        let text = render_summary(&s);
        assert!(
            text.contains("| hybrid | tx_data | mdbx | 3.00 |"),
            "{text}"
        );
        assert!(
            text.contains("4096") || text.contains("0.00 (pages 0.00)"),
            "{text}"
        );
        assert!(render_row(&runs[0].rows[0]).contains("tx_data mdbx 500ms/500ms/0ms"));
        assert!(render_layout_table(&runs[0]).contains("| 2 | 3.00 | 0.50 | 1.00 / 1.00 / 0.00 |"));
    }
}
