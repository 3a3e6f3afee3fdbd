//! `ledgerstore push`: the reference ingestion client. It asks the daemon
//! where to resume (GetIngestState), streams ledgers, and prints every
//! ack. Only ledgers at or below an ack's mark are safe. Synthetic ledgers
//! go as split ledgers; Stellar ledgers go as raw `LedgerCloseMeta` XDR
//! (`stellar_ledgers`), which the daemon decodes and extracts itself.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use futures::StreamExt;
use ledgerstore_proto::v1 as pb;
use ledgerstore_server::convert::ledger_pb;
use ledgerstore_stellar::{Network, Opened};
use ledgerstore_synth::Synth;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataValue;

use crate::cli::{Mode, PushArgs};
use crate::cmd::ingest::{check_synth, synth_from};
use crate::cmd::remote;
use crate::cmd::source::{open_stellar, resume_from, stellar_spec};

type Requests = mpsc::Sender<pb::IngestRequest>;

pub async fn run(a: PushArgs) -> Result<()> {
    ensure!(
        a.request_ledgers >= 1,
        "--request-ledgers must be at least 1"
    );
    let cfg = crate::config::for_lake(&a.stellar.lake, None)?;
    let spec = stellar_spec(&a.source, &cfg)?.map(|s| s.spec);
    if spec.is_none() {
        check_synth(&a.synth)?;
    }
    let channel = remote::channel(&a.remote).await?;
    let auth = match &a.token {
        Some(t) => Some(
            MetadataValue::try_from(format!("Bearer {t}"))
                .context("--token must be printable ASCII")?,
        ),
        None => None,
    };
    let mut client = pb::ingest_client::IngestClient::with_interceptor(
        channel,
        move |mut req: tonic::Request<()>| {
            if let Some(v) = &auth {
                req.metadata_mut().insert("authorization", v.clone());
            }
            Ok(req)
        },
    )
    .max_decoding_message_size(64 << 20)
    .max_encoding_message_size(256 << 20);

    let state = client
        .get_ingest_state(pb::GetIngestStateRequest {})
        .await
        .map_err(|s| anyhow::anyhow!("GetIngestState: {}: {}", s.code(), s.message()))?
        .into_inner();
    let mark = state.has_durable_ledger.then_some(state.durable_ledger);
    let mode = match a.mode {
        Mode::Bulk => pb::IngestMode::Bulk,
        Mode::Live => pb::IngestMode::Live,
    };
    let pace = Pace {
        mode,
        per_request: a.request_ledgers as usize,
        interval: Duration::from_millis(a.interval_ms),
    };
    let (tx, rx) = mpsc::channel::<pb::IngestRequest>(2);
    let sender = match spec {
        None => {
            let start = if state.accepts_any_start {
                a.synth.start_ledger
            } else {
                state.next_expected
            };
            let ledgers = check_synth(&a.synth)?;
            if ledgers == 0 {
                println!("nothing to do: --ledgers 0 (next expected {start})");
                return Ok(());
            }
            let end = start
                .checked_add(ledgers - 1)
                .context("--ledgers runs past the last possible ledger seq")?;
            println!(
                "pushing ledgers {start}..={end} to {} ({:?} mode)",
                a.remote.endpoint, a.mode
            );
            tokio::spawn(send_synthetic(synth_from(&a.synth), start, end, pace, tx))
        }
        Some(spec) => {
            let from = resume_from(&a.stellar, mark)?;
            if let (Some(f), Some(t)) = (from, a.stellar.to)
                && f > t
            {
                println!("nothing to do: the daemon holds ledgers through {}", f - 1);
                return Ok(());
            }
            let (network, opened) = open_stellar(&spec, &a.stellar, &cfg, from).await?;
            println!(
                "pushing {} (network {network}) to {} as raw LedgerCloseMeta ({:?} mode)",
                opened.description, a.remote.endpoint, a.mode
            );
            tokio::spawn(send_stellar(opened, network, pace, tx))
        }
    };
    let started = Instant::now();
    let acked = read_acks(&mut client, rx).await;
    let sent = sender.await?;
    let (first, last) = match (&acked, &sent) {
        (Err(e), _) => return Err(anyhow::anyhow!("{e}")),
        (Ok(_), Err(e)) => bail!(
            "the source stopped: {e:#} (durable through {:?}; fix the source and rerun to resume)",
            acked.as_ref().ok().copied().flatten()
        ),
        (Ok(_), Ok(None)) => {
            println!("nothing to send");
            return Ok(());
        }
        (Ok(_), Ok(Some(range))) => *range,
    };
    let mark = acked.ok().flatten();
    ensure!(
        mark >= Some(last),
        "the stream ended at ledger {mark:?} before {last} was acknowledged; rerun to resume"
    );
    println!(
        "done: ledgers {first}..={last} durable ({:.1} ledgers/s)",
        f64::from(last - first + 1) / started.elapsed().as_secs_f64().max(1e-9)
    );
    Ok(())
}

/// How requests are cut and paced.
#[derive(Clone, Copy)]
struct Pace {
    mode: pb::IngestMode,
    per_request: usize,
    interval: Duration,
}

/// Opens the stream and prints acks; the last durable mark, or why the
/// daemon ended the stream.
async fn read_acks<T>(
    client: &mut pb::ingest_client::IngestClient<T>,
    rx: mpsc::Receiver<pb::IngestRequest>,
) -> Result<Option<u32>>
where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::Error: Into<tonic::codegen::StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = tonic::codegen::Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    let mut acks = client
        .ingest_ledgers(ReceiverStream::new(rx))
        .await
        .map_err(|s| anyhow::anyhow!("IngestLedgers: {}: {}", s.code(), s.message()))?
        .into_inner();
    let mut mark = None;
    loop {
        match acks.message().await {
            Ok(Some(ack)) => {
                if ack.has_durable_ledger {
                    mark = Some(ack.durable_ledger);
                    println!(
                        "acked through ledger {} (committed {}, re-sent and skipped {})",
                        ack.durable_ledger, ack.committed_ledgers, ack.skipped_ledgers
                    );
                }
            }
            Ok(None) => return Ok(mark),
            Err(s) => bail!(
                "the daemon ended the stream: {}: {} (durable through {:?}; rerun to resume)",
                s.code(),
                s.message(),
                mark
            ),
        }
    }
}

async fn send_synthetic(
    synth: Synth,
    start: u32,
    end: u32,
    pace: Pace,
    tx: Requests,
) -> Result<Option<(u32, u32)>> {
    let mut from = start;
    while from <= end {
        let count = (pace.per_request as u32).min(end - from + 1);
        let s = synth.clone();
        let ledgers = tokio::task::spawn_blocking(move || s.batch(from, count)).await?;
        let req = pb::IngestRequest {
            mode: pace.mode as i32,
            ledgers: ledgers.into_iter().map(ledger_pb).collect(),
            ..Default::default()
        };
        if tx.send(req).await.is_err() {
            break; // the server ended the stream; the acks say why
        }
        from += count;
        if !pace.interval.is_zero() && from <= end {
            tokio::time::sleep(pace.interval).await;
        }
    }
    Ok(Some((start, end)))
}

/// Sends each ledger's `LedgerCloseMeta` bytes as read from the source
/// (decoded locally too, so a bad file fails here, naming the file).
async fn send_stellar(
    mut opened: Opened,
    network: Network,
    pace: Pace,
    tx: Requests,
) -> Result<Option<(u32, u32)>> {
    let mut range: Option<(u32, u32)> = None;
    let mut pending: Vec<pb::StellarLedger> = Vec::new();
    let passphrase = network.passphrase().to_string();
    let request = |stellar_ledgers| pb::IngestRequest {
        mode: pace.mode as i32,
        stellar_ledgers,
        stellar_network: passphrase.clone(),
        ..Default::default()
    };
    while let Some(chunk) = opened.chunks.next().await {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                // Send what is valid before the failure, then report it.
                if !pending.is_empty() {
                    let _ = tx.send(request(std::mem::take(&mut pending))).await;
                }
                return Err(e.into());
            }
        };
        for l in chunk.ledgers {
            range = Some((range.map_or(l.seq, |r| r.0), l.seq));
            pending.push(pb::StellarLedger {
                // A copy of its bytes: `raw` is a slice of its file's
                // buffer, which a whole-buffer `Vec::from` would carry
                // along as spare capacity.
                ledger_close_meta: l.raw.to_vec(),
            });
            if pending.len() >= pace.per_request {
                if tx
                    .send(request(std::mem::take(&mut pending)))
                    .await
                    .is_err()
                {
                    return Ok(range);
                }
                if !pace.interval.is_zero() {
                    tokio::time::sleep(pace.interval).await;
                }
            }
        }
    }
    if !pending.is_empty() {
        let _ = tx.send(request(pending)).await;
    }
    Ok(range)
}
