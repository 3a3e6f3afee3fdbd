//! Operations: `check`, `backup`, `restore`, `health`.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ledgerstore_proto::v1 as pb;
use ledgerstore_store::CheckReport;
use tonic::metadata::MetadataValue;

use crate::cli::{
    BackupArgs, CheckArgs, EngineFlags, HealthArgs, RemoteArgs, RestoreArgs, StoreArgs,
};
use crate::cmd::remote;
use crate::open;

pub fn check(a: CheckArgs) -> Result<()> {
    let store = open::existing(&a.store)?;
    let r = store.check()?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", render_check(&a.store.data_dir, &r));
    }
    if !r.is_ok() {
        bail!(
            "check failed: {} problem(s) in {}",
            r.problem_count,
            a.store.data_dir.display()
        );
    }
    Ok(())
}

pub(crate) fn render_check(dir: &Path, r: &CheckReport) -> String {
    let mut out = format!(
        "{}: mark {}  ledgers {}  txs {}  tx_index entries {}  tx_data entries {}\n",
        dir.display(),
        r.mark.map_or("-".into(), |m| m.to_string()),
        r.ledgers,
        r.txs,
        r.tx_index_entries,
        r.tx_data_entries
    );
    if r.above_mark > 0 {
        out.push_str(&format!(
            "NOTE {} entries lie above the mark, left by an interrupted batch: reads never see \
             them, and the next writer's open rolls them back\n",
            r.above_mark
        ));
    }
    if let Some(below) = r.evicted_below {
        out.push_str(&format!(
            "NOTE ledgers below {below} were evicted to the published store (cold.keep_local_ranges): \
             their hash lists and segments are checked, their records are not here to read\n"
        ));
    }
    if r.is_ok() {
        out.push_str("OK: every record decodes, every hash resolves, the mark is consistent\n");
    } else {
        for p in &r.problems {
            out.push_str(&format!("PROBLEM {p}\n"));
        }
        let hidden = r.problem_count - r.problems.len() as u64;
        if hidden > 0 {
            out.push_str(&format!("... and {hidden} more\n"));
        }
    }
    out
}

/// One backup line; the offline path and the Admin RPC print the same.
struct BackupLine<'a> {
    dest: &'a str,
    layout: &'a str,
    mark: Option<u32>,
    txs: u64,
    bytes: u64,
    pause_s: f64,
    total_s: f64,
}

impl BackupLine<'_> {
    fn render(&self) -> String {
        format!(
            "backup {}: layout {}  mark {}  txs {}  {:.1} MB  ingest paused {:.3}s  total {:.2}s",
            self.dest,
            self.layout,
            self.mark.map_or("-".into(), |m| m.to_string()),
            self.txs,
            self.bytes as f64 / 1e6,
            self.pause_s,
            self.total_s
        )
    }
}

pub fn backup(a: BackupArgs) -> Result<()> {
    if let Some(dir) = &a.data_dir {
        // The open for a backup is read-write (a RocksDB checkpoint needs
        // it), and an explicit MDBX geometry is applied to the files and
        // kept: a backup must not change the dir's settings.
        if a.engines.mdbx_max_size_gib.is_some() || a.engines.mdbx_growth_step_mib.is_some() {
            bail!(
                "--mdbx.max-size-gib and --mdbx.growth-step-mib would change {}'s MDBX geometry \
                 for good; a backup never changes the dir's settings (set them when the daemon \
                 or an ingest opens it)",
                dir.display()
            );
        }
        let store = open::for_backup(&StoreArgs {
            data_dir: dir.clone(),
            engines: a.engines.clone(),
        })?;
        let info = store.backup(&a.to)?;
        if a.json {
            println!("{}", serde_json::to_string_pretty(&info)?);
        } else {
            let dest = a.to.display().to_string();
            println!(
                "{}",
                BackupLine {
                    dest: &dest,
                    layout: info.layout.name(),
                    mark: info.mark,
                    txs: info.txs,
                    bytes: info.bytes,
                    pause_s: info.pause_s,
                    total_s: info.total_s,
                }
                .render()
            );
        }
        return Ok(());
    }
    let endpoint = a
        .endpoint
        .clone()
        .context("--endpoint or --data-dir is required")?;
    if a.engines != EngineFlags::default() {
        bail!(
            "the --rocksdb.*, --mdbx.* and --segments.* flags size a data dir opened here, \
             so they go with --data-dir; a daemon (--endpoint) backs up with its own settings"
        );
    }
    let dest = std::path::absolute(&a.to)
        .with_context(|| format!("making --to {} absolute", a.to.display()))?;
    // Multi-threaded: the connection's writes run on the runtime's threads,
    // where SIGPIPE is blocked (crate::runtime_builder).
    let rt = crate::runtime()?;
    let resp = rt.block_on(async {
        let ch = remote::channel(&RemoteArgs {
            endpoint,
            ca_cert: a.ca_cert.clone(),
        })
        .await?;
        let mut req = tonic::Request::new(pb::BackupRequest {
            dest: dest.display().to_string(),
        });
        if let Some(t) = &a.token {
            let v: MetadataValue<_> = format!("Bearer {t}").parse().context("--token")?;
            req.metadata_mut().insert("authorization", v);
        }
        pb::admin_client::AdminClient::new(ch)
            .backup(req)
            .await
            .map_err(|s| anyhow::anyhow!("{}: {}", s.code(), s.message()))
    })?;
    let r = resp.into_inner();
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "dest": r.dest, "layout": r.layout,
                "mark": r.has_mark.then_some(r.mark), "txs": r.txs, "bytes": r.bytes,
                "pause_s": r.pause_seconds, "total_s": r.total_seconds,
            })
        );
    } else {
        println!(
            "{}",
            BackupLine {
                dest: &r.dest,
                layout: &r.layout,
                mark: r.has_mark.then_some(r.mark),
                txs: r.txs,
                bytes: r.bytes,
                pause_s: r.pause_seconds,
                total_s: r.total_seconds,
            }
            .render()
        );
    }
    Ok(())
}

pub fn restore(a: RestoreArgs) -> Result<()> {
    if a.no_check {
        if a.engines != EngineFlags::default() {
            bail!(
                "the --rocksdb.*, --mdbx.* and --segments.* flags size the check after the \
                 restore, and --no-check skips it"
            );
        }
    } else {
        // A value out of range is refused before anything is copied; one
        // that differs from what the dir recorded (its segment policy, a
        // page size) is refused by the check's open, after the copy.
        crate::config::offline(&a.engines)?;
    }
    let info = ledgerstore_store::restore(&a.from, &a.to)?;
    println!(
        "restored {} into {}: layout {}  mark {}  txs {}",
        a.from.display(),
        a.to.display(),
        info.layout,
        info.mark.map_or("-".into(), |m| m.to_string()),
        info.txs
    );
    if a.no_check {
        return Ok(());
    }
    let to = a.to.clone();
    check(CheckArgs {
        store: StoreArgs {
            data_dir: a.to,
            engines: a.engines,
        },
        json: false,
    })
    .with_context(|| {
        format!(
            "{} was restored whole, and its check failed (the dir stays; a setting that \
             differs from the dir's, from a flag or LEDGERSTORE_*, is refused at the check's \
             open; `ledgerstore check --data-dir {}` without it checks it again)",
            to.display(),
            to.display()
        )
    })
}

pub async fn health(a: HealthArgs) -> Result<()> {
    use tonic_health::pb::health_check_response::ServingStatus;
    let timeout = Duration::from_millis(a.timeout_ms);
    let call = async {
        let ch = remote::channel(&a.remote).await?;
        tonic_health::pb::health_client::HealthClient::new(ch)
            .check(tonic_health::pb::HealthCheckRequest {
                service: a.service.clone(),
            })
            .await
            .map_err(|s| anyhow::anyhow!("{}: {}", s.code(), s.message()))
    };
    let resp = tokio::time::timeout(timeout, call)
        .await
        .with_context(|| {
            format!(
                "no answer from {} within {} ms",
                a.remote.endpoint, a.timeout_ms
            )
        })??;
    let status =
        ServingStatus::try_from(resp.into_inner().status).unwrap_or(ServingStatus::Unknown);
    let name = if a.service.is_empty() {
        "server"
    } else {
        &a.service
    };
    println!("{name}: {}", status.as_str_name());
    if status != ServingStatus::Serving {
        bail!("{name} is {}", status.as_str_name());
    }
    Ok(())
}
