//! SEP-54 object keys: a lake's `.config.json` and the key of the batch
//! file that holds a ledger, computed without listing the bucket.
//!
//! ```text
//! <root>/.config.json
//! <root>/FFFFFFFF--0-63999/FFFFFFFD--2.xdr.zst          (1 ledger a file, 64,000 files a partition)
//! <root>/FC4DB5FF--60000000-60063999/FC4DB5FF--60000000.xdr.zst
//! ```
//!
//! A partition folder exists when `batchesPerPartition > 1` and is named
//! `hex(0xFFFFFFFF - start)--start-end`; a file is named the same way after
//! its first ledger, with `-end` only when it holds more than one. The
//! reversed hex prefix makes the newest keys sort first.

use serde_json::Value;

/// A lake's `.config.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// `networkPassphrase`, when given.
    pub passphrase: Option<String>,
    /// The key layout; `None` when the manifest gives neither
    /// `ledgersPerBatch` nor `batchesPerPartition` (the lake is listed).
    pub schema: Option<Schema>,
}

impl Manifest {
    /// Parses `.config.json`, naming the field that is wrong. The two
    /// layout fields come together or not at all.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| format!(".config.json: not JSON: {e}"))?;
        let passphrase = v
            .get("networkPassphrase")
            .and_then(Value::as_str)
            .map(str::to_string);
        let schema = if v.get("ledgersPerBatch").is_none() && v.get("batchesPerPartition").is_none()
        {
            None
        } else {
            Some(Schema::parse(bytes)?)
        };
        Ok(Self { passphrase, schema })
    }
}

/// The key layout of a lake's `.config.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// `ledgersPerBatch`: ledgers in each file.
    pub ledgers_per_batch: u32,
    /// `batchesPerPartition`: files in each partition folder.
    pub batches_per_partition: u32,
    /// The file name's extension after `.xdr` (`zst` for zstd).
    pub extension: String,
}

impl Schema {
    /// Parses `.config.json`, naming the field that is wrong.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| format!(".config.json: not JSON: {e}"))?;
        let positive = |key: &str| -> Result<u32, String> {
            match v.get(key).and_then(Value::as_u64) {
                Some(n) if (1..=u64::from(u32::MAX)).contains(&n) => Ok(n as u32),
                Some(n) => Err(format!(
                    ".config.json: {key} = {n}, expected a whole number from 1 to {}",
                    u32::MAX
                )),
                None => Err(format!(
                    ".config.json: {key} is missing or not a whole number (SEP-54 requires it)"
                )),
            }
        };
        let ledgers_per_batch = positive("ledgersPerBatch")?;
        let batches_per_partition = positive("batchesPerPartition")?;
        if u64::from(ledgers_per_batch) * u64::from(batches_per_partition) > u64::from(u32::MAX) {
            return Err(format!(
                ".config.json: ledgersPerBatch × batchesPerPartition = {} is more ledgers than \
                 a partition can hold ({})",
                u64::from(ledgers_per_batch) * u64::from(batches_per_partition),
                u32::MAX
            ));
        }
        let extension = match v.get("compression").and_then(Value::as_str) {
            None | Some("zstd") => "zst".to_string(),
            Some(other) => {
                return Err(format!(
                    ".config.json: compression = {other:?}; SEP-54 defines only \"zstd\""
                ));
            }
        };
        Ok(Self {
            ledgers_per_batch,
            batches_per_partition,
            extension,
        })
    }

    /// First ledger of the file that holds `seq`.
    pub fn batch_start(&self, seq: u32) -> u32 {
        seq / self.ledgers_per_batch * self.ledgers_per_batch
    }

    /// Last ledger of the file that holds `seq`.
    pub fn batch_end(&self, seq: u32) -> u32 {
        let end = u64::from(self.batch_start(seq)) + u64::from(self.ledgers_per_batch) - 1;
        end.min(u64::from(u32::MAX)) as u32
    }

    /// The key of the file that holds `seq`, with extension `ext`.
    pub fn key_with(&self, seq: u32, ext: &str) -> String {
        let mut key = String::with_capacity(64);
        if self.batches_per_partition > 1 {
            let size = u64::from(self.ledgers_per_batch) * u64::from(self.batches_per_partition);
            let start = u64::from(seq) / size * size;
            let end = (start + size - 1).min(u64::from(u32::MAX));
            key.push_str(&format!(
                "{:08X}--{start}-{end}/",
                u64::from(u32::MAX) - start
            ));
        }
        let (start, end) = (self.batch_start(seq), self.batch_end(seq));
        key.push_str(&format!("{:08X}--{start}", u32::MAX - start));
        if end != start {
            key.push_str(&format!("-{end}"));
        }
        key.push_str(".xdr.");
        key.push_str(ext);
        key
    }

    /// The key of the file that holds `seq`.
    pub fn key(&self, seq: u32) -> String {
        self.key_with(seq, &self.extension)
    }
}

/// Parses a SEP-54 batch file name: `(start, end)`, or `None` for a name
/// of another shape (which a listing skips). A well-shaped name whose
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

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(lpb: u32, bpp: u32) -> Schema {
        Schema {
            ledgers_per_batch: lpb,
            batches_per_partition: bpp,
            extension: "zst".into(),
        }
    }

    #[test]
    fn keys_match_galexie() {
        // The pubnet lake: one ledger a file, 64,000 files a partition.
        let pubnet = schema(1, 64_000);
        assert_eq!(pubnet.key(2), "FFFFFFFF--0-63999/FFFFFFFD--2.xdr.zst");
        assert_eq!(
            pubnet.key(63_092_982),
            "FC3E15FF--63040000-63103999/FC3D4709--63092982.xdr.zst"
        );
        // SEP-54's example: 2 ledgers a file, 8 files a partition.
        let sep = schema(2, 8);
        assert_eq!(sep.key(19), "FFFFFFEF--16-31/FFFFFFED--18-19.xdr.zst");
        assert_eq!(sep.key(0), "FFFFFFFF--0-15/FFFFFFFF--0-1.xdr.zst");
        // No partition folder with one file a partition.
        assert_eq!(schema(10, 1).key(25), "FFFFFFEB--20-29.xdr.zst");
        // The last possible ledgers do not overflow.
        assert_eq!(
            schema(64, 1000).key(u32::MAX),
            "0000D7FF--4294912000-4294967295/0000003F--4294967232-4294967295.xdr.zst"
        );
        for seq in [0, 1, 2, 63_999, 64_000, 63_092_982] {
            let key = pubnet.key(seq);
            let name = key.rsplit('/').next().unwrap_or_default();
            assert_eq!(parse_name(name), Ok(Some((seq, seq))), "{key}");
        }
    }

    #[test]
    fn parses_config_and_names_the_wrong_field() {
        let s = Schema::parse(
            br#"{"networkPassphrase":"Public Global Stellar Network ; September 2015","version":"1.0","compression":"zstd","ledgersPerBatch":1,"batchesPerPartition":64000}"#,
        )
        .expect("the pubnet lake's manifest");
        assert_eq!(s.ledgers_per_batch, 1);
        assert_eq!(s.batches_per_partition, 64_000);
        assert_eq!(s.extension, "zst");
        for (json, want) in [
            ("{", "not JSON"),
            (r#"{"batchesPerPartition":1}"#, "ledgersPerBatch is missing"),
            (
                r#"{"ledgersPerBatch":0,"batchesPerPartition":1}"#,
                "ledgersPerBatch = 0",
            ),
            (
                r#"{"ledgersPerBatch":1,"batchesPerPartition":1,"compression":"gzip"}"#,
                "\"gzip\"",
            ),
            (
                r#"{"ledgersPerBatch":100000,"batchesPerPartition":100000}"#,
                "more ledgers than",
            ),
        ] {
            let e = Schema::parse(json.as_bytes()).expect_err(json);
            assert!(e.contains(want), "{json}: {e}");
        }
    }

    #[test]
    fn a_manifest_without_layout_fields_is_listed() {
        let m = Manifest::parse(br#"{"networkPassphrase":"Apply Load"}"#).expect("manifest");
        assert_eq!(m.passphrase.as_deref(), Some("Apply Load"));
        assert_eq!(m.schema, None);
        let e = Manifest::parse(br#"{"ledgersPerBatch":1}"#).expect_err("half a layout");
        assert!(e.contains("batchesPerPartition is missing"), "{e}");
    }

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
