//! Data lakes for the tests, and the real servers that serve them: a
//! SEP-54 lake cut from the 20 consecutive pubnet ledgers (one ledger a
//! file), versitygw (S3, checking signatures), fake-gcs-server (GCS) and a
//! static HTTP server with injectable faults (`http_lake.py`). Every
//! server listens on 127.0.0.1 and dies with its guard.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use stellar_xdr::{LedgerCloseMetaBatch, Limits, ReadXdr, WriteXdr};

pub const FIRST: u32 = 63_092_982;
pub const LAST: u32 = 63_093_001;
pub const PUBNET: &str = "Public Global Stellar Network ; September 2015";
/// Files per partition folder of the test lakes: the 20 ledgers span
/// partitions 63092976-63092983, 63092984-63092991, ….
pub const PER_PARTITION: u32 = 8;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../stellar/testdata")
        .join(name)
}

/// The SEP-54 key of `seq`'s file, written out here independently of the
/// crate's own key function: `hex(0xFFFFFFFF - start)--start-end/` for the
/// partition, `hex(0xFFFFFFFF - seq)--seq.xdr.zst` for the file.
pub fn key(seq: u32) -> String {
    let p = seq / PER_PARTITION * PER_PARTITION;
    format!(
        "{:08X}--{p}-{}/{:08X}--{seq}.xdr.zst",
        u32::MAX - p,
        p + PER_PARTITION - 1,
        u32::MAX - seq
    )
}

/// The lake's `.config.json`.
pub fn config_json() -> String {
    format!(
        r#"{{"networkPassphrase":"{PUBNET}","version":"1.0","compression":"zstd","ledgersPerBatch":1,"batchesPerPartition":{PER_PARTITION}}}"#
    )
}

/// The lake's objects: (key, bytes) for `.config.json` and one zstd
/// `LedgerCloseMetaBatch` per ledger.
pub fn objects() -> Vec<(String, Vec<u8>)> {
    let raw = std::fs::read(fixture("FC3D4709--63092982-63093001.xdr.zst")).expect("fixture");
    let plain = zstd::decode_all(&raw[..]).expect("zstd");
    let batch = LedgerCloseMetaBatch::from_xdr(&plain, Limits::none()).expect("batch");
    let mut out = vec![(".config.json".to_string(), config_json().into_bytes())];
    for (i, lcm) in batch.ledger_close_metas.iter().enumerate() {
        let seq = FIRST + i as u32;
        let one = LedgerCloseMetaBatch {
            start_sequence: seq,
            end_sequence: seq,
            ledger_close_metas: vec![lcm.clone()].try_into().expect("one"),
        };
        let xdr = one.to_xdr(Limits::none()).expect("xdr");
        out.push((key(seq), zstd::encode_all(&xdr[..], 3).expect("zstd")));
    }
    out
}

/// Writes the objects whose ledger is at most `through` (and the config)
/// under `root`.
pub fn write_lake(root: &Path, through: u32) {
    for (k, v) in objects() {
        if k != ".config.json" && seq_of(&k) > through {
            continue;
        }
        let p = root.join(&k);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, v).expect("write object");
    }
}

/// The ledger of a batch file's key.
pub fn seq_of(key: &str) -> u32 {
    let name = key.rsplit('/').next().expect("name");
    let seq = name
        .split("--")
        .nth(1)
        .and_then(|s| s.strip_suffix(".xdr.zst"))
        .expect("a batch file key");
    seq.parse().expect("seq")
}

/// A server process, killed on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub name: &'static str,
}

impl Server {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The static HTTP server over `dir`, with faults (see http_lake.py).
pub fn http_server(dir: &Path, fail_first: u32, exit_after: Option<u32>) -> Server {
    http_server_on(dir, 0, fail_first, exit_after)
}

/// As [`http_server`], on `port` (0: any free one).
pub fn http_server_on(dir: &Path, port: u16, fail_first: u32, exit_after: Option<u32>) -> Server {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lake_util/http_lake.py");
    let mut c = Command::new("python3");
    c.arg(script)
        .arg(dir)
        .args(["--port", &port.to_string()])
        .args(["--fail-first", &fail_first.to_string()]);
    if let Some(k) = exit_after {
        c.args(["--exit-after", &k.to_string()]);
    }
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3");
    let out = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).expect("port line");
    let port = line
        .trim()
        .strip_prefix("PORT ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("http_lake.py printed {line:?}"));
    Server {
        child,
        port,
        name: "http",
    }
}

/// A free loopback port (bound, then released for the server to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Waits until something accepts TCP connections on `port`.
pub fn wait_listening(port: u16, what: &str) {
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{what} did not listen on {port} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The Go-installed servers, by `scripts/lake-servers.sh` (installs them
/// when missing). `None` outside CI when Go is missing.
pub fn go_servers() -> Option<(PathBuf, PathBuf)> {
    let mut p = crate::common::installed("lake-servers.sh", &["versitygw", "fake-gcs-server"])?;
    let gcs = p.pop()?;
    Some((p.pop()?, gcs))
}

/// fake-gcs-server on a free port, over HTTP, in memory, seeded with every
/// file under `data` (`data/<bucket>/<key>`).
pub fn gcs_server(bin: &Path, data: &Path) -> Server {
    let port = free_port();
    let child = Command::new(bin)
        .args([
            "-scheme",
            "http",
            "-host",
            "127.0.0.1",
            "-backend",
            "memory",
        ])
        .args(["-port", &port.to_string()])
        // Object GETs by path (`/<bucket>/<key>`, which object_store uses)
        // are served only to requests for the public host.
        .args(["-public-host", &format!("127.0.0.1:{port}")])
        .args(["-log-level", "error"])
        .arg("-data")
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("fake-gcs-server");
    let s = Server {
        child,
        port,
        name: "fake-gcs-server",
    };
    wait_listening(port, "fake-gcs-server");
    s
}

/// The S3 root user of the versitygw the tests start.
pub const S3_KEY: &str = "ledgerstore-test";
pub const S3_SECRET: &str = "ledgerstore-test-secret";

/// versitygw on a free port serving `root` (its posix backend: each
/// directory under it is a bucket, each file below an object), checking
/// every request's SigV4 signature against the root user's key.
pub fn s3_server(bin: &Path, root: &Path) -> Server {
    let port = free_port();
    // Object metadata goes to a sidecar directory, outside the root (and
    // not sharing its name as a prefix, which versitygw refuses).
    let sidecar = root.parent().expect("parent").join("vgw-sidecar");
    std::fs::create_dir_all(&sidecar).expect("sidecar");
    let child = Command::new(bin)
        .args(["--access", S3_KEY, "--secret", S3_SECRET])
        .args(["--port", &format!("127.0.0.1:{port}")])
        .args(["--region", "us-east-1"])
        .arg("posix")
        .arg("--sidecar")
        .arg(&sidecar)
        .args(["--default-etag", "placed-by-the-test"])
        .arg(root)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("versitygw");
    let s = Server {
        child,
        port,
        name: "versitygw",
    };
    wait_listening(port, "versitygw");
    s
}
