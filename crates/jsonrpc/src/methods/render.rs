//! Rendering stored records as stellar-rpc's JSON: base64 XDR (`…Xdr`)
//! or XDR-JSON (`…Json`, SEP-51, from `stellar-xdr`'s serde support, which
//! is what stellar-rpc's xdr2json emits).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde_json::{Map, Value};
use stellar_xdr::WriteXdr;

use crate::error::{RpcError, RpcResult};
use crate::params::Format;
use crate::xdr::{TxEvents, TxView, encode};

pub(super) fn b64(bytes: &[u8]) -> Value {
    Value::String(STANDARD.encode(bytes))
}

pub(super) fn to_json<T: Serialize>(v: &T, what: &str) -> RpcResult<Value> {
    serde_json::to_value(v).map_err(|e| RpcError::Internal(format!("{what} as XDR-JSON: {e}")))
}

/// Puts `name` + `Xdr` (base64 of `bytes`) or `name` + `Json` (the decoded
/// value) into `out`.
pub(super) fn put_xdr<T: Serialize>(
    out: &mut Map<String, Value>,
    name: &str,
    format: Format,
    bytes: &[u8],
    decoded: impl FnOnce() -> RpcResult<T>,
) -> RpcResult<()> {
    match format {
        Format::Base64 => out.insert(format!("{name}Xdr"), b64(bytes)),
        Format::Json => out.insert(format!("{name}Json"), to_json(&decoded()?, name)?),
    };
    Ok(())
}

/// A list of XDR values in the chosen format.
fn list<T: Serialize + WriteXdr>(items: &[T], format: Format, what: &str) -> RpcResult<Value> {
    items
        .iter()
        .map(|i| match format {
            Format::Base64 => Ok(b64(&encode(i, what)?)),
            Format::Json => to_json(i, what),
        })
        .collect::<RpcResult<Vec<_>>>()
        .map(Value::Array)
}

/// The fields of stellar-rpc's `TransactionDetails`.
pub(super) fn tx_details(
    out: &mut Map<String, Value>,
    tx: &TxView<'_>,
    format: Format,
) -> RpcResult<()> {
    out.insert("status".into(), tx.status().into());
    out.insert("txHash".into(), hex::encode(&tx.rec.result[..32]).into());
    out.insert("applicationOrder".into(), tx.application_order().into());
    out.insert("feeBump".into(), tx.fee_bump.into());
    put_xdr(out, "envelope", format, &tx.rec.envelope, || tx.envelope())?;
    put_xdr(out, "result", format, tx.result, || tx.result())?;
    let meta = tx.meta()?;
    put_xdr(out, "resultMeta", format, &tx.rec.meta, || Ok(&meta))?;
    let events = TxEvents::of(&meta);
    let suffix = match format {
        Format::Base64 => "Xdr",
        Format::Json => "Json",
    };
    if !events.diagnostic.is_empty() {
        out.insert(
            format!("diagnosticEvents{suffix}"),
            list(&events.diagnostic, format, "DiagnosticEvent")?,
        );
    }
    let mut ev = Map::new();
    if !events.transaction.is_empty() {
        ev.insert(
            format!("transactionEvents{suffix}"),
            list(&events.transaction, format, "TransactionEvent")?,
        );
    }
    // One list per operation slot, empty ones kept (`[[]]`), as
    // stellar-rpc emits them; no slots, no key.
    if !events.contract.is_empty() {
        let per_op = events
            .contract
            .iter()
            .map(|op| list(op, format, "ContractEvent"))
            .collect::<RpcResult<Vec<_>>>()?;
        ev.insert(format!("contractEvents{suffix}"), Value::Array(per_op));
    }
    out.insert("events".into(), Value::Object(ev));
    out.insert("ledger".into(), tx.rec.ledger_seq.into());
    Ok(())
}
