//! Disk full: the data dir on a size-capped tmpfs. Ingest until space runs
//! out; the daemon must refuse with RESOURCE_EXHAUSTED naming the disk,
//! keep serving queries, lose and corrupt nothing, and resume ingest once
//! the filesystem is enlarged (`mount -o remount,size=…`).
//!
//! Needs root to mount (CI runs as root); elsewhere it says so and passes.

mod common;
mod daemon_util;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use daemon_util::Daemon;
use ledgerstore_proto::v1 as pb;

/// A tmpfs mounted for the test, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).expect("mkdir");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(at.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let s = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .expect("remount");
        assert!(s.success(), "remount");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Writes zeros to `path` until the filesystem is full (bounded by its
/// size: 1 MiB chunks, at most 1024 of them).
fn fill(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).expect("ballast");
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..1024 {
        if f.write_all(&chunk).is_err() {
            break;
        }
    }
}

fn push(d: &Daemon, ledgers: u32) -> std::process::Output {
    let mut c = bin();
    c.args(["push", "--synthetic", "--endpoint", &d.grpc])
        .args(["--ledgers", &ledgers.to_string()])
        .args(["--tx-per-ledger", "12", "--tx-bytes", "4000"])
        .args([
            "--ledger-bytes",
            "16384",
            "--seed",
            "5",
            "--request-ledgers",
            "4",
        ]);
    run(c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_full_refuses_clearly_keeps_serving_and_resumes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let Some(fs) = Tmpfs::mount(&tmp.path().join("mnt"), "64m") else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let dir = fs.0.join("data");
    // Enough to fill 64 MiB even with block-compressed bodies (synthetic
    // transactions share their ledger's accounts, so blocks of them
    // compress several times better than each alone).
    let total = 6000u32;
    let mut d = Daemon::start(
        &dir,
        &[
            "--ingest.bulk-batch-ledgers",
            "8",
            "--limits.min-free-disk-mb",
            "24",
        ],
    )
    .await;
    let o = push(&d, total);
    assert!(!o.status.success(), "64 MiB cannot hold {total} ledgers");
    let err = stderr(&o);
    assert!(
        err.contains("Some resource has been exhausted"),
        "RESOURCE_EXHAUSTED: {err}"
    );
    assert!(
        err.contains("storage full, ingest paused until space is freed: disk full"),
        "{err}"
    );
    assert!(
        err.contains(&*dir.to_string_lossy()),
        "the message names the disk: {err}"
    );

    // Still up: status, health and reads of what was acked.
    let mut q = d.query().await;
    let st = d.status().await;
    assert!(
        st.has_durable_ledger && st.durable_ledger > 0,
        "something was committed"
    );
    let full_at = st.durable_ledger;
    let s = ledgerstore_synth::Synth::new(ledgerstore_synth::SynthConfig::with_sizes(
        5, 12, 4000, 16384,
    ));
    for seq in [1, full_at / 2 + 1, full_at] {
        let l = s.ledger(seq);
        let r = q
            .get_transaction(pb::GetTransactionRequest {
                hash: l.txs[0].hash.clone(),
            })
            .await
            .expect("an acked tx is served while the disk is full")
            .into_inner();
        assert_eq!(r.envelope, l.txs[0].envelope);
    }
    // Fill what is left (the engines may have freed a little since), then
    // ask again: the same clear refusal, nothing lost.
    let ballast = fs.0.join("ballast");
    fill(&ballast);
    let o = push(&d, 10);
    assert!(stderr(&o).contains("storage full"), "{}", stderr(&o));
    std::fs::remove_file(&ballast).expect("remove ballast");

    // More space: ingest resumes where it stopped.
    fs.resize("256m");
    let st = d.status().await;
    let remaining = total - st.durable_ledger;
    let o = push(&d, remaining);
    assert!(
        o.status.success(),
        "resume after space was added: {}",
        stderr(&o)
    );
    let st = d.status().await;
    assert_eq!(st.durable_ledger, total);
    assert_eq!(st.transactions, u64::from(total) * 12, "no duplicates");
    let (clean, _) = d.terminate();
    assert!(clean);
    assert_check_passes(&dir);
    println!("disk full: the refusal: {err}");
    println!(
        "disk full: refused at ledger {} of {total} on a 64 MiB tmpfs; resumed after remount to \
         256 MiB; check passed",
        full_at + 1
    );
}
