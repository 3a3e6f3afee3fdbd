//! Data-lake and stream sources end to end: SEP-54 layout, range
//! selection, read-ahead order, the manifest's network, and gaps.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use ledgerstore_stellar::file::maybe_decompress;
use ledgerstore_stellar::{
    DataLake, Network, ReadLimits, SourceOptions, SourceSpec, StellarError, StellarResult, open,
};
use stellar_xdr::{LedgerCloseMeta, LedgerCloseMetaBatch, Limits, ReadXdr, WriteXdr};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

/// The real ledger 999, re-sequenced as `seq` (its tx hashes do not cover
/// the ledger seq, so they stay valid).
fn ledger_as(seq: u32) -> LedgerCloseMeta {
    let file = std::fs::read(data("FFFFFC18--999.xdr.zstd")).expect("fixture");
    let plain = maybe_decompress(&file, "f", 1 << 30).expect("zstd");
    let batch = LedgerCloseMetaBatch::from_xdr(&plain, Limits::none()).expect("batch");
    let mut lcm = batch.ledger_close_metas[0].clone();
    match &mut lcm {
        LedgerCloseMeta::V0(m) => m.ledger_header.header.ledger_seq = seq,
        LedgerCloseMeta::V1(m) => m.ledger_header.header.ledger_seq = seq,
        LedgerCloseMeta::V2(m) => m.ledger_header.header.ledger_seq = seq,
    }
    lcm
}

/// Writes a SEP-54 batch file for `seqs` (named after `start..=end`).
fn write_batch(root: &Path, start: u32, end: u32, seqs: &[u32]) {
    let batch = LedgerCloseMetaBatch {
        start_sequence: start,
        end_sequence: end,
        ledger_close_metas: seqs
            .iter()
            .map(|s| ledger_as(*s))
            .collect::<Vec<_>>()
            .try_into()
            .expect("vecm"),
    };
    let xdr = batch.to_xdr(Limits::none()).expect("xdr");
    let part = root.join("FFFFFFFF--0-63999");
    std::fs::create_dir_all(&part).expect("mkdir");
    let name = if start == end {
        format!("{:08X}--{start}.xdr.zst", u32::MAX - start)
    } else {
        format!("{:08X}--{start}-{end}.xdr.zst", u32::MAX - start)
    };
    let z = zstd::encode_all(&xdr[..], 3).expect("zstd");
    std::fs::write(part.join(name), z).expect("write");
}

fn opts(from: Option<u32>, to: Option<u32>) -> SourceOptions {
    SourceOptions {
        network: Network::parse("testnet").expect("net"),
        from,
        to,
        read_ahead: 3,
        limits: ReadLimits::default(),
    }
}

async fn read_all(spec: &SourceSpec, o: SourceOptions) -> StellarResult<Vec<u32>> {
    let mut opened = open(spec, o).await?;
    let mut seqs = Vec::new();
    while let Some(chunk) = opened.chunks.next().await {
        seqs.extend(chunk?.ledgers.iter().map(|l| l.seq));
    }
    Ok(seqs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lake_reads_in_order_within_the_range() {
    let dir = tempfile::tempdir().expect("tmp");
    for s in 1000..1010 {
        write_batch(dir.path(), s, s, &[s]);
    }
    write_batch(dir.path(), 1010, 1012, &[1010, 1011, 1012]);
    std::fs::write(
        dir.path().join(".config.json"),
        r#"{"networkPassphrase":"Test SDF Network ; September 2015"}"#,
    )
    .expect("manifest");
    let spec = SourceSpec::DataLake(Arc::new(DataLake::local(dir.path()).expect("lake")));
    assert_eq!(
        read_all(&spec, opts(None, None)).await.expect("all"),
        (1000..=1012).collect::<Vec<_>>()
    );
    assert_eq!(
        read_all(&spec, opts(Some(1004), Some(1011)))
            .await
            .expect("range"),
        (1004..=1011).collect::<Vec<_>>()
    );
    let err = read_all(&spec, opts(Some(990), None))
        .await
        .expect_err("before");
    assert!(
        err.to_string().contains("holds ledgers 1000..=1012"),
        "{err}"
    );
    // The manifest names the network; another one is refused up front.
    let mut o = opts(None, None);
    o.network = Network::parse("pubnet").expect("net");
    let err = read_all(&spec, o).await.expect_err("network");
    assert!(matches!(err, StellarError::Lake { .. }), "{err}");
    assert!(err.to_string().contains("networkPassphrase"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_between_files_is_refused_naming_both() {
    let dir = tempfile::tempdir().expect("tmp");
    for s in [1000, 1001, 1003] {
        write_batch(dir.path(), s, s, &[s]);
    }
    let spec = SourceSpec::DataLake(Arc::new(DataLake::local(dir.path()).expect("lake")));
    let err = read_all(&spec, opts(None, None)).await.expect_err("gap");
    let msg = err.to_string();
    assert!(matches!(err, StellarError::Gap { .. }), "{msg}");
    assert!(
        msg.contains("FFFFFC14--1003") && msg.contains("FFFFFC16--1001"),
        "{msg}"
    );
    assert!(msg.contains("start at ledger 1002"), "{msg}");
    // Up to the gap is fine.
    assert_eq!(
        read_all(&spec, opts(None, Some(1001))).await.expect("ok"),
        vec![1000, 1001]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_whose_content_disagrees_with_its_name_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    write_batch(dir.path(), 1000, 1000, &[1000]);
    write_batch(dir.path(), 1001, 1001, &[1005]);
    let spec = SourceSpec::DataLake(Arc::new(DataLake::local(dir.path()).expect("lake")));
    let err = read_all(&spec, opts(None, None))
        .await
        .expect_err("content");
    assert!(
        err.to_string().contains("is ledger 1005, expected 1001"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_with_a_gap_stops_at_the_gap() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut bytes = Vec::new();
    for s in [7, 8, 10] {
        let xdr = ledger_as(s).to_xdr(Limits::none()).expect("xdr");
        bytes.extend_from_slice(&(0x8000_0000u32 | xdr.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&xdr);
    }
    let path = dir.path().join("gap.xdr");
    std::fs::write(&path, &bytes).expect("write");
    let spec = SourceSpec::File(path);
    let mut opened = open(&spec, opts(None, None)).await.expect("open");
    let mut seen = Vec::new();
    let mut last_err = None;
    while let Some(c) = opened.chunks.next().await {
        match c {
            Ok(c) => seen.extend(c.ledgers.iter().map(|l| l.seq)),
            Err(e) => last_err = Some(e),
        }
    }
    assert_eq!(seen, vec![7, 8]);
    let err = last_err.expect("gap error");
    assert!(
        err.to_string()
            .contains("holds ledger 10, but the ledger before it was 8"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_files_through_the_file_source() {
    let spec = SourceSpec::File(data("load-test-ledgers-v23-standalone.xdr.zstd"));
    let mut o = opts(None, None);
    o.network = Network::parse("standalone").expect("net");
    // Real load-test output jumps from the second ledger to the fifth after
    // it: the source stops there, naming both frames.
    let err = read_all(&spec, o.clone()).await.expect_err("gap");
    assert!(err.to_string().contains("frame 2"), "{err}");
    o.to = Some(86);
    assert_eq!(read_all(&spec, o).await.expect("stream").len(), 2);
    let spec = SourceSpec::File(data("FCD285FF--53312000.xdr.zstd"));
    let mut o = opts(None, None);
    o.network = Network::parse("pubnet").expect("net");
    assert_eq!(read_all(&spec, o).await.expect("batch"), vec![53_312_000]);
}
