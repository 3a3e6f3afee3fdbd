//! Hostile review of the walker (`src/walk/`): ledgers drawn at random
//! from the XDR schema (every union arm, every optional, arrays and
//! strings of random lengths, with faults injected at random sites), and
//! targeted inputs. The walker must accept exactly what the full decode
//! accepts (and is canonical), and on those its slices must be exactly the
//! bytes the reference re-encodes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ledgerstore_stellar::extract::{check_refusal, limits};
use ledgerstore_stellar::walk::{inner_hash, tx_hash, walk};
use serde_json::Value;
use stellar_xdr::{
    GeneralizedTransactionSet, LedgerCloseMeta, Limits, ReadXdr, TransactionEnvelope,
    TransactionPhase, TxSetComponent, WriteXdr,
};

fn stellar_xdr_dir() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let src = home.join("registry/src");
    for index in std::fs::read_dir(&src).expect("registry/src") {
        let dir = index.expect("entry").path().join("stellar-xdr-30.0.0");
        if dir.join("xdr-definitions-json/xdr.json").exists() {
            return dir;
        }
    }
    panic!("stellar-xdr-30.0.0 not found");
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

struct Gen {
    defs: BTreeMap<String, Value>,
    rng: Rng,
    /// Faults per mille at each site (0: valid values only).
    fault: u64,
    out: Vec<u8>,
}

impl Gen {
    fn new(seed: u64, fault: u64) -> Self {
        let dir = stellar_xdr_dir();
        let json: Value = serde_json::from_slice(
            &std::fs::read(dir.join("xdr-definitions-json/xdr.json")).expect("xdr.json"),
        )
        .expect("json");
        let defs = json["definitions"]
            .as_array()
            .expect("defs")
            .iter()
            .map(|d| (d["name"].as_str().expect("name").to_string(), d.clone()))
            .collect();
        Self {
            defs,
            rng: Rng(seed),
            fault,
            out: Vec::new(),
        }
    }

    fn word(&mut self, w: u32) {
        self.out.extend_from_slice(&w.to_be_bytes());
    }

    fn faulty(&mut self) -> bool {
        self.fault > 0 && self.rng.chance(self.fault)
    }

    fn bytes(&mut self, n: usize, pad_fault: bool) {
        for _ in 0..n {
            let b = self.rng.next() as u8;
            self.out.push(b);
        }
        let pad = (4 - n % 4) % 4;
        for _ in 0..pad {
            self.out.push(if pad_fault { 1 } else { 0 });
        }
    }

    fn ty(&mut self, t: &Value, budget: u32) {
        match t["kind"].as_str().expect("kind") {
            "ref" => {
                let name = t["name"].as_str().expect("name").to_string();
                self.def(&name, budget);
            }
            "int" | "unsigned_int" => {
                let w = self.rng.next() as u32;
                self.word(w);
            }
            "hyper" | "unsigned_hyper" => {
                let w = self.rng.next();
                self.out.extend_from_slice(&w.to_be_bytes());
            }
            "bool" => {
                let v = if self.fault > 0 && self.rng.chance(300) {
                    [2u32, 3, 0x8000_0000, 0xffff_ffff][self.rng.below(4) as usize]
                } else {
                    self.rng.below(2) as u32
                };
                self.word(v);
            }
            "opaque_fixed" => {
                let n = t["size"].as_u64().expect("size") as usize;
                let f = !n.is_multiple_of(4) && self.faulty();
                self.bytes(n, f);
            }
            "opaque_var" | "string" => {
                let max = t
                    .get("max_size")
                    .and_then(Value::as_u64)
                    .unwrap_or(u64::from(u32::MAX));
                let mut n = self.rng.below(max.min(9) + 1);
                if self.faulty() && max < 1000 {
                    n = max + 1;
                }
                self.word(n as u32);
                let f = !n.is_multiple_of(4) && self.faulty();
                self.bytes(n as usize, f);
            }
            "optional" => {
                if self.faulty() {
                    self.word(2);
                    return;
                }
                if budget > 0 && self.rng.chance(500) {
                    self.word(1);
                    self.ty(&t["element"], budget - 1);
                } else {
                    self.word(0);
                }
            }
            "var_array" => {
                let max = t
                    .get("max_count")
                    .and_then(Value::as_u64)
                    .unwrap_or(u64::from(u32::MAX));
                let mut n = if budget == 0 {
                    0
                } else {
                    self.rng.below(max.min(3) + 1)
                };
                if self.faulty() && max < 10 {
                    // over the maximum: elements follow, so only the bound refuses it
                    n = max + 1;
                }
                self.word(n as u32);
                for _ in 0..n {
                    self.ty(&t["element"], budget.saturating_sub(1));
                }
            }
            "array" => {
                let n = t["count"].as_u64().expect("count");
                for _ in 0..n {
                    self.ty(&t["element"], budget.saturating_sub(1));
                }
            }
            other => panic!("kind {other}"),
        }
    }

    fn def(&mut self, name: &str, budget: u32) {
        let d = self.defs[name].clone();
        match d["kind"].as_str().expect("kind") {
            "struct" => {
                for f in d["fields"].as_array().expect("fields") {
                    self.ty(&f["type"], budget);
                }
            }
            "typedef" => self.ty(&d["type"], budget),
            "enum" => {
                let m = d["members"].as_array().expect("members");
                if self.faulty() {
                    self.word(0x7fff_fff0);
                    return;
                }
                let v = m[self.rng.below(m.len() as u64) as usize]["value"]
                    .as_i64()
                    .expect("value");
                self.word(v as i32 as u32);
            }
            "union" => {
                let arms = d["arms"].as_array().expect("arms");
                if self.faulty() {
                    self.word(0x7fff_fff0);
                    return;
                }
                // With no budget left, prefer a void arm or a non-recursive one.
                let pick = if budget == 0 {
                    arms.iter()
                        .position(|a| a.get("type").is_none())
                        .unwrap_or_else(|| self.rng.below(arms.len() as u64) as usize)
                } else {
                    self.rng.below(arms.len() as u64) as usize
                };
                let a = &arms[pick];
                let cases = a["cases"].as_array().expect("cases");
                let v = cases[self.rng.below(cases.len() as u64) as usize]["value"]
                    .as_i64()
                    .expect("case");
                self.word(v as i32 as u32);
                if let Some(t) = a.get("type") {
                    self.ty(t, budget.saturating_sub(1));
                }
            }
            other => panic!("{name}: {other}"),
        }
    }
}

/// The envelopes of a decoded ledger, in set order.
fn set_order(lcm: &LedgerCloseMeta) -> Vec<&TransactionEnvelope> {
    fn generalized(s: &GeneralizedTransactionSet) -> Vec<&TransactionEnvelope> {
        let GeneralizedTransactionSet::V1(v1) = s;
        let mut out: Vec<&TransactionEnvelope> = Vec::new();
        for phase in v1.phases.iter() {
            match phase {
                TransactionPhase::V0(cs) => {
                    for c in cs.iter() {
                        let TxSetComponent::TxsetCompTxsMaybeDiscountedFee(c) = c;
                        out.extend(c.txs.iter());
                    }
                }
                TransactionPhase::V1(p) => {
                    for stage in p.execution_stages.iter() {
                        for cluster in stage.0.iter() {
                            out.extend(cluster.0.iter());
                        }
                    }
                }
            }
        }
        out
    }
    match lcm {
        LedgerCloseMeta::V0(m) => m.tx_set.txs.iter().collect(),
        LedgerCloseMeta::V1(m) => generalized(&m.tx_set),
        LedgerCloseMeta::V2(m) => generalized(&m.tx_set),
    }
}

/// Walker vs full decode on `raw`: acceptance, and on acceptance every slice.
/// Returns whether the reference accepted.
static STATS: [std::sync::atomic::AtomicUsize; 3] = [
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
];

fn count(i: usize) {
    STATS[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

fn compare(raw: &[u8], what: &str) -> bool {
    let w = walk(raw);
    let r = LedgerCloseMeta::from_xdr(raw, limits(raw.len()));
    let lcm = match (w, r) {
        (Err(_), Err(_)) => {
            count(0);
            return false;
        }
        (Ok(_), Err(e)) => panic!("{what}: the walker accepts what the decoder refuses: {e}"),
        (Err(e), Ok(lcm)) => {
            count(1);
            // The excuse must be a bool other than 0 or 1, where the walker
            // stopped, and nothing else: the same ledger, canonically
            // encoded, must walk (the shared check of the fuzz target).
            let canonical = lcm.to_xdr(Limits::none()).expect("encode");
            if let Err(why) = check_refusal(raw, &canonical, &e) {
                panic!("{what}: {why}");
            }
            assert!(
                compare(&canonical, &format!("{what}, re-encoded")),
                "{what}: re-encoded"
            );
            return true;
        }
        (Ok(_), Ok(lcm)) => {
            count(2);
            lcm
        }
    };
    assert_eq!(
        lcm.to_xdr(Limits::none()).expect("encode"),
        raw,
        "{what}: the walker accepts a non-canonical ledger"
    );
    let s = walk(raw).expect("walk");
    let id = [7u8; 32];
    let set = set_order(&lcm);
    assert_eq!(set.len(), s.envelopes.len(), "{what}: envelopes");
    for (i, (e, want)) in s.envelopes.iter().zip(set).enumerate() {
        let bytes = want.to_xdr(Limits::none()).expect("encode");
        assert_eq!(e.envelope.of(raw), &bytes[..], "{what}: set[{i}]");
        assert_eq!(
            tx_hash(raw, e, &id),
            want.hash(id).expect("hash"),
            "{what}: set[{i}] hash"
        );
        let inner = match want {
            TransactionEnvelope::TxFeeBump(fb) => Some(fb.tx.inner_tx.hash(id).expect("inner")),
            _ => None,
        };
        assert_eq!(inner_hash(raw, e, &id), inner, "{what}: set[{i}] inner");
    }
    let processing: Vec<(Vec<u8>, Vec<u8>)> = match &lcm {
        LedgerCloseMeta::V0(m) => m
            .tx_processing
            .iter()
            .map(|p| {
                (
                    p.result.to_xdr(Limits::none()).expect("e"),
                    p.tx_apply_processing.to_xdr(Limits::none()).expect("e"),
                )
            })
            .collect(),
        LedgerCloseMeta::V1(m) => m
            .tx_processing
            .iter()
            .map(|p| {
                (
                    p.result.to_xdr(Limits::none()).expect("e"),
                    p.tx_apply_processing.to_xdr(Limits::none()).expect("e"),
                )
            })
            .collect(),
        LedgerCloseMeta::V2(m) => m
            .tx_processing
            .iter()
            .map(|p| {
                (
                    p.result.to_xdr(Limits::none()).expect("e"),
                    p.tx_apply_processing.to_xdr(Limits::none()).expect("e"),
                )
            })
            .collect(),
    };
    assert_eq!(processing.len(), s.applied.len(), "{what}: applied");
    for (i, (a, (res, meta))) in s.applied.iter().zip(&processing).enumerate() {
        assert_eq!(a.result.of(raw), &res[..], "{what}: result {i}");
        assert_eq!(a.meta.of(raw), &meta[..], "{what}: meta {i}");
    }
    let h = match &lcm {
        LedgerCloseMeta::V0(m) => &m.ledger_header.header,
        LedgerCloseMeta::V1(m) => &m.ledger_header.header,
        LedgerCloseMeta::V2(m) => &m.ledger_header.header,
    };
    assert_eq!(
        (s.seq, s.close_time),
        (h.ledger_seq, h.scp_value.close_time.0),
        "{what}"
    );
    true
}

fn seed() -> u64 {
    std::env::var("WALK_REVIEW_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn fault_rate() -> u64 {
    std::env::var("WALK_REVIEW_FAULT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
}

fn budget() -> u32 {
    std::env::var("WALK_REVIEW_BUDGET")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6)
}

fn iterations() -> u64 {
    std::env::var("WALK_REVIEW_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// Valid ledgers drawn from the schema: every arm of every union reachable
/// from `LedgerCloseMeta`, with random lengths. The decoder generated from
/// the same `.x` files must take them, and the walker must agree.
#[test]
fn schema_random_valid_ledgers_agree() {
    let mut g = Gen::new(0x5eed_0001 ^ seed(), 0);
    let (mut accepted, n) = (0, iterations());
    for i in 0..n {
        g.out.clear();
        g.def("LedgerCloseMeta", 6);
        let raw = std::mem::take(&mut g.out);
        if compare(&raw, &format!("valid #{i} ({} bytes)", raw.len())) {
            accepted += 1;
        }
    }
    // Valid draws: the decoder takes nearly all (it only refuses what the
    // schema cannot express).
    assert!(accepted * 10 >= n * 9, "{accepted} of {n} accepted");
}

/// Ledgers from the schema with faults (bad discriminants, enum values,
/// optional flags, bools, lengths over the maximum, non-zero padding).
#[test]
fn schema_random_faulty_ledgers_agree() {
    let mut g = Gen::new(0x5eed_0002 ^ seed(), fault_rate());
    for i in 0..iterations() {
        g.out.clear();
        g.def("LedgerCloseMeta", budget());
        let raw = std::mem::take(&mut g.out);
        compare(&raw, &format!("faulty #{i} ({} bytes)", raw.len()));
    }
    eprintln!(
        "both refuse / walker alone refuses (bool) / both accept: {:?}",
        STATS
            .iter()
            .map(|s| s.load(std::sync::atomic::Ordering::Relaxed))
            .collect::<Vec<_>>()
    );
}

mod deep {
    use ledgerstore_stellar::walk::walk_limited;
    use stellar_xdr::{
        AccountId, Asset, ClaimPredicate, Claimant, ClaimantV0, ContractId,
        CreateClaimableBalanceOp, Hash, HostFunction, InvokeContractArgs, InvokeHostFunctionOp,
        LedgerCloseMeta, LedgerCloseMetaV0, Limits, Memo, MuxedAccount, Operation, OperationBody,
        Preconditions, PublicKey, ReadXdr, ScAddress, ScMap, ScMapEntry, ScSymbol, ScVal, ScVec,
        SequenceNumber, Transaction, TransactionEnvelope, TransactionExt, TransactionV1Envelope,
        Uint256, VecM, WriteXdr,
    };

    fn ledger_with(body: OperationBody) -> Vec<u8> {
        let env = TransactionEnvelope::Tx(TransactionV1Envelope {
            tx: Transaction {
                source_account: MuxedAccount::Ed25519(Uint256([1; 32])),
                fee: 100,
                seq_num: SequenceNumber(1),
                cond: Preconditions::None,
                memo: Memo::None,
                operations: vec![Operation {
                    source_account: None,
                    body,
                }]
                .try_into()
                .expect("ops"),
                ext: TransactionExt::V0,
            },
            signatures: VecM::default(),
        });
        let mut v0 = LedgerCloseMetaV0::default();
        v0.tx_set.txs = vec![env].try_into().expect("txs");
        LedgerCloseMeta::V0(v0)
            .to_xdr(Limits::none())
            .expect("encode")
    }

    fn predicate(k: usize) -> OperationBody {
        let mut p = ClaimPredicate::Unconditional;
        for i in 0..k {
            p = match i % 3 {
                0 => ClaimPredicate::Not(Some(Box::new(p))),
                1 => ClaimPredicate::And(
                    vec![p, ClaimPredicate::Unconditional]
                        .try_into()
                        .expect("and"),
                ),
                _ => ClaimPredicate::Or(
                    vec![ClaimPredicate::BeforeAbsoluteTime(5), p]
                        .try_into()
                        .expect("or"),
                ),
            };
        }
        OperationBody::CreateClaimableBalance(CreateClaimableBalanceOp {
            asset: Asset::Native,
            amount: 1,
            claimants: vec![Claimant::ClaimantTypeV0(ClaimantV0 {
                destination: AccountId(PublicKey::PublicKeyTypeEd25519(Uint256([2; 32]))),
                predicate: p,
            })]
            .try_into()
            .expect("claimants"),
        })
    }

    fn scval(k: usize) -> OperationBody {
        let mut v = ScVal::Bool(true);
        for i in 0..k {
            v = if i % 2 == 0 {
                ScVal::Vec(Some(ScVec(vec![v].try_into().expect("vec"))))
            } else {
                ScVal::Map(Some(ScMap(
                    vec![ScMapEntry {
                        key: ScVal::U32(1),
                        val: v,
                    }]
                    .try_into()
                    .expect("map"),
                )))
            };
        }
        OperationBody::InvokeHostFunction(InvokeHostFunctionOp {
            host_function: HostFunction::InvokeContract(InvokeContractArgs {
                contract_address: ScAddress::Contract(ContractId(Hash([3; 32]))),
                function_name: ScSymbol("f".try_into().expect("sym")),
                args: vec![v].try_into().expect("args"),
            }),
            auth: VecM::default(),
        })
    }

    fn parity(raw: &[u8], what: &str) -> Option<u32> {
        let mut first = None;
        for depth in 0..=600u32 {
            let w = walk_limited(raw, depth).is_ok();
            let r = LedgerCloseMeta::from_xdr(
                raw,
                Limits {
                    depth,
                    len: raw.len(),
                },
            )
            .is_ok();
            assert_eq!(w, r, "{what}: depth limit {depth}: walker {w}, decoder {r}");
            if r && first.is_none() {
                first = Some(depth);
            }
        }
        first
    }

    /// The same ledgers inside a `LedgerCloseMetaBatch` (two more levels):
    /// at the edge of the limit the batch walker and the batch decode agree.
    #[test]
    fn deep_recursion_in_a_batch() {
        use ledgerstore_stellar::walk::walk_batch;
        use stellar_xdr::LedgerCloseMetaBatch;
        let mut seen = [false; 2];
        let bodies = (95..=112).map(scval).chain((190..=215).map(predicate));
        for (i, body) in bodies.enumerate() {
            let lcm = LedgerCloseMeta::from_xdr(ledger_with(body), Limits::none()).expect("lcm");
            let batch = LedgerCloseMetaBatch {
                start_sequence: 0,
                end_sequence: 0,
                ledger_close_metas: vec![lcm].try_into().expect("batch"),
            }
            .to_xdr(Limits::none())
            .expect("encode");
            let w = walk_batch(&batch).is_ok();
            let r = LedgerCloseMetaBatch::from_xdr(
                &batch,
                ledgerstore_stellar::extract::limits(batch.len()),
            )
            .is_ok();
            assert_eq!(w, r, "body {i}: walker {w}, decoder {r}");
            seen[usize::from(r)] = true;
        }
        assert_eq!(seen, [true, true], "both sides of the limit");
    }

    /// Recursive types nested to and past the 500-level limit: the walker
    /// refuses and accepts at exactly the decoder's depth limits.
    #[test]
    fn deep_recursion_depth_parity() {
        for k in [1usize, 2, 3, 50, 120, 160, 165, 170, 200] {
            let need = parity(&ledger_with(predicate(k)), &format!("ClaimPredicate x{k}"));
            eprintln!("ClaimPredicate x{k}: accepted from depth {need:?}");
        }
        for k in [1usize, 2, 50, 100, 110, 115, 120, 140] {
            let need = parity(&ledger_with(scval(k)), &format!("ScVal x{k}"));
            eprintln!("ScVal x{k}: accepted from depth {need:?}");
        }
    }
}
