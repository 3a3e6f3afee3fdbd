//! The threads the query APIs' blocking reads run on: a pool of their own
//! of at most `query.read_threads`, apart from tokio's shared blocking
//! pool.
//!
//! On tokio's shared pool a read started a thread whenever none was idle
//! at that instant, up to 512, and each kept its memory: a read replica
//! under 16 lookups in flight ran at 97 to 387 threads and up to 554 MB
//! (docs/benchmarks.md, "Read threads of their own"), and a
//! stalled object store would hold one thread per waiting read. Here the
//! reading threads are bounded; reads past them wait in line, their wait
//! within the caller's deadline, and a read whose caller has gone (its
//! deadline passed, or the client left) before it started is dropped
//! unrun (what it holds is freed when a thread takes it off the line).
//! GetStatus and the Stellar RPC's info calls (getHealth, getNetwork,
//! getVersionInfo: at most the newest ledger's head and the oldest close
//! time, cached) stay on tokio's pool, so they answer while reads wait in
//! line.
//!
//! A read runs on a thread of a runtime nothing drives: it must not
//! `tokio::spawn` or use `tokio::time` (a replica's requests go to the
//! daemon's runtime through its handle).
//!
//! The pool is a tokio runtime of its own (a current-thread runtime that
//! nothing drives, and up to `read_threads` blocking threads named
//! `ledgerstore-read`), so a read's [`tokio::task::JoinHandle`] is
//! awaited as before. A read replica's object-store requests run on the
//! daemon's runtime, never here: a read that waits for one (and any
//! blocking file read nested in it) does not wait for a thread of this
//! pool.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use prometheus::IntGauge;
use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::{JoinError, JoinHandle};

/// How long an idle read thread stays before it exits.
const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// A read waiting in line ([`Read`]'s state).
const WAITING: u8 = 0;
/// A read a thread has taken off the line.
const STARTED: u8 = 1;
/// A read whose caller dropped it while it waited.
const ABANDONED: u8 = 2;

/// What `/metrics` shows of the pool: reads waiting in line for a thread
/// and reads running on one (`ledgerstore_reads_waiting`,
/// `ledgerstore_reads_running`).
#[derive(Debug, Clone)]
pub struct ReadGauges {
    pub waiting: IntGauge,
    pub running: IntGauge,
}

impl ReadGauges {
    /// Gauges registered nowhere.
    #[cfg(test)]
    pub fn unregistered() -> Self {
        let g = |name: &str| IntGauge::new(name, name).expect("a valid gauge name");
        Self {
            waiting: g("reads_waiting"),
            running: g("reads_running"),
        }
    }
}

/// Takes one off `running` when the read ends, panics included.
struct Running(IntGauge);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// A read counted waiting until [`Counted::keep`]. Dropped before that
/// (unwinding out of a spawn that panicked), it leaves the line as a
/// dropped [`Read`] does: tokio may have queued the task before it
/// panicked, and a thread that takes it later must not count it out
/// again.
struct Counted<'a> {
    state: &'a AtomicU8,
    gauge: Option<&'a IntGauge>,
}

impl<'a> Counted<'a> {
    fn waiting(state: &'a AtomicU8, gauge: &'a IntGauge) -> Self {
        gauge.inc();
        Self {
            state,
            gauge: Some(gauge),
        }
    }

    /// The read is in line: its [`Read`] or its thread counts it out.
    fn keep(mut self) {
        self.gauge = None;
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        if let Some(g) = self.gauge
            && self
                .state
                .compare_exchange(WAITING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            g.dec();
        }
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct ReadPool {
    /// Taken on drop, to shut down without blocking an async context.
    rt: Option<Runtime>,
    handle: Handle,
    gauges: ReadGauges,
}

impl ReadPool {
    /// A pool of at most `threads` reading threads (at least 1), counting
    /// its reads in `gauges`.
    pub fn new(threads: usize, gauges: ReadGauges) -> std::io::Result<Self> {
        let threads = threads.max(1);
        // A current-thread runtime that nothing drives: only its blocking
        // threads run, each named `ledgerstore-read`.
        let rt = Builder::new_current_thread()
            .max_blocking_threads(threads)
            .thread_keep_alive(KEEP_ALIVE)
            .thread_name("ledgerstore-read")
            .build()?;
        let handle = rt.handle().clone();
        Ok(Self {
            rt: Some(rt),
            handle,
            gauges,
        })
    }

    /// Runs `f` on one of the pool's threads (in line behind the others
    /// when all are busy). Dropping the [`Read`] before `f` has started
    /// keeps it from starting.
    pub fn spawn<T, F>(&self, f: F) -> Read<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let state = Arc::new(AtomicU8::new(WAITING));
        // Counted out again if the spawn panics (tokio does when the OS
        // refuses the pool its first thread, after queueing the task: a
        // later thread may still run it, unawaited, and does not count it
        // out twice).
        let counted = Counted::waiting(&state, &self.gauges.waiting);
        let (mine, gauges) = (state.clone(), self.gauges.clone());
        let job = self.handle.spawn_blocking(move || {
            // A read its caller dropped, or whose spawn panicked after
            // tokio queued it, has left the line already (tokio's abort
            // keeps a dropped one from running, unless a thread took it in
            // the same instant: then it runs, unawaited).
            if mine.swap(STARTED, Ordering::AcqRel) == WAITING {
                gauges.waiting.dec();
            }
            gauges.running.inc();
            let _running = Running(gauges.running);
            f()
        });
        counted.keep();
        Read {
            job,
            state,
            waiting: self.gauges.waiting.clone(),
        }
    }
}

/// A read on the pool: its answer, awaited; dropped unanswered (a
/// deadline, a client gone), it aborts the read if it has not started (one
/// that runs finishes on its thread).
#[derive(Debug)]
pub struct Read<T> {
    job: JoinHandle<T>,
    state: Arc<AtomicU8>,
    waiting: IntGauge,
}

impl<T> Future for Read<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.job).poll(cx)
    }
}

impl<T> Drop for Read<T> {
    fn drop(&mut self) {
        let left =
            self.state
                .compare_exchange(WAITING, ABANDONED, Ordering::AcqRel, Ordering::Acquire);
        if left.is_ok() {
            self.waiting.dec();
        }
        self.job.abort();
    }
}

impl Drop for ReadPool {
    fn drop(&mut self) {
        // Reads still running finish on their own threads; nothing waits
        // for them (a drop may happen on an async worker).
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// However many reads are asked for at once, at most `threads` run
    /// together, and every one of them runs and answers.
    #[test]
    fn reads_past_the_threads_wait_in_line_and_all_answer() {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let pool = ReadPool::new(3, ReadGauges::unregistered()).expect("pool");
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let gate = Arc::new(std::sync::Mutex::new(gate));
        let handles: Vec<_> = (0..40)
            .map(|i| {
                let (running, most, gate) = (running.clone(), most.clone(), gate.clone());
                pool.spawn(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    // Each read waits for one release: the first three
                    // hold every thread until the test lets them go.
                    gate.lock().expect("gate").recv().expect("released");
                    running.fetch_sub(1, Ordering::SeqCst);
                    i * 2
                })
            })
            .collect();
        // Wait (bounded) until three reads hold the three threads.
        for _ in 0..500 {
            if running.load(Ordering::SeqCst) == 3 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(running.load(Ordering::SeqCst), 3, "three threads busy");
        for _ in 0..40 {
            release.send(()).expect("release");
        }
        let got: Vec<usize> = rt.block_on(async {
            let mut got = Vec::new();
            for h in handles {
                got.push(h.await.expect("a read"));
            }
            got
        });
        assert_eq!(got, (0..40).map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 3, "at most three at once");
        // Dropped inside an async context, it does not block or panic.
        rt.block_on(async move { drop(pool) });
    }

    /// A read dropped while it waits in line (its caller's deadline, a
    /// client gone) never runs; the ones still awaited do. The gauges
    /// count each read waiting, then running, and a dropped one leaves the
    /// line at once.
    #[test]
    fn a_read_dropped_before_it_starts_never_runs() {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let gauges = ReadGauges::unregistered();
        let counts = || (gauges.waiting.get(), gauges.running.get());
        let pool = ReadPool::new(1, gauges.clone()).expect("pool");
        let ran = Arc::new(AtomicUsize::new(0));
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let (started, seen) = std::sync::mpsc::channel::<()>();
        let first = pool.spawn(move || {
            started.send(()).expect("started");
            gate.recv().expect("released");
        });
        // The only thread is busy: the next read waits in line.
        seen.recv().expect("the first read runs");
        let dropped = {
            let ran = ran.clone();
            pool.spawn(move || ran.fetch_add(1, Ordering::SeqCst))
        };
        assert_eq!(counts(), (1, 1), "one running, one in line");
        drop(dropped);
        assert_eq!(counts(), (0, 1), "a dropped read leaves the line");
        let later = {
            let ran = ran.clone();
            pool.spawn(move || ran.fetch_add(10, Ordering::SeqCst))
        };
        assert_eq!(counts(), (1, 1));
        release.send(()).expect("release");
        rt.block_on(async {
            first.await.expect("first");
            later.await.expect("later");
        });
        assert_eq!(ran.load(Ordering::SeqCst), 10, "the dropped read ran");
        assert_eq!(counts(), (0, 0), "every read has ended");
    }

    /// A read counted waiting by a spawn that then panicked leaves the
    /// count once: the thread that later takes its task (tokio queues it
    /// before it panics) does not count it out again. One the spawn put in
    /// line stays counted until its thread takes it.
    #[test]
    fn a_spawn_that_panics_takes_its_read_out_of_the_count_once() {
        let gauges = ReadGauges::unregistered();
        let state = AtomicU8::new(WAITING);
        let panicked = std::panic::catch_unwind(|| {
            let _counted = Counted::waiting(&state, &gauges.waiting);
            assert_eq!(gauges.waiting.get(), 1);
            panic!("OS can't spawn worker thread");
        });
        assert!(panicked.is_err());
        assert_eq!(
            gauges.waiting.get(),
            0,
            "the failed spawn's read is not waiting"
        );
        // The queued task runs later, on another spawn's thread.
        assert_eq!(state.swap(STARTED, Ordering::AcqRel), ABANDONED);
        let kept = AtomicU8::new(WAITING);
        Counted::waiting(&kept, &gauges.waiting).keep();
        assert_eq!(gauges.waiting.get(), 1, "a read in line stays counted");
        assert_eq!(kept.load(Ordering::Acquire), WAITING);
    }
}
