//! Event extraction (`ledgerstore_stellar::events`) on every real corpus:
//! against the independent oracle made with the Python stellar-sdk
//! (`testdata/events_oracle.py`), event by event for the 20 pubnet ledgers
//! of 2026 and by the digest of every event's canonical line for the
//! others, and against the typed `stellar-xdr` decode of the same
//! ledgers and metas.

mod events_corpora;

use std::collections::BTreeMap;

use events_corpora::{
    PUBNET_2026, corpus, corpus_inputs, events_of, line, names, oracle, sha, strkey,
};
use ledgerstore_stellar::events::{
    Events, LedgerCounts, Stage, TxContext, input_events, reference, successful, tx_events,
};
use ledgerstore_stellar::walk::walk;
use sha2::{Digest, Sha256};

fn stage_name(s: Stage) -> &'static str {
    match s {
        Stage::BeforeAllTxs => "stage_before_all_txs",
        Stage::Operation(_) => "stage_operation",
        Stage::AfterTx => "stage_after_tx",
        Stage::AfterAllTxs => "stage_after_all_txs",
    }
}

/// The 20 pubnet ledgers of 2026: every event, every field.
#[test]
fn events_of_the_20_pubnet_ledgers_match_the_oracle_one_by_one() {
    let oracle = oracle();
    let want = oracle["events"].as_array().expect("events");
    let mut got = Vec::new();
    for raw in corpus(PUBNET_2026) {
        let evs = events_of(&raw);
        let seq = walk(&raw).expect("walk").seq;
        for e in &evs.list {
            let short = |b: &[u8]| sha(b)[..16].to_string();
            got.push(serde_json::json!({
                "id": e.id.to_string(),
                "ledger": seq,
                "type": e.kind.as_str(),
                "contract": e.contract_id.as_ref().map(strkey),
                "tx": hex::encode(e.tx_hash),
                "op": e.id.op,
                "txi": e.id.tx,
                "ok": e.in_successful_contract_call,
                "topics": evs.topics_of(e).iter().map(|t| short(t.of(&raw))).collect::<Vec<_>>(),
                "value": short(e.value.of(&raw)),
                "event": short(e.event.of(&raw)),
            }));
        }
    }
    assert_eq!(got.len(), 12_960);
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "event {i}");
    }
}

/// Every corpus: counts by type and stage, diagnostic events walked past,
/// per-ledger counts and the SHA-256 of every event's canonical line.
#[test]
fn events_of_every_corpus_match_the_oracle_digest() {
    let oracle = oracle();
    let mut total = 0;
    for name in names() {
        let want = &oracle["corpora"][&name];
        let mut digest = Sha256::new();
        let mut by_type: BTreeMap<&str, u64> = BTreeMap::new();
        let mut stats: BTreeMap<String, u64> = BTreeMap::new();
        let mut per_ledger = serde_json::Map::new();
        let (mut ledgers, mut txs, mut events, mut diagnostic) = (0u64, 0u64, 0u64, 0u64);
        let mut any_meta_with_diagnostics = false;
        for raw in corpus(&name) {
            let slices = walk(&raw).expect("walk");
            let evs = events_of(&raw);
            ledgers += 1;
            txs += slices.applied.len() as u64;
            for a in &slices.applied {
                let v = a.meta.of(&raw)[3];
                *stats.entry(format!("meta_v{v}")).or_default() += 1;
                any_meta_with_diagnostics |= v >= 3;
            }
            for e in &evs.list {
                digest.update(line(&evs, e, &raw).as_bytes());
                *by_type.entry(e.kind.as_str()).or_default() += 1;
                *stats.entry(stage_name(e.stage).into()).or_default() += 1;
            }
            events += evs.list.len() as u64;
            diagnostic += evs.diagnostic_not_served;
            per_ledger.insert(slices.seq.to_string(), evs.list.len().into());
        }
        let field = |k: &str| want[k].as_u64().unwrap_or_else(|| panic!("{name}: {k}"));
        assert_eq!(ledgers, field("ledgers"), "{name}: ledgers");
        assert_eq!(txs, field("txs"), "{name}: txs");
        assert_eq!(events, field("events"), "{name}: events");
        assert_eq!(
            serde_json::to_value(&by_type).expect("json"),
            want["by_type"],
            "{name}: by type"
        );
        let want_stats = want["stats"].as_object().expect("stats");
        for (k, v) in &stats {
            assert_eq!(Some(v), want_stats[k].as_u64().as_ref(), "{name}: {k}");
        }
        for k in want_stats.keys().filter(|k| k.starts_with("stage_")) {
            assert!(stats.contains_key(k), "{name}: {k} missing");
        }
        if any_meta_with_diagnostics {
            assert_eq!(
                Some(diagnostic),
                want_stats["diagnostic_not_served"].as_u64(),
                "{name}: diagnostic events"
            );
        }
        if let Some(w) = want.get("per_ledger") {
            assert_eq!(&serde_json::Value::Object(per_ledger), w, "{name}");
        }
        assert_eq!(
            hex::encode(digest.finalize()),
            want["lines_sha256"],
            "{name}: the events' lines"
        );
        total += events;
    }
    // 12,960 + 2,000 + 72,300 + 422 (the era ledgers and 53312000: none).
    assert_eq!(total, 87_682);
}

/// Every ledger of every corpus: the event walk equals the typed decode
/// (events re-encoded, hashes and results from the decoded ledger), and
/// each meta walked alone equals its typed decode.
#[test]
fn events_of_every_ledger_equal_the_typed_decode() {
    let (mut ledgers, mut with_events) = (0, 0);
    for name in names() {
        for (n, raw) in corpus(&name).into_iter().enumerate() {
            let at = format!("{name} ledger {n}");
            let evs = events_of(&raw);
            let want = reference::ledger(&raw).unwrap_or_else(|e| panic!("{at}: {e}"));
            assert!(
                evs.to_owned_events(&raw) == want,
                "{at}: differs from the typed decode"
            );
            ledgers += 1;
            with_events += usize::from(!want.is_empty());

            // Tx by tx, each meta alone (spans relative to it).
            let slices = walk(&raw).expect("walk");
            let (mut counts, mut counts_ref) = (LedgerCounts::default(), LedgerCounts::default());
            let mut alone = Vec::new();
            for (i, a) in slices.applied.iter().enumerate() {
                let tx = TxContext {
                    ledger: slices.seq,
                    apply_index: i as u32,
                    hash: a.hash(&raw),
                    successful: successful(a.result.of(&raw)).expect("result"),
                };
                let meta = a.meta.of(&raw);
                let mut one = Events::default();
                tx_events(meta, 0, &tx, &mut counts, &mut one).expect("tx events");
                let r = reference::tx(meta, &tx, &mut counts_ref).expect("reference");
                assert!(one.to_owned_events(meta) == r, "{at}: tx {i}");
                alone.extend(r);
            }
            assert_eq!(counts, counts_ref, "{at}");
            alone.sort_by_key(|e| e.id.key());
            assert!(alone == want, "{at}: tx by tx");
        }
    }
    assert!(
        ledgers >= 15_600 && with_events >= 100,
        "{ledgers} {with_events}"
    );
}

/// Every ledger of every corpus, as ingest extracts it: the events of
/// its metas found through its cuts (`input_events`, what an offer to the
/// event index walks) equal the events of its bytes walked whole, spans
/// and all.
#[test]
fn events_through_the_cuts_equal_the_events_of_the_whole_walk() {
    let (mut ledgers, mut through_cuts) = (0, 0);
    for name in names() {
        for (n, l) in corpus_inputs(&name).into_iter().enumerate() {
            let want = events_of(&l.raw);
            ledgers += 1;
            match input_events(&l) {
                Some(got) => {
                    let got = got.unwrap_or_else(|e| panic!("{name} ledger {n}: {e}"));
                    assert!(
                        got == want,
                        "{name} ledger {n}: differs from the whole walk"
                    );
                    through_cuts += 1;
                }
                // Only a ledger without transactions is walked whole.
                None => assert!(
                    l.txs.is_empty(),
                    "{name} ledger {n}: no events through its cuts"
                ),
            }
        }
    }
    assert!(
        ledgers >= 15_600 && through_cuts >= 1_000,
        "{ledgers} {through_cuts}"
    );
}

/// Ids are unique and in order within each ledger; an event's bytes lie
/// inside its transaction's meta; topics and value tile the event's body.
#[test]
fn events_are_ordered_and_inside_their_meta() {
    for name in [PUBNET_2026, "core-unit-test-lcms.tar.zst"] {
        for raw in corpus(name) {
            let slices = walk(&raw).expect("walk");
            let evs = events_of(&raw);
            for w in evs.list.windows(2) {
                assert!(
                    w[0].id.key() < w[1].id.key(),
                    "{name}: {} {}",
                    w[0].id,
                    w[1].id
                );
                assert!(w[0].id.to_string() < w[1].id.to_string());
            }
            for e in &evs.list {
                let meta = slices.applied[e.apply_index as usize].meta;
                assert!(e.event.offset >= meta.offset);
                assert!(e.event.offset + e.event.len <= meta.offset + meta.len);
                let topics = evs.topics_of(e);
                // The value ends the event; the topics precede it back to back.
                assert_eq!(e.value.offset + e.value.len, e.event.offset + e.event.len);
                let mut at = e.value.offset;
                for t in topics.iter().rev() {
                    assert_eq!(t.offset + t.len, at);
                    at = t.offset;
                }
                // ...after the topics' count, the body's arm and the header.
                let count = u32::from_be_bytes(raw[at - 4..at].try_into().expect("4"));
                assert_eq!(count as usize, topics.len());
                assert_eq!(raw[at - 8..at - 4], [0, 0, 0, 0]);
                match e.stage {
                    Stage::Operation(op) => {
                        assert_eq!((e.id.tx, e.id.op), (e.apply_index + 1, op));
                    }
                    Stage::AfterTx => assert_eq!(e.id.tx, e.apply_index + 1),
                    Stage::BeforeAllTxs => assert_eq!((e.id.tx, e.id.op), (0, 0)),
                    Stage::AfterAllTxs => assert_eq!((e.id.tx, e.id.op), (0xF_FFFF, 0)),
                }
            }
        }
    }
}
