//! Event extraction on hostile bytes: every truncation and word mutation
//! of real metas is refused or read exactly as the walker's generated
//! skipper and the typed decode say, never with a panic; and the
//! generated skip functions the event walk mirrors (`src/events/meta.rs`)
//! are pinned, so a schema change cannot pass unnoticed.

mod events_corpora;

use events_corpora::{PUBNET_2026, check, corpus, ctx};
use ledgerstore_stellar::events::{Events, LedgerCounts, Stage, tx_events};
use ledgerstore_stellar::walk::walk;

/// The generated functions `src/events/meta.rs` mirrors, as
/// `src/walk/skip.rs` has them (which `tests/walk_schema.rs` holds to the
/// schema). If this fails, the schema changed: update `meta.rs` to the
/// new text, then this copy.
const MIRRORED: &str = r#"
pub(super) fn s_transaction_meta(c: &mut Cur<'_>, d: u32) -> Res {
    let start = c.pos();
    let d = c.level(d)?;
    let at = c.pos();
    match c.int(d)? {
        0 => c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| s_operation_meta(c, d))?,
        1 => s_transaction_meta_v1(c, d)?,
        2 => s_transaction_meta_v2(c, d)?,
        3 => s_transaction_meta_v3(c, d)?,
        4 => s_transaction_meta_v4(c, d)?,
        _ => return Err(c.fail(at, Why::Arm("TransactionMeta"))),
    }
    let end = [start, c.pos()];
    c.record(Kind::TransactionMeta, &end);
    Ok(())
}
pub(super) fn s_transaction_meta_v3(c: &mut Cur<'_>, d: u32) -> Res {
    let d = c.level(d)?;
    s_extension_point(c, d)?;
    s_ledger_entry_changes(c, d)?;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| s_operation_meta(c, d))?;
    s_ledger_entry_changes(c, d)?;
    c.optional(d, |c: &mut Cur<'_>, d: u32| s_soroban_transaction_meta(c, d))?;
    Ok(())
}
pub(super) fn s_transaction_meta_v4(c: &mut Cur<'_>, d: u32) -> Res {
    let d = c.level(d)?;
    s_extension_point(c, d)?;
    s_ledger_entry_changes(c, d)?;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| s_operation_meta_v2(c, d))?;
    s_ledger_entry_changes(c, d)?;
    c.optional(d, |c: &mut Cur<'_>, d: u32| s_soroban_transaction_meta_v2(c, d))?;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| s_transaction_event(c, d))?;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| s_diagnostic_event(c, d))?;
    Ok(())
}
pub(super) fn s_soroban_transaction_meta(c: &mut Cur<'_>, d: u32) -> Res {
    let d = c.level(d)?;
    s_soroban_transaction_meta_ext(c, d)?;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| s_contract_event(c, d))?;
    s_sc_val(c, d)?;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| s_diagnostic_event(c, d))?;
    Ok(())
}
pub(super) fn s_operation_meta_v2(c: &mut Cur<'_>, d: u32) -> Res {
    let d = c.level(d)?;
    s_extension_point(c, d)?;
    s_ledger_entry_changes(c, d)?;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| s_contract_event(c, d))?;
    Ok(())
}
pub(super) fn s_transaction_event(c: &mut Cur<'_>, d: u32) -> Res {
    let d = c.level(d)?;
    s_transaction_event_stage(c, d)?;
    s_contract_event(c, d)?;
    Ok(())
}
pub(super) fn s_transaction_event_stage(c: &mut Cur<'_>, d: u32) -> Res {
    let d = c.level(d)?;
    let at = c.pos();
    match c.int(d)? {
        0 | 1 | 2 => Ok(()),
        _ => Err(c.fail(at, Why::Enum("TransactionEventStage"))),
    }
}
pub(super) fn s_contract_event(c: &mut Cur<'_>, d: u32) -> Res {
    let d = c.level(d)?;
    s_extension_point(c, d)?;
    c.optional(d, |c: &mut Cur<'_>, d: u32| s_contract_id(c, d))?;
    s_contract_event_type(c, d)?;
    s_contract_event_body(c, d)?;
    Ok(())
}
pub(super) fn s_contract_event_type(c: &mut Cur<'_>, d: u32) -> Res {
    let d = c.level(d)?;
    let at = c.pos();
    match c.int(d)? {
        0 | 1 | 2 => Ok(()),
        _ => Err(c.fail(at, Why::Enum("ContractEventType"))),
    }
}
pub(super) fn s_contract_event_body(c: &mut Cur<'_>, d: u32) -> Res {
    let d = c.level(d)?;
    let at = c.pos();
    match c.int(d)? {
        0 => s_contract_event_v0(c, d)?,
        _ => return Err(c.fail(at, Why::Arm("ContractEventBody"))),
    }
    Ok(())
}
pub(super) fn s_contract_event_v0(c: &mut Cur<'_>, d: u32) -> Res {
    let d = c.level(d)?;
    c.array(d, u32::MAX, |c: &mut Cur<'_>, d: u32| s_sc_val(c, d))?;
    s_sc_val(c, d)?;
    Ok(())
}
pub(super) fn s_contract_id(c: &mut Cur<'_>, d: u32) -> Res {
    let d = c.level(d)?;
    s_hash(c, d)
}
"#;

#[test]
fn events_walk_mirrors_the_generated_skip_functions() {
    let skip = include_str!("../src/walk/skip.rs");
    let mut got = String::from("\n");
    for f in MIRRORED.split("pub(super) fn ").skip(1) {
        let name = &f[..f.find('(').expect("(")];
        let start = skip
            .find(&format!("pub(super) fn {name}("))
            .unwrap_or_else(|| panic!("{name} is gone from skip.rs"));
        let end = start + skip[start..].find("\n}\n").expect("end") + 3;
        got.push_str(&skip[start..end]);
    }
    assert_eq!(got, MIRRORED);
}

/// Small real metas with events: pubnet V4 (fee, operation and refund
/// events) and core-test V3 (`sorobanMeta.events`).
fn samples() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, version) in [(PUBNET_2026, 4u8), ("core-unit-test-lcms.tar.zst", 3)] {
        let mut best: Option<Vec<u8>> = None;
        let mut stages = std::collections::BTreeSet::new();
        for raw in corpus(name) {
            let slices = walk(&raw).expect("walk");
            for (i, a) in slices.applied.iter().enumerate() {
                let meta = a.meta.of(&raw);
                if meta[3] != version {
                    continue;
                }
                let mut evs = Events::default();
                tx_events(
                    meta,
                    0,
                    &ctx(i as u32),
                    &mut LedgerCounts::default(),
                    &mut evs,
                )
                .expect("real");
                let kinds: std::collections::BTreeSet<u8> = evs
                    .list
                    .iter()
                    .map(|e| match e.stage {
                        Stage::BeforeAllTxs => 0,
                        Stage::Operation(_) => 1,
                        Stage::AfterTx => 2,
                        Stage::AfterAllTxs => 3,
                    })
                    .collect();
                let richer = kinds.len() > stages.len();
                let smaller = kinds.len() == stages.len()
                    && best.as_ref().is_some_and(|b| meta.len() < b.len());
                if !evs.list.is_empty() && (best.is_none() || richer || smaller) {
                    best = Some(meta.to_vec());
                    stages = kinds;
                }
            }
        }
        let best = best.expect("a meta with events");
        out.push((format!("{name} V{version} ({} bytes)", best.len()), best));
    }
    out
}

#[test]
fn events_every_truncation_is_refused_as_the_skipper_refuses_it() {
    for (what, meta) in samples() {
        assert!(check(&meta, &what));
        for n in 0..meta.len() {
            assert!(!check(&meta[..n], &format!("{what} cut at {n}")));
        }
        let mut longer = meta.clone();
        longer.extend_from_slice(&[0, 0, 0, 0]);
        assert!(!check(&longer, &format!("{what} + 4 bytes")));
    }
}

#[test]
fn events_every_word_mutated_agrees_with_the_skipper_and_the_typed_decode() {
    for (what, meta) in samples() {
        let (mut accepted, mut refused) = (0, 0);
        for at in (0..meta.len()).step_by(4) {
            let word = u32::from_be_bytes(meta[at..at + 4].try_into().expect("4"));
            for v in [
                0,
                1,
                2,
                3,
                0x7FFF_FFFF,
                u32::MAX,
                word.wrapping_add(1),
                word ^ 0x100,
            ] {
                if v == word {
                    continue;
                }
                let mut m = meta.clone();
                m[at..at + 4].copy_from_slice(&v.to_be_bytes());
                if check(&m, &format!("{what}: word {at} = {v:#x}")) {
                    accepted += 1;
                } else {
                    refused += 1;
                }
            }
        }
        eprintln!("{what}: {accepted} accepted, {refused} refused");
        assert!(accepted > 0 && refused > 0, "{what}: {accepted} {refused}");
    }
}
