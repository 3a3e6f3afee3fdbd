//! Opening the ledger source named by the flags, shared by `ingest`
//! (into a data dir) and `push` (into a daemon).

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use ledgerstore_config::Config;
use ledgerstore_objstore::RequestCounters;
use ledgerstore_stellar::{Network, Opened, ReadLimits, SourceOptions, SourceSpec};

use crate::cli::{SourceArgs, StellarArgs};

/// A Stellar source, and the lake's request counters when it is one.
pub struct Stellar {
    /// What to read.
    pub spec: SourceSpec,
    /// HTTP attempts to the lake (zero for local ones).
    pub counters: Option<Arc<RequestCounters>>,
}

/// The Stellar source the flags name, or `None` for `--synthetic`. A lake
/// is opened with the `[lake]` settings (no request is made yet).
pub fn stellar_spec(s: &SourceArgs, cfg: &Config) -> Result<Option<Stellar>> {
    Ok(match (&s.stellar_datalake, &s.stellar_file) {
        (Some(d), _) => {
            let lake = crate::lake::open(d, &cfg.lake)?;
            Some(Stellar {
                spec: SourceSpec::DataLake(lake.lake),
                counters: Some(lake.counters),
            })
        }
        (None, Some(f)) => Some(Stellar {
            spec: SourceSpec::File(f.clone()),
            counters: None,
        }),
        (None, None) => None,
    })
}

/// The first ledger to read: after the destination's mark when there is
/// one (a re-run resumes), and never leaving a gap after it.
pub fn resume_from(a: &StellarArgs, mark: Option<u32>) -> Result<Option<u32>> {
    let Some(mark) = mark else {
        return Ok(a.from);
    };
    let next = mark
        .checked_add(1)
        .context("the destination's mark is at the last possible ledger")?;
    match a.from {
        Some(f) if f > next => bail!(
            "--from {f} would leave a gap: the destination holds ledgers through {mark}, so the \
             next must be {next} (omit --from to resume there)"
        ),
        Some(f) if f < next => {
            eprintln!(
                "note: ledgers {f}..={mark} are already durable; resuming at {next} \
                 (re-sent ledgers would be acknowledged and skipped)"
            );
            Ok(Some(next))
        }
        _ => Ok(Some(next)),
    }
}

/// The source options of the flags and `[lake]`; must run inside the
/// tokio runtime (a lake's manifest may name the network).
pub async fn source_options(
    spec: &SourceSpec,
    a: &StellarArgs,
    cfg: &Config,
    from: Option<u32>,
) -> Result<SourceOptions> {
    Ok(SourceOptions {
        network: network_for(spec, a).await?,
        from,
        to: a.to,
        read_ahead: usize::from(cfg.lake.read_ahead),
        limits: ReadLimits::default(),
    })
}

/// Opens the source; must run inside the tokio runtime.
pub async fn open_stellar(
    spec: &SourceSpec,
    a: &StellarArgs,
    cfg: &Config,
    from: Option<u32>,
) -> Result<(Network, Opened)> {
    let opts = source_options(spec, a, cfg, from).await?;
    let network = opts.network.clone();
    let opened = ledgerstore_stellar::open(spec, opts).await?;
    Ok((network, opened))
}

async fn network_for(spec: &SourceSpec, a: &StellarArgs) -> Result<Network> {
    if let Some(n) = &a.network {
        return Ok(Network::parse(n)?);
    }
    if let SourceSpec::DataLake(lake) = spec
        && let Some(p) = lake.manifest_passphrase().await?
    {
        return Ok(Network::from_passphrase(&p));
    }
    bail!(
        "--network is required (pubnet, testnet, futurenet, standalone, or a passphrase): tx \
         hashes are computed with the network passphrase"
    )
}
