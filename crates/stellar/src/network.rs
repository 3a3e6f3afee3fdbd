//! Stellar networks. A transaction's hash covers the network id, the
//! SHA-256 of the network passphrase, so the same envelope hashes
//! differently on each network.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::error::{StellarError, StellarResult};

/// The public network's passphrase.
pub const PUBNET: &str = "Public Global Stellar Network ; September 2015";
/// The SDF test network's passphrase.
pub const TESTNET: &str = "Test SDF Network ; September 2015";
/// The SDF future network's passphrase.
pub const FUTURENET: &str = "Test SDF Future Network ; October 2022";
/// stellar-core's standalone (quickstart / load test) passphrase.
pub const STANDALONE: &str = "Standalone Network ; February 2017";

const NAMED: [(&str, &str); 4] = [
    ("pubnet", PUBNET),
    ("testnet", TESTNET),
    ("futurenet", FUTURENET),
    ("standalone", STANDALONE),
];

/// A network: its passphrase and the id derived from it.
#[derive(Clone, PartialEq, Eq)]
pub struct Network {
    passphrase: String,
    id: [u8; 32],
}

impl Network {
    /// A network by name (`pubnet`, `public`, `mainnet`, `testnet`,
    /// `futurenet`, `standalone`, any case) or by its passphrase, which may
    /// be any string (`Apply Load` and stellar-core's unit-test
    /// `(V) (;,,;) (V)` are real ones). Refused: an empty string, and a
    /// single word one or two edits from a name (a typo, not a network).
    /// A wrong passphrase still fails loudly at the first ledger, whose
    /// hashes then disagree with the results'.
    pub fn parse(s: &str) -> StellarResult<Self> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        let name = match lower.as_str() {
            "public" | "mainnet" => "pubnet",
            other => other,
        };
        if let Some((_, p)) = NAMED.iter().find(|(n, _)| *n == name) {
            return Ok(Self::from_passphrase(p));
        }
        let typo = !t.contains(char::is_whitespace)
            && NAMED
                .iter()
                .map(|(n, _)| *n)
                .chain(["public", "mainnet"])
                .any(|n| edits(&lower, n) <= 2);
        if t.is_empty() || typo {
            return Err(StellarError::UnknownNetwork(s.to_string()));
        }
        Ok(Self::from_passphrase(t))
    }

    /// A network from its passphrase, as is.
    pub fn from_passphrase(passphrase: &str) -> Self {
        Self {
            passphrase: passphrase.to_string(),
            id: Sha256::digest(passphrase.as_bytes()).into(),
        }
    }

    /// The passphrase.
    pub fn passphrase(&self) -> &str {
        &self.passphrase
    }

    /// SHA-256 of the passphrase: what transaction hashes cover.
    pub fn id(&self) -> [u8; 32] {
        self.id
    }

    /// The short name of a well-known network, or `None` for a custom one.
    pub fn name(&self) -> Option<&'static str> {
        NAMED
            .iter()
            .find(|(_, p)| *p == self.passphrase)
            .map(|(n, _)| *n)
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} ({:?})", self.passphrase),
            None => write!(f, "{:?}", self.passphrase),
        }
    }
}

impl fmt::Debug for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Levenshtein distance of two short ASCII strings.
fn edits(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_aliases_and_passphrases() {
        for (s, p) in [
            ("pubnet", PUBNET),
            ("PUBLIC", PUBNET),
            ("mainnet", PUBNET),
            ("testnet", TESTNET),
            (" futurenet ", FUTURENET),
            ("standalone", STANDALONE),
            (STANDALONE, STANDALONE),
            ("My Net ; 2026", "My Net ; 2026"),
            // Real passphrases without " ; " (issue 19).
            ("Apply Load", "Apply Load"),
            ("(V) (;,,;) (V)", "(V) (;,,;) (V)"),
            ("privatenet-2026", "privatenet-2026"),
        ] {
            assert_eq!(Network::parse(s).expect(s).passphrase(), p);
        }
        assert_eq!(Network::parse("pubnet").expect("p").name(), Some("pubnet"));
        assert_eq!(Network::parse("x ; y").expect("c").name(), None);
        for typo in ["pubnett", "testnte", "futurnet", "mainet", ""] {
            let err = Network::parse(typo).expect_err("typo");
            assert!(err.to_string().contains(&format!("{typo:?}")), "{err}");
        }
    }

    #[test]
    fn network_id_is_sha256_of_the_passphrase() {
        // The well-known pubnet network id.
        assert_eq!(
            hex::encode(Network::parse("pubnet").expect("p").id()),
            "7ac33997544e3175d266bd022439b22cdb16508c01163f26e5cb2a3e1045a979"
        );
    }
}
