//! Sources of Stellar ledgers, read and decoded ahead of the writer.
//!
//! Each source is cut into units (a data-lake file, or a frame of a
//! stream). Units are fetched in order and decoded on tokio's blocking
//! pool, up to `read_ahead` at a time (`futures::StreamExt::buffered`), and
//! come out in order. Memory is bounded by `read_ahead` units plus what
//! the consumer holds. Every unit must continue the ledger before it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{self, BoxStream, StreamExt};
use ledgerstore_db_api::{Bytes, LedgerInput};

use crate::error::{StellarError, StellarResult};
use crate::extract::ledger_from_xdr;
use crate::file::{FrameReader, ReadLimits, Shape, decode_file, open_file};
use crate::lake::{DataLake, LakeFile};
use crate::network::Network;

/// Where ledgers come from.
#[derive(Debug, Clone)]
pub enum SourceSpec {
    /// A SEP-54 data lake (local, S3, GCS or HTTP).
    DataLake(Arc<DataLake>),
    /// One file: a batch file or a record-marked stream, zstd or not.
    File(PathBuf),
}

/// How a source is read.
#[derive(Debug, Clone)]
pub struct SourceOptions {
    /// The network whose passphrase the tx hashes use.
    pub network: Network,
    /// First ledger wanted (unset: the source's first).
    pub from: Option<u32>,
    /// Last ledger wanted, inclusive (unset: the source's last).
    pub to: Option<u32>,
    /// Units fetched and decoded ahead of the consumer.
    pub read_ahead: usize,
    /// Size limits for untrusted input.
    pub limits: ReadLimits,
}

/// A decoded unit: one data-lake file or one stream frame.
#[derive(Debug)]
pub struct Chunk {
    /// The file (and frame) it came from.
    pub unit: String,
    /// Its ledgers within the wanted range, in order.
    pub ledgers: Vec<LedgerInput>,
    /// Bytes read from the source (compressed, for files).
    pub read_bytes: u64,
    /// Time spent fetching it (wall time: the network, or the disk).
    pub fetch: Duration,
    /// Time spent decompressing, decoding and checking it (on a blocking
    /// worker, so about its CPU time).
    pub decode: Duration,
}

/// An opened source: what it covers, and its chunks.
pub struct Opened {
    /// A line saying what will be read.
    pub description: String,
    /// The ledgers that will be read, when known before reading (lakes).
    pub range: Option<(u32, u32)>,
    /// The chunks, in ledger order.
    pub chunks: BoxStream<'static, StellarResult<Chunk>>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.description)
    }
}

/// Opens a source. Must run inside a tokio runtime.
pub async fn open(spec: &SourceSpec, opts: SourceOptions) -> StellarResult<Opened> {
    let ahead = opts.read_ahead.max(1);
    let (description, range, chunks) = match spec {
        SourceSpec::DataLake(lake) => open_lake(lake, &opts, ahead).await?,
        SourceSpec::File(path) => {
            let (d, c) = open_one_file(path, &opts, ahead).await?;
            (d, None, c)
        }
    };
    Ok(Opened {
        description,
        range,
        chunks: contiguous(chunks).boxed(),
    })
}

async fn open_lake(
    lake: &Arc<DataLake>,
    opts: &SourceOptions,
    ahead: usize,
) -> StellarResult<(
    String,
    Option<(u32, u32)>,
    BoxStream<'static, StellarResult<Chunk>>,
)> {
    lake.check_network(&opts.network).await?;
    let plan = lake.plan(opts.from, opts.to).await?;
    let bytes = plan
        .bytes
        .map(|b| format!(", {:.1} MB compressed", b as f64 / 1e6))
        .unwrap_or_default();
    let description = if plan.files == 0 {
        format!(
            "data lake {}: nothing new (it holds nothing from ledger {} on)",
            lake.root(),
            plan.first
        )
    } else {
        format!(
            "data lake {}: {} files, ledgers {}..={}{bytes}",
            lake.root(),
            plan.files,
            plan.first,
            plan.last,
        )
    };
    let (from, to) = (Some(plan.first), Some(plan.last));
    let chunks = lake_chunks(lake, plan.iter, opts, from, to)
        .buffered(ahead)
        .boxed();
    let range = (plan.files > 0).then_some((plan.first, plan.last));
    Ok((description, range, chunks))
}

/// Each file fetched and decoded (not yet polled: the caller buffers).
pub(crate) fn lake_chunks(
    lake: &Arc<DataLake>,
    files: impl Iterator<Item = LakeFile> + Send + 'static,
    opts: &SourceOptions,
    from: Option<u32>,
    to: Option<u32>,
) -> impl futures::Stream<Item = impl Future<Output = StellarResult<Chunk>> + Send + 'static>
+ Send
+ 'static {
    let (lake, network, lim) = (Arc::clone(lake), opts.network.clone(), opts.limits);
    stream::iter(files).map(move |f| {
        let (lake, network) = (Arc::clone(&lake), network.clone());
        async move {
            let t = Instant::now();
            let data = lake.read(&f).await?;
            decode_chunk(&lake, &f, data, t.elapsed(), &network, lim, from, to).await
        }
    })
}

/// Decodes one fetched lake file on the blocking pool.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn decode_chunk(
    lake: &DataLake,
    f: &LakeFile,
    data: bytes::Bytes,
    fetch: Duration,
    network: &Network,
    lim: ReadLimits,
    from: Option<u32>,
    to: Option<u32>,
) -> StellarResult<Chunk> {
    let t = Instant::now();
    let at = format!("{}/{}", lake.root(), f.path);
    let read_bytes = data.len() as u64;
    let unit = at.clone();
    let network = network.clone();
    let ledgers = blocking(move || decode_file(&data, &at, &network, lim)).await?;
    Ok(Chunk {
        unit,
        ledgers: in_range(ledgers, from, to),
        read_bytes,
        fetch,
        decode: t.elapsed(),
    })
}

async fn open_one_file(
    path: &Path,
    opts: &SourceOptions,
    ahead: usize,
) -> StellarResult<(String, BoxStream<'static, StellarResult<Chunk>>)> {
    let at = path.display().to_string();
    let p = path.to_path_buf();
    let opened = blocking(move || open_file(&p)).await?;
    let (network, lim, from, to) = (opts.network.clone(), opts.limits, opts.from, opts.to);
    let kind = if opened.compressed { "zstd " } else { "" };
    match opened.shape {
        Shape::Batch => {
            let description = format!("{at}: {kind}LedgerCloseMetaBatch file");
            let reader = opened.reader;
            let chunk = async move {
                let t = Instant::now();
                let unit = at.clone();
                let (ledgers, n) = blocking(move || {
                    let plain =
                        Bytes::from(crate::file::read_capped(reader, &at, lim.max_file_bytes)?);
                    let n = plain.len() as u64;
                    Ok((crate::file::decode_batch(&plain, &at, &network)?, n))
                })
                .await?;
                Ok(Chunk {
                    unit,
                    ledgers: in_range(ledgers, from, to),
                    read_bytes: n,
                    fetch: Duration::ZERO,
                    decode: t.elapsed(),
                })
            };
            Ok((description, stream::once(chunk).boxed()))
        }
        Shape::Stream => {
            let description = format!("{at}: {kind}record-marked LedgerCloseMeta stream");
            let frames = FrameReader::new(opened.reader, &at, lim.max_frame_bytes);
            let raw = stream::unfold(Some(frames), |state| async move {
                let mut frames = state?;
                match tokio::task::spawn_blocking(move || (frames.next(), frames)).await {
                    Ok((Some(item), frames)) => Some((item, Some(frames))),
                    Ok((None, _)) => None,
                    Err(e) => Some((Err(StellarError::Task(e.to_string())), None)),
                }
            });
            let chunks = raw
                .map(move |frame| {
                    let network = network.clone();
                    async move {
                        let t = Instant::now();
                        let (label, bytes) = frame?;
                        let read_bytes = bytes.len() as u64 + 4;
                        let unit = label.clone();
                        let ledger =
                            blocking(move || ledger_from_xdr(bytes, &network, &label)).await?;
                        Ok(Chunk {
                            unit,
                            ledgers: in_range(vec![ledger], from, to),
                            read_bytes,
                            fetch: Duration::ZERO,
                            decode: t.elapsed(),
                        })
                    }
                })
                .buffered(ahead)
                .boxed();
            Ok((description, chunks))
        }
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> StellarResult<T> + Send + 'static,
) -> StellarResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StellarError::Task(e.to_string()))?
}

fn in_range(mut ledgers: Vec<LedgerInput>, from: Option<u32>, to: Option<u32>) -> Vec<LedgerInput> {
    ledgers.retain(|l| from.is_none_or(|f| l.seq >= f) && to.is_none_or(|t| l.seq <= t));
    ledgers
}

/// Passes chunks through, ending with a [`StellarError::Gap`] at the first
/// ledger that does not follow the one before it. Chunks left empty by the
/// range are dropped. The stream ends after its first error.
fn contiguous(
    chunks: BoxStream<'static, StellarResult<Chunk>>,
) -> impl futures::Stream<Item = StellarResult<Chunk>> {
    let state: (Option<(u32, String)>, bool) = (None, false);
    chunks
        .scan(state, |(prev, failed), item| {
            if *failed {
                return futures::future::ready(None);
            }
            let out = item.and_then(|c| {
                check_chunk(prev.as_ref(), &c)?;
                if let Some(last) = c.ledgers.last() {
                    *prev = Some((last.seq, c.unit.clone()));
                }
                Ok(c)
            });
            *failed = out.is_err();
            futures::future::ready(Some(out))
        })
        .filter(|c| futures::future::ready(!matches!(c, Ok(c) if c.ledgers.is_empty())))
}

fn check_chunk(prev: Option<&(u32, String)>, c: &Chunk) -> StellarResult<()> {
    let mut before = prev.map(|(s, u)| (*s, u.as_str()));
    for l in &c.ledgers {
        if let Some((p, unit)) = before
            && u64::from(l.seq) != u64::from(p) + 1
        {
            return Err(StellarError::Gap {
                detail: format!(
                    "{} holds ledger {}, but the ledger before it was {p} ({unit}); expected {}",
                    c.unit,
                    l.seq,
                    u64::from(p) + 1
                ),
            });
        }
        before = Some((l.seq, c.unit.as_str()));
    }
    Ok(())
}
