//! Synthetic events in the shapes of the 20 pubnet ledgers of 2026
//! (12,960 events, ~650 a ledger): a third are the native asset
//! contract's fee and refund events (`["fee", account]`, stage events
//! before and after all transactions); the rest are operation events,
//! 1.7 an operation on average, mostly SAC-style transfers (`["transfer",
//! from, to, asset]`) over contracts of Zipf-like popularity (the native
//! contract's share is a fifth), and some other names with 1 to 3 topics.
//! Accounts (`n / 40` of them) and contracts (`n / 2000`) are drawn
//! log-uniformly, so a few are very frequent and most are rare.

use ledgerstore_stellar::events::{EventId, EventType, OP_MASK, TX_MASK};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Ev;

fn scval(tag: u32, body: &[u8]) -> Vec<u8> {
    let mut v = tag.to_be_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

/// An `SCV_SYMBOL` (or `SCV_STRING` with `tag` 14).
pub fn sym_tagged(tag: u32, s: &str) -> Vec<u8> {
    let mut body = (s.len() as u32).to_be_bytes().to_vec();
    body.extend_from_slice(s.as_bytes());
    while !body.len().is_multiple_of(4) {
        body.push(0);
    }
    scval(tag, &body)
}

pub fn sym(s: &str) -> Vec<u8> {
    sym_tagged(15, s)
}

/// An `SCV_ADDRESS` of account `rank` (or of a contract with `contract`).
pub fn addr(rank: u64, contract: bool) -> Vec<u8> {
    let mut body = vec![0, 0, 0, u8::from(contract), 0, 0, 0, 0];
    body.extend_from_slice(&rank.to_be_bytes());
    body.extend_from_slice(&[0x5a; 24]);
    scval(18, &body)
}

/// The contract id of contract `rank` (0 is the native asset's).
pub fn contract_id(rank: u64) -> [u8; 32] {
    let mut id = [0xc3; 32];
    id[..8].copy_from_slice(&rank.to_be_bytes());
    id
}

const NAMES: [&str; 12] = [
    "swap",
    "mint",
    "burn",
    "approve",
    "deposit",
    "withdraw",
    "claim",
    "sync",
    "set_admin",
    "clawback",
    "update",
    "liquidate",
];

/// Generates events ledger by ledger from `first`, about `n` in all.
pub struct Synth {
    rng: ChaCha8Rng,
    accounts: f64,
    contracts: f64,
    ledger: u32,
    left: usize,
    buf: std::vec::IntoIter<Ev>,
}

impl Synth {
    pub fn new(n: usize, seed: u64, first: u32) -> Self {
        Synth {
            rng: ChaCha8Rng::seed_from_u64(seed),
            accounts: (n as f64 / 40.0).max(100.0),
            contracts: (n as f64 / 2000.0).max(20.0),
            ledger: first,
            left: n,
            buf: Vec::new().into_iter(),
        }
    }

    /// The ledger the next event is in (after the last, once done).
    pub fn next_ledger(&self) -> u32 {
        self.ledger
    }

    fn zipf(&mut self, pop: f64) -> u64 {
        let u: f64 = self.rng.random();
        (pop.powf(u) - 1.0).floor() as u64
    }

    fn op_event(&mut self) -> (EventType, [u8; 32], Vec<Vec<u8>>) {
        if self.rng.random_bool(0.85) {
            let c = if self.rng.random_bool(0.2) {
                0
            } else {
                1 + self.zipf(self.contracts)
            };
            let from = addr(self.zipf(self.accounts), false);
            let to_contract = self.rng.random_bool(0.3);
            let to = if to_contract {
                addr(self.zipf(self.contracts), true)
            } else {
                addr(self.zipf(self.accounts), false)
            };
            let asset = sym_tagged(14, &format!("ASSET{c}:GISSUER"));
            (
                EventType::Contract,
                contract_id(c),
                vec![sym("transfer"), from, to, asset],
            )
        } else {
            let c = 1 + self.zipf(self.contracts);
            let name = NAMES[self.zipf(NAMES.len() as f64) as usize % NAMES.len()];
            let mut topics = vec![sym(name)];
            if self.rng.random_bool(0.7) {
                topics.push(addr(self.zipf(self.accounts), false));
            }
            if self.rng.random_bool(0.3) {
                let v: u64 = self.rng.random_range(0..1000);
                topics.push(scval(5, &v.to_be_bytes()));
            }
            // Rare shapes no real corpus has yet: no topics, more than
            // four, and a served event of type diagnostic.
            if self.rng.random_bool(0.03) {
                topics.clear();
            } else if self.rng.random_bool(0.04) {
                let more = self.rng.random_range(2..=4);
                for _ in 0..more {
                    topics.push(sym(NAMES[self.rng.random_range(0..NAMES.len())]));
                }
            }
            let kind = if self.rng.random_bool(0.02) {
                EventType::System
            } else if self.rng.random_bool(0.01) {
                EventType::Diagnostic
            } else {
                EventType::Contract
            };
            (kind, contract_id(c), topics)
        }
    }

    fn ledger_events(&mut self) -> Vec<Ev> {
        let ledger = self.ledger;
        self.ledger += 1;
        let txs: u32 = self.rng.random_range(100..180);
        let native = contract_id(0);
        let mut out = Vec::new();
        let mut refunds = Vec::new();
        let id = |tx, op, index| EventId {
            ledger,
            tx,
            op,
            index,
        };
        for t in 0..txs {
            let payer = addr(self.zipf(self.accounts), false);
            out.push(Ev {
                id: id(0, 0, t),
                kind: EventType::Contract,
                contract: Some(native),
                topics: vec![sym("fee"), payer.clone()],
            });
            if self.rng.random_bool(0.5) {
                refunds.push(payer);
            }
        }
        for tx in 1..=txs {
            let mut ops = 1;
            while ops < 5 && self.rng.random_bool(0.35) {
                ops += 1;
            }
            for op in 0..ops {
                let mut k = 1;
                while k < 20 && self.rng.random_bool(0.4) {
                    k += 1;
                }
                for index in 0..k {
                    let (kind, c, topics) = self.op_event();
                    // A few events without a contract id.
                    let contract = (!self.rng.random_bool(0.02)).then_some(c);
                    out.push(Ev {
                        id: id(tx, op, index),
                        kind,
                        contract,
                        topics,
                    });
                }
            }
            // Now and then an event after the transaction (op 0xFFF).
            if self.rng.random_bool(0.02) {
                let (kind, c, topics) = self.op_event();
                out.push(Ev {
                    id: id(tx, OP_MASK, 0),
                    kind,
                    contract: Some(c),
                    topics,
                });
            }
        }
        for (i, payer) in refunds.into_iter().enumerate() {
            out.push(Ev {
                id: id(TX_MASK, 0, i as u32),
                kind: EventType::Contract,
                contract: Some(native),
                topics: vec![sym("fee"), payer],
            });
        }
        out
    }
}

impl Iterator for Synth {
    type Item = Ev;

    fn next(&mut self) -> Option<Ev> {
        if self.left == 0 {
            return None;
        }
        loop {
            if let Some(e) = self.buf.next() {
                self.left -= 1;
                return Some(e);
            }
            self.buf = self.ledger_events().into_iter();
        }
    }
}
