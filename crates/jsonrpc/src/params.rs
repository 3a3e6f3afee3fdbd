//! Request parameters: named only (a JSON object), as stellar-rpc takes
//! them. Each failure names the parameter and what it must be.

use jsonrpsee::types::Params;
use ledgerstore_db_api::TxHash;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::{RpcError, RpcResult};

/// Parses named params; none at all is an empty object. Unknown names
/// are ignored, as stellar-rpc ignores them.
pub(crate) fn named<T: DeserializeOwned + Default>(params: &Params<'_>) -> RpcResult<T> {
    let Some(raw) = params.as_str() else {
        return Ok(T::default());
    };
    let raw = raw.trim();
    if raw.starts_with('[') {
        if raw == "[]" {
            return Ok(T::default());
        }
        return Err(RpcError::params(
            "invalid parameters: params must be an object of named parameters \
             (e.g. {\"hash\": \"…\"}); positional (array) params are not supported",
        ));
    }
    if raw == "null" {
        return Ok(T::default());
    }
    serde_json::from_str(raw).map_err(|e| RpcError::params(format!("invalid parameters: {e}")))
}

/// `xdrFormat`: how XDR values are returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Format {
    /// base64 strings (`envelopeXdr`, …).
    #[default]
    Base64,
    /// XDR-JSON objects (`envelopeJson`, …), SEP-51.
    Json,
}

impl Format {
    /// How messages name it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Base64 => "base64 XDR",
            Self::Json => "XDR-JSON",
        }
    }

    /// Parses `xdrFormat`; a bad value is stellar-rpc's message as
    /// -32602 (the paged methods turn it into -32600, as stellar-rpc does).
    pub(crate) fn parse(v: Option<&str>) -> RpcResult<Self> {
        match v {
            None | Some("") | Some("base64") => Ok(Self::Base64),
            Some("json") => Ok(Self::Json),
            Some(other) => Err(RpcError::params(format!(
                "got '{other}': expected base64, json for optional 'xdrFormat'"
            ))),
        }
    }
}

/// `getTransaction`'s params.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetTransaction {
    #[serde(default)]
    pub hash: String,
    pub xdr_format: Option<String>,
}

/// A transaction hash: 64 hex digits.
pub(crate) fn tx_hash(hex_hash: &str) -> RpcResult<TxHash> {
    if hex_hash.len() != 64 {
        return Err(RpcError::params(format!(
            "unexpected hash length ({}): expected 64 hex digits (a 32-byte transaction hash)",
            hex_hash.len()
        )));
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_hash, &mut out)
        .map_err(|e| RpcError::params(format!("incorrect hash: {e}; expected 64 hex digits")))?;
    Ok(TxHash(out))
}

/// `pagination`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Pagination {
    pub cursor: Option<String>,
    pub limit: Option<u64>,
}

/// `getTransactions` and `getLedgers` params.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Paged {
    pub start_ledger: Option<u32>,
    pub pagination: Option<Pagination>,
    pub xdr_format: Option<String>,
}

/// Where a page starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// At this ledger.
    Ledger(u32),
    /// After this cursor (parsed by the method).
    Cursor(u64),
}

/// A validated page request.
#[derive(Debug)]
pub(crate) struct Page {
    pub start: Start,
    pub limit: usize,
    pub format: Format,
}

/// Page size bounds of a method.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageLimits {
    pub default: usize,
    pub max: usize,
}

impl Paged {
    /// Checks the combination, in stellar-rpc's order and words. The range
    /// check of `startLedger` needs the store and is the method's.
    pub(crate) fn page(self, limits: PageLimits) -> RpcResult<Page> {
        let format = Format::parse(self.xdr_format.as_deref())
            .map_err(|e| RpcError::request(e.to_string()))?;
        let (cursor, limit) = match self.pagination {
            Some(p) => (p.cursor.filter(|c| !c.is_empty()), p.limit),
            None => (None, None),
        };
        let start_ledger = self.start_ledger.unwrap_or(0);
        let start = match cursor {
            Some(c) if start_ledger != 0 => {
                return Err(RpcError::request(format!(
                    "startLedger ({start_ledger}) and cursor ({c}) cannot both be set"
                )));
            }
            Some(c) => Start::Cursor(c.parse::<u64>().map_err(|e| {
                RpcError::params(format!(
                    "invalid cursor {c:?}: {e}; expected the decimal cursor of an earlier page"
                ))
            })?),
            None => Start::Ledger(start_ledger),
        };
        let limit = match limit {
            None | Some(0) => limits.default,
            Some(n) if n > limits.max as u64 => {
                return Err(RpcError::request(format!(
                    "limit must not exceed {}",
                    limits.max
                )));
            }
            Some(n) => n as usize,
        };
        Ok(Page {
            start,
            limit,
            format,
        })
    }
}

/// stellar-rpc's message for a `startLedger` outside what is held.
pub(crate) fn start_out_of_range(start: u32, oldest: u32, latest: u32) -> RpcError {
    RpcError::request(format!(
        "start ledger ({start}) must be between the oldest ledger: {oldest} and the latest \
         ledger: {latest} for this rpc instance"
    ))
}
