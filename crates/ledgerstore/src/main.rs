//! `ledgerstore`: ingest blockchain ledgers and serve transactions by hash.

use anyhow::Result;
use clap::Parser;

mod cli;
mod cli_lake;
mod cmd;
mod cold;

/// jemalloc instead of glibc's malloc (reth and TiKV do the same): a
/// ledger read allocates and frees ~200 KB buffers, which glibc serves with
/// mmap and munmap (page faults, zeroing) per read, and its per-thread
/// arenas grew the daemon to ~600 MB under StreamLedgers load
/// (docs/benchmarks.md, "Daemon CPU per lookup").
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
mod config;
mod lake;
mod open;
mod rlimit;

fn main() {
    limit_malloc_arenas();
    rlimit::raise_open_files();
    let args = cli::Cli::parse();
    if !matches!(args.command, cli::Command::Serve(_)) {
        restore_sigpipe();
    }
    if let Err(e) = run(args) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: cli::Cli) -> Result<()> {
    let json = args.log_json;
    if !matches!(args.command, cli::Command::Serve(_)) {
        init_logging(json, "warn");
    }
    match args.command {
        cli::Command::Serve(a) => cmd::serve::run(a, json),
        cli::Command::Config(cli::ConfigCommand::Show(a)) => cmd::serve::show(a),
        cli::Command::Ingest(a) => cmd::ingest::run(a),
        cli::Command::Get(g) => cmd::get::run(g),
        cli::Command::Stats(a) => cmd::stats::run(a),
        cli::Command::Push(a) => runtime()?.block_on(cmd::push::run(a)),
        cli::Command::Publish(a) => cmd::publish::run(a),
        cli::Command::Tx(a) => runtime()?.block_on(cmd::remote::tx(a)),
        cli::Command::Ledger(a) => runtime()?.block_on(cmd::remote::ledger(a)),
        cli::Command::Check(a) => cmd::ops::check(a),
        cli::Command::Repair(a) => cmd::repair::run(a),
        cli::Command::Backup(a) => cmd::ops::backup(a),
        cli::Command::Restore(a) => cmd::ops::restore(a),
        cli::Command::Health(a) => runtime()?.block_on(cmd::ops::health(a)),
        cli::Command::BenchQuery(a) => cmd::bench_query::run(a),
    }
}

/// RocksDB's C++ allocations still go to glibc's malloc, which keeps up
/// to 8 arenas a core, each holding on to what its threads freed: over
/// 10,000 pubnet ledgers ingest's peak RSS was 3.7–4.1 GB with the
/// default (16 arenas on 2 cores; 4.76 GB over 100,000 ledgers) and
/// 1.7 GB with 2, at the same CPU (docs/benchmarks.md, "End to end
/// at 100,000 ledgers"). An operator's `MALLOC_ARENA_MAX`, or
/// `glibc.malloc.arena_max` in `GLIBC_TUNABLES`, wins.
#[allow(unsafe_code)]
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none()
        && !std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc.arena_max"))
    {
        // SAFETY: called first in `main`, before any thread exists;
        // mallopt only sets one of malloc's tunables.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

/// A CLI piped into `head` should end quietly when the pipe closes, as
/// Unix tools do, instead of panicking in `println!`. (Rust ignores SIGPIPE
/// by default; the daemon keeps that.) The runtime's threads block it
/// ([`runtime_builder`]).
#[allow(unsafe_code)]
fn restore_sigpipe() {
    // SAFETY: called once at startup, before any thread exists; it only
    // resets a signal disposition to the OS default.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(runtime_builder().build()?)
}

/// A multi-threaded runtime whose threads block SIGPIPE. A CLI verb
/// restores SIGPIPE's default (it ends the process) for its output
/// ([`restore_sigpipe`]), but a socket whose peer has gone must fail its
/// write with EPIPE, an error reported like any other: `writev` (what
/// HTTP/2 writes with) sends SIGPIPE, which killed `bench-query` without a
/// word when the daemon refused connections past its limits. A SIGPIPE a
/// write raises goes to the thread that wrote, so blocking it there is
/// enough for what runs in spawned tasks: connections' I/O once set up
/// (hyper's and h2's connection tasks, which the object-store clients use
/// too) and `remote::channel`'s connect. A future given to `block_on` runs
/// on the verb's own thread, so a connection it sets up itself (an
/// object-store client's TLS handshake) writes there: a peer that reset it
/// fails the next write with ECONNRESET, and only a write after that could
/// raise SIGPIPE. New socket writes belong in a spawned task.
pub(crate) fn runtime_builder() -> tokio::runtime::Builder {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    b.enable_all().on_thread_start(block_sigpipe);
    b
}

/// Blocks SIGPIPE on the calling thread (a SIGPIPE raised by its own
/// write stays pending, never delivered; the write fails with EPIPE).
#[allow(unsafe_code)]
fn block_sigpipe() {
    // SAFETY: initializes a local signal set and changes only the calling
    // thread's signal mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Logs to stderr; RUST_LOG overrides `default_level`.
/// libmdbx's own messages (target `libmdbx`: readahead decisions, meta
/// page reads, one set per table at every open) are engine internals: they
/// log at `warn` unless a directive names the target.
fn log_directives(directives: &str) -> String {
    if directives.contains("libmdbx") {
        directives.to_string()
    } else {
        format!("{directives},libmdbx=warn")
    }
}

pub fn init_logging(json: bool, default_level: &str) {
    let directives = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default_level.to_string());
    let filter = tracing_subscriber::EnvFilter::try_new(log_directives(&directives))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(log_directives(default_level)));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
