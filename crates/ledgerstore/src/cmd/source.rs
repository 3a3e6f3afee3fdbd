//! Opening the ledger source named by the flags, shared by `ingest`
//! (into a data dir) and `push` (into a daemon).

use anyhow::{Context, Result, bail};
use ledgerstore_stellar::{DataLake, Network, Opened, ReadLimits, SourceOptions, SourceSpec};

use crate::cli::{SourceArgs, StellarArgs};

/// The Stellar source the flags name, or `None` for `--synthetic`.
pub fn stellar_spec(s: &SourceArgs) -> Option<SourceSpec> {
    match (&s.stellar_datalake, &s.stellar_file) {
        (Some(d), _) => Some(SourceSpec::DataLake(d.clone())),
        (None, Some(f)) => Some(SourceSpec::File(f.clone())),
        (None, None) => None,
    }
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

/// Opens the source; must run inside the tokio runtime.
pub async fn open_stellar(
    spec: &SourceSpec,
    a: &StellarArgs,
    from: Option<u32>,
) -> Result<(Network, Opened)> {
    let network = network_for(spec, a).await?;
    let opts = SourceOptions {
        network: network.clone(),
        from,
        to: a.to,
        read_ahead: usize::from(a.read_ahead),
        limits: ReadLimits::default(),
    };
    let opened = ledgerstore_stellar::open(spec, opts).await?;
    Ok((network, opened))
}

async fn network_for(spec: &SourceSpec, a: &StellarArgs) -> Result<Network> {
    if let Some(n) = &a.network {
        return Ok(Network::parse(n)?);
    }
    if let SourceSpec::DataLake(root) = spec
        && let Some(p) = DataLake::local(root)?.manifest_passphrase().await?
    {
        return Ok(Network::from_passphrase(&p));
    }
    bail!(
        "--network is required (pubnet, testnet, futurenet, standalone, or a passphrase): tx \
         hashes are computed with the network passphrase"
    )
}
