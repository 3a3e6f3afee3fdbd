//! Printing of transactions and ledgers, shared by the local (`get`) and
//! remote (`tx`, `ledger`) commands.

use anyhow::Result;
use base64::Engine as _;
use ledgerstore_db_api::{LedgerRecord, TxHash, TxRecord};
use serde_json::json;

use crate::cli::{Encoding, TxOutput};

fn encoder(out: TxOutput) -> (&'static str, impl Fn(&[u8]) -> String) {
    let enc = move |b: &[u8]| match out.encoding {
        Encoding::Hex => hex::encode(b),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(b),
    };
    let encoding = match out.encoding {
        Encoding::Hex => "hex",
        Encoding::Base64 => "base64",
    };
    (encoding, enc)
}

fn tx_json(hash: &TxHash, r: &TxRecord, out: TxOutput) -> serde_json::Value {
    let (encoding, enc) = encoder(out);
    json!({
        "hash": hash.to_hex(),
        "ledger_seq": r.ledger_seq,
        "close_time": r.close_time,
        "index": r.index,
        "encoding": encoding,
        "envelope_bytes": r.envelope.len(),
        "result_bytes": r.result.len(),
        "meta_bytes": r.meta.len(),
        "envelope": enc(&r.envelope),
        "result": enc(&r.result),
        "meta": enc(&r.meta),
    })
}

/// One of several transactions: a JSON line with --json, else the text form
/// followed by a blank line.
pub fn tx_line(hash: &TxHash, r: &TxRecord, out: TxOutput) -> Result<()> {
    if out.json {
        println!("{}", serde_json::to_string(&tx_json(hash, r, out))?);
        Ok(())
    } else {
        tx(hash, r, out)?;
        println!();
        Ok(())
    }
}

pub fn tx(hash: &TxHash, r: &TxRecord, out: TxOutput) -> Result<()> {
    let (encoding, enc) = encoder(out);
    if out.json {
        let v = tx_json(hash, r, out);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("hash       {}", hash.to_hex());
        println!("ledger     {}", r.ledger_seq);
        println!("index      {}", r.index);
        println!("close_time {}", r.close_time);
        println!(
            "envelope   {} bytes ({encoding}): {}",
            r.envelope.len(),
            enc(&r.envelope)
        );
        println!(
            "result     {} bytes ({encoding}): {}",
            r.result.len(),
            enc(&r.result)
        );
        println!(
            "meta       {} bytes ({encoding}): {}",
            r.meta.len(),
            enc(&r.meta)
        );
    }
    Ok(())
}

pub fn ledger(l: &LedgerRecord, json: bool) -> Result<()> {
    let hashes: Vec<String> = l.tx_hashes.iter().map(TxHash::to_hex).collect();
    if json {
        let v = json!({
            "seq": l.seq,
            "close_time": l.close_time,
            "raw_bytes": l.raw.len(),
            "tx_count": hashes.len(),
            "tx_hashes": hashes,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("ledger     {}", l.seq);
        println!("close_time {}", l.close_time);
        println!("raw_bytes  {}", l.raw.len());
        println!("tx_count   {}", hashes.len());
        for (i, h) in hashes.iter().enumerate() {
            println!("  tx[{i}] {h}");
        }
    }
    Ok(())
}

/// Parses a 64-hex-digit hash argument.
pub fn parse_hash(s: &str) -> Result<TxHash> {
    TxHash::from_hex(s).ok_or_else(|| {
        anyhow::anyhow!(
            "HASH must be 64 hex digits (32 bytes), got {s:?} ({} characters)",
            s.len()
        )
    })
}
