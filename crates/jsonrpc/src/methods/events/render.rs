//! The fields of one event that need more than a copy: the close time as
//! RFC 3339, the contract id as a strkey, the XDR-JSON of topics and value.

use std::time::{Duration, UNIX_EPOCH};

use ledgerstore_events::ServedEvent;
use stellar_xdr::ScVal;

use crate::error::RpcResult;
use crate::xdr::decode;

/// `ledgerClosedAt`: `time.Unix(t, 0).UTC().Format(time.RFC3339)`.
pub(super) fn closed_at(close_time: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(close_time)).to_string()
}

/// `contractId`: the strkey, or "" for an event without one (Go's empty
/// string).
pub(super) fn contract(id: Option<&[u8; 32]>) -> String {
    id.map_or_else(String::new, |c| {
        stellar_strkey::Contract(*c).to_string().as_str().to_owned()
    })
}

/// The decoded topics and value, for XDR-JSON.
pub(super) fn decoded(e: &ServedEvent) -> RpcResult<(Vec<ScVal>, ScVal)> {
    let topics = e
        .topics
        .iter()
        .map(|t| decode::<ScVal>(t, "event topic"))
        .collect::<RpcResult<Vec<_>>>()?;
    Ok((topics, decode::<ScVal>(&e.value, "event value")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_times_and_contract_ids_read_as_stellar_rpc_writes_them() {
        assert_eq!(closed_at(0), "1970-01-01T00:00:00Z");
        assert_eq!(closed_at(1_764_000_000), "2025-11-24T16:00:00Z");
        assert_eq!(contract(None), "");
        let c = stellar_strkey::Contract::from_string(
            "CDLZFC3SYJYDZT7K67VZ75HPJVIEUVNIXF47ZG2FB2RMQQVU2HHGCYSC",
        )
        .expect("strkey");
        assert_eq!(
            contract(Some(&c.0)),
            "CDLZFC3SYJYDZT7K67VZ75HPJVIEUVNIXF47ZG2FB2RMQQVU2HHGCYSC"
        );
    }
}
