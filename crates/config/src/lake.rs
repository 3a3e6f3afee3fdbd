//! `[lake]`: how object storage is reached (data lakes today), and
//! `[follow]`: a data lake the daemon follows.

use serde::{Deserialize, Serialize};

use crate::{ConfigError, invalid};

/// `[lake]`. Shared by `ingest`, `push` and the daemon's follower; the
/// flags are `--lake.<key>`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LakeConfig {
    /// An S3-compatible server's URL (e.g. `http://127.0.0.1:7070`), or a
    /// GCS server's base URL. Empty: for S3, `AWS_ENDPOINT_URL_S3`,
    /// `AWS_ENDPOINT_URL` or `AWS_ENDPOINT` when set, else the cloud's own
    /// endpoint.
    pub endpoint: String,
    /// S3 region. Empty: `AWS_REGION`, `AWS_DEFAULT_REGION`, else
    /// `us-east-1`. The public pubnet lake is in `us-east-2`.
    pub region: String,
    /// Where credentials come from: `auto` (the standard environment
    /// variables when set, else anonymous), `anonymous` (never sign: public
    /// buckets), `env` (the environment variables, required), `instance`
    /// (the cloud SDK's default chain, which may ask an instance-metadata
    /// endpoint; only this mode ever does).
    pub credentials: String,
    /// S3 access key id (with `secret_access_key_file`); empty: the
    /// `AWS_ACCESS_KEY_ID` environment variable.
    pub access_key_id: String,
    /// A file holding the S3 secret access key (kept out of the config);
    /// empty: the `AWS_SECRET_ACCESS_KEY` environment variable.
    pub secret_access_key_file: String,
    /// A GCS service-account key file (JSON); empty: the
    /// `GOOGLE_SERVICE_ACCOUNT` / `GOOGLE_APPLICATION_CREDENTIALS`
    /// environment variables.
    pub service_account_file: String,
    /// Allow plain `http://` lakes and endpoints.
    pub allow_http: bool,
    /// Longest one request may take, ms.
    pub request_timeout_ms: u64,
    /// Longest a connection may take to open, ms.
    pub connect_timeout_ms: u64,
    /// Retries of one request (5xx, 429, timeouts, refused or reset
    /// connections), with exponential backoff and jitter.
    pub max_retries: u32,
    /// No retry starts later than this after a request's first attempt, ms.
    pub retry_timeout_ms: u64,
    /// First backoff between retries, ms (then ×2 with jitter).
    pub backoff_initial_ms: u64,
    /// Longest backoff between retries, ms.
    pub backoff_max_ms: u64,
    /// Files fetched and decoded ahead of the writer, in parallel.
    pub read_ahead: u16,
    /// Decoded ledgers that may wait for the writer (`ledgerstore ingest`
    /// and the daemon's follower), in MiB of their raw bytes: the source
    /// keeps decoding while a batch commits.
    pub decoded_ahead_mib: u32,
}

impl Default for LakeConfig {
    fn default() -> Self {
        Self {
            endpoint: String::new(),
            region: String::new(),
            credentials: "auto".into(),
            access_key_id: String::new(),
            secret_access_key_file: String::new(),
            service_account_file: String::new(),
            allow_http: false,
            request_timeout_ms: 30_000,
            connect_timeout_ms: 5_000,
            max_retries: 10,
            retry_timeout_ms: 120_000,
            backoff_initial_ms: 100,
            backoff_max_ms: 15_000,
            read_ahead: 8,
            decoded_ahead_mib: 128,
        }
    }
}

/// `[follow]`: the daemon reads a data lake from its mark on and keeps
/// polling it for new files.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FollowConfig {
    /// The lake: `s3://bucket/prefix`, `gs://bucket/prefix`,
    /// `https://host/path` or a local directory. Empty: not following.
    pub lake: String,
    /// First ledger when the data dir is empty (0: the lake's oldest).
    pub from: u32,
    /// Pause between polls once caught up, ms. A new file is committed at
    /// most this long (plus one fetch) after it appears.
    pub poll_ms: u64,
    /// The Ingest service reports NOT_SERVING once the lake has failed for
    /// this long without a success, ms. Queries keep serving.
    pub unreachable_after_ms: u64,
}

impl Default for FollowConfig {
    fn default() -> Self {
        Self {
            lake: String::new(),
            from: 0,
            poll_ms: 1_000,
            unreachable_after_ms: 30_000,
        }
    }
}

pub(crate) fn validate(lake: &LakeConfig, follow: &FollowConfig) -> Result<(), ConfigError> {
    if !matches!(
        lake.credentials.as_str(),
        "auto" | "anonymous" | "env" | "instance"
    ) {
        return Err(invalid(
            "lake.credentials",
            &lake.credentials,
            "auto, anonymous, env or instance",
        ));
    }
    if lake.access_key_id.is_empty() != lake.secret_access_key_file.is_empty() {
        return Err(invalid(
            "lake.access_key_id",
            if lake.access_key_id.is_empty() {
                "unset, with secret_access_key_file set"
            } else {
                "set, without secret_access_key_file"
            },
            "both lake.access_key_id and lake.secret_access_key_file, or neither",
        ));
    }
    let e = &lake.endpoint;
    if !(e.is_empty() || e.starts_with("http://") || e.starts_with("https://")) {
        return Err(invalid(
            "lake.endpoint",
            &lake.endpoint,
            "an http:// or https:// URL, e.g. http://127.0.0.1:7070",
        ));
    }
    for (key, v, min, max) in [
        (
            "lake.request_timeout_ms",
            lake.request_timeout_ms,
            100,
            3_600_000,
        ),
        (
            "lake.connect_timeout_ms",
            lake.connect_timeout_ms,
            100,
            600_000,
        ),
        ("lake.retry_timeout_ms", lake.retry_timeout_ms, 0, 3_600_000),
        (
            "lake.backoff_initial_ms",
            lake.backoff_initial_ms,
            1,
            600_000,
        ),
        ("lake.backoff_max_ms", lake.backoff_max_ms, 1, 600_000),
        ("follow.poll_ms", follow.poll_ms, 10, 3_600_000),
        (
            "follow.unreachable_after_ms",
            follow.unreachable_after_ms,
            1,
            86_400_000,
        ),
    ] {
        if !(min..=max).contains(&v) {
            return Err(invalid(key, v, format!("{min} to {max}")));
        }
    }
    if lake.backoff_max_ms < lake.backoff_initial_ms {
        return Err(invalid(
            "lake.backoff_max_ms",
            lake.backoff_max_ms,
            format!(
                "at least lake.backoff_initial_ms ({})",
                lake.backoff_initial_ms
            ),
        ));
    }
    if lake.max_retries > 100 {
        return Err(invalid("lake.max_retries", lake.max_retries, "0 to 100"));
    }
    if !(1..=256).contains(&lake.read_ahead) {
        return Err(invalid("lake.read_ahead", lake.read_ahead, "1 to 256"));
    }
    if !(1..=65_536).contains(&lake.decoded_ahead_mib) {
        return Err(invalid(
            "lake.decoded_ahead_mib",
            lake.decoded_ahead_mib,
            "1 to 65536",
        ));
    }
    Ok(())
}
