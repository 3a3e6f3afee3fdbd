//! What shields the Query service: requests held to a small size, and
//! answers metered against the daemon's budget (answers.rs).
//!
//! Query requests are hashes and numbers, so the Query service takes at
//! most [`query_request_bytes`], not `grpc.max_message_bytes` (which
//! ingest needs). tonic reserves room for a message as soon as its 5-byte
//! header declares its length, and refuses one over its limit with
//! OUT_OF_RANGE and no setting named; [`QueryGuard`] reads the header
//! first and refuses such a request with RESOURCE_EXHAUSTED naming the
//! limit, before tonic reserves or buffers anything of it.
//!
//! Each call gets an [`Account`] in its request's extensions, through
//! which its handler reserves room for its answer, and the answer's body
//! is [`Metered`] so that the room goes once the answer is written.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use tonic::Status;
use tonic::body::Body;
use tonic::server::NamedService;

use crate::answers::{Account, Budget, Metered};
use crate::listener::ConnInfo;

/// The largest Query request a client may send: room for twice
/// `query.max_batch_hashes` hashes (35 bytes each, framed), so that a batch
/// somewhat over the limit is still told so by name, and never under 64 KiB.
pub fn query_request_bytes(max_batch_hashes: usize) -> usize {
    max_batch_hashes.saturating_mul(2 * 35).max(64 << 10)
}

/// The Query service, its requests held to [`query_request_bytes`] and its
/// answers metered.
#[derive(Clone)]
pub(crate) struct QueryGuard<S> {
    inner: S,
    max: usize,
    max_batch_hashes: usize,
    budget: Arc<Budget>,
}

impl<S> QueryGuard<S> {
    /// `inner`, taking at most [`query_request_bytes`] of
    /// `max_batch_hashes`, its answers within `budget`.
    pub(crate) fn new(inner: S, max_batch_hashes: usize, budget: Arc<Budget>) -> Self {
        Self {
            inner,
            max: query_request_bytes(max_batch_hashes),
            max_batch_hashes,
            budget,
        }
    }
}

impl<S: NamedService> NamedService for QueryGuard<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tonic::codegen::Service<hyper::Request<Body>> for QueryGuard<S>
where
    S: tonic::codegen::Service<
            hyper::Request<Body>,
            Response = hyper::Response<Body>,
            Error = Infallible,
        >,
    S::Future: Send + 'static,
{
    type Response = hyper::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<hyper::Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: hyper::Request<Body>) -> Self::Future {
        let (max, hashes) = (self.max, self.max_batch_hashes);
        let clock = req.extensions().get::<ConnInfo>().map(|c| c.clock.clone());
        let account = Account::new(&self.budget, clock);
        req.extensions_mut().insert(account.clone());
        let answer = self.inner.call(req.map(|b| {
            Body::new(Capped {
                inner: b,
                max,
                max_batch_hashes: hashes,
                head: Vec::with_capacity(5),
                seen: 0,
            })
        }));
        Box::pin(async move {
            let res = answer.await?;
            Ok(res.map(|b| Body::new(Metered::new(b, account))))
        })
    }
}

/// A request body that fails with RESOURCE_EXHAUSTED once its first
/// message declares, or its bytes reach, more than `max`.
struct Capped {
    inner: Body,
    max: usize,
    max_batch_hashes: usize,
    /// The first message's gRPC header (compressed flag, length), as far
    /// as it has arrived.
    head: Vec<u8>,
    seen: usize,
}

impl Capped {
    fn too_large(&self, bytes: usize) -> Status {
        Status::resource_exhausted(format!(
            "request: a message of {bytes} bytes; a Query request takes at most {} \
             (the larger of 65536 and 70 bytes x query.max_batch_hashes = {})",
            self.max, self.max_batch_hashes
        ))
    }
}

impl hyper::body::Body for Capped {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            other => return Poll::Ready(other),
        };
        if let Some(data) = frame.data_ref() {
            let want = 5 - this.head.len();
            this.head.extend_from_slice(&data[..want.min(data.len())]);
            this.seen = this.seen.saturating_add(data.len());
            let declared = match this.head[..] {
                [_, a, b, c, d] => u32::from_be_bytes([a, b, c, d]) as usize,
                _ => 0,
            };
            if declared > this.max || this.seen > this.max.saturating_add(5) {
                return Poll::Ready(Some(Err(
                    this.too_large(declared.max(this.seen.saturating_sub(5)))
                )));
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, StreamBody};

    /// A Capped body of the query limit for 50 hashes (64 KiB) over
    /// `chunks`, then trailers.
    fn capped(chunks: Vec<Vec<u8>>) -> Capped {
        let mut frames: Vec<Result<Frame<Bytes>, Status>> = chunks
            .into_iter()
            .map(|c| Ok(Frame::data(Bytes::from(c))))
            .collect();
        frames.push(Ok(Frame::trailers(hyper::HeaderMap::new())));
        Capped {
            inner: Body::new(StreamBody::new(futures::stream::iter(frames))),
            max: query_request_bytes(50),
            max_batch_hashes: 50,
            head: Vec::with_capacity(5),
            seen: 0,
        }
    }

    /// What the body yields: the data bytes passed, then the error, if any.
    async fn read(mut body: Capped) -> (usize, Option<Status>) {
        let mut passed = 0;
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(f) => passed += f.data_ref().map_or(0, Bytes::len),
                Err(e) => return (passed, Some(e)),
            }
        }
        (passed, None)
    }

    fn header(len: u32) -> Vec<u8> {
        let mut h = vec![0];
        h.extend_from_slice(&len.to_be_bytes());
        h
    }

    #[tokio::test]
    async fn a_request_of_exactly_the_limit_passes() {
        let max = query_request_bytes(50);
        assert_eq!(max, 64 << 10);
        let mut msg = header(max as u32);
        msg.resize(5 + max, 7);
        let (passed, err) = read(capped(vec![msg[..3].to_vec(), msg[3..].to_vec()])).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(passed, 5 + max);
    }

    /// A header split across frames that declares one byte over the limit
    /// is refused on the frame that completes it, before its body.
    #[tokio::test]
    async fn a_declared_length_over_the_limit_is_refused_at_its_header() {
        let h = header(query_request_bytes(50) as u32 + 1);
        let (passed, err) =
            read(capped(vec![h[..2].to_vec(), h[2..].to_vec(), vec![1; 100]])).await;
        assert_eq!(passed, 2, "only the header's first piece passed");
        let e = err.expect("refused");
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(
            e.message().contains(
                "a message of 65537 bytes; a Query request takes at most 65536 \
                 (the larger of 65536 and 70 bytes x query.max_batch_hashes = 50)"
            ),
            "{}",
            e.message()
        );
    }

    /// A small first message followed by more bytes than the limit (more
    /// messages, or a body longer than declared) is refused once the bytes
    /// pass it.
    #[tokio::test]
    async fn bytes_past_the_limit_are_refused_whatever_was_declared() {
        let mut first = header(10);
        first.extend_from_slice(&[0; 10]);
        let chunks = vec![first, vec![0; 40 << 10], vec![0; 40 << 10]];
        let (passed, err) = read(capped(chunks)).await;
        assert_eq!(passed, 15 + (40 << 10));
        assert_eq!(err.expect("refused").code(), tonic::Code::ResourceExhausted);
    }
}
