//! Where objects live: a URL (`s3://bucket/prefix`, `gs://bucket/prefix`,
//! `https://host/path`) or a local directory.

use std::fmt;
use std::path::PathBuf;

use crate::error::{ObjStoreError, ObjStoreResult};

/// A parsed location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A local directory (a plain path, or `file:///abs/path`).
    Local(PathBuf),
    /// An S3 (or S3-compatible) bucket and a key prefix.
    S3 {
        /// Bucket name.
        bucket: String,
        /// Key prefix without leading or trailing `/` (may be empty).
        prefix: String,
    },
    /// A Google Cloud Storage bucket and a key prefix.
    Gcs {
        /// Bucket name.
        bucket: String,
        /// Key prefix without leading or trailing `/` (may be empty).
        prefix: String,
    },
    /// A plain HTTP(S) tree of files (no listing).
    Http {
        /// The base URL, without a trailing `/`.
        url: String,
    },
}

impl Location {
    /// Parses a location. A string without a scheme is a local path.
    pub fn parse(s: &str) -> ObjStoreResult<Self> {
        let bad = |expected: &str| ObjStoreError::Location {
            location: s.to_string(),
            expected: expected.to_string(),
        };
        if s.trim().is_empty() {
            return Err(bad(
                "a location: s3://bucket/prefix, gs://bucket/prefix, https://host/path or a local \
                 directory",
            ));
        }
        let Some((scheme, rest)) = s.split_once("://") else {
            return Ok(Self::Local(PathBuf::from(s)));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "file" => {
                if !rest.starts_with('/') {
                    return Err(bad("file:///absolute/path (three slashes)"));
                }
                Ok(Self::Local(PathBuf::from(rest)))
            }
            "s3" | "s3a" | "gs" => {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if !valid_bucket(bucket) {
                    return Err(bad(
                        "a bucket name of 3 to 63 lowercase letters, digits, '.', '-' or '_' \
                         after the scheme",
                    ));
                }
                let bucket = bucket.to_string();
                let prefix = prefix.trim_matches('/').to_string();
                if prefix.split('/').any(|p| p == "." || p == "..") {
                    return Err(bad("a prefix without '.' or '..' parts"));
                }
                Ok(if scheme.eq_ignore_ascii_case("gs") {
                    Self::Gcs { bucket, prefix }
                } else {
                    Self::S3 { bucket, prefix }
                })
            }
            "http" | "https" => {
                let host = rest.split('/').next().unwrap_or("");
                if host.is_empty() {
                    return Err(bad("http(s)://host[:port]/path"));
                }
                Ok(Self::Http {
                    url: s.trim_end_matches('/').to_string(),
                })
            }
            _ => Err(bad(
                "one of the schemes s3://, gs://, http://, https://, file:// (or a plain path)",
            )),
        }
    }

    /// The bucket, for S3 and GCS.
    pub fn bucket(&self) -> Option<&str> {
        match self {
            Self::S3 { bucket, .. } | Self::Gcs { bucket, .. } => Some(bucket),
            _ => None,
        }
    }

    /// Whether a listing comes back in key order (S3 and GCS), so its first
    /// key is the smallest.
    pub fn lists_in_order(&self) -> bool {
        matches!(self, Self::S3 { .. } | Self::Gcs { .. })
    }

    /// Whether listing is possible at all (plain HTTP servers cannot list).
    pub fn can_list(&self) -> bool {
        !matches!(self, Self::Http { .. })
    }
}

fn valid_bucket(b: &str) -> bool {
    (3..=63).contains(&b.len())
        && b.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b".-_".contains(&c))
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(p) => write!(f, "{}", p.display()),
            Self::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            Self::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
            Self::Gcs { bucket, prefix } if prefix.is_empty() => write!(f, "gs://{bucket}"),
            Self::Gcs { bucket, prefix } => write!(f, "gs://{bucket}/{prefix}"),
            Self::Http { url } => f.write_str(url),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_scheme() {
        assert_eq!(
            Location::parse("s3://aws-public-blockchain/v1.1/stellar/ledgers/pubnet/").ok(),
            Some(Location::S3 {
                bucket: "aws-public-blockchain".into(),
                prefix: "v1.1/stellar/ledgers/pubnet".into()
            })
        );
        assert_eq!(
            Location::parse("gs://lake").ok(),
            Some(Location::Gcs {
                bucket: "lake".into(),
                prefix: String::new()
            })
        );
        assert_eq!(
            Location::parse("https://galexie.lightsail.network/v1/").ok(),
            Some(Location::Http {
                url: "https://galexie.lightsail.network/v1".into()
            })
        );
        assert_eq!(
            Location::parse("./lake").ok(),
            Some(Location::Local("./lake".into()))
        );
        assert_eq!(
            Location::parse("file:///srv/lake").ok(),
            Some(Location::Local("/srv/lake".into()))
        );
        assert_eq!(
            Location::parse("s3://b-1/p").map(|l| l.to_string()).ok(),
            Some("s3://b-1/p".into())
        );
    }

    #[test]
    fn refuses_bad_locations_naming_what_is_expected() {
        for (s, want) in [
            ("", "a location"),
            ("ftp://x/y", "one of the schemes"),
            ("s3://", "bucket name"),
            ("s3://Upper/x", "bucket name"),
            ("s3://ok-bucket/../x", "'..'"),
            ("https:///x", "host"),
            ("file://rel", "three slashes"),
        ] {
            let e = Location::parse(s).expect_err(s).to_string();
            assert!(e.contains(want), "{s}: {e}");
        }
    }
}
