//! Following a data lake: read what it holds from a ledger on, then poll
//! for the files it gains.
//!
//! Each round asks the lake for its newest ledger ([`DataLake::newest`]:
//! one listing request on S3 and GCS, one HEAD when nothing is new
//! elsewhere). If it is past the next ledger wanted, the files up to it
//! are read with the usual ordered read-ahead; otherwise the follower
//! sleeps `poll` and asks again. A failed request (after object_store's
//! own retries) or a file that does not decode is reported and the round
//! is tried again after `poll`: following never gives up on its own. The
//! consumer decides what a long failure means (the daemon's health).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::mpsc;

use crate::error::{StellarError, StellarResult};
use crate::lake::DataLake;
use crate::source::{Chunk, SourceOptions, lake_chunks};

/// What a followed lake yields.
#[derive(Debug)]
pub enum FollowEvent {
    /// The lake's newest ledger, each time it is asked.
    Newest(u32),
    /// A file's ledgers, in order, each following the one before.
    /// `at_tip`: it reaches the newest ledger the lake was known to hold.
    Chunk {
        /// The ledgers.
        chunk: Chunk,
        /// No newer file was known when it was read.
        at_tip: bool,
    },
    /// The lake answered and holds nothing from the next ledger wanted on.
    UpToDate,
    /// A round failed; the next starts after the poll interval.
    Error(StellarError),
}

/// Follows `lake` from `opts.from` (required) on. The stream never ends by
/// itself; drop it to stop.
pub fn follow(
    lake: Arc<DataLake>,
    opts: SourceOptions,
    poll: Duration,
) -> StellarResult<BoxStream<'static, FollowEvent>> {
    let Some(from) = opts.from else {
        return Err(lake.err("following needs the first ledger to read"));
    };
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(run(lake, opts, from, poll, tx));
    Ok(
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) })
            .boxed(),
    )
}

async fn run(
    lake: Arc<DataLake>,
    opts: SourceOptions,
    mut next: u32,
    poll: Duration,
    tx: mpsc::Sender<FollowEvent>,
) {
    let ahead = opts.read_ahead.max(1);
    loop {
        match round(&lake, &opts, next, ahead, &tx).await {
            Ok(Some(n)) => {
                next = n;
                // Something new was read: ask again at once, the lake may
                // have grown while it was read.
                continue;
            }
            Ok(None) => {}
            Err(Stop) => return,
        }
        tokio::time::sleep(poll).await;
    }
}

/// The receiver is gone.
struct Stop;

/// One round: the next ledger to want after it (`None`: nothing new, or
/// it failed and was reported).
async fn round(
    lake: &Arc<DataLake>,
    opts: &SourceOptions,
    next: u32,
    ahead: usize,
    tx: &mpsc::Sender<FollowEvent>,
) -> Result<Option<u32>, Stop> {
    let send = |e| async { tx.send(e).await.map_err(|_| Stop) };
    let schema = match lake.schema().await {
        Ok(Some(s)) => s.clone(),
        Ok(None) => {
            send(FollowEvent::Error(lake.err(
                "has no .config.json: following computes the next file's key from it (SEP-54)",
            )))
            .await?;
            return Ok(None);
        }
        Err(e) => {
            send(FollowEvent::Error(e)).await?;
            return Ok(None);
        }
    };
    let newest = match lake.newest(Some(next)).await {
        Ok(n) => n,
        Err(e) => {
            send(FollowEvent::Error(e)).await?;
            return Ok(None);
        }
    };
    let Some(newest) = newest.filter(|n| *n >= next) else {
        send(FollowEvent::UpToDate).await?;
        return Ok(None);
    };
    send(FollowEvent::Newest(newest)).await?;
    let lpb = u64::from(schema.ledgers_per_batch);
    let (a, b) = (schema.batch_start(next), schema.batch_start(newest));
    let count = u64::from(b - a) / lpb + 1;
    let files = (0..count).map({
        let lake = Arc::clone(lake);
        move |i| lake.file_for(&schema, (u64::from(a) + i * lpb) as u32)
    });
    let mut chunks = lake_chunks(lake, files, opts, Some(next), None).buffered(ahead);
    let mut want = next;
    while let Some(c) = chunks.next().await {
        match c {
            Ok(chunk) => {
                if let Some(first) = chunk.ledgers.first()
                    && first.seq != want
                {
                    let e = StellarError::Gap {
                        detail: format!(
                            "{} starts at ledger {}, but the next ledger wanted is {want}",
                            chunk.unit, first.seq
                        ),
                    };
                    send(FollowEvent::Error(e)).await?;
                    return Ok(if want == next { None } else { Some(want) });
                }
                let Some(last) = chunk.ledgers.last().map(|l| l.seq) else {
                    continue;
                };
                if last.checked_sub(chunk.ledgers[0].seq) != Some(chunk.ledgers.len() as u32 - 1) {
                    let e = StellarError::Gap {
                        detail: format!("{} skips ledgers inside the file", chunk.unit),
                    };
                    send(FollowEvent::Error(e)).await?;
                    return Ok(if want == next { None } else { Some(want) });
                }
                let at_tip = last >= newest;
                send(FollowEvent::Chunk { chunk, at_tip }).await?;
                match last.checked_add(1) {
                    Some(n) => want = n,
                    None => return Ok(None),
                }
            }
            Err(e) => {
                send(FollowEvent::Error(e)).await?;
                return Ok(if want == next { None } else { Some(want) });
            }
        }
    }
    Ok(if want == next { None } else { Some(want) })
}
