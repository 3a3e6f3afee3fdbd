//! Bench sizes from environment variables. Each knob has a default that
//! fits this project's reference machine (2 cores, 24 GiB) and a clear error
//! when it is set to something unusable.

use std::str::FromStr;

use ledgerstore_db_api::Layout;

use crate::{BenchError, BenchResult};

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Reads `name` as a `T`, or `default` when unset or empty.
pub fn get<T: FromStr>(name: &'static str, default: T, expected: &'static str) -> BenchResult<T> {
    parse(name, var(name), default, expected)
}

fn parse<T: FromStr>(
    name: &'static str,
    raw: Option<String>,
    default: T,
    expected: &'static str,
) -> BenchResult<T> {
    match raw {
        Some(v) => v.trim().parse().map_err(|_| BenchError::Knob {
            name,
            value: v,
            expected,
        }),
        None => Ok(default),
    }
}

/// A count for a bench binary's `main`: [`count`] as a `u32`, or exit 2
/// with the knob's error.
pub fn count_u32_or_exit(name: &'static str, default: u32, min: u32) -> u32 {
    match count(name, u64::from(default), u64::from(min)) {
        Ok(v) => u32::try_from(v).unwrap_or(u32::MAX),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}

/// Reads a count that must be at least `min`.
pub fn count(name: &'static str, default: u64, min: u64) -> BenchResult<u64> {
    parse_count(name, var(name), default, min)
}

fn parse_count(
    name: &'static str,
    raw: Option<String>,
    default: u64,
    min: u64,
) -> BenchResult<u64> {
    let v = parse(name, raw, default, "a whole number")?;
    if v < min {
        return Err(BenchError::Knob {
            name,
            value: v.to_string(),
            expected: if min == 1 {
                "a whole number >= 1"
            } else {
                "a larger whole number"
            },
        });
    }
    Ok(v)
}

/// Reads a comma-separated list of layouts (`hybrid,rocksdb,rocksdb-tuned`).
pub fn layouts(name: &'static str, default: &[Layout]) -> BenchResult<Vec<Layout>> {
    parse_layouts(name, var(name), default)
}

fn parse_layouts(
    name: &'static str,
    raw: Option<String>,
    default: &[Layout],
) -> BenchResult<Vec<Layout>> {
    let Some(v) = raw else {
        return Ok(default.to_vec());
    };
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let layout: Layout = part.parse().map_err(|_| BenchError::Knob {
            name,
            value: v.clone(),
            expected: "a comma-separated list of hybrid, rocksdb, rocksdb-tuned, indexed",
        })?;
        if !out.contains(&layout) {
            out.push(layout);
        }
    }
    Ok(out)
}

/// True when `name` is set to 1/true/yes.
/// Per-layout counts, e.g. `rocksdb:100,hybrid:150` (unset: none).
pub fn layout_counts(name: &'static str) -> BenchResult<Vec<(Layout, u32)>> {
    parse_layout_counts(name, var(name))
}

fn parse_layout_counts(name: &'static str, raw: Option<String>) -> BenchResult<Vec<(Layout, u32)>> {
    let Some(v) = raw else {
        return Ok(Vec::new());
    };
    let bad = || BenchError::Knob {
        name,
        value: v.clone(),
        expected: "a comma-separated list of layout:count, e.g. rocksdb:100,hybrid:150",
    };
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (l, n) = part.split_once(':').ok_or_else(bad)?;
        let layout: Layout = l.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        if n == 0 {
            return Err(bad());
        }
        out.push((layout, n));
    }
    Ok(out)
}

pub fn flag(name: &'static str) -> bool {
    matches!(
        var(name).as_deref().map(str::trim),
        Some("1" | "true" | "yes")
    )
}

/// Reads an on/off switch: 1/true/yes or 0/false/no, `default` when unset.
pub fn switch(name: &'static str, default: bool) -> BenchResult<bool> {
    parse_switch(name, var(name), default)
}

fn parse_switch(name: &'static str, raw: Option<String>, default: bool) -> BenchResult<bool> {
    match raw.as_deref().map(str::trim) {
        None => Ok(default),
        Some("1" | "true" | "yes") => Ok(true),
        Some("0" | "false" | "no") => Ok(false),
        Some(v) => Err(BenchError::Knob {
            name,
            value: v.to_string(),
            expected: "1/true/yes or 0/false/no",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn bad_values_name_the_variable_and_the_expectation() {
        let e = parse_count("STUDY_BATCHES", s("ten"), 3, 1).expect_err("not a number");
        assert_eq!(
            e.to_string(),
            "STUDY_BATCHES=\"ten\": expected a whole number"
        );
        let e = parse_count("STUDY_BATCHES", s("0"), 3, 1).expect_err("zero");
        assert_eq!(
            e.to_string(),
            "STUDY_BATCHES=\"0\": expected a whole number >= 1"
        );
        assert_eq!(
            parse_count("STUDY_BATCHES", None, 3, 1).expect("default"),
            3
        );
        assert_eq!(
            parse_count("STUDY_BATCHES", s(" 7 "), 3, 1).expect("trimmed"),
            7
        );
    }

    #[test]
    fn layout_counts_parse_and_refuse_by_name() {
        let n = "STUDY_LAYOUT_BATCHES";
        assert!(parse_layout_counts(n, None).expect("unset").is_empty());
        assert_eq!(
            parse_layout_counts(n, s("rocksdb:100, hybrid:150")).expect("two"),
            vec![(Layout::Rocksdb, 100), (Layout::Hybrid, 150)]
        );
        for bad in ["rocksdb", "rocksdb:0", "nope:3", "hybrid:x"] {
            let e = parse_layout_counts(n, s(bad)).expect_err(bad);
            assert!(e.to_string().contains("STUDY_LAYOUT_BATCHES"), "{e}");
        }
    }

    #[test]
    fn switches_default_when_unset_and_refuse_other_words() {
        assert!(parse_switch("STUDY_DROP_CACHES", None, true).expect("default"));
        assert!(!parse_switch("STUDY_DROP_CACHES", s(" 0 "), true).expect("off"));
        assert!(parse_switch("STUDY_DROP_CACHES", s("yes"), false).expect("on"));
        let e = parse_switch("STUDY_DROP_CACHES", s("maybe"), true).expect_err("unknown");
        assert!(
            e.to_string().starts_with("STUDY_DROP_CACHES=\"maybe\""),
            "{e}"
        );
    }

    #[test]
    fn layouts_parse_dedup_and_refuse_unknown_names() {
        assert_eq!(
            parse_layouts("STUDY_LAYOUTS", s("rocksdb, hybrid,rocksdb"), &[]).expect("valid"),
            vec![Layout::Rocksdb, Layout::Hybrid]
        );
        let e = parse_layouts("STUDY_LAYOUTS", s("hybrid,lmdb"), &[]).expect_err("unknown");
        assert!(
            e.to_string().starts_with("STUDY_LAYOUTS=\"hybrid,lmdb\""),
            "{e}"
        );
        assert!(e.to_string().contains("rocksdb-tuned"), "{e}");
        assert_eq!(
            parse_layouts("STUDY_LAYOUTS", None, &[Layout::Hybrid]).expect("default"),
            vec![Layout::Hybrid]
        );
    }
}
