//! The study's files: a CSV with one row per layout × batch × store, a CSV
//! with one row per layout (its totals, reopen, lookups and memory), and a
//! PNG plot of per-batch store I/O time against batch number.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;

use super::render::LayoutSummary;
use super::{LayoutRun, MemSample, cache_word};
use crate::{BenchError, BenchResult};

/// CSV header; one row per layout × batch × store. The last three columns
/// are the process's memory after the batch, set only on checkpoint
/// batches (`STUDY_MEM_EVERY_TXS`).
pub const CSV_HEADER: &str = "layout,batch,table,engine,write_s,commit_s,compact_s,io_s,\
logical_bytes,bytes_written,disk_bytes,batch_total_s,batch_source_s,batch_cpu_s,batch_ledgers,batch_txs,\
rss_anon_bytes,vm_rss_bytes,vm_hwm_bytes";

/// Header of the per-layout CSV: totals, the reopen, lookups (latencies in
/// µs, disk bytes read per lookup) and the memory left after the drain.
pub const LAYOUTS_CSV_HEADER: &str = "layout,ledgers,txs,wall_s,generator_s,generator_share,\
ingest_s,drain_s,ledgers_per_s,device_bytes,disk_bytes,end_rss_anon_bytes,end_vm_rss_bytes,end_vm_hwm_bytes,\
open_cache,open_s,open_read_bytes,settle_s,settle_read_bytes,probes_max,\
lookups_cache,lookups,hits_per_s,hit_p50_us,hit_p99_us,hit_read_bytes,\
misses_per_s,miss_p50_us,miss_p99_us,miss_read_bytes";

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn opt_f(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| format!("{v:.3}"))
}

/// Writes the CSV to `path`.
pub fn write_csv(path: &Path, runs: &[LayoutRun]) -> BenchResult<()> {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for run in runs {
        for r in &run.rows {
            for s in &r.stores {
                let _ = writeln!(
                    out,
                    "{},{},{},{},{:.6},{:.6},{:.6},{:.6},{},{},{},{:.6},{:.6},{:.6},{},{},{},{},{}",
                    run.layout,
                    r.batch,
                    s.table,
                    s.engine,
                    s.write_s,
                    s.commit_s,
                    s.compact_s,
                    s.io_s(),
                    s.logical_bytes,
                    s.bytes_written.map_or(String::new(), |b| b.to_string()),
                    s.disk_bytes,
                    r.total_s,
                    r.source_s,
                    r.cpu_s,
                    r.ledgers,
                    r.txs,
                    opt(r.memory.and_then(|m| m.rss_anon_bytes)),
                    opt(r.memory.and_then(|m| m.vm_rss_bytes)),
                    opt(r.memory.and_then(|m| m.vm_hwm_bytes)),
                );
            }
        }
    }
    std::fs::write(path, out).map_err(BenchError::io(format!("writing {}", path.display())))
}

/// Writes the per-layout CSV to `path`.
pub fn write_layouts_csv(path: &Path, layouts: &[LayoutSummary]) -> BenchResult<()> {
    let mut out = String::from(LAYOUTS_CSV_HEADER);
    out.push('\n');
    for l in layouts {
        out.push_str(&layout_csv_row(l));
        out.push('\n');
    }
    std::fs::write(path, out).map_err(BenchError::io(format!("writing {}", path.display())))
}

fn layout_csv_row(l: &LayoutSummary) -> String {
    let end: MemSample = l.memory.last().map(|m| m.memory).unwrap_or_default();
    let look = l.lookups.as_ref();
    let f = |g: fn(&super::Lookups) -> f64| opt_f(look.map(g));
    let open = l.open.as_ref();
    format!(
        "{},{},{},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        l.layout,
        l.ledgers,
        l.txs,
        l.wall_s,
        l.generator_s,
        l.generator_share,
        l.ingest_s,
        l.drain_s,
        l.ledgers_per_s,
        opt(l.device_bytes),
        l.disk_bytes,
        opt(end.rss_anon_bytes),
        opt(end.vm_rss_bytes),
        opt(end.vm_hwm_bytes),
        open.map_or("", |o| o.cache()),
        opt_f(open.map(|o| o.open_s)),
        opt(open.and_then(|o| o.open_read_bytes)),
        opt_f(open.map(|o| o.settle_s)),
        opt(open.and_then(|o| o.settle_read_bytes)),
        opt(l.probes_max),
        look.map_or("", |x| cache_word(x.cold)),
        opt(look.map(|x| x.count)),
        f(|x| x.hits_per_s),
        f(|x| x.hit_p50_us),
        f(|x| x.hit_p99_us),
        opt_f(look.and_then(|x| x.hit_read_bytes)),
        f(|x| x.misses_per_s),
        f(|x| x.miss_p50_us),
        f(|x| x.miss_p99_us),
        opt_f(look.and_then(|x| x.miss_read_bytes)),
    )
}

/// Where a TrueType font is looked for (`STUDY_FONT` first). Debian's
/// `fonts-dejavu-core` provides the first; `scripts/setup.sh` installs it.
const FONT_CANDIDATES: [&str; 4] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

fn register_font() -> Result<(), String> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let paths: Vec<String> = std::env::var("STUDY_FONT")
            .ok()
            .into_iter()
            .chain(FONT_CANDIDATES.iter().map(|s| s.to_string()))
            .collect();
        for p in &paths {
            if let Ok(bytes) = std::fs::read(p) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                return plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                    .map_err(|_| format!("{p} is not a usable TrueType font"));
            }
        }
        Err(format!(
            "no TrueType font found (tried {}); install fonts-dejavu-core or set STUDY_FONT",
            paths.join(", ")
        ))
    })
    .clone()
}

fn layout_color(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 6] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(255, 127, 14),
        RGBColor(23, 190, 207),
    ];
    COLORS[i % COLORS.len()]
}

/// One line of a panel: layout index (its color), layout name, points.
type Series<'a> = (usize, &'a str, Vec<(u32, f64)>);

fn plot_err(e: impl std::fmt::Display) -> BenchError {
    BenchError::Plot(e.to_string())
}

/// Draws one panel per store (tx_data, tx_index, ledgers), each with one
/// line per layout: that store's I/O seconds per batch.
pub fn write_plot(path: &Path, runs: &[LayoutRun], subtitle: &str) -> BenchResult<()> {
    register_font().map_err(BenchError::Plot)?;
    let Some(first) = runs.first().and_then(|r| r.rows.first()) else {
        return Err(BenchError::Plot("no batches to plot".into()));
    };
    let tables: Vec<&str> = first.stores.iter().map(|s| s.table).collect();
    let batches = runs.iter().map(|r| r.rows.len()).max().unwrap_or(1) as u32;
    let root = BitMapBackend::new(path, (600 * tables.len() as u32, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let root = root
        .titled(
            &format!("Store I/O per batch (write + flush/commit + compact): {subtitle}"),
            ("sans-serif", 18),
        )
        .map_err(plot_err)?;
    for (panel, table) in root.split_evenly((1, tables.len())).iter().zip(&tables) {
        let series: Vec<Series> = runs
            .iter()
            .enumerate()
            .map(|(i, run)| {
                let pts = run
                    .rows
                    .iter()
                    .filter_map(|r| {
                        r.stores
                            .iter()
                            .find(|s| s.table == *table)
                            .map(|s| (r.batch, s.io_s()))
                    })
                    .collect();
                (i, run.layout, pts)
            })
            .collect();
        let y_max = series
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|&(_, y)| y))
            .fold(0.0f64, f64::max)
            .max(0.01)
            * 1.1;
        let engines: Vec<String> = runs
            .iter()
            .filter_map(|run| {
                let e = run
                    .rows
                    .first()?
                    .stores
                    .iter()
                    .find(|s| s.table == *table)?;
                Some(format!("{}: {}", run.layout, e.engine))
            })
            .collect();
        let mut chart = ChartBuilder::on(panel)
            .caption(*table, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(1u32..batches.max(2), 0.0..y_max)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("batch")
            .y_desc("seconds")
            .draw()
            .map_err(plot_err)?;
        for (i, layout, pts) in series {
            let color = layout_color(i);
            let label = engines
                .iter()
                .find(|e| e.starts_with(&format!("{layout}:")))
                .cloned()
                .unwrap_or_else(|| layout.to_string());
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(plot_err)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(plot_err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)?;
    }
    root.present().map_err(plot_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::testdata::run;

    #[test]
    fn csv_has_a_row_per_layout_batch_and_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("study.csv");
        write_csv(
            &path,
            &[run("hybrid", &[1.0, 2.0]), run("rocksdb", &[1.0, 2.0, 3.0])],
        )
        .expect("csv");
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 1 + 2 + 3);
        assert_eq!(
            lines[5],
            "rocksdb,3,tx_data,mdbx,1.500000,1.500000,0.000000,3.000000,500,1000,4096,4.000000,0.500000,0.250000,10,100,,,"
        );
        let cols = CSV_HEADER.split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == cols));
    }

    #[test]
    fn layouts_csv_has_a_row_per_layout_with_every_column() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("layouts.csv");
        let mut with_memory = run("indexed", &[1.0, 2.0]);
        with_memory.rows[1].memory = Some(MemSample {
            rss_anon_bytes: Some(1 << 20),
            vm_rss_bytes: Some(2 << 20),
            vm_hwm_bytes: Some(2 << 20),
        });
        with_memory.end_memory = MemSample {
            rss_anon_bytes: Some(3 << 20),
            vm_rss_bytes: None,
            vm_hwm_bytes: None,
        };
        with_memory.probes_max = Some(4);
        let s = crate::study::summarize(&[run("hybrid", &[1.0]), with_memory]);
        write_layouts_csv(&path, &s.layouts).expect("csv");
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let cols = LAYOUTS_CSV_HEADER.split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == cols), "{text}");
        // Two batches of 2 and 3 s wall, 0.5 s of generation each.
        assert!(
            lines[2].starts_with("indexed,20,200,5.000000,1.000000,0.200000,4.000000,"),
            "{}",
            lines[2]
        );
        assert!(lines[2].contains(",3145728,,,,,,,,4,"), "{}", lines[2]);
    }

    #[test]
    fn plot_is_a_png_or_names_the_missing_font() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("study.png");
        let runs = [
            run("hybrid", &[1.0, 2.0, 2.5]),
            run("rocksdb", &[1.0, 4.0, 9.0]),
        ];
        match write_plot(&path, &runs, "test") {
            Ok(()) => {
                let bytes = std::fs::read(&path).expect("read png");
                assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
                assert!(bytes.len() > 10_000, "{} bytes", bytes.len());
            }
            Err(BenchError::Plot(msg)) => assert!(msg.contains("fonts-dejavu-core"), "{msg}"),
            Err(e) => panic!("{e}"),
        }
    }
}
