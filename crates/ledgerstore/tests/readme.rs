//! README.md, followed top to bottom: every ```sh block runs as written,
//! in order, in one shell (as a reader's terminal would), in a temp dir,
//! with `scripts/run.sh` running this build's binary and the default
//! loopback ports moved to free ones. A block that fails fails the test,
//! naming its line.
//!
//! Conventions, an HTML comment on the line before a block's fence:
//! - `<!-- readme: illustrative … -->`: not run (it needs the network, a
//!   cloud bucket, placeholders, or hours).
//! - `<!-- readme: daemon -->`: runs in the foreground until Ctrl-C; here it
//!   starts in the background and the next blocks run once it serves.
//! - `<!-- readme: ctrl-c -->`: the reader stops that daemon with Ctrl-C
//!   before this block; here it gets SIGINT and must exit cleanly.
//!
//! Commands a block sends to the background (`… &`) are stopped with SIGINT
//! at the end, and the session is bounded in time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest the whole session may take.
const SESSION: Duration = Duration::from_secs(600);

/// A fenced code block of README.md.
#[derive(Debug)]
struct Block {
    /// 1-based line of its opening fence.
    line: usize,
    lang: String,
    /// The `readme:` comment on the line before the fence, if any.
    marker: Option<String>,
    text: String,
}

/// The fenced blocks, refusing an unclosed fence (which would swallow the
/// rest of the file into one block) and an unknown marker.
fn blocks(readme: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    let mut prev = "";
    for (i, line) in readme.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```").map(str::trim);
        if let Some(mut b) = open.take() {
            match fence {
                None => {
                    b.text.push_str(line);
                    b.text.push('\n');
                    open = Some(b);
                }
                Some("") => out.push(b),
                Some(info) => panic!(
                    "README.md line {}: a fence with {info:?} inside the block opened at line \
                     {}: that block is not closed",
                    i + 1,
                    b.line
                ),
            }
        } else if let Some(info) = fence {
            let marker = prev
                .trim()
                .strip_prefix("<!-- readme:")
                .and_then(|m| m.strip_suffix("-->"))
                .map(|m| m.trim().to_string());
            if let Some(m) = &marker {
                let kind = m.split_whitespace().next().unwrap_or("");
                assert!(
                    ["illustrative", "daemon", "ctrl-c"].contains(&kind),
                    "README.md line {i}: unknown marker {m:?}"
                );
            }
            open = Some(Block {
                line: i + 1,
                lang: info.to_string(),
                marker,
                text: String::new(),
            });
        }
        prev = line;
    }
    if let Some(b) = open {
        panic!(
            "README.md: the block opened at line {} is not closed",
            b.line
        );
    }
    out
}

fn marker_kind(b: &Block) -> &str {
    b.marker
        .as_deref()
        .and_then(|m| m.split_whitespace().next())
        .unwrap_or("")
}

/// Free loopback ports for gRPC, JSON-RPC and metrics.
fn ports() -> [u16; 3] {
    let socks: Vec<std::net::TcpListener> = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    let p: Vec<u16> = socks
        .iter()
        .map(|s| s.local_addr().expect("addr").port())
        .collect();
    [p[0], p[1], p[2]]
}

/// The session: every runnable block in order, each announced on stderr,
/// under `set -euo pipefail`; background jobs get SIGINT at the end (or
/// when a block fails) and are waited for.
/// `t` with the default loopback ports moved to `ports`.
fn moved(t: &str, [grpc, rpc, metrics]: [u16; 3]) -> String {
    t.replace("127.0.0.1:50051", &format!("127.0.0.1:{grpc}"))
        .replace("127.0.0.1:8000", &format!("127.0.0.1:{rpc}"))
        .replace("127.0.0.1:9464", &format!("127.0.0.1:{metrics}"))
}

fn session(blocks: &[Block], ports: [u16; 3]) -> String {
    let grpc = ports[0];
    let moved = |t: &str| moved(t, ports);
    let mut s = String::from(
        "set -euo pipefail\n\
         trap 'st=$?; j=$(jobs -p); [ -z \"$j\" ] || kill -INT $j 2>/dev/null; wait; exit $st' EXIT\n",
    );
    for b in blocks.iter().filter(|b| b.lang == "sh") {
        let kind = marker_kind(b);
        if kind == "illustrative" {
            continue;
        }
        s.push_str(&format!(
            "echo '=== README.md block at line {}' >&2\n",
            b.line
        ));
        if kind == "ctrl-c" {
            s.push_str("kill -INT \"$README_DAEMON\"\nwait \"$README_DAEMON\"\n");
        }
        if kind == "daemon" {
            // One command, sent to the background as is, so that `$!` is
            // the daemon itself (a backgrounded group would be a subshell,
            // which ignores SIGINT).
            let command: Vec<&str> = b
                .text
                .lines()
                .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                .collect();
            assert_eq!(
                command.len(),
                1,
                "README.md line {}: a daemon block holds one command",
                b.line
            );
            s.push_str(&format!(
                "{} > daemon.log 2>&1 &\nREADME_DAEMON=$!\n\
                 until scripts/run.sh health --endpoint http://127.0.0.1:{grpc} >/dev/null 2>&1; do\n\
                 kill -0 \"$README_DAEMON\" || {{ cat daemon.log >&2; exit 1; }}\n\
                 sleep 0.2\ndone\n",
                moved(command[0])
            ));
        } else {
            s.push_str(&moved(&b.text));
        }
    }
    // Each background job is waited for by itself: a bare `wait` returns
    // 0 whatever the jobs exited with.
    s.push_str(
        "echo '=== README.md: every block ran' >&2\n\
         for p in $(jobs -p); do kill -INT \"$p\"; wait \"$p\"; done\n",
    );
    s
}

/// Runs `c` in a process group of its own; after `limit`, kills the whole
/// group (the shell and anything it left running) and returns None.
fn run_bounded(mut c: Command, limit: Duration) -> Option<std::process::ExitStatus> {
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    let mut child = c.spawn().expect("bash");
    let started = Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("wait") {
            return Some(st);
        }
        if started.elapsed() > limit {
            let pgid = i32::try_from(child.id()).expect("pid");
            #[allow(unsafe_code)]
            // SAFETY: a signal to a process group this test created.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A temp dir with `scripts/run.sh` holding `body` (executable).
fn with_run_sh(body: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(tmp.path().join("scripts")).expect("scripts");
    let stub = tmp.path().join("scripts/run.sh");
    std::fs::write(&stub, body).expect("stub");
    let chmod = Command::new("chmod")
        .arg("+x")
        .arg(&stub)
        .status()
        .expect("chmod");
    assert!(chmod.success());
    tmp
}

/// A daemon the README starts in the background (`… &`) that exits at
/// once (a port taken, a bad flag) fails its block at once: the README's
/// wait for it to serve must not poll forever (a reader's terminal; the
/// session's whole time limit on CI).
#[test]
fn a_background_daemon_that_exits_at_once_fails_its_block_at_once() {
    let text = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let all = blocks(&text);
    let b = all
        .iter()
        .find(|b| b.lang == "sh" && marker_kind(b) != "illustrative" && b.text.contains(" &\n"))
        .expect("a runnable block starting a daemon in the background");
    // Every command succeeds but `serve`, which exits at once, and
    // `health`, which never sees it serve.
    let tmp =
        with_run_sh("#!/usr/bin/env bash\ncase \"$1\" in serve|health) exit 1;; esac\nexit 0\n");
    let script = format!("set -euo pipefail\n{}", moved(&b.text, ports()));
    std::fs::write(tmp.path().join("block.sh"), script).expect("script");
    let mut c = Command::new("bash");
    c.arg("block.sh")
        .current_dir(tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Bounded only so that the defect fails the test instead of hanging it.
    let status = run_bounded(c, Duration::from_secs(60));
    let st = status.unwrap_or_else(|| {
        panic!(
            "README.md line {}: still waiting after 60 s for a daemon that had exited",
            b.line
        )
    });
    assert!(!st.success(), "README.md line {}: {st}", b.line);
}

/// A background job that exits non-zero when the session stops it fails
/// the session: the end waits for each job's own status.
#[test]
fn a_background_job_that_fails_at_the_end_fails_the_session() {
    let readme = "```sh\n\
                  python3 -c 'import signal, sys, time, pathlib\n\
                  signal.signal(signal.SIGINT, lambda *a: sys.exit(3))\n\
                  pathlib.Path(\"ready\").touch()\n\
                  time.sleep(300)' &\n\
                  until [ -e ready ]; do sleep 0.05; done\n\
                  ```\n";
    let all = blocks(readme);
    let tmp = with_run_sh("#!/usr/bin/env bash\nexit 0\n");
    std::fs::write(tmp.path().join("session.sh"), session(&all, ports())).expect("script");
    let mut c = Command::new("bash");
    c.arg("session.sh")
        .current_dir(tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let status = run_bounded(c, Duration::from_secs(60)).expect("the session ends");
    assert_eq!(status.code(), Some(3), "{status}");
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn readme_blocks_have_closed_fences_and_known_markers() {
    let text = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let all = blocks(&text);
    let runnable = all
        .iter()
        .filter(|b| b.lang == "sh" && marker_kind(b) != "illustrative")
        .count();
    assert!(runnable >= 5, "{all:#?}");
    // The daemon a reader starts is stopped before another one starts.
    assert_eq!(
        all.iter().filter(|b| marker_kind(b) == "daemon").count(),
        all.iter().filter(|b| marker_kind(b) == "ctrl-c").count()
    );
}

#[test]
fn unclosed_fences_are_refused_by_line() {
    let bad = "a\n```python\nx = 1\n\n## Next\n```sh\nls\n```\n";
    let e = std::panic::catch_unwind(|| blocks(bad)).expect_err("unclosed");
    let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("opened at line 2"), "{msg}");
}

#[test]
fn readme_followed_top_to_bottom_runs() {
    let text = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let all = blocks(&text);
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    // `scripts/run.sh` as the README means it, without the release build:
    // this build's binary (`serve` with no arguments).
    std::fs::create_dir_all(dir.join("scripts")).expect("scripts");
    let stub = dir.join("scripts/run.sh");
    std::fs::write(
        &stub,
        "#!/usr/bin/env bash\n[ $# -eq 0 ] && set -- serve\nexec \"$README_BIN\" \"$@\"\n",
    )
    .expect("stub");
    let chmod = Command::new("chmod")
        .arg("+x")
        .arg(&stub)
        .status()
        .expect("chmod");
    assert!(chmod.success());
    // The fixtures the README names by their path in the repository.
    std::os::unix::fs::symlink(repo().join("crates"), dir.join("crates")).expect("symlink");
    let ports = ports();
    let script = session(&all, ports);
    std::fs::write(dir.join("session.sh"), &script).expect("script");
    let out = std::fs::File::create(dir.join("stdout")).expect("stdout");
    let err = std::fs::File::create(dir.join("stderr")).expect("stderr");
    let mut c = Command::new("bash");
    c.arg("session.sh")
        .current_dir(dir)
        .env("README_BIN", env!("CARGO_BIN_EXE_ledgerstore"))
        .env(
            "LEDGERSTORE_GRPC__LISTEN",
            format!("127.0.0.1:{}", ports[0]),
        )
        .env(
            "LEDGERSTORE_JSONRPC__LISTEN",
            format!("127.0.0.1:{}", ports[1]),
        )
        .env(
            "LEDGERSTORE_METRICS__LISTEN",
            format!("127.0.0.1:{}", ports[2]),
        )
        .env_remove("LEDGERSTORE_DB__PATH")
        .env_remove("LEDGERSTORE_INGEST_TOKEN")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let status = run_bounded(c, SESSION);
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap_or_default();
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    let at = stderr
        .lines()
        .rfind(|l| l.starts_with("=== README.md"))
        .unwrap_or("before the first block")
        .to_string();
    let tail = |s: &str| {
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    };
    match status {
        Some(st) if st.success() => {}
        Some(st) => panic!(
            "README.md failed ({st}) at {at}\n--- stdout (tail)\n{}\n--- stderr (tail)\n{}",
            tail(&stdout),
            tail(&stderr)
        ),
        None => panic!(
            "README.md did not finish within {} s; last: {at}\n--- stderr (tail)\n{}",
            SESSION.as_secs(),
            tail(&stderr)
        ),
    }
    assert!(at.contains("every block ran"), "{at}");
    // What the README shows the Stellar RPC calls answering.
    assert!(
        stdout.contains(r#""status":"healthy""#),
        "{}",
        tail(&stdout)
    );
    assert!(
        stdout.contains(r#""status":"SUCCESS""#),
        "{}",
        tail(&stdout)
    );
}
