//! `ledgerstore tx|ledger --endpoint URL`: queries a running daemon.

use anyhow::{Context, Result};
use ledgerstore_proto::v1 as pb;
use ledgerstore_server::convert::{ledger_from_pb, tx_from_pb};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::cli::{RemoteArgs, RemoteLedgerArgs, RemoteTxArgs};
use crate::cmd::print;

/// Connects to the daemon.
pub async fn channel(r: &RemoteArgs) -> Result<Channel> {
    let mut ep = Endpoint::from_shared(r.endpoint.clone())
        .with_context(|| format!("--endpoint {:?} is not a URL", r.endpoint))?;
    if let Some(ca) = &r.ca_cert {
        let pem =
            std::fs::read(ca).with_context(|| format!("reading --ca-cert {}", ca.display()))?;
        ep = ep.tls_config(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)))?;
    }
    // On the runtime's threads, where SIGPIPE is blocked: the connect
    // writes the HTTP/2 preface (and a TLS handshake), and a CLI verb's
    // own thread keeps SIGPIPE's default (crate::runtime_builder).
    tokio::spawn(async move { ep.connect().await })
        .await
        .context("the connecting task failed")?
        .with_context(|| format!("connecting to {}", r.endpoint))
}

fn status_err(s: tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("{}: {}", s.code(), s.message())
}

pub async fn tx(a: RemoteTxArgs) -> Result<()> {
    let hash = print::parse_hash(&a.hash)?;
    let mut q = pb::query_client::QueryClient::new(channel(&a.remote).await?);
    let r = q
        .get_transaction(pb::GetTransactionRequest {
            hash: hash.0.to_vec(),
        })
        .await
        .map_err(status_err)?
        .into_inner();
    let rec = tx_from_pb(r);
    print::tx(&hash, &rec, a.out)
}

pub async fn ledger(a: RemoteLedgerArgs) -> Result<()> {
    let mut q = pb::query_client::QueryClient::new(channel(&a.remote).await?);
    let l = q
        .get_ledger(pb::GetLedgerRequest {
            seq: a.seq,
            omit_raw: false,
        })
        .await
        .map_err(status_err)?
        .into_inner();
    let rec = ledger_from_pb(l);
    print::ledger(&rec, a.json)
}
