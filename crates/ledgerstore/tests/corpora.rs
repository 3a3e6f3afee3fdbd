//! Every real Stellar corpus the team holds (`crates/stellar/testdata/`,
//! byte-for-byte copies of `../shared/data/stellar/`) goes through
//! extraction and into a real store, and comes back exactly: the 20
//! consecutive pubnet ledgers of 2026 (against their independent oracle),
//! the pubnet ledgers of protocols 2–22, apply-load's 14,760 transactions
//! (passphrase `Apply Load`), and all 854 stellar-core unit-test streams
//! (passphrase `(V) (;,,;) (V)`). A ledger is stored exactly or refused
//! with a named reason; nothing panics and nothing is skipped silently.

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use ledgerstore_backends::Backends;
use ledgerstore_db_api::{Layout, LedgerInput, TxHash};
use ledgerstore_stellar::{Network, ReadLimits, decode_file, ledger_from_xdr};
use ledgerstore_store::{Ledgerstore, StoreOptions};
use sha2::{Digest, Sha256};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../stellar/testdata")
        .join(name)
}

/// The file's bytes, after checking the sha256 that README.upstream.md
/// (the shared folder's README) or README.md lists for it.
fn fixture(name: &str) -> Vec<u8> {
    let bytes = std::fs::read(testdata(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let sum = hex::encode(Sha256::digest(&bytes));
    let listed = ["README.upstream.md", "README.md"].iter().any(|r| {
        let text = std::fs::read_to_string(testdata(r)).expect("readme");
        let base = name.rsplit('/').next().unwrap_or(name);
        text.contains(&format!("{sum}  {name}")) || text.contains(&format!("{sum}  {base}"))
    });
    assert!(
        listed,
        "{name}: sha256 {sum} is not listed in the testdata READMEs"
    );
    bytes
}

/// A fixture file's ledgers, decoded under `passphrase`.
fn decode_fixture(name: &str, passphrase: &str) -> Vec<LedgerInput> {
    decode_file(
        &fixture(name),
        name,
        &network(passphrase),
        ReadLimits::default(),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn network(passphrase: &str) -> Network {
    Network::parse(passphrase).expect("a passphrase")
}

fn open(dir: &Path, layout: Layout) -> Ledgerstore {
    let opts = StoreOptions {
        layout: Some(layout),
        ..StoreOptions::default()
    };
    Ledgerstore::open(dir, opts, &Backends::for_tests()).expect("open store")
}

/// Ingests `ledgers` (contiguous) in batches of 8 and reads every ledger
/// (one by one and as a range) and every transaction back, byte for byte;
/// `check` finds nothing wrong, and in `indexed` verified every ledger
/// with transactions as a skeleton put back together (each transaction
/// stored once). Returns the txs stored.
fn store_and_verify(dir: &Path, layout: Layout, ledgers: &[LedgerInput], what: &str) -> usize {
    let store = open(dir, layout);
    for batch in ledgers.chunks(8) {
        store
            .ingest(batch, Duration::ZERO)
            .unwrap_or_else(|e| panic!("{what}: ingest: {e}"));
    }
    let mut txs = 0;
    let (Some(first), Some(last)) = (ledgers.first(), ledgers.last()) else {
        return 0;
    };
    let (first, last) = (first.seq, last.seq);
    let range: Vec<_> = store
        .ledgers(first, last, 5)
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{what}: range: {e}"));
    assert_eq!(range.len(), ledgers.len(), "{what}: range");
    for (got, l) in range.iter().zip(ledgers) {
        assert!(
            got.raw == l.raw,
            "{what}: ledger {} raw via the range",
            l.seq
        );
    }
    // Segment builds move hashes out of the hot index: check a settled dir.
    store.wait_for_segments().expect("segments");
    let report = store.check().expect("check");
    assert!(report.is_ok(), "{what}: {:?}", report.problems);
    // Extraction cuts every part of every ledger that has transactions.
    assert!(
        ledgers
            .iter()
            .all(|l| l.cuts.is_empty() || l.cuts.len() == 3 * l.txs.len())
    );
    let cut = ledgers.iter().filter(|l| !l.cuts.is_empty()).count() as u64;
    let skeletons = if layout == Layout::Indexed { cut } else { 0 };
    assert_eq!(report.reassembled, skeletons, "{what}: skeletons verified");
    for l in ledgers {
        let got = store
            .get_ledger(l.seq)
            .expect("read")
            .unwrap_or_else(|| panic!("{what}: ledger {} missing", l.seq));
        assert_eq!(got.raw, l.raw, "{what}: ledger {} raw", l.seq);
        let hashes: Vec<TxHash> = l
            .txs
            .iter()
            .map(|t| TxHash::from_slice(&t.hash).expect("32"))
            .collect();
        assert_eq!(got.tx_hashes, hashes, "{what}: ledger {} hashes", l.seq);
        let recs = store.batch_get_txs(&hashes).expect("batch get");
        for (i, (t, rec)) in l.txs.iter().zip(recs).enumerate() {
            let rec = rec.unwrap_or_else(|| panic!("{what}: ledger {} tx {i} missing", l.seq));
            assert_eq!((rec.ledger_seq, rec.index as usize), (l.seq, i), "{what}");
            assert_eq!(
                (&rec.envelope[..], &rec.result[..], &rec.meta[..]),
                (&t.envelope[..], &t.result[..], &t.meta[..]),
                "{what}: ledger {} tx {i}",
                l.seq
            );
            txs += 1;
        }
    }
    store.close().expect("close");
    txs
}

fn sha(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// The 20 consecutive pubnet ledgers of 2026 (protocol 26), in `indexed`
/// with 5-ledger segments, against the oracle made with the Python SDK.
#[test]
fn twenty_pubnet_ledgers_of_2026_match_their_oracle() {
    let name = "FC3D4709--63092982-63093001.xdr.zst";
    let ledgers = decode_fixture(name, "pubnet");
    let oracle: serde_json::Value =
        serde_json::from_slice(&fixture("FC3D4709--63092982-63093001.oracle.json"))
            .expect("oracle json");
    let want_ledgers = oracle["ledgers"].as_array().expect("ledgers");
    assert_eq!(ledgers.len(), want_ledgers.len());
    for (l, w) in ledgers.iter().zip(want_ledgers) {
        assert_eq!(u64::from(l.seq), w["seq"].as_u64().expect("seq"));
        assert_eq!(l.txs.len() as u64, w["tx_count"].as_u64().expect("count"));
        assert_eq!(
            sha(&l.raw),
            w["lcm_sha256"].as_str().expect("sha"),
            "{}",
            l.seq
        );
    }
    let by_hash: BTreeMap<&str, &serde_json::Value> = oracle["txs"]
        .as_array()
        .expect("txs")
        .iter()
        .map(|t| (t["hash"].as_str().expect("hash"), t))
        .collect();
    assert_eq!(by_hash.len(), 5_188);
    for l in &ledgers {
        for (i, t) in l.txs.iter().enumerate() {
            let w = by_hash[hex::encode(&t.hash).as_str()];
            assert_eq!(w["ledger"].as_u64(), Some(u64::from(l.seq)));
            assert_eq!(w["application_order"].as_u64(), Some(i as u64 + 1));
            assert_eq!(sha(&t.envelope), w["envelope_sha256"].as_str().expect("e"));
            assert_eq!(sha(&t.meta), w["meta_sha256"].as_str().expect("m"));
            let r = sha(&t.result);
            assert!(
                r == w["result_sha256"].as_str().expect("r")
                    || r == w["result_pair_sha256"].as_str().expect("rp"),
                "ledger {} tx {i}: result bytes match neither oracle sum",
                l.seq
            );
        }
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut store_opts = StoreOptions {
        layout: Some(Layout::Indexed),
        ..StoreOptions::default()
    };
    store_opts.indexed.range_ledgers = 5;
    drop(
        Ledgerstore::open(tmp.path(), store_opts.clone(), &Backends::for_tests()).expect("create"),
    );
    let txs = store_and_verify(tmp.path(), Layout::Indexed, &ledgers, name);
    assert_eq!(txs, 5_188);
    // The same ledgers stored whole (no cuts: every ledger before record
    // v3), side by side: the skeletons drop the second copy of each
    // transaction from the `ledgers` table.
    let whole_dir = tempfile::tempdir().expect("tempdir");
    drop(Ledgerstore::open(whole_dir.path(), store_opts, &Backends::for_tests()).expect("create"));
    let whole: Vec<LedgerInput> = ledgers.iter().map(LedgerInput::without_cuts).collect();
    store_and_verify(whole_dir.path(), Layout::Indexed, &whole, name);
    let table_bytes = |dir: &Path| -> Vec<(&'static str, u64)> {
        let stats = open(dir, Layout::Indexed).stats().expect("stats");
        stats
            .tables
            .iter()
            .map(|t| (t.table, t.stored_bytes))
            .collect()
    };
    let (skel, before) = (table_bytes(tmp.path()), table_bytes(whole_dir.path()));
    eprintln!("stored bytes by table: whole ledgers {before:?}, skeletons {skel:?}");
    let ledgers_table = |t: &[(&str, u64)]| t.iter().find(|x| x.0 == "ledgers").map_or(0, |x| x.1);
    assert!(
        ledgers_table(&skel) * 4 < ledgers_table(&before),
        "skeletons {skel:?} against whole ledgers {before:?}"
    );
}

/// Pubnet ledgers from protocols 2 to 22 (LedgerCloseMeta V0 and V1), one
/// base64 LedgerCloseMeta per line, not consecutive: each in its own store.
#[test]
fn pubnet_ledgers_of_every_protocol_era() {
    let files = [
        "ledgers-base64.txt",
        "revoke-trustline-ledger-56065483",
        "burn-ledger-7762802",
        "mint-ledger-7320888",
        "xlm-burn-bug-ledger-9722383",
        "xlm-mint-bug-ledger-9652679",
        "xlm-mint-bug-ledger-9652698",
        "xlm-mint-bug-ledger-9710976",
    ];
    let net = network("pubnet");
    let (mut ledgers, mut txs) = (0, 0);
    for f in files {
        let name = format!("pubnet-eras/{f}");
        let text = String::from_utf8(fixture(&name)).expect("utf8");
        for (n, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let xdr = base64::engine::general_purpose::STANDARD
                .decode(line.trim())
                .unwrap_or_else(|e| panic!("{name} line {}: {e}", n + 1));
            let at = format!("{name} line {}", n + 1);
            let l = ledger_from_xdr(xdr, &net, &at).unwrap_or_else(|e| panic!("{at}: {e}"));
            for layout in [Layout::Hybrid, Layout::Indexed] {
                let tmp = tempfile::tempdir().expect("tempdir");
                let n = store_and_verify(tmp.path(), layout, std::slice::from_ref(&l), &at);
                if layout == Layout::Indexed {
                    txs += n;
                }
            }
            ledgers += 1;
        }
    }
    // The shared README: 5 ledgers in ledgers-base64.txt plus 56065483
    // hold 791 transactions (359 in 56065483); the six single-ledger
    // files of the supply-bug era add theirs.
    assert_eq!(ledgers, 12);
    assert!(txs >= 791, "{txs}");
}

/// stellar-core's apply-load benchmark: 30 ledgers, 14,760 transactions,
/// passphrase `Apply Load` (which has no " ; ").
#[test]
fn apply_load_ledgers_with_their_own_passphrase() {
    let name = "apply-load/load-test-ledgers-v28.xdr.zstd";
    let ledgers = decode_fixture(name, "Apply Load");
    assert_eq!(ledgers.len(), 30);
    assert_eq!(ledgers[0].seq, 10_048);
    for layout in [Layout::Hybrid, Layout::Indexed] {
        let tmp = tempfile::tempdir().expect("tempdir");
        assert_eq!(store_and_verify(tmp.path(), layout, &ledgers, name), 14_760);
    }
}

/// All 854 record-marked streams written by stellar-core's unit tests
/// (protocols 0–28, LCM V0–V2), each in its own store (every tenth in
/// `indexed`, as skeletons put back exactly). Each is stored
/// exactly or refused with a reason that names the stream.
#[test]
fn every_stellar_core_unit_test_stream() {
    let name = "core-unit-test-lcms.tar.zst";
    let tar = zstd::decode_all(&fixture(name)[..]).expect("zstd");
    let mut archive = tar::Archive::new(&tar[..]);
    let net = network("(V) (;,,;) (V)");
    let (mut streams, mut ledgers, mut txs) = (0, 0, 0);
    let mut refused: Vec<String> = Vec::new();
    let tmp = tempfile::tempdir().expect("tempdir");
    for entry in archive.entries().expect("tar") {
        let mut entry = entry.expect("tar entry");
        let path = entry.path().expect("path").display().to_string();
        if !path.ends_with(".xdr") {
            continue;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read");
        streams += 1;
        let decoded = match decode_file(&bytes, &path, &net, ReadLimits::default()) {
            Ok(d) => d,
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains(&path), "a refusal must name the stream: {msg}");
                refused.push(msg);
                continue;
            }
        };
        let dir = tmp.path().join(streams.to_string());
        ledgers += decoded.len();
        // Every tenth stream as skeletons too (all of them walk, split and
        // join in crates/stellar/tests/walk.rs; a store each costs time).
        let layout = if streams % 10 == 0 {
            Layout::Indexed
        } else {
            Layout::Hybrid
        };
        txs += store_and_verify(&dir, layout, &decoded, &path);
        std::fs::remove_dir_all(&dir).expect("clean");
    }
    eprintln!(
        "unit-test streams: {streams}, stored {ledgers} ledgers and {txs} txs, refused {}: {refused:#?}",
        refused.len()
    );
    // The shared README says 861; the archive holds 854 streams (its
    // index.json files name 855, and InvokeHostFunctionTests'
    // a7a45d93c64cf3d9 has no file). Its ledger and tx totals are the
    // README's exactly, so every ledger of the corpus is covered.
    assert_eq!(streams, 854);
    assert!(refused.is_empty(), "{refused:#?}");
    assert_eq!((ledgers, txs), (15_566, 13_080));
}

/// Regression: `--network` refused passphrases without " ; ". The CLI
/// ingests apply-load with `--network "Apply Load"` and serves its txs.
#[test]
fn the_cli_takes_any_passphrase() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let file = testdata("apply-load/load-test-ledgers-v28.xdr.zstd");
    let mut c = common::bin();
    c.args(["ingest", "--no-progress", "--network", "Apply Load"])
        .arg("--stellar-file")
        .arg(&file)
        .arg("--data-dir")
        .arg(&dir)
        .args(common::small_engine_flags());
    let o = common::run(c);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let ledgers = decode_fixture("apply-load/load-test-ledgers-v28.xdr.zstd", "Apply Load");
    let last = ledgers.last().expect("ledgers");
    let mut c = common::bin();
    c.args(["get", "tx", "--json"])
        .arg(hex::encode(&last.txs[last.txs.len() - 1].hash))
        .arg("--data-dir")
        .arg(&dir);
    let o = common::run(c);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        common::stdout(&o).contains(&format!("\"ledger_seq\": {}", last.seq))
            || common::stdout(&o).contains(&format!("\"ledger_seq\":{}", last.seq)),
        "{}",
        common::stdout(&o)
    );
    // A near miss of a name is refused, naming the value.
    let mut c = common::bin();
    c.args(["ingest", "--no-progress", "--network", "pubnte"])
        .arg("--stellar-file")
        .arg(&file)
        .arg("--data-dir")
        .arg(tmp.path().join("other"));
    let o = common::run(c);
    assert!(!o.status.success());
    assert!(
        common::stderr(&o).contains("\"pubnte\""),
        "{}",
        common::stderr(&o)
    );
}
