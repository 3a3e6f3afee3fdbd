//! Rendering stored records as stellar-rpc's JSON: base64 XDR (`…Xdr`)
//! or XDR-JSON (`…Json`, SEP-51, from `stellar-xdr`'s serde support, which
//! is what stellar-rpc's xdr2json emits).
//!
//! Everything is serialized straight into the response text (a
//! [`crate::budget::Sink`]), never through a `serde_json::Value` tree: a
//! pubnet ledger's XDR-JSON as a `Value` took ~80 MB of heap for ~2.8 MB
//! of text, and the text is what the byte budget counts as it grows.

use base64::display::Base64Display;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde::ser::{Error as _, SerializeMap, SerializeSeq, Serializer};
use stellar_xdr::{Limits, TransactionEnvelope, TransactionMeta, TransactionResult, WriteXdr};

use crate::error::RpcResult;
use crate::params::Format;
use crate::xdr::{TxEvents, TxView};

/// Bytes as a base64 string, encoded while written.
pub(super) struct B64<'a>(pub &'a [u8]);

impl Serialize for B64<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&Base64Display::new(self.0, &STANDARD))
    }
}

/// A decoded XDR value as base64 of its (canonical) encoding.
struct Encoded<'a, T>(&'a T);

impl<T: WriteXdr> Serialize for Encoded<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes = self
            .0
            .to_xdr(Limits::none())
            .map_err(|e| S::Error::custom(format!("encoding XDR: {e}")))?;
        B64(&bytes).serialize(s)
    }
}

/// A list of XDR values in the chosen format.
struct List<'a, T>(&'a [T], Format);

impl<T: Serialize + WriteXdr> Serialize for List<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            match self.1 {
                Format::Base64 => seq.serialize_element(&Encoded(item))?,
                Format::Json => seq.serialize_element(item)?,
            }
        }
        seq.end()
    }
}

/// The key suffix of a format.
pub(super) fn suffix(format: Format) -> &'static str {
    match format {
        Format::Base64 => "Xdr",
        Format::Json => "Json",
    }
}

/// Writes `name` + `Xdr` (base64 of `bytes`) or `name` + `Json` (the
/// decoded value).
pub(super) fn put_xdr<M: SerializeMap, T: Serialize>(
    m: &mut M,
    name: &str,
    bytes: &[u8],
    decoded: Option<&T>,
) -> Result<(), M::Error> {
    match decoded {
        None => m.serialize_entry(&format!("{name}Xdr"), &B64(bytes)),
        Some(v) => m.serialize_entry(&format!("{name}Json"), v),
    }
}

/// A transaction decoded as far as its format needs, ready to write.
pub(super) struct TxOut<'a> {
    tx: &'a TxView<'a>,
    format: Format,
    /// XDR-JSON only.
    envelope: Option<TransactionEnvelope>,
    /// XDR-JSON only.
    result: Option<TransactionResult>,
    meta: TransactionMeta,
    events: TxEvents,
}

impl<'a> TxOut<'a> {
    pub(super) fn new(tx: &'a TxView<'a>, format: Format) -> RpcResult<Self> {
        let (envelope, result) = match format {
            Format::Base64 => (None, None),
            Format::Json => (Some(tx.envelope()?), Some(tx.result()?)),
        };
        let meta = tx.meta()?;
        let events = TxEvents::of(&meta);
        Ok(Self {
            tx,
            format,
            envelope,
            result,
            meta,
            events,
        })
    }

    /// Writes the fields of stellar-rpc's `TransactionDetails` into `m`,
    /// with `tx_hash` as `txHash`.
    pub(super) fn write<M: SerializeMap>(&self, m: &mut M, tx_hash: &str) -> Result<(), M::Error> {
        let tx = self.tx;
        m.serialize_entry("status", tx.status())?;
        m.serialize_entry("txHash", tx_hash)?;
        m.serialize_entry("applicationOrder", &tx.application_order())?;
        m.serialize_entry("feeBump", &tx.fee_bump)?;
        put_xdr(m, "envelope", &tx.rec.envelope, self.envelope.as_ref())?;
        put_xdr(m, "result", tx.result, self.result.as_ref())?;
        let meta = (self.format == Format::Json).then_some(&self.meta);
        put_xdr(m, "resultMeta", &tx.rec.meta, meta)?;
        if !self.events.diagnostic.is_empty() {
            m.serialize_entry(
                &format!("diagnosticEvents{}", suffix(self.format)),
                &List(&self.events.diagnostic, self.format),
            )?;
        }
        m.serialize_entry("events", &Events(&self.events, self.format))?;
        m.serialize_entry("ledger", &tx.rec.ledger_seq)
    }
}

/// `events`: transaction events, and contract events per operation.
struct Events<'a>(&'a TxEvents, Format);

impl Serialize for Events<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (ev, format) = (self.0, self.1);
        let mut m = s.serialize_map(None)?;
        if !ev.transaction.is_empty() {
            m.serialize_entry(
                &format!("transactionEvents{}", suffix(format)),
                &List(&ev.transaction, format),
            )?;
        }
        // One list per operation slot, empty ones kept (`[[]]`), as
        // stellar-rpc emits them; no slots, no key.
        if !ev.contract.is_empty() {
            let per_op: Vec<_> = ev.contract.iter().map(|op| List(op, format)).collect();
            m.serialize_entry(&format!("contractEvents{}", suffix(format)), &per_op)?;
        }
        m.end()
    }
}
