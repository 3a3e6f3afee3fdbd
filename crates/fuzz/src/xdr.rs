//! The `xdr` target: a Stellar ledger file as `ingest --file` and the data
//! lake read it ([`decode_file`]): zstd or plain, a `LedgerCloseMetaBatch`
//! or record-marked `LedgerCloseMeta` frames, every ledger's transactions
//! extracted (hashes, envelopes, results, metas). The first byte picks
//! the network (extraction checks every tx hash against its passphrase);
//! the rest is the file.

use ledgerstore_stellar::network::{PUBNET, STANDALONE, TESTNET};
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

/// Decodes `data` as a ledger file. Refusals are expected; a ledger that
/// decodes must have 32-byte tx hashes and extract again, from the raw
/// bytes the store would keep, to the same ledger.
pub fn run(data: &[u8]) {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let network = Network::from_passphrase(PASSPHRASES[pick as usize % PASSPHRASES.len()]);
    let Ok(ledgers) = decode_file(file, "fuzz input", &network, LIMITS) else {
        return;
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
    }
}
