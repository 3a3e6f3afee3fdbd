//! Query answers on their way to the client: bounded in bytes and in time.
//!
//! tonic holds an answer whole until its client has read it, and a client
//! that asks and does not read (an HTTP/2 stream window of 0) would
//! otherwise keep every answer it asked for: four such connections of 256
//! GetLedger streams each took a daemon from 159 MB to 1.5 GB of RSS.
//! Here:
//!
//! - **A byte budget**, `grpc.max_unsent_bytes` ([`Budget`]): each Query
//!   answer, once built and before it is handed to tonic, takes room for
//!   its encoded bytes ([`Account::reserve`]); an answer that does not
//!   fit is dropped and its call fails with RESOURCE_EXHAUSTED naming the
//!   setting (a stream, with the ledger to resume from). [`Metered`] cuts
//!   the answer's body into pieces of at most [`PIECE`] bytes and ties
//!   each message's room to the piece holding its last byte
//!   (`Bytes::from_owner`), which HTTP/2 drops once it is written to the
//!   connection (the kernel's socket buffer, or rustls's, which are not
//!   counted), or with its stream. A unary answer is built by one read thread at a time; a
//!   stream reserves each chunk of ledgers as soon as it is read, so what
//!   is built and not yet reserved is bounded by the read threads. While
//!   less than 1 MiB of the budget is free, a call is refused before it
//!   reads anything (GetStatus excepted: its answer is small, and
//!   monitoring must see a busy daemon).
//! - **A send deadline**, `grpc.send_timeout_ms` ([`ConnClock`]), as
//!   nginx's `send_timeout`: when a call owes answers and has written no
//!   piece of them for that long, its connection is closed (listener.rs),
//!   which gives back all of the connection's room. Each call keeps its
//!   own time ([`Debt`]), so other calls moving on the same connection do
//!   not hide one that stopped. A client that reads slowly keeps its
//!   connection (if it reads a piece of each call it is owed within the
//!   deadline: 256 calls at 30 s need ~140 KB/s); one that stops reading
//!   cannot hold its room for longer than the deadline. (One that reads a piece now and then can:
//!   per-client limits belong in a proxy, docs/operations.md.) A piece
//!   counts as written when HTTP/2 drops it: once the socket (or rustls)
//!   has taken it, or, below 256 bytes, once copied into h2's buffer.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::task::AtomicWaker;
use hyper::body::{Frame, SizeHint};
use prometheus::IntGauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::Status;

/// The budget counts KiB: a permit is a `u32`.
const UNIT: usize = 1024;

/// With less room than this free, a call is refused before its read.
const FULL: usize = 1 << 20;

/// The largest piece of an answer's body handed to HTTP/2 at once: the
/// send deadline sees progress each time one is written.
const PIECE: usize = 16 << 10;

/// The daemon's room for Query answers not yet written.
pub(crate) struct Budget {
    room: Arc<Semaphore>,
    max_bytes: u64,
    /// `ledgerstore_grpc_unsent_bytes`.
    taken: IntGauge,
}

impl Budget {
    /// Room for `max_bytes` of answers, what is taken shown in `taken`.
    pub(crate) fn new(max_bytes: u64, taken: IntGauge) -> Self {
        let units = usize::try_from(max_bytes / UNIT as u64)
            .unwrap_or(usize::MAX)
            .min(Semaphore::MAX_PERMITS);
        Self {
            room: Arc::new(Semaphore::new(units)),
            max_bytes,
            taken,
        }
    }

    /// Bytes of room free now.
    #[cfg(test)]
    fn free(&self) -> usize {
        self.room.available_permits() * UNIT
    }
}

/// One connection's calls' answers, for its send deadline: each call that
/// owes answers has its own [`Debt`], so that progress of one call never
/// hides another that stopped. Shared by the connection (listener.rs) and
/// the accounts of its calls.
#[derive(Debug)]
pub(crate) struct ConnClock {
    origin: Instant,
    /// The debts of the connection's calls (each gone with its call's
    /// account and answer); at most `grpc.max_concurrent_streams` live.
    debts: Mutex<Vec<Weak<Debt>>>,
    /// How many of them owe: none, and the deadline is not looked for.
    owing: AtomicUsize,
    /// The connection's reader, woken when a call begins to owe so that it
    /// arms its send deadline.
    waker: AtomicWaker,
}

impl ConnClock {
    pub(crate) fn new() -> Self {
        Self {
            origin: Instant::now(),
            debts: Mutex::new(Vec::new()),
            owing: AtomicUsize::new(0),
            waker: AtomicWaker::new(),
        }
    }

    fn debts(&self) -> std::sync::MutexGuard<'_, Vec<Weak<Debt>>> {
        self.debts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new call's debt, counted until it is dropped.
    fn open(self: &Arc<Self>) -> Arc<Debt> {
        let debt = Arc::new(Debt {
            clock: self.clone(),
            owed: AtomicUsize::new(0),
            progress_ms: AtomicU64::new(0),
        });
        let mut debts = self.debts();
        debts.retain(|d| d.strong_count() > 0);
        debts.push(Arc::downgrade(&debt));
        debt
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Wakes `waker` when a call of the connection begins to owe.
    pub(crate) fn register(&self, waker: &std::task::Waker) {
        self.waker.register(waker);
    }

    /// While a call owes answers, when the connection's send deadline
    /// falls: `timeout` after the oldest progress of a call that owes;
    /// `None` while none owes.
    pub(crate) fn deadline(&self, timeout: Duration) -> Option<Instant> {
        if self.owing.load(Ordering::Acquire) == 0 {
            return None;
        }
        let oldest = self
            .debts()
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|d| d.owed.load(Ordering::Acquire) > 0)
            .map(|d| d.progress_ms.load(Ordering::Acquire))
            .min()?;
        Some(self.origin + Duration::from_millis(oldest) + timeout)
    }
}

/// One call's answers on a connection: how many messages are owed, and
/// when it last wrote a piece of one (or began to owe).
#[derive(Debug)]
struct Debt {
    clock: Arc<ConnClock>,
    owed: AtomicUsize,
    /// Milliseconds from the clock's origin to the last progress.
    progress_ms: AtomicU64,
}

impl Debt {
    fn owe(&self) {
        // The start is stored before the debt can be seen, so a reader
        // between the two never finds a debt with an old start; the wake
        // is decided by the count itself.
        if self.owed.load(Ordering::Acquire) == 0 {
            self.progress();
        }
        if self.owed.fetch_add(1, Ordering::AcqRel) == 0 {
            self.clock.owing.fetch_add(1, Ordering::AcqRel);
            self.clock.waker.wake();
        }
    }

    /// A piece of the call's answer was written (never moved back by a
    /// thread that read the time earlier).
    fn progress(&self) {
        self.progress_ms
            .fetch_max(self.clock.now_ms(), Ordering::AcqRel);
    }

    fn paid(&self) {
        self.progress();
        if self.owed.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.clock.owing.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The bytes a permit of the budget stands for.
fn room_bytes(permit: &OwnedSemaphorePermit) -> i64 {
    i64::try_from(permit.num_permits() * UNIT).unwrap_or(i64::MAX)
}

/// An answer's room: given back, and counted as progress of its call,
/// when dropped.
struct Room {
    permit: OwnedSemaphorePermit,
    taken: IntGauge,
    debt: Option<Arc<Debt>>,
}

impl Drop for Room {
    fn drop(&mut self) {
        self.taken.sub(room_bytes(&self.permit));
        if let Some(d) = &self.debt {
            d.paid();
        }
    }
}

/// The rooms of one call's answer messages, in the order they are sent.
/// Put in the request's extensions by the Query guard; a handler reserves
/// through it.
#[derive(Clone)]
pub(crate) struct Account(Arc<AccountInner>);

struct AccountInner {
    room: Arc<Semaphore>,
    max_bytes: u64,
    taken: IntGauge,
    debt: Option<Arc<Debt>>,
    rooms: Mutex<Rooms>,
}

/// The rooms of the messages not yet ended in the body, until the body is
/// dropped (the call answered or reset).
#[derive(Default)]
struct Rooms {
    queue: VecDeque<Room>,
    closed: bool,
}

impl Account {
    /// An account against `budget` for a call on the connection `clock`
    /// times (none when the connection is not ours, in unit tests).
    pub(crate) fn new(budget: &Budget, clock: Option<Arc<ConnClock>>) -> Self {
        Self(Arc::new(AccountInner {
            room: budget.room.clone(),
            max_bytes: budget.max_bytes,
            taken: budget.taken.clone(),
            debt: clock.as_ref().map(ConnClock::open),
            rooms: Mutex::new(Rooms::default()),
        }))
    }

    /// Refuses the call before anything is read for it while the budget
    /// has less than [`FULL`] free: an answer built then would only be
    /// refused (and its reading done for no one).
    pub(crate) fn check_room(&self) -> Result<(), Status> {
        if self.0.room.available_permits() * UNIT < FULL {
            return Err(self.busy("any answer"));
        }
        Ok(())
    }

    fn busy(&self, what: &str) -> Status {
        Status::resource_exhausted(format!(
            "server busy: answers not yet written to their clients fill \
             grpc.max_unsent_bytes = {}; {what} did not fit, retry later",
            self.0.max_bytes
        ))
    }

    /// Takes room for the next message of the answer, `encoded` bytes
    /// (gRPC's 5-byte header is added), or refuses it.
    pub(crate) fn reserve(&self, encoded: usize) -> Result<(), Status> {
        let units = (encoded + 5).div_ceil(UNIT).max(1);
        let permit = u32::try_from(units)
            .ok()
            .and_then(|n| self.0.room.clone().try_acquire_many_owned(n).ok())
            .ok_or_else(|| self.busy(&format!("an answer of {encoded} bytes")))?;
        let mut rooms = self.rooms();
        if rooms.closed {
            // The permit goes back as it drops.
            return Err(Status::cancelled(
                "the call's answer is gone (reset or closed)",
            ));
        }
        if let Some(d) = &self.0.debt {
            d.owe();
        }
        self.0.taken.add(room_bytes(&permit));
        rooms.queue.push_back(Room {
            permit,
            taken: self.0.taken.clone(),
            debt: self.0.debt.clone(),
        });
        Ok(())
    }

    fn rooms(&self) -> std::sync::MutexGuard<'_, Rooms> {
        self.0
            .rooms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The room of the message that just ended in the body.
    fn next_room(&self) -> Option<Room> {
        self.rooms().queue.pop_front()
    }

    /// The body is gone: the rooms of messages it never ended go back,
    /// and nothing more is reserved.
    fn close(&self) {
        let gone = {
            let mut rooms = self.rooms();
            rooms.closed = true;
            std::mem::take(&mut rooms.queue)
        };
        drop(gone);
    }
}

/// [`Account::reserve`] of the account in a request's extensions, if any.
pub(crate) fn reserve<T>(req: &tonic::Request<T>, encoded: usize) -> Result<(), Status> {
    req.extensions()
        .get::<Account>()
        .map_or(Ok(()), |a| a.reserve(encoded))
}

/// [`Account::check_room`] of the account in a request's extensions, if
/// any.
pub(crate) fn check_room<T>(req: &tonic::Request<T>) -> Result<(), Status> {
    req.extensions()
        .get::<Account>()
        .map_or(Ok(()), Account::check_room)
}

/// A piece of an answer's body, with the rooms of the messages whose last
/// byte it holds: HTTP/2 drops it once written (or with its stream), which
/// is progress of the connection and gives the rooms back.
struct Carried {
    bytes: Bytes,
    _rooms: Vec<Room>,
    debt: Option<Arc<Debt>>,
}

impl AsRef<[u8]> for Carried {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Carried {
    fn drop(&mut self) {
        if let Some(d) = &self.debt {
            d.progress();
        }
    }
}

/// An answer's body, handed to HTTP/2 in pieces of at most [`PIECE`]
/// bytes, each message's room with the piece holding its last byte. Rooms
/// never matched to a message (a call that failed after reserving, or
/// whose client reset it) go back when the body is dropped.
pub(crate) struct Metered {
    inner: tonic::body::Body,
    account: Account,
    /// Data from `inner` not yet handed on.
    pending: Bytes,
    /// Bytes of the current message's 5-byte header seen so far.
    head: [u8; 5],
    have: usize,
    /// Bytes of the current message's body still to come.
    left: usize,
}

impl Metered {
    pub(crate) fn new(inner: tonic::body::Body, account: Account) -> Self {
        Self {
            inner,
            account,
            pending: Bytes::new(),
            head: [0; 5],
            have: 0,
            left: 0,
        }
    }

    /// Follows `data` through the gRPC framing; the rooms of the messages
    /// that end in it.
    fn ended_in(&mut self, mut data: &[u8]) -> Vec<Room> {
        let mut rooms = Vec::new();
        while !data.is_empty() {
            if self.have < 5 {
                let take = (5 - self.have).min(data.len());
                self.head[self.have..self.have + take].copy_from_slice(&data[..take]);
                self.have += take;
                data = &data[take..];
                if self.have == 5 {
                    let [_, a, b, c, d] = self.head;
                    self.left = u32::from_be_bytes([a, b, c, d]) as usize;
                } else {
                    continue;
                }
            } else {
                let take = self.left.min(data.len());
                self.left -= take;
                data = &data[take..];
            }
            if self.have == 5 && self.left == 0 {
                self.have = 0;
                rooms.extend(self.account.next_room());
            }
        }
        rooms
    }

    /// The next piece of `pending`, carrying what ends in it.
    fn piece(&mut self) -> Bytes {
        let piece = self.pending.split_to(self.pending.len().min(PIECE));
        let rooms = self.ended_in(&piece);
        Bytes::from_owner(Carried {
            bytes: piece,
            _rooms: rooms,
            debt: self.account.0.debt.clone(),
        })
    }
}

impl Drop for Metered {
    fn drop(&mut self) {
        self.account.close();
    }
}

impl hyper::body::Body for Metered {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        if this.pending.is_empty() {
            let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                other => return Poll::Ready(other),
            };
            match frame.into_data() {
                Ok(data) => this.pending = data,
                Err(frame) => return Poll::Ready(Some(Ok(frame))),
            }
        }
        Poll::Ready(Some(Ok(Frame::data(this.piece()))))
    }

    fn is_end_stream(&self) -> bool {
        self.pending.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let inner = self.inner.size_hint();
        let pending = self.pending.len() as u64;
        let mut hint = SizeHint::new();
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper.saturating_add(pending));
        }
        hint.set_lower(inner.lower().saturating_add(pending));
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gauge() -> IntGauge {
        IntGauge::new("unsent", "unsent").expect("gauge")
    }

    fn framed(msg: &[u8]) -> Vec<u8> {
        let mut f = vec![0];
        f.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        f.extend_from_slice(msg);
        f
    }

    /// Rooms follow the framing however the bytes are cut: a message's
    /// room goes with the piece holding its last byte, never before.
    #[test]
    fn a_rooms_goes_with_its_messages_last_byte() {
        let budget = Budget::new(1 << 20, gauge());
        let clock = Arc::new(ConnClock::new());
        let account = Account::new(&budget, Some(clock.clone()));
        let (a, b) = (vec![1u8; 3000], vec![2u8; 10]);
        account.reserve(a.len()).expect("room");
        account.reserve(b.len()).expect("room");
        assert_eq!(budget.free(), (1 << 20) - 4 * UNIT);
        assert_eq!(budget.taken.get(), 4 * UNIT as i64, "the gauge");
        assert!(clock.deadline(Duration::from_secs(1)).is_some());
        let mut bytes = framed(&a);
        bytes.extend(framed(&b));
        let mut m = Metered::new(tonic::body::Body::empty(), account.clone());
        // Cut inside the first header, inside the first body, at its end,
        // and inside the second header.
        let mut held = Vec::new();
        for (from, to, ended) in [(0, 3, 0), (3, 2000, 0), (2000, 3005, 1), (3005, 3007, 0)] {
            let rooms = m.ended_in(&bytes[from..to]);
            assert_eq!(rooms.len(), ended, "{from}..{to}");
            held.extend(rooms);
        }
        drop(held);
        assert_eq!(budget.free(), (1 << 20) - UNIT, "the first room is back");
        let last = m.ended_in(&bytes[3007..]);
        assert_eq!(last.len(), 1);
        drop(last);
        assert_eq!(budget.free(), 1 << 20);
        assert_eq!(budget.taken.get(), 0, "the gauge");
        assert!(clock.deadline(Duration::from_secs(1)).is_none());
    }

    /// A body goes to HTTP/2 in pieces of at most [`PIECE`] bytes, each one
    /// written counting as progress; the message's room goes with its last
    /// piece. Dropping the body (the call reset) gives back the rooms of
    /// messages it never ended, and nothing more is reserved for it.
    #[tokio::test]
    async fn an_answer_goes_in_pieces_and_a_dropped_body_gives_its_rooms_back() {
        use http_body_util::BodyExt as _;
        let budget = Budget::new(1 << 20, gauge());
        let clock = Arc::new(ConnClock::new());
        let account = Account::new(&budget, Some(clock.clone()));
        let msg = vec![7u8; 40_000];
        account.reserve(msg.len()).expect("room");
        account.reserve(10).expect("room for a message never sent");
        assert_eq!(budget.free(), (1 << 20) - 41 * UNIT);
        let inner = tonic::body::Body::new(http_body_util::Full::new(Bytes::from(framed(&msg))));
        let mut m = Metered::new(inner, account.clone());
        let mut pieces = Vec::new();
        while let Some(f) = m.frame().await {
            pieces.push(f.expect("a frame").into_data().expect("data"));
        }
        let lens: Vec<usize> = pieces.iter().map(Bytes::len).collect();
        assert_eq!(lens, [PIECE, PIECE, 40_005 - 2 * PIECE]);
        let last = pieces.pop().expect("the last piece");
        drop(pieces);
        assert_eq!(
            budget.free(),
            (1 << 20) - 41 * UNIT,
            "held by the last piece"
        );
        drop(last);
        assert_eq!(budget.free(), (1 << 20) - UNIT);
        assert!(clock.deadline(Duration::from_secs(1)).is_some(), "one owed");
        drop(m);
        assert_eq!(budget.free(), 1 << 20, "the unsent message's room is back");
        assert_eq!(budget.taken.get(), 0, "the gauge");
        assert!(clock.deadline(Duration::from_secs(1)).is_none());
        let e = account.reserve(10).expect_err("the body is gone");
        assert_eq!(e.code(), tonic::Code::Cancelled);
        assert_eq!(budget.free(), 1 << 20);
    }

    /// A call that begins to owe starts its clock then, whatever it did
    /// before, and the connection's reader is woken to arm the deadline.
    #[test]
    fn owing_starts_the_clock_and_wakes_the_reader() {
        struct Flag(std::sync::atomic::AtomicBool);
        impl std::task::Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let budget = Budget::new(1 << 20, gauge());
        let clock = Arc::new(ConnClock::new());
        let flag = Arc::new(Flag(std::sync::atomic::AtomicBool::new(false)));
        clock.register(&std::task::Waker::from(flag.clone()));
        let account = Account::new(&budget, Some(clock.clone()));
        std::thread::sleep(Duration::from_millis(20));
        let before = Instant::now();
        account.reserve(10).expect("room");
        let at = clock.deadline(Duration::ZERO).expect("owed");
        assert!(
            at + Duration::from_millis(2) >= before,
            "started when it began to owe"
        );
        assert!(flag.0.load(Ordering::SeqCst), "the reader was woken");
        // Paid, idle, and owing again (a stream's next chunk after a long
        // read): the clock starts again then.
        let mut m = Metered::new(tonic::body::Body::empty(), account.clone());
        drop(m.ended_in(&framed(&[1; 10])));
        assert!(clock.deadline(Duration::ZERO).is_none(), "paid");
        std::thread::sleep(Duration::from_millis(30));
        flag.0.store(false, Ordering::SeqCst);
        clock.register(&std::task::Waker::from(flag.clone()));
        let again = Instant::now();
        account.reserve(10).expect("room");
        let at = clock.deadline(Duration::ZERO).expect("owed again");
        assert!(at + Duration::from_millis(2) >= again, "started again");
        assert!(flag.0.load(Ordering::SeqCst), "woken again");
    }

    /// The deadline follows the call that has gone longest without
    /// progress: another call's pieces written on the same connection do
    /// not hide one that stopped, and a call's end takes its debt away.
    #[test]
    fn one_calls_progress_does_not_hide_another_that_stopped() {
        let budget = Budget::new(1 << 20, gauge());
        let clock = Arc::new(ConnClock::new());
        let stopped = Account::new(&budget, Some(clock.clone()));
        let reading = Account::new(&budget, Some(clock.clone()));
        stopped.reserve(10).expect("room");
        let first = clock.deadline(Duration::ZERO).expect("owed");
        std::thread::sleep(Duration::from_millis(30));
        reading.reserve(10).expect("room");
        for _ in 0..3 {
            reading.0.debt.as_ref().expect("debt").progress();
        }
        assert_eq!(
            clock.deadline(Duration::ZERO),
            Some(first),
            "the stopped call"
        );
        let mut m = Metered::new(tonic::body::Body::empty(), stopped.clone());
        drop(m.ended_in(&framed(&[1; 5])));
        drop(m);
        drop(stopped);
        let now = clock
            .deadline(Duration::ZERO)
            .expect("the reading call owes");
        assert!(
            now >= first + Duration::from_millis(25),
            "the reading call's own"
        );
        drop(reading);
        assert!(clock.deadline(Duration::ZERO).is_none(), "nothing owed");
        assert_eq!(budget.free(), 1 << 20);
    }

    /// An answer that does not fit is refused by name, and takes nothing.
    #[test]
    fn an_answer_over_the_room_is_refused() {
        let budget = Budget::new(8 * UNIT as u64, gauge());
        let account = Account::new(&budget, None);
        account.reserve(4000).expect("room");
        let e = account.reserve(5000).expect_err("no room");
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(
            e.message().contains("grpc.max_unsent_bytes = 8192"),
            "{}",
            e.message()
        );
        assert_eq!(budget.free(), 4 * UNIT);
        let e = account.check_room().expect_err("under 1 MiB free");
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        Account::new(&Budget::new(2 << 20, gauge()), None)
            .check_room()
            .expect("2 MiB free");
        drop(account);
        assert_eq!(budget.free(), 8 * UNIT);
        assert_eq!(budget.taken.get(), 0, "the gauge");
    }
}
