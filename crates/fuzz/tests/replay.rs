//! The fuzz targets' short form in the test suite: each target's seeds
//! (which must be inputs its parser accepts, or the corpus would start
//! nowhere), every crash AFL++ saved that was since fixed
//! (`regressions/<target>/`), and deterministic mutations of every seed.
//! The coverage-guided runs are scripts/fuzz.sh.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use ledgerstore_event_index::EventIndex;
use ledgerstore_fuzz::seeds::{Seed, seeds};
use ledgerstore_fuzz::xdr::PASSPHRASES;
use ledgerstore_fuzz::{TARGETS, Target};
use ledgerstore_segment::{Segment, hashes};
use ledgerstore_stellar::events::{Events, ledger_events, tx_events};
use ledgerstore_stellar::walk::walk;
use ledgerstore_stellar::{Network, ReadLimits, decode_file};

/// Mutants run per seed.
const MUTANTS: u64 = 150;

fn all_seeds(t: &Target) -> Vec<Seed> {
    let s = seeds(t.name).unwrap_or_else(|e| panic!("{}: seeds: {e}", t.name));
    assert!(s.len() >= 5, "{}: only {} seeds", t.name, s.len());
    s
}

/// Runs `input` through `t`, naming the input if the target panics.
fn run(t: &Target, what: &str, input: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| (t.run)(input))).is_err() {
        let keep = std::env::temp_dir().join(format!("fuzz-failure-{}-{what}", t.name));
        let _ = std::fs::write(&keep, input);
        panic!(
            "fuzz target {} failed on {what} ({} bytes, saved to {})",
            t.name,
            input.len(),
            keep.display()
        );
    }
}

#[test]
fn every_seed_runs_clean() {
    for t in TARGETS {
        for (name, bytes) in all_seeds(t) {
            run(t, &name, &bytes);
        }
    }
}

/// The seeds are real inputs: the xdr seeds decode, the segment seeds
/// open and answer the probes they were built with.
#[test]
fn seeds_are_accepted_inputs() {
    for (name, bytes) in seeds("xdr").expect("xdr seeds") {
        let network = Network::from_passphrase(PASSPHRASES[bytes[0] as usize]);
        let ledgers = decode_file(&bytes[1..], &name, &network, ReadLimits::default())
            .unwrap_or_else(|e| panic!("xdr seed {name}: {e}"));
        assert!(!ledgers.is_empty(), "{name}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut found = 0;
    for (name, bytes) in seeds("segment").expect("segment seeds") {
        let path = dir.path().join(&name);
        std::fs::write(&path, &bytes[1..]).expect("write");
        if bytes[0] == 0 {
            let seg = Segment::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            seg.verify().unwrap_or_else(|e| panic!("{name}: {e}"));
            found += (0..ledgerstore_fuzz::segment::PROBES)
                .filter(|&i| seg.lookup(&ledgerstore_fuzz::segment::probe(i)).is_some())
                .count();
        } else {
            let (first, last) = (u32_at(&bytes[1..], 16), u32_at(&bytes[1..], 20));
            hashes::read(&path, first, last).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    // Every probe hash is indexed by exactly one seed segment.
    assert_eq!(found, ledgerstore_fuzz::segment::PROBES as usize);
    let (mut versions, mut manifests) = (Vec::new(), 0);
    for (name, bytes) in seeds("pack").expect("pack seeds") {
        if bytes[0] == 0 {
            let h = ledgerstore_pack::Header::parse(&bytes[1..])
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(h.size, bytes.len() as u64 - 1, "{name}");
            versions.push(h.version);
            // A version-3 or 4 seed's every frame opens, so the target's
            // checks of an opened frame run on its mutations.
            let pack = &bytes[1..];
            let dict = h.dict_range().map(|r| {
                ledgerstore_pack::DictReader::open(&h, &pack[r.start as usize..r.end as usize])
                    .unwrap_or_else(|e| panic!("{name}: {e}"))
            });
            for seq in (h.first..=h.last).filter(|_| h.frames()) {
                let at = |r: std::ops::Range<u64>| &pack[r.start as usize..r.end as usize];
                let (page, _) = h.ledger_page_of(seq).expect("page");
                let le = h
                    .ledger_entry(at(h.ledger_page(page).expect("range")), seq)
                    .unwrap_or_else(|e| panic!("{name} ledger {seq}: {e}"));
                let frame = at(h.data_range(&le.record).expect("frame"));
                ledgerstore_pack::LedgerFrame::open(&h, &le, frame, dict.as_ref())
                    .unwrap_or_else(|e| panic!("{name} ledger {seq}: {e}"));
            }
        } else {
            ledgerstore_pack::Manifest::parse("manifest/00000000000000000003.json", &bytes[1..])
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            manifests += 1;
        }
    }
    // Every pack version a replica reads, and a manifest.
    assert!(
        [1, 2, 3, 4].iter().all(|v| versions.contains(v)),
        "{versions:?}"
    );
    assert!(manifests > 0);
}

/// The events seeds are real metas and ledgers with events, of V3 and
/// V4, each mode has some; the event_index seeds are index files that
/// open, verify and hold events (one of none), and structured inputs.
#[test]
fn event_seeds_are_accepted_inputs() {
    let (mut versions, mut modes) = (Vec::new(), [0; 3]);
    for (name, bytes) in seeds("events").expect("events seeds") {
        modes[bytes[0] as usize % 3] += 1;
        match bytes[0] % 3 {
            0 => {
                let meta = &bytes[2..];
                let (tx, mut counts, _) = ledgerstore_fuzz::events::context(bytes[1]);
                let mut evs = Events::default();
                tx_events(meta, 0, &tx, &mut counts, &mut evs)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(!evs.list.is_empty(), "{name}");
                versions.push(meta[3]);
            }
            1 => assert!(bytes.len() > 1000, "{name}"),
            _ => {
                let raw = &bytes[1..];
                let slices = walk(raw).unwrap_or_else(|e| panic!("{name}: {e}"));
                let evs = ledger_events(raw, &slices).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(!evs.list.is_empty(), "{name}");
            }
        }
    }
    assert!(
        versions.contains(&3) && versions.contains(&4),
        "{versions:?}"
    );
    assert!(modes.iter().all(|&m| m > 0), "{modes:?}");
    let (mut files, mut empty, mut structured) = (0, 0, 0);
    for (name, bytes) in seeds("event_index").expect("event_index seeds") {
        if bytes[0] % 2 == 1 {
            structured += 1;
            continue;
        }
        let idx =
            EventIndex::from_bytes(bytes[1..].to_vec()).unwrap_or_else(|e| panic!("{name}: {e}"));
        idx.verify().unwrap_or_else(|e| panic!("{name}: {e}"));
        files += 1;
        empty += usize::from(idx.events() == 0);
    }
    assert!(
        files >= 4 && empty == 1 && structured >= 4,
        "{files} {empty} {structured}"
    );
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn regressions_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("regressions")
        .join(target)
}

/// Every input AFL++ found a crash with stays fixed.
#[test]
fn saved_crashes_stay_fixed() {
    let mut replayed = 0;
    for t in TARGETS {
        let dir = regressions_dir(t.name);
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (every target keeps a folder)", dir.display()));
        for entry in entries {
            let path = entry.expect("entry").path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with('.') || name.ends_with(".md") || path.is_dir() {
                continue;
            }
            let bytes = std::fs::read(&path).expect("read");
            run(t, &name, &bytes);
            replayed += 1;
        }
    }
    eprintln!("replayed {replayed} saved crashes");
}

/// A small deterministic mutator (bit flips, interesting values, cuts and
/// splices), so the suite covers near-misses of every real format without
/// the fuzzer installed.
struct Mutator(u64);

impl Mutator {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn mutate(&mut self, seed: &[u8]) -> Vec<u8> {
        let mut b = seed.to_vec();
        for _ in 0..=self.below(3) {
            if b.is_empty() {
                b.push(self.next() as u8);
                continue;
            }
            let at = self.below(b.len());
            match self.below(6) {
                0 => b[at] ^= 1 << self.below(8),
                1 => b[at] = [0, 1, 0x7F, 0x80, 0xFF][self.below(5)],
                2 => {
                    let v = [0u32, 1, 0x7FFF_FFFF, u32::MAX, b.len() as u32][self.below(5)];
                    for (i, byte) in v.to_le_bytes().iter().enumerate() {
                        if let Some(x) = b.get_mut(at + i) {
                            *x = *byte;
                        }
                    }
                }
                3 => b.truncate(at),
                4 => {
                    let len = self.below(64).min(b.len() - at);
                    let chunk = b[at..at + len].to_vec();
                    let to = self.below(b.len());
                    b.splice(to..to, chunk);
                }
                _ => {
                    let end = (at + 1 + self.below(16)).min(b.len());
                    b.drain(at..end);
                }
            }
        }
        b
    }
}

#[test]
fn mutated_seeds_run_clean() {
    for t in TARGETS {
        for (si, (name, bytes)) in all_seeds(t).into_iter().enumerate() {
            let mut m = Mutator(0x2545_F491_4F6C_DD1D ^ ((si as u64 + 1) << 32));
            for i in 0..MUTANTS {
                let mutant = m.mutate(&bytes);
                run(t, &format!("{name}-mutant-{i}"), &mutant);
            }
        }
    }
}
