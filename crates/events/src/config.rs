//! [`EventsConfig`] and the dir's `EVENTS` marker, which records the
//! geometry a dir was created with.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::durable::write_atomic;
use crate::error::{EventsError, EventsResult};

/// The marker's name in the events dir.
pub const MARKER: &str = "EVENTS";
/// The lock file: an exclusive lock held while a process has the dir
/// open, so two processes never build into one dir.
pub const LOCK: &str = "LOCK";
/// Where the index's data comes from, for a replica's dir (written by the
/// daemon: the published store it follows); ignored by the index itself.
pub const SOURCE: &str = "SOURCE";

/// Names of the dir that are not index files.
pub(crate) fn reserved(name: &str) -> bool {
    name == MARKER || name == LOCK || name == SOURCE
}
/// The marker's format version.
const MARKER_VERSION: u32 = 1;

/// Settings of the events store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventsConfig {
    /// Ledgers a level-0 file covers (its windows are aligned to
    /// multiples of it); also the most ledgers the in-memory tail holds.
    pub file_ledgers: u32,
    /// Files of one level merged into one of the next.
    pub fan_out: u32,
    /// How often the builder polls the store's mark (it also wakes on
    /// [`EventStore::notify`](crate::EventStore::notify)).
    #[serde(rename = "poll_ms", with = "millis")]
    pub poll: Duration,
    /// The most events plus ledgers a merged file may hold: a group of
    /// files over it is left as it is. A merge holds up to ~8 bytes per
    /// event and per ledger of its output in memory
    /// (`ledgerstore_event_index::merge`: the largest list, the ledger
    /// table), so the default, 2^25, bounds a merge near 270 MB; files
    /// are at most 2^32 − 1 events anyway. With pubnet's ~650 events a
    /// ledger it stops merges at level 2 (16,384 ledgers a file, ~10 M
    /// events); ledgers without events (before protocol 20) merge up to
    /// level 4 (4 M ledgers a file).
    pub max_file_events: u32,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            file_ledgers: 64,
            fan_out: 16,
            poll: Duration::from_millis(200),
            max_file_events: 1 << 25,
        }
    }
}

/// Bounds of the settings.
pub const FILE_LEDGERS_MAX: u32 = 1 << 16;
/// See [`FILE_LEDGERS_MAX`].
pub const FAN_OUT_MAX: u32 = 1024;

impl EventsConfig {
    /// Checks each setting's range, naming the field.
    pub fn validate(&self) -> EventsResult<()> {
        if !(1..=FILE_LEDGERS_MAX).contains(&self.file_ledgers) {
            return Err(EventsError::Config {
                field: "events.file_ledgers",
                value: self.file_ledgers.to_string(),
                allowed: "between 1 and 65536",
            });
        }
        if !(2..=FAN_OUT_MAX).contains(&self.fan_out) {
            return Err(EventsError::Config {
                field: "events.fan_out",
                value: self.fan_out.to_string(),
                allowed: "between 2 and 1024",
            });
        }
        if !(1..=i32::MAX as u32).contains(&self.max_file_events) {
            return Err(EventsError::Config {
                field: "events.max_file_events",
                value: self.max_file_events.to_string(),
                allowed: "between 1 and 2147483647",
            });
        }
        if self.poll < Duration::from_millis(1) || self.poll > Duration::from_secs(60) {
            return Err(EventsError::Config {
                field: "events.poll_ms",
                value: self.poll.as_millis().to_string(),
                allowed: "between 1 and 60000",
            });
        }
        Ok(())
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// The geometry recorded in the marker: `(file_ledgers, fan_out)`.
pub(crate) type Geometry = (u32, u32);

fn marker_text(g: Geometry) -> String {
    format!(
        "ledgerstore-events {MARKER_VERSION}\nfile_ledgers {}\nfan_out {}\n",
        g.0, g.1
    )
}

pub(crate) fn parse_marker(dir: &Path, text: &str) -> EventsResult<Geometry> {
    let bad = |what: &str| EventsError::dir(dir, format!("{MARKER}: {what}"));
    let mut lines = text.lines();
    let mut field = |name: &str| -> EventsResult<u32> {
        let line = lines
            .next()
            .ok_or_else(|| bad(&format!("no {name} line")))?;
        let (k, v) = line
            .split_once(' ')
            .ok_or_else(|| bad(&format!("bad line {line:?}")))?;
        if k != name {
            return Err(bad(&format!("expected {name}, found {line:?}")));
        }
        v.parse()
            .map_err(|_| bad(&format!("{name} is not a number: {v:?}")))
    };
    let version = field("ledgerstore-events")?;
    if version != MARKER_VERSION {
        return Err(bad(&format!(
            "format version {version}; this build reads {MARKER_VERSION}"
        )));
    }
    let g = (field("file_ledgers")?, field("fan_out")?);
    if lines.next().is_some_and(|l| !l.is_empty()) {
        return Err(bad("trailing lines"));
    }
    Ok(g)
}

/// The settings the dir works with: the marker's geometry when there is
/// one (a dir keeps the geometry it was created with; a different
/// setting is logged and ignored), else `cfg`'s, recorded in a new
/// marker. A dir without a marker must hold no index files.
pub(crate) fn settle(dir: &Path, cfg: EventsConfig, has_files: bool) -> EventsResult<EventsConfig> {
    let path = dir.join(MARKER);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let (file_ledgers, fan_out) = parse_marker(dir, &text)?;
            let recorded = EventsConfig {
                file_ledgers,
                fan_out,
                ..cfg
            };
            recorded.validate()?;
            if (file_ledgers, fan_out) != (cfg.file_ledgers, cfg.fan_out) {
                tracing::warn!(
                    dir = %dir.display(),
                    file_ledgers,
                    fan_out,
                    configured_file_ledgers = cfg.file_ledgers,
                    configured_fan_out = cfg.fan_out,
                    "the events dir was created with other file_ledgers/fan_out: using the recorded ones"
                );
            }
            Ok(recorded)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if has_files {
                return Err(EventsError::dir(
                    dir,
                    format!("index files but no {MARKER} marker"),
                ));
            }
            write_atomic(
                dir,
                MARKER,
                marker_text((cfg.file_ledgers, cfg.fan_out)).as_bytes(),
            )?;
            Ok(cfg)
        }
        Err(e) => Err(EventsError::io(&path, "reading")(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_out_of_range_name_their_field() {
        let bad = EventsConfig {
            fan_out: 1,
            ..EventsConfig::default()
        };
        let e = bad.validate().expect_err("fan_out 1").to_string();
        assert!(
            e.contains("events.fan_out") && e.contains("between 2 and 1024"),
            "{e}"
        );
        let bad = EventsConfig {
            file_ledgers: 0,
            ..EventsConfig::default()
        };
        let e = bad.validate().expect_err("file_ledgers 0").to_string();
        assert!(e.contains("events.file_ledgers"), "{e}");
        EventsConfig::default().validate().expect("defaults");
    }

    #[test]
    fn config_reads_with_defaults_and_refuses_unknown_fields() {
        let c: EventsConfig = serde_json::from_str(r#"{"fan_out": 4}"#).expect("json");
        assert_eq!(c.fan_out, 4);
        assert_eq!(c.file_ledgers, 64);
        assert_eq!(c.poll, Duration::from_millis(200));
        let c: EventsConfig = serde_json::from_str(r#"{"poll_ms": 50}"#).expect("json");
        assert_eq!(c.poll, Duration::from_millis(50));
        assert!(serde_json::from_str::<EventsConfig>(r#"{"fanout": 4}"#).is_err());
    }

    #[test]
    fn the_marker_round_trips_and_damage_is_named() {
        let dir = Path::new("/x");
        assert_eq!(
            parse_marker(dir, &marker_text((4, 2))).expect("parse"),
            (4, 2)
        );
        let e = parse_marker(dir, "ledgerstore-events 9\nfile_ledgers 4\nfan_out 2\n")
            .expect_err("version")
            .to_string();
        assert!(e.contains("EVENTS") && e.contains("version 9"), "{e}");
        assert!(parse_marker(dir, "file_ledgers 4\n").is_err());
    }
}
