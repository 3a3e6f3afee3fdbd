//! The generated skip functions ([`super::skip`]) that the event walk
//! ([`crate::events`]) calls for the parts of a `TransactionMeta` it does
//! not look into, and the generated `TransactionMeta` skipper whole, whose
//! verdict the event walk must match on any bytes (tests hold it to that).

use super::cursor::{Cur, Res};
use super::skip;

/// `ExtensionPoint`.
pub(crate) fn extension_point(c: &mut Cur<'_>, d: u32) -> Res {
    skip::s_extension_point(c, d)
}

/// `LedgerEntryChanges`.
pub(crate) fn ledger_entry_changes(c: &mut Cur<'_>, d: u32) -> Res {
    skip::s_ledger_entry_changes(c, d)
}

/// `OperationMeta` (meta V0 to V3).
pub(crate) fn operation_meta(c: &mut Cur<'_>, d: u32) -> Res {
    skip::s_operation_meta(c, d)
}

/// `TransactionMetaV1`.
pub(crate) fn transaction_meta_v1(c: &mut Cur<'_>, d: u32) -> Res {
    skip::s_transaction_meta_v1(c, d)
}

/// `TransactionMetaV2`.
pub(crate) fn transaction_meta_v2(c: &mut Cur<'_>, d: u32) -> Res {
    skip::s_transaction_meta_v2(c, d)
}

/// `SorobanTransactionMetaExt`.
pub(crate) fn soroban_transaction_meta_ext(c: &mut Cur<'_>, d: u32) -> Res {
    skip::s_soroban_transaction_meta_ext(c, d)
}

/// `SorobanTransactionMetaV2`.
pub(crate) fn soroban_transaction_meta_v2(c: &mut Cur<'_>, d: u32) -> Res {
    skip::s_soroban_transaction_meta_v2(c, d)
}

/// `DiagnosticEvent`.
pub(crate) fn diagnostic_event(c: &mut Cur<'_>, d: u32) -> Res {
    skip::s_diagnostic_event(c, d)
}

/// `ContractID` (a `Hash`: 32 bytes).
pub(crate) fn contract_id(c: &mut Cur<'_>, d: u32) -> Res {
    skip::s_contract_id(c, d)
}

/// `SCVal`.
pub(crate) fn sc_val(c: &mut Cur<'_>, d: u32) -> Res {
    skip::s_sc_val(c, d)
}

/// `TransactionMeta`, whole (the generated skipper).
pub(crate) fn transaction_meta(c: &mut Cur<'_>, d: u32) -> Res {
    skip::s_transaction_meta(c, d)
}
