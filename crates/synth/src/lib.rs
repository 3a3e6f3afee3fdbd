//! Deterministic, Stellar-shaped synthetic ledgers.
//!
//! A ledger depends only on `(seed, seq)`, so batches can be generated in
//! parallel and a resumed run produces exactly the ledgers it would have.
//! Shape (defaults): 250 tx per ledger; a tx of ~5 KB (envelope ~1.2 KB,
//! result ~0.2 KB, meta ~3.6 KB) that zstd-3 compresses about 4:1; a raw
//! ledger of ~1.4 MB (its txs plus header-like filler) that compresses about
//! 9:1, because its txs share the ledger's pool of accounts and assets, as
//! real ledgers do. `tx hash = SHA-256(envelope)`.

use ledgerstore_db_api::{Cut, LedgerInput, Part, TxInput};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

/// Shape of the synthetic workload.
#[derive(Debug, Clone)]
pub struct SynthConfig {
    /// Seed: same seed, same ledgers.
    pub seed: u64,
    /// Transactions per ledger.
    pub tx_per_ledger: u32,
    /// Envelope bytes per tx.
    pub envelope_bytes: usize,
    /// Result bytes per tx.
    pub result_bytes: usize,
    /// Meta bytes per tx.
    pub meta_bytes: usize,
    /// Raw ledger bytes (at least the txs' bytes).
    pub ledger_bytes: usize,
    /// Close time of ledger 0; each ledger closes 5 s after the previous.
    pub genesis_close_time: u64,
}

impl Default for SynthConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            tx_per_ledger: 250,
            envelope_bytes: 1200,
            result_bytes: 200,
            meta_bytes: 3600,
            ledger_bytes: 1_400_000,
            genesis_close_time: 1_438_387_200, // 2015-08-01
        }
    }
}

impl SynthConfig {
    /// A shape with `tx_bytes` per transaction (split 24% envelope, 4%
    /// result, 72% meta, as in the default) and `ledger_bytes` per raw ledger.
    pub fn with_sizes(seed: u64, tx_per_ledger: u32, tx_bytes: usize, ledger_bytes: usize) -> Self {
        let envelope_bytes = (tx_bytes * 24 / 100).max(64);
        let result_bytes = (tx_bytes * 4 / 100).max(40);
        Self {
            seed,
            tx_per_ledger,
            envelope_bytes,
            result_bytes,
            meta_bytes: tx_bytes
                .saturating_sub(envelope_bytes + result_bytes)
                .max(1),
            ledger_bytes,
            ..Self::default()
        }
    }

    /// A small shape for tests: `tx` transactions of ~1 KB per ledger.
    pub fn small(seed: u64, tx: u32) -> Self {
        Self {
            seed,
            tx_per_ledger: tx,
            envelope_bytes: 300,
            result_bytes: 60,
            meta_bytes: 700,
            ledger_bytes: 4096,
            ..Self::default()
        }
    }
}

/// Generator of synthetic ledgers.
#[derive(Debug, Clone)]
pub struct Synth {
    cfg: SynthConfig,
}

const ACCOUNT_POOL: usize = 96;
const ASSET_CODES: [&[u8; 12]; 6] = [
    b"USDC\0\0\0\0\0\0\0\0",
    b"EURC\0\0\0\0\0\0\0\0",
    b"yXLM\0\0\0\0\0\0\0\0",
    b"AQUA\0\0\0\0\0\0\0\0",
    b"BTC\0\0\0\0\0\0\0\0\0",
    b"SHX\0\0\0\0\0\0\0\0\0",
];

/// Per-ledger state shared by its transactions: the accounts and the
/// shapes of ledger entries its transactions touch.
struct LedgerCtx {
    accounts: Vec<[u8; 32]>,
    templates: Vec<Vec<u8>>,
}

/// Per-transaction state: the few accounts one transaction touches.
struct TxCtx<'a> {
    ledger: &'a LedgerCtx,
    accounts: [usize; 4],
}

const TEMPLATES: usize = 12;

/// An entry shape: XDR-like words, mostly zero or small, a few random.
fn template(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let words = rng.random_range(16..40);
    let mut t = Vec::with_capacity(words * 4);
    for _ in 0..words {
        let r = rng.next_u32();
        let word = match r % 8 {
            0..=4 => 0,
            5 => (r >> 8) % 16,
            _ => r >> 3,
        };
        t.extend_from_slice(&word.to_be_bytes());
    }
    t
}

impl Synth {
    /// A generator for `cfg`.
    pub fn new(cfg: SynthConfig) -> Self {
        Self { cfg }
    }

    /// The configuration.
    pub fn config(&self) -> &SynthConfig {
        &self.cfg
    }

    /// Ledger `seq`.
    pub fn ledger(&self, seq: u32) -> LedgerInput {
        let mut rng = ChaCha8Rng::seed_from_u64(
            self.cfg.seed ^ u64::from(seq).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        let ctx = LedgerCtx {
            accounts: (0..ACCOUNT_POOL).map(|_| rng.random()).collect(),
            templates: (0..TEMPLATES).map(|_| template(&mut rng)).collect(),
        };
        let txs: Vec<TxInput> = (0..self.cfg.tx_per_ledger)
            .map(|i| self.tx(&mut rng, &ctx, seq, i))
            .collect();
        let raw = self.raw_ledger(&mut rng, &ctx, seq, &txs);
        LedgerInput {
            seq,
            close_time: self.cfg.genesis_close_time + 5 * u64::from(seq),
            raw: raw.into(),
            txs,
            // Synthetic raw holds no parts of its transactions: stored whole.
            cuts: Vec::new(),
        }
    }

    /// Ledger `seq` shaped as a Stellar ledger holds its transactions: the
    /// raw is a header, the envelopes in reverse apply order (a tx set's
    /// order differs from apply order), then each transaction's result,
    /// some fee bytes and its meta, then a tail; `cuts` name every part
    /// (listed out of raw order). A store keeps it as a skeleton.
    pub fn cut_ledger(&self, seq: u32) -> LedgerInput {
        let mut l = self.ledger(seq);
        let mut raw = format!("header of ledger {seq}").into_bytes();
        let mut cuts = Vec::with_capacity(3 * l.txs.len());
        let mut cut = |raw: &mut Vec<u8>, tx: usize, part: Part, bytes: &[u8]| {
            cuts.push(Cut {
                offset: raw.len() as u32,
                tx: tx as u32,
                part,
            });
            raw.extend_from_slice(bytes);
        };
        for (i, t) in l.txs.iter().enumerate().rev() {
            cut(&mut raw, i, Part::Envelope, &t.envelope);
        }
        for (i, t) in l.txs.iter().enumerate() {
            cut(&mut raw, i, Part::Result, &t.result);
            raw.extend_from_slice(b"fee changes");
            cut(&mut raw, i, Part::Meta, &t.meta);
        }
        raw.extend_from_slice(b"tail");
        cuts.reverse();
        l.raw = raw.into();
        l.cuts = cuts;
        l
    }

    /// [`Self::cut_ledger`] for `count` ledgers from `start`.
    pub fn cut_batch(&self, start: u32, count: u32) -> Vec<LedgerInput> {
        (0..count)
            .into_par_iter()
            .map(|i| self.cut_ledger(start + i))
            .collect()
    }

    /// `count` ledgers from `start`, generated in parallel.
    pub fn batch(&self, start: u32, count: u32) -> Vec<LedgerInput> {
        (0..count)
            .into_par_iter()
            .map(|i| self.ledger(start + i))
            .collect()
    }

    fn tx(&self, rng: &mut ChaCha8Rng, ledger: &LedgerCtx, seq: u32, index: u32) -> TxInput {
        let ctx = &TxCtx {
            ledger,
            accounts: std::array::from_fn(|_| rng.random_range(0..ACCOUNT_POOL)),
        };
        let mut envelope = Vec::with_capacity(self.cfg.envelope_bytes);
        envelope.extend_from_slice(&2u32.to_be_bytes()); // envelope type
        envelope.extend_from_slice(&ledger.accounts[ctx.accounts[0]]);
        envelope.extend_from_slice(&100u32.to_be_bytes()); // fee
        envelope.extend_from_slice(&rng.next_u64().to_be_bytes()); // seq num
        envelope.extend_from_slice(&seq.to_be_bytes());
        envelope.extend_from_slice(&index.to_be_bytes());
        structured(
            rng,
            ctx,
            &mut envelope,
            self.cfg.envelope_bytes.saturating_sub(68),
        );
        let mut sig = [0u8; 64];
        rng.fill_bytes(&mut sig);
        envelope.extend_from_slice(&sig);
        envelope.truncate(self.cfg.envelope_bytes.max(32));

        let hash: [u8; 32] = Sha256::digest(&envelope).into();
        let mut result = Vec::with_capacity(self.cfg.result_bytes);
        result.extend_from_slice(&hash);
        structured(
            rng,
            ctx,
            &mut result,
            self.cfg.result_bytes.saturating_sub(32),
        );
        let mut meta = Vec::with_capacity(self.cfg.meta_bytes);
        structured(rng, ctx, &mut meta, self.cfg.meta_bytes);
        TxInput {
            hash: hash.to_vec(),
            envelope: envelope.into(),
            result: result.into(),
            meta: meta.into(),
            alias: None,
        }
    }

    fn raw_ledger(
        &self,
        rng: &mut ChaCha8Rng,
        ledger: &LedgerCtx,
        seq: u32,
        txs: &[TxInput],
    ) -> Vec<u8> {
        let ctx = &TxCtx {
            ledger,
            accounts: std::array::from_fn(|_| rng.random_range(0..ACCOUNT_POOL)),
        };
        let body: usize = txs.iter().map(TxInput::body_len).sum();
        let mut raw = Vec::with_capacity(self.cfg.ledger_bytes.max(body + 256));
        raw.extend_from_slice(&seq.to_be_bytes());
        let mut header = [0u8; 96]; // previous hash, scp value, tx set hash
        rng.fill_bytes(&mut header);
        raw.extend_from_slice(&header);
        for tx in txs {
            raw.extend_from_slice(&tx.envelope);
            raw.extend_from_slice(&tx.result);
            raw.extend_from_slice(&tx.meta);
        }
        let filler = self.cfg.ledger_bytes.saturating_sub(raw.len());
        structured(rng, ctx, &mut raw, filler);
        raw
    }
}

/// Appends `len` bytes shaped like XDR ledger entries: an entry shape of the
/// ledger, one of the transaction's accounts, an asset code and an amount
/// (i64 with leading zero bytes).
fn structured(rng: &mut ChaCha8Rng, ctx: &TxCtx<'_>, out: &mut Vec<u8>, len: usize) {
    let end = out.len() + len;
    while out.len() < end {
        let r = rng.next_u32();
        out.extend_from_slice(&ctx.ledger.templates[r as usize % TEMPLATES]);
        let account = ctx.accounts[(r >> 8) as usize % ctx.accounts.len()];
        out.extend_from_slice(&ctx.ledger.accounts[account]);
        out.extend_from_slice(ASSET_CODES[(r >> 12) as usize % ASSET_CODES.len()]);
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(&rng.next_u64().to_be_bytes()[..5]);
    }
    out.truncate(end);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_per_seed_and_seq() {
        let s = Synth::new(SynthConfig::small(7, 5));
        assert_eq!(s.ledger(10), s.ledger(10));
        assert_ne!(s.ledger(10).txs[0].hash, s.ledger(11).txs[0].hash);
        let other = Synth::new(SynthConfig::small(8, 5));
        assert_ne!(s.ledger(10).txs[0].hash, other.ledger(10).txs[0].hash);
        assert_eq!(s.batch(3, 4)[2], s.ledger(5));
    }

    #[test]
    fn hash_is_sha256_of_envelope() {
        let s = Synth::new(SynthConfig::small(1, 3));
        for tx in s.ledger(1).txs {
            let h: [u8; 32] = Sha256::digest(&tx.envelope).into();
            assert_eq!(tx.hash, h.to_vec());
        }
    }

    #[test]
    fn default_shape_matches_the_field_study() {
        let s = Synth::new(SynthConfig::default());
        let l = s.ledger(1000);
        assert_eq!(l.txs.len(), 250);
        assert_eq!(l.raw.len(), 1_400_000);
        let tx = &l.txs[0];
        assert_eq!(tx.body_len(), 5000);
        let mut tx_raw = 0usize;
        let mut tx_comp = 0usize;
        for tx in &l.txs {
            let mut b = tx.envelope.to_vec();
            b.extend_from_slice(&tx.result);
            b.extend_from_slice(&tx.meta);
            tx_raw += b.len();
            tx_comp += zstd::bulk::compress(&b, 3).expect("zstd").len();
        }
        let tx_ratio = tx_raw as f64 / tx_comp as f64;
        let ledger_ratio =
            l.raw.len() as f64 / zstd::bulk::compress(&l.raw, 3).expect("zstd").len() as f64;
        eprintln!("tx ratio {tx_ratio:.2}, ledger ratio {ledger_ratio:.2}");
        // Field study: -77% for tx data (~4.3:1), -89% for ledgers (~9:1).
        assert!((3.3..5.5).contains(&tx_ratio), "tx ratio {tx_ratio:.2}");
        assert!(
            (7.0..12.0).contains(&ledger_ratio),
            "ledger ratio {ledger_ratio:.2}"
        );
    }
}
