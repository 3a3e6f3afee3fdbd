//! Opening a data lake named by a URL or a path, with the `[lake]`
//! settings: the binary picks the object-store backend here.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ledgerstore_config::LakeConfig;
use ledgerstore_objstore::{Credentials, Location, Options, RequestCounters};
use ledgerstore_stellar::{DataLake, Listing};

/// An opened lake and its request counters.
pub struct Lake {
    /// The lake.
    pub lake: Arc<DataLake>,
    /// HTTP attempts made to reach it.
    pub counters: Arc<RequestCounters>,
}

/// The object-store options of `[lake]`.
pub fn options(c: &LakeConfig) -> Result<Options> {
    let Some(credentials) = Credentials::parse(&c.credentials) else {
        bail!(
            "lake.credentials = {:?}: expected auto, anonymous, env or instance",
            c.credentials
        );
    };
    let ms = Duration::from_millis;
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let s3_keys = if c.access_key_id.is_empty() {
        None
    } else {
        let secret = std::fs::read_to_string(&c.secret_access_key_file).with_context(|| {
            format!(
                "lake.secret_access_key_file = {:?}",
                c.secret_access_key_file
            )
        })?;
        Some((c.access_key_id.clone(), secret.trim().to_string()))
    };
    Ok(Options {
        endpoint: some(&c.endpoint),
        region: some(&c.region),
        credentials,
        s3_keys,
        gcs_service_account: some(&c.service_account_file),
        allow_http: c.allow_http,
        request_timeout: ms(c.request_timeout_ms),
        connect_timeout: ms(c.connect_timeout_ms),
        max_retries: c.max_retries as usize,
        retry_timeout: ms(c.retry_timeout_ms),
        backoff_initial: ms(c.backoff_initial_ms),
        backoff_max: ms(c.backoff_max_ms),
    })
}

/// Opens the lake at `location`.
pub fn open(location: &str, c: &LakeConfig) -> Result<Lake> {
    let opened = ledgerstore_objstore::open(location, &options(c)?)?;
    let listing = match &opened.location {
        Location::Local(_) => Listing::Unordered,
        l if l.lists_in_order() => Listing::Ordered,
        _ => Listing::Unavailable,
    };
    Ok(Lake {
        lake: Arc::new(DataLake::new(
            opened.location.to_string(),
            opened.store,
            listing,
        )),
        counters: opened.counters,
    })
}
