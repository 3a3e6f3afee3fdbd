//! The walker against the full decode, on every corpus of `testdata/`
//! (copies of `../shared/data/stellar/`) and on damaged input.
//!
//! The invariant (see `src/walk/mod.rs`): the walker accepts a ledger iff
//! the full decode accepts it and it is canonical (re-encodes to its own
//! bytes), and then both give the same `LedgerInput`, and the walker's
//! ranges slice out exactly the bytes the reference re-encodes (envelopes
//! in set order, result pairs and metas in apply order, the header's seq
//! and close time).

use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use ledgerstore_db_api::LedgerInput;
use ledgerstore_stellar::extract::{
    MAX_XDR_DEPTH, check_refusal, check_refused_ledger, limits, reference,
};
use ledgerstore_stellar::file::{check_refused_file, decode_file_reference, maybe_decompress};
use ledgerstore_stellar::walk::cursor::{Fail, Why};
use ledgerstore_stellar::walk::{inner_hash, tx_hash, walk, walk_limited};
use ledgerstore_stellar::{Network, ReadLimits, decode_file, ledger_from_xdr};
use sha2::{Digest, Sha256};
use stellar_xdr::{
    GeneralizedTransactionSet, LedgerCloseMeta, Limits, ReadXdr, TransactionEnvelope,
    TransactionPhase, TxSetComponent, WriteXdr,
};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn net(p: &str) -> Network {
    Network::parse(p).expect("network")
}

/// The envelopes of a decoded ledger, in set order (as the reference).
fn set_order(lcm: &LedgerCloseMeta) -> Vec<&TransactionEnvelope> {
    fn generalized(s: &GeneralizedTransactionSet) -> Vec<&TransactionEnvelope> {
        let GeneralizedTransactionSet::V1(v1) = s;
        let mut out: Vec<&TransactionEnvelope> = Vec::new();
        for phase in v1.phases.iter() {
            match phase {
                TransactionPhase::V0(cs) => {
                    for c in cs.iter() {
                        let TxSetComponent::TxsetCompTxsMaybeDiscountedFee(c) = c;
                        out.extend(c.txs.iter());
                    }
                }
                TransactionPhase::V1(p) => {
                    for stage in p.execution_stages.iter() {
                        for cluster in stage.0.iter() {
                            out.extend(cluster.0.iter());
                        }
                    }
                }
            }
        }
        out
    }
    match lcm {
        LedgerCloseMeta::V0(m) => m.tx_set.txs.iter().collect(),
        LedgerCloseMeta::V1(m) => generalized(&m.tx_set),
        LedgerCloseMeta::V2(m) => generalized(&m.tx_set),
    }
}

/// Walker and reference agree on one accepted ledger `l` (from the
/// reference): same `LedgerInput`, and the walker's ranges hold exactly the
/// reference's re-encoded bytes, in set and apply order.
fn check_ledger(l: &LedgerInput, network: &Network, at: &str) {
    let walked = ledger_from_xdr(l.raw.clone(), network, at)
        .unwrap_or_else(|e| panic!("{at}: the walker refuses what the reference takes: {e}"));
    assert!(
        walked.without_cuts() == *l,
        "{at}: walker and reference extract differently"
    );
    // The walker's cuts hold exactly the reference's re-encoded parts:
    // every part of every transaction, once, none overlapping.
    ledgerstore_db_api::check_cuts(&l.raw, &walked.cuts, &l.txs)
        .unwrap_or_else(|e| panic!("{at}: walker's cuts: {e}"));
    let mut named: Vec<(u32, ledgerstore_db_api::Part)> =
        walked.cuts.iter().map(|c| (c.tx, c.part)).collect();
    named.sort_unstable();
    named.dedup();
    assert_eq!(named.len(), 3 * l.txs.len(), "{at}: one cut per part");
    assert_eq!(walked.cuts.len(), 3 * l.txs.len(), "{at}: one cut per part");
    let skel = ledgerstore_db_api::split(&l.raw, &walked.cuts, &l.txs).expect("split");
    assert_eq!(
        skel.join(l.seq, |t, p| l.txs.get(t as usize).map(|t| t.part(p)))
            .expect("join"),
        l.raw,
        "{at}: skeleton and parts join back"
    );
    let s = walk(&l.raw).expect("walk");
    let lcm = LedgerCloseMeta::from_xdr(&l.raw, limits(l.raw.len())).expect("decode");
    assert_eq!(
        lcm.to_xdr(Limits::none()).expect("encode"),
        l.raw,
        "{at}: canonical"
    );
    assert_eq!((s.seq, s.close_time), (l.seq, l.close_time), "{at}");
    assert_eq!(s.seq_at.of(&l.raw), l.seq.to_be_bytes(), "{at}");
    assert_eq!(
        s.close_time_at.of(&l.raw),
        l.close_time.to_be_bytes(),
        "{at}"
    );
    let set = set_order(&lcm);
    assert_eq!(set.len(), s.envelopes.len(), "{at}: envelopes");
    let id = network.id();
    for (i, (e, want)) in s.envelopes.iter().zip(set).enumerate() {
        let bytes = want.to_xdr(Limits::none()).expect("encode");
        assert_eq!(e.envelope.of(&l.raw), &bytes[..], "{at}: set[{i}]");
        assert_eq!(
            tx_hash(&l.raw, e, &id),
            want.hash(id).expect("hash"),
            "{at}: set[{i}]"
        );
        let inner = match want {
            TransactionEnvelope::TxFeeBump(fb) => Some(fb.tx.inner_tx.hash(id).expect("inner")),
            _ => None,
        };
        assert_eq!(inner_hash(&l.raw, e, &id), inner, "{at}: set[{i}] inner");
    }
    assert_eq!(s.applied.len(), l.txs.len(), "{at}");
    for (i, (a, t)) in s.applied.iter().zip(&l.txs).enumerate() {
        assert_eq!(a.result.of(&l.raw), &t.result[..], "{at}: tx {i} result");
        assert_eq!(a.meta.of(&l.raw), &t.meta[..], "{at}: tx {i} meta");
        assert_eq!(a.hash(&l.raw).to_vec(), t.hash, "{at}: tx {i} hash");
    }
}

/// A whole file through both paths; returns (ledgers, txs).
fn check_file(bytes: &[u8], at: &str, network: &Network) -> (usize, usize) {
    let want = decode_file_reference(bytes, at, network, ReadLimits::default())
        .unwrap_or_else(|e| panic!("{at}: reference: {e}"));
    let got = decode_file(bytes, at, network, ReadLimits::default())
        .unwrap_or_else(|e| panic!("{at}: walker: {e}"));
    let got: Vec<LedgerInput> = got.iter().map(LedgerInput::without_cuts).collect();
    assert!(got == want, "{at}: decode_file differs from the reference");
    for (i, l) in want.iter().enumerate() {
        check_ledger(l, network, &format!("{at} ledger {i}"));
    }
    (want.len(), want.iter().map(|l| l.txs.len()).sum())
}

#[test]
fn lake_batches_and_load_test_stream() {
    assert_eq!(
        check_file(&read("FCD285FF--53312000.xdr.zstd"), "2024", &net("pubnet")),
        (1, 163)
    );
    assert_eq!(
        check_file(&read("FFFFFC18--999.xdr.zstd"), "999", &net("testnet")),
        (1, 3)
    );
    let (l, _) = check_file(
        &read("load-test-ledgers-v23-standalone.xdr.zstd"),
        "load test",
        &net("standalone"),
    );
    assert_eq!(l, 3);
}

#[test]
fn apply_load() {
    let f = "apply-load/load-test-ledgers-v28.xdr.zstd";
    assert_eq!(check_file(&read(f), f, &net("Apply Load")), (30, 14_760));
}

/// The 20 pubnet ledgers of 2026, also against their independent oracle.
#[test]
fn twenty_pubnet_ledgers_of_2026_and_their_oracle() {
    let name = "FC3D4709--63092982-63093001";
    let network = net("pubnet");
    let bytes = read(&format!("{name}.xdr.zst"));
    assert_eq!(check_file(&bytes, name, &network), (20, 5_188));
    let ledgers = decode_file(&bytes, name, &network, ReadLimits::default()).expect("walk");
    let oracle: serde_json::Value =
        serde_json::from_slice(&read(&format!("{name}.oracle.json"))).expect("json");
    let sha = |b: &[u8]| hex::encode(Sha256::digest(b));
    let want = oracle["txs"].as_array().expect("txs");
    let got: Vec<_> = ledgers.iter().flat_map(|l| &l.txs).collect();
    assert_eq!(got.len(), want.len());
    for (t, w) in got.iter().zip(want) {
        assert_eq!(hex::encode(&t.hash), w["hash"]);
        assert_eq!(
            t.alias.as_ref().map(hex::encode),
            w["inner_hash"].as_str().map(String::from)
        );
        assert_eq!(sha(&t.envelope), w["envelope_sha256"]);
        assert_eq!(sha(&t.result), w["result_pair_sha256"]);
        assert_eq!(sha(&t.meta), w["meta_sha256"]);
    }
    for (l, w) in ledgers
        .iter()
        .zip(oracle["ledgers"].as_array().expect("ledgers"))
    {
        assert_eq!(sha(&l.raw), w["lcm_sha256"]);
        assert_eq!(u64::from(l.seq), w["seq"].as_u64().expect("seq"));
    }
}

/// The era ledgers: base64 `LedgerCloseMeta`, one a line.
fn era_ledgers() -> Vec<(String, Vec<u8>)> {
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
    let mut out = Vec::new();
    for f in files {
        let text = String::from_utf8(read(&format!("pubnet-eras/{f}"))).expect("utf8");
        for (n, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let xdr = base64::engine::general_purpose::STANDARD
                .decode(line.trim())
                .expect("base64");
            out.push((format!("{f} line {}", n + 1), xdr));
        }
    }
    out
}

#[test]
fn pubnet_ledgers_of_every_protocol_era() {
    let network = net("pubnet");
    let (mut ledgers, mut txs) = (0, 0);
    for (at, xdr) in era_ledgers() {
        let l = reference(xdr, &network, &at).unwrap_or_else(|e| panic!("{at}: {e}"));
        check_ledger(&l, &network, &at);
        ledgers += 1;
        txs += l.txs.len();
    }
    assert_eq!(ledgers, 12);
    assert!(txs >= 791, "{txs}");
}

/// Every stream of stellar-core's unit tests (854 streams).
#[test]
fn every_stellar_core_unit_test_stream() {
    let tar = zstd::decode_all(&read("core-unit-test-lcms.tar.zst")[..]).expect("zstd");
    let mut archive = tar::Archive::new(&tar[..]);
    let network = net("(V) (;,,;) (V)");
    let (mut streams, mut ledgers, mut txs) = (0, 0, 0);
    for entry in archive.entries().expect("tar") {
        let mut entry = entry.expect("entry");
        let path = entry.path().expect("path").display().to_string();
        if !path.ends_with(".xdr") {
            continue;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read");
        let (l, t) = check_file(&bytes, &path, &network);
        streams += 1;
        ledgers += l;
        txs += t;
    }
    assert_eq!((streams, ledgers, txs), (854, 15_566, 13_080));
}

/// Walker and reference on possibly damaged bytes: both refuse, or both
/// accept with the same ledger; the walker alone refuses only a bool other
/// than 0 or 1, at the first word the reference re-encodes differently,
/// and the reference's decode re-encoded walks to the same ledger
/// (`check_refused_ledger`).
pub fn agree(bytes: &[u8], network: &Network, what: &str) {
    let w = ledger_from_xdr(bytes.to_vec(), network, "walk");
    let r = reference(bytes.to_vec(), network, "reference");
    match (w, r) {
        (Ok(w), Ok(r)) => {
            assert!(
                w.without_cuts() == r,
                "{what}: both accept, different ledgers"
            );
            ledgerstore_db_api::check_cuts(&r.raw, &w.cuts, &r.txs)
                .unwrap_or_else(|e| panic!("{what}: walker's cuts: {e}"));
        }
        (Err(_), Err(_)) => {}
        (Ok(_), Err(e)) => panic!("{what}: the walker accepts what the reference refuses: {e}"),
        (Err(e), Ok(_)) => {
            let refusal = walk(bytes).expect_err("refused");
            if let Err(why) = check_refused_ledger(bytes, &refusal, network) {
                panic!("{what}: the walker refuses what the reference takes ({e}): {why}");
            }
        }
    }
}

/// The smallest ledgers: the testnet ledger 999 and two era ledgers.
fn small_ledgers() -> Vec<(String, Vec<u8>, Network)> {
    let plain = maybe_decompress(&read("FFFFFC18--999.xdr.zstd"), "f", 1 << 30).expect("zstd");
    let mut out = vec![("999".to_string(), plain[12..].to_vec(), net("testnet"))];
    for (at, xdr) in era_ledgers() {
        if xdr.len() < 3_000 {
            out.push((at, xdr, net("pubnet")));
        }
    }
    out
}

#[test]
fn every_truncation_and_trailing_bytes() {
    for (at, raw, network) in small_ledgers() {
        for cut in 0..raw.len() {
            assert!(walk(&raw[..cut]).is_err(), "{at}: cut at {cut}");
            agree(&raw[..cut], &network, &format!("{at} cut at {cut}"));
        }
        for extra in [&[0u8][..], &[0, 0, 0, 0], &[1, 2, 3, 4, 5, 6, 7, 8]] {
            let mut b = raw.clone();
            b.extend_from_slice(extra);
            assert!(walk(&b).is_err(), "{at}: trailing {extra:?}");
            agree(&b, &network, &format!("{at} + {extra:?}"));
        }
    }
}

/// Every word set to values that hit bools, optionals' flags, union
/// discriminants, enum values and lengths; every byte flipped (which
/// covers padding).
#[test]
fn every_word_and_byte_mutated() {
    for (at, raw, network) in small_ledgers().into_iter().take(2) {
        for i in (0..raw.len()).step_by(4) {
            for v in [0u32, 1, 2, 3, 5, 0x7fff_ffff, 0xffff_ffff, 0x8000_0000] {
                let mut b = raw.clone();
                b[i..i + 4].copy_from_slice(&v.to_be_bytes());
                agree(&b, &network, &format!("{at}: word {i} = {v:#x}"));
            }
        }
        for i in 0..raw.len() {
            let mut b = raw.clone();
            b[i] ^= 0x01;
            agree(&b, &network, &format!("{at}: byte {i} ^ 1"));
        }
    }
}

/// The depth limit is spent exactly as the decoder spends it: at every
/// limit from 0 up, walker and decoder refuse or accept together.
#[test]
fn depth_accounting_matches_the_decoder_at_every_limit() {
    let mut ledgers: Vec<(String, Vec<u8>)> = era_ledgers();
    let plain = maybe_decompress(&read("FFFFFC18--999.xdr.zstd"), "f", 1 << 30).expect("zstd");
    ledgers.push(("999".into(), plain[12..].to_vec()));
    let tar = zstd::decode_all(&read("core-unit-test-lcms.tar.zst")[..]).expect("zstd");
    let mut archive = tar::Archive::new(&tar[..]);
    // Soroban streams nest deepest (auth trees, ScVal maps and vecs).
    for entry in archive.entries().expect("tar") {
        let mut entry = entry.expect("entry");
        let path = entry.path().expect("path").display().to_string();
        if !path.ends_with(".xdr") || !path.contains("Soroban") && !path.contains("InvokeHost") {
            continue;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read");
        let mut at = 0;
        while at + 4 <= bytes.len() && ledgers.len() < 400 {
            let len = (u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4")) & 0x7fff_ffff)
                as usize;
            let Some(frame) = bytes.get(at + 4..at + 4 + len) else {
                break;
            };
            ledgers.push((format!("{path}@{at}"), frame.to_vec()));
            at += 4 + len;
        }
    }
    let mut deepest = 0;
    for (at, raw) in &ledgers {
        let mut accepted_at = None;
        for depth in 0..=MAX_XDR_DEPTH {
            let w = walk_limited(raw, depth).is_ok();
            let r = LedgerCloseMeta::from_xdr(
                raw,
                Limits {
                    depth,
                    len: raw.len(),
                },
            )
            .is_ok();
            assert_eq!(w, r, "{at}: depth limit {depth}: walker {w}, decoder {r}");
            if r {
                accepted_at = Some(depth);
                break;
            }
        }
        let d = accepted_at.unwrap_or_else(|| panic!("{at}: refused at every depth"));
        deepest = deepest.max(d);
    }
    eprintln!(
        "{} ledgers; the deepest needs a depth limit of {deepest}",
        ledgers.len()
    );
}

/// A real ledger with a bool (ledger 2 of a stellar-core unit-test stream)
/// and where its first bool word is: the first word that, set to 2, the
/// walker refuses as a bool of 2 while the reference takes it. Also its
/// network.
fn a_ledger_and_a_bool() -> (Vec<u8>, usize, Network) {
    const STREAM: &str =
        "core-unit-test/stellar-horizon-test-lcms/TxEnvelopeTests/c5e8f50805e3d276.xdr";
    let network = net("(V) (;,,;) (V)");
    let tar = zstd::decode_all(&read("core-unit-test-lcms.tar.zst")[..]).expect("zstd");
    let mut archive = tar::Archive::new(&tar[..]);
    let mut entry = archive
        .entries()
        .expect("tar")
        .map(|e| e.expect("entry"))
        .find(|e| e.path().expect("path").display().to_string() == STREAM)
        .expect(STREAM);
    let mut bytes = Vec::new();
    entry.read_to_end(&mut bytes).expect("read");
    let (_, raw) = ledgerstore_stellar::file::FrameReader::new(&bytes[..], STREAM, 1 << 20)
        .nth(1)
        .expect("a second frame")
        .expect("frame");
    for at in (0..raw.len()).step_by(4) {
        let mut b = raw.clone();
        b[at..at + 4].copy_from_slice(&2u32.to_be_bytes());
        if walk(&b).is_err_and(|f| f.at == at && f.why == Why::Bool(2))
            && reference(b.clone(), &network, "flipped").is_ok()
        {
            return (raw, at, network);
        }
    }
    panic!("no bool in {STREAM} ledger 2");
}

/// A bool of 2 in a real ledger: refused (the store keeps canonical
/// bytes), with a message that says where, what, and why.
#[test]
fn a_bool_of_2_is_refused_with_a_clear_message() {
    let (raw, at, network) = a_ledger_and_a_bool();
    let mut b = raw.clone();
    b[at..at + 4].copy_from_slice(&2u32.to_be_bytes());
    let e = ledger_from_xdr(b.clone(), &network, "flipped")
        .expect_err("a bool of 2")
        .to_string();
    for want in [
        format!("at byte {at}"),
        "a bool of 2".into(),
        "XDR bools are 0 or 1".into(),
        "not canonical XDR".into(),
    ] {
        assert!(e.contains(&want), "{e:?} lacks {want:?}");
    }
    // The reference takes it, as false: its re-encoding has a 0 there,
    // and the walker takes that to the reference's ledger.
    let mut canonical = raw.clone();
    canonical[at..at + 4].copy_from_slice(&[0; 4]);
    let r = reference(b.clone(), &network, "flipped").expect("reference");
    let want = ledger_from_xdr(canonical, &network, "canonical").expect("walk");
    assert_eq!(r.txs, want.txs);
    let refusal = walk(&b).expect_err("bool");
    assert_eq!(check_refused_ledger(&b, &refusal, &network), Ok(want));
}

/// The excuse for a refusal is the bool where the walker stopped, and
/// nothing else: not a refusal elsewhere or of something else, not a
/// refusal of canonical bytes, however large.
#[test]
fn a_non_canonical_bool_excuses_only_its_own_refusal() {
    let (raw, at, network) = a_ledger_and_a_bool();
    let mut b = raw.clone();
    b[at..at + 4].copy_from_slice(&2u32.to_be_bytes());
    let mut canonical = raw.clone();
    canonical[at..at + 4].copy_from_slice(&[0; 4]);
    let fail = |at, why| Fail { at, why };
    assert_eq!(
        check_refusal(&b, &canonical, &fail(at, Why::Bool(2))),
        Ok(())
    );
    // Elsewhere (a later ledger part), or another reason at the same word.
    let c = &canonical;
    assert!(check_refusal(&b, c, &fail(at + 4, Why::Bool(2))).is_err());
    assert!(check_refusal(&b, c, &fail(raw.len() - 4, Why::Enum("X"))).is_err());
    assert!(check_refusal(&b, c, &fail(at, Why::Enum("X"))).is_err());
    assert!(check_refusal(&b, c, &fail(at, Why::Flag(2))).is_err());
    // Canonical bytes: no excuse.
    let e = check_refused_ledger(&raw, &fail(at, Why::Bool(2)), &network).expect_err("canonical");
    assert!(e.contains("canonical"), "{e}");

    // Files: a stream of the ledger with its bool flipped, then the
    // ledger as it is, is excused (the walker refuses the first frame);
    // the same stream without the flip is not (nothing to excuse).
    let lim = ReadLimits {
        max_file_bytes: 8 << 20,
        max_frame_bytes: 4 << 20,
    };
    let frame = |x: &[u8]| {
        let mut f = (0x8000_0000u32 | x.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(x);
        f
    };
    let stream = [frame(&b), frame(&raw)].concat();
    let want = decode_file_reference(&stream, "s", &network, lim).expect("reference");
    assert!(decode_file(&stream, "s", &network, lim).is_err());
    assert_eq!(check_refused_file(&stream, &network, lim, &want), Ok(()));
    let clean = [frame(&raw), frame(&raw)].concat();
    let want = decode_file_reference(&clean, "c", &network, lim).expect("reference");
    let e = check_refused_file(&clean, &network, lim, &want).expect_err("no excuse");
    assert!(e.contains("takes every frame"), "{e}");
    // A batch of the ledger with the bool flipped: excused.
    let seq = walk(&raw).expect("walk").seq;
    let batch = [
        &seq.to_be_bytes()[..],
        &seq.to_be_bytes(),
        &1u32.to_be_bytes(),
        &b,
    ]
    .concat();
    let want = decode_file_reference(&batch, "b", &network, lim).expect("reference");
    assert!(decode_file(&batch, "b", &network, lim).is_err());
    assert_eq!(check_refused_file(&batch, &network, lim, &want), Ok(()));
}

/// A canonical ledger larger than a 4 MiB frame (the fuzz target's frame
/// limit; its files may be 8 MiB): the walker takes it, and a refusal of
/// it would not be excused (the old check wrapped it in a frame, failed
/// the frame limit and called it non-canonical).
#[test]
fn a_canonical_ledger_over_4_mib_is_no_excuse() {
    use stellar_xdr::{
        HostFunction, InvokeHostFunctionOp, LedgerCloseMetaV0, Memo, MuxedAccount, Operation,
        OperationBody, Preconditions, SequenceNumber, Transaction, TransactionExt,
        TransactionV1Envelope, Uint256, VecM,
    };
    let wasm = vec![7u8; (4 << 20) + 1000];
    let env = TransactionEnvelope::Tx(TransactionV1Envelope {
        tx: Transaction {
            source_account: MuxedAccount::Ed25519(Uint256([1; 32])),
            fee: 100,
            seq_num: SequenceNumber(1),
            cond: Preconditions::None,
            memo: Memo::None,
            operations: vec![Operation {
                source_account: None,
                body: OperationBody::InvokeHostFunction(InvokeHostFunctionOp {
                    host_function: HostFunction::UploadContractWasm(wasm.try_into().expect("wasm")),
                    auth: VecM::default(),
                }),
            }]
            .try_into()
            .expect("ops"),
            ext: TransactionExt::V0,
        },
        signatures: VecM::default(),
    });
    let mut v0 = LedgerCloseMetaV0::default();
    v0.tx_set.txs = vec![env].try_into().expect("txs");
    let big = LedgerCloseMeta::V0(v0)
        .to_xdr(Limits::none())
        .expect("encode");
    assert!(big.len() > 4 << 20);
    assert_eq!(walk(&big).expect("walks").envelopes.len(), 1);
    let fake = Fail {
        at: 0,
        why: Why::Trailing,
    };
    let e = check_refused_ledger(&big, &fake, &net("testnet")).expect_err("canonical");
    assert!(e.contains("canonical"), "{e}");
}
