//! A replica's index: published files adopted (checked, renamed in,
//! replacing the files they cover), expected ranges left unbuilt, and
//! the ledgers past them built from the store; answers equal to the
//! writer's.

use std::path::Path;
use std::sync::Arc;

use ledgerstore_store::Reader;

use crate::tests::{
    FIRST, LAST, WAIT, all_query, cfg, drain, limits, open_built, pubnet_ledgers, store_with,
};
use crate::{EventStore, EventsConfig, FileInfo};

fn replica(
    dir: &Path,
    reader: Arc<dyn Reader>,
    c: EventsConfig,
    expected: Vec<(u32, u32)>,
) -> EventStore {
    let source: crate::ExpectedRanges = Arc::new(move |_| expected.clone());
    EventStore::open_expecting(dir, reader, c, Some(source)).expect("open replica index")
}

fn fetch(ev: &EventStore, f: &FileInfo) -> std::path::PathBuf {
    let p = ev.fetch_path(f.first, f.last);
    std::fs::copy(&f.path, &p).expect("copy");
    p
}

fn ranges(ev: &EventStore) -> Vec<(u32, u32)> {
    ev.files().iter().map(|f| (f.first, f.last)).collect()
}

#[test]
fn a_replica_leaves_expected_ranges_to_adoption_and_builds_past_them() {
    let f = store_with(&pubnet_ledgers());
    let writer = open_built(&f);
    assert!(writer.wait_round(WAIT));
    let published = writer.files();
    assert_eq!(
        published
            .iter()
            .map(|p| (p.first, p.last))
            .collect::<Vec<_>>(),
        vec![(FIRST, 63_092_991), (63_092_992, 63_092_999)]
    );
    let want = drain(&writer, &all_query(vec![]), || limits(1000, usize::MAX)).0;
    assert!(want.len() > 10_000, "{}", want.len());

    // The first file is on its way: the builder indexes only past it.
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("replica-events");
    let rep = replica(&dir, f.store.clone(), cfg(), vec![(FIRST, 63_092_991)]);
    assert!(rep.wait_round(WAIT));
    assert!(rep.wait_round(WAIT));
    let st = rep.stats();
    assert_eq!(st.built_files, 2, "{st:?}");
    assert_eq!(ranges(&rep), vec![(63_092_992, 63_092_999)]);
    assert_eq!(
        rep.indexed_through(),
        None,
        "the first ledger is not indexed yet"
    );
    let page = rep
        .query(
            &all_query(vec![]),
            crate::tests::start(FIRST),
            LAST + 1,
            &limits(10, usize::MAX),
        )
        .expect("query");
    assert!(page.events.is_empty() && page.resume.is_none(), "{page:?}");

    // A damaged copy, and a file for another range, are refused and
    // deleted.
    let first = &published[0];
    let p = rep.fetch_path(first.first, first.last);
    let mut bytes = std::fs::read(&first.path).expect("read");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5A;
    std::fs::write(&p, &bytes).expect("write");
    let e = rep.adopt(first.first, first.last, &p).expect_err("damaged");
    assert!(e.to_string().contains(&p.display().to_string()), "{e}");
    assert!(!p.exists());
    let p = fetch(&rep, first);
    let e = rep
        .adopt(first.first, 63_092_995, &p)
        .expect_err("another range");
    assert!(
        e.to_string()
            .contains("holds ledgers 63092982..=63092991; expected 63092982..=63092995"),
        "{e}"
    );
    assert!(!p.exists());

    // The real one is adopted; the second is already covered.
    let p = fetch(&rep, first);
    assert!(rep.adopt(first.first, first.last, &p).expect("adopt"));
    assert!(!p.exists());
    let p = fetch(&rep, &published[1]);
    assert!(
        !rep.adopt(published[1].first, published[1].last, &p)
            .expect("covered")
    );
    assert!(!p.exists());
    rep.expect(None);
    assert!(rep.wait_indexed_through(LAST, WAIT), "{:?}", rep.stats());
    let st = rep.stats();
    assert_eq!((st.built_files, st.adopted_files), (2, 1), "{st:?}");
    let got = drain(&rep, &all_query(vec![]), || limits(700, usize::MAX)).0;
    assert_eq!(got, want);

    // A second process cannot open the dir while the replica has it.
    let e = EventStore::open(&dir, f.store.clone(), cfg()).expect_err("locked");
    assert!(e.to_string().contains("in use by another process"), "{e}");

    // Reopened, the replica's dir holds the adopted file as its own.
    rep.close();
    let rep = replica(&dir, f.store.clone(), cfg(), Vec::new());
    assert!(rep.wait_indexed_through(LAST, WAIT));
    assert_eq!(rep.stats().built_files, 0);
    assert_eq!(
        drain(&rep, &all_query(vec![]), || limits(1000, usize::MAX)).0,
        want
    );
}

#[test]
fn an_adopted_file_replaces_the_smaller_files_it_covers() {
    let f = store_with(&pubnet_ledgers());
    let writer = open_built(&f);
    assert!(writer.wait_round(WAIT));
    let published = writer.files();
    let want = drain(&writer, &all_query(vec![]), || limits(1000, usize::MAX)).0;

    // A replica that does not merge keeps its level-0 files.
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("replica-events");
    let no_merge = EventsConfig {
        max_file_events: 1,
        ..cfg()
    };
    let rep = replica(&dir, f.store.clone(), no_merge, Vec::new());
    assert!(rep.wait_indexed_through(LAST, WAIT));
    assert!(rep.wait_round(WAIT));
    let before = ranges(&rep);
    assert_eq!(before.len(), 5, "{before:?}");
    let inside: Vec<&(u32, u32)> = before.iter().filter(|r| r.1 <= 63_092_991).collect();
    assert_eq!(inside.len(), 3, "{before:?}");

    let p = fetch(&rep, &published[0]);
    assert!(
        rep.adopt(published[0].first, published[0].last, &p)
            .expect("adopt")
    );
    assert_eq!(
        ranges(&rep),
        vec![
            (FIRST, 63_092_991),
            (63_092_992, 63_092_995),
            (63_092_996, 63_092_999)
        ]
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "EVENTS",
            "LOCK",
            "ev-0063092982-0063092991.idx",
            "ev-0063092992-0063092995.idx",
            "ev-0063092996-0063092999.idx"
        ]
    );
    assert_eq!(rep.indexed_through(), Some(LAST));
    assert_eq!(
        drain(&rep, &all_query(vec![]), || limits(333, usize::MAX)).0,
        want
    );
}
