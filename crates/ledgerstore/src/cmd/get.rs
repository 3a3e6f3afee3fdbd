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
    let hash = print::parse_hash(&a.hash)?;
    let store = open::existing(&a.store)?;
    let Some(r) = store.get_tx(&hash)? else {
        bail!(
            "transaction {hash} not found in {} ({})",
            a.store.data_dir.display(),
            mark_text(store.last_ledger())
        );
    };
    print::tx(&hash, &r, a.out)
}
