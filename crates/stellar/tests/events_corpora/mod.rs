//! The real corpora of `testdata/`, as raw `LedgerCloseMeta`s named as the
//! events oracle (`testdata/events.oracle.json.zst`, made by
//! `testdata/events_oracle.py`) names them, and the oracle itself.

#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use ledgerstore_db_api::LedgerInput;
use ledgerstore_stellar::events::{
    Event, Events, LedgerCounts, TxContext, ledger_events, reference, tx_events, validate_meta,
};
use ledgerstore_stellar::extract::from_slices;
use ledgerstore_stellar::walk::cursor::Why;
use ledgerstore_stellar::walk::walk;
use ledgerstore_stellar::{Network, ReadLimits, StellarError, decode_file};
use sha2::{Digest, Sha256};

pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

pub fn read(name: &str) -> Vec<u8> {
    std::fs::read(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The oracle, decompressed and parsed.
pub fn oracle() -> serde_json::Value {
    let packed = read("events.oracle.json.zst");
    serde_json::from_slice(&zstd::decode_all(&packed[..]).expect("zstd")).expect("json")
}

/// The 20 pubnet ledgers of 2026.
pub const PUBNET_2026: &str = "FC3D4709--63092982-63093001.xdr.zst";

fn file(name: &str, network: &str) -> Vec<LedgerInput> {
    let net = Network::parse(network).expect("network");
    decode_file(&read(name), name, &net, ReadLimits::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A corpus's ledgers by its oracle name.
pub fn corpus(name: &str) -> Vec<Vec<u8>> {
    corpus_inputs(name)
        .into_iter()
        .map(|l| Vec::from(l.raw))
        .collect()
}

/// A corpus's ledgers as ingest extracts them (walked, parts and cuts
/// slices of each ledger's bytes).
pub fn corpus_inputs(name: &str) -> Vec<LedgerInput> {
    match name {
        PUBNET_2026 | "FCD285FF--53312000.xdr.zstd" => file(name, "pubnet"),
        "load-test-ledgers-v23-standalone.xdr.zstd" => file(name, "standalone"),
        "apply-load/load-test-ledgers-v28.xdr.zstd" => file(name, "Apply Load"),
        "core-unit-test-lcms.tar.zst" => {
            let tar = zstd::decode_all(&read(name)[..]).expect("zstd");
            let mut archive = tar::Archive::new(&tar[..]);
            let mut out = Vec::new();
            for entry in archive.entries().expect("tar") {
                let mut entry = entry.expect("entry");
                let path = entry.path().expect("path").display().to_string();
                if !entry.header().entry_type().is_file() || !path.ends_with(".xdr") {
                    continue;
                }
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).expect("read");
                let net = Network::parse("(V) (;,,;) (V)").expect("network");
                out.extend(
                    decode_file(&bytes, &path, &net, ReadLimits::default())
                        .unwrap_or_else(|e| panic!("{path}: {e}")),
                );
            }
            out
        }
        era if era.starts_with("pubnet-eras/") => {
            let text = String::from_utf8(read(era)).expect("utf8");
            let net = Network::parse("pubnet").expect("network");
            text.split_whitespace()
                .map(|line| {
                    let raw = base64::engine::general_purpose::STANDARD
                        .decode(line)
                        .expect("base64");
                    let slices = walk(&raw).expect("walk");
                    from_slices(&slices, raw.into(), &net).unwrap_or_else(|e| panic!("{era}: {e}"))
                })
                .collect()
        }
        other => panic!("no corpus {other}"),
    }
}

/// Every corpus the oracle covers.
pub fn names() -> Vec<String> {
    let mut names: Vec<String> = oracle()["corpora"]
        .as_object()
        .expect("corpora")
        .keys()
        .cloned()
        .collect();
    names.sort();
    names
}

/// A ledger's events by the walker and the event walk.
pub fn events_of(raw: &[u8]) -> Events {
    let slices = walk(raw).expect("walk");
    ledger_events(raw, &slices).expect("events")
}

pub fn sha(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// The contract id as a strkey (`C…`), by stellar-xdr's `ContractId`.
pub fn strkey(id: &[u8; 32]) -> String {
    stellar_xdr::ContractId(stellar_xdr::Hash(*id)).to_string()
}

/// The oracle's canonical line of an event (see `events_oracle.py`).
pub fn line(events: &Events, e: &Event, raw: &[u8]) -> String {
    let topics: Vec<String> = events.topics_of(e).iter().map(|t| sha(t.of(raw))).collect();
    format!(
        "{} {} {} {} {} {} {} {} {} {}\n",
        e.id,
        e.kind.as_str(),
        e.contract_id.as_ref().map_or("-".into(), strkey),
        hex::encode(e.tx_hash),
        e.id.op,
        e.id.tx,
        u8::from(e.in_successful_contract_call),
        if topics.is_empty() {
            "-".into()
        } else {
            topics.join(",")
        },
        sha(e.value.of(raw)),
        sha(e.event.of(raw)),
    )
}

/// A context for a lone meta.
pub fn ctx(apply_index: u32) -> TxContext {
    TxContext {
        ledger: 63_092_982,
        apply_index,
        hash: [7; 32],
        successful: true,
    }
}

/// The event walk on `meta`: its verdict must be the generated
/// skipper's, and what it accepts the typed decode must read the same.
pub fn check(meta: &[u8], what: &str) -> bool {
    let mut out = Events::default();
    let got = tx_events(meta, 0, &ctx(3), &mut LedgerCounts::default(), &mut out);
    let skipper = validate_meta(meta);
    let typed = reference::tx(meta, &ctx(3), &mut LedgerCounts::default());
    match (got, skipper) {
        (Ok(()), Ok(())) => {
            let typed = typed.unwrap_or_else(|e| panic!("{what}: typed decode refuses: {e}"));
            assert!(out.to_owned_events(meta) == typed, "{what}: differs");
            true
        }
        (Err(StellarError::Xdr { detail, .. }), Err(fail)) => {
            assert_eq!(detail, fail.to_string(), "{what}: another refusal");
            // The walker alone refuses a bool other than 0 or 1.
            if typed.is_ok() {
                assert!(
                    matches!(fail.why, Why::Bool(_)),
                    "{what}: typed decode accepts"
                );
            }
            false
        }
        (got, skipper) => panic!("{what}: event walk {got:?}, skipper {skipper:?}"),
    }
}
