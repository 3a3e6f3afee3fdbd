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

/// The types whose byte ranges the walker records (post-order events),
/// and every path from `LedgerCloseMeta` to each (a path names each type on
/// the way, `>`-separated). The walker relies on them to tell which ledger,
/// envelope, result or header an event belongs to, so a new path to any of
/// them (a new type holding a `TransactionV1Envelope` in the meta, say)
/// fails generation until the walker is taught about it. Paths that pass
/// through a recorded type are listed too: a `Transaction` inside a
/// fee bump is a different event sequence from one in a V1 envelope.
const RECORDED: [&str; 8] = [
    "LedgerCloseMeta",
    "TransactionEnvelope",
    "TransactionV0",
    "Transaction",
    "FeeBumpTransaction",
    "TransactionResultPair",
    "TransactionMeta",
    "LedgerHeader",
];

/// The recorded types whose events keep the start of every field (the
/// others keep their start and end only).
const FIELD_MARKS: [&str; 1] = ["LedgerHeader"];

/// Typedefs `stellar-xdr` renders as `pub type X = prim;` (no level).
const ALIASES: [&str; 4] = ["int32", "int64", "uint32", "uint64"];

/// Fields `stellar-xdr` boxes among the types reachable from the roots:
/// (type, field or arm name in the schema, the field or variant as the
/// crate's Rust source names it). `check_boxed` holds this list to the
/// crate's sources, so a second boxed field anywhere reachable fails.
const BOXED: [(&str, &str, &str); 1] = [("ClaimPredicate", "notPredicate", "Not")];

fn is_boxed(ty: &str, field: &str) -> bool {
    BOXED.iter().any(|&(t, f, _)| t == ty && f == field)
}

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
        let recorded = RECORDED.contains(&name);
        let field_marks = FIELD_MARKS.contains(&name);
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
                    let boxed = is_boxed(name, fname);
                    if field_marks && i > 0 {
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
                        Some(t) => self.expr(t, "d", is_boxed(name, arm)),
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

/// `xdr.json` of the crate in `dir`.
fn load(dir: &Path) -> Value {
    serde_json::from_slice(
        &std::fs::read(dir.join("xdr-definitions-json/xdr.json")).expect("xdr.json"),
    )
    .expect("json")
}

fn schema_of(json: &Value) -> Schema {
    let defs = json["definitions"]
        .as_array()
        .expect("definitions")
        .iter()
        .map(|d| (d["name"].as_str().expect("name").to_string(), d.clone()))
        .collect();
    Schema { defs }
}

/// Everything reachable from the roots, and who refers to whom (each
/// type's parents).
fn reach(schema: &Schema) -> (BTreeSet<String>, BTreeMap<String, BTreeSet<String>>) {
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
    (seen, sites)
}

/// Each [`BOXED`] entry names a reachable type and one of its fields or
/// arms.
fn check_boxed_names(schema: &Schema, reachable: &BTreeSet<String>) -> Result<(), String> {
    for (ty, field, _) in BOXED {
        let d = schema.def(ty);
        let members = d["fields"].as_array().or_else(|| d["arms"].as_array());
        let found = members
            .into_iter()
            .flatten()
            .any(|m| m["name"].as_str() == Some(field));
        if !reachable.contains(ty) || !found {
            return Err(format!(
                "BOXED: {ty}.{field} is not a field of a reachable type"
            ));
        }
    }
    Ok(())
}

/// The generated skipper, from the schema in `dir`, and the types it
/// covers.
fn generate(dir: &Path) -> (String, BTreeSet<String>) {
    let json = load(dir);
    assert_eq!(json["resolved_features"], Value::Array(vec![]), "features");
    let schema = schema_of(&json);
    let (seen, sites) = reach(&schema);
    let checked = check_recorded_paths(&sites)
        .and_then(|()| check_batch(&schema))
        .and_then(|()| check_boxed_names(&schema, &seen));
    if let Err(e) = checked {
        panic!("{e}");
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
    (out, seen)
}

/// Every path from `LedgerCloseMeta` to each recorded type, as the
/// generator finds them in the schema (see [`RECORDED`]).
const RECORDED_PATHS: &[&str] = &[
    "LedgerCloseMeta",
    "LedgerCloseMeta > LedgerCloseMetaV0 > LedgerHeaderHistoryEntry > LedgerHeader",
    "LedgerCloseMeta > LedgerCloseMetaV0 > TransactionResultMeta > TransactionMeta",
    "LedgerCloseMeta > LedgerCloseMetaV0 > TransactionResultMeta > TransactionResultPair",
    "LedgerCloseMeta > LedgerCloseMetaV0 > TransactionSet > TransactionEnvelope",
    "LedgerCloseMeta > LedgerCloseMetaV0 > TransactionSet > TransactionEnvelope > FeeBumpTransactionEnvelope > FeeBumpTransaction",
    "LedgerCloseMeta > LedgerCloseMetaV0 > TransactionSet > TransactionEnvelope > FeeBumpTransactionEnvelope > FeeBumpTransaction > FeeBumpTransactionInnerTx > TransactionV1Envelope > Transaction",
    "LedgerCloseMeta > LedgerCloseMetaV0 > TransactionSet > TransactionEnvelope > TransactionV0Envelope > TransactionV0",
    "LedgerCloseMeta > LedgerCloseMetaV0 > TransactionSet > TransactionEnvelope > TransactionV1Envelope > Transaction",
    "LedgerCloseMeta > LedgerCloseMetaV1 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > ParallelTxsComponent > ParallelTxExecutionStage > DependentTxCluster > TransactionEnvelope",
    "LedgerCloseMeta > LedgerCloseMetaV1 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > ParallelTxsComponent > ParallelTxExecutionStage > DependentTxCluster > TransactionEnvelope > FeeBumpTransactionEnvelope > FeeBumpTransaction",
    "LedgerCloseMeta > LedgerCloseMetaV1 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > ParallelTxsComponent > ParallelTxExecutionStage > DependentTxCluster > TransactionEnvelope > FeeBumpTransactionEnvelope > FeeBumpTransaction > FeeBumpTransactionInnerTx > TransactionV1Envelope > Transaction",
    "LedgerCloseMeta > LedgerCloseMetaV1 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > ParallelTxsComponent > ParallelTxExecutionStage > DependentTxCluster > TransactionEnvelope > TransactionV0Envelope > TransactionV0",
    "LedgerCloseMeta > LedgerCloseMetaV1 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > ParallelTxsComponent > ParallelTxExecutionStage > DependentTxCluster > TransactionEnvelope > TransactionV1Envelope > Transaction",
    "LedgerCloseMeta > LedgerCloseMetaV1 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > TxSetComponent > TxSetComponentTxsMaybeDiscountedFee > TransactionEnvelope",
    "LedgerCloseMeta > LedgerCloseMetaV1 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > TxSetComponent > TxSetComponentTxsMaybeDiscountedFee > TransactionEnvelope > FeeBumpTransactionEnvelope > FeeBumpTransaction",
    "LedgerCloseMeta > LedgerCloseMetaV1 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > TxSetComponent > TxSetComponentTxsMaybeDiscountedFee > TransactionEnvelope > FeeBumpTransactionEnvelope > FeeBumpTransaction > FeeBumpTransactionInnerTx > TransactionV1Envelope > Transaction",
    "LedgerCloseMeta > LedgerCloseMetaV1 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > TxSetComponent > TxSetComponentTxsMaybeDiscountedFee > TransactionEnvelope > TransactionV0Envelope > TransactionV0",
    "LedgerCloseMeta > LedgerCloseMetaV1 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > TxSetComponent > TxSetComponentTxsMaybeDiscountedFee > TransactionEnvelope > TransactionV1Envelope > Transaction",
    "LedgerCloseMeta > LedgerCloseMetaV1 > LedgerHeaderHistoryEntry > LedgerHeader",
    "LedgerCloseMeta > LedgerCloseMetaV1 > TransactionResultMeta > TransactionMeta",
    "LedgerCloseMeta > LedgerCloseMetaV1 > TransactionResultMeta > TransactionResultPair",
    "LedgerCloseMeta > LedgerCloseMetaV2 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > ParallelTxsComponent > ParallelTxExecutionStage > DependentTxCluster > TransactionEnvelope",
    "LedgerCloseMeta > LedgerCloseMetaV2 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > ParallelTxsComponent > ParallelTxExecutionStage > DependentTxCluster > TransactionEnvelope > FeeBumpTransactionEnvelope > FeeBumpTransaction",
    "LedgerCloseMeta > LedgerCloseMetaV2 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > ParallelTxsComponent > ParallelTxExecutionStage > DependentTxCluster > TransactionEnvelope > FeeBumpTransactionEnvelope > FeeBumpTransaction > FeeBumpTransactionInnerTx > TransactionV1Envelope > Transaction",
    "LedgerCloseMeta > LedgerCloseMetaV2 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > ParallelTxsComponent > ParallelTxExecutionStage > DependentTxCluster > TransactionEnvelope > TransactionV0Envelope > TransactionV0",
    "LedgerCloseMeta > LedgerCloseMetaV2 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > ParallelTxsComponent > ParallelTxExecutionStage > DependentTxCluster > TransactionEnvelope > TransactionV1Envelope > Transaction",
    "LedgerCloseMeta > LedgerCloseMetaV2 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > TxSetComponent > TxSetComponentTxsMaybeDiscountedFee > TransactionEnvelope",
    "LedgerCloseMeta > LedgerCloseMetaV2 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > TxSetComponent > TxSetComponentTxsMaybeDiscountedFee > TransactionEnvelope > FeeBumpTransactionEnvelope > FeeBumpTransaction",
    "LedgerCloseMeta > LedgerCloseMetaV2 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > TxSetComponent > TxSetComponentTxsMaybeDiscountedFee > TransactionEnvelope > FeeBumpTransactionEnvelope > FeeBumpTransaction > FeeBumpTransactionInnerTx > TransactionV1Envelope > Transaction",
    "LedgerCloseMeta > LedgerCloseMetaV2 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > TxSetComponent > TxSetComponentTxsMaybeDiscountedFee > TransactionEnvelope > TransactionV0Envelope > TransactionV0",
    "LedgerCloseMeta > LedgerCloseMetaV2 > GeneralizedTransactionSet > TransactionSetV1 > TransactionPhase > TxSetComponent > TxSetComponentTxsMaybeDiscountedFee > TransactionEnvelope > TransactionV1Envelope > Transaction",
    "LedgerCloseMeta > LedgerCloseMetaV2 > LedgerHeaderHistoryEntry > LedgerHeader",
    "LedgerCloseMeta > LedgerCloseMetaV2 > TransactionResultMetaV1 > TransactionMeta",
    "LedgerCloseMeta > LedgerCloseMetaV2 > TransactionResultMetaV1 > TransactionResultPair",
];

/// Every simple path from `LedgerCloseMeta` (or another root) to each
/// recorded type, found backwards through `parents` (who refers to whom).
fn recorded_paths(parents: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    fn up(
        parents: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        out: &mut BTreeSet<String>,
    ) {
        let here = path.last().expect("path").clone();
        let ps = parents.get(&here);
        if here == "LedgerCloseMeta" || ps.is_none_or(BTreeSet::is_empty) {
            let mut p = path.clone();
            p.reverse();
            out.insert(p.join(" > "));
            return;
        }
        for p in ps.into_iter().flatten() {
            if path.contains(p) {
                continue;
            }
            path.push(p.clone());
            up(parents, path, out);
            path.pop();
        }
    }
    let mut out = BTreeSet::new();
    for ty in RECORDED {
        up(parents, &mut vec![ty.to_string()], &mut out);
    }
    out
}

/// The paths to the recorded types are exactly [`RECORDED_PATHS`].
fn check_recorded_paths(parents: &BTreeMap<String, BTreeSet<String>>) -> Result<(), String> {
    let got = recorded_paths(parents);
    let want: BTreeSet<String> = RECORDED_PATHS.iter().map(|p| p.to_string()).collect();
    if got == want {
        return Ok(());
    }
    let new: Vec<&String> = got.difference(&want).collect();
    let gone: Vec<&String> = want.difference(&got).collect();
    let all: String = got.iter().map(|p| format!("    \"{p}\",\n")).collect();
    Err(format!(
        "the paths to the recorded types changed: new {new:#?}, gone {gone:#?}. Teach the \
         walker (src/walk/mod.rs) about them, then update RECORDED_PATHS to:\n{all}"
    ))
}

/// `walk_batch` walks `LedgerCloseMetaBatch` with the generated
/// `s_ledger_close_meta_batch` and reads `startSequence` and `endSequence`
/// as the words at bytes 0 and 4: the batch must be exactly that.
fn check_batch(schema: &Schema) -> Result<(), String> {
    let d = schema.def("LedgerCloseMetaBatch");
    let fields: Vec<String> = d["fields"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .map(|f| format!("{} {}", f["name"], f["type"]))
                .collect()
        })
        .unwrap_or_default();
    let want = [
        r#""startSequence" {"kind":"ref","name":"uint32"}"#,
        r#""endSequence" {"kind":"ref","name":"uint32"}"#,
        r#""ledgerCloseMetas" {"element":{"kind":"ref","name":"LedgerCloseMeta"},"kind":"var_array"}"#,
    ];
    if d["kind"] != "struct" || fields != want {
        return Err(format!(
            "LedgerCloseMetaBatch is not the struct walk_batch reads: {} with fields {fields:#?}",
            d["kind"]
        ));
    }
    Ok(())
}

/// The Rust-representation facts the generator assumes, against the
/// crate's generated sources: which typedefs are aliases, and which
/// fields of the reachable types are boxed.
fn check_representation(dir: &Path, reachable: &BTreeSet<String>) -> Result<(), String> {
    let generated = dir.join("src/generated");
    let mut aliases = BTreeSet::new();
    let mut sources = Vec::new();
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
        }
        let name = path.file_name().expect("f").to_string_lossy().to_string();
        sources.push((name, text));
    }
    let want: BTreeSet<String> = ALIASES.iter().map(|a| a.to_string()).collect();
    if aliases != want {
        return Err(format!("typedefs rendered as aliases: {aliases:?}"));
    }
    check_boxed(&sources, reachable)
}

/// The boxed reads (`Box<T>` / `Box::<T>` ... `::read_xdr(r)`) in the
/// sources of the reachable types, as (type, Rust field or variant), are
/// exactly [`BOXED`]'s. A source file holds one type and is named after
/// it (`claim_predicate.rs`).
fn check_boxed(sources: &[(String, String)], reachable: &BTreeSet<String>) -> Result<(), String> {
    let squash = |s: &str| s.replace('_', "").to_ascii_lowercase();
    let by_file: BTreeMap<String, &String> = reachable.iter().map(|t| (squash(t), t)).collect();
    let mut got = BTreeSet::new();
    for (file, text) in sources {
        let Some(ty) = file
            .strip_suffix(".rs")
            .and_then(|f| by_file.get(&squash(f)))
        else {
            continue;
        };
        for l in text.lines() {
            let l = l.trim();
            if !(l.contains("Box<") || l.contains("Box::<")) || !l.contains("::read_xdr(r)") {
                continue;
            }
            // `field: Box::<T>::read_xdr(r)?,` or `E::Arm => Self::Arm(...)`.
            let member = match l.split_once("Self::") {
                Some((_, arm)) => arm.split('(').next().unwrap_or(arm),
                None => l.split(':').next().unwrap_or(l),
            };
            got.insert((ty.to_string(), member.trim().to_string()));
        }
    }
    let want: BTreeSet<(String, String)> = BOXED
        .iter()
        .map(|&(t, _, rust)| (t.to_string(), rust.to_string()))
        .collect();
    if got != want {
        return Err(format!(
            "boxed fields of the reachable types: {got:?}, BOXED says {want:?}: add the new \
             ones to BOXED (the skipper spends a level for each box)"
        ));
    }
    Ok(())
}

#[test]
fn the_generated_skipper_matches_the_schema() {
    let dir = stellar_xdr_dir();
    let (want, reachable) = generate(&dir);
    if let Err(e) = check_representation(&dir, &reachable) {
        panic!("{e}");
    }
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

/// A schema with one more field added to `ty`.
fn with_field(json: &Value, ty: &str, field: Value) -> Schema {
    let mut json = json.clone();
    let defs = json["definitions"].as_array_mut().expect("definitions");
    let d = defs
        .iter_mut()
        .find(|d| d["name"] == ty)
        .unwrap_or_else(|| panic!("no {ty}"));
    d["fields"].as_array_mut().expect("fields").push(field);
    schema_of(&json)
}

/// A `TransactionV1Envelope` held somewhere new (here in the apply meta):
/// its `Transaction`'s direct parent is still `TransactionV1Envelope`
/// alone, so only the check of every path catches it.
#[test]
fn a_new_path_to_a_recorded_type_is_caught() {
    let json = load(&stellar_xdr_dir());
    let (_, sites) = reach(&schema_of(&json));
    assert_eq!(check_recorded_paths(&sites), Ok(()));
    let sneaky = serde_json::json!({
        "name": "sneaky",
        "type": {"kind": "ref", "name": "TransactionV1Envelope"}
    });
    let (_, sites) = reach(&with_field(&json, "TransactionResultMeta", sneaky));
    let parents: Vec<&String> = sites["Transaction"].iter().collect();
    assert_eq!(
        parents,
        ["TransactionV1Envelope"],
        "direct parents unchanged"
    );
    let e = check_recorded_paths(&sites).expect_err("a new path");
    assert!(
        e.contains("LedgerCloseMeta > LedgerCloseMetaV0 > TransactionResultMeta > TransactionV1Envelope > Transaction"),
        "{e}"
    );
}

/// `walk_batch` reads the first two words as the sequences: a batch with
/// another field fails generation.
#[test]
fn a_changed_batch_is_caught() {
    let json = load(&stellar_xdr_dir());
    assert_eq!(check_batch(&schema_of(&json)), Ok(()));
    let extra = serde_json::json!({"name": "ext", "type": {"kind": "ref", "name": "uint32"}});
    let e = check_batch(&with_field(&json, "LedgerCloseMetaBatch", extra)).expect_err("changed");
    assert!(e.contains("ext"), "{e}");
}

/// A second boxed field in a reachable type fails, wherever it is; boxes
/// in unreachable types (the contract spec) do not matter.
#[test]
fn a_second_boxed_field_is_caught() {
    let dir = stellar_xdr_dir();
    let (_, reachable) = generate(&dir);
    let src = |f: &str| {
        let text = std::fs::read_to_string(dir.join("src/generated").join(f)).expect(f);
        (f.to_string(), text)
    };
    let real = vec![src("claim_predicate.rs"), src("sc_spec_type_map.rs")];
    assert_eq!(check_boxed(&real, &reachable), Ok(()));
    let mut meta = src("transaction_meta_v3.rs");
    assert!(reachable.contains("TransactionMetaV3"));
    meta.1 = meta.1.replace(
        "ext: ExtensionPoint::read_xdr(r)?,",
        "ext: Box::<ExtensionPoint>::read_xdr(r)?,",
    );
    let mut boxed = real.clone();
    boxed.push(meta);
    let e = check_boxed(&boxed, &reachable).expect_err("a second box");
    assert!(e.contains("TransactionMetaV3"), "{e}");
    // BOXED's own entry, missing from the sources, fails as well.
    assert!(check_boxed(&real[1..], &reachable).is_err());
}
