//! The walker's skipper (`src/walk/skip.rs`) is generated from the XDR
//! schema that the `stellar-xdr` crate ships (`xdr-definitions-json/xdr.json`
//! of the version in Cargo.lock). This test regenerates it and fails if the
//! checked-in file differs, so the skipper cannot drift from the decoder it
//! must agree with. To refresh it after a `stellar-xdr` upgrade:
//!
//! ```text
//! LEDGERSTORE_REGENERATE=1 cargo test -p ledgerstore-stellar --test walk_schema
//! ```
//!
//! The generator mirrors `stellar-xdr`'s reader rule by rule (see the
//! walker's module docs): every `read_xdr` call consumes one level of the
//! depth limit, so the skipper spends depth exactly where the decoder does.
//! Two facts of the Rust representation are not in the schema and are
//! checked here against the crate's generated sources: which typedefs are
//! plain aliases (no depth level of their own), and which fields are boxed
//! (a `Box<T>` is one more level).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The types whose byte ranges the walker records (post-order events).
/// Each must be reachable only from the places listed: the walker relies on
/// it to tell which envelope, result or header an event belongs to.
const RECORDED: [(&str, &[&str]); 7] = [
    (
        "TransactionEnvelope",
        &[
            "DependentTxCluster",
            "TransactionSet",
            "TxSetComponentTxsMaybeDiscountedFee",
        ],
    ),
    ("TransactionV0", &["TransactionV0Envelope"]),
    ("Transaction", &["TransactionV1Envelope"]),
    ("FeeBumpTransaction", &["FeeBumpTransactionEnvelope"]),
    (
        "TransactionResultPair",
        &["TransactionResultMeta", "TransactionResultMetaV1"],
    ),
    (
        "TransactionMeta",
        &["TransactionResultMeta", "TransactionResultMetaV1"],
    ),
    ("LedgerHeader", &["LedgerHeaderHistoryEntry"]),
];

/// Typedefs `stellar-xdr` renders as `pub type X = prim;` (no level).
const ALIASES: [&str; 4] = ["int32", "int64", "uint32", "uint64"];

/// Fields `stellar-xdr` boxes: (type, field or arm name).
const BOXED: [(&str, &str); 1] = [("ClaimPredicate", "notPredicate")];

/// The roots: everything reachable from them gets a skip function.
const ROOTS: [&str; 2] = ["LedgerCloseMeta", "LedgerCloseMetaBatch"];

fn stellar_xdr_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = std::fs::read_to_string(manifest.join("../../Cargo.lock")).expect("Cargo.lock");
    let mut lines = lock.lines();
    let mut version = None;
    while let Some(l) = lines.next() {
        if l == "name = \"stellar-xdr\"" {
            version = lines
                .next()
                .and_then(|v| v.strip_prefix("version = \""))
                .map(|v| v.trim_end_matches('"').to_string());
            break;
        }
    }
    let version = version.expect("stellar-xdr in Cargo.lock");
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let src = home.join("registry/src");
    for index in std::fs::read_dir(&src).expect("registry/src") {
        let dir = index
            .expect("entry")
            .path()
            .join(format!("stellar-xdr-{version}"));
        if dir.join("xdr-definitions-json/xdr.json").exists() {
            return dir;
        }
    }
    panic!(
        "stellar-xdr-{version} sources not found under {}",
        src.display()
    );
}

struct Schema {
    defs: BTreeMap<String, Value>,
}

impl Schema {
    fn def(&self, name: &str) -> &Value {
        self.defs
            .get(name)
            .unwrap_or_else(|| panic!("no definition {name}"))
    }

    /// Names a type refers to directly.
    fn refs(&self, t: &Value, out: &mut BTreeSet<String>) {
        if t["kind"] == "ref" {
            out.insert(t["name"].as_str().expect("name").to_string());
        }
        if let Some(e) = t.get("element") {
            self.refs(e, out);
        }
    }

    fn children(&self, name: &str) -> BTreeSet<String> {
        let d = self.def(name);
        let mut out = BTreeSet::new();
        match d["kind"].as_str().expect("kind") {
            "struct" => {
                for f in d["fields"].as_array().expect("fields") {
                    self.refs(&f["type"], &mut out);
                }
            }
            "typedef" => self.refs(&d["type"], &mut out),
            "union" => {
                self.refs(&d["discriminant"]["type"], &mut out);
                for a in d["arms"].as_array().expect("arms") {
                    if let Some(t) = a.get("type") {
                        self.refs(t, &mut out);
                    }
                }
            }
            _ => {}
        }
        out
    }
}

fn fn_name(xdr: &str) -> String {
    // CamelCase (with acronyms) to snake_case, e.g. SCPBallot -> scp_ballot.
    let chars: Vec<char> = xdr.chars().collect();
    let mut out = String::new();
    for (i, &ch) in chars.iter().enumerate() {
        if ch.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    format!("s_{out}")
}

struct Gen<'a> {
    schema: &'a Schema,
}

impl Gen<'_> {
    /// An expression skipping one value of type `t` at depth `d`.
    fn expr(&self, t: &Value, d: &str, boxed: bool) -> String {
        if !boxed {
            return self.expr_unboxed(t, d);
        }
        // `Option<Box<T>>`: the option's level and flag, then the box's
        // level, then the value; a plain `Box<T>`: its level, then the value.
        let boxed_value =
            |t: &Value| format!("c.level(d).and_then(|d| {})", self.expr_unboxed(t, "d"));
        if t["kind"] == "optional" {
            format!(
                "c.optional({d}, |c: &mut Cur<'_>, d: u32| {})",
                boxed_value(&t["element"])
            )
        } else {
            format!("c.level({d}).and_then(|d| {})", self.expr_unboxed(t, "d"))
        }
    }

    fn closure(&self, t: &Value) -> String {
        format!("|c: &mut Cur<'_>, d: u32| {}", self.expr(t, "d", false))
    }

    fn expr_unboxed(&self, t: &Value, d: &str) -> String {
        match t["kind"].as_str().expect("kind") {
            "ref" => {
                let name = t["name"].as_str().expect("name");
                if ALIASES.contains(&name) {
                    let def = self.schema.def(name);
                    return self.expr_unboxed(&def["type"], d);
                }
                format!("{}(c, {d})", fn_name(name))
            }
            "int" | "unsigned_int" => format!("c.word({d}).map(drop)"),
            "hyper" | "unsigned_hyper" => format!("c.dword({d})"),
            "bool" => format!("c.boolean({d})"),
            "opaque_fixed" => format!("c.fixed({d}, {})", t["size"].as_u64().expect("size")),
            "opaque_var" | "string" => format!("c.opaque({d}, {})", max(t, "max_size")),
            "optional" => format!("c.optional({d}, {})", self.closure(&t["element"])),
            "var_array" => format!(
                "c.array({d}, {}, {})",
                max(t, "max_count"),
                self.closure(&t["element"])
            ),
            "array" => format!(
                "c.fixed_array({d}, {}, {})",
                t["count"].as_u64().expect("count"),
                self.closure(&t["element"])
            ),
            other => panic!("unsupported type kind {other}"),
        }
    }

    fn emit(&self, name: &str, out: &mut String) {
        let d = self.schema.def(name);
        let kind = d["kind"].as_str().expect("kind");
        let recorded = RECORDED.iter().any(|(r, _)| *r == name);
        let _ = writeln!(out, "\n/// `{name}` ({kind}).");
        let _ = writeln!(
            out,
            "pub(super) fn {}(c: &mut Cur<'_>, d: u32) -> Res {{",
            fn_name(name)
        );
        if recorded {
            let _ = writeln!(out, "    let start = c.pos();");
        }
        match kind {
            "struct" => {
                let _ = writeln!(out, "    let d = c.level(d)?;");
                let fields = d["fields"].as_array().expect("fields");
                let mut marks = vec!["start".to_string()];
                for (i, f) in fields.iter().enumerate() {
                    let fname = f["name"].as_str().expect("field");
                    let boxed = BOXED.contains(&(name, fname));
                    if recorded && i > 0 {
                        let _ = writeln!(out, "    let f{i} = c.pos();");
                        marks.push(format!("f{i}"));
                    }
                    let _ = writeln!(out, "    {}?;", self.expr(&f["type"], "d", boxed));
                }
                if recorded {
                    marks.push("c.pos()".into());
                    let _ = writeln!(
                        out,
                        "    let end = [{}];\n    c.record(Kind::{name}, &end);",
                        marks.join(", ")
                    );
                }
                let _ = writeln!(out, "    Ok(())");
            }
            "typedef" => {
                let _ = writeln!(out, "    let d = c.level(d)?;");
                let _ = writeln!(out, "    {}", self.expr(&d["type"], "d", false));
                assert!(!recorded, "{name}: a recorded typedef");
            }
            "enum" => {
                let values: Vec<String> = d["members"]
                    .as_array()
                    .expect("members")
                    .iter()
                    .map(|m| m["value"].as_i64().expect("value").to_string())
                    .collect();
                let _ = writeln!(out, "    let d = c.level(d)?;");
                let _ = writeln!(out, "    let at = c.pos();");
                let _ = writeln!(out, "    match c.int(d)? {{");
                let _ = writeln!(out, "        {} => Ok(()),", values.join(" | "));
                let _ = writeln!(out, "        _ => Err(c.fail(at, Why::Enum(\"{name}\"))),");
                let _ = writeln!(out, "    }}");
                assert!(!recorded, "{name}: a recorded enum");
            }
            "union" => {
                let dt = &d["discriminant"]["type"];
                let disc = match dt["kind"].as_str().expect("kind") {
                    "int" | "unsigned_int" => "c.int(d)?".to_string(),
                    "ref" => {
                        let dn = dt["name"].as_str().expect("name");
                        match self.schema.def(dn)["kind"].as_str().expect("kind") {
                            "enum" => "c.level(d).and_then(|d| c.int(d))?".to_string(),
                            "typedef" if ALIASES.contains(&dn) => "c.int(d)?".to_string(),
                            other => panic!("{name}: discriminant of kind {other}"),
                        }
                    }
                    other => panic!("{name}: discriminant of kind {other}"),
                };
                let _ = writeln!(out, "    let d = c.level(d)?;");
                let _ = writeln!(out, "    let at = c.pos();");
                let _ = writeln!(out, "    match {disc} {{");
                for a in d["arms"].as_array().expect("arms") {
                    let cases: Vec<String> = a["cases"]
                        .as_array()
                        .expect("cases")
                        .iter()
                        .map(|c| c["value"].as_i64().expect("case") as i32)
                        .map(|v| v.to_string())
                        .collect();
                    let arm = a["name"].as_str().unwrap_or("");
                    let body = match a.get("type") {
                        Some(t) => self.expr(t, "d", BOXED.contains(&(name, arm))),
                        None => "{}".into(),
                    };
                    let body = if body == "{}" {
                        body
                    } else {
                        format!("{body}?")
                    };
                    let _ = writeln!(out, "        {} => {body},", cases.join(" | "));
                }
                let _ = writeln!(
                    out,
                    "        _ => return Err(c.fail(at, Why::Arm(\"{name}\"))),"
                );
                let _ = writeln!(out, "    }}");
                if recorded {
                    let _ = writeln!(
                        out,
                        "    let end = [start, c.pos()];\n    c.record(Kind::{name}, &end);"
                    );
                }
                let _ = writeln!(out, "    Ok(())");
            }
            other => panic!("{name}: unsupported definition kind {other}"),
        }
        let _ = writeln!(out, "}}");
    }
}

fn max(t: &Value, key: &str) -> String {
    match t.get(key).and_then(Value::as_u64) {
        Some(m) => m.to_string(),
        None => "u32::MAX".into(),
    }
}

/// The generated skipper, from the schema in `dir`.
fn generate(dir: &Path) -> String {
    let json: Value = serde_json::from_slice(
        &std::fs::read(dir.join("xdr-definitions-json/xdr.json")).expect("xdr.json"),
    )
    .expect("json");
    assert_eq!(json["resolved_features"], Value::Array(vec![]), "features");
    let defs = json["definitions"]
        .as_array()
        .expect("definitions")
        .iter()
        .map(|d| (d["name"].as_str().expect("name").to_string(), d.clone()))
        .collect();
    let schema = Schema { defs };
    // Everything reachable from the roots, and who refers to whom.
    let mut seen = BTreeSet::new();
    let mut sites: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack: Vec<String> = ROOTS.iter().map(|r| r.to_string()).collect();
    while let Some(n) = stack.pop() {
        if !seen.insert(n.clone()) {
            continue;
        }
        for c in schema.children(&n) {
            sites.entry(c.clone()).or_default().insert(n.clone());
            stack.push(c);
        }
    }
    for (ty, want) in RECORDED {
        let got: Vec<&str> = sites
            .get(ty)
            .map(|s| s.iter().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(
            got, want,
            "{ty}: referenced from other places than the walker expects"
        );
    }
    let version = dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("dir name")
        .to_string();
    let mut out = format!(
        "// @generated by crates/stellar/tests/walk_schema.rs from {version}'s\n\
         // xdr-definitions-json/xdr.json: a skip function for every XDR type reachable\n\
         // from {}. Do not edit; regenerate with\n\
         // LEDGERSTORE_REGENERATE=1 cargo test -p ledgerstore-stellar --test walk_schema\n\
         \n\
         //! Generated skip functions (see the walker's module docs for the rules).\n\
         \n\
         #![allow(dead_code, clippy::all, clippy::pedantic)]\n\
         \n\
         use super::cursor::{{Cur, Kind, Res, Why}};\n",
        ROOTS.join(" and ")
    );
    let g = Gen { schema: &schema };
    for name in &seen {
        if ALIASES.contains(&name.as_str()) {
            continue;
        }
        g.emit(name, &mut out);
    }
    out
}

/// The Rust-representation facts the generator assumes, against the
/// crate's generated sources.
fn check_representation(dir: &Path) {
    let generated = dir.join("src/generated");
    let (mut aliases, mut boxed) = (BTreeSet::new(), BTreeSet::new());
    for f in std::fs::read_dir(&generated).expect("generated") {
        let path = f.expect("entry").path();
        if path.is_dir() {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source");
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("pub type ") {
                aliases.insert(rest.split(' ').next().expect("name").to_ascii_lowercase());
            }
            if l.trim_start().starts_with("pub enum") || l.trim_start().starts_with("pub struct") {
                continue;
            }
            if (l.contains("Box<") || l.contains("Box::<")) && l.contains("::read_xdr(r)") {
                boxed.insert(path.file_name().expect("f").to_string_lossy().to_string());
            }
        }
    }
    let want: BTreeSet<String> = ALIASES.iter().map(|a| a.to_string()).collect();
    assert_eq!(aliases, want, "typedefs rendered as aliases");
    // Boxed fields outside the reachable types (the contract spec types)
    // do not matter; ClaimPredicate's must be the only reachable one.
    assert!(boxed.contains("claim_predicate.rs"), "{boxed:?}");
    for b in &boxed {
        assert!(
            b == "claim_predicate.rs"
                || b.starts_with("sc_spec_")
                || b == "const.rs"
                || b == "type_enum.rs",
            "a boxed field in {b}: add it to BOXED"
        );
    }
}

#[test]
fn the_generated_skipper_matches_the_schema() {
    let dir = stellar_xdr_dir();
    check_representation(&dir);
    let want = generate(&dir);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/walk/skip.rs");
    if std::env::var_os("LEDGERSTORE_REGENERATE").is_some() {
        std::fs::write(&path, &want).expect("write skip.rs");
    }
    let got = std::fs::read_to_string(&path).expect("skip.rs");
    assert!(
        got == want,
        "src/walk/skip.rs is not what the schema of {} generates: regenerate it \
         (LEDGERSTORE_REGENERATE=1 cargo test -p ledgerstore-stellar --test walk_schema)",
        dir.display()
    );
}
