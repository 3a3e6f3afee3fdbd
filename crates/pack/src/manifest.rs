//! The published manifest: which objects hold which ranges. Each version
//! is its own immutable object, `manifest/<version, 20 digits>.json`,
//! created with a conditional put (`If-None-Match: *`, GCS
//! `ifGenerationMatch=0`), so two writers can never both publish version
//! `n`, and readers find the newest by one listing that starts after the
//! version they hold (keys sort by version).
//!
//! Data objects are content-addressed (their key ends in the first 16 hex
//! digits of their SHA-256), so a key is never rewritten with other bytes:
//! a manifest a replica holds stays valid while newer ones appear.

use serde::{Deserialize, Serialize};

use crate::error::{PackError, PackResult};
use crate::format::Header;

/// The format written.
pub const FORMAT: u32 = 1;
/// Where manifests live, under the store's location.
pub const MANIFEST_PREFIX: &str = "manifest";

/// The key of manifest `version`.
pub fn manifest_key(version: u64) -> String {
    format!("{MANIFEST_PREFIX}/{version:020}.json")
}

/// The version a manifest key names (a key under `manifest/`).
pub fn parse_manifest_key(key: &str) -> Option<u64> {
    let name = key.strip_prefix(MANIFEST_PREFIX)?.strip_prefix('/')?;
    let digits = name.strip_suffix(".json")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The key of a pack.
pub fn pack_key(first: u32, last: u32, sha256: &str) -> String {
    format!("packs/{first:010}-{last:010}-{}.pack", short(sha256))
}

/// The key of a segment file.
pub fn segment_key(first: u32, last: u32, sha256: &str) -> String {
    format!("segments/{first:010}-{last:010}-{}.idx", short(sha256))
}

/// The key of a contract-event index file.
pub fn events_key(first: u32, last: u32, sha256: &str) -> String {
    format!("events/{first:010}-{last:010}-{}.idx", short(sha256))
}

/// The key of a dictionary.
pub fn dict_key(version: u32, sha256: &str) -> String {
    format!("dicts/{version:010}-{}.dict", short(sha256))
}

fn short(sha256: &str) -> &str {
    sha256.get(..16).unwrap_or(sha256)
}

/// One published object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Object {
    /// Its key under the store's location.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
}

/// A published pack: one base range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackRef {
    /// First ledger.
    pub first: u32,
    /// Last ledger.
    pub last: u32,
    /// Bodies (transactions plus aliases).
    pub bodies: u64,
    /// The object.
    #[serde(flatten)]
    pub object: Object,
}

impl PackRef {
    /// The pack's header from its first [`crate::format::HEADER`] bytes,
    /// checked against this entry: ledgers, bodies and size. The error
    /// says what differs, for the caller to name the object.
    pub fn header(&self, bytes: &[u8]) -> Result<Header, String> {
        let h = Header::parse(bytes).map_err(|e| e.to_string())?;
        let listed = (self.first, self.last, self.bodies, self.object.size);
        if (h.first, h.last, h.bodies, h.size) != listed {
            return Err(format!(
                "its header says ledgers {}..={}, {} bodies, {} bytes; the manifest says \
                 {}..={}, {} bodies, {} bytes",
                h.first, h.last, h.bodies, h.size, listed.0, listed.1, listed.2, listed.3
            ));
        }
        Ok(h)
    }
}

/// A published segment: a base range or a merged window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentRef {
    /// First ledger.
    pub first: u32,
    /// Last ledger.
    pub last: u32,
    /// The object.
    #[serde(flatten)]
    pub object: Object,
}

/// A published contract-event index file (`ledgerstore-events`): a
/// window of the writer's event index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventsRef {
    /// First ledger.
    pub first: u32,
    /// Last ledger.
    pub last: u32,
    /// Events it indexes.
    pub events: u64,
    /// The object.
    #[serde(flatten)]
    pub object: Object,
}

/// The window geometry of the published event index (the writer's
/// events marker): replicas index the ledgers past its files with the
/// same windows, so the files they build and the ones they fetch tile
/// alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventsGeometry {
    /// Ledgers of a level-0 window.
    pub file_ledgers: u32,
    /// Windows of level k merged into one of level k + 1.
    pub fan_out: u32,
}

/// A published dictionary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DictRef {
    /// Its version (bodies name it).
    pub version: u32,
    /// The object.
    #[serde(flatten)]
    pub object: Object,
}

/// One manifest version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: u32,
    /// Its version (its key names it too).
    pub version: u64,
    /// When it was written, Unix milliseconds.
    pub created_unix_ms: u64,
    /// Who wrote it (host, process, data dir).
    pub writer: String,
    /// Ledgers per base range of the writer's merge policy.
    pub range_ledgers: u32,
    /// The first published ledger.
    pub first: u32,
    /// The published mark: the last published ledger.
    pub mark: u32,
    /// SHA-256 of the mark's ledger record as its writer stored it (a
    /// zstd frame, which is also the pack's bytes, in a format-1 or 2 data
    /// dir; the raw record in a format-3 dir, whose packs hold it
    /// compressed at publish time): a writer checks that its own history
    /// holds the same ledger, as stored or as packed, before it publishes
    /// more.
    pub mark_record_sha256: String,
    /// Packs, oldest first, contiguous from `first` to `mark`.
    pub packs: Vec<PackRef>,
    /// Segments, oldest first, tiling `first..=mark`.
    pub segments: Vec<SegmentRef>,
    /// Dictionaries the packs' bodies use.
    pub dicts: Vec<DictRef>,
    /// The event index's geometry; present when `events` is not empty.
    /// Absent from manifests without events, which are then the bytes
    /// earlier builds wrote; earlier builds refuse manifests with events
    /// (an unknown field), so replicas are upgraded first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_geometry: Option<EventsGeometry>,
    /// Contract-event index files, oldest first, contiguous from `first`,
    /// ending at or before `mark` (replicas index the rest from the
    /// packs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventsRef>,
}

impl Manifest {
    /// Parses and validates manifest bytes read from `key`.
    pub fn parse(key: &str, bytes: &[u8]) -> PackResult<Self> {
        let bad = |detail: String| PackError::Manifest {
            key: key.to_string(),
            detail,
        };
        let m: Manifest =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not a manifest: {e}")))?;
        if m.format != FORMAT {
            return Err(bad(format!(
                "format {}; this build reads format {FORMAT}",
                m.format
            )));
        }
        if parse_manifest_key(key).is_some_and(|v| v != m.version) {
            return Err(bad(format!("holds version {}", m.version)));
        }
        m.validate().map_err(bad)?;
        Ok(m)
    }

    /// The manifest's JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).unwrap_or_default();
        v.push(b'\n');
        v
    }

    /// Checks the invariants: packs contiguous from `first` to `mark`,
    /// segments tiling the same span, every object named and hashed.
    pub fn validate(&self) -> Result<(), String> {
        tiles(
            "packs",
            self.packs.iter().map(|p| (p.first, p.last)),
            self.first,
            self.mark,
        )?;
        tiles(
            "segments",
            self.segments.iter().map(|s| (s.first, s.last)),
            self.first,
            self.mark,
        )?;
        self.validate_events()?;
        let objects = self
            .packs
            .iter()
            .map(|p| &p.object)
            .chain(self.segments.iter().map(|s| &s.object))
            .chain(self.dicts.iter().map(|d| &d.object))
            .chain(self.events.iter().map(|e| &e.object));
        for o in objects {
            let hex_ok = o.sha256.len() == 64 && o.sha256.bytes().all(|b| b.is_ascii_hexdigit());
            if o.key.is_empty() || o.key.contains("..") || !hex_ok {
                return Err(format!(
                    "object {:?}: a key and a 64-digit sha256 are required",
                    o.key
                ));
            }
        }
        Ok(())
    }

    /// The event files: contiguous from `first`, ending by `mark`, each ending a
    /// level-0 window of the geometry, which must be there and sane.
    fn validate_events(&self) -> Result<(), String> {
        let (Some(a), Some(z)) = (self.events.first(), self.events.last()) else {
            return Ok(());
        };
        let Some(g) = self.events_geometry else {
            return Err("events: files listed without events_geometry".into());
        };
        if g.file_ledgers == 0 || g.fan_out < 2 {
            return Err(format!(
                "events_geometry: file_ledgers {} and fan_out {}; expected at least 1 and 2",
                g.file_ledgers, g.fan_out
            ));
        }
        if a.first != self.first {
            return Err(format!(
                "events: the first file starts at {}, not at the first published ledger {}",
                a.first, self.first
            ));
        }
        tiles(
            "events",
            self.events.iter().map(|e| (e.first, e.last)),
            a.first,
            z.last.min(self.mark),
        )?;
        if let Some(e) = self
            .events
            .iter()
            .find(|e| (u64::from(e.last) + 1) % u64::from(g.file_ledgers) != 0)
        {
            return Err(format!(
                "events: file {}..={} does not end a window of {} ledgers",
                e.first, e.last, g.file_ledgers
            ));
        }
        Ok(())
    }

    /// The last ledger the event files cover.
    pub fn events_through(&self) -> Option<u32> {
        self.events.last().map(|e| e.last)
    }

    /// The pack holding `seq`.
    pub fn pack_of(&self, seq: u32) -> Option<&PackRef> {
        let i = self.packs.partition_point(|p| p.last < seq);
        self.packs.get(i).filter(|p| p.first <= seq)
    }

    /// Bodies in all packs.
    pub fn bodies(&self) -> u64 {
        self.packs.iter().map(|p| p.bodies).sum()
    }
}

/// Ranges, ascending and contiguous, covering exactly `first..=last`.
fn tiles(
    what: &str,
    ranges: impl Iterator<Item = (u32, u32)>,
    first: u32,
    last: u32,
) -> Result<(), String> {
    let mut next = Some(first);
    for (a, b) in ranges {
        if Some(a) != next || a > b || b > last {
            return Err(format!(
                "{what}: range {a}..={b} does not continue the ones before it (expected a range \
                 from {next:?}, ending by {last})"
            ));
        }
        next = b.checked_add(1);
    }
    if next != last.checked_add(1) {
        return Err(format!("{what}: the ranges end before the mark {last}"));
    }
    Ok(())
}
