//! Event ids: stellar-rpc's `protocol.Cursor` (go-stellar-sdk
//! `protocols/rpc`): a TOID (`toid.New(ledger, tx, op).ToInt64()`, SEP-35:
//! ledger << 32 | tx << 12 | op) and the event's index, printed
//! `"%019d-%010d"`, so that ids sort as strings in event order.

use std::fmt;

/// The largest transaction order a TOID holds (`toid.TransactionMask`):
/// the `tx` of events after all transactions.
pub const TX_MASK: u32 = (1 << 20) - 1;

/// The largest operation index a TOID holds (`toid.OperationMask`): the
/// `op` of a transaction's events after its operations.
pub const OP_MASK: u32 = (1 << 12) - 1;

/// An event's id, as stellar-rpc builds it (its `protocol.Cursor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId {
    /// The ledger's sequence.
    pub ledger: u32,
    /// The transaction's application order (1-based), 0 for events before
    /// all transactions, [`TX_MASK`] for events after all of them. It is
    /// also the event's `transactionIndex`.
    pub tx: u32,
    /// The operation's index (0-based), [`OP_MASK`] for a transaction's
    /// events after its operations, 0 for events before or after all
    /// transactions. It is also the event's `operationIndex`.
    pub op: u32,
    /// The event's index among the events of the same `(ledger, tx, op)`.
    pub index: u32,
}

impl EventId {
    /// Its TOID: `ledger << 32 | tx << 12 | op`. The fields must be in
    /// range (ledger at most `i32::MAX`, `tx` at most [`TX_MASK`], `op` at
    /// most [`OP_MASK`]); the extraction refuses ledgers that would need
    /// more, as Go's `toid.ToInt64` panics on them.
    pub fn toid(&self) -> u64 {
        (u64::from(self.ledger) << 32)
            | (u64::from(self.tx & TX_MASK) << 12)
            | u64::from(self.op & OP_MASK)
    }

    /// The sort key of stellar-rpc's `ORDER BY id`: its string sorts as
    /// this pair.
    pub fn key(&self) -> (u64, u32) {
        (self.toid(), self.index)
    }

    /// Parses an id ([`fmt::Display`]'s form). None unless it is two
    /// decimal numbers joined by `-` whose TOID's ledger fits in an `i32`
    /// and whose index fits in a `u32`; like stellar-rpc's
    /// `ParseCursor`, it does not require the zero padding.
    pub fn parse(s: &str) -> Option<Self> {
        let (toid, index) = s.split_once('-')?;
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        if !digits(toid) || !digits(index) {
            return None;
        }
        let toid: i64 = toid.parse().ok()?;
        let index: u32 = index.parse().ok()?;
        let toid = u64::try_from(toid).ok()?;
        Some(Self {
            ledger: (toid >> 32) as u32,
            tx: ((toid >> 12) as u32) & TX_MASK,
            op: (toid as u32) & OP_MASK,
            index,
        })
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:019}-{:010}", self.toid(), self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_and_parse_as_stellar_rpc_does() {
        // The first and the last event of ledger 63092982 (the oracle's).
        let first = EventId {
            ledger: 63_092_982,
            tx: 0,
            op: 0,
            index: 0,
        };
        assert_eq!(first.to_string(), "0270982294297116672-0000000000");
        let after = EventId {
            ledger: 63_093_001,
            tx: TX_MASK,
            op: 0,
            index: 1,
        };
        assert_eq!(after.to_string(), "0270982380196458496-0000000001");
        for id in [first, after] {
            assert_eq!(EventId::parse(&id.to_string()), Some(id));
        }
        let op = EventId {
            ledger: 7,
            tx: 3,
            op: 2,
            index: 9,
        };
        assert_eq!(op.toid(), (7 << 32) | (3 << 12) | 2);
        assert_eq!(EventId::parse("30064783362-9"), Some(op));
        for bad in ["", "1", "-1-0", "1-", "a-1", "1-4294967296", "1 -1"] {
            assert_eq!(EventId::parse(bad), None, "{bad:?}");
        }
        // Ids sort as strings in key order.
        assert!(first.to_string() < after.to_string() && first.key() < after.key());
    }
}
