//! The whole study: every layout, then the tables, the summary and the
//! files. Used by the `study` bench target and by the smoke test.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use super::{
    LayoutRun, MemLimit, StudyConfig, Summary, render_layout_table, render_memory_table,
    render_row, render_side_by_side, render_summary, run_layout, summarize, write_csv,
    write_layouts_csv, write_plot,
};
use crate::{BenchError, BenchResult};

/// What a study produced.
#[derive(Debug)]
pub struct StudyOutput {
    /// Per layout.
    pub runs: Vec<LayoutRun>,
    /// The summary.
    pub summary: Summary,
    /// The markdown report (also in `summary.md`).
    pub markdown: String,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Why the plot is missing, if it is.
    pub plot_error: Option<String>,
}

#[derive(Serialize)]
struct Json<'a> {
    config: &'a StudyConfig,
    memory: String,
    runs: &'a [LayoutRun],
    summary: &'a Summary,
}

/// Runs the study, printing progress lines through `log`.
pub fn run_study(cfg: &StudyConfig, log: &mut dyn FnMut(&str)) -> BenchResult<StudyOutput> {
    let mem = MemLimit::detect();
    let header = header(cfg, &mem);
    for line in header.lines() {
        log(line);
    }
    let mut runs = Vec::new();
    for &layout in &cfg.layouts {
        log(&format!("--- {} ---", layout.name()));
        let run = run_layout(cfg, layout, &mut |row| log(&render_row(row)))?;
        log(&format!(
            "{}: background work drained in {:.2}s after the last batch",
            run.layout, run.drain_s
        ));
        if let Some(open) = &run.open {
            log(&format!(
                "{}: reopened in {:.2}s ({} page cache, {:.1} MB read), background work after it {:.2}s",
                run.layout,
                open.open_s,
                open.cache(),
                open.open_read_bytes.unwrap_or(0) as f64 / 1e6,
                open.settle_s
            ));
        }
        runs.push(run);
    }
    let summary = summarize(&runs);
    let side = render_side_by_side(&runs);
    let table = render_summary(&summary);
    log("");
    log("Store I/O per batch (s), side by side:");
    for line in side.lines().chain([""]).chain(table.lines()) {
        log(line);
    }
    for l in &summary.layouts {
        log("");
        log(&stored_vs_memory(l.layout, l.disk_bytes, &mem));
        log(&format!("{}: process memory", l.layout));
        for line in render_memory_table(l).lines() {
            log(line);
        }
    }

    std::fs::create_dir_all(&cfg.out_dir).map_err(BenchError::io(format!(
        "creating {}",
        cfg.out_dir.display()
    )))?;
    let mut files = Vec::new();
    let csv = cfg.out_dir.join("study.csv");
    write_csv(&csv, &runs)?;
    files.push(csv);
    let layouts_csv = cfg.out_dir.join("study-layouts.csv");
    write_layouts_csv(&layouts_csv, &summary.layouts)?;
    files.push(layouts_csv);
    let png = cfg.out_dir.join("study.png");
    let subtitle = format!(
        "{} batches x {} ledgers x {} tx{}",
        cfg.batches,
        cfg.ledgers_per_batch,
        cfg.tx_per_ledger,
        if cfg.layout_batches.is_empty() {
            String::new()
        } else {
            format!(" ({})", cfg.layout_batches_knob().trim())
        }
    );
    let plot_error = match write_plot(&png, &runs, &subtitle) {
        Ok(()) => {
            files.push(png);
            None
        }
        Err(e) => {
            log(&format!("no plot: {e}"));
            Some(e.to_string())
        }
    };
    let mut md = header.clone();
    let _ = write!(
        md,
        "\n### Store I/O per batch (seconds), side by side\n\n{side}\n### Summary\n\n{table}"
    );
    for (run, l) in runs.iter().zip(&summary.layouts) {
        let _ = write!(
            md,
            "\n### {}: per batch, write / flush-or-commit / compact (seconds)\n\n{}\n\
             Background work drained {:.2}s after the last batch. {}\n\n\
             ### {}: process memory (every {} txs and after the drain)\n\n{}",
            run.layout,
            render_layout_table(run),
            run.drain_s,
            stored_vs_memory(l.layout, l.disk_bytes, &mem),
            run.layout,
            cfg.mem_every_txs,
            render_memory_table(l)
        );
    }
    let summary_md = cfg.out_dir.join("summary.md");
    std::fs::write(&summary_md, &md).map_err(BenchError::io("writing summary.md"))?;
    files.push(summary_md);
    let json = cfg.out_dir.join("results.json");
    let body = serde_json::to_vec_pretty(&Json {
        config: cfg,
        memory: mem.render(),
        runs: &runs,
        summary: &summary,
    })
    .map_err(|e| BenchError::Invalid(format!("serializing results: {e}")))?;
    std::fs::write(&json, body).map_err(BenchError::io("writing results.json"))?;
    files.push(json);
    for f in &files {
        log(&format!("wrote {}", f.display()));
    }
    Ok(StudyOutput {
        runs,
        summary,
        markdown: md,
        files,
        plot_error,
    })
}

/// What a layout stored against the memory the page cache may use (the
/// scale benchmark wants at least 4x).
fn stored_vs_memory(layout: &str, disk_bytes: u64, mem: &MemLimit) -> String {
    let limit = mem.effective_bytes().max(1);
    format!(
        "{layout}: {:.2} GB on disk, {:.2}x the memory {}.",
        disk_bytes as f64 / 1e9,
        disk_bytes as f64 / limit as f64,
        if mem.limit_bytes.is_some() {
            "limit"
        } else {
            "(no limit: RAM)"
        }
    )
}

/// Raw bytes per stored byte, roughly (zstd-3 on synthetic records, plus
/// the engines' overhead); only for the header's estimate.
const STORED_RATIO: f64 = 3.5;

fn header(cfg: &StudyConfig, mem: &MemLimit) -> String {
    let layouts: Vec<String> = cfg
        .layouts
        .iter()
        .map(|&l| match cfg.batches_for(l) {
            n if n == cfg.batches => l.name().to_string(),
            n => format!("{} (only {n} batches: STUDY_LAYOUT_BATCHES)", l.name()),
        })
        .collect();
    let raw_gb = cfg.raw_bytes() as f64 / 1e9;
    let cache_gb = mem.effective_bytes() as f64 / 1e9;
    format!(
        "Degradation study: {} batches x {} ledgers x {} tx per ledger ({} ledgers, {} tx per layout)\n\
         Shape: {} B raw per tx, {} B raw per ledger; {:.1} GB raw per layout\n\
         Layouts: {}\n\
         Memory: {}; stored data per layout est. {:.1} GB ({})\n\
         Measured: RssAnon/VmRSS every {} txs and after the drain; reopen {}; \
         lookups on the reopened store; generator share = generation / batch wall time\n\
         Command: `{}`\n",
        cfg.batches,
        cfg.ledgers_per_batch,
        cfg.tx_per_ledger,
        cfg.ledgers(),
        cfg.ledgers() * u64::from(cfg.tx_per_ledger),
        cfg.tx_bytes,
        cfg.ledger_bytes,
        raw_gb,
        layouts.join(", "),
        mem.render(),
        raw_gb / STORED_RATIO,
        if raw_gb / STORED_RATIO > cache_gb {
            "outgrows the page cache"
        } else {
            "fits in the page cache"
        },
        cfg.mem_every_txs,
        if cfg.drop_caches {
            "after dropping the page cache (root only; else reported warm)"
        } else {
            "on a warm page cache (STUDY_DROP_CACHES=0)"
        },
        cfg.command()
    )
}
