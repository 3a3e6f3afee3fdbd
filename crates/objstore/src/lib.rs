//! Object-storage access for ledgerstore: a location (`s3://bucket/prefix`,
//! `gs://bucket/prefix`, `https://host/path`, a local directory) opened
//! through `object_store`, rooted at its prefix.
//!
//! - **Credentials** ([`Credentials`]): `auto` signs with the configured
//!   keys, else the standard environment variables, when they are set and
//!   reads anonymously otherwise; `anonymous` never signs; `env` requires them; `instance`
//!   is object_store's whole default chain, the only mode that may ask a
//!   cloud instance-metadata endpoint.
//! - **Endpoint** ([`s3_endpoint`]): an S3 location goes to the configured
//!   endpoint, else to the one the standard variables name
//!   (`AWS_ENDPOINT_URL_S3`, then `AWS_ENDPOINT_URL`, then
//!   `AWS_ENDPOINT`, as the AWS CLI and SDKs read them), else to AWS.
//! - **Timeouts and retries**: every request has a connect and a total
//!   timeout; 5xx, 429, timeouts and refused or reset connections are
//!   retried with exponential backoff and decorrelated jitter
//!   (object_store's `RetryConfig`), up to `max_retries` and
//!   `retry_timeout`, after which the error names the object.
//! - **Counters**: every HTTP attempt is counted ([`RequestCounters`]).

mod counting;
mod error;
mod location;

use std::sync::{Arc, Once};
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::prefix::PrefixStore;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};

pub use counting::{RequestCounters, RequestCounts};
pub use error::{ObjStoreError, ObjStoreResult};
pub use location::Location;

use counting::CountingConnector;

/// Where credentials come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Credentials {
    /// The standard environment variables when set, else anonymous.
    #[default]
    Auto,
    /// Never sign (public buckets).
    Anonymous,
    /// The standard environment variables, required.
    Env,
    /// object_store's default chain, which may ask the cloud's instance
    /// metadata endpoint.
    Instance,
}

impl Credentials {
    /// Parses `auto`, `anonymous`, `env` or `instance`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "auto" => Self::Auto,
            "anonymous" => Self::Anonymous,
            "env" => Self::Env,
            "instance" => Self::Instance,
            _ => return None,
        })
    }
}

/// How stores are reached.
#[derive(Debug, Clone)]
pub struct Options {
    /// An S3-compatible server's URL, or a GCS server's base URL (unset:
    /// the cloud's own).
    pub endpoint: Option<String>,
    /// S3 region (unset: `AWS_REGION`, `AWS_DEFAULT_REGION`, else
    /// `us-east-1`).
    pub region: Option<String>,
    /// Where credentials come from.
    pub credentials: Credentials,
    /// S3 keys (access key id, secret) given by configuration; they win
    /// over the environment variables.
    pub s3_keys: Option<(String, String)>,
    /// A GCS service-account key file given by configuration; it wins over
    /// the environment variables.
    pub gcs_service_account: Option<String>,
    /// Allow plain `http://` endpoints.
    pub allow_http: bool,
    /// Longest a request may take, connection included.
    pub request_timeout: Duration,
    /// Longest a connection may take to open.
    pub connect_timeout: Duration,
    /// Retries of one request.
    pub max_retries: usize,
    /// No retry starts later than this after the first attempt.
    pub retry_timeout: Duration,
    /// First backoff; later ones grow exponentially (base 2) with
    /// decorrelated jitter, capped by `backoff_max`.
    pub backoff_initial: Duration,
    /// Longest backoff.
    pub backoff_max: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            endpoint: None,
            region: None,
            credentials: Credentials::Auto,
            s3_keys: None,
            gcs_service_account: None,
            allow_http: false,
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            max_retries: 10,
            retry_timeout: Duration::from_secs(120),
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(15),
        }
    }
}

/// An opened store.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The location it was opened from.
    pub location: Location,
    /// The store, rooted at the location's prefix.
    pub store: Arc<dyn ObjectStore>,
    /// Its HTTP attempts (zero for local stores).
    pub counters: Arc<RequestCounters>,
}

const AWS_KEY_VARS: [&str; 2] = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"];
const GCS_KEY_VARS: [&str; 3] = [
    "GOOGLE_SERVICE_ACCOUNT",
    "GOOGLE_SERVICE_ACCOUNT_PATH",
    "GOOGLE_APPLICATION_CREDENTIALS",
];

/// The variables that name an S3 endpoint, the most specific first: the
/// AWS CLI and SDKs read them in this order.
pub const AWS_ENDPOINT_VARS: [&str; 3] =
    ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"];

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// An S3 endpoint and where it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Endpoint {
    /// The URL.
    pub url: String,
    /// `lake.endpoint`, or the variable that named it.
    pub source: &'static str,
}

/// The endpoint S3 requests go to: `opts.endpoint` (configuration) wins;
/// else the first of [`AWS_ENDPOINT_VARS`] that `var` finds set; else None
/// (AWS itself). Whatever the credentials mode: an endpoint is where the
/// bucket lives, not a credential.
pub fn s3_endpoint(opts: &Options, var: impl Fn(&str) -> Option<String>) -> Option<S3Endpoint> {
    if let Some(url) = &opts.endpoint {
        return Some(S3Endpoint {
            url: url.clone(),
            source: "lake.endpoint",
        });
    }
    AWS_ENDPOINT_VARS.iter().find_map(|&name| {
        var(name)
            .filter(|v| !v.trim().is_empty())
            .map(|url| S3Endpoint { url, source: name })
    })
}

/// Refuses an endpoint that is not an http(s) URL, or is plain http
/// without `allow_http`, naming where it was set.
fn check_endpoint(
    e: &S3Endpoint,
    allow_http: bool,
    refuse: &dyn Fn(String) -> ObjStoreError,
) -> ObjStoreResult<()> {
    let (url, source) = (&e.url, e.source);
    let lower = url.to_ascii_lowercase();
    if !lower.starts_with("http://") && !lower.starts_with("https://") {
        return Err(refuse(format!(
            "{source} = {url:?} is not an http:// or https:// URL"
        )));
    }
    if lower.starts_with("http://") && !allow_http {
        return Err(refuse(format!(
            "the endpoint {url} ({source}) is plain http; set lake.allow_http = true \
             (--lake.allow-http) to allow it"
        )));
    }
    Ok(())
}

/// Opens `location` (see [`Location::parse`]).
pub fn open(location: &str, opts: &Options) -> ObjStoreResult<Opened> {
    let loc = Location::parse(location)?;
    open_location(loc, opts)
}

/// Opens a parsed location.
pub fn open_location(loc: Location, opts: &Options) -> ObjStoreResult<Opened> {
    install_tls_provider();
    let counters = Arc::new(RequestCounters::default());
    let connector = || CountingConnector {
        counters: Arc::clone(&counters),
    };
    let name = loc.to_string();
    let built = |source: object_store::Error| ObjStoreError::Build {
        location: name.clone(),
        source,
    };
    let refuse = |detail: String| ObjStoreError::Options {
        location: name.clone(),
        detail,
    };
    if let Some(e) = &opts.endpoint
        && e.starts_with("http://")
        && !opts.allow_http
    {
        return Err(refuse(format!(
            "the endpoint {e} is plain http; set lake.allow_http = true (--lake.allow-http) to \
             allow it"
        )));
    }
    let store: Arc<dyn ObjectStore> = match &loc {
        Location::Local(dir) => {
            if !dir.is_dir() {
                return Err(refuse("not a directory".into()));
            }
            Arc::new(LocalFileSystem::new_with_prefix(dir).map_err(built)?)
        }
        Location::S3 { bucket, prefix } => {
            let b = s3_builder(bucket, opts, &refuse)?
                .with_client_options(client_options(opts))
                .with_retry(retry(opts))
                .with_http_connector(connector());
            rooted(Arc::new(b.build().map_err(built)?), prefix)
        }
        Location::Gcs { bucket, prefix } => {
            let b = gcs_builder(bucket, opts, &refuse)?
                .with_client_options(client_options(opts))
                .with_retry(retry(opts))
                .with_http_connector(connector());
            rooted(Arc::new(b.build().map_err(built)?), prefix)
        }
        Location::Http { url } => {
            if url.starts_with("http://") && !opts.allow_http {
                return Err(refuse(
                    "plain http; set lake.allow_http = true (--lake.allow-http) to allow it".into(),
                ));
            }
            if opts.credentials == Credentials::Env {
                return Err(refuse(
                    "lake.credentials = \"env\" needs an s3:// or gs:// location; HTTP lakes are \
                     read anonymously"
                        .into(),
                ));
            }
            let b = HttpBuilder::new()
                .with_url(url)
                .with_client_options(client_options(opts))
                .with_retry(retry(opts))
                .with_http_connector(connector());
            Arc::new(b.build().map_err(built)?)
        }
    };
    Ok(Opened {
        location: loc,
        store,
        counters,
    })
}

fn rooted(store: Arc<dyn ObjectStore>, prefix: &str) -> Arc<dyn ObjectStore> {
    if prefix.is_empty() {
        store
    } else {
        Arc::new(PrefixStore::new(store, prefix))
    }
}

fn s3_builder(
    bucket: &str,
    opts: &Options,
    refuse: &dyn Fn(String) -> ObjStoreError,
) -> ObjStoreResult<AmazonS3Builder> {
    let mut b = if opts.credentials == Credentials::Instance {
        AmazonS3Builder::from_env()
    } else {
        AmazonS3Builder::new()
    }
    .with_bucket_name(bucket);
    let region = opts
        .region
        .clone()
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"));
    if let Some(r) = region {
        b = b.with_region(r);
    }
    // Set in every mode: `from_env` (instance) reads the variables too, and
    // its `AWS_ENDPOINT_URL_S3` would beat a configured endpoint.
    if let Some(e) = s3_endpoint(opts, env) {
        check_endpoint(&e, opts.allow_http, refuse)?;
        tracing::info!(endpoint = %e.url, from = e.source, "S3 endpoint");
        b = b
            .with_endpoint(&e.url)
            .with_config(object_store::aws::AmazonS3ConfigKey::S3Endpoint, &e.url)
            .with_allow_http(opts.allow_http);
    }
    let keys = match &opts.s3_keys {
        Some((id, secret)) => (Some(id.clone()), Some(secret.clone())),
        None => (env(AWS_KEY_VARS[0]), env(AWS_KEY_VARS[1])),
    };
    match (opts.credentials, keys) {
        (Credentials::Instance, _) => {}
        (Credentials::Anonymous, _) | (Credentials::Auto, (None, None)) => {
            b = b.with_skip_signature(true);
        }
        (Credentials::Auto | Credentials::Env, (Some(id), Some(secret))) => {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
            if let Some(t) = env("AWS_SESSION_TOKEN") {
                b = b.with_token(t);
            }
        }
        (_, (id, _)) => {
            let missing = if id.is_none() {
                AWS_KEY_VARS[0]
            } else {
                AWS_KEY_VARS[1]
            };
            return Err(refuse(format!(
                "{missing} is not set: S3 credentials need both {} and {} (or lake.credentials = \
                 \"anonymous\" for a public bucket)",
                AWS_KEY_VARS[0], AWS_KEY_VARS[1]
            )));
        }
    }
    Ok(b)
}

fn gcs_builder(
    bucket: &str,
    opts: &Options,
    refuse: &dyn Fn(String) -> ObjStoreError,
) -> ObjStoreResult<GoogleCloudStorageBuilder> {
    let mut b = if opts.credentials == Credentials::Instance {
        GoogleCloudStorageBuilder::from_env()
    } else {
        GoogleCloudStorageBuilder::new()
    }
    .with_bucket_name(bucket);
    if let Some(e) = &opts.endpoint {
        b = b.with_base_url(e);
    }
    let key = match &opts.gcs_service_account {
        Some(path) => Some(("lake.service_account_file", path.clone())),
        None => GCS_KEY_VARS.iter().find_map(|v| env(v).map(|k| (*v, k))),
    };
    match (opts.credentials, key) {
        (Credentials::Instance, _) => {}
        (Credentials::Anonymous, _) | (Credentials::Auto, None) => {
            b = b.with_skip_signature(true);
        }
        (_, Some(("GOOGLE_SERVICE_ACCOUNT", k))) if k.trim_start().starts_with('{') => {
            b = b.with_service_account_key(k);
        }
        (_, Some((_, path))) => {
            b = b.with_service_account_path(path);
        }
        (Credentials::Env, None) => {
            return Err(refuse(format!(
                "no GCS credentials: set one of {} to a service account key file (or \
                 lake.credentials = \"anonymous\" for a public bucket)",
                GCS_KEY_VARS.join(", ")
            )));
        }
    }
    Ok(b)
}

fn client_options(opts: &Options) -> ClientOptions {
    ClientOptions::new()
        .with_timeout(opts.request_timeout)
        .with_connect_timeout(opts.connect_timeout)
        .with_allow_http(opts.allow_http)
}

fn retry(opts: &Options) -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: opts.backoff_initial,
            max_backoff: opts.backoff_max,
            base: 2.0,
        },
        max_retries: opts.max_retries,
        retry_timeout: opts.retry_timeout,
    }
}

/// reqwest is built with rustls and no bundled crypto (`ring` is already
/// in the tree for tonic's TLS; aws-lc-rs would add a C build), so the
/// process-wide provider is installed once, unless one already is.
/// [`open`] calls it; a program that builds object_store clients itself
/// calls it first.
pub fn install_tls_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_without_any_request_and_refuses_what_it_cannot_do() {
        let anon = Options {
            credentials: Credentials::Anonymous,
            ..Options::default()
        };
        for loc in [
            "s3://lake/pubnet",
            "gs://lake",
            "https://example.invalid/v1",
        ] {
            let o = open(loc, &anon).expect(loc);
            assert_eq!(o.location.to_string(), loc);
            assert_eq!(o.counters.get(), RequestCounts::default());
        }
        let e = open("http://127.0.0.1:1/lake", &anon).expect_err("plain http");
        assert!(e.to_string().contains("lake.allow_http"), "{e}");
        let with_endpoint = Options {
            endpoint: Some("http://127.0.0.1:7070".into()),
            ..anon.clone()
        };
        let e = open("s3://lake", &with_endpoint).expect_err("plain http endpoint");
        assert!(e.to_string().contains("lake.allow_http"), "{e}");
        let e = open("/nonexistent/lake/dir", &anon).expect_err("no dir");
        assert!(e.to_string().contains("not a directory"), "{e}");
    }

    #[test]
    fn the_s3_endpoint_is_the_configured_one_then_the_most_specific_variable() {
        let vars = |set: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                set.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_string())
            }
        };
        let none = Options::default();
        assert_eq!(s3_endpoint(&none, vars(&[])), None);
        let all: &[(&str, &str)] = &[
            ("AWS_ENDPOINT", "http://a:1"),
            ("AWS_ENDPOINT_URL", "http://b:2"),
            ("AWS_ENDPOINT_URL_S3", "http://c:3"),
        ];
        let e = s3_endpoint(&none, vars(all)).expect("set");
        assert_eq!(
            (e.url.as_str(), e.source),
            ("http://c:3", "AWS_ENDPOINT_URL_S3")
        );
        let e = s3_endpoint(&none, vars(&all[..2])).expect("set");
        assert_eq!(
            (e.url.as_str(), e.source),
            ("http://b:2", "AWS_ENDPOINT_URL")
        );
        let e = s3_endpoint(&none, vars(&all[..1])).expect("set");
        assert_eq!((e.url.as_str(), e.source), ("http://a:1", "AWS_ENDPOINT"));
        // An empty variable is unset, as the AWS tools read it.
        let e = s3_endpoint(
            &none,
            vars(&[("AWS_ENDPOINT_URL_S3", " "), ("AWS_ENDPOINT", "http://a:1")]),
        );
        assert_eq!(e.map(|e| e.source), Some("AWS_ENDPOINT"));
        // The configuration wins over every variable.
        let configured = Options {
            endpoint: Some("https://d:4".into()),
            ..Options::default()
        };
        let e = s3_endpoint(&configured, vars(all)).expect("set");
        assert_eq!((e.url.as_str(), e.source), ("https://d:4", "lake.endpoint"));
    }

    #[test]
    fn an_endpoint_variable_that_cannot_be_used_is_refused_by_name() {
        let refuse = |detail: String| ObjStoreError::Options {
            location: "s3://lake".into(),
            detail,
        };
        let e = |url: &str| S3Endpoint {
            url: url.into(),
            source: "AWS_ENDPOINT_URL",
        };
        let err = check_endpoint(&e("http://127.0.0.1:7070"), false, &refuse)
            .expect_err("plain http")
            .to_string();
        assert!(err.contains("AWS_ENDPOINT_URL"), "{err}");
        assert!(err.contains("lake.allow_http"), "{err}");
        check_endpoint(&e("http://127.0.0.1:7070"), true, &refuse).expect("allowed");
        check_endpoint(&e("https://s3.example.com"), false, &refuse).expect("https");
        let err = check_endpoint(&e("127.0.0.1:7070"), true, &refuse)
            .expect_err("no scheme")
            .to_string();
        assert!(
            err.contains("AWS_ENDPOINT_URL = \"127.0.0.1:7070\""),
            "{err}"
        );
    }

    #[test]
    fn env_credentials_that_are_missing_are_named() {
        if env(AWS_KEY_VARS[0]).is_some() || env(GCS_KEY_VARS[2]).is_some() {
            return; // a developer's own credentials; the CI machine has none
        }
        let opts = Options {
            credentials: Credentials::Env,
            ..Options::default()
        };
        let e = open("s3://lake", &opts).expect_err("no keys").to_string();
        assert!(e.contains("AWS_ACCESS_KEY_ID is not set"), "{e}");
        let e = open("gs://lake", &opts).expect_err("no keys").to_string();
        assert!(e.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{e}");
        let e = open("https://example.invalid", &opts)
            .expect_err("http env")
            .to_string();
        assert!(e.contains("read anonymously"), "{e}");
    }
}
