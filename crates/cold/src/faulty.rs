//! A fault-injecting wrapper around a real object store, for tests: it
//! counts GETs per key, fails the GETs of chosen keys with the kind of
//! error an S3 client gives (naming the endpoint and bucket), and can
//! answer a conditional create that succeeded as if a retried request had
//! been refused.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

#[derive(Default)]
struct State {
    /// GETs (not HEADs) per key.
    gets: HashMap<String, u64>,
    /// Keys whose GETs fail, with the error's text.
    fail: HashMap<String, String>,
    /// Conditional creates succeed, then answer "already exists".
    create_then_refuse: bool,
    /// Listings hide manifests newer than this.
    manifests_up_to: Option<u64>,
    /// Every GET waits this long first (an object store's latency).
    delay: Option<Duration>,
    /// GETs of keys starting with this wait until it is cleared.
    hold: Option<String>,
    /// Ranged GETs of this key from this offset wait until it is cleared.
    hold_range: Option<(String, u64)>,
    /// GETs waiting on a hold now.
    held: u64,
    /// GETs in flight now, and the most at once.
    in_flight: u64,
    peak: u64,
    /// GETs that started while none was in flight: the sequential round
    /// trips a reader waited for.
    rounds: u64,
}

/// Counts a GET out of flight when it ends (or is dropped).
struct Flight<'a>(&'a Faulty);

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.0.state().in_flight -= 1;
    }
}

/// Counts a GET out of those held when its wait ends (or is dropped).
struct Held<'a>(&'a Faulty);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.state().held -= 1;
    }
}

/// The wrapper.
pub(crate) struct Faulty {
    inner: Arc<dyn ObjectStore>,
    state: Mutex<State>,
}

impl fmt::Debug for Faulty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Faulty({})", self.inner)
    }
}

impl fmt::Display for Faulty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Faulty({})", self.inner)
    }
}

impl Faulty {
    pub(crate) fn new(inner: Arc<dyn ObjectStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// GETs of keys starting with `prefix` so far.
    pub(crate) fn gets(&self, prefix: &str) -> u64 {
        self.state()
            .gets
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, n)| n)
            .sum()
    }

    /// GETs of `key` fail with `text` from now on.
    pub(crate) fn fail_gets(&self, key: &str, text: &str) {
        self.state().fail.insert(key.into(), text.into());
    }

    /// Listings show manifests up to `version` only (None: all), so a
    /// replica can be walked through a history already published.
    pub(crate) fn show_manifests_up_to(&self, version: Option<u64>) {
        self.state().manifests_up_to = version;
    }

    fn hide(
        &self,
        list: BoxStream<'static, Result<ObjectMeta>>,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let Some(max) = self.state().manifests_up_to else {
            return list;
        };
        list.filter(move |m| {
            let newer = m
                .as_ref()
                .ok()
                .and_then(|m| ledgerstore_pack::manifest::parse_manifest_key(m.location.as_ref()));
            futures::future::ready(newer.is_none_or(|v| v <= max))
        })
        .boxed()
    }

    /// Every GET waits `delay` first (None: none).
    pub(crate) fn delay_gets(&self, delay: Option<Duration>) {
        self.state().delay = delay;
    }

    /// GETs of keys starting with `prefix` wait (each at most 60 s) until
    /// this is called again with another prefix or None.
    pub(crate) fn hold_gets(&self, prefix: Option<&str>) {
        self.state().hold = prefix.map(str::to_string);
    }

    /// Ranged GETs of `key` starting at byte `start` (one piece of a pack)
    /// wait (each at most 60 s) until this is called again with None.
    pub(crate) fn hold_range(&self, piece: Option<(&str, u64)>) {
        self.state().hold_range = piece.map(|(k, at)| (k.to_string(), at));
    }

    /// GETs waiting on a hold ([`Self::hold_gets`], [`Self::hold_range`])
    /// now.
    pub(crate) fn held(&self) -> u64 {
        self.state().held
    }

    /// (GETs in flight now, the most at once, sequential rounds) since
    /// [`Self::reset_flights`].
    pub(crate) fn flights(&self) -> (u64, u64, u64) {
        let s = self.state();
        (s.in_flight, s.peak, s.rounds)
    }

    pub(crate) fn reset_flights(&self) {
        let mut s = self.state();
        (s.peak, s.rounds) = (s.in_flight, 0);
    }

    /// Conditional creates succeed, then report "already exists".
    pub(crate) fn create_then_refuse(&self, on: bool) {
        self.state().create_then_refuse = on;
    }
}

#[async_trait]
impl ObjectStore for Faulty {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let refuse = self.state().create_then_refuse && matches!(opts.mode, PutMode::Create);
        let done = self.inner.put_opts(location, payload, opts).await?;
        if refuse {
            return Err(object_store::Error::AlreadyExists {
                path: location.to_string(),
                source: "412 Precondition Failed (the retried request after a timeout)".into(),
            });
        }
        Ok(done)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let key = location.to_string();
        let delay = {
            let mut s = self.state();
            if !options.head {
                *s.gets.entry(key.clone()).or_default() += 1;
            }
            if s.in_flight == 0 {
                s.rounds += 1;
            }
            s.in_flight += 1;
            s.peak = s.peak.max(s.in_flight);
            s.delay
        };
        let _flight = Flight(self);
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        let start = match &options.range {
            Some(object_store::GetRange::Bounded(r)) => Some(r.start),
            Some(object_store::GetRange::Offset(at)) => Some(*at),
            _ => None,
        };
        let mut waiting = None;
        for _ in 0..6000 {
            let held = {
                let s = self.state();
                s.hold.as_ref().is_some_and(|p| key.starts_with(p))
                    || s.hold_range
                        .as_ref()
                        .is_some_and(|(k, at)| *k == key && start == Some(*at))
            };
            if !held {
                break;
            }
            if waiting.is_none() {
                self.state().held += 1;
                waiting = Some(Held(self));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(waiting);
        if let Some(text) = self.state().fail.get(&key) {
            return Err(object_store::Error::Generic {
                store: "S3",
                source: text.clone().into(),
            });
        }
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.hide(self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.hide(self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}
