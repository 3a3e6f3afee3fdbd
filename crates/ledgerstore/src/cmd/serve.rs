//! `ledgerstore serve` and `ledgerstore config show`.

use anyhow::{Context, Result};

use crate::cli::ServeArgs;
use crate::{config, open};

pub fn show(a: ServeArgs) -> Result<()> {
    print!("{}", config::daemon(&a.flags)?.to_toml());
    Ok(())
}

/// Every gRPC connection holds a descriptor, as do RocksDB's files: says
/// so when `grpc.max_connections` alone nearly fills the open-file limit.
fn warn_open_files(cfg: &ledgerstore_config::Config) {
    let conns = u64::from(cfg.grpc.max_connections);
    if let Some(limit) = crate::rlimit::open_files()
        && conns.saturating_add(1024) > limit
    {
        tracing::warn!(
            max_connections = conns,
            limit,
            "grpc.max_connections: connections at the limit would leave fewer than 1024 of this \
             process's open files (ulimit -n, LimitNOFILE) to the store and the other \
             listeners; raise the limit or lower the setting"
        );
    }
}

pub fn run(a: ServeArgs, log_json: bool) -> Result<()> {
    let cfg = config::daemon(&a.flags)?;
    crate::init_logging(log_json || cfg.log.format == "json", &cfg.log.level);
    warn_open_files(&cfg);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let serving = if cfg.replica.store.is_empty() {
        ledgerstore_server::Serving::Store {
            open: Box::new(open::for_daemon(&cfg)),
            follow: follow(&cfg)?,
            publish: crate::cold::publisher(&cfg, rt.handle().clone())?,
        }
    } else {
        ledgerstore_server::Serving::Replica {
            replica: crate::cold::replica(&cfg, rt.handle().clone())?,
            poll: std::time::Duration::from_millis(cfg.replica.poll_ms),
        }
    };
    let serves = if cfg.replica.store.is_empty() {
        format!("data dir {}", cfg.db.path.display())
    } else {
        format!(
            "read replica of {}, cache {}",
            cfg.replica.store,
            cfg.replica.cache_dir.display()
        )
    };
    rt.block_on(async move {
        ledgerstore_server::serve(
            cfg,
            serving,
            |b| {
                let metrics = b
                    .metrics
                    .map(|m| format!(" (metrics on http://{m}/metrics)"))
                    .unwrap_or_default();
                let jsonrpc = b
                    .jsonrpc
                    .map(|j| format!(", Stellar RPC on http://{j}/"))
                    .unwrap_or_default();
                println!(
                    "ledgerstore serving gRPC on {}{metrics}{jsonrpc}, {serves}",
                    b.grpc
                )
            },
            shutdown_signal(),
        )
        .await?;
        println!("ledgerstore stopped cleanly");
        Ok(())
    })
}

/// The lake of `[follow] lake`, opened (no request is made yet).
fn follow(cfg: &ledgerstore_config::Config) -> Result<Option<ledgerstore_server::Follow>> {
    if cfg.follow.lake.is_empty() {
        return Ok(None);
    }
    let lake = crate::lake::open(&cfg.follow.lake, &cfg.lake)
        .with_context(|| format!("follow.lake = {:?}", cfg.follow.lake))?;
    let counters = lake.counters;
    Ok(Some(ledgerstore_server::Follow {
        lake: lake.lake,
        requests: std::sync::Arc::new(move || {
            let c = counters.get();
            (c.attempts, c.failed)
        }),
    }))
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot listen for SIGTERM");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received"),
        _ = term.recv() => tracing::info!("SIGTERM received"),
    }
}
