//! The gRPC listener: at most `grpc.max_connections` connections at once
//! and `grpc.max_connections_per_ip` of one client address
//! (`ledgerstore_peers`), and
//! a deadline for each new connection's handshake.
//!
//! tonic serves the connections [`incoming`] yields. A connection takes a
//! place when it is accepted and gives it back when it closes, so the
//! state the daemon keeps per connection (hyper's buffers and windows,
//! `grpc.max_concurrent_streams` requests being read) is bounded by the
//! places; the Query answers waiting for their clients are bounded across
//! all connections by `grpc.max_unsent_bytes` (answers.rs).
//!
//! The limit bounds memory. A connection that makes no calls but answers
//! keepalive pings keeps its place, so one client could hold every place:
//! the per-address limit makes that take many addresses. Finer limits
//! (per client, per request rate) belong in a proxy in front
//! (docs/operations.md).
//!
//! - **Past a limit** a connection is closed at once. Without TLS it is
//!   first told why: the HTTP/2 server preface and a GOAWAY
//!   (ENHANCE_YOUR_CALM) whose debug data names the setting (curl -v
//!   shows the GOAWAY; grpc-go's HTTP/2 debug log, `GODEBUG=http2debug=2`,
//!   its text; clients themselves report a closed connection). With TLS
//!   nothing can be said before a handshake, which a refused connection is
//!   not given.
//! - **The handshake deadline** (`grpc.handshake_timeout_ms`, from accept):
//!   the TLS handshake (done here, so that the deadline sees the bytes
//!   inside it) and the client's 24-byte HTTP/2 preface. Once the preface
//!   is in, hyper's HTTP/2 keepalive pings (every 30 s) close a peer that
//!   stops answering. Without the deadline, connections that never speak
//!   would hold every place: a lockout instead of a limit.
//! - **The send deadline** (`grpc.send_timeout_ms`, answers.rs): a
//!   connection that owes Query answers and has written no piece of them
//!   for that long is closed, which gives their room in the answer budget
//!   back.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use ledgerstore_peers::{Held, Past, Peer, Places, Refusals, Warning};
use prometheus::{IntCounter, IntGauge};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::Connected;

use crate::answers::ConnClock;

/// The HTTP/2 client connection preface (RFC 9113 §3.4): a connection has
/// shaken hands once it has sent this many bytes.
const PREFACE_BYTES: usize = 24;

/// What the listener allows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// `grpc.max_connections`.
    pub max_connections: u32,
    /// `grpc.max_connections_per_ip` (0: off).
    pub max_connections_per_ip: u32,
    /// `grpc.handshake_timeout_ms`.
    pub handshake_timeout: Duration,
    /// `grpc.send_timeout_ms`.
    pub send_timeout: Duration,
}

/// The listener's metrics (docs/metrics.md).
#[derive(Clone)]
pub(crate) struct ConnMetrics {
    /// Connections holding a place.
    pub open: IntGauge,
    /// Connections refused at the limit.
    pub refused: IntCounter,
    /// Connections refused at their address's limit.
    pub refused_per_ip: IntCounter,
    /// Connections closed at the handshake deadline.
    pub timed_out: IntCounter,
    /// Connections whose TLS handshake failed (or that closed before it
    /// finished).
    pub tls_failed: IntCounter,
    /// Connections closed at the send deadline.
    pub send_timed_out: IntCounter,
    /// Bytes of the answer budget taken (answers.rs).
    pub unsent: IntGauge,
}

/// The connections tonic serves, accepted from `listener` within `limits`.
/// Accepting stops, and the listening socket closes, once tonic drops the
/// stream (at shutdown).
pub(crate) fn incoming(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    limits: Limits,
    metrics: ConnMetrics,
) -> ReceiverStream<io::Result<Conn>> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(accept_loop(listener, tls, limits, metrics, tx));
    ReceiverStream::new(rx)
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    limits: Limits,
    metrics: ConnMetrics,
    tx: mpsc::Sender<io::Result<Conn>>,
) {
    let places = Places::new(limits.max_connections, limits.max_connections_per_ip);
    let refusals = Refusals::default();
    let (mut warned, mut peer_warned, mut accept_warned) =
        (Warning::default(), Warning::default(), Warning::default());
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = tx.closed() => return,
        };
        let (sock, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors, mostly: wait, do not spin, and say
                // so once in 10 s.
                if accept_warned.due() {
                    tracing::warn!(error = %e, "gRPC: accept failed");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // TCP_NODELAY: a small response must not wait for the client's
        // delayed ACK (it cost 40 ms per unary call under load before this).
        let _ = sock.set_nodelay(true);
        let who = Peer::of(peer.ip());
        let held = match places.take(who) {
            Ok(held) => held,
            Err(past) => {
                let (refused, last, max, setting, text) = match past {
                    Past::PerIp => (
                        &metrics.refused_per_ip,
                        &mut peer_warned,
                        limits.max_connections_per_ip,
                        "grpc.max_connections_per_ip",
                        format!("too many connections from {who}"),
                    ),
                    Past::Limit => (
                        &metrics.refused,
                        &mut warned,
                        limits.max_connections,
                        "grpc.max_connections",
                        "too many connections".to_string(),
                    ),
                };
                refused.inc();
                if last.due() {
                    tracing::warn!(
                        %peer,
                        counted_as = %who,
                        max,
                        setting,
                        "gRPC: refusing connections: the setting's connections are open \
                         (counted in ledgerstore_grpc_connections_refused_total, reason \
                         limit or per_ip)"
                    );
                }
                // With TLS nothing can be said before a handshake, which a
                // refused connection is not given.
                let answer = if tls.is_none() {
                    goaway(&format!("{text}: {max} are open ({setting})"))
                } else {
                    Vec::new()
                };
                refusals.refuse(past, sock, answer);
                continue;
            }
        };
        let place = Place::take(held, metrics.open.clone());
        let deadline = Instant::now() + limits.handshake_timeout;
        let (tls, tx, metrics) = (tls.clone(), tx.clone(), metrics.clone());
        let send_timeout = limits.send_timeout;
        tokio::spawn(async move {
            let info = ConnInfo {
                clock: Arc::new(ConnClock::new()),
            };
            let io = match tls {
                None => Io::Plain(sock),
                Some(acceptor) => {
                    match tokio::time::timeout_at(deadline, acceptor.accept(sock)).await {
                        Ok(Ok(s)) => Io::Tls(Box::new(s)),
                        Ok(Err(e)) => {
                            metrics.tls_failed.inc();
                            tracing::debug!(%peer, error = %e, "gRPC: TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            metrics.timed_out.inc();
                            tracing::debug!(%peer, "gRPC: no TLS handshake within grpc.handshake_timeout_ms");
                            return;
                        }
                    }
                }
            };
            let conn = Conn {
                io,
                info,
                handshake: Some(Handshake {
                    left: PREFACE_BYTES,
                    expired: false,
                    deadline: Box::pin(tokio::time::sleep_until(deadline)),
                    timed_out: metrics.timed_out,
                }),
                send: SendDeadline {
                    timeout: send_timeout,
                    sleep: None,
                    expired: false,
                    timed_out: metrics.send_timed_out,
                },
                _place: place,
            };
            // Fails only once tonic has stopped accepting: the connection
            // is dropped, and its place with it.
            let _ = tx.send(Ok(conn)).await;
        });
    }
}

/// An empty SETTINGS frame (the server preface) and a GOAWAY
/// (ENHANCE_YOUR_CALM, last stream 0) whose debug data is `text`.
pub(crate) fn goaway(text: &str) -> Vec<u8> {
    const SETTINGS: u8 = 0x4;
    const GOAWAY: u8 = 0x7;
    const ENHANCE_YOUR_CALM: u32 = 0xb;
    let mut out = Vec::with_capacity(9 + 9 + 8 + text.len());
    let frame_header = |out: &mut Vec<u8>, len: usize, kind: u8| {
        out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
        out.extend_from_slice(&[kind, 0, 0, 0, 0, 0]);
    };
    frame_header(&mut out, 0, SETTINGS);
    frame_header(&mut out, 8 + text.len(), GOAWAY);
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&ENHANCE_YOUR_CALM.to_be_bytes());
    out.extend_from_slice(text.as_bytes());
    out
}

/// A place under `grpc.max_connections` and its address's under
/// `grpc.max_connections_per_ip`, counted in the open gauge.
struct Place {
    held: Option<Held>,
    open: IntGauge,
}

impl Place {
    fn take(held: Held, open: IntGauge) -> Self {
        open.inc();
        Self {
            held: Some(held),
            open,
        }
    }
}

impl Drop for Place {
    /// The places first: once the gauge says a connection closed, its
    /// places can be taken.
    fn drop(&mut self) {
        drop(self.held.take());
        self.open.dec();
    }
}

/// The HTTP/2 preface a new connection still owes, and by when.
struct Handshake {
    left: usize,
    /// The deadline passed: every read fails from then on.
    expired: bool,
    deadline: Pin<Box<Sleep>>,
    timed_out: IntCounter,
}

enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// What a connection tells tonic about itself, and tonic puts in each of
/// its requests' extensions: the clock of the answers it owes. (Nothing
/// here reads a peer's address; tonic's `Request::remote_addr` is `None`.)
#[derive(Debug, Clone)]
pub(crate) struct ConnInfo {
    /// The answers it owes (answers.rs).
    pub clock: Arc<ConnClock>,
}

/// The send deadline of a connection's owed answers.
struct SendDeadline {
    timeout: Duration,
    /// Armed at the deadline while answers are owed.
    sleep: Option<Pin<Box<Sleep>>>,
    /// The deadline passed: every read fails from then on.
    expired: bool,
    timed_out: IntCounter,
}

/// One accepted connection: its place, its handshake deadline until the
/// preface is in, and its send deadline while it owes answers.
pub(crate) struct Conn {
    io: Io,
    info: ConnInfo,
    handshake: Option<Handshake>,
    send: SendDeadline,
    _place: Place,
}

impl Connected for Conn {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        self.info.clone()
    }
}

impl Conn {
    /// Whether a call of the connection owes answers and has written no
    /// piece of them within the send deadline. The deadline is computed
    /// when no timer is armed or the armed one has fired (progress only
    /// moves it later), and a timer armed for it wakes `cx`.
    fn send_overdue(&mut self, cx: &mut Context<'_>) -> bool {
        if self.send.expired {
            return true;
        }
        // Every poll, read or write, leaves its waker for a call that
        // begins to owe (h2 may write for a while without reading).
        self.info.clock.register(cx.waker());
        if let Some(sleep) = &mut self.send.sleep
            && sleep.as_mut().poll(cx).is_pending()
        {
            return false;
        }
        let Some(at) = self.info.clock.deadline(self.send.timeout) else {
            self.send.sleep = None;
            return false;
        };
        let at = Instant::from_std(at);
        let sleep = self
            .send
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        sleep.as_mut().reset(at);
        // Pending registers `cx` for `at`; ready (`at` has passed, to the
        // timer's millisecond) is the deadline.
        if sleep.as_mut().poll(cx).is_pending() {
            return false;
        }
        self.send.expired = true;
        self.send.timed_out.inc();
        true
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.handshake.as_ref().is_some_and(|h| h.expired) {
            return Poll::Ready(Err(no_preface()));
        }
        // hyper keeps a read pending on a connection while it can write,
        // so this sees the send deadline pass even while no answer moves
        // (and a write that waits on a full socket sees it below); the
        // clock wakes the connection when a call begins to owe.
        if this.send_overdue(cx) {
            return Poll::Ready(Err(send_overdue()));
        }
        let before = buf.filled().len();
        let read = match &mut this.io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        let Some(h) = &mut this.handshake else {
            return read;
        };
        match read {
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len() - before;
                h.left = h.left.saturating_sub(n);
                // The preface is in, or the client closed (hyper sees it).
                if h.left == 0 || n == 0 {
                    this.handshake = None;
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending if h.deadline.as_mut().poll(cx).is_ready() => {
                h.expired = true;
                h.timed_out.inc();
                Poll::Ready(Err(no_preface()))
            }
            other => other,
        }
    }
}

fn send_overdue() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "no answer written within grpc.send_timeout_ms",
    )
}

fn no_preface() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "no HTTP/2 preface within grpc.handshake_timeout_ms",
    )
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.send_overdue(cx) {
            return Poll::Ready(Err(send_overdue()));
        }
        match &mut this.io {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.send_overdue(cx) {
            return Poll::Ready(Err(send_overdue()));
        }
        match &mut this.io {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The TLS acceptor for `grpc.tls_cert` and `grpc.tls_key` (PEM): HTTP/2
/// only, no client certificates, as tonic's own.
pub(crate) fn tls_acceptor(cert_pem: &[u8], key_pem: &[u8]) -> Result<TlsAcceptor, String> {
    use tokio_rustls::rustls::ServerConfig;
    use tokio_rustls::rustls::pki_types::pem::PemObject as _;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("grpc.tls_cert: not a PEM certificate chain: {e}"))?;
    if certs.is_empty() {
        return Err("grpc.tls_cert: no certificate in the file".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| format!("grpc.tls_key: not a PEM private key: {e}"))?;
    // ring, named rather than taken from the process default, which is
    // ambiguous (a panic) once a second provider is linked.
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("grpc.tls_cert and grpc.tls_key: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The refusal parses as HTTP/2 frames: an empty SETTINGS, then a
    /// GOAWAY whose length covers its debug text.
    #[test]
    fn the_refusal_is_two_whole_frames() {
        let f = goaway("too many connections: 7 are open (grpc.max_connections)");
        assert_eq!(&f[..9], &[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        let len = u32::from_be_bytes([0, f[9], f[10], f[11]]) as usize;
        assert_eq!((f[12], f.len()), (7, 18 + len));
        assert_eq!(&f[18..26], &[0, 0, 0, 0, 0, 0, 0, 0xb]);
        assert_eq!(
            std::str::from_utf8(&f[26..]).expect("text"),
            "too many connections: 7 are open (grpc.max_connections)"
        );
    }
}
