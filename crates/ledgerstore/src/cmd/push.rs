//! `ledgerstore push --synthetic`: the reference ingestion client. It asks
//! the daemon where to resume (GetIngestState), streams ledgers, and prints
//! every ack. Only ledgers at or below an ack's mark are safe.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use ledgerstore_proto::v1 as pb;
use ledgerstore_server::convert::ledger_pb;
use ledgerstore_synth::Synth;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataValue;

use crate::cli::{Mode, PushArgs};
use crate::cmd::{ingest::synth_from, remote};

pub async fn run(a: PushArgs) -> Result<()> {
    ensure!(
        a.synthetic,
        "only --synthetic push is available in this build"
    );
    ensure!(
        a.request_ledgers >= 1,
        "--request-ledgers must be at least 1"
    );
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
    let start = if state.accepts_any_start {
        a.synth.start_ledger
    } else {
        state.next_expected
    };
    if a.synth.ledgers == 0 {
        println!("nothing to do: --ledgers 0 (next expected {start})");
        return Ok(());
    }
    let end = start
        .checked_add(a.synth.ledgers - 1)
        .context("--ledgers runs past the last possible ledger seq")?;
    println!(
        "pushing ledgers {start}..={end} to {} ({:?} mode)",
        a.remote.endpoint, a.mode
    );

    let synth: Synth = synth_from(&a.synth);
    let mode = match a.mode {
        Mode::Bulk => pb::IngestMode::Bulk,
        Mode::Live => pb::IngestMode::Live,
    };
    let (tx, rx) = mpsc::channel::<pb::IngestRequest>(2);
    let per_request = a.request_ledgers;
    let interval = Duration::from_millis(a.interval_ms);
    let sender = tokio::spawn(async move {
        let mut from = start;
        while from <= end {
            let count = per_request.min(end - from + 1);
            let s = synth.clone();
            let ledgers = tokio::task::spawn_blocking(move || s.batch(from, count)).await?;
            let req = pb::IngestRequest {
                mode: mode as i32,
                ledgers: ledgers.into_iter().map(ledger_pb).collect(),
            };
            if tx.send(req).await.is_err() {
                break; // the server ended the stream; the acks say why
            }
            from += count;
            if !interval.is_zero() && from <= end {
                tokio::time::sleep(interval).await;
            }
        }
        anyhow::Ok(())
    });

    let started = Instant::now();
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
            Ok(None) => break,
            Err(s) => bail!(
                "the daemon ended the stream: {}: {} (durable through {:?}; rerun to resume)",
                s.code(),
                s.message(),
                mark
            ),
        }
    }
    sender.await??;
    let secs = started.elapsed().as_secs_f64();
    ensure!(
        mark >= Some(end),
        "the stream ended at ledger {mark:?} before {end} was acknowledged; rerun to resume"
    );
    println!(
        "done: ledgers {start}..={end} durable ({:.1} ledgers/s)",
        f64::from(end - start + 1) / secs.max(1e-9)
    );
    Ok(())
}
