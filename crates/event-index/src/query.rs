//! getEvents filters, as stellar-rpc v28 applies them (go-stellar-sdk
//! `protocols/rpc/get_events.go`): a request matches an event if it has no
//! filters or any filter matches; a filter matches if its type set (empty:
//! any) holds the event's type, its contract ids (empty: any) hold the
//! event's contract id, and any of its topic patterns (none: any) matches
//! the event's topics. A pattern of `k` segments matches exactly `k`
//! topics, segment by segment (`*` any value); one ending in `**` matches
//! at least `k - 1` topics by its first `k - 1` segments.

use ledgerstore_stellar::events::{EventId, EventType};

use crate::error::{EventIndexError, EventIndexResult};
use crate::keys::TOPIC_POSITIONS;

/// Filters per request, contract ids per filter, topic patterns per
/// filter (go-stellar-sdk's `MaxFiltersLimit`, `MaxContractIDsLimit`,
/// `MaxTopicsLimit`).
pub const MAX_FILTERS: usize = 5;
/// See [`MAX_FILTERS`].
pub const MAX_CONTRACT_IDS: usize = 5;
/// See [`MAX_FILTERS`].
pub const MAX_TOPICS: usize = 5;

/// One segment of a topic pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// An `SCVal`'s XDR bytes: the topic at this position must equal it.
    Value(Vec<u8>),
    /// `*`: any one topic.
    Any,
    /// `**`: any number of further topics (last segment only).
    Rest,
}

/// A validated topic pattern: value or `*` segments, maybe a trailing `**`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicPattern {
    /// The segments before any `**`: `None` is `*`.
    pub(crate) fixed: Vec<Option<Vec<u8>>>,
    /// Whether it ends with `**`.
    pub(crate) rest: bool,
}

impl TopicPattern {
    /// Validates as go-stellar-sdk's `TopicFilter.Valid`: at least one
    /// segment, `**` only last, at most 4 segments before it.
    pub fn new(segments: Vec<Segment>) -> EventIndexResult<Self> {
        if segments.is_empty() {
            return Err(EventIndexError::Query("a topic needs a segment".into()));
        }
        let rest = segments.last() == Some(&Segment::Rest);
        let body = &segments[..segments.len() - usize::from(rest)];
        let mut fixed = Vec::with_capacity(body.len());
        for s in body {
            fixed.push(match s {
                Segment::Value(v) => Some(v.clone()),
                Segment::Any => None,
                Segment::Rest => {
                    return Err(EventIndexError::Query("'**' is only allowed last".into()));
                }
            });
        }
        if fixed.len() > TOPIC_POSITIONS {
            return Err(EventIndexError::Query(format!(
                "a topic has at most {TOPIC_POSITIONS} segments"
            )));
        }
        Ok(TopicPattern { fixed, rest })
    }

    /// Whether the pattern matches an event's topics.
    pub fn matches(&self, topics: &[&[u8]]) -> bool {
        let count_ok = if self.rest {
            topics.len() >= self.fixed.len()
        } else {
            topics.len() == self.fixed.len()
        };
        count_ok
            && self
                .fixed
                .iter()
                .zip(topics)
                .all(|(s, t)| s.as_ref().is_none_or(|v| v.as_slice() == *t))
    }
}

/// One getEvents filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// `system` and/or `contract`; empty for any.
    pub types: Vec<EventType>,
    /// Contract ids (raw 32 bytes); empty for any.
    pub contract_ids: Vec<[u8; 32]>,
    /// Topic patterns; empty for any.
    pub topics: Vec<TopicPattern>,
}

impl Filter {
    /// Whether the filter matches an event.
    pub fn matches(&self, kind: EventType, contract: Option<&[u8; 32]>, topics: &[&[u8]]) -> bool {
        (self.types.is_empty() || self.types.contains(&kind))
            && (self.contract_ids.is_empty()
                || contract.is_some_and(|c| self.contract_ids.contains(c)))
            && (self.topics.is_empty() || self.topics.iter().any(|p| p.matches(topics)))
    }
}

/// A query: filters, and the ids to search, `start` (inclusive) up to
/// `end` (exclusive, None for the end of the file). For a
/// `pagination.cursor`, stellar-rpc starts right after it: use
/// [`Query::after`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The filters (none: every event).
    pub filters: Vec<Filter>,
    /// The first id to consider.
    pub start: EventId,
    /// The first id not to consider.
    pub end: Option<EventId>,
}

impl Query {
    /// A query from `start_ledger`'s first event on.
    pub fn from_ledger(filters: Vec<Filter>, start_ledger: u32) -> Self {
        Query {
            filters,
            start: EventId {
                ledger: start_ledger,
                tx: 0,
                op: 0,
                index: 0,
            },
            end: None,
        }
    }

    /// A query from the event after `cursor` on (stellar-rpc increments
    /// the cursor's event index and searches from there).
    pub fn after(filters: Vec<Filter>, cursor: EventId) -> Self {
        let mut start = cursor;
        start.index = start.index.saturating_add(1);
        Query {
            filters,
            start,
            end: None,
        }
    }

    /// Checks getEvents' limits and types.
    pub fn validate(&self) -> EventIndexResult<()> {
        if self.filters.len() > MAX_FILTERS {
            return Err(EventIndexError::Query(format!(
                "at most {MAX_FILTERS} filters"
            )));
        }
        for f in &self.filters {
            if f.contract_ids.len() > MAX_CONTRACT_IDS || f.topics.len() > MAX_TOPICS {
                return Err(EventIndexError::Query(format!(
                    "at most {MAX_CONTRACT_IDS} contract ids and {MAX_TOPICS} topics per filter"
                )));
            }
            if f.types.contains(&EventType::Diagnostic) {
                return Err(EventIndexError::Query(
                    "type must be 'system' or 'contract'".into(),
                ));
            }
        }
        Ok(())
    }

    /// Whether the request's filters match an event (the exact check a
    /// reader applies to each candidate the index returns).
    pub fn matches(&self, kind: EventType, contract: Option<&[u8; 32]>, topics: &[&[u8]]) -> bool {
        self.filters.is_empty()
            || self
                .filters
                .iter()
                .any(|f| f.matches(kind, contract, topics))
    }
}
