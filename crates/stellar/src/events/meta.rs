//! The skip-based walk of one `TransactionMeta`: every `ContractEvent`
//! stellar-rpc serves, as byte ranges, with nothing decoded.
//!
//! The functions here mirror the generated skip functions of the types
//! that hold events (`TransactionMeta`, `TransactionMetaV3`,
//! `TransactionMetaV4`, `SorobanTransactionMeta`, `OperationMetaV2`,
//! `TransactionEvent`, `ContractEvent`, `ContractEventBody`,
//! `ContractEventV0`) call for call, so they read, refuse and spend depth
//! exactly as the walker does (`tests/events.rs` pins the generated text
//! they mirror and compares verdicts on every real meta and on mutated
//! ones); the rest of the meta is skipped by the generated functions.

use crate::walk::Span;
use crate::walk::cursor::{Cur, Res, Why};
use crate::walk::parts;

/// Where an event sits in its meta.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Operation `n`'s events (V3: `sorobanMeta.events`, as operation 0).
    Operation(u32),
    /// A transaction-level event (V4 `events`) of this `TransactionEventStage`.
    Stage(u32),
}

/// One `ContractEvent` found by the walk. Spans are offsets into the
/// walked meta.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    pub place: Place,
    pub event: Span,
    pub contract_id: Option<usize>,
    pub kind: u32,
    /// The first of its topics in [`Sink::topics`], and how many.
    pub topics: (usize, usize),
    pub value: Span,
}

/// What the walk collects.
#[derive(Debug, Default)]
pub(crate) struct Sink {
    pub found: Vec<Found>,
    pub topics: Vec<Span>,
    /// `DiagnosticEvent`s walked past (not served by getEvents).
    pub diagnostic: u64,
    /// The meta's version (the `TransactionMeta` arm).
    pub version: u32,
    /// Whether a V3 meta has a `sorobanMeta`.
    pub soroban_meta: bool,
}

/// Walks a whole `TransactionMeta` (all of `c`'s bytes are checked by the
/// caller) at depth `d`, as `s_transaction_meta`.
pub(crate) fn transaction_meta(c: &mut Cur<'_>, d: u32, out: &mut Sink) -> Res {
    let d = c.level(d)?;
    let at = c.pos();
    let arm = c.int(d)?;
    out.version = arm as u32;
    match arm {
        0 => c.array(d, u32::MAX, parts::operation_meta)?,
        1 => parts::transaction_meta_v1(c, d)?,
        2 => parts::transaction_meta_v2(c, d)?,
        3 => transaction_meta_v3(c, d, out)?,
        4 => transaction_meta_v4(c, d, out)?,
        _ => return Err(c.fail(at, Why::Arm("TransactionMeta"))),
    }
    Ok(())
}

fn transaction_meta_v3(c: &mut Cur<'_>, d: u32, out: &mut Sink) -> Res {
    let d = c.level(d)?;
    parts::extension_point(c, d)?;
    parts::ledger_entry_changes(c, d)?;
    c.array(d, u32::MAX, parts::operation_meta)?;
    parts::ledger_entry_changes(c, d)?;
    c.optional(d, |c: &mut Cur<'_>, d: u32| {
        out.soroban_meta = true;
        soroban_transaction_meta(c, d, out)
    })
}

fn soroban_transaction_meta(c: &mut Cur<'_>, d: u32, out: &mut Sink) -> Res {
    let d = c.level(d)?;
    parts::soroban_transaction_meta_ext(c, d)?;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| {
        contract_event(c, d, Place::Operation(0), out)
    })?;
    parts::sc_val(c, d)?;
    diagnostic_events(c, d, out)
}

fn transaction_meta_v4(c: &mut Cur<'_>, d: u32, out: &mut Sink) -> Res {
    let d = c.level(d)?;
    parts::extension_point(c, d)?;
    parts::ledger_entry_changes(c, d)?;
    let mut op = 0u32;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| {
        operation_meta_v2(c, d, op, out)?;
        op = op.saturating_add(1);
        Ok(())
    })?;
    parts::ledger_entry_changes(c, d)?;
    c.optional(d, parts::soroban_transaction_meta_v2)?;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| {
        transaction_event(c, d, out)
    })?;
    diagnostic_events(c, d, out)
}

fn operation_meta_v2(c: &mut Cur<'_>, d: u32, op: u32, out: &mut Sink) -> Res {
    let d = c.level(d)?;
    parts::extension_point(c, d)?;
    parts::ledger_entry_changes(c, d)?;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| {
        contract_event(c, d, Place::Operation(op), out)
    })
}

fn transaction_event(c: &mut Cur<'_>, d: u32, out: &mut Sink) -> Res {
    let d = c.level(d)?;
    // `TransactionEventStage` (enum).
    let stage = {
        let d = c.level(d)?;
        let at = c.pos();
        match c.int(d)? {
            v @ (0..=2) => v as u32,
            _ => return Err(c.fail(at, Why::Enum("TransactionEventStage"))),
        }
    };
    contract_event(c, d, Place::Stage(stage), out)
}

fn diagnostic_events(c: &mut Cur<'_>, d: u32, out: &mut Sink) -> Res {
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| {
        out.diagnostic += 1;
        parts::diagnostic_event(c, d)
    })
}

fn contract_event(c: &mut Cur<'_>, d: u32, place: Place, out: &mut Sink) -> Res {
    let start = c.pos();
    let d = c.level(d)?;
    parts::extension_point(c, d)?;
    let mut contract_id = None;
    c.optional(d, |c: &mut Cur<'_>, d: u32| {
        contract_id = Some(c.pos());
        parts::contract_id(c, d)
    })?;
    // `ContractEventType` (enum).
    let kind = {
        let d = c.level(d)?;
        let at = c.pos();
        match c.int(d)? {
            v @ (0..=2) => v as u32,
            _ => return Err(c.fail(at, Why::Enum("ContractEventType"))),
        }
    };
    // `ContractEventBody` (union): arm 0, `ContractEventV0`.
    let first = out.topics.len();
    let value = {
        let d = c.level(d)?;
        let at = c.pos();
        match c.int(d)? {
            0 => {}
            _ => return Err(c.fail(at, Why::Arm("ContractEventBody"))),
        }
        let d = c.level(d)?;
        c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| {
            let at = c.pos();
            parts::sc_val(c, d)?;
            out.topics.push(Span {
                offset: at,
                len: c.pos() - at,
            });
            Ok(())
        })?;
        let at = c.pos();
        parts::sc_val(c, d)?;
        Span {
            offset: at,
            len: c.pos() - at,
        }
    };
    out.found.push(Found {
        place,
        event: Span {
            offset: start,
            len: c.pos() - start,
        },
        contract_id,
        kind,
        topics: (first, out.topics.len() - first),
        value,
    });
    Ok(())
}
