//! Seed corpora, built from the real fixtures the test suite already
//! checks (`crates/stellar/testdata`, `crates/segment/testdata`) and from
//! the writers the store uses, so every seed starts on a real format.

use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine;
use ledgerstore_db_api::codec::zstd_compress;
use ledgerstore_db_api::{
    DictSet, Dictionary, LedgerBytes, LedgerInput, LedgerRecordRef, TxBody, TxHash, TxPos,
    TxRecordRef, split,
};
use ledgerstore_event_index::EventIndexBuilder;
use ledgerstore_pack::{
    DictRef, EventsGeometry, EventsRef, Manifest, Object, PackRef, PackWriter, SegmentRef,
};
use ledgerstore_segment::{SegmentBuilder, hashes};
use ledgerstore_stellar::events::{
    Events, LedgerCounts, OwnedEvent, Stage, TxContext, ledger_events, tx_events,
};
use ledgerstore_stellar::walk::walk;
use ledgerstore_stellar::{Network, ReadLimits, decode_file, ledger_from_xdr};

use crate::segment::probe;
use crate::{FuzzError, FuzzResult};

/// One seed: a name (its file name in the corpus) and its bytes.
pub type Seed = (String, Vec<u8>);

/// The seeds of the target called `target`.
pub fn seeds(target: &str) -> FuzzResult<Vec<Seed>> {
    match target {
        "xdr" => xdr(),
        "codec" => codec(),
        "segment" => segment(),
        "pack" => pack(),
        "batch" => Ok(batch()),
        "events" => events(),
        "event_index" => event_index(),
        other => Err(FuzzError::UnknownTarget {
            name: other.to_string(),
            targets: crate::target_names(),
        }),
    }
}

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn read(rel: &str) -> FuzzResult<Vec<u8>> {
    let path = testdata(rel);
    std::fs::read(&path).map_err(FuzzError::io(path))
}

fn fixture_err(name: &str, detail: impl ToString) -> FuzzError {
    FuzzError::Fixture {
        name: name.to_string(),
        detail: detail.to_string(),
    }
}

/// Pubnet ledgers of the early protocol eras, one base64 line each.
const ERA_LEDGERS: [&str; 6] = [
    "burn-ledger-7762802",
    "mint-ledger-7320888",
    "xlm-burn-bug-ledger-9722383",
    "xlm-mint-bug-ledger-9652679",
    "xlm-mint-bug-ledger-9652698",
    "xlm-mint-bug-ledger-9710976",
];

/// Unit-test streams taken from the archive.
const STREAMS: usize = 16;
/// The largest unit-test stream taken (smaller seeds fuzz faster).
const MAX_STREAM_BYTES: usize = 16 << 10;

/// The raw XDR of one early-era pubnet ledger.
fn era_ledger(name: &str) -> FuzzResult<Vec<u8>> {
    let rel = format!("stellar/testdata/pubnet-eras/{name}");
    let text = read(&rel)?;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim_ascii())
        .map_err(|e| fixture_err(&rel, e))
}

/// The `xdr` target's first byte for each fixture's network (an index
/// into [`crate::xdr::PASSPHRASES`]).
const PUBNET_PICK: u8 = 0;
const TESTNET_PICK: u8 = 1;
const CORE_TESTS_PICK: u8 = 2;

/// `file` behind the byte that picks its network.
fn on(pick: u8, file: &[u8]) -> Vec<u8> {
    let mut out = vec![pick];
    out.extend_from_slice(file);
    out
}

/// `bytes` as one record-marked frame (the last-fragment bit set).
fn frame(bytes: &[u8]) -> Vec<u8> {
    let mut out = (0x8000_0000u32 | bytes.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(bytes);
    out
}

/// A SEP-54 batch file (zstd, and plain); the early-era ledgers as
/// one-frame streams; and stellar-core unit-test streams of every size up
/// to 64 KiB, evenly spread over the archive's size order.
fn xdr() -> FuzzResult<Vec<Seed>> {
    let mut out = Vec::new();
    let lake = "stellar/testdata/FFFFFC18--999.xdr.zstd";
    let zst = read(lake)?;
    let plain = zstd::decode_all(&zst[..]).map_err(|e| fixture_err(lake, e))?;
    out.push(("lake-batch.xdr.zst".into(), on(TESTNET_PICK, &zst)));
    out.push(("lake-batch.xdr".into(), on(TESTNET_PICK, &plain)));
    for name in ERA_LEDGERS {
        out.push((
            format!("era-{name}.frame"),
            on(PUBNET_PICK, &frame(&era_ledger(name)?)),
        ));
    }
    let archive = "stellar/testdata/core-unit-test-lcms.tar.zst";
    let tar = zstd::decode_all(&read(archive)?[..]).map_err(|e| fixture_err(archive, e))?;
    let mut streams = Vec::new();
    let mut entries = tar::Archive::new(&tar[..]);
    for entry in entries.entries().map_err(|e| fixture_err(archive, e))? {
        let mut entry = entry.map_err(|e| fixture_err(archive, e))?;
        let path = entry.path().map_err(|e| fixture_err(archive, e))?;
        let name = path.display().to_string();
        if !name.ends_with(".xdr") || entry.size() > MAX_STREAM_BYTES as u64 {
            continue;
        }
        let mut bytes = Vec::new();
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| fixture_err(&name, e))?;
        streams.push((name.replace('/', "_"), bytes));
    }
    streams.sort_by_key(|(_, b)| b.len());
    let step = streams.len().div_ceil(STREAMS).max(1);
    out.extend(
        streams
            .into_iter()
            .step_by(step)
            .map(|(n, b)| (format!("core-{n}"), on(CORE_TESTS_PICK, &b))),
    );
    Ok(out)
}

/// Stored forms of real transactions: records, bodies, zstd frames, keys
/// and file names, each behind the byte that picks its decoder.
fn codec() -> FuzzResult<Vec<Seed>> {
    let name = "mint-ledger-7320888";
    let network = Network::from_passphrase(ledgerstore_stellar::network::PUBNET);
    let ledger: LedgerInput =
        ledger_from_xdr(era_ledger(name)?, &network, name).map_err(|e| fixture_err(name, e))?;
    let mut out = Vec::new();
    let mut put = |pick: u8, what: String, bytes: &[u8]| {
        let mut b = vec![pick];
        b.extend_from_slice(bytes);
        out.push((what, b));
    };
    let hashes: Vec<TxHash> = ledger
        .txs
        .iter()
        .filter_map(|t| TxHash::from_slice(&t.hash))
        .collect();
    for (i, tx) in ledger.txs.iter().enumerate().take(3) {
        let rec = TxRecordRef::of(&ledger, i as u32, tx).encode();
        put(0, format!("tx-record-{i}"), &rec);
        let hash = hashes.get(i).copied().unwrap_or(TxHash([0; 32]));
        let body = TxBody::compress_record(hash, &rec, &DictSet::default(), 3)?;
        put(2, format!("tx-body-{i}"), &body.to_bytes());
        put(
            2,
            format!("tx-body-raw-{i}"),
            &TxBody::raw(hash, rec.clone()).to_bytes(),
        );
        put(3, format!("tx-record-{i}.zst"), &zstd_compress(&rec, 3)?);
    }
    let ledger_rec = LedgerRecordRef {
        seq: ledger.seq,
        close_time: ledger.close_time,
        tx_hashes: &hashes,
        aliases: &[],
        bytes: LedgerBytes::Whole(&ledger.raw),
    }
    .encode();
    put(1, "ledger-record".into(), &ledger_rec);
    let skeleton = split(&ledger.raw, &ledger.cuts, &ledger.txs)?;
    let skeleton_rec = LedgerRecordRef {
        seq: ledger.seq,
        close_time: ledger.close_time,
        tx_hashes: &hashes,
        aliases: &[],
        bytes: LedgerBytes::Split(&skeleton),
    }
    .encode();
    put(1, "ledger-record-v3".into(), &skeleton_rec);
    put(
        3,
        "ledger-record.zst".into(),
        &zstd_compress(&ledger_rec, 3)?,
    );
    // A format-3 dir's `ledgers` value: the raw skeleton record.
    put(3, "ledger-record-v3-raw".into(), &skeleton_rec);
    let pos = TxPos {
        seq: ledger.seq,
        index: 2,
    };
    put(4, "key-position".into(), &pos.to_bytes());
    put(4, "key-seq".into(), &ledger.seq.to_be_bytes());
    put(4, "key-dictionary".into(), &Dictionary::key(3));
    for (i, name) in [
        ledgerstore_segment::file_name(10_000, 19_999),
        hashes::file_name(0, 9_999),
        "FFFFFC18--999.xdr.zstd".into(),
        "FC3D4709--63092982-63093001.xdr.zst".into(),
    ]
    .iter()
    .enumerate()
    {
        put(4, format!("name-{i}"), name.as_bytes());
    }
    Ok(out)
}

/// Segments and hash lists the store's builder writes (probe hashes at
/// known positions, ranges from one ledger to past one 1,024-ledger
/// offsets block), and the committed legacy segments (formats 1 and 2).
fn segment() -> FuzzResult<Vec<Seed>> {
    let dir = tempfile::tempdir().map_err(FuzzError::io(std::env::temp_dir()))?;
    let mut out = Vec::new();
    let mut next = 0u32;
    for (first, counts) in [
        (5u32, vec![1u32]),
        (100, vec![3, 0, 5, 2]),
        (1, {
            let mut c = vec![0u32; 2_100];
            c[0] = 2;
            c[1_023] = 3;
            c[1_024] = 1;
            c[2_099] = 7;
            c
        }),
    ] {
        let last = first + counts.len() as u32 - 1;
        let mut b = SegmentBuilder::new(first, last)?;
        for (li, &count) in counts.iter().enumerate() {
            for index in 0..count {
                let seq = first + li as u32;
                b.push(probe(next), TxPos { seq, index })?;
                next += 1;
            }
        }
        let seg = dir.path().join(ledgerstore_segment::file_name(first, last));
        let list = dir.path().join(hashes::file_name(first, last));
        b.write_with_hashes(&seg, &list)?;
        for (pick, path, what) in [(0u8, seg, "seg"), (1, list, "hashes")] {
            let mut bytes = vec![pick];
            bytes.extend(std::fs::read(&path).map_err(FuzzError::io(&path))?);
            out.push((format!("{what}-{first}-{last}"), bytes));
        }
    }
    for legacy in ["seg-kind1-legacy.idx", "seg-v2-split.idx"] {
        let mut bytes = vec![0u8];
        bytes.extend(read(&format!("segment/testdata/{legacy}"))?);
        out.push((legacy.to_string(), bytes));
    }
    Ok(out)
}

/// Packs the publisher's writer makes, in format versions 2, 3 and 4 (one
/// ledger, a range past one ledger table page with bodies past one body
/// page, and a ledger with no bodies), the committed version-1 pack, and
/// manifests.
fn pack() -> FuzzResult<Vec<Seed>> {
    let dir = tempfile::tempdir().map_err(FuzzError::io(std::env::temp_dir()))?;
    let mut out = Vec::new();
    let parts = |seq: u32| {
        let record = vec![seq as u8; 8 + (seq % 13) as usize];
        let bodies: Vec<Vec<u8>> = (0..seq % 3)
            .map(|i| vec![(seq + i) as u8; 4 + i as usize])
            .collect();
        (record, bodies)
    };
    for v in [2u32, 3, 4] {
        for (first, last) in [(7u32, 7u32), (1, 140), (50, 52)] {
            let path = dir.path().join(format!("{first}-{last}-v{v}.pack"));
            // Version 4: a dictionary of the range's sampled ledgers.
            let content = |seq: u32| {
                let (r, b) = parts(seq);
                ledgerstore_pack::frame_content(&r, &b).map(Some)
            };
            let dict = match v {
                4 => ledgerstore_pack::FrameDict::of_ledgers(first, last, 64 << 10, 3, content)?,
                _ => None,
            };
            let enc = ledgerstore_pack::FrameEncoder::new(3, dict.as_ref());
            let mut w = match (v, &dict) {
                (2, _) => PackWriter::create(&path, first, last)?,
                (_, None) => PackWriter::create_frames(&path, first, last)?,
                (_, Some(d)) => PackWriter::create_frames_with_dict(&path, first, last, d)?,
            };
            for seq in first..=last {
                let (record, bodies) = parts(seq);
                if v == 2 {
                    w.push_ledger(seq, &record, &bodies)?;
                } else {
                    w.push_frame(seq, &enc.frame(&record, &bodies)?)?;
                }
            }
            w.finish()?;
            let mut bytes = vec![0u8];
            bytes.extend(std::fs::read(&path).map_err(FuzzError::io(&path))?);
            let name = if v == 2 {
                format!("pack-{first}-{last}")
            } else {
                format!("pack-v{v}-{first}-{last}")
            };
            out.push((name, bytes));
        }
    }
    let mut v1 = vec![0u8];
    v1.extend(read("pack/testdata/v1-1-200.pack")?);
    out.push(("pack-v1-1-200".into(), v1));
    let object = |key: &str| Object {
        key: key.into(),
        size: 10,
        sha256: "ab".repeat(32),
    };
    let m = Manifest {
        format: ledgerstore_pack::manifest::FORMAT,
        version: 3,
        created_unix_ms: 1,
        writer: "seed".into(),
        range_ledgers: 100,
        first: 2,
        mark: 199,
        mark_record_sha256: "cd".repeat(32),
        packs: vec![
            PackRef {
                first: 2,
                last: 99,
                bodies: 5,
                object: object("packs/a"),
            },
            PackRef {
                first: 100,
                last: 199,
                bodies: 6,
                object: object("packs/b"),
            },
        ],
        segments: vec![SegmentRef {
            first: 2,
            last: 199,
            object: object("segments/a"),
        }],
        dicts: vec![DictRef {
            version: 1,
            object: object("dicts/1"),
        }],
        events_geometry: Some(EventsGeometry {
            file_ledgers: 64,
            fan_out: 16,
        }),
        events: vec![EventsRef {
            first: 2,
            last: 127,
            events: 40,
            object: object("events/a"),
        }],
    };
    let mut bytes = vec![1u8];
    bytes.extend(m.to_bytes());
    out.push(("manifest-3".into(), bytes));
    Ok(out)
}

/// Byte strings for `arbitrary` to draw batches from: any bytes draw a
/// case, so these only vary the first draws.
fn batch() -> Vec<Seed> {
    let mut out = vec![
        ("zeros".to_string(), vec![0u8; 96]),
        ("ones".to_string(), vec![0xFF; 96]),
        ("ramp".to_string(), (0..=255u8).collect()),
    ];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..5 {
        let bytes = (0..160)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        out.push((format!("noise-{i}"), bytes));
    }
    out
}

/// The 20 pubnet ledgers of 2026 (transaction metas V4), raw.
const PUBNET_2026: &str = "stellar/testdata/FC3D4709--63092982-63093001.xdr.zst";

/// Every ledger of a ledger file, raw.
fn ledgers_of(rel: &str, network: &str) -> FuzzResult<Vec<Vec<u8>>> {
    let net = Network::from_passphrase(network);
    Ok(decode_file(&read(rel)?, rel, &net, ReadLimits::default())
        .map_err(|e| fixture_err(rel, e))?
        .into_iter()
        .map(|l| l.raw.into())
        .collect())
}

/// The ledgers of stellar-core's unit-test streams of at most
/// `max_stream` bytes (metas V3 among them).
fn core_ledgers(max_stream: u64) -> FuzzResult<Vec<Vec<u8>>> {
    let archive = "stellar/testdata/core-unit-test-lcms.tar.zst";
    let tar = zstd::decode_all(&read(archive)?[..]).map_err(|e| fixture_err(archive, e))?;
    let net = Network::from_passphrase(crate::xdr::PASSPHRASES[CORE_TESTS_PICK as usize]);
    let mut out = Vec::new();
    let mut entries = tar::Archive::new(&tar[..]);
    for entry in entries.entries().map_err(|e| fixture_err(archive, e))? {
        let mut entry = entry.map_err(|e| fixture_err(archive, e))?;
        let name = entry
            .path()
            .map_err(|e| fixture_err(archive, e))?
            .display()
            .to_string();
        if !name.ends_with(".xdr") || entry.size() > max_stream {
            continue;
        }
        let mut bytes = Vec::new();
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| fixture_err(&name, e))?;
        let ledgers = decode_file(&bytes, &name, &net, ReadLimits::default())
            .map_err(|e| fixture_err(&name, e))?;
        out.extend(ledgers.into_iter().map(|l| Vec::from(l.raw)));
    }
    Ok(out)
}

/// A ledger's served events, owned.
fn owned_events(raw: &[u8]) -> FuzzResult<Vec<OwnedEvent>> {
    let slices = walk(raw).map_err(|e| fixture_err("ledger", e))?;
    let evs = ledger_events(raw, &slices).map_err(|e| fixture_err("ledger", e))?;
    Ok(evs.to_owned_events(raw))
}

/// Each meta of `ledgers` (its bytes) with the stages of its events.
fn metas_with_stages(ledgers: &[Vec<u8>]) -> FuzzResult<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out = Vec::new();
    for raw in ledgers {
        let slices = walk(raw).map_err(|e| fixture_err("ledger", e))?;
        for (i, a) in slices.applied.iter().enumerate() {
            let meta = a.meta.of(raw);
            let tx = TxContext {
                ledger: crate::events::LEDGER,
                apply_index: i as u32,
                hash: [0; 32],
                successful: true,
            };
            let mut evs = Events::default();
            tx_events(meta, 0, &tx, &mut LedgerCounts::default(), &mut evs)
                .map_err(|e| fixture_err("meta", e))?;
            let stages = evs
                .list
                .iter()
                .map(|e| match e.stage {
                    Stage::BeforeAllTxs => 0u8,
                    Stage::Operation(_) => 1,
                    Stage::AfterTx => 2,
                    Stage::AfterAllTxs => 3,
                })
                .collect();
            out.push((meta.to_vec(), stages));
        }
    }
    Ok(out)
}

/// The smallest meta whose events include stage `stage` (any events for
/// `None`).
fn smallest(metas: &[(Vec<u8>, Vec<u8>)], stage: Option<u8>) -> Option<&[u8]> {
    metas
        .iter()
        .filter(|(_, st)| stage.map_or(!st.is_empty(), |s| st.contains(&s)))
        .map(|(m, _)| m.as_slice())
        .min_by_key(|m| m.len())
}

/// Real metas with events: pubnet V4, the smallest with each stage (fee
/// events before all transactions, operation events, events after the
/// transaction, refunds after all), and a core unit-test V3
/// (`sorobanMeta.events`), alone (mode 0) and in sequence as one
/// ledger's (mode 1); whole small ledgers with events (mode 2).
fn events() -> FuzzResult<Vec<Seed>> {
    // Ledger 63092982, apply index 1, successful, the meta at offset 5
    // behind stage counters (7, 3): see `crate::events::context`.
    const CONTEXT: u8 = 0b0110_0100;
    let mut out = Vec::new();
    let pubnet = metas_with_stages(&ledgers_of(
        PUBNET_2026,
        ledgerstore_stellar::network::PUBNET,
    )?)?;
    let core = core_ledgers(64 << 10)?;
    let core_metas: Vec<_> = metas_with_stages(&core)?
        .into_iter()
        .filter(|(m, _)| m.get(3) == Some(&3))
        .collect();
    let mut chain = vec![1u8];
    let mut picked: Vec<(String, &[u8])> = Vec::new();
    for (stage, name) in [(0, "fee"), (1, "operation"), (2, "after-tx"), (3, "refund")] {
        if let Some(m) = smallest(&pubnet, Some(stage)) {
            picked.push((format!("v4-{name}"), m));
        }
    }
    let v3 =
        smallest(&core_metas, None).ok_or_else(|| fixture_err("core", "no V3 meta with events"))?;
    picked.push(("v3-soroban-meta".into(), v3));
    for (name, meta) in &picked {
        let mut b = vec![0u8, CONTEXT];
        b.extend_from_slice(meta);
        out.push((format!("meta-{name}"), b));
        if meta.len() < 1 << 16 && chain.len() < 32 << 10 {
            chain.extend_from_slice(&(meta.len() as u16).to_be_bytes());
            chain.extend_from_slice(meta);
        }
    }
    out.push(("metas-of-one-ledger".into(), chain));
    // The smallest core ledger with events (V3), and the smallest ledger
    // with events of the v23 load test (V4).
    let mut with_events = Vec::new();
    for raw in core {
        if !owned_events(&raw)?.is_empty() {
            with_events.push(("ledger-core-v3", raw));
        }
    }
    let standalone = "stellar/testdata/load-test-ledgers-v23-standalone.xdr.zstd";
    for raw in ledgers_of(standalone, ledgerstore_stellar::network::STANDALONE)? {
        if !owned_events(&raw)?.is_empty() {
            with_events.push(("ledger-standalone-v4", raw));
        }
    }
    // Pubnet's ledgers with events are large (800 KB and more): the
    // smallest, cut down to a few transactions with events.
    let pubnet_ledgers = ledgers_of(PUBNET_2026, ledgerstore_stellar::network::PUBNET)?;
    if let Some(raw) = pubnet_ledgers.iter().min_by_key(|r| r.len()) {
        with_events.push(("ledger-pubnet-v4-cut", cut_ledger(raw)?));
    }
    with_events.sort_by_key(|(name, raw)| (*name, raw.len()));
    with_events.dedup_by_key(|(name, _)| *name);
    for (name, raw) in with_events {
        if raw.len() <= 256 << 10 {
            let mut b = vec![2u8];
            b.extend_from_slice(&raw);
            out.push((name.into(), b));
        }
    }
    Ok(out)
}

/// A `LedgerCloseMeta` V2 cut down to an empty transaction set and,
/// of its `txProcessing`, the first entry and the smallest few whose
/// metas hold events (in their order): a small V4 ledger with fee,
/// operation and refund events.
fn cut_ledger(raw: &[u8]) -> FuzzResult<Vec<u8>> {
    use stellar_xdr::{GeneralizedTransactionSet, LedgerCloseMeta, ReadXdr, VecM, WriteXdr};
    let err = |e: stellar_xdr::Error| fixture_err("pubnet ledger", e);
    let LedgerCloseMeta::V2(mut m) =
        LedgerCloseMeta::from_xdr(raw, stellar_xdr::Limits::none()).map_err(err)?
    else {
        return Err(fixture_err("pubnet ledger", "not a LedgerCloseMeta V2"));
    };
    let slices = walk(raw).map_err(|e| fixture_err("pubnet ledger", e))?;
    let metas = metas_with_stages(&[raw.to_vec()])?;
    let mut keep: Vec<usize> = (0..metas.len())
        .filter(|&i| !metas[i].1.is_empty())
        .collect();
    keep.sort_by_key(|&i| (i != 0, slices.applied[i].meta.len));
    keep.truncate(4);
    keep.sort_unstable();
    let processing: Vec<_> = keep.iter().map(|&i| m.tx_processing[i].clone()).collect();
    m.tx_processing = processing.try_into().map_err(err)?;
    let GeneralizedTransactionSet::V1(set) = &mut m.tx_set;
    set.phases = VecM::default();
    m.scp_info = VecM::default();
    m.evicted_keys = VecM::default();
    m.upgrades_processing = VecM::default();
    LedgerCloseMeta::V2(m)
        .to_xdr(stellar_xdr::Limits::none())
        .map_err(err)
}

/// An index file of `evs` over `first..=last`.
fn index_file(dir: &Path, first: u32, last: u32, evs: &[&OwnedEvent]) -> FuzzResult<Vec<u8>> {
    let err = |e: ledgerstore_event_index::EventIndexError| fixture_err("event index", e);
    let mut b = EventIndexBuilder::new(first, last).map_err(err)?;
    for e in evs {
        let topics: Vec<&[u8]> = e.topics.iter().map(Vec::as_slice).collect();
        b.push(e.id, e.kind, e.contract_id.as_ref(), &topics)
            .map_err(err)?;
    }
    let path = dir.join(format!("{first}-{last}-{}.idx", evs.len()));
    b.finish(&path).map_err(err)?;
    std::fs::read(&path).map_err(FuzzError::io(path))
}

/// Index files of real pubnet events (a ledger's first events; a whole
/// ledger, past one 128-ordinal block per busy list; every 16th event of
/// the 20 ledgers; one contract's; none), and byte strings the
/// structured mode draws events and queries from.
fn event_index() -> FuzzResult<Vec<Seed>> {
    let dir = tempfile::tempdir().map_err(FuzzError::io(std::env::temp_dir()))?;
    let mut ledgers = Vec::new();
    for raw in ledgers_of(PUBNET_2026, ledgerstore_stellar::network::PUBNET)? {
        ledgers.push(owned_events(&raw)?);
    }
    let all: Vec<&OwnedEvent> = ledgers.iter().flatten().collect();
    let (first, last) = match (all.first(), all.last()) {
        (Some(a), Some(b)) => (a.id.ledger, b.id.ledger),
        _ => return Err(fixture_err(PUBNET_2026, "no events")),
    };
    let l0: Vec<&OwnedEvent> = ledgers[0].iter().collect();
    let busiest = {
        let mut counts = std::collections::HashMap::new();
        for e in &all {
            if let Some(c) = e.contract_id {
                *counts.entry(c).or_insert(0usize) += 1;
            }
        }
        counts
            .into_iter()
            .max_by_key(|&(c, n)| (n, c))
            .map(|(c, _)| c)
    };
    let files = [
        (
            "ledger-first-40",
            first,
            first,
            l0[..40.min(l0.len())].to_vec(),
        ),
        ("ledger-whole", first, first + 1, l0.clone()),
        (
            "every-16th",
            first,
            last,
            all.iter().step_by(16).copied().collect(),
        ),
        (
            "one-contract",
            first + 2,
            first + 4,
            all.iter()
                .filter(|e| (first + 2..=first + 4).contains(&e.id.ledger))
                .filter(|e| e.contract_id == busiest)
                .take(300)
                .copied()
                .collect(),
        ),
        ("empty", first, first + 2, Vec::new()),
    ];
    let mut out = Vec::new();
    for (name, a, b, evs) in files {
        let mut bytes = vec![0u8];
        bytes.extend(index_file(dir.path(), a, b, &evs)?);
        out.push((format!("file-{name}"), bytes));
    }
    // Structured: a query-bytes count, query bytes, event bytes.
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut noise = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    for (i, (q, e)) in [
        (24usize, 64usize),
        (48, 200),
        (8, 600),
        (96, 40),
        (160, 120),
        (200, 300),
        (255, 80),
        (128, 500),
    ]
    .into_iter()
    .enumerate()
    {
        let mut b = vec![1u8, q as u8];
        b.extend(noise(q + e));
        out.push((format!("structured-noise-{i}"), b));
    }
    // Runs of one event (repeat byte 0xE0..) over three ledgers.
    let mut b = vec![1u8, 12];
    b.extend(noise(12));
    // Ledgers 101..=103 from 101; then (step, type) bytes, each event
    // with the first contract, one topic and a run of 200.
    b.extend_from_slice(&[2, 1, 2, 0]);
    for s in [0x08u8, 0x07, 0x0c, 0x04, 0x07] {
        b.extend_from_slice(&[s, 0xE5, 0, 200]);
    }
    out.push(("structured-runs".into(), b));
    Ok(out)
}
