//! What one call may spend: a deadline, checked inside the loops by the
//! blocking task itself (it stops; it is not merely abandoned), and for
//! the paged methods a budget of ledgers read and of response bytes,
//! counted as the JSON is written, so a page ends early (partial, with a
//! cursor) instead of being built whole and refused afterwards.

use std::io;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;

use crate::error::{RpcError, RpcResult};

/// Bytes kept free for a page's closing fields (range, cursor).
pub(crate) const TRAILER: usize = 1024;

/// How often (bytes written) the writer looks at the clock.
const CLOCK_EVERY: usize = 256 << 10;

/// The limits of the paged methods (`[jsonrpc]`).
#[derive(Debug, Clone, Copy)]
pub struct PageBudget {
    /// JSON bytes of one page's items (`jsonrpc.max_page_bytes`); the
    /// first item may take up to the response limit.
    pub max_bytes: usize,
    /// Ledgers one page call reads (`jsonrpc.max_page_ledgers`).
    pub max_ledgers: u32,
}

/// One call's clock, and the most its answer may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call {
    /// Past it the call fails with a timeout (`query.timeout_ms`, or what
    /// is left of its batch's).
    pub deadline: Instant,
    /// Past it a page takes no further item: half the deadline, so a
    /// partial page still reaches the client in time.
    pub soft: Instant,
    /// The whole timeout, for messages.
    pub timeout: Duration,
    /// Bytes the answer may take besides the response limit: what is left
    /// of its batch's budget (`usize::MAX` for a call on its own).
    pub cap: usize,
}

impl Call {
    pub(crate) fn new(start: Instant, timeout: Duration) -> Self {
        Self {
            deadline: start + timeout,
            soft: start + timeout / 2,
            timeout,
            cap: usize::MAX,
        }
    }

    /// This call inside a batch: it ends by the batch's deadline (and
    /// stops taking page items by the batch's soft one), and its answer
    /// takes at most `cap` bytes.
    pub(crate) fn within(self, batch: &Call, cap: usize) -> Self {
        Self {
            deadline: self.deadline.min(batch.deadline),
            soft: self.soft.min(batch.soft),
            timeout: self.timeout,
            cap,
        }
    }

    /// The timeout error once the deadline has passed.
    pub(crate) fn check(&self) -> RpcResult<()> {
        if Instant::now() >= self.deadline {
            return Err(self.timed_out());
        }
        Ok(())
    }

    pub(crate) fn timed_out(&self) -> RpcError {
        RpcError::Timeout(self.timeout.as_millis() as u64)
    }

    /// Whether a page should stop taking items (it has at least one).
    pub(crate) fn soft_passed(&self) -> bool {
        Instant::now() >= self.soft
    }
}

/// Why the writer refused a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The byte budget would be passed.
    Full,
    /// The deadline passed.
    Deadline,
}

/// A JSON text being written under a byte cap and a deadline. Writes
/// past either fail (the serializer stops there); [`Sink::stopped`] says
/// which.
#[derive(Debug)]
pub(crate) struct Sink {
    buf: Vec<u8>,
    cap: usize,
    deadline: Instant,
    next_clock: usize,
    stop: Option<Stop>,
}

impl Sink {
    /// An empty text that may grow to `cap` bytes; `reserve` of them are
    /// allocated now (the page's expected size, so it is not copied as
    /// it grows).
    pub(crate) fn new(cap: usize, reserve: usize, deadline: Instant) -> Self {
        Self {
            buf: Vec::with_capacity(reserve.min(cap)),
            cap,
            deadline,
            next_clock: CLOCK_EVERY,
            stop: None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn set_cap(&mut self, cap: usize) {
        self.cap = cap;
    }

    /// Cuts the text back to `len` bytes (an item that did not fit), and
    /// forgets why the write failed.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
        self.stop = None;
    }

    /// Why the last write failed, if one did.
    pub(crate) fn stopped(&self) -> Option<Stop> {
        self.stop
    }

    /// Appends bytes that must fit (punctuation, closing fields).
    pub(crate) fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        io::Write::write_all(self, bytes)
    }

    /// The text as the method's result.
    pub(crate) fn finish(self) -> RpcResult<Box<RawValue>> {
        let text = String::from_utf8(self.buf)
            .map_err(|e| RpcError::Internal(format!("a page is not UTF-8: {e}")))?;
        RawValue::from_string(text)
            .map_err(|e| RpcError::Internal(format!("a page is not JSON: {e}")))
    }
}

impl io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.buf.len() + bytes.len() > self.cap {
            self.stop = Some(Stop::Full);
            return Err(io::Error::other("the page's byte budget is spent"));
        }
        if self.buf.len() >= self.next_clock {
            self.next_clock = self.buf.len() + CLOCK_EVERY;
            if Instant::now() >= self.deadline {
                self.stop = Some(Stop::Deadline);
                return Err(io::Error::other("the call's deadline passed"));
            }
        }
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A failed write of a page's fixed parts: past the deadline it is the
/// timeout, otherwise the budget left no room for them (a bug: the
/// trailer is reserved).
pub(crate) fn write_failed(sink: &Sink, call: &Call, e: impl std::fmt::Display) -> RpcError {
    match sink.stopped() {
        Some(Stop::Deadline) => call.timed_out(),
        Some(Stop::Full) => RpcError::NoRoom(format!(
            "the answer has no room left ({} bytes): this batch's budget \
             (jsonrpc.max_batch_bytes) is spent; send this call in another request",
            call.cap
        )),
        None => RpcError::Internal(format!("writing the page: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn writes_past_the_cap_fail_and_say_why() {
        let far = Instant::now() + Duration::from_secs(60);
        let mut s = Sink::new(8, 8, far);
        s.write_all(b"[1,2").expect("fits");
        assert!(s.write_all(b",3333").is_err());
        assert_eq!(s.stopped(), Some(Stop::Full));
        s.truncate(4);
        assert_eq!(s.stopped(), None);
        s.set_cap(16);
        s.raw(b"]").expect("fits");
        assert_eq!(s.finish().expect("json").get(), "[1,2]");
    }

    #[test]
    fn writes_after_the_deadline_fail() {
        let past = Instant::now();
        let mut s = Sink::new(usize::MAX, 0, past);
        let chunk = vec![b' '; CLOCK_EVERY];
        s.write_all(&chunk)
            .expect("the clock is read every 256 KiB");
        assert!(s.write_all(b"x").is_err());
        assert_eq!(s.stopped(), Some(Stop::Deadline));
    }
}
