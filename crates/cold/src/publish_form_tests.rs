//! One published location across ledger-record forms and levels: a
//! format-3 writer records its raw record's hash, goes on after its zstd
//! level changes, and goes on from a location a format-2 dir of the same
//! history published at another level and with whole records
//! (re-ingesting is how history moves to a new form), and a format-2 dir
//! goes on after it; another history is still refused, and a damaged
//! pack record is damage. Version-2 packs hold zstd frames of records,
//! version-3 packs the record as stored inside the ledger's frame; a
//! store may mix them, and replicas read what each wrote.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::codec::zstd_compress;
use ledgerstore_db_api::{BodyForm, Layout, is_zstd_frame};
use ledgerstore_pack::Header;
use ledgerstore_store::{IndexedOptions, Ledgerstore, StoreOptions};
use ledgerstore_synth::{Synth, SynthConfig};

use crate::tests::{assert_head, remote, replica};
use crate::{ColdError, PackChoice, PackForm, Remote, publish_as};

const FRAMES: PackForm = PackForm::Frames {
    level: 3,
    dict_kib: 0,
};
const FRAMES_DICT: PackForm = PackForm::Frames {
    level: 3,
    dict_kib: 64,
};

/// A new dir (or an existing one) whose ledger records are `ledgers`
/// (blocks: format 3; records: format 2), compressed at `level`.
fn open(dir: &Path, ledgers: BodyForm, level: i32) -> Arc<Ledgerstore> {
    let opts = StoreOptions {
        layout: Some(Layout::Indexed),
        compression_level: level,
        indexed: IndexedOptions {
            range_ledgers: 10,
            merge_fanout: 2,
            merge_levels: 1,
            // The same history in two dirs publishes the same bodies.
            dict: None,
            ledgers,
            ..IndexedOptions::default()
        },
        ..StoreOptions::default()
    };
    Arc::new(Ledgerstore::open(dir, opts, &Backends::for_tests()).expect("open store"))
}

/// One publish round of `store` to `r` in `form`.
fn round(
    rt: &tokio::runtime::Runtime,
    store: &Arc<Ledgerstore>,
    r: &Remote,
    work: &Path,
    form: impl Into<PackChoice>,
) -> Result<crate::PublishReport, ColdError> {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    rt.block_on(publish_as(Arc::clone(store), r, work, None, stop, form))
}

/// Ledger `seq`'s record bytes as the newest manifest's pack holds them
/// (in version 3, inside its ledger's frame), read from the bucket's
/// files.
fn pack_record(bucket: &Path, rt: &tokio::runtime::Runtime, r: &Remote, seq: u32) -> Vec<u8> {
    let m = rt
        .block_on(r.newest_manifest())
        .expect("manifest")
        .expect("published");
    let p = m.pack_of(seq).expect("a pack holds it");
    let pack = std::fs::read(bucket.join(&p.object.key)).expect("pack");
    let at = |range: std::ops::Range<u64>| &pack[range.start as usize..range.end as usize];
    let h = Header::parse(&pack).expect("header");
    let (page, _) = h.ledger_page_of(seq).expect("page");
    let le = h
        .ledger_entry(at(h.ledger_page(page).expect("range")), seq)
        .expect("entry");
    let bytes = at(h.data_range(&le.record).expect("record"));
    if h.frames() {
        let dict = h
            .dict_range()
            .map(|r| ledgerstore_pack::DictReader::open(&h, at(r)).expect("dictionary"));
        let f = ledgerstore_pack::LedgerFrame::open(&h, &le, bytes, dict.as_ref()).expect("frame");
        return f.record().to_vec();
    }
    bytes.to_vec()
}

/// The published mark and its record hash.
fn mark(rt: &tokio::runtime::Runtime, r: &Remote) -> (u32, String) {
    let m = rt
        .block_on(r.newest_manifest())
        .expect("manifest")
        .expect("published");
    (m.mark, m.mark_record_sha256)
}

/// Ledgers `first..=last` of `s` with their cuts (skeleton records in
/// `indexed`), or `whole`, without them: the same bytes, stored whole (as
/// the gRPC ingest path stores a ledger given without cuts).
fn ingest_cut(store: &Ledgerstore, s: &Synth, first: u32, last: u32, whole: bool) {
    for seq in (first..=last).step_by(5) {
        let mut batch = s.cut_batch(seq, 5.min(last - seq + 1));
        if whole {
            batch.iter_mut().for_each(|l| l.cuts.clear());
        }
        store.ingest(&batch, Duration::ZERO).expect("ingest");
    }
    store.wait_for_segments().expect("segments");
}

#[test]
fn a_location_goes_on_across_forms_and_levels_of_one_history() {
    location_goes_on([PackForm::Entries; 5]);
}

/// The same in a store whose packs mix versions 2, 3 and 4 (the mark's
/// record read from any).
#[test]
fn a_location_goes_on_across_pack_versions() {
    location_goes_on([PackForm::Entries, FRAMES, FRAMES, PackForm::Entries, FRAMES]);
    location_goes_on([
        FRAMES_DICT,
        FRAMES,
        PackForm::Entries,
        FRAMES_DICT,
        FRAMES_DICT,
    ]);
}

/// `forms`: what the rounds of the old dir, the new one, the new one at
/// another level, the format-2 one after it and another history publish.
fn location_goes_on(forms: [PackForm; 5]) {
    let tmp = tempfile::tempdir().expect("tmp");
    let bucket = tmp.path().join("bucket");
    std::fs::create_dir_all(&bucket).expect("bucket");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let r = remote(&bucket);
    let s = Synth::new(SynthConfig::small(41, 6));

    // A format-2 dir at level 19, given the ledgers whole, publishes
    // first: its hash is of the stored frame of a whole record.
    let old = open(&tmp.path().join("old"), BodyForm::Records, 19);
    ingest_cut(&old, &s, 1, 25, true);
    round(&rt, &old, &r, &tmp.path().join("w-old"), forms[0]).expect("format 2 publishes");
    let (at, sha) = mark(&rt, &r);
    let frame = old.stored_ledger_value(at).expect("read").expect("stored");
    assert!(is_zstd_frame(&frame));
    assert_eq!(frame_version(&frame), 1, "a whole record");
    assert_eq!(sha, ledgerstore_pack::sha256(&frame));
    drop(old);

    // The same history re-ingested with its cuts into a format-3 dir at
    // level 3 goes on: neither hash matches (another form, another
    // level), what the records say does.
    let dir = tmp.path().join("new");
    let new = open(&dir, BodyForm::Blocks, 3);
    ingest_cut(&new, &s, 1, 35, false);
    let raw = new.stored_ledger_value(at).expect("read").expect("stored");
    assert_eq!(raw[0], 3, "a raw skeleton");
    assert_ne!(sha, ledgerstore_pack::sha256(&raw));
    assert_ne!(
        sha,
        ledgerstore_pack::sha256(&zstd_compress(&raw, 3).expect("zstd"))
    );
    round(&rt, &new, &r, &tmp.path().join("w-new"), forms[1]).expect("format 3 goes on");
    let (at, sha) = mark(&rt, &r);
    assert_eq!(at, 29);
    let raw = new.stored_ledger_value(at).expect("read").expect("stored");
    assert_eq!(sha, ledgerstore_pack::sha256(&raw), "the raw record's hash");
    let packed = pack_record(&bucket, &rt, &r, at);
    if forms[1] == PackForm::Entries {
        assert!(is_zstd_frame(&packed), "version-2 packs hold frames");
    } else {
        assert_eq!(packed, raw, "version 3 holds the record as stored");
    }
    drop(new);

    // Reopened at another level: its packs' frames change, its hash not.
    let new = open(&dir, BodyForm::Blocks, 9);
    ingest_cut(&new, &s, 36, 45, false);
    round(&rt, &new, &r, &tmp.path().join("w-new"), forms[2]).expect("a new level goes on");
    assert_eq!(mark(&rt, &r).0, 39);
    let rep = replica(&rt, &r, &tmp.path().join("cache"), 1 << 30);
    for seq in [1, 19, 29, 39] {
        let want = new.get_ledger(seq).expect("store").expect("stored");
        let got = ledgerstore_store::Reader::get_ledger(rep.as_ref(), seq)
            .expect("replica")
            .expect("published");
        assert_eq!(got.raw, want.raw, "ledger {seq}");
        assert_head(rep.as_ref(), &got);
    }
    drop(new);

    // A format-2 dir of the same history goes on after format-3 rounds.
    let back = open(&tmp.path().join("back"), BodyForm::Records, 3);
    ingest_cut(&back, &s, 1, 55, false);
    round(&rt, &back, &r, &tmp.path().join("w-back"), forms[3]).expect("format 2 goes on");
    assert_eq!(mark(&rt, &r).0, 49);
    drop(back);

    // Another history at the same location is still refused by name.
    let other = open(&tmp.path().join("other"), BodyForm::Blocks, 3);
    ingest_cut(&other, &Synth::new(SynthConfig::small(43, 6)), 1, 55, false);
    let e = round(&rt, &other, &r, &tmp.path().join("w-other"), forms[4]).expect_err("diverged");
    assert!(
        matches!(e, ColdError::Diverged(_))
            && e.to_string().contains("another writer's history")
            && e.to_string().contains("read from its pack"),
        "{e}"
    );
}

/// The version byte of a stored frame's record.
fn frame_version(frame: &[u8]) -> u8 {
    ledgerstore_db_api::ledger_record_bytes(frame).expect("frame")[0]
}

/// Where the hashes differ and the pack's record is damaged, the round
/// fails naming the pack, as damage, not as another history.
#[test]
fn a_damaged_mark_record_is_damage_not_another_history() {
    damaged_mark_record(PackForm::Entries);
}

#[test]
fn a_damaged_mark_ledger_frame_is_damage_not_another_history() {
    damaged_mark_record(FRAMES);
    damaged_mark_record(FRAMES_DICT);
}

fn damaged_mark_record(form: PackForm) {
    let tmp = tempfile::tempdir().expect("tmp");
    let bucket = tmp.path().join("bucket");
    std::fs::create_dir_all(&bucket).expect("bucket");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let r = remote(&bucket);
    let s = Synth::new(SynthConfig::small(47, 6));
    let old = open(&tmp.path().join("old"), BodyForm::Records, 19);
    ingest_cut(&old, &s, 1, 25, false);
    round(&rt, &old, &r, &tmp.path().join("w-old"), form).expect("publish");
    drop(old);
    let m = rt
        .block_on(r.newest_manifest())
        .expect("manifest")
        .expect("published");
    let p = m.pack_of(m.mark).expect("pack");
    let path = bucket.join(&p.object.key);
    let mut pack = std::fs::read(&path).expect("pack");
    let h = Header::parse(&pack).expect("header");
    let (page, _) = h.ledger_page_of(m.mark).expect("page");
    let range = h.ledger_page(page).expect("range");
    let le = h
        .ledger_entry(&pack[range.start as usize..range.end as usize], m.mark)
        .expect("entry");
    let at = h.data_range(&le.record).expect("record").start as usize + 20;
    pack[at] ^= 0x40;
    std::fs::write(&path, &pack).expect("write");
    let new = open(&tmp.path().join("new"), BodyForm::Blocks, 3);
    ingest_cut(&new, &s, 1, 25, false);
    let e = round(&rt, &new, &r, &tmp.path().join("w-new"), form).expect_err("damaged");
    assert!(
        matches!(&e, ColdError::Damaged { object, .. } if *object == p.object.key)
            && e.to_string()
                .contains("cannot tell whether this data dir continues manifest"),
        "{e}"
    );
}

/// The newest manifest.
fn newest(rt: &tokio::runtime::Runtime, r: &Remote) -> ledgerstore_pack::Manifest {
    rt.block_on(r.newest_manifest())
        .expect("manifest")
        .expect("published")
}

/// The versions of the newest manifest's packs, read from their headers.
fn pack_versions(bucket: &Path, rt: &tokio::runtime::Runtime, r: &Remote) -> Vec<u32> {
    let read = |key: &str| std::fs::read(bucket.join(key)).expect("pack");
    let m = newest(rt, r);
    let header =
        |p: &ledgerstore_pack::PackRef| Header::parse(&read(&p.object.key)).expect("header");
    m.packs.iter().map(|p| header(p).version).collect()
}

/// A bucket (a directory store) and a new format-3 store of synthetic
/// ledgers 1..=25 of `seed` (two closed ranges), with 10-ledger ranges.
struct Fixture {
    tmp: tempfile::TempDir,
    bucket: std::path::PathBuf,
    rt: tokio::runtime::Runtime,
    r: Arc<Remote>,
    store: Arc<Ledgerstore>,
    synth: Synth,
}

impl Fixture {
    fn new(seed: u64) -> Self {
        let tmp = tempfile::tempdir().expect("tmp");
        let bucket = tmp.path().join("bucket");
        std::fs::create_dir_all(&bucket).expect("bucket");
        let store = open(&tmp.path().join("dir"), BodyForm::Blocks, 3);
        let synth = Synth::new(SynthConfig::small(seed, 6));
        ingest_cut(&store, &synth, 1, 25, false);
        Self {
            r: remote(&bucket),
            rt: tokio::runtime::Runtime::new().expect("runtime"),
            tmp,
            bucket,
            store,
            synth,
        }
    }

    fn ingest(&self, first: u32, last: u32) {
        ingest_cut(&self.store, &self.synth, first, last, false);
    }

    fn publish(&self, form: impl Into<PackChoice>) -> Result<crate::PublishReport, ColdError> {
        let work = self.tmp.path().join("work");
        round(&self.rt, &self.store, &self.r, &work, form)
    }

    fn versions(&self) -> Vec<u32> {
        pack_versions(&self.bucket, &self.rt, &self.r)
    }
}

/// `[cold] pack_version` unset (the binary's default): a new store gets
/// version 4, and a store goes on in its newest pack's version, at the
/// settings' level (and, in version 4, budget), whatever wrote it.
#[test]
fn a_store_goes_on_in_its_own_pack_version() {
    let own = PackChoice::StoresOwn {
        level: 5,
        dict_kib: 128,
    };
    let frames = |dict_kib| PackForm::Frames { level: 5, dict_kib };
    for (first, want) in [
        (own, frames(128)),
        (PackForm::Entries.into(), PackForm::Entries),
        (FRAMES.into(), frames(0)),
        (FRAMES_DICT.into(), frames(128)),
    ] {
        let f = Fixture::new(53);
        let rep = f.publish(first).expect("first round");
        let v = want.version();
        assert_eq!(rep.pack_form.map(PackForm::version), Some(v));
        assert_eq!(f.versions(), [v; 2], "{first:?}");

        // Nothing new: no pack written (a round of event files alone reads
        // no header either: events_tests.rs).
        let rep = f.publish(own).expect("an idle round");
        assert_eq!((rep.version, rep.pack_form), (None, None));

        f.ingest(26, 45);
        let rep = f.publish(own).expect("the store's own");
        assert_eq!(rep.pack_form, Some(want), "{first:?}");
        assert_eq!(f.versions(), [v; 4], "{first:?}");
        let mut last = 39;
        if want == PackForm::Entries {
            // A store of mixed versions goes on in its newest pack's.
            f.ingest(46, 55);
            f.publish(FRAMES).expect("version 3 set");
            f.ingest(56, 65);
            let rep = f.publish(own).expect("the newest pack's");
            assert_eq!(rep.pack_form, Some(frames(0)));
            assert_eq!(f.versions(), [2, 2, 2, 2, 3, 3]);
            last = 59;
        }
        let replica = replica(&f.rt, &f.r, &f.tmp.path().join("cache"), 1 << 30);
        for seq in [1, 15, 29, 39, last] {
            let stored = f.store.get_ledger(seq).expect("store").expect("stored");
            let got = ledgerstore_store::Reader::get_ledger(replica.as_ref(), seq)
                .expect("replica")
                .unwrap_or_else(|| panic!("ledger {seq} after {first:?}: not published"));
            assert_eq!(got.raw, stored.raw, "ledger {seq} after {first:?}");
        }
    }
}

/// A newest pack whose header cannot be read or does not match the
/// manifest fails a round of the store's own version, naming the pack and
/// the setting that avoids the read (another pack's bytes under its key,
/// deleted, listing other bodies, damaged, or of a version this build does
/// not know), and a set version publishes past it.
#[test]
fn a_newest_pack_that_cannot_be_read_fails_the_round_by_name() {
    let own = PackChoice::StoresOwn {
        level: 3,
        dict_kib: 64,
    };
    let f = Fixture::new(59);
    f.publish(PackForm::Entries).expect("first round");
    let mut next = 26;
    for (damage, want) in [
        ("swapped", "its header says ledgers 1..=9, "),
        ("deleted", "not found in the published store (read because"),
        ("bodies", " bodies, "),
        ("CRC", "CRC-32 mismatch (read because"),
        ("newer", "is version 5, which this build does not know"),
    ] {
        let before = newest(&f.rt, &f.r).packs;
        let key = before.last().expect("a pack").object.key.clone();
        let path = f.bucket.join(&key);
        let mut pack = std::fs::read(&path).expect("pack");
        match damage {
            "swapped" => pack = std::fs::read(f.bucket.join(&before[0].object.key)).expect("pack"),
            "deleted" => std::fs::remove_file(&path).expect("delete"),
            "bodies" => {
                // A valid header (a frames pack's bodies shape no table)
                // that lists one body more than the manifest.
                let mut h = Header::parse(&pack).expect("header");
                assert!(h.frames(), "the pack the last round wrote");
                h.bodies += 1;
                pack[..64].copy_from_slice(&h.encode());
            }
            "CRC" => pack[20] ^= 1,
            _ => pack[8..12].copy_from_slice(&5u32.to_be_bytes()),
        }
        if damage != "deleted" {
            std::fs::write(&path, &pack).expect("damage");
        }
        f.ingest(next, next + 9);
        next += 10;
        let e = f.publish(own).expect_err(damage).to_string();
        assert!(e.contains(&key) && e.contains(want), "{damage}: {e}");
        assert!(e.contains("set cold.pack_version to"), "{damage}: {e}");
        f.publish(FRAMES).expect("a set version publishes");
        assert_eq!(
            newest(&f.rt, &f.r).packs.len(),
            before.len() + 1,
            "{damage}"
        );
    }
}
