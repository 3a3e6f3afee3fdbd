//! Event index files published beside the packs: the writer's files that
//! lie inside the published range, contiguous from its first ledger,
//! listed and uploaded once; a damaged or vanished file ends the list; a
//! round without the writer's index keeps the previous list; an index
//! that catches up after the packs were published makes a new manifest.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use ledgerstore_event_index::EventIndexBuilder;
use ledgerstore_pack::EventsGeometry;
use ledgerstore_pack::manifest::events_key;
use ledgerstore_synth::{Synth, SynthConfig};

use crate::tests::{ingest, open, remote, replica};
use crate::{LocalEventFile, LocalEvents, PackChoice, publish, publish_as, publish_with};

/// An (empty) event index file of `first..=last` in `dir`.
fn event_file(dir: &Path, first: u32, last: u32) -> LocalEventFile {
    let path = dir.join(format!("ev-{first:010}-{last:010}.idx"));
    EventIndexBuilder::new(first, last)
        .expect("builder")
        .finish(&path)
        .expect("write");
    LocalEventFile {
        first,
        last,
        events: 0,
        path,
    }
}

fn local(files: &[&LocalEventFile]) -> Option<LocalEvents> {
    Some(LocalEvents {
        geometry: EventsGeometry {
            file_ledgers: 4,
            fan_out: 2,
        },
        files: files.iter().map(|f| (*f).clone()).collect(),
    })
}

/// A temp dir and in it a data dir's path, a bucket and an events dir
/// (both made).
fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().expect("tmp");
    let at = |name: &str| tmp.path().join(name);
    let (data, bucket, ev) = (at("data"), at("bucket"), at("events"));
    std::fs::create_dir_all(&bucket).expect("bucket");
    std::fs::create_dir_all(&ev).expect("events");
    (tmp, data, bucket, ev)
}

fn listed(m: &ledgerstore_pack::Manifest) -> Vec<(u32, u32)> {
    m.events.iter().map(|e| (e.first, e.last)).collect()
}

#[test]
fn event_files_inside_the_published_range_are_listed_once_and_kept() {
    let (tmp, data, bucket, ev) = dirs();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let s = Synth::new(SynthConfig::small(11, 8));
    let store = open(&data);
    ingest(&store, &s, 1, 45);
    let r = remote(&bucket);
    let work = data.join("publish");

    let w: Vec<LocalEventFile> = [(1, 3), (4, 7), (8, 15), (16, 19), (20, 23), (24, 27)]
        .into_iter()
        .chain([(28, 31), (32, 35), (36, 39), (40, 43)])
        .map(|(a, b)| event_file(&ev, a, b))
        .collect();
    let all: Vec<&LocalEventFile> = w.iter().collect();

    // The index has built two files so far: they are listed.
    let one = rt
        .block_on(publish_with(store.clone(), &r, &work, local(&all[..2])))
        .expect("publish");
    assert_eq!(one.version, Some(1));
    let rep = replica(&rt, &r, &tmp.path().join("c0"), 1 << 30);
    let m = rep.manifest().expect("manifest");
    assert_eq!(listed(&m), vec![(1, 3), (4, 7)]);
    assert_eq!(
        m.events_geometry,
        Some(EventsGeometry {
            file_ledgers: 4,
            fan_out: 2
        })
    );
    let sha = ledgerstore_pack::sha256_file(&w[0].path).expect("sha");
    assert_eq!(m.events[0].object.key, events_key(1, 3, &sha));
    assert!(bucket.join(&m.events[0].object.key).exists());

    // It caught up, with no new pack: a new manifest lists its files up
    // to the mark (39), not past it.
    let two = rt
        .block_on(publish_with(store.clone(), &r, &work, local(&all)))
        .expect("publish");
    assert_eq!((two.version, two.packs.len()), (Some(2), 0));
    rt.block_on(rep.refresh()).expect("refresh");
    let m2 = rep.manifest().expect("manifest");
    assert_eq!(m2.events_through(), Some(39));
    assert_eq!(m2.packs, m.packs);
    assert_eq!(m2.events[..2], m.events[..]);
    let again = rt
        .block_on(publish_with(store.clone(), &r, &work, local(&all)))
        .expect("again");
    assert_eq!((again.version, again.uploaded), (None, 0));
    let plain = rt
        .block_on(publish(store.clone(), &r, &work))
        .expect("plain");
    assert_eq!(plain.version, None);

    // Four files merged into one; more ledgers; a damaged file ends the
    // list (the files after it wait for its rebuild).
    let merged = event_file(&ev, 16, 31);
    for f in &w[3..7] {
        std::fs::remove_file(&f.path).expect("merged away");
    }
    ingest(&store, &s, 46, 62);
    let (f44, f48, f52, f56) = (
        event_file(&ev, 44, 47),
        event_file(&ev, 48, 51),
        event_file(&ev, 52, 55),
        event_file(&ev, 56, 59),
    );
    let mut bad = std::fs::read(&f52.path).expect("read");
    let at = bad.len() / 2;
    bad[at] ^= 0x11;
    std::fs::write(&f52.path, &bad).expect("damage");
    let now = [
        &w[0], &w[1], &w[2], &merged, &w[7], &w[8], &w[9], &f44, &f48, &f52, &f56,
    ];
    let three = rt
        .block_on(publish_with(store.clone(), &r, &work, local(&now)))
        .expect("publish");
    assert_eq!(three.version, Some(3));
    assert_eq!(three.damaged_events, vec![(52, 55)]);
    // With no new pack, the damaged file makes no new manifest, round
    // after round.
    for _ in 0..2 {
        let same = rt
            .block_on(publish_with(store.clone(), &r, &work, local(&now)))
            .expect("publish");
        assert_eq!((same.version, same.uploaded), (None, 0));
        assert_eq!(same.damaged_events, vec![(52, 55)]);
    }
    rt.block_on(rep.refresh()).expect("refresh");
    let m3 = rep.manifest().expect("manifest");
    assert_eq!(m3.mark, 59);
    assert_eq!(
        listed(&m3),
        vec![
            (1, 3),
            (4, 7),
            (8, 15),
            (16, 31),
            (32, 35),
            (36, 39),
            (40, 43),
            (44, 47),
            (48, 51)
        ]
    );
    assert_eq!(m3.events[0], m2.events[0], "an unchanged file is reused");

    // A new file listed but gone (merged between the listing and the
    // upload) ends the list too.
    std::fs::remove_file(&f52.path).expect("gone");
    ingest(&store, &s, 63, 75);
    let four = rt
        .block_on(publish_with(store.clone(), &r, &work, local(&now)))
        .expect("publish");
    assert_eq!(four.version, Some(4));
    rt.block_on(rep.refresh()).expect("refresh");
    assert_eq!(rep.manifest().expect("manifest").events, m3.events);

    // An index rebuilding from scratch (fewer files) and a round without
    // the index keep the last list.
    ingest(&store, &s, 76, 85);
    let five = rt
        .block_on(publish_with(store.clone(), &r, &work, local(&all[..2])))
        .expect("publish");
    assert_eq!(five.version, Some(5));
    rt.block_on(rep.refresh()).expect("refresh");
    assert_eq!(rep.manifest().expect("manifest").events, m3.events);
    ingest(&store, &s, 86, 95);
    let six = rt
        .block_on(publish(store.clone(), &r, &work))
        .expect("publish");
    assert_eq!(six.version, Some(6));
    rt.block_on(rep.refresh()).expect("refresh");
    assert_eq!(rep.manifest().expect("manifest").events, m3.events);
}

/// A round that publishes only event files writes no pack, so it reads no
/// pack header to choose a pack version: with the store's own version
/// and its newest pack gone, it still publishes them.
#[test]
fn a_round_of_event_files_alone_reads_no_pack_header() {
    let (_tmp, data, bucket, ev) = dirs();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let store = open(&data);
    ingest(&store, &Synth::new(SynthConfig::small(13, 8)), 1, 45);
    let r = remote(&bucket);
    let work = data.join("publish");
    let w: Vec<LocalEventFile> = [(1, 3), (4, 7), (8, 15)]
        .into_iter()
        .map(|(a, b)| event_file(&ev, a, b))
        .collect();
    let all: Vec<&LocalEventFile> = w.iter().collect();
    let own = PackChoice::StoresOwn {
        level: 3,
        dict_kib: 64,
    };
    let round = |files: &[&LocalEventFile]| {
        let stop = Arc::new(AtomicBool::new(false));
        rt.block_on(publish_as(
            store.clone(),
            &r,
            &work,
            local(files),
            stop,
            own,
        ))
    };
    let one = round(&all[..2]).expect("packs and two files");
    assert!(!one.packs.is_empty() && one.pack_form.is_some(), "{one:?}");
    let m = rt
        .block_on(r.newest_manifest())
        .expect("read")
        .expect("one");
    let newest = &m.packs.last().expect("a pack").object.key;
    std::fs::remove_file(bucket.join(newest)).expect("delete the newest pack");
    let two = round(&all).expect("event files alone");
    assert_eq!(
        (two.version, two.packs.len(), two.pack_form),
        (Some(2), 0, None)
    );
    let m = rt
        .block_on(r.newest_manifest())
        .expect("read")
        .expect("two");
    assert_eq!(listed(&m), vec![(1, 3), (4, 7), (8, 15)]);
}
