//! The `xdr` target: a Stellar ledger file as `ingest --file` and the data
//! lake read it ([`decode_file`]): zstd or plain, a `LedgerCloseMetaBatch`
//! or record-marked `LedgerCloseMeta` frames, every ledger's transactions
//! extracted (hashes, envelopes, results, metas). The first byte picks
//! the network (extraction checks every tx hash against its passphrase);
//! the rest is the file.
//!
//! Extraction walks the XDR without decoding it (`ledgerstore_stellar::
//! walk`); the full `stellar-xdr` decode is its reference. The target holds
//! them to each other on the file and, for every ledger that decodes, on
//! a mutation of its raw bytes drawn from the input: both refuse, or both
//! accept with the same ledger. The walker alone may refuse only a bool
//! other than 0 or 1, and only where it is: the refusal must sit at the
//! first word the reference re-encodes differently, and the reference's
//! decode re-encoded (ledger by ledger, whatever its size) must walk to
//! the reference's ledger (`file::check_refused_file`,
//! `extract::check_refused_ledger`).

use ledgerstore_db_api::{LedgerInput, check_cuts};
use ledgerstore_stellar::extract::{check_refused_ledger, reference};
use ledgerstore_stellar::file::{check_refused_file, decode_file_reference};
use ledgerstore_stellar::network::{PUBNET, STANDALONE, TESTNET};
use ledgerstore_stellar::walk::walk;
use ledgerstore_stellar::{Network, ReadLimits, decode_file, ledger_from_xdr};

/// The passphrases of the fixtures' networks, by the first byte modulo
/// their count: pubnet, testnet, stellar-core's unit tests, apply-load and
/// standalone.
pub const PASSPHRASES: [&str; 5] = [PUBNET, TESTNET, "(V) (;,,;) (V)", "Apply Load", STANDALONE];

/// Limits well below the defaults, so one input cannot take the fuzzer's
/// memory; the decoder's own caps are what is under test.
const LIMITS: ReadLimits = ReadLimits {
    max_file_bytes: 8 << 20,
    max_frame_bytes: 4 << 20,
};

/// Decodes `data` as a ledger file with the walker and with the reference.
/// Refusals are expected; they must agree, and a ledger that decodes must
/// have 32-byte tx hashes and extract again, from the raw bytes the store
/// would keep, to the same ledger.
pub fn run(data: &[u8]) {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let network = Network::from_passphrase(PASSPHRASES[pick as usize % PASSPHRASES.len()]);
    let walked = decode_file(file, "fuzz input", &network, LIMITS);
    let reference_result = decode_file_reference(file, "fuzz input", &network, LIMITS);
    let ledgers = match (walked, reference_result) {
        (Ok(w), Ok(r)) => {
            assert!(
                w.iter()
                    .map(LedgerInput::without_cuts)
                    .eq(r.iter().cloned()),
                "walker and reference extract the file differently"
            );
            for (l, want) in w.iter().zip(&r) {
                if let Err(e) = check_cuts(&want.raw, &l.cuts, &want.txs) {
                    panic!("ledger {}: the walker's cuts: {e}", l.seq);
                }
            }
            w
        }
        (Err(_), Err(_)) => return,
        (Ok(_), Err(e)) => panic!("the walker accepts a file the reference refuses: {e}"),
        (Err(e), Ok(r)) => {
            if let Err(why) = check_refused_file(file, &network, LIMITS, &r) {
                panic!("the walker refuses a file the reference accepts ({e}): {why}");
            }
            return;
        }
    };
    for ledger in &ledgers {
        for (i, tx) in ledger.txs.iter().enumerate() {
            assert_eq!(
                tx.hash.len(),
                32,
                "ledger {} tx {i}: hash length",
                ledger.seq
            );
        }
        let again =
            ledger_from_xdr(ledger.raw.clone(), &network, "raw again").unwrap_or_else(|e| {
                panic!("ledger {}: its raw XDR no longer decodes: {e}", ledger.seq)
            });
        assert!(
            &again == ledger,
            "ledger {}: its raw XDR extracts to a different ledger",
            ledger.seq
        );
        mutated(&ledger.raw, data, &network);
    }
}

/// One word of `raw` overwritten, both where and with what drawn from the
/// input, then walker and reference compared on it.
fn mutated(raw: &[u8], data: &[u8], network: &Network) {
    if raw.len() < 4 {
        return;
    }
    let seed = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let at = (seed as usize % (raw.len() / 4)) * 4;
    let values = [0u32, 1, 2, 0xffff_ffff, 0x8000_0000, (seed >> 32) as u32];
    let v = values[(seed >> 8) as usize % values.len()];
    let mut b = raw.to_vec();
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
    let w = ledger_from_xdr(b.clone(), network, "mutated");
    let r = reference(b.clone(), network, "mutated");
    match (w, r) {
        (Ok(w), Ok(r)) => assert!(
            w.without_cuts() == r,
            "word {at} = {v:#x}: different ledgers"
        ),
        (Err(_), Err(_)) => {}
        (Ok(_), Err(e)) => panic!("word {at} = {v:#x}: the walker accepts, the reference: {e}"),
        (Err(e), Ok(_)) => {
            let refusal = walk(&b).expect_err("the walker refused it");
            if let Err(why) = check_refused_ledger(&b, &refusal, network) {
                panic!(
                    "word {at} = {v:#x}: the walker refuses what the reference takes ({e}): {why}"
                );
            }
        }
    }
}
