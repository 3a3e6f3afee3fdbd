use base64::Engine as _;
use serde_json::json;
use stellar_xdr::{Limits, ScSymbol, ScVal, WriteXdr};

use super::*;

fn check(v: serde_json::Value) -> RpcResult<EventsRequest> {
    serde_json::from_value::<GetEvents>(v)
        .expect("shape")
        .check()
}

fn refused(v: serde_json::Value) -> String {
    match check(v) {
        Err(RpcError::InvalidParams(m)) => m,
        other => panic!("expected invalid params, got {other:?}"),
    }
}

fn sym(s: &str) -> (String, Vec<u8>) {
    let v = ScVal::Symbol(ScSymbol(s.try_into().expect("symbol")));
    let bytes = v.to_xdr(Limits::none()).expect("xdr");
    (
        base64::engine::general_purpose::STANDARD.encode(&bytes),
        bytes,
    )
}

const CONTRACT: &str = "CDLZFC3SYJYDZT7K67VZ75HPJVIEUVNIXF47ZG2FB2RMQQVU2HHGCYSC";

#[test]
fn a_request_is_read_as_stellar_rpc_reads_it() {
    let (transfer, transfer_xdr) = sym("transfer");
    let r = check(json!({
        "startLedger": 7,
        "endLedger": 9,
        "filters": [
            {"type": "system,contract", "contractIds": [CONTRACT],
             "topics": [[transfer, "*", "**"], ["*"]]},
            {}
        ],
        "pagination": {"limit": 3},
        "xdrFormat": "json"
    }))
    .expect("valid");
    assert_eq!(r.from, From::Ledger(7));
    assert_eq!(r.end_ledger, Some(9));
    assert_eq!(r.limit, 3);
    assert_eq!(r.format, Format::Json);
    assert_eq!(r.filters.len(), 2);
    let f = &r.filters[0];
    assert_eq!(f.types, vec![EventType::System, EventType::Contract]);
    assert_eq!(
        f.contract_ids[0],
        stellar_strkey::Contract::from_string(CONTRACT)
            .expect("c")
            .0
    );
    let t = |topics: &[&[u8]]| f.topics.iter().any(|p| p.matches(topics));
    assert!(t(&[&transfer_xdr, b"x"]));
    assert!(t(&[&transfer_xdr, b"x", b"y"]));
    assert!(!t(&[b"x", b"y"]));
    assert!(t(&[b"x"]));
    assert_eq!(r.filters[1], Filter::default());
    // Defaults: limit 100, base64, no end.
    let r = check(json!({"startLedger": 1})).expect("valid");
    assert_eq!(
        (r.limit, r.format, r.end_ledger),
        (100, Format::Base64, None)
    );
    assert!(r.filters.is_empty());
}

#[test]
fn a_cursor_resumes_after_the_event_it_names() {
    let id = "0000000030064775168-0000000003";
    let r = check(json!({"pagination": {"cursor": id, "limit": 10000}})).expect("valid");
    let c = EventId::parse(id).expect("id");
    assert_eq!(r.from, From::After(c));
    assert_eq!(r.query().start.index, 4);
    assert_eq!(r.limit, 10_000);
}

#[test]
fn every_refusal_has_stellar_rpcs_words() {
    let (transfer, _) = sym("transfer");
    let cases = [
        (json!({}), "startLedger must be positive"),
        (json!({"startLedger": 0}), "startLedger must be positive"),
        (
            json!({"startLedger": 5, "pagination": {"cursor": "0000000030064775168-0000000003"}}),
            "ledger ranges and cursor cannot both be set",
        ),
        (
            json!({"endLedger": 5, "pagination": {"cursor": "0000000030064775168-0000000003"}}),
            "ledger ranges and cursor cannot both be set",
        ),
        (
            json!({"startLedger": 1, "pagination": {"limit": 10001}}),
            "limit must not exceed 10000",
        ),
        (
            json!({"startLedger": 1, "filters": [{}, {}, {}, {}, {}, {}]}),
            "maximum 5 filters per request",
        ),
        (
            json!({"startLedger": 1, "filters": [{}, {"type": "diagnostic"}]}),
            "filter 2 invalid: filter type invalid: if set, type must be either 'system' or 'contract'",
        ),
        (
            json!({"startLedger": 1, "filters": [{"type": "system, contract"}]}),
            "filter 1 invalid: filter type invalid: if set, type must be either 'system' or 'contract'",
        ),
        (
            json!({"startLedger": 1, "filters": [{"contractIds": vec![CONTRACT; 6]}]}),
            "filter 1 invalid: maximum 5 contract IDs per filter",
        ),
        (
            json!({"startLedger": 1, "filters": [{"contractIds": [CONTRACT, "GABC"]}]}),
            "filter 1 invalid: contract ID 2 invalid",
        ),
        (
            json!({"startLedger": 1, "filters": [{"topics": [["*"], ["*"], ["*"], ["*"], ["*"], ["*"]]}]}),
            "filter 1 invalid: maximum 5 topics per filter",
        ),
        (
            json!({"startLedger": 1, "filters": [{"type": "contract,"}]}),
            "filter 1 invalid: filter type invalid: if set, type must be either 'system' or 'contract'",
        ),
        (
            json!({"startLedger": 1, "filters": [{"type": ","}]}),
            "filter 1 invalid: filter type invalid: if set, type must be either 'system' or 'contract'",
        ),
        (
            json!({"startLedger": 1, "filters": [{"topics": [[]]}]}),
            "filter 1 invalid: topic 1 invalid: topic must have at least one segment",
        ),
        (
            json!({"startLedger": 1, "filters": [{"topics": [["*"], ["*", "*", "*", "*", "*"]]}]}),
            "filter 1 invalid: topic 2 invalid: topic cannot have more than 4 segments",
        ),
        (
            json!({"startLedger": 1, "filters": [{"topics": [["**", transfer]]}]}),
            "filter 1 invalid: topic 1 invalid: segment 1 invalid: wildcard '**' is only allowed as the last segment",
        ),
    ];
    for (req, want) in cases {
        assert_eq!(refused(req.clone()), want, "{req}");
    }
    let m = refused(json!({"startLedger": 1, "filters": [{"topics": [["AAAA!"]]}]}));
    assert!(
        m.starts_with(
            "filter 1 invalid: topic 1 invalid: segment 1 invalid: expected '*', or an SCVal"
        ),
        "{m}"
    );
    let m = refused(json!({"pagination": {"cursor": "12"}}));
    assert!(m.starts_with("invalid cursor \"12\""), "{m}");
    let m = refused(json!({"startLedger": 1, "xdrFormat": "xml"}));
    assert!(
        m.contains("expected base64, json for optional 'xdrFormat'"),
        "{m}"
    );
}

#[test]
fn a_lone_double_star_matches_any_topics() {
    // go-stellar-sdk's TopicFilter.Valid counts the trailing "**".
    let r = check(json!({"startLedger": 1, "filters": [{"topics": [["**"]]}]})).expect("valid");
    let p = &r.filters[0].topics[0];
    assert!(p.matches(&[]));
    assert!(p.matches(&[b"a", b"b", b"c", b"d", b"e"]));
}

#[test]
fn a_segment_is_kept_in_its_canonical_encoding() {
    let (transfer, bytes) = sym("transfer");
    let r = check(json!({"startLedger": 1, "filters": [{"topics": [[transfer]]}]})).expect("ok");
    assert!(r.filters[0].topics[0].matches(&[&bytes]));
}
