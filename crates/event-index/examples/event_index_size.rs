//! Bytes per event and query latency of one index file of N synthetic
//! events in the shapes of the pubnet ledgers (`tests/common/synth.rs`).
//!
//! `cargo run --release --locked -p ledgerstore-event-index --example
//! event_index_size -- N [DIR [keep]]` builds `DIR/bench-N.idx` (DIR
//! defaults to the system temp dir; the file is deleted at the end, unless
//! `keep`, with which a later run reuses it if it opens), prints its size
//! by section, then the p50/p99 of two getEvents-like queries, each a page
//! of up to 100 hits from a random ledger of the range, ids resolved:
//!
//! - one contract id, drawn as the events draw them (Zipf-like);
//! - 15 filter terms: 5 filters, each 3 contract ids and the pattern
//!   `["transfer", *, *, *]`.
//!
//! Warm (the file just written, in the page cache), then cold: the page
//! cache dropped (`/proc/sys/vm/drop_caches`, root only) before each query
//! and the file mapped anew (mapped pages survive a drop), the open timed
//! with the query. Cold, it also prints a baseline (the same cold query
//! on a tiny file: the path lookup, the open and whatever of the program
//! the drop evicted), and per query the page faults and the bytes this
//! process read from the disk (`/proc/self/stat`, `/proc/self/io`: the
//! kernel's readahead included), and the time of each step: open; plan
//! (the lists' keys looked up, the lists' heads parsed, the start id's
//! ordinal); the first hit (its first seeks, a block each, and its id);
//! the other 99 hits (with `STEPS=1` in the environment; else the time of
//! `EventIndex::query`, which resolves a page's ids together).

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::time::Instant;

use common::synth::{Synth, contract_id, sym};
use ledgerstore_event_index::{
    EventIndex, EventIndexBuilder, Filter, Query, Segment, TopicPattern,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn peak_rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// This process's page faults and bytes read from the block layer (the
/// kernel's readahead included): `/proc/self/stat` and `/proc/self/io`.
struct Probe {
    minflt: u64,
    majflt: u64,
    read_bytes: u64,
}

impl Probe {
    fn now() -> Self {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // Fields after the command's closing parenthesis: state is 3rd,
        // minflt the 10th and majflt the 12th of the whole line.
        let rest = stat.rsplit_once(')').map_or("", |r| r.1);
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
        let read_bytes = io
            .lines()
            .find_map(|l| l.strip_prefix("read_bytes: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        Probe {
            minflt: f.get(7).copied().unwrap_or(0),
            majflt: f.get(9).copied().unwrap_or(0),
            read_bytes,
        }
    }
}

fn drop_caches() -> bool {
    std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p) as usize]
}

fn zipf(rng: &mut ChaCha8Rng, pop: f64) -> u64 {
    let u: f64 = rng.random();
    (pop.powf(u) - 1.0).floor() as u64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = args.next().map_or_else(std::env::temp_dir, PathBuf::from);
    // `keep`: reuse DIR/bench-N.idx if it opens (built by an earlier run
    // with `keep`, of this format), and leave it there at the end.
    let keep = args.next().as_deref() == Some("keep");
    // STEPS=1: walk each page one hit at a time (`matches`), timing the
    // steps, instead of `EventIndex::query`.
    let steps_mode = std::env::var_os("STEPS").is_some();
    let path = dir.join(format!("bench-{n}.idx"));
    let first = 60_000_000;

    let reused = if keep {
        EventIndex::open(&path).ok()
    } else {
        None
    };
    let (idx, used_last) = if let Some(idx) = reused {
        let used_last = idx.id_of(idx.events() - 1).expect("last id").ledger;
        // Into the page cache, as if just written, for the warm queries.
        let mut f = std::fs::File::open(&path).expect("open");
        std::io::copy(&mut f, &mut std::io::sink()).expect("read");
        println!(
            "events {n}, ledgers {first}..={used_last}, file {} bytes = {:.2} B/event (reused)",
            std::fs::metadata(&path).map_or(0, |m| m.len()),
            std::fs::metadata(&path).map_or(0, |m| m.len()) as f64 / n as f64,
        );
        (idx, used_last)
    } else {
        let t = Instant::now();
        let mut synth = Synth::new(n, 42, first);
        // The generator's last ledger is only known at the end: size the
        // range generously (~650 events a ledger, at least 250 a ledger).
        let last = first + (n / 250) as u32 + 10;
        let mut b = EventIndexBuilder::new(first, last).expect("builder");
        for e in synth.by_ref() {
            let topics: Vec<&[u8]> = e.topics.iter().map(|t| t.as_slice()).collect();
            b.push(e.id, e.kind, e.contract.as_ref(), &topics)
                .expect("push");
        }
        let gen_s = t.elapsed().as_secs_f64();
        let size = b.finish(&path).expect("finish");
        let build_s = t.elapsed().as_secs_f64();
        let idx = EventIndex::open(&path).expect("open");
        let used_last = synth.next_ledger() - 1;
        println!(
            "events {n}, ledgers {first}..={used_last}, file {size} bytes = {:.2} B/event; \
             build {build_s:.1} s (generate + push {gen_s:.1} s), peak RSS {:.0} MB",
            size as f64 / n as f64,
            peak_rss_mb()
        );
        (idx, used_last)
    };
    let (nc, nt) = idx.keys();
    println!("contract ids {nc}, topic keys {nt}");
    for (name, bytes) in idx.section_sizes() {
        println!(
            "  {name:>10}: {bytes:>13} bytes  {:>6.2} B/event",
            bytes as f64 / n as f64
        );
    }
    let t = Instant::now();
    idx.verify().expect("sha");
    println!("verify (SHA-256) {:.2} s", t.elapsed().as_secs_f64());

    let contracts = (n as f64 / 2000.0).max(20.0);
    let transfer = TopicPattern::new(vec![
        Segment::Value(sym("transfer")),
        Segment::Any,
        Segment::Any,
        Segment::Any,
    ])
    .expect("pattern");
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let pick = |rng: &mut ChaCha8Rng| {
        if rng.random_bool(0.2) {
            contract_id(0)
        } else {
            contract_id(1 + zipf(rng, contracts))
        }
    };
    let queries: Vec<(&str, Vec<Filter>)> = (0..400)
        .flat_map(|_| {
            let one = vec![Filter {
                contract_ids: vec![pick(&mut rng)],
                ..Default::default()
            }];
            let fifteen = (0..5)
                .map(|_| Filter {
                    contract_ids: (0..3).map(|_| pick(&mut rng)).collect(),
                    topics: vec![transfer.clone()],
                    ..Default::default()
                })
                .collect();
            [
                ("one contract id", one),
                ("15-term (5 filters × 3 ids + topic)", fifteen),
            ]
        })
        .collect();
    let starts: Vec<u32> = (0..queries.len())
        .map(|_| rng.random_range(first..=used_last))
        .collect();
    // A tiny file for the cold baseline: what a cold query costs before
    // it reads any of the big file (the program's own code and libc
    // faulted back in after the drop, the path lookup and the open).
    let tiny = dir.join(format!("bench-{n}-tiny.idx"));
    {
        let mut b = EventIndexBuilder::new(first, first + 20).expect("builder");
        for e in Synth::new(2000, 43, first).take_while(|e| e.id.ledger <= first + 20) {
            let topics: Vec<&[u8]> = e.topics.iter().map(|t| t.as_slice()).collect();
            b.push(e.id, e.kind, e.contract.as_ref(), &topics)
                .expect("push");
        }
        b.finish(&tiny).expect("finish");
    }
    let cold_ok = drop_caches();
    let mut warm = Some(idx);
    for cold in [false, true] {
        if cold {
            warm = None; // unmapped, so that the drop reaches its pages
        }
        if cold && !cold_ok {
            println!("cold: cannot drop the page cache here (not root?)");
            break;
        }
        let shapes: &[(&str, bool)] = if cold {
            &[
                ("one contract id", true),
                ("one contract id", false),
                ("15-term (5 filters × 3 ids + topic)", false),
            ]
        } else {
            &[
                ("one contract id", false),
                ("15-term (5 filters × 3 ids + topic)", false),
            ]
        };
        for &(shape, on_tiny) in shapes {
            let (mut lat, mut hits) = (Vec::new(), 0usize);
            let mut steps: [Vec<f64>; 4] = Default::default();
            let (mut majflt, mut minflt, mut read_kb) = (Vec::new(), Vec::new(), Vec::new());
            let runs = if cold { 100 } else { 400 };
            for ((_, fs), &start) in queries
                .iter()
                .zip(&starts)
                .filter(|q| q.0.0 == shape)
                .take(runs)
            {
                // Mapped pages survive drop_caches: unmap, drop, map again.
                let mut fresh = None;
                if cold {
                    drop_caches();
                }
                let before = Probe::now();
                let t = Instant::now();
                if cold {
                    let p = if on_tiny { &tiny } else { &path };
                    fresh = Some(EventIndex::open(p).expect("open"));
                }
                let Some(idx) = fresh.as_ref().or(warm.as_ref()) else {
                    break;
                };
                let t_open = t.elapsed();
                let start = if on_tiny { first } else { start };
                let q = Query::from_ledger(fs.clone(), start);
                let mut got = 0usize;
                let (t_plan, t_first) = if steps_mode {
                    // The page one hit at a time, timing the steps.
                    let mut m = idx.matches(&q).expect("query");
                    let t_plan = t.elapsed();
                    if let Some(h) = m.next() {
                        h.expect("hit");
                        got += 1;
                    }
                    let t_first = t.elapsed();
                    for h in m.take(99) {
                        h.expect("hit");
                        got += 1;
                    }
                    (t_plan, t_first)
                } else {
                    got = idx.query(&q, 100).expect("query").len();
                    (t_open, t_open)
                };
                let t_all = t.elapsed();
                let after = Probe::now();
                lat.push(t_all.as_secs_f64() * 1e3);
                for (v, d) in steps.iter_mut().zip([
                    t_open,
                    t_plan - t_open,
                    t_first - t_plan,
                    t_all - t_first,
                ]) {
                    v.push(d.as_secs_f64() * 1e3);
                }
                majflt.push((after.majflt - before.majflt) as f64);
                minflt.push((after.minflt - before.minflt) as f64);
                read_kb.push((after.read_bytes - before.read_bytes) as f64 / 1024.0);
                hits += got;
            }
            let k = lat.len();
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
            println!(
                "{} {shape}{}: p50 {:.3} ms  p99 {:.3} ms  ({k} queries, {:.0} hits a page)",
                if cold { "cold" } else { "warm" },
                if on_tiny {
                    ", tiny file (baseline)"
                } else {
                    ""
                },
                pct(&mut lat, 0.5),
                pct(&mut lat, 0.99),
                hits as f64 / k as f64
            );
            println!(
                "    faults a query: major {:.1} (p99 {:.0}), minor {:.1}; read {:.0} KiB (p99 {:.0})",
                mean(&majflt),
                pct(&mut majflt, 0.99),
                mean(&minflt),
                mean(&read_kb),
                pct(&mut read_kb, 0.99),
            );
            let names = if steps_mode {
                &[
                    "open",
                    "plan (keys, lists, start)",
                    "first hit",
                    "99 more hits",
                ][..]
            } else {
                &["open", "", "", "query (EventIndex::query)"][..]
            };
            let line: Vec<String> = names
                .iter()
                .zip(steps.iter_mut())
                .filter(|(nm, _)| !nm.is_empty())
                .map(|(nm, v)| {
                    let m = mean(v);
                    format!("{nm} {m:.3} / p99 {:.3}", pct(v, 0.99))
                })
                .collect();
            println!("    ms: {}", line.join(";  "));
        }
    }
    drop(warm);
    if !keep {
        let _ = std::fs::remove_file(&path);
    }
    let _ = std::fs::remove_file(&tiny);
}
