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
use ledgerstore_pack::{DictRef, Manifest, Object, PackRef, PackWriter, SegmentRef};
use ledgerstore_segment::{SegmentBuilder, hashes};
use ledgerstore_stellar::{Network, ledger_from_xdr};

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

/// Packs the publisher's writer makes (format version 2: one ledger, a
/// range past one ledger table page with bodies past one body page, and a
/// ledger with no bodies), the committed version-1 pack, and manifests.
fn pack() -> FuzzResult<Vec<Seed>> {
    let dir = tempfile::tempdir().map_err(FuzzError::io(std::env::temp_dir()))?;
    let mut out = Vec::new();
    for (first, last) in [(7u32, 7u32), (1, 140), (50, 52)] {
        let path = dir.path().join(format!("{first}-{last}.pack"));
        let mut w = PackWriter::create(&path, first, last)?;
        for seq in first..=last {
            let record = vec![seq as u8; 8 + (seq % 13) as usize];
            let bodies: Vec<Vec<u8>> = (0..seq % 3)
                .map(|i| vec![(seq + i) as u8; 4 + i as usize])
                .collect();
            w.push_ledger(seq, &record, &bodies)?;
        }
        w.finish()?;
        let mut bytes = vec![0u8];
        bytes.extend(std::fs::read(&path).map_err(FuzzError::io(&path))?);
        out.push((format!("pack-{first}-{last}"), bytes));
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
