//! `ledgerstore get ledger|tx`: reads from a data dir (not while a daemon
//! holds it; query the daemon with `ledgerstore tx|ledger` instead).

use anyhow::{Result, bail};

use crate::cli::{GetCommand, GetLedgerArgs, GetTxArgs};
use crate::cmd::print;
use crate::open;

pub fn run(cmd: GetCommand) -> Result<()> {
    match cmd {
        GetCommand::Ledger(a) => ledger(a),
        GetCommand::Tx(a) => tx(a),
    }
}

fn mark_text(last: Option<u32>) -> String {
    last.map_or("the store is empty".into(), |l| {
        format!("durable mark: ledger {l}")
    })
}

fn ledger(a: GetLedgerArgs) -> Result<()> {
    let store = open::existing(&a.store)?;
    let Some(l) = store.get_ledger(a.seq)? else {
        bail!(
            "ledger {} not found in {} ({})",
            a.seq,
            a.store.data_dir.display(),
            mark_text(store.last_ledger())
        );
    };
    print::ledger(&l, a.json)
}

fn tx(a: GetTxArgs) -> Result<()> {
    let hashes = a
        .hashes
        .iter()
        .map(|h| print::parse_hash(h))
        .collect::<Result<Vec<_>>>()?;
    let store = open::existing(&a.store)?;
    let many = hashes.len() > 1;
    let mut missing = Vec::new();
    for hash in &hashes {
        match store.get_tx(hash)? {
            Some(r) if many => print::tx_line(hash, &r, a.out)?,
            Some(r) => print::tx(hash, &r, a.out)?,
            None => missing.push(hash.to_hex()),
        }
    }
    if let [one] = &missing[..]
        && !many
    {
        bail!(
            "transaction {one} not found in {} ({})",
            a.store.data_dir.display(),
            mark_text(store.last_ledger())
        );
    }
    if !missing.is_empty() {
        bail!(
            "{} of {} transactions not found in {} ({}): {}",
            missing.len(),
            hashes.len(),
            a.store.data_dir.display(),
            mark_text(store.last_ledger()),
            missing.join(", ")
        );
    }
    Ok(())
}
