//! Posting-list codecs compared on the lists of N synthetic events (the
//! shapes of `tests/common/synth.rs`): bytes per event, and the time of a
//! page of 100 from a random start, read from the encoded bytes as a query
//! on a mapped file would: one list (a contract id), and the intersection
//! of three (contract, topic 0 = "transfer", 4 topics).
//!
//! - `bitpacked`: this crate's lists (blocks of 128 deltas, `bitpacking`'s
//!   `BitPacker4x`, skip table; seeks decode one block).
//! - `roaring`: `roaring::RoaringBitmap`'s portable serialization; a query
//!   deserializes each list it names, then iterates with `advance_to`.
//!
//! Lists of one ordinal are inlined in the dictionary by both, so they
//! cost nothing here. `cargo run --release --locked -p
//! ledgerstore-event-index --example posting_codecs -- 1000000`

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::time::Instant;

use common::synth::{Synth, contract_id, sym};
use ledgerstore_event_index::{codec, topic_key};
use rand::{Rng, SeedableRng};
use roaring::RoaringBitmap;

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p) as usize]
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let mut lists: HashMap<(u8, Vec<u8>), Vec<u32>> = HashMap::new();
    for (ord, e) in Synth::new(n, 42, 1).enumerate() {
        let ord = ord as u32;
        if let Some(c) = e.contract {
            lists.entry((0, c.to_vec())).or_default().push(ord);
        }
        for (p, t) in e.topics.iter().take(4).enumerate() {
            lists
                .entry((1, topic_key(p, t).to_be_bytes().to_vec()))
                .or_default()
                .push(ord);
        }
        lists
            .entry((2, vec![e.topics.len() as u8]))
            .or_default()
            .push(ord);
        lists
            .entry((3, vec![e.kind.as_str().len() as u8]))
            .or_default()
            .push(ord);
    }
    let (mut bp_bytes, mut ro_bytes) = (0usize, 0usize);
    let mut bp: HashMap<&(u8, Vec<u8>), Vec<u8>> = HashMap::new();
    let mut ro: HashMap<&(u8, Vec<u8>), Vec<u8>> = HashMap::new();
    for (k, v) in &lists {
        if v.len() < 2 {
            continue;
        }
        let mut b = Vec::new();
        codec::encode(v, &mut b);
        bp_bytes += b.len();
        bp.insert(k, b);
        let r = RoaringBitmap::from_sorted_iter(v.iter().copied()).expect("sorted");
        let mut s = Vec::with_capacity(r.serialized_size());
        r.serialize_into(&mut s).expect("serialize");
        ro_bytes += s.len();
        ro.insert(k, s);
    }
    println!(
        "events {n}, lists {} ({} of 2 or more)",
        lists.len(),
        bp.len()
    );
    println!("bitpacked: {:.2} B/event", bp_bytes as f64 / n as f64);
    println!("roaring:   {:.2} B/event", ro_bytes as f64 / n as f64);

    let transfer = (1u8, topic_key(0, &sym("transfer")).to_be_bytes().to_vec());
    let four = (2u8, vec![4u8]);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    for (name, ranks) in [
        ("native contract", [0u64].as_slice()),
        ("contracts ranked 1-20", &(1..=20).collect::<Vec<_>>()),
    ] {
        for three in [false, true] {
            let (mut tb, mut tr) = (Vec::new(), Vec::new());
            for _ in 0..300 {
                let c = (
                    0u8,
                    contract_id(ranks[rng.random_range(0..ranks.len())]).to_vec(),
                );
                let keys: Vec<&(u8, Vec<u8>)> = if three {
                    vec![&c, &transfer, &four]
                } else {
                    vec![&c]
                };
                if keys.iter().any(|k| !bp.contains_key(k)) {
                    continue;
                }
                let from = rng.random_range(0..n as u32);
                let t = Instant::now();
                let encoded: Vec<&[u8]> = keys.iter().map(|k| bp[k].as_slice()).collect();
                let a = codec::page(&encoded, n as u32, from, 100).expect("page");
                tb.push(t.elapsed().as_secs_f64() * 1e6);
                let t = Instant::now();
                let maps: Vec<RoaringBitmap> = keys
                    .iter()
                    .map(|k| RoaringBitmap::deserialize_from(&ro[k][..]).expect("roaring"))
                    .collect();
                let mut its: Vec<_> = maps.iter().map(|m| (m.iter(), None::<u32>)).collect();
                let mut b = Vec::new();
                let mut x = from;
                'next: while b.len() < 100 {
                    for (it, cur) in its.iter_mut() {
                        if cur.is_none_or(|c| c < x) {
                            it.advance_to(x);
                            *cur = it.next();
                        }
                        match *cur {
                            None => break 'next,
                            Some(y) if y > x => {
                                x = y;
                                continue 'next;
                            }
                            Some(_) => {}
                        }
                    }
                    b.push(x);
                    x += 1;
                }
                tr.push(t.elapsed().as_secs_f64() * 1e6);
                assert_eq!(a, b);
            }
            let shape = if three {
                "∩ transfer ∩ 4 topics"
            } else {
                "alone"
            };
            println!(
                "{name} {shape}: bitpacked p50 {:.1} µs p99 {:.1} µs | roaring p50 {:.1} µs p99 {:.1} µs",
                pct(tb.clone(), 0.5),
                pct(tb, 0.99),
                pct(tr.clone(), 0.5),
                pct(tr, 0.99)
            );
        }
    }
}
