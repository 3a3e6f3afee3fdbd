//! A data lake in the SEP-54 layout, as Galexie writes it:
//!
//! ```text
//! <root>/.config.json                                  (optional manifest)
//! <root>/FFFFFFFF--0-63999/FFFFFFFF--0.xdr.zst         (partition / batch file)
//! <root>/FC4DB5FF--60000000-60063999/FC4DB5FF--60000000-60000009.xdr.zst
//! ```
//!
//! A batch file is named `hex(0xFFFFFFFF - start)--start[-end]` plus
//! `.xdr.zst` (`.xdr.zstd` and a plain `.xdr` are accepted too); the
//! reversed prefix makes the newest files sort first in object listings.
//! Reads go through `object_store`, so the same code can later point at S3
//! or GCS; today the lake is a local directory.

use std::sync::Arc;

use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::error::{StellarError, StellarResult};
use crate::network::Network;

/// One batch file of the lake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LakeFile {
    /// Location inside the lake.
    pub path: ObjPath,
    /// First ledger.
    pub start: u32,
    /// Last ledger.
    pub end: u32,
    /// Size in bytes (compressed).
    pub size: u64,
}

/// Parses a SEP-54 batch file name: `(start, end)`, or `None` for a name
/// of another shape (which the listing skips). A well-shaped name whose
/// prefix is not `0xFFFFFFFF - start` is an error.
pub fn parse_name(name: &str) -> Result<Option<(u32, u32)>, String> {
    let Some(stem) = [".xdr.zst", ".xdr.zstd", ".xdr"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
    else {
        return Ok(None);
    };
    let Some((prefix, range)) = stem.split_once("--") else {
        return Ok(None);
    };
    if prefix.len() != 8 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let (start, end) = match range.split_once('-') {
        Some((s, e)) => (s, e),
        None => (range, range),
    };
    let (Ok(start), Ok(end)) = (start.parse::<u32>(), end.parse::<u32>()) else {
        return Ok(None);
    };
    if end < start {
        return Err(format!("{name}: the range {start}-{end} runs backwards"));
    }
    let want = format!("{:08X}", u32::MAX - start);
    if !prefix.eq_ignore_ascii_case(&want) {
        return Err(format!(
            "{name}: the prefix should be {want} (hex of 0xFFFFFFFF - {start}), not {prefix}"
        ));
    }
    Ok(Some((start, end)))
}

/// A SEP-54 data lake.
pub struct DataLake {
    root: String,
    store: Arc<dyn ObjectStore>,
}

impl std::fmt::Debug for DataLake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataLake({})", self.root)
    }
}

impl DataLake {
    /// A lake in a local directory.
    pub fn local(root: &std::path::Path) -> StellarResult<Self> {
        let name = root.display().to_string();
        if !root.is_dir() {
            return Err(StellarError::Lake {
                root: name,
                detail: "not a directory".into(),
            });
        }
        Ok(Self {
            root: name,
            store: Arc::new(LocalFileSystem::new_with_prefix(root)?),
        })
    }

    /// A lake behind any object store (S3, GCS, memory, …).
    pub fn new(root: impl Into<String>, store: Arc<dyn ObjectStore>) -> Self {
        Self {
            root: root.into(),
            store,
        }
    }

    /// The lake's name in messages.
    pub fn root(&self) -> &str {
        &self.root
    }

    fn err(&self, detail: impl Into<String>) -> StellarError {
        StellarError::Lake {
            root: self.root.clone(),
            detail: detail.into(),
        }
    }

    /// The manifest's network passphrase, when the lake has a
    /// `.config.json` that names one.
    pub async fn manifest_passphrase(&self) -> StellarResult<Option<String>> {
        let path = ObjPath::from(".config.json");
        let bytes = match self.store.get(&path).await {
            Ok(r) => r.bytes().await?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| self.err(format!(".config.json: not JSON: {e}")))?;
        Ok(v.get("networkPassphrase")
            .and_then(|p| p.as_str())
            .map(str::to_string))
    }

    /// Refuses a lake whose manifest names another network.
    pub async fn check_network(&self, network: &Network) -> StellarResult<()> {
        match self.manifest_passphrase().await? {
            Some(p) if p != network.passphrase() => Err(self.err(format!(
                ".config.json says networkPassphrase {p:?}, but --network is {network}"
            ))),
            _ => Ok(()),
        }
    }

    /// Every batch file, sorted by start ledger.
    pub async fn files(&self) -> StellarResult<Vec<LakeFile>> {
        let mut out = Vec::new();
        let mut listing = self.store.list(None);
        while let Some(meta) = listing.try_next().await? {
            let Some(name) = meta.location.filename() else {
                continue;
            };
            match parse_name(name) {
                Ok(Some((start, end))) => out.push(LakeFile {
                    path: meta.location.clone(),
                    start,
                    end,
                    size: meta.size,
                }),
                Ok(None) => {}
                Err(e) => return Err(self.err(e)),
            }
        }
        out.sort_by_key(|f| (f.start, f.end));
        Ok(out)
    }

    /// The files that hold `from..=to` (`to` unset: to the lake's end), in
    /// order. Refuses a range the lake does not cover, and any gap or
    /// overlap between the chosen files.
    pub async fn select(&self, from: Option<u32>, to: Option<u32>) -> StellarResult<Vec<LakeFile>> {
        let all = self.files().await?;
        let (Some(first), Some(last)) = (all.first(), all.last()) else {
            return Err(self.err("holds no batch files (names like FCD285FF--53312000.xdr.zst)"));
        };
        let from = from.unwrap_or(first.start);
        let to = to.unwrap_or(last.end);
        if to < from {
            return Err(self.err(format!("--to {to} is before --from {from}")));
        }
        if from < first.start || to > last.end {
            return Err(self.err(format!(
                "holds ledgers {}..={}, which does not cover {from}..={to}",
                first.start, last.end
            )));
        }
        let chosen: Vec<LakeFile> = all
            .into_iter()
            .filter(|f| f.end >= from && f.start <= to)
            .collect();
        for w in chosen.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            if u64::from(b.start) != u64::from(a.end) + 1 {
                let what = if b.start <= a.end {
                    "overlaps"
                } else {
                    "leaves a gap after"
                };
                return Err(StellarError::Gap {
                    detail: format!(
                        "in {}: {} (ledgers {}..={}) {what} {} (ledgers {}..={}); expected the next \
                         file to start at ledger {}",
                        self.root,
                        b.path,
                        b.start,
                        b.end,
                        a.path,
                        a.start,
                        a.end,
                        u64::from(a.end) + 1
                    ),
                });
            }
        }
        Ok(chosen)
    }

    /// A file's bytes.
    pub async fn read(&self, f: &LakeFile) -> StellarResult<bytes::Bytes> {
        Ok(self.store.get(&f.path).await?.bytes().await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sep54_names() {
        assert_eq!(
            parse_name("FCD285FF--53312000.xdr.zstd"),
            Ok(Some((53_312_000, 53_312_000)))
        );
        assert_eq!(parse_name("FFFFFFFF--0-63.xdr.zst"), Ok(Some((0, 63))));
        assert_eq!(parse_name("fffffc18--999.xdr"), Ok(Some((999, 999))));
        for other in [
            ".config.json",
            "README.md",
            "FFFFFFFF--x.xdr.zst",
            "F--1.xdr.zst",
        ] {
            assert_eq!(parse_name(other), Ok(None), "{other}");
        }
        let e = parse_name("FFFFFFFF--5.xdr.zst").expect_err("wrong prefix");
        assert!(e.contains("FFFFFFFA"), "{e}");
        assert!(parse_name("FFFFFFF5--10-2.xdr.zst").is_err());
    }
}
