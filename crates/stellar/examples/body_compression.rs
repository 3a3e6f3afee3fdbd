//! How to store a ledger's transactions once and near the lake's size:
//! the options side by side, on the 20 real pubnet ledgers of 2026
//! (protocol 26, `testdata/FC3D4709--63092982-63093001.xdr.zst`).
//! Dictionaries are trained on the first 10 ledgers and every figure is
//! measured on the other 10, so no option sees the bytes it compresses.
//!
//! Each row is the skeleton (the ledger without its transactions' parts,
//! record v3) plus the bodies in one form:
//!
//! - `lake`: the whole `LedgerCloseMeta`, one zstd frame, as the public
//!   SEP-54 lake stores it (level 19) — the baseline every row is divided by;
//! - `per tx`: each transaction's envelope, result and meta in one frame
//!   (today's `tx_bodies`), without and with a trained dictionary;
//! - `frames N KiB`: consecutive transactions of a ledger concatenated
//!   into frames of about N KiB, with a dictionary: a hit decompresses
//!   one frame;
//! - `columns N KiB`: the same, but envelopes, results and metas each in
//!   frames of their own with a dictionary each (a hit decompresses up to
//!   three frames).
//!
//! Columns: KB a ledger (skeleton + bodies + the dictionaries' share over
//! the 10 ledgers, an overstatement at scale; then without them, as at
//! scale, where a dictionary serves millions of ledgers), the ratio to the
//! lake, compression ms a ledger, and what one hit decompresses (KiB and
//! µs, averaged over every transaction).
//!
//! ```text
//! CARGO_TARGET_DIR=… cargo run --release --locked -p ledgerstore-stellar --example body_compression
//! ```

use std::path::Path;
use std::time::Instant;

use ledgerstore_db_api::{LedgerInput, split};
use ledgerstore_stellar::file::maybe_decompress;
use ledgerstore_stellar::walk::walk_batch;
use ledgerstore_stellar::{Network, ledger_from_xdr};

const DICT_BYTES: usize = 112 << 10;

fn zc(bytes: &[u8], level: i32) -> Vec<u8> {
    zstd::bulk::compress(bytes, level).expect("zstd")
}

fn train(samples: &[Vec<u8>], size: usize) -> Vec<u8> {
    zstd::dict::from_samples(samples, size).expect("train")
}

/// One measured option.
struct Row {
    name: String,
    bytes: usize,
    /// Of which dictionaries (amortised to nothing at scale).
    dict: usize,
    compress_ms: f64,
    hit_kib: f64,
    hit_us: f64,
}

/// Frames of about `target` bytes from consecutive items.
fn frames(items: &[&[u8]], target: usize) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new()];
    for it in items {
        let last = out.last_mut().expect("one");
        if !last.is_empty() && last.len() + it.len() > target {
            out.push(Vec::new());
        }
        out.last_mut().expect("one").extend_from_slice(it);
    }
    out
}

fn record(tx: &ledgerstore_db_api::TxInput) -> Vec<u8> {
    [&tx.envelope[..], &tx.result, &tx.meta].concat()
}

/// Compresses `frames` with `dict` (or none) at `level`; returns the
/// compressed sizes, the time, and each frame's decompression time.
fn with_dict(frames: &[Vec<u8>], dict: Option<&[u8]>, level: i32) -> (Vec<usize>, f64, Vec<f64>) {
    let t = Instant::now();
    let mut c = match dict {
        Some(d) => zstd::bulk::Compressor::with_dictionary(level, d).expect("cdict"),
        None => zstd::bulk::Compressor::new(level).expect("cctx"),
    };
    let packed: Vec<Vec<u8>> = frames
        .iter()
        .map(|f| c.compress(f).expect("compress"))
        .collect();
    let took = t.elapsed().as_secs_f64() * 1e3;
    let mut d = match dict {
        Some(dd) => zstd::bulk::Decompressor::with_dictionary(dd).expect("ddict"),
        None => zstd::bulk::Decompressor::new().expect("dctx"),
    };
    let times = packed
        .iter()
        .zip(frames)
        .map(|(p, f)| {
            let t = Instant::now();
            let out = d.decompress(p, f.len()).expect("decompress");
            assert_eq!(out.len(), f.len());
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    (packed.iter().map(Vec::len).collect(), took, times)
}

fn main() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/FC3D4709--63092982-63093001.xdr.zst");
    let file = std::fs::read(&path).expect("fixture");
    let network = Network::parse("pubnet").expect("pubnet");
    let plain = maybe_decompress(&file, "f", 1 << 30).expect("zstd");
    let batch = walk_batch(&plain).expect("batch");
    let ledgers: Vec<LedgerInput> = batch
        .ledgers
        .iter()
        .map(|(s, _)| ledger_from_xdr(s.of(&plain).to_vec(), &network, "fixture").expect("ledger"))
        .collect();
    let (train_set, test) = ledgers.split_at(10);
    let n = test.len() as f64;
    let txs: usize = test.iter().map(|l| l.txs.len()).sum();
    let raw: usize = test.iter().map(|l| l.raw.len()).sum();
    let skel = |l: &LedgerInput| split(&l.raw, &l.cuts, &l.txs).expect("split").bytes;
    println!(
        "{} test ledgers, {txs} txs, {:.1} KB raw a ledger, skeleton {:.1} KB raw a ledger",
        test.len(),
        raw as f64 / n / 1e3,
        test.iter().map(|l| skel(l).len()).sum::<usize>() as f64 / n / 1e3
    );

    let mut rows: Vec<Row> = Vec::new();
    // The lake: one frame per ledger.
    for level in [3, 19] {
        let t = Instant::now();
        let bytes: usize = test.iter().map(|l| zc(&l.raw, level).len()).sum();
        rows.push(Row {
            name: format!("lake: whole ledger, zstd {level}"),
            bytes,
            dict: 0,
            compress_ms: t.elapsed().as_secs_f64() * 1e3 / n,
            hit_kib: raw as f64 / n / 1024.0,
            hit_us: 0.0,
        });
    }
    // Skeletons: alone, at levels, with a dictionary of their own.
    let skel_train: Vec<Vec<u8>> = train_set.iter().map(skel).collect();
    let skel_test: Vec<Vec<u8>> = test.iter().map(skel).collect();
    let skel_dict = train(&skel_train, DICT_BYTES);
    let mut skel_bytes = std::collections::HashMap::new();
    for level in [3, 19] {
        let (plain_sizes, _, _) = with_dict(&skel_test, None, level);
        let (dict_sizes, _, _) = with_dict(&skel_test, Some(&skel_dict), level);
        let plain_sum: usize = plain_sizes.iter().sum();
        let dict_sum: usize = dict_sizes.iter().sum::<usize>() + skel_dict.len();
        println!(
            "skeleton zstd {level}: {:.1} KB a ledger; with its own dictionary {:.1} KB (dictionary included)",
            plain_sum as f64 / n / 1e3,
            dict_sum as f64 / n / 1e3
        );
        skel_bytes.insert(level, plain_sum.min(dict_sum));
    }

    // Bodies.
    let train_records: Vec<Vec<u8>> = train_set
        .iter()
        .flat_map(|l| l.txs.iter().map(record))
        .collect();
    let rec_dict = train(&train_records, DICT_BYTES);
    let test_records: Vec<Vec<u8>> = test.iter().flat_map(|l| l.txs.iter().map(record)).collect();
    for level in [3, 9, 19] {
        let skel = skel_bytes[&if level >= 9 { 19 } else { 3 }];
        for (label, dict) in [
            ("per tx", None),
            ("per tx + dictionary", Some(&rec_dict[..])),
        ] {
            let (sizes, ms, times) = with_dict(&test_records, dict, level);
            let dict_len = dict.map_or(0, <[u8]>::len);
            rows.push(Row {
                name: format!("{label}, zstd {level}"),
                bytes: skel + sizes.iter().sum::<usize>() + dict_len,
                dict: dict_len,
                compress_ms: ms / n,
                hit_kib: test_records.iter().map(Vec::len).sum::<usize>() as f64
                    / test_records.len() as f64
                    / 1024.0,
                hit_us: times.iter().sum::<f64>() / times.len() as f64,
            });
        }
        for kib in [32, 128] {
            // Whole records in frames.
            let mk = |ls: &[LedgerInput]| -> Vec<Vec<u8>> {
                ls.iter()
                    .flat_map(|l| {
                        let recs: Vec<Vec<u8>> = l.txs.iter().map(record).collect();
                        let refs: Vec<&[u8]> = recs.iter().map(Vec::as_slice).collect();
                        frames(&refs, kib << 10)
                    })
                    .collect()
            };
            let (tr, te) = (mk(train_set), mk(test));
            let dict = train(&tr, DICT_BYTES);
            let (sizes, ms, times) = with_dict(&te, Some(&dict), level);
            // A hit decompresses the frame holding it: weigh by txs in it.
            let per_tx = hit_cost(
                test,
                &te,
                &times,
                |l| l.txs.iter().map(record).collect(),
                kib,
            );
            rows.push(Row {
                name: format!("frames {kib} KiB + dictionary, zstd {level}"),
                bytes: skel + sizes.iter().sum::<usize>() + dict.len(),
                dict: dict.len(),
                compress_ms: ms / n,
                hit_kib: per_tx.0,
                hit_us: per_tx.1,
            });
            // Columns: envelopes, results, metas apart.
            let mut bytes = skel;
            let mut dicts = 0;
            let mut ms_all = 0.0;
            let (mut hk, mut hu) = (0.0, 0.0);
            for part in [0usize, 1, 2] {
                let pick = move |l: &LedgerInput| -> Vec<Vec<u8>> {
                    l.txs
                        .iter()
                        .map(|t| [&t.envelope, &t.result, &t.meta][part].to_vec())
                        .collect()
                };
                let mkc = |ls: &[LedgerInput]| -> Vec<Vec<u8>> {
                    ls.iter()
                        .flat_map(|l| {
                            let items = pick(l);
                            let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
                            frames(&refs, kib << 10)
                        })
                        .collect()
                };
                let (tr, te) = (mkc(train_set), mkc(test));
                let dict = train(&tr, DICT_BYTES);
                let (sizes, ms, times) = with_dict(&te, Some(&dict), level);
                bytes += sizes.iter().sum::<usize>() + dict.len();
                dicts += dict.len();
                ms_all += ms;
                let c = hit_cost(test, &te, &times, pick, kib);
                hk += c.0;
                hu += c.1;
            }
            rows.push(Row {
                name: format!("columns {kib} KiB + dictionaries, zstd {level}"),
                bytes,
                dict: dicts,
                compress_ms: ms_all / n,
                hit_kib: hk,
                hit_us: hu,
            });
        }
    }
    let lake = rows[1].bytes as f64;
    println!(
        "\n| form (skeleton + bodies) | KB a ledger, dictionaries counted | ÷ lake (zstd 19) | KB a ledger, dictionaries amortised away | ÷ lake | compress ms a ledger | a hit decompresses KiB | µs |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.1} | {:.2} | {:.1} | {:.2} | {:.1} | {:.1} | {:.0} |",
            r.name,
            r.bytes as f64 / n / 1e3,
            r.bytes as f64 / lake,
            (r.bytes - r.dict) as f64 / n / 1e3,
            (r.bytes - r.dict) as f64 / lake,
            r.compress_ms,
            r.hit_kib,
            r.hit_us
        );
    }
}

/// Average KiB and µs one transaction's hit decompresses: each frame's
/// cost counted once for every item it holds.
fn hit_cost(
    ledgers: &[LedgerInput],
    frames_made: &[Vec<u8>],
    times: &[f64],
    items: impl Fn(&LedgerInput) -> Vec<Vec<u8>>,
    kib: usize,
) -> (f64, f64) {
    // Rebuild the frame boundaries to count items per frame.
    let mut counts = Vec::new();
    for l in ledgers {
        let its = items(l);
        let mut len = 0usize;
        let mut count = 0usize;
        for it in &its {
            if count > 0 && len + it.len() > kib << 10 {
                counts.push(count);
                len = 0;
                count = 0;
            }
            len += it.len();
            count += 1;
        }
        counts.push(count);
    }
    assert_eq!(counts.len(), frames_made.len());
    let total: usize = counts.iter().sum();
    let kib_sum: f64 = counts
        .iter()
        .zip(frames_made)
        .map(|(c, f)| *c as f64 * f.len() as f64 / 1024.0)
        .sum();
    let us_sum: f64 = counts.iter().zip(times).map(|(c, t)| *c as f64 * t).sum();
    (kib_sum / total as f64, us_sum / total as f64)
}
