//! `getEvents`' request, checked as stellar-rpc v28 checks it
//! (go-stellar-sdk `protocols/rpc/get_events.go`, `GetEventsRequest.Valid`
//! and `EventFilter.Valid`), in the same order and with the same words,
//! so a client sees the message it would see from stellar-rpc. Every
//! failure is -32602 (invalid params), as there.

use base64::Engine as _;
use ledgerstore_event_index::{Filter, MAX_CONTRACT_IDS, MAX_FILTERS, MAX_TOPICS, Segment};
use ledgerstore_event_index::{Query, TopicPattern};
use ledgerstore_stellar::events::{EventId, EventType};
use serde::Deserialize;
use stellar_xdr::{Limits, ReadXdr, ScVal, WriteXdr};

use crate::error::{RpcError, RpcResult};
use crate::params::Format;

/// stellar-rpc's page sizes for `getEvents` (its `--max-events-limit`
/// and `--default-events-limit`).
pub(crate) const DEFAULT_LIMIT: usize = 100;
/// See [`DEFAULT_LIMIT`].
pub(crate) const MAX_LIMIT: usize = 10_000;

/// Segments of a topic pattern, not counting a trailing `**`
/// (go-stellar-sdk's `MaxTopicCount`).
const MAX_SEGMENTS: usize = 4;

/// Bytes of one topic segment's XDR, as a client sends it: an `SCVal`
/// larger than this cannot be an event's topic (stellar-core bounds
/// contract event sizes far below it), so it is refused before decoding.
const MAX_SEGMENT_BYTES: usize = 64 << 10;

/// `getEvents`' params, as sent.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetEvents {
    start_ledger: Option<u32>,
    end_ledger: Option<u32>,
    filters: Option<Vec<FilterIn>>,
    pagination: Option<PaginationIn>,
    xdr_format: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FilterIn {
    #[serde(rename = "type")]
    kind: Option<String>,
    contract_ids: Option<Vec<String>>,
    topics: Option<Vec<Vec<String>>>,
}

#[derive(Debug, Default, Deserialize)]
struct PaginationIn {
    cursor: Option<String>,
    limit: Option<u64>,
}

/// Where the search starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum From {
    /// `startLedger`'s first event.
    Ledger(u32),
    /// The event after this cursor.
    After(EventId),
}

/// A checked `getEvents` request.
#[derive(Debug)]
pub(crate) struct EventsRequest {
    pub from: From,
    /// `endLedger` (exclusive), when set.
    pub end_ledger: Option<u32>,
    pub filters: Vec<Filter>,
    pub limit: usize,
    pub format: Format,
}

impl EventsRequest {
    /// The index query: the filters, from the first id to consider.
    pub(crate) fn query(&self) -> Query {
        match self.from {
            From::Ledger(l) => Query::from_ledger(self.filters.clone(), l),
            From::After(c) => Query::after(self.filters.clone(), c),
        }
    }
}

impl GetEvents {
    /// Checks the request in `GetEventsRequest.Valid`'s order.
    pub(crate) fn check(self) -> RpcResult<EventsRequest> {
        let format = Format::parse(self.xdr_format.as_deref())?;
        let (cursor, limit) = match self.pagination {
            Some(p) => (p.cursor, p.limit),
            None => (None, None),
        };
        let start = self.start_ledger.unwrap_or(0);
        let end = self.end_ledger.unwrap_or(0);
        let from = match cursor {
            Some(c) => {
                if start != 0 || end != 0 {
                    return Err(RpcError::params(
                        "ledger ranges and cursor cannot both be set",
                    ));
                }
                From::After(EventId::parse(&c).ok_or_else(|| {
                    RpcError::params(format!(
                        "invalid cursor {c:?}: expected an event id of an earlier page \
                         (\"<19-digit TOID>-<10-digit index>\")"
                    ))
                })?)
            }
            None if start == 0 => {
                return Err(RpcError::params("startLedger must be positive"));
            }
            None => From::Ledger(start),
        };
        let limit = match limit {
            None | Some(0) => DEFAULT_LIMIT,
            Some(n) if n > MAX_LIMIT as u64 => {
                return Err(RpcError::params(format!(
                    "limit must not exceed {MAX_LIMIT}"
                )));
            }
            Some(n) => n as usize,
        };
        let filters = self.filters.unwrap_or_default();
        if filters.len() > MAX_FILTERS {
            return Err(RpcError::params(format!(
                "maximum {MAX_FILTERS} filters per request"
            )));
        }
        let filters = filters
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                f.check()
                    .map_err(|e| RpcError::params(format!("filter {} invalid: {e}", i + 1)))
            })
            .collect::<RpcResult<Vec<_>>>()?;
        Ok(EventsRequest {
            from,
            end_ledger: (end != 0).then_some(end),
            filters,
            limit,
            format,
        })
    }
}

impl FilterIn {
    /// `EventFilter.Valid`, then the filter as the index takes it.
    fn check(self) -> Result<Filter, String> {
        let mut types = Vec::new();
        let kinds = self.kind.as_deref().unwrap_or("");
        // Go's EventTypeSet: "" is no type; otherwise every part split on
        // ',' must be a type (so "contract," is refused).
        for t in kinds.split(',').filter(|_| !kinds.is_empty()) {
            let t = match t {
                "system" => EventType::System,
                "contract" => EventType::Contract,
                _ => {
                    return Err(
                        "filter type invalid: if set, type must be either 'system' or \
                                'contract'"
                            .into(),
                    );
                }
            };
            if !types.contains(&t) {
                types.push(t);
            }
        }
        let ids = self.contract_ids.unwrap_or_default();
        let topics = self.topics.unwrap_or_default();
        if ids.len() > MAX_CONTRACT_IDS {
            return Err(format!(
                "maximum {MAX_CONTRACT_IDS} contract IDs per filter"
            ));
        }
        if topics.len() > MAX_TOPICS {
            return Err(format!("maximum {MAX_TOPICS} topics per filter"));
        }
        let mut contract_ids = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            let c = stellar_strkey::Contract::from_string(id)
                .map_err(|_| format!("contract ID {} invalid", i + 1))?;
            contract_ids.push(c.0);
        }
        let topics = topics
            .into_iter()
            .enumerate()
            .map(|(i, t)| topic(t).map_err(|e| format!("topic {} invalid: {e}", i + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Filter {
            types,
            contract_ids,
            topics,
        })
    }
}

/// `TopicFilter.Valid`: one to four segments, each `*` or a base64
/// `SCVal`, and maybe a trailing `**`.
fn topic(segments: Vec<String>) -> Result<TopicPattern, String> {
    let rest = segments.last().is_some_and(|s| s == "**");
    let body = &segments[..segments.len() - usize::from(rest)];
    // go-stellar-sdk counts a trailing "**" as a segment here: ["**"]
    // (any topics at all) is valid.
    if segments.is_empty() {
        return Err("topic must have at least one segment".into());
    }
    if body.len() > MAX_SEGMENTS {
        return Err(format!(
            "topic cannot have more than {MAX_SEGMENTS} segments"
        ));
    }
    let mut out = Vec::with_capacity(segments.len());
    for (i, s) in body.iter().enumerate() {
        out.push(segment(s).map_err(|e| format!("segment {} invalid: {e}", i + 1))?);
    }
    if rest {
        out.push(Segment::Rest);
    }
    TopicPattern::new(out).map_err(|e| e.to_string())
}

/// One segment: `*`, or an `SCVal` as base64 XDR, kept in its canonical
/// encoding (what the ledger's topics hold, and the index keys).
fn segment(s: &str) -> Result<Segment, String> {
    match s {
        "*" => return Ok(Segment::Any),
        "**" => return Err("wildcard '**' is only allowed as the last segment".into()),
        _ => {}
    }
    if s.len() > MAX_SEGMENT_BYTES / 3 * 4 + 4 {
        return Err(format!(
            "{} characters: an SCVal of at most {MAX_SEGMENT_BYTES} bytes is expected",
            s.len()
        ));
    }
    let xdr = base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| format!("expected '*', or an SCVal as base64 XDR (got {s:?}: {e})"))?;
    let limits = Limits {
        depth: crate::xdr::MAX_DEPTH,
        len: xdr.len(),
    };
    let val = ScVal::from_xdr(&xdr, limits)
        .map_err(|e| format!("expected '*', or an SCVal as base64 XDR (got {s:?}: {e})"))?;
    let bytes = val
        .to_xdr(Limits::none())
        .map_err(|e| format!("re-encoding the SCVal: {e}"))?;
    Ok(Segment::Value(bytes))
}

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;
