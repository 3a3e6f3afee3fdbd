//! Metrics of the published cold tier (listed in `docs/metrics.md`): a
//! replica's manifest, cache and object reads, and a writer's publishing.

use std::sync::Mutex;

use ledgerstore_cold::PublishReport;
use ledgerstore_store::ReplicaStatus;
use prometheus::{Gauge, IntCounter, IntCounterVec, IntGauge, Opts, Registry};

fn gauge(r: &Registry, name: &str, help: &str) -> prometheus::Result<IntGauge> {
    let g = IntGauge::new(name, help)?;
    r.register(Box::new(g.clone()))?;
    Ok(g)
}

fn counter(r: &Registry, name: &str, help: &str) -> prometheus::Result<IntCounter> {
    let c = IntCounter::new(name, help)?;
    r.register(Box::new(c.clone()))?;
    Ok(c)
}

/// A counter and the status total it follows.
type Tracked = (IntCounter, fn(&ReplicaStatus) -> u64);

/// A replica's metrics, refreshed from [`ReplicaStatus`].
pub struct ReplicaMetrics {
    version: IntGauge,
    age: Gauge,
    mark: IntGauge,
    cache_bytes: IntGauge,
    cache_limit: IntGauge,
    pack_dict_bytes: IntGauge,
    pack_dict_limit: IntGauge,
    following: IntGauge,
    /// Counters and the totals they were last brought to.
    counters: Vec<Tracked>,
    seen: Mutex<Vec<u64>>,
}

impl ReplicaMetrics {
    /// Registers them in `r`.
    pub fn new(r: &Registry) -> prometheus::Result<Self> {
        let age = Gauge::new(
            "ledgerstore_replica_manifest_age_seconds",
            "Seconds since the writer created the manifest this replica serves.",
        )?;
        r.register(Box::new(age.clone()))?;
        let counters: Vec<Tracked> = vec![
            (
                counter(
                    r,
                    "ledgerstore_replica_cache_hits_total",
                    "Cache lookups answered from the disk cache.",
                )?,
                |s| s.cache_hits,
            ),
            (
                counter(
                    r,
                    "ledgerstore_replica_cache_misses_total",
                    "Cache lookups that fetched from the object store.",
                )?,
                |s| s.cache_misses,
            ),
            (
                counter(
                    r,
                    "ledgerstore_replica_cache_evictions_total",
                    "Cache entries evicted to stay under replica.cache_mb.",
                )?,
                |s| s.cache_evictions,
            ),
            (
                counter(
                    r,
                    "ledgerstore_replica_object_gets_total",
                    "Object reads (whole and ranged GETs), manifests included.",
                )?,
                |s| s.object_gets,
            ),
            (
                counter(
                    r,
                    "ledgerstore_replica_object_get_bytes_total",
                    "Bytes the object reads fetched.",
                )?,
                |s| s.object_get_bytes,
            ),
            (
                counter(
                    r,
                    "ledgerstore_replica_lookups_total",
                    "Transactions and ledgers looked up in the published ranges.",
                )?,
                |s| s.lookups,
            ),
            (
                counter(
                    r,
                    "ledgerstore_replica_pack_dict_opens_total",
                    "Pack dictionaries (version 4) opened and checked: ~0.1 ms of CPU each from the \
                     disk cache where it is kept unpacked, ~0.4 ms where it is kept as stored or \
                     fetched.",
                )?,
                |s| s.pack_dict_opens,
            ),
        ];
        let n = counters.len();
        Ok(Self {
            version: gauge(
                r,
                "ledgerstore_replica_manifest_version",
                "The manifest version served (0: none published yet).",
            )?,
            age,
            mark: gauge(
                r,
                "ledgerstore_replica_published_mark",
                "The last published ledger served.",
            )?,
            cache_bytes: gauge(
                r,
                "ledgerstore_replica_cache_bytes",
                "Bytes in the disk cache.",
            )?,
            cache_limit: gauge(
                r,
                "ledgerstore_replica_cache_limit_bytes",
                "The disk cache's bound (replica.cache_mb).",
            )?,
            pack_dict_bytes: gauge(
                r,
                "ledgerstore_replica_pack_dict_bytes",
                "Memory the pack dictionaries (version 4) held take.",
            )?,
            pack_dict_limit: gauge(
                r,
                "ledgerstore_replica_pack_dict_limit_bytes",
                "The bound on the pack dictionaries held (replica.dict_memory_mb).",
            )?,
            following: gauge(
                r,
                "ledgerstore_replica_following",
                "1 while the latest manifest poll succeeded, 0 after a failed one.",
            )?,
            counters,
            seen: Mutex::new(vec![0; n]),
        })
    }

    /// Brings every metric to `s`.
    pub fn refresh(&self, s: &ReplicaStatus) {
        let v = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
        self.version.set(v(s.manifest_version));
        self.age.set(s.manifest_age_s);
        self.mark.set(i64::from(s.published_mark.unwrap_or(0)));
        self.cache_bytes.set(v(s.cache_bytes));
        self.cache_limit.set(v(s.cache_limit_bytes));
        self.pack_dict_bytes.set(v(s.pack_dict_bytes));
        self.pack_dict_limit.set(v(s.pack_dict_limit_bytes));
        self.following.set(i64::from(s.follow_error.is_none()));
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        for ((c, get), last) in self.counters.iter().zip(seen.iter_mut()) {
            let now = get(s);
            c.inc_by(now.saturating_sub(*last));
            *last = now.max(*last);
        }
    }
}

/// A writer's publishing metrics.
pub struct PublishMetrics {
    version: IntGauge,
    mark: IntGauge,
    rounds: IntCounterVec,
    uploaded: IntCounter,
    seconds: Gauge,
}

impl PublishMetrics {
    /// Registers them in `r`.
    pub fn new(r: &Registry) -> prometheus::Result<Self> {
        let rounds = IntCounterVec::new(
            Opts::new(
                "ledgerstore_publish_rounds_total",
                "Publish rounds by result: published (a new manifest), idle (nothing new), failed.",
            ),
            &["result"],
        )?;
        r.register(Box::new(rounds.clone()))?;
        let seconds = Gauge::new(
            "ledgerstore_publish_last_round_seconds",
            "Wall time of the last publish round.",
        )?;
        r.register(Box::new(seconds.clone()))?;
        Ok(Self {
            version: gauge(
                r,
                "ledgerstore_publish_manifest_version",
                "The newest manifest version published (0: none).",
            )?,
            mark: gauge(
                r,
                "ledgerstore_publish_mark",
                "The last ledger published to object storage.",
            )?,
            rounds,
            uploaded: counter(
                r,
                "ledgerstore_publish_uploaded_bytes_total",
                "Bytes uploaded by publish rounds.",
            )?,
            seconds,
        })
    }

    /// Records a round.
    pub fn round(&self, r: Result<&PublishReport, ()>) {
        match r {
            Ok(rep) => {
                let result = if rep.version.is_some() {
                    "published"
                } else {
                    "idle"
                };
                self.rounds.with_label_values(&[result]).inc();
                if let Some(v) = rep.version {
                    self.version.set(i64::try_from(v).unwrap_or(i64::MAX));
                }
                if let Some(m) = rep.mark {
                    self.mark.set(i64::from(m));
                }
                self.uploaded.inc_by(rep.uploaded_bytes);
                self.seconds.set(rep.took.as_secs_f64());
            }
            Err(()) => self.rounds.with_label_values(&["failed"]).inc(),
        }
    }
}

#[cfg(test)]
mod tests {
    use prometheus::{Encoder, Registry, TextEncoder};

    use super::*;

    /// Every series carries its own field of the status: each field a
    /// distinct value, and a counter follows its total across refreshes.
    #[test]
    fn each_replica_series_follows_its_own_field() {
        let r = Registry::new();
        let m = ReplicaMetrics::new(&r).expect("register");
        let mut s = ReplicaStatus {
            manifest_version: 3,
            manifest_age_s: 2.5,
            published_mark: Some(17),
            cache_bytes: 101,
            cache_limit_bytes: 102,
            cache_hits: 103,
            cache_misses: 104,
            cache_evictions: 105,
            object_gets: 106,
            object_get_bytes: 107,
            lookups: 108,
            pack_dict_bytes: 109,
            pack_dict_limit_bytes: 110,
            pack_dict_opens: 111,
            ..ReplicaStatus::default()
        };
        m.refresh(&s);
        s.pack_dict_opens = 120;
        m.refresh(&s);
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&r.gather(), &mut out)
            .expect("encode");
        let text = String::from_utf8(out).expect("utf-8");
        for line in [
            "ledgerstore_replica_manifest_version 3",
            "ledgerstore_replica_manifest_age_seconds 2.5",
            "ledgerstore_replica_published_mark 17",
            "ledgerstore_replica_cache_bytes 101",
            "ledgerstore_replica_cache_limit_bytes 102",
            "ledgerstore_replica_cache_hits_total 103",
            "ledgerstore_replica_cache_misses_total 104",
            "ledgerstore_replica_cache_evictions_total 105",
            "ledgerstore_replica_object_gets_total 106",
            "ledgerstore_replica_object_get_bytes_total 107",
            "ledgerstore_replica_lookups_total 108",
            "ledgerstore_replica_pack_dict_bytes 109",
            "ledgerstore_replica_pack_dict_limit_bytes 110",
            "ledgerstore_replica_pack_dict_opens_total 120",
            "ledgerstore_replica_following 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}: {text}");
        }
    }
}
