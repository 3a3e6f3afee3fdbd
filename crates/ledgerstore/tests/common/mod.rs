//! Helpers shared by the binary's integration tests.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use ledgerstore_backends::Backends;
use ledgerstore_store::{Ledgerstore, StoreOptions};
use ledgerstore_synth::{Synth, SynthConfig};

/// Small shape used by the tests: 12 tx of 600 B, 8 KB ledgers.
pub const TX_PER_LEDGER: u32 = 12;
pub const TX_BYTES: usize = 600;
pub const LEDGER_BYTES: usize = 8192;

pub fn synth(seed: u64) -> Synth {
    Synth::new(SynthConfig::with_sizes(
        seed,
        TX_PER_LEDGER,
        TX_BYTES,
        LEDGER_BYTES,
    ))
}

/// The binary. A data dir remembers its MDBX geometry, so commands that
/// reopen a test's dir need no engine flags (issue 19).
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ledgerstore"))
}

/// `ledgerstore ingest --synthetic` with the small shape and small engines.
pub fn ingest_cmd(dir: &Path, layout: &str, ledgers: u32, batch: u32, seed: u64) -> Command {
    let mut c = bin();
    c.args(["ingest", "--synthetic", "--no-progress", "--layout", layout])
        .arg("--data-dir")
        .arg(dir)
        .args(["--ledgers", &ledgers.to_string()])
        .args(["--batch-ledgers", &batch.to_string()])
        .args(["--tx-per-ledger", &TX_PER_LEDGER.to_string()])
        .args(["--tx-bytes", &TX_BYTES.to_string()])
        .args(["--ledger-bytes", &LEDGER_BYTES.to_string()])
        .args(["--seed", &seed.to_string()])
        .args(small_engine_flags());
    c
}

/// `ledgerstore ingest --synthetic` into an `indexed` dir, in one batch
/// of `ledgers` ledgers of `txs` transactions of `tx_bytes` each and
/// `ledger_bytes` of their own, with no other engine flag: sizes chosen to
/// make bulk writes.
pub fn bulk_ingest_cmd(
    dir: &Path,
    ledgers: u32,
    txs: u32,
    tx_bytes: usize,
    ledger_bytes: usize,
) -> Command {
    let mut c = bin();
    c.args([
        "ingest",
        "--synthetic",
        "--no-progress",
        "--layout",
        "indexed",
    ])
    .arg("--data-dir")
    .arg(dir)
    .args(["--ledgers", &ledgers.to_string()])
    .args(["--batch-ledgers", &ledgers.to_string()])
    .args(["--tx-per-ledger", &txs.to_string()])
    .args(["--tx-bytes", &tx_bytes.to_string()])
    .args(["--ledger-bytes", &ledger_bytes.to_string()])
    .args(["--seed", "3"]);
    c
}

pub fn small_engine_flags() -> [&'static str; 6] {
    [
        "--rocksdb.write-buffer-mb",
        "1",
        "--mdbx.max-size-gib",
        "1",
        "--mdbx.growth-step-mib",
        "4",
    ]
}

/// `ledgerstore check` on a stopped data dir must pass; returns its output.
pub fn assert_check_passes(dir: &Path) -> String {
    let mut c = bin();
    c.args(["check", "--data-dir"])
        .arg(dir)
        .args(small_engine_flags());
    let o = run(c);
    assert!(o.status.success(), "check: {}{}", stdout(&o), stderr(&o));
    stdout(&o)
}

/// Whether a Go-installed tool (grpcurl, ghz) can be had: the tool itself or
/// `go` to install it. In CI it must be; elsewhere the caller skips.
pub fn go_tool_available(tool: &str, version_flag: &str) -> bool {
    let have = |cmd: &str, arg: &str| Command::new(cmd).arg(arg).output().is_ok();
    if have(tool, version_flag) || have("go", "version") {
        return true;
    }
    assert!(
        std::env::var("CI").is_err(),
        "CI must be able to install {tool} (needs go)"
    );
    eprintln!("SKIPPED: neither {tool} nor go is installed");
    false
}

/// Runs `scripts/<script>` (an installer that prints `key=PATH` lines) and
/// returns the paths of `keys`, in order. `None` outside CI when it fails
/// (a tool it needs is missing); in CI a failure is a test failure.
pub fn installed(script: &str, keys: &[&str]) -> Option<Vec<std::path::PathBuf>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new("bash")
        .arg(root.join("scripts").join(script))
        .stderr(std::process::Stdio::inherit())
        .output();
    let o = match o {
        Ok(o) if o.status.success() => o,
        other => {
            assert!(
                std::env::var("CI").is_err(),
                "CI must install what scripts/{script} installs: {other:?}"
            );
            eprintln!("SKIPPED: scripts/{script} failed: {other:?}");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&o.stdout);
    let find = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| panic!("scripts/{script} printed no {k}=: {text}"))
    };
    Some(keys.iter().map(|k| find(k)).collect())
}

pub fn run(mut c: Command) -> Output {
    c.output().expect("spawn ledgerstore")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Opens a data dir in-process the way the binary does (small engines).
pub fn open_store(dir: &Path) -> Ledgerstore {
    let mut b = Backends::for_tests();
    b.rocks_block_cache_bytes = None;
    Ledgerstore::open(
        dir,
        StoreOptions {
            create: false,
            ..StoreOptions::default()
        },
        &b,
    )
    .expect("open store")
}

/// Reads a raw socket until the daemon closes it (EOF or reset); fails if
/// it is still open after 20 s. Returns what it sent.
pub fn until_closed(s: &mut std::net::TcpStream) -> Vec<u8> {
    use std::io::Read;
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .expect("timeout");
    let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
                ) =>
            {
                return got;
            }
            Err(e) => panic!(
                "the daemon kept a connection open ({e}) after sending {}",
                String::from_utf8_lossy(&got)
            ),
        }
        assert!(got.len() < 1 << 20, "bytes without end");
    }
}
