//! The `events` target: contract events cut out of `TransactionMeta`
//! bytes by the skip-based walk (`ledgerstore_stellar::events::tx_events`,
//! `ledger_events`), held to the typed decode (`events::reference`) and to
//! the walker's generated skipper (`events::validate_meta`). The first
//! byte picks what the rest is (modulo 3):
//!
//! - 0, one meta: the next byte draws the transaction's context (ledger
//!   and apply index near the limits of stellar-rpc's ids, success, the
//!   ledger's stage counters so far, and where the meta sits in a larger
//!   buffer, so spans are checked with a `base`); the rest is the meta.
//! - 1, one ledger's metas in apply order: chunks of a 2-byte big-endian
//!   length and that many bytes (the last chunk takes what is left), run
//!   with shared stage counters and spans into the input itself, as
//!   [`ledger_events`] runs them over a raw ledger.
//! - 2, a whole `LedgerCloseMeta` (a real ledger's meta slots mutated in
//!   place): [`walk`], then [`ledger_events`], against
//!   [`reference::ledger`].
//!
//! Both accept, with the same events, the same ids and the same counters
//! (and the walk's spans tile each event as the format says), or both
//! refuse. The walk alone may refuse only what the `xdr` target excuses:
//! a bool other than 0 or 1, at the first word where the bytes differ
//! from the typed decode re-encoded ([`check_refusal`]); the walk must
//! then read that re-encoding to the reference's events. The walk's
//! verdict on a meta is always the generated skipper's, word for word;
//! a refusal leaves the counters and the output as they were.

use ledgerstore_stellar::StellarError;
use ledgerstore_stellar::events::{
    Events, LedgerCounts, OP_MASK, OwnedEvent, Stage, TX_MASK, TxContext, ledger_events, reference,
    tx_events, validate_meta,
};
use ledgerstore_stellar::extract::{check_refusal, limits};
use ledgerstore_stellar::walk::walk;
use stellar_xdr::{LedgerCloseMeta, ReadXdr, TransactionMeta, WriteXdr};

/// A pubnet ledger of the seeds' corpus (its ids are in range).
pub const LEDGER: u32 = 63_092_982;

/// Ledgers drawn by mode 0: a real one, the first, and either side of
/// the largest ledger a stellar-rpc id holds (`i32::MAX`).
const LEDGERS: [u32; 4] = [LEDGER, 1, i32::MAX as u32, i32::MAX as u32 + 1];

/// Apply indexes drawn by mode 0, either side of the largest order an id
/// holds (`TX_MASK - 1`, as the order is the index + 1).
const APPLY_INDEXES: [u32; 8] = [
    0,
    1,
    3,
    200,
    TX_MASK - 3,
    TX_MASK - 2,
    TX_MASK - 1,
    u32::MAX,
];

/// Metas mode 1 reads at most (more would only slow the fuzzer).
const MAX_METAS: usize = 16;

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    match pick % 3 {
        0 => one_meta(rest),
        1 => metas(data),
        _ => whole_ledger(rest),
    }
}

/// Mode 0's context byte: bits 0-1 the ledger, 2-4 the apply index, 5
/// success, 6-7 the stage counters so far and the meta's offset.
pub fn context(c: u8) -> (TxContext, LedgerCounts, usize) {
    let tx = TxContext {
        ledger: LEDGERS[usize::from(c & 3)],
        apply_index: APPLY_INDEXES[usize::from((c >> 2) & 7)],
        hash: [c; 32],
        successful: c & 0x20 != 0,
    };
    let high = u32::from(c >> 6);
    let counts = LedgerCounts {
        before_all_txs: high * 7,
        after_all_txs: high * 3,
    };
    (tx, counts, usize::from(c >> 6) * 5)
}

fn one_meta(rest: &[u8]) {
    let Some((&c, meta)) = rest.split_first() else {
        return;
    };
    let (tx, counts, base) = context(c);
    // The meta at `base` in a larger buffer (an odd offset: nothing may
    // assume alignment), so every span must be shifted by exactly `base`.
    let mut buf = vec![0xA5u8; base];
    buf.extend_from_slice(meta);
    let mut walked = counts;
    let mut typed = counts;
    compare(&buf, base, meta.len(), &tx, &mut walked, &mut typed);
}

/// One meta (`buf[base..base + len]`) through the walk, the skipper and
/// the typed decode, continuing from the counters `walked` (the walk's)
/// and `typed` (the reference's), which it advances. Returns the events
/// both read (None if both refuse).
fn compare(
    buf: &[u8],
    base: usize,
    len: usize,
    tx: &TxContext,
    walked: &mut LedgerCounts,
    typed: &mut LedgerCounts,
) -> Option<Vec<OwnedEvent>> {
    let meta = &buf[base..base + len];
    let before = *walked;
    let mut out = Events::default();
    let got = tx_events(meta, base, tx, walked, &mut out);
    let skipper = validate_meta(meta);
    let want = reference::tx(meta, tx, typed);
    match (&got, &skipper) {
        // The walk refuses exactly what the skipper refuses, as it does.
        (Err(StellarError::Xdr { detail, .. }), Err(fail)) => {
            assert_eq!(
                *detail,
                fail.to_string(),
                "the walk and the skipper refuse differently"
            )
        }
        // Or accepts it and refuses an id stellar-rpc cannot build.
        (Err(StellarError::Format { .. }), Ok(())) | (Ok(()), Ok(())) => {}
        (got, skipper) => panic!("the event walk says {got:?}, the skipper {skipper:?}"),
    }
    if got.is_err() {
        assert_eq!(*walked, before, "a refusal moved the stage counters");
        assert!(out == Events::default(), "a refusal left events behind");
    }
    match (got, want) {
        (Ok(()), Ok(want)) => {
            check_spans(&out, buf, base, len, tx);
            assert!(
                out.to_owned_events(buf) == want,
                "the event walk and the typed decode read different events"
            );
            assert_eq!(walked, typed, "different stage counters");
            Some(want)
        }
        (Err(_), Err(_)) => {
            assert_eq!(
                *typed, before,
                "a refusal moved the typed decode's counters"
            );
            None
        }
        (Ok(()), Err(e)) => panic!("the event walk accepts a meta the typed decode refuses: {e}"),
        (Err(e), Ok(want)) => {
            let Err(fail) = skipper else {
                panic!("the event walk refuses an id the typed decode builds: {e}");
            };
            let m = TransactionMeta::from_xdr(meta, limits(meta.len()))
                .unwrap_or_else(|e| panic!("the typed decode accepted, then refused: {e}"));
            let canonical = m
                .to_xdr(stellar_xdr::Limits::none())
                .unwrap_or_else(|e| panic!("the typed decode does not re-encode: {e}"));
            if let Err(why) = check_refusal(meta, &canonical, &fail) {
                panic!("the event walk refuses a meta the typed decode takes ({e}): {why}");
            }
            let mut again = Events::default();
            if let Err(e) = tx_events(&canonical, 0, tx, walked, &mut again) {
                panic!("the event walk refuses the typed decode's re-encoding: {e}");
            }
            assert!(
                again.to_owned_events(&canonical) == want,
                "the event walk reads the re-encoding differently from the typed decode"
            );
            assert_eq!(walked, typed, "different stage counters on the re-encoding");
            Some(want)
        }
    }
}

/// The walk's events, as spans into `buf` whose meta is at `base`: in id
/// order without repeats, inside the meta, each event's value ending it
/// and its topics back to back before the value after their count; ids
/// built from the context as the module says.
fn check_spans(out: &Events, buf: &[u8], base: usize, len: usize, tx: &TxContext) {
    for w in out.list.windows(2) {
        assert!(
            w[0].id.key() < w[1].id.key(),
            "ids out of order or repeated"
        );
    }
    for e in &out.list {
        let end = e.event.offset + e.event.len;
        assert!(
            e.event.offset >= base && end <= base + len,
            "an event outside its meta"
        );
        assert_eq!(
            e.value.offset + e.value.len,
            end,
            "the value does not end the event"
        );
        let mut at = e.value.offset;
        for t in out.topics_of(e).iter().rev() {
            assert_eq!(
                t.offset + t.len,
                at,
                "topics not back to back before the value"
            );
            at = t.offset;
        }
        assert!(at >= e.event.offset + 8, "topics before the event's body");
        let count = u32::from_be_bytes([buf[at - 4], buf[at - 3], buf[at - 2], buf[at - 1]]);
        assert_eq!(count as usize, out.topics_of(e).len(), "the topics' count");
        assert_eq!(e.apply_index, tx.apply_index);
        assert_eq!(e.id.ledger, tx.ledger);
        assert_eq!(e.in_successful_contract_call, tx.successful);
        let order = tx.apply_index + 1;
        let (want_tx, want_op) = match e.stage {
            Stage::BeforeAllTxs => (0, 0),
            Stage::Operation(op) => (order, op),
            Stage::AfterTx => (order, OP_MASK),
            Stage::AfterAllTxs => (TX_MASK, 0),
        };
        assert_eq!((e.id.tx, e.id.op), (want_tx, want_op), "{:?}", e.stage);
    }
}

/// Mode 1: `data[1..]` cut into metas; spans index `data`.
fn metas(data: &[u8]) {
    let mut at = 1;
    let mut chunks = Vec::new();
    while at < data.len() && chunks.len() < MAX_METAS {
        let rest = data.len() - at;
        let (start, len) = if rest >= 2 && chunks.len() + 1 < MAX_METAS {
            let n = usize::from(u16::from_be_bytes([data[at], data[at + 1]]));
            (at + 2, n.min(rest - 2))
        } else {
            (at, rest)
        };
        chunks.push((start, len));
        at = start + len;
    }
    let (mut walked, mut typed) = (LedgerCounts::default(), LedgerCounts::default());
    let mut all = Vec::new();
    for (i, &(start, len)) in chunks.iter().enumerate() {
        let tx = TxContext {
            ledger: LEDGER,
            apply_index: i as u32,
            hash: [i as u8; 32],
            successful: i % 3 != 1,
        };
        // As `ledger_events`: the ledger stops at its first refused meta.
        match compare(data, start, len, &tx, &mut walked, &mut typed) {
            Some(evs) => all.extend(evs),
            None => return,
        }
    }
    all.sort_by_key(|e| e.id.key());
    for w in all.windows(2) {
        assert!(
            w[0].id.key() < w[1].id.key(),
            "two events of one ledger share id {}",
            w[0].id
        );
    }
}

/// Mode 2: a whole ledger.
fn whole_ledger(raw: &[u8]) {
    let want = reference::ledger(raw);
    let slices = match walk(raw) {
        Ok(s) => s,
        Err(fail) => {
            let Ok(want) = want else {
                return;
            };
            let lcm = LedgerCloseMeta::from_xdr(raw, limits(raw.len()))
                .unwrap_or_else(|e| panic!("the typed decode accepted, then refused: {e}"));
            let canonical = lcm
                .to_xdr(stellar_xdr::Limits::none())
                .unwrap_or_else(|e| panic!("the typed decode does not re-encode: {e}"));
            if let Err(why) = check_refusal(raw, &canonical, &fail) {
                panic!("the walker refuses a ledger the typed decode takes: {why}");
            }
            let slices = walk(&canonical)
                .unwrap_or_else(|e| panic!("the walker refuses the re-encoding: {e}"));
            let got = ledger_events(&canonical, &slices)
                .unwrap_or_else(|e| panic!("no events from the re-encoding: {e}"));
            assert!(
                got.to_owned_events(&canonical) == want,
                "the re-encoding's events differ from the typed decode's"
            );
            return;
        }
    };
    match (ledger_events(raw, &slices), want) {
        (Ok(got), Ok(want)) => {
            for w in got.list.windows(2) {
                assert!(
                    w[0].id.key() < w[1].id.key(),
                    "ids out of order or repeated"
                );
            }
            for e in &got.list {
                let Some(a) = slices.applied.get(e.apply_index as usize) else {
                    panic!("an event of apply index {} past the ledger", e.apply_index);
                };
                assert!(
                    e.event.offset >= a.meta.offset
                        && e.event.offset + e.event.len <= a.meta.offset + a.meta.len,
                    "an event outside its transaction's meta"
                );
            }
            assert!(
                got.to_owned_events(raw) == want,
                "the event walk and the typed decode read the ledger differently"
            );
        }
        (Err(_), Err(_)) => {}
        (Ok(_), Err(e)) => panic!("the event walk accepts a ledger the typed decode refuses: {e}"),
        (Err(e), Ok(_)) => {
            panic!("the event walk refuses a walked ledger the typed decode takes: {e}")
        }
    }
}
