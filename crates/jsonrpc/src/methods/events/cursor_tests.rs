use ledgerstore_events::Page;
use ledgerstore_stellar::events::{EventId, OP_MASK, TX_MASK};

use super::{before, cursor};

fn page(resume: Option<EventId>) -> Page {
    Page {
        events: Vec::new(),
        resume,
        scanned_to: 100,
        stopped_by: None,
    }
}

fn id(ledger: u32, tx: u32, op: u32, index: u32) -> EventId {
    EventId {
        ledger,
        tx,
        op,
        index,
    }
}

#[test]
fn the_id_before_resumes_exactly_at_an_id() {
    assert_eq!(before(id(9, 2, 1, 3)), Some(id(9, 2, 1, 2)));
    // Index 0: the previous TOID's last possible index.
    assert_eq!(before(id(9, 2, 1, 0)), Some(id(9, 2, 0, u32::MAX)));
    assert_eq!(before(id(9, 2, 0, 0)), Some(id(9, 1, OP_MASK, u32::MAX)));
    assert_eq!(
        before(id(9, 0, 0, 0)),
        Some(id(8, TX_MASK, OP_MASK, u32::MAX))
    );
    assert_eq!(before(id(0, 0, 0, 0)), None);
    // What stellar-rpc does with the cursor (index + 1, wrapping to the
    // next TOID) lands on the id again.
    for x in [id(9, 2, 1, 3), id(9, 2, 1, 0), id(9, 0, 0, 0)] {
        let b = before(x).expect("before");
        let next = if b.index == u32::MAX {
            let t = b.toid() + 1;
            id(
                (t >> 32) as u32,
                ((t >> 12) as u32) & TX_MASK,
                (t as u32) & OP_MASK,
                0,
            )
        } else {
            id(b.ledger, b.tx, b.op, b.index + 1)
        };
        assert_eq!(next, x);
    }
}

#[test]
fn a_cursor_is_the_last_event_when_full_and_the_window_end_otherwise() {
    let start = id(5, 0, 0, 0);
    let full = page(Some(id(7, 1, 0, 0)));
    // Full page: the last event.
    assert_eq!(
        cursor(0, start, &full, Some(id(6, 1, 0, 2)), false, 100).as_deref(),
        Some(id(6, 1, 0, 2).to_string().as_str())
    );
    // Every ledger of the window scanned: MaxCursor at end − 1.
    let done = page(None);
    assert_eq!(
        cursor(10, start, &done, None, false, 100).as_deref(),
        Some("0000000429496729599-4294967295")
    );
    // Stopped by a budget: just before where it stopped.
    assert_eq!(
        cursor(10, start, &full, Some(id(6, 1, 0, 2)), false, 100),
        Some(id(7, 0, OP_MASK, u32::MAX).to_string())
    );
    // Cut by the page's bytes: the last event written.
    assert_eq!(
        cursor(10, start, &full, Some(id(6, 1, 0, 2)), true, 100),
        Some(id(6, 1, 0, 2).to_string())
    );
    // No progress at all: none.
    let stuck = page(Some(start));
    assert_eq!(cursor(10, start, &stuck, None, false, 100), None);
}
