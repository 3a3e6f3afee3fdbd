//! Transaction hashes from slices of the ledger, as `stellar-xdr`'s
//! `tx_hash.rs` computes them from decoded values: SHA-256 of the XDR
//! `TransactionSignaturePayload { Hash networkId; union switch
//! (EnvelopeType type) { … } taggedTransaction; }`, i.e. the network id,
//! the envelope type tag, then the transaction's bytes.
//!
//! - V1 (`ENVELOPE_TYPE_TX` = 2): the `Transaction` bytes.
//! - V0 (`ENVELOPE_TYPE_TX_V0` = 0) hashes as the V1 `Transaction` it
//!   converts to (`transaction_conversions.rs`): tag 2, then the source
//!   account as `MuxedAccount::Ed25519` (tag `KEY_TYPE_ED25519` = 0, then
//!   the key), fee and seq as they are, the optional time bounds as
//!   `Preconditions` (absent: `PRECOND_NONE` = 0; present: `PRECOND_TIME`
//!   = 1 then the bounds, which are the same bytes as the optional's flag
//!   and value), memo, operations and `ext` (0 both ways) as they are. So
//!   the payload is tag 2, four zero bytes, then the `TransactionV0` bytes.
//! - Fee bump (`ENVELOPE_TYPE_TX_FEE_BUMP` = 5): the `FeeBumpTransaction`
//!   bytes; its inner transaction hashes as a V1 one.

use sha2::{Digest, Sha256};

use super::{EnvelopeKind, EnvelopeSlices};

const ENVELOPE_TYPE_TX: [u8; 4] = 2u32.to_be_bytes();
const ENVELOPE_TYPE_TX_FEE_BUMP: [u8; 4] = 5u32.to_be_bytes();
const KEY_TYPE_ED25519: [u8; 4] = 0u32.to_be_bytes();

/// The hash of envelope `env` of `raw` (the bytes it was walked from).
pub fn tx_hash(raw: &[u8], env: &EnvelopeSlices, network_id: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(network_id);
    match env.kind {
        EnvelopeKind::TxV0 => {
            h.update(ENVELOPE_TYPE_TX);
            h.update(KEY_TYPE_ED25519);
        }
        EnvelopeKind::Tx => h.update(ENVELOPE_TYPE_TX),
        EnvelopeKind::TxFeeBump => h.update(ENVELOPE_TYPE_TX_FEE_BUMP),
    }
    h.update(env.tx.of(raw));
    h.finalize().into()
}

/// A fee bump's inner transaction hash (its alias); `None` for others.
pub fn inner_hash(raw: &[u8], env: &EnvelopeSlices, network_id: &[u8; 32]) -> Option<[u8; 32]> {
    let inner = env.inner_tx?;
    let mut h = Sha256::new();
    h.update(network_id);
    h.update(ENVELOPE_TYPE_TX);
    h.update(inner.of(raw));
    Some(h.finalize().into())
}
