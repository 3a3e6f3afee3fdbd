//! Answers on their way to the client: bounded in bytes and in time.
//!
//! jsonrpsee builds a call's whole answer before it writes any of it, and
//! the answer stays in memory until the client has read it. Clients that
//! do not read would otherwise keep every answer they asked for (32 such
//! clients of maximal XDR-JSON `getLedgers` took 527 MB of RSS). Here:
//!
//! - **A byte budget**, `jsonrpc.max_unsent_bytes` ([`Unsent`]): a
//!   ledger-reading call reserves room for its largest answer (after its
//!   gate slot, under its deadline; past it, a "server busy" refusal
//!   naming the setting) before it builds anything, a ledger-reading
//!   batch for its whole answer. The room goes with the blocking job until
//!   the job really ends; an answer is then fitted to its length and kept
//!   ([`Hold`]) until the client has taken its last byte ([`SendBody`]).
//!   Point lookups and info calls never reserve or wait.
//! - **A send deadline**, `jsonrpc.send_timeout_ms` ([`DeadlineIo`]): an
//!   answer not written within it from its start closes its connection,
//!   which lets the answer and its room go. hyper has no write timeout,
//!   and while the socket is full it never polls the body, so the
//!   deadline wraps the socket.
//!   A connection idle for as long (no request being handled, no answer
//!   being sent, or a request's headers arriving that slowly) is closed
//!   the same way, and so is one whose request's body is not in whole
//!   within as long from its headers ([`RecvBody`]).
//! - **Connection limits**, `jsonrpc.max_connections` and
//!   `jsonrpc.max_connections_per_ip`, counted on TCP connections by the
//!   accept loop (see [`crate::serve`], `ledgerstore_peers`): jsonrpsee's
//!   own permit is given back when an answer is built, not when it is
//!   sent.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use jsonrpsee::server::HttpBody;
use prometheus::IntGauge;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

use crate::budget::Call;
use crate::error::{RpcError, RpcResult};

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The budget counts KiB: a permit is a `u32`.
const UNIT: usize = 1024;

/// Bytes an answer's frame is handed to hyper in, each a copy: hyper
/// buffers a few of them, and the answer itself (and its room) goes as
/// soon as its last chunk is taken.
const CHUNK: usize = 64 << 10;

/// Units of `bytes`, rounded up.
fn units(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(UNIT)).unwrap_or(u32::MAX)
}

/// The budget of answer bytes built or waiting for their client
/// (`jsonrpc.max_unsent_bytes`); `jsonrpc_unsent_bytes` shows what is
/// taken.
#[derive(Debug, Clone)]
pub(crate) struct Unsent {
    sem: Arc<Semaphore>,
    total: u32,
    gauge: IntGauge,
}

impl Unsent {
    pub(crate) fn new(bytes: u64, gauge: IntGauge) -> Self {
        let total = u32::try_from(bytes / UNIT as u64)
            .unwrap_or(u32::MAX)
            .clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize) as u32);
        Self {
            sem: Arc::new(Semaphore::new(total as usize)),
            total,
            gauge,
        }
    }

    fn reserved(&self, permit: OwnedSemaphorePermit) -> Reserved {
        self.gauge.add((permit.num_permits() * UNIT) as i64);
        Reserved {
            permit,
            gauge: self.gauge.clone(),
        }
    }

    /// Room for an answer of up to `bytes` (all of the budget if it is
    /// larger), waiting until `call`'s deadline.
    pub(crate) async fn reserve(
        &self,
        what: &str,
        bytes: usize,
        call: &Call,
    ) -> RpcResult<Reserved> {
        let want = units(bytes).min(self.total);
        if let Ok(p) = self.sem.clone().try_acquire_many_owned(want) {
            return Ok(self.reserved(p));
        }
        let deadline = tokio::time::Instant::from_std(call.deadline);
        match tokio::time::timeout_at(deadline, self.sem.clone().acquire_many_owned(want)).await {
            Ok(Ok(p)) => Ok(self.reserved(p)),
            Ok(Err(closed)) => Err(RpcError::Internal(format!("{what}: {closed}"))),
            Err(_) => Err(RpcError::Busy(format!(
                "server busy: {what} waited {} ms (query.timeout_ms) for room among the answers \
                 not yet read by their clients ({} bytes, jsonrpc.max_unsent_bytes); retry later",
                call.timeout.as_millis(),
                self.total as usize * UNIT
            ))),
        }
    }
}

/// Room taken in the [`Unsent`] budget; dropping it gives it back.
#[derive(Debug)]
pub(crate) struct Reserved {
    permit: OwnedSemaphorePermit,
    gauge: IntGauge,
}

impl Reserved {
    /// Fits the room to an answer of `bytes`: gives back what it does not
    /// need, or takes more if it is free now. It never waits while it
    /// holds room: an answer larger than its reservation (a page's first
    /// item may take up to the response limit) is sent anyway.
    pub(crate) fn fit(&mut self, bytes: usize) {
        let (want, have) = (units(bytes).max(1) as usize, self.permit.num_permits());
        if want < have {
            if let Some(spare) = self.permit.split(have - want) {
                self.gauge.sub((spare.num_permits() * UNIT) as i64);
            }
        } else if want > have
            && let Ok(more) = self
                .permit
                .semaphore()
                .clone()
                .try_acquire_many_owned(u32::try_from(want - have).unwrap_or(u32::MAX))
        {
            self.gauge.add((more.num_permits() * UNIT) as i64);
            self.permit.merge(more);
        }
    }

    /// Takes over `other`'s room.
    fn absorb(&mut self, mut other: Reserved) {
        let n = other.permit.num_permits();
        if let Some(p) = other.permit.split(n) {
            self.permit.merge(p);
        }
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        self.gauge.sub((self.permit.num_permits() * UNIT) as i64);
    }
}

/// Where a call leaves its answer's room for the HTTP layer: one per HTTP
/// request, in its extensions, which jsonrpsee copies into every call of
/// it. [`Conn`] takes the room out once the answer is built and gives it
/// to the [`SendBody`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Hold(Arc<Mutex<Option<Reserved>>>);

impl Hold {
    pub(crate) fn put(&self, r: Reserved) {
        let mut held = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match held.as_mut() {
            Some(h) => h.absorb(r),
            None => *held = Some(r),
        }
    }

    pub(crate) fn take(&self) -> Option<Reserved> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// One connection's clocks: when the answer being written started, and
/// since when the connection has been idle (no request being handled, no
/// answer being handed over).
#[derive(Debug)]
pub(crate) struct SendClock {
    timeout: Duration,
    state: Mutex<ClockState>,
}

#[derive(Debug)]
struct ClockState {
    /// When the oldest answer not yet written whole started.
    since: Option<Instant>,
    /// Answers whose body is still being taken.
    live: usize,
    /// Requests being handled.
    busy: usize,
    /// When the connection last went idle (or opened).
    idle_since: Instant,
    /// When the request whose body is being read started (its headers
    /// were in): the body must be in whole within the timeout too.
    body_since: Option<Instant>,
    /// A read failed because the connection owed a request past its
    /// deadline (set by [`DeadlineIo`], the cause a body error is told by).
    read_expired: bool,
}

impl ClockState {
    fn settle(&mut self) {
        if self.busy == 0 && self.live == 0 {
            self.idle_since = Instant::now();
        }
    }
}

/// A request being handled: the connection is not idle.
struct Busy(Arc<SendClock>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.with(|s| {
            s.busy = s.busy.saturating_sub(1);
            s.settle();
        });
    }
}

impl SendClock {
    pub(crate) fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            state: Mutex::new(ClockState {
                since: None,
                live: 0,
                busy: 0,
                idle_since: Instant::now(),
                body_since: None,
                read_expired: false,
            }),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut ClockState) -> T) -> T {
        f(&mut self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// A request came in: once the previous answers are handed over, the
    /// send clock stops (the client read them: it sent another request).
    fn request(self: &Arc<Self>) -> Busy {
        self.with(|s| {
            if s.live == 0 {
                s.since = None;
            }
            s.busy += 1;
        });
        Busy(self.clone())
    }

    /// An answer starts.
    fn start(&self) {
        self.with(|s| {
            s.since.get_or_insert_with(Instant::now);
            s.live += 1;
        });
    }

    /// An answer's body is handed over whole, or dropped.
    fn end(&self) {
        self.with(|s| {
            s.live = s.live.saturating_sub(1);
            s.settle();
        });
    }

    /// By when the answer being written must be out.
    fn deadline(&self) -> Option<Instant> {
        self.with(|s| s.since).map(|t| t + self.timeout)
    }

    /// By when the connection must have sent what it owes: an idle
    /// connection its next request's headers (the timeout from going
    /// idle), a request its whole body (the timeout from its headers).
    fn idle_deadline(&self) -> Option<Instant> {
        self.with(|s| {
            s.body_since
                .or((s.busy == 0 && s.live == 0).then_some(s.idle_since))
                .map(|t| t + self.timeout)
        })
    }

    /// A request's body starts to be read.
    fn body_start(&self) {
        self.with(|s| s.body_since = Some(Instant::now()));
    }

    /// A request's body is in whole (or dropped).
    fn body_end(&self) {
        self.with(|s| s.body_since = None);
    }
}

/// A request's body, under its connection's [`SendClock`]: until it is in
/// whole, a read that waits past the request's start plus the timeout
/// closes the connection (a client that sends its body slowly would
/// otherwise keep its connection, and its place, for ever).
pub(crate) struct RecvBody<B> {
    inner: B,
    clock: Option<Arc<SendClock>>,
    /// Set when the body failed past its deadline: the answer is then a
    /// 408 naming the setting, not jsonrpsee's "Internal error".
    late: Arc<AtomicBool>,
}

impl<B> RecvBody<B> {
    fn new(inner: B, clock: Arc<SendClock>, late: Arc<AtomicBool>) -> Self {
        clock.body_start();
        Self {
            inner,
            clock: Some(clock),
            late,
        }
    }

    fn finish(&mut self) {
        if let Some(c) = self.clock.take() {
            c.body_end();
        }
    }
}

impl<B> Drop for RecvBody<B> {
    fn drop(&mut self) {
        self.finish();
    }
}

impl<B: Body + Unpin> Body for RecvBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = &mut *self;
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        if matches!(frame, Some(Err(_)))
            && let Some(c) = &this.clock
            && c.with(|s| s.read_expired)
        {
            this.late.store(true, Ordering::Release);
        }
        if frame.is_none() || this.inner.is_end_stream() {
            this.finish();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// An answer's body, handed to hyper in copied chunks of [`CHUNK`]: the
/// answer and its room ([`Reserved`]) go once its last chunk is taken,
/// and hyper keeps at most a few chunks. The length stays exact
/// (Content-Length).
pub(crate) struct SendBody {
    inner: HttpBody,
    data: Bytes,
    off: usize,
    held: Option<Reserved>,
    clock: Option<Arc<SendClock>>,
}

impl SendBody {
    fn new(inner: HttpBody, held: Option<Reserved>, clock: Arc<SendClock>) -> Self {
        clock.start();
        Self {
            inner,
            data: Bytes::new(),
            off: 0,
            held,
            clock: Some(clock),
        }
    }

    /// The answer is all taken (or dropped): its room goes.
    fn finish(&mut self) {
        self.held = None;
        if let Some(c) = self.clock.take() {
            c.end();
        }
    }
}

impl Drop for SendBody {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Body for SendBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if this.off < this.data.len() {
                let n = (this.data.len() - this.off).min(CHUNK);
                let chunk = Bytes::copy_from_slice(&this.data[this.off..this.off + n]);
                this.off += n;
                if this.off == this.data.len() {
                    this.data = Bytes::new();
                    this.off = 0;
                    if this.inner.is_end_stream() {
                        this.finish();
                    }
                }
                return Poll::Ready(Some(Ok(Frame::data(chunk))));
            }
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                None => {
                    this.finish();
                    return Poll::Ready(None);
                }
                Some(Err(e)) => {
                    this.finish();
                    return Poll::Ready(Some(Err(e)));
                }
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) if data.len() > CHUNK => {
                        this.data = data;
                        this.off = 0;
                    }
                    Ok(data) => {
                        if this.inner.is_end_stream() {
                            this.finish();
                        }
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.off >= self.data.len() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let left = (self.data.len() - self.off) as u64;
        let h = self.inner.size_hint();
        if let Some(n) = h.exact() {
            return SizeHint::with_exact(n + left);
        }
        let mut out = SizeHint::new();
        out.set_lower(h.lower() + left);
        if let Some(u) = h.upper() {
            out.set_upper(u + left);
        }
        out
    }
}

/// One connection's service: the jsonrpsee service `inner`, with a
/// [`Hold`] in each request and each answer sent as a [`SendBody`] on the
/// connection's [`SendClock`].
#[derive(Clone)]
pub(crate) struct Conn<S> {
    pub inner: S,
    pub clock: Arc<SendClock>,
}

impl<S, B> tower_service::Service<http::Request<B>> for Conn<S>
where
    S: tower_service::Service<
            http::Request<RecvBody<B>>,
            Response = http::Response<HttpBody>,
            Error = BoxError,
        > + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<SendBody>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        let hold = Hold::default();
        req.extensions_mut().insert(hold.clone());
        let busy = self.clock.request();
        let late = Arc::new(AtomicBool::new(false));
        let (clock, flag) = (self.clock.clone(), late.clone());
        let answer = self.inner.call(req.map(|b| RecvBody::new(b, clock, flag)));
        let clock = self.clock.clone();
        Box::pin(async move {
            let rp = answer.await?;
            let rp = if late.load(Ordering::Acquire) {
                too_slow(clock.timeout)
            } else {
                rp
            };
            let held = hold.take();
            let rp = rp.map(|body| SendBody::new(body, held, clock));
            drop(busy);
            Ok(rp)
        })
    }
}

/// The answer to a request whose body was not in whole in time: 408, and
/// the connection closes.
fn too_slow(timeout: Duration) -> http::Response<HttpBody> {
    let text = format!(
        "the request was not sent whole within {} ms (jsonrpc.send_timeout_ms)\n",
        timeout.as_millis()
    );
    let mut rp = http::Response::new(HttpBody::from(text));
    *rp.status_mut() = http::StatusCode::REQUEST_TIMEOUT;
    let headers = rp.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain"),
    );
    headers.insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    rp
}

/// A connection's socket, under its [`SendClock`]: a write that cannot
/// go on past the answer's deadline fails (`TimedOut`), and hyper closes
/// the connection, dropping the answer and its room. So does a read that
/// waits past the idle deadline: a connection that sends no request for
/// as long (or sends one's headers that slowly) gives its place back.
pub(crate) struct DeadlineIo {
    io: TcpStream,
    clock: Arc<SendClock>,
    timer: Pin<Box<Sleep>>,
    idle: Pin<Box<Sleep>>,
}

impl DeadlineIo {
    pub(crate) fn new(io: TcpStream, clock: Arc<SendClock>) -> Self {
        let far = tokio::time::Instant::now() + Duration::from_secs(86_400 * 365);
        Self {
            io,
            clock,
            timer: Box::pin(tokio::time::sleep_until(far)),
            idle: Box::pin(tokio::time::sleep_until(far)),
        }
    }

    /// A read is pending: the error once an idle connection's deadline
    /// has passed; until then, a wake-up at the deadline.
    fn idle(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(deadline) = self.clock.idle_deadline() else {
            return Poll::Pending;
        };
        let deadline = tokio::time::Instant::from_std(deadline);
        if self.idle.deadline() != deadline {
            self.idle.as_mut().reset(deadline);
        }
        match self.idle.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err({
                self.clock.with(|s| s.read_expired = true);
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the connection sent no request, or not one whole, for {} ms \
                         (jsonrpc.send_timeout_ms)",
                        self.clock.timeout.as_millis()
                    ),
                )
            })),
            Poll::Pending => Poll::Pending,
        }
    }

    /// A write is pending: the error once the answer's deadline has
    /// passed; until then, a wake-up at the deadline.
    fn pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some(deadline) = self.clock.deadline() else {
            return Poll::Pending;
        };
        let deadline = tokio::time::Instant::from_std(deadline);
        if self.timer.deadline() != deadline {
            self.timer.as_mut().reset(deadline);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the client did not read its answer within {} ms (jsonrpc.send_timeout_ms)",
                    self.clock.timeout.as_millis()
                ),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for DeadlineIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Pending => this.idle(cx),
            done => done,
        }
    }
}

impl AsyncWrite for DeadlineIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Pending => this.pending(cx),
            done => done,
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write_vectored(cx, bufs) {
            Poll::Pending => this.pending(cx),
            done => done,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gauge() -> IntGauge {
        IntGauge::new("unsent", "test").expect("gauge")
    }

    #[tokio::test]
    async fn room_is_fitted_and_given_back() {
        let unsent = Unsent::new(64 << 10, gauge());
        let long = Call::new(Instant::now(), Duration::from_secs(600));
        let mut a = unsent
            .reserve("getLedgers", 40 << 10, &long)
            .await
            .expect("room");
        assert_eq!(unsent.gauge.get(), 40 << 10);
        // No room for 40 KiB more: refused at the deadline, by name.
        let short = Call::new(Instant::now(), Duration::from_millis(20));
        let e = unsent
            .reserve("getLedgers", 40 << 10, &short)
            .await
            .expect_err("full");
        assert!(e.to_string().contains("jsonrpc.max_unsent_bytes"), "{e}");
        // Fitted to a 10,000-byte answer: 10 KiB, the rest free.
        a.fit(10_000);
        assert_eq!(unsent.gauge.get(), 10 << 10);
        let b = unsent
            .reserve("getLedgers", 40 << 10, &short)
            .await
            .expect("room now");
        // Past what is free, a fit takes what it can without waiting.
        a.fit(100 << 10);
        assert_eq!(unsent.gauge.get(), 50 << 10, "no room to grow");
        let hold = Hold::default();
        hold.put(a);
        hold.put(b);
        assert_eq!(unsent.gauge.get(), 50 << 10);
        drop(hold.take());
        assert_eq!(unsent.gauge.get(), 0);
        assert_eq!(unsent.sem.available_permits(), 64);
        // Larger than the whole budget: all of it.
        let all = unsent
            .reserve("a batch", 1 << 30, &long)
            .await
            .expect("all");
        assert_eq!(unsent.gauge.get(), 64 << 10);
        drop(all);
    }

    #[tokio::test]
    async fn a_request_body_is_timed_until_it_is_in_whole() {
        use http_body_util::{BodyExt, Full};
        let clock = Arc::new(SendClock::new(Duration::from_secs(1)));
        assert!(
            clock.idle_deadline().is_some(),
            "idle: the headers are owed"
        );
        let busy = clock.request();
        let late = Arc::new(AtomicBool::new(false));
        let mut body = RecvBody::new(
            Full::new(Bytes::from_static(b"{}")),
            clock.clone(),
            late.clone(),
        );
        assert!(clock.idle_deadline().is_some(), "the body is owed");
        let got = body.frame().await.expect("a frame").expect("data");
        assert_eq!(got.into_data().expect("data"), Bytes::from_static(b"{}"));
        assert!(
            clock.idle_deadline().is_none(),
            "the body is in: a handler may take its time"
        );
        drop(body);
        assert!(clock.idle_deadline().is_none(), "still handled");
        assert!(!late.load(Ordering::Acquire));
        drop(busy);
        assert!(clock.idle_deadline().is_some(), "idle again");

        // A body dropped before its end (too large, say) ends its clock.
        let _busy = clock.request();
        let body = RecvBody::new(
            Full::new(Bytes::from_static(b"{}")),
            clock.clone(),
            late.clone(),
        );
        assert!(clock.idle_deadline().is_some());
        drop(body);
        assert!(clock.idle_deadline().is_none());
    }

    #[tokio::test]
    async fn a_body_is_handed_over_in_chunks_and_frees_its_room_at_the_end() {
        use http_body_util::BodyExt;
        let unsent = Unsent::new(1 << 20, gauge());
        let long = Call::new(Instant::now(), Duration::from_secs(600));
        let held = unsent
            .reserve("getLedgers", 300 << 10, &long)
            .await
            .expect("room");
        let text: String = (0..200_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let clock = Arc::new(SendClock::new(Duration::from_secs(1)));
        let mut body = SendBody::new(HttpBody::from(text.clone()), Some(held), clock.clone());
        assert_eq!(body.size_hint().exact(), Some(200_000));
        assert!(clock.deadline().is_some(), "the clock runs");
        let mut got = Vec::new();
        let mut frames = 0;
        while let Some(f) = body.frame().await {
            let data = f.expect("frame").into_data().expect("data");
            assert!(data.len() <= CHUNK);
            got.extend_from_slice(&data);
            frames += 1;
            assert_eq!(body.size_hint().exact(), Some((200_000 - got.len()) as u64));
            if got.len() < text.len() {
                assert_eq!(unsent.gauge.get(), 300 << 10, "held until the last chunk");
            }
        }
        assert_eq!(frames, 4);
        assert_eq!(got, text.as_bytes());
        assert!(body.is_end_stream());
        assert_eq!(unsent.gauge.get(), 0, "given back with the last chunk");
        assert!(
            clock.idle_deadline().is_some(),
            "idle once the answer is out"
        );
        let busy = clock.request();
        assert!(clock.deadline().is_none(), "a new request stops the clock");
        assert!(
            clock.idle_deadline().is_none(),
            "not idle while a request runs"
        );
        drop(busy);
        assert!(clock.idle_deadline().is_some());
    }
}
