//! Extraction on real stellar-core output (`testdata/`, copies of the
//! team's shared fixtures), checked against the independent oracle of the
//! pubnet ledger, plus the ways real files go wrong.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use ledgerstore_db_api::LedgerInput;
use ledgerstore_stellar::file::{ReadLimits, maybe_decompress};
use ledgerstore_stellar::{Network, StellarError, decode_file};
use sha2::{Digest, Sha256};
use stellar_xdr::{Limits, ReadXdr, TransactionEnvelope, TransactionMeta, TransactionResultPair};

const PUBNET_FILE: &str = "FCD285FF--53312000.xdr.zstd";
const TEST_FILE: &str = "FFFFFC18--999.xdr.zstd";
const STREAM_FILE: &str = "load-test-ledgers-v23-standalone.xdr.zstd";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

/// The file's bytes, after checking the sha256 the upstream README lists.
fn fixture(name: &str) -> Vec<u8> {
    let bytes = std::fs::read(data(name)).expect("fixture");
    let readme = std::fs::read_to_string(data("README.upstream.md")).expect("readme");
    let sum = hex::encode(Sha256::digest(&bytes));
    assert!(
        readme.contains(&format!("{sum}  {name}")),
        "{name}: sha256 {sum} is not the one README.upstream.md lists"
    );
    bytes
}

fn net(s: &str) -> Network {
    Network::parse(s).expect("network")
}

fn decode(name: &str, network: &str) -> Vec<LedgerInput> {
    decode_file(&fixture(name), name, &net(network), ReadLimits::default()).expect(name)
}

/// Every stored body must be an exact slice of the ledger's raw XDR.
fn assert_bodies_are_slices_of_raw(l: &LedgerInput) {
    for (i, t) in l.txs.iter().enumerate() {
        for (what, b) in [
            ("envelope", &t.envelope),
            ("result", &t.result),
            ("meta", &t.meta),
        ] {
            assert!(
                memchr::memmem::find(&l.raw, b).is_some(),
                "ledger {} tx {i}: the {what} is not a slice of the raw LedgerCloseMeta",
                l.seq
            );
        }
    }
}

fn assert_well_formed(l: &LedgerInput) {
    for (i, t) in l.txs.iter().enumerate() {
        TransactionEnvelope::from_xdr(&t.envelope, Limits::none()).expect("envelope decodes");
        TransactionMeta::from_xdr(&t.meta, Limits::none()).expect("meta decodes");
        let pair = TransactionResultPair::from_xdr(&t.result, Limits::none()).expect("result");
        assert_eq!(pair.transaction_hash.0.to_vec(), t.hash, "tx {i}");
    }
    assert_bodies_are_slices_of_raw(l);
}

#[test]
fn pubnet_ledger_matches_the_oracle_byte_for_byte() {
    let ledgers = decode(PUBNET_FILE, "pubnet");
    assert_eq!(ledgers.len(), 1);
    let l = &ledgers[0];
    assert_eq!(l.seq, 53_312_000);
    assert!(l.close_time > 1_700_000_000, "close time {}", l.close_time);

    let oracle: serde_json::Value = serde_json::from_slice(&fixture_json()).expect("oracle json");
    assert_eq!(oracle["ledger"], 53_312_000);
    let txs = oracle["txs"].as_array().expect("txs");
    assert_eq!(oracle["tx_count"], 163);
    assert_eq!(l.txs.len(), 163);
    assert_eq!(txs.len(), 163);
    for o in txs {
        let i = o["apply_index"].as_u64().expect("index") as usize;
        let t = &l.txs[i];
        assert_eq!(
            hex::encode(&t.hash),
            o["hash"].as_str().expect("hash"),
            "tx {i}"
        );
        let env = base64::engine::general_purpose::STANDARD
            .decode(o["envelope_b64"].as_str().expect("b64"))
            .expect("base64");
        assert_eq!(t.envelope, env, "tx {i}: envelope bytes");
    }
    assert_well_formed(l);
    // raw is the LedgerCloseMeta exactly as it sits in the batch file, after
    // the batch header (start, end, count).
    let plain = maybe_decompress(&fixture(PUBNET_FILE), "f", 1 << 30).expect("zstd");
    assert_eq!(plain.len(), 372_492);
    assert_eq!(&plain[12..], &l.raw[..]);
}

fn fixture_json() -> Vec<u8> {
    std::fs::read(data("FCD285FF--53312000.txs.json")).expect("oracle")
}

#[test]
fn testnet_ledger_999() {
    // The shared README says "a test network"; its hashes match testnet's
    // passphrase (and no other well-known one).
    for other in ["pubnet", "futurenet", "standalone"] {
        assert!(
            decode_file(
                &fixture(TEST_FILE),
                TEST_FILE,
                &net(other),
                ReadLimits::default()
            )
            .is_err()
        );
    }
    let ledgers = decode(TEST_FILE, "testnet");
    assert_eq!(ledgers.len(), 1);
    assert_eq!(ledgers[0].seq, 999);
    assert_well_formed(&ledgers[0]);
    assert_eq!(ledgers[0].txs.len(), 3);
}

#[test]
fn load_test_stream_of_three_v2_frames() {
    let ledgers = decode(STREAM_FILE, "standalone");
    assert_eq!(ledgers.len(), 3);
    // The load test's stream skips ledgers: a store refuses the jump from
    // the second frame to the third (tested with the daemon and the CLI).
    let seqs: Vec<u32> = ledgers.iter().map(|l| l.seq).collect();
    assert_eq!(seqs[1] + 3, seqs[2], "{seqs:?}");
    let total: usize = ledgers.iter().map(|l| l.txs.len()).sum();
    for l in &ledgers {
        assert_well_formed(l);
        eprintln!("stream ledger {}: {} txs", l.seq, l.txs.len());
    }
    assert!(total > 0);
    // Each frame's raw is the frame body, whose sizes the README gives.
    let sizes: Vec<usize> = ledgers.iter().map(|l| l.raw.len()).collect();
    assert_eq!(sizes.iter().min(), Some(&19_768), "{sizes:?}");
    assert_eq!(sizes.iter().max(), Some(&1_873_044), "{sizes:?}");
    assert_eq!(sizes.iter().sum::<usize>() + 4 * 3, 3_666_184);
}

#[test]
fn wrong_passphrase_fails_loudly_naming_ledger_and_index() {
    let err = decode_file(
        &fixture(PUBNET_FILE),
        PUBNET_FILE,
        &net("testnet"),
        ReadLimits::default(),
    )
    .expect_err("wrong network");
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            StellarError::Mismatch {
                seq: 53_312_000,
                ..
            }
        ),
        "{msg}"
    );
    assert!(msg.contains("ledger 53312000"), "{msg}");
    assert!(msg.contains("tx_processing[0]"), "{msg}");
    assert!(msg.contains("Test SDF Network"), "{msg}");
}

#[test]
fn truncated_files_are_refused_with_the_place() {
    let file = fixture(PUBNET_FILE);
    // A cut zstd file.
    let err = decode_file(
        &file[..file.len() / 2],
        "cut.zst",
        &net("pubnet"),
        ReadLimits::default(),
    )
    .expect_err("cut zstd");
    assert!(matches!(err, StellarError::Zstd { .. }), "{err}");
    assert!(err.to_string().contains("cut.zst"), "{err}");
    // A cut (uncompressed) batch.
    let plain = maybe_decompress(&file, "f", 1 << 30).expect("zstd");
    let err = decode_file(
        &plain[..plain.len() - 100],
        "cut.xdr",
        &net("pubnet"),
        ReadLimits::default(),
    )
    .expect_err("cut xdr");
    assert!(matches!(err, StellarError::Xdr { .. }), "{err}");
    assert!(err.to_string().contains("truncated"), "{err}");
    // A cut stream: the last frame loses its tail.
    let stream = maybe_decompress(&fixture(STREAM_FILE), "s", 1 << 30).expect("zstd");
    let err = decode_file(
        &stream[..stream.len() - 10],
        "cut.stream",
        &net("standalone"),
        ReadLimits::default(),
    )
    .expect_err("cut stream");
    let msg = err.to_string();
    assert!(msg.contains("cut.stream frame 2"), "{msg}");
    assert!(msg.contains("truncated"), "{msg}");
    // Too short to be anything.
    assert!(decode_file(&[0, 0], "tiny", &net("pubnet"), ReadLimits::default()).is_err());
}

#[test]
fn corrupted_zstd_is_refused() {
    let mut file = fixture(PUBNET_FILE);
    let mid = file.len() / 2;
    for b in &mut file[mid..mid + 64] {
        *b ^= 0x5a;
    }
    let err =
        decode_file(&file, "bad.zst", &net("pubnet"), ReadLimits::default()).expect_err("corrupt");
    assert!(err.to_string().contains("bad.zst"), "{err}");
}

#[test]
fn limits_stop_oversize_input() {
    let lim = ReadLimits {
        max_file_bytes: 100_000,
        max_frame_bytes: 1 << 20,
    };
    let err = decode_file(&fixture(PUBNET_FILE), "big", &net("pubnet"), lim).expect_err("limit");
    assert!(err.to_string().contains("more than 100000 bytes"), "{err}");
    let lim = ReadLimits {
        max_file_bytes: 1 << 30,
        max_frame_bytes: 1 << 20,
    };
    let err = decode_file(&fixture(STREAM_FILE), "s", &net("standalone"), lim).expect_err("frame");
    assert!(
        err.to_string().contains("over the limit of 1048576"),
        "{err}"
    );
}

/// Every fee bump of the 20 consecutive 2026 pubnet ledgers gets its inner
/// transaction's hash as its alias (what stellar-rpc finds it by too), as
/// the independent oracle gives it; no other transaction has one.
#[test]
fn fee_bumps_carry_their_inner_hash_as_the_oracle_gives_it() {
    let name = "FC3D4709--63092982-63093001";
    let bytes = std::fs::read(data(&format!("{name}.xdr.zst"))).expect("fixture");
    let ledgers = decode_file(&bytes, name, &net("pubnet"), ReadLimits::default()).expect(name);
    let oracle: serde_json::Value = serde_json::from_slice(
        &std::fs::read(data(&format!("{name}.oracle.json"))).expect("oracle"),
    )
    .expect("oracle json");
    let want = oracle["txs"].as_array().expect("txs");
    let got: Vec<_> = ledgers.iter().flat_map(|l| &l.txs).collect();
    assert_eq!(got.len(), want.len());
    let mut bumps = 0;
    for (t, w) in got.iter().zip(want) {
        assert_eq!(hex::encode(&t.hash), w["hash"]);
        match (&t.alias, w["inner_hash"].as_str()) {
            (Some(a), Some(inner)) => {
                assert_eq!(hex::encode(a), inner);
                assert_eq!(w["fee_bump"], true);
                bumps += 1;
            }
            (None, None) => assert_eq!(w["fee_bump"], false),
            (a, i) => panic!("{}: alias {a:?}, oracle inner hash {i:?}", w["hash"]),
        }
    }
    assert_eq!(bumps, 598);
}
