//! Event extraction on metas built for the purpose: stellar-rpc's ids for
//! every stage (no real ledger has an `AFTER_TX` event), ids it cannot
//! build refused, and values nested past the depth limit refused.

mod events_corpora;

use events_corpora::{check, ctx};
use ledgerstore_stellar::StellarError;
use ledgerstore_stellar::events::{Events, LedgerCounts, Stage, TxContext, reference, tx_events};
use stellar_xdr::{
    ContractEvent, ContractEventBody, ContractEventType, ContractEventV0, ExtensionPoint, Limits,
    OperationMetaV2, ScVal, TransactionEvent, TransactionEventStage, TransactionMeta,
    TransactionMetaV4, WriteXdr,
};

fn event(topics: usize, value: ScVal) -> ContractEvent {
    ContractEvent {
        ext: ExtensionPoint::V0,
        contract_id: None,
        type_: ContractEventType::Contract,
        body: ContractEventBody::V0(ContractEventV0 {
            topics: vec![ScVal::U32(1); topics].try_into().expect("topics"),
            data: value,
        }),
    }
}

fn v4(ops: usize, op_events: Vec<(usize, ContractEvent)>) -> Vec<u8> {
    v4_staged(ops, op_events, vec![])
}

fn v4_staged(
    ops: usize,
    op_events: Vec<(usize, ContractEvent)>,
    staged: Vec<(TransactionEventStage, ContractEvent)>,
) -> Vec<u8> {
    let mut operations: Vec<OperationMetaV2> = (0..ops)
        .map(|_| OperationMetaV2 {
            ext: ExtensionPoint::V0,
            changes: Default::default(),
            events: Default::default(),
        })
        .collect();
    for (op, e) in op_events {
        let mut evs = operations[op].events.to_vec();
        evs.push(e);
        operations[op].events = evs.try_into().expect("events");
    }
    TransactionMeta::V4(TransactionMetaV4 {
        ext: ExtensionPoint::V0,
        tx_changes_before: Default::default(),
        operations: operations.try_into().expect("ops"),
        tx_changes_after: Default::default(),
        soroban_meta: None,
        events: staged
            .into_iter()
            .map(|(stage, event)| TransactionEvent { stage, event })
            .collect::<Vec<_>>()
            .try_into()
            .expect("events"),
        diagnostic_events: Default::default(),
    })
    .to_xdr(Limits::none())
    .expect("xdr")
}

#[test]
fn events_ids_stellar_rpc_cannot_build_are_refused() {
    let run = |meta: &[u8], tx: TxContext| {
        tx_events(
            meta,
            0,
            &tx,
            &mut LedgerCounts::default(),
            &mut Events::default(),
        )
    };
    // Operation 4094 is the last with an id; 4095 is a stage's.
    let ok = v4(4095, vec![(4094, event(2, ScVal::Void))]);
    let mut out = Events::default();
    tx_events(&ok, 0, &ctx(0), &mut LedgerCounts::default(), &mut out).expect("op 4094");
    assert_eq!(out.list[0].stage, Stage::Operation(4094));
    assert_eq!(out.list[0].id.to_string(), "0270982294297124862-0000000000");
    let bad = v4(4096, vec![(4095, event(2, ScVal::Void))]);
    assert!(matches!(
        run(&bad, ctx(0)),
        Err(StellarError::Format { .. })
    ));
    // Application order 0xFFFFF is the after-all-txs events'.
    let one = v4(1, vec![(0, event(0, ScVal::Void))]);
    assert!(run(&one, ctx(0xF_FFFD)).is_ok());
    assert!(matches!(
        run(&one, ctx(0xF_FFFE)),
        Err(StellarError::Format { .. })
    ));
    assert!(matches!(
        run(&one, ctx(u32::MAX)),
        Err(StellarError::Format { .. })
    ));
    // Go's toid takes the ledger as an int32.
    let high = TxContext {
        ledger: 1 << 31,
        ..ctx(0)
    };
    assert!(matches!(run(&one, high), Err(StellarError::Format { .. })));
    // Without events there is no id to build.
    assert!(run(&v4(1, vec![]), high).is_ok());
}

#[test]
fn events_deep_values_are_refused_at_the_depth_limit_not_by_the_stack() {
    // An SCVal vec nested 1,000 deep, as an operation event's value.
    let shallow = v4(1, vec![(0, event(1, ScVal::Void))]);
    let void = ScVal::Void.to_xdr(Limits::none()).expect("xdr");
    let at = shallow.len() - 4 * 4 - void.len(); // before the last 4 words
    let mut deep = shallow[..at].to_vec();
    for _ in 0..1_000 {
        deep.extend_from_slice(&[0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 1]); // SCV_VEC, some, 1
    }
    deep.extend_from_slice(&void);
    deep.extend_from_slice(&shallow[at + void.len()..]);
    assert!(!check(&deep, "1,000 nested vecs"));
    let mut out = Events::default();
    let e = tx_events(&deep, 0, &ctx(0), &mut LedgerCounts::default(), &mut out).expect_err("deep");
    assert!(e.to_string().contains("depth"), "{e}");
}

/// Every stage at once (no real ledger has an `AFTER_TX` event): ids as
/// stellar-rpc's `InsertEvents` builds them, in id order, counters
/// carried across the ledger's transactions, equal to the typed decode.
#[test]
fn events_of_every_stage_get_stellar_rpcs_ids() {
    use TransactionEventStage::{AfterAllTxs, AfterTx, BeforeAllTxs};
    let e = |n: u32| event(1, ScVal::U32(n));
    let meta = v4_staged(
        3,
        vec![(0, e(0)), (2, e(1)), (2, e(2))],
        vec![
            (AfterAllTxs, e(3)),
            (BeforeAllTxs, e(4)),
            (AfterTx, e(5)),
            (BeforeAllTxs, e(6)),
            (AfterTx, e(7)),
        ],
    );
    // The ledger's 10th tx (apply index 9); 4 fee events and 1 refund before it.
    let mut counts = LedgerCounts {
        before_all_txs: 4,
        after_all_txs: 1,
    };
    let mut counts_ref = counts;
    let tx = TxContext {
        successful: false,
        ..ctx(9)
    };
    let mut out = Events::default();
    tx_events(&meta, 100, &tx, &mut counts, &mut out).expect("events");
    let toid = |t: u64, o: u64| (63_092_982u64 << 32) | (t << 12) | o;
    let want = [
        (toid(0, 0), 4, 4),
        (toid(0, 0), 5, 6),
        (toid(10, 0), 0, 0),
        (toid(10, 2), 0, 1),
        (toid(10, 2), 1, 2),
        (toid(10, 0xFFF), 0, 5),
        (toid(10, 0xFFF), 1, 7),
        (toid(0xF_FFFF, 0), 1, 3),
    ];
    let got: Vec<(String, u32)> = out
        .list
        .iter()
        .map(|ev| {
            let value = &meta[ev.value.offset - 100..][..ev.value.len];
            (
                ev.id.to_string(),
                u32::from_be_bytes(value[4..8].try_into().expect("u32")),
            )
        })
        .collect();
    let want: Vec<(String, u32)> = want
        .iter()
        .map(|&(t, i, v)| (format!("{t:019}-{i:010}"), v))
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        counts,
        LedgerCounts {
            before_all_txs: 6,
            after_all_txs: 2
        }
    );
    assert!(
        out.list
            .iter()
            .all(|ev| !ev.in_successful_contract_call && ev.apply_index == 9)
    );
    let shifted: Vec<u8> = [vec![0; 100], meta.clone()].concat();
    let typed = reference::tx(&meta, &tx, &mut counts_ref).expect("typed");
    assert!(out.to_owned_events(&shifted) == typed);
    assert_eq!(counts_ref, counts);
}
