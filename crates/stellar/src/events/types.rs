//! The events' types.

use super::EventId;
use crate::walk::Span;

/// An event's `type`, as stellar-rpc names it (`ContractEventType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `SYSTEM` (0).
    System,
    /// `CONTRACT` (1).
    Contract,
    /// `DIAGNOSTIC` (2).
    Diagnostic,
}

impl EventType {
    pub(super) fn from_xdr(v: u32) -> Self {
        match v {
            0 => EventType::System,
            1 => EventType::Contract,
            _ => EventType::Diagnostic,
        }
    }

    /// stellar-rpc's name: `system`, `contract` or `diagnostic`.
    pub fn as_str(&self) -> &'static str {
        match self {
            EventType::System => "system",
            EventType::Contract => "contract",
            EventType::Diagnostic => "diagnostic",
        }
    }
}

/// Where in the transaction's application an event was emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// A transaction-level event before all transactions (fees).
    BeforeAllTxs,
    /// An event of operation n (0-based).
    Operation(u32),
    /// A transaction-level event after the transaction.
    AfterTx,
    /// A transaction-level event after all transactions (refunds).
    AfterAllTxs,
}

/// The transaction whose meta is walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxContext {
    /// The ledger's sequence.
    pub ledger: u32,
    /// The transaction's apply index (0-based position in `txProcessing`;
    /// stellar-rpc's application order is this + 1).
    pub apply_index: u32,
    /// Its hash (`TransactionResultPair.transactionHash`).
    pub hash: [u8; 32],
    /// Whether it succeeded ([`successful`](super::successful)).
    pub successful: bool,
}

/// The ledger-wide counters of the stage events before and after all
/// transactions: how many the ledger's earlier transactions had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LedgerCounts {
    /// `BEFORE_ALL_TXS` events so far.
    pub before_all_txs: u32,
    /// `AFTER_ALL_TXS` events so far.
    pub after_all_txs: u32,
}

/// One event getEvents serves. Its spans are offsets into the bytes its
/// meta sits in at `base` ([`tx_events`](super::tx_events)): the raw
/// ledger for [`ledger_events`](super::ledger_events).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its id; `id.tx` and `id.op` are its `transactionIndex` and
    /// `operationIndex`.
    pub id: EventId,
    /// Where it was emitted.
    pub stage: Stage,
    /// Its `type`.
    pub kind: EventType,
    /// Its transaction's apply index (0-based), whatever the stage.
    pub apply_index: u32,
    /// Its transaction's hash.
    pub tx_hash: [u8; 32],
    /// `inSuccessfulContractCall`: the transaction succeeded.
    pub in_successful_contract_call: bool,
    /// Its contract id, if any.
    pub contract_id: Option<[u8; 32]>,
    /// The whole `ContractEvent`.
    pub event: Span,
    /// Its topics: indexes into [`Events::topics`] (see [`Events::topics_of`]).
    pub topics: std::ops::Range<usize>,
    /// Its value (`ContractEventV0.data`, an `SCVal`).
    pub value: Span,
}

/// Events and the spans of their topics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Events {
    /// The events, in id order.
    pub list: Vec<Event>,
    /// Every topic's `SCVal`, in event order.
    pub topics: Vec<Span>,
    /// `DiagnosticEvent`s walked past: stellar-rpc serves none of them.
    pub diagnostic_not_served: u64,
}

impl Events {
    /// The spans of `e`'s topics.
    pub fn topics_of(&self, e: &Event) -> &[Span] {
        self.topics.get(e.topics.clone()).unwrap_or(&[])
    }

    /// Owned copies of the events, their bytes taken from `bytes` (what
    /// the spans index).
    pub fn to_owned_events(&self, bytes: &[u8]) -> Vec<OwnedEvent> {
        self.list
            .iter()
            .map(|e| OwnedEvent {
                id: e.id,
                stage: e.stage,
                kind: e.kind,
                apply_index: e.apply_index,
                tx_hash: e.tx_hash,
                in_successful_contract_call: e.in_successful_contract_call,
                contract_id: e.contract_id,
                event: e.event.of(bytes).to_vec(),
                topics: self
                    .topics_of(e)
                    .iter()
                    .map(|s| s.of(bytes).to_vec())
                    .collect(),
                value: e.value.of(bytes).to_vec(),
            })
            .collect()
    }
}

/// An event with its bytes: what [`reference`](mod@super::reference)
/// returns, and what the tests compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedEvent {
    /// See [`Event`].
    pub id: EventId,
    /// See [`Event`].
    pub stage: Stage,
    /// See [`Event`].
    pub kind: EventType,
    /// See [`Event`].
    pub apply_index: u32,
    /// See [`Event`].
    pub tx_hash: [u8; 32],
    /// See [`Event`].
    pub in_successful_contract_call: bool,
    /// See [`Event`].
    pub contract_id: Option<[u8; 32]>,
    /// The `ContractEvent`'s XDR.
    pub event: Vec<u8>,
    /// Each topic's `SCVal` XDR.
    pub topics: Vec<Vec<u8>>,
    /// The value's `SCVal` XDR.
    pub value: Vec<u8>,
}
