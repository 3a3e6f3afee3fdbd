//! Property tests of the extraction on hostile bytes: any truncation or
//! corruption of a real ledger is an error or a valid ledger, never a
//! panic, a hang, or an allocation far beyond the input.

use std::path::Path;

use ledgerstore_stellar::file::{check_refused_file, decode_file_reference, maybe_decompress};
use ledgerstore_stellar::{Network, ReadLimits, decode_file};
use proptest::prelude::*;

fn plain_999() -> Vec<u8> {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/FFFFFC18--999.xdr.zstd");
    maybe_decompress(&std::fs::read(f).expect("fixture"), "f", 1 << 30).expect("zstd")
}

fn lim() -> ReadLimits {
    ReadLimits {
        max_file_bytes: 1 << 20,
        max_frame_bytes: 1 << 20,
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn flipped_bytes_never_panic(flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..8)) {
        let mut b = plain_999();
        let n = b.len();
        for (i, x) in flips {
            b[i.index(n)] ^= x;
        }
        let _ = decode_file(&b, "fuzz", &Network::parse("standalone").expect("n"), lim());
    }

    #[test]
    fn truncations_are_errors(cut in 0usize..6524) {
        let b = plain_999();
        let cut = cut.min(b.len() - 1);
        prop_assert!(decode_file(&b[..cut], "fuzz", &Network::parse("standalone").expect("n"), lim()).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..4096)) {
        let _ = decode_file(&b, "fuzz", &Network::parse("standalone").expect("n"), lim());
    }

    /// The walker and the full decode agree on damaged ledgers: both
    /// refuse, or both give the same ledger; the walker alone refuses only
    /// a bool other than 0 or 1, where it is (`check_refused_file`).
    #[test]
    fn walker_and_reference_agree_on_flipped_bytes(flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4)) {
        let mut b = plain_999();
        let n = b.len();
        for (i, x) in flips {
            b[i.index(n)] ^= x;
        }
        let net = Network::parse("testnet").expect("n");
        let w = decode_file(&b, "fuzz", &net, lim());
        let r = decode_file_reference(&b, "fuzz", &net, lim());
        match (w, r) {
            (Ok(w), Ok(r)) => prop_assert!(w.iter().map(|l| l.without_cuts()).collect::<Vec<_>>() == r),
            (Err(_), Err(_)) => {}
            (Ok(_), Err(e)) => prop_assert!(false, "walker accepts, reference: {}", e),
            (Err(e), Ok(r)) => {
                let excuse = check_refused_file(&b, &net, lim(), &r);
                prop_assert!(excuse.is_ok(), "walker refuses ({}): {:?}", e, excuse);
            }
        }
    }
}
