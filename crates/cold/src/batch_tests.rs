//! Batched lookups of a replica (`replica_batch.rs`): the same answers as
//! one lookup per hash, in a few sequential object-store round trips
//! rather than one per hash, and stopped by their deadline.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{Layout, LedgerInput, TxHash, TxRecord};
use ledgerstore_pack::PackRef;
use ledgerstore_store::{
    DictOptions, IndexedOptions, Ledgerstore, Reader, StoreError, StoreOptions, StoreResult,
    with_read_deadline,
};
use ledgerstore_synth::{Synth, SynthConfig};
use object_store::local::LocalFileSystem;

use crate::faulty::Faulty;
use crate::{DiskCache, HeldMemory, PackForm, Remote, Replica, publish_as};

/// Transactions per ledger.
const TXS: usize = 8;
/// Ledgers ingested; 1..=69 are published (closed ranges of 10).
const LAST: u32 = 75;
const PUBLISHED: u32 = 69;

/// A distinct 32-byte alias (a fee bump's inner hash) for `hash`.
fn alias_of(hash: &[u8]) -> Vec<u8> {
    hash.iter().map(|b| !b).collect()
}

/// Ledger `seq`, where every third transaction has an alias.
fn ledger(s: &Synth, seq: u32) -> LedgerInput {
    let mut l = s.ledger(seq);
    for (i, t) in l.txs.iter_mut().enumerate() {
        if i % 3 == 1 {
            t.alias = Some(alias_of(&t.hash));
        }
    }
    l
}

fn h(bytes: &[u8]) -> TxHash {
    TxHash::from_slice(bytes).expect("32 bytes")
}

struct World {
    tmp: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    s: Synth,
    store: Arc<Ledgerstore>,
    bucket: std::path::PathBuf,
    faulty: Arc<Faulty>,
    remote: Arc<Remote>,
}

impl World {
    fn new() -> Self {
        Self::publishing(PackForm::default())
    }

    /// The world, its packs written in `form`.
    fn publishing(form: PackForm) -> Self {
        let tmp = tempfile::tempdir().expect("tmp");
        let bucket = tmp.path().join("bucket");
        std::fs::create_dir_all(&bucket).expect("bucket");
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let s = Synth::new(SynthConfig::small(41, TXS as u32));
        let opts = StoreOptions {
            layout: Some(Layout::Indexed),
            indexed: IndexedOptions {
                range_ledgers: 10,
                merge_fanout: 2,
                merge_levels: 1,
                dict: Some(DictOptions {
                    train_after_txs: 60,
                    samples: 60,
                    max_bytes: 4 << 10,
                    retrain_every_txs: 0,
                }),
                ..IndexedOptions::default()
            },
            ..StoreOptions::default()
        };
        let data = tmp.path().join("data");
        let store =
            Arc::new(Ledgerstore::open(&data, opts, &Backends::for_tests()).expect("open store"));
        for first in (1..=LAST).step_by(5) {
            let batch: Vec<_> = (first..=LAST.min(first + 4))
                .map(|seq| ledger(&s, seq))
                .collect();
            store.ingest(&batch, Duration::ZERO).expect("ingest");
        }
        store.wait_for_segments().expect("segments");
        let fs = LocalFileSystem::new_with_prefix(&bucket).expect("local store");
        let faulty = Faulty::new(Arc::new(fs));
        let remote = Arc::new(Remote::new(faulty.clone(), "s3://bucket/prefix"));
        let report = rt
            .block_on(publish_as(
                Arc::clone(&store),
                &remote,
                &data.join("publish"),
                None,
                Arc::new(AtomicBool::new(false)),
                form,
            ))
            .expect("publish");
        assert_eq!(report.mark, Some(PUBLISHED));
        Self {
            tmp,
            rt,
            s,
            store,
            bucket,
            faulty,
            remote,
        }
    }

    /// A replica with an empty cache (its manifest and dictionaries read).
    fn replica(&self, name: &str) -> Arc<Replica> {
        self.replica_holding(name, HeldMemory::default())
    }

    /// [`Self::replica`], keeping `held` in memory.
    fn replica_holding(&self, name: &str, held: HeldMemory) -> Arc<Replica> {
        self.replica_caching(name, held, 1 << 30)
    }

    /// [`Self::replica_holding`] with a disk cache of `cache_bytes`.
    fn replica_caching(&self, name: &str, held: HeldMemory, cache_bytes: u64) -> Arc<Replica> {
        let cache = DiskCache::open(&self.tmp.path().join(name), cache_bytes).expect("cache");
        let rep = Replica::with_memory(
            Arc::clone(&self.remote),
            cache,
            self.rt.handle().clone(),
            held,
        );
        self.rt.block_on(rep.refresh()).expect("refresh");
        rep
    }

    fn tx(&self, seq: u32, i: usize) -> TxHash {
        h(&self.s.ledger(seq).txs[i].hash)
    }

    fn inner(&self, seq: u32, i: usize) -> TxHash {
        h(&alias_of(&self.s.ledger(seq).txs[i].hash))
    }

    /// Whether a GET waits on a hold ([`Faulty::hold_range`]) within 10
    /// s.
    fn a_get_waits(&self) -> bool {
        for _ in 0..2000 {
            if self.faulty.held() > 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// `n` published transactions, spread over the packs out of order.
    fn spread(&self, n: usize) -> Vec<TxHash> {
        let all = PUBLISHED as usize * TXS;
        assert!(n <= all);
        // 7 is prime to `all` (552): a permutation of the published txs.
        (0..n)
            .map(|k| {
                let j = (k * 7 + 3) % all;
                self.tx(1 + (j / TXS) as u32, j % TXS)
            })
            .collect()
    }
}

/// The answers of one `get_tx` per hash, as a batch answers: the records
/// in order, or the first failure.
fn one_by_one(rep: &Replica, hashes: &[TxHash]) -> Result<Vec<Option<TxRecord>>, StoreError> {
    hashes.iter().map(|h| Reader::get_tx(rep, h)).collect()
}

fn text<T: std::fmt::Debug>(r: &Result<T, StoreError>) -> String {
    match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) => format!("Err({e:?})"),
    }
}

#[test]
fn a_cold_batch_of_500_reads_its_bodies_in_a_few_round_trips_not_one_per_hash() {
    cold_batch_of_500(PackForm::Entries);
}

#[test]
fn a_cold_batch_of_500_from_ledger_frames_reads_them_in_a_few_round_trips() {
    cold_batch_of_500(PackForm::Frames {
        level: 3,
        dict_kib: 0,
    });
}

#[test]
fn a_cold_batch_of_500_from_frames_with_dictionaries_reads_them_in_a_few_round_trips() {
    cold_batch_of_500(PackForm::Frames {
        level: 3,
        dict_kib: 64,
    });
}

fn cold_batch_of_500(form: PackForm) {
    let w = World::publishing(form);
    let hashes = w.spread(500);
    let want: Vec<_> = hashes
        .iter()
        .map(|h| Some(w.store.get_tx(h).expect("store").expect("stored")))
        .collect();

    // Every GET waits 20 ms, as a real object store's do: one after
    // another, the 500 bodies alone would take 10 s.
    let delay = Duration::from_millis(20);
    let rep = w.replica("cold");
    w.faulty.delay_gets(Some(delay));
    w.faulty.reset_flights();
    let (gets, bytes) = w.remote.reads();
    let t = Instant::now();
    let got = Reader::batch_get_txs(&*rep, &hashes).expect("batch");
    let took = t.elapsed();
    let (in_flight, peak, rounds) = w.faulty.flights();
    let (gets_after, bytes_after) = w.remote.reads();
    eprintln!(
        "cold batch of {}: {} GETs ({} bytes), {rounds} sequential rounds, {peak} GETs at \
         once at most, {took:?}",
        hashes.len(),
        gets_after - gets,
        bytes_after - bytes,
    );
    assert!(got == want, "the batch answers as the store does");
    assert_eq!(in_flight, 0);
    // Timing-free: a GET that starts while none is in flight is a round
    // trip the batch waited for. One lookup per hash makes one per GET,
    // over 500; the batch makes one per segment it downloads (a few)
    // plus one per phase.
    assert!(
        rounds <= 50,
        "{rounds} sequential round trips for 500 hashes (one per hash: 500 and more)"
    );
    assert!(peak >= 2, "GETs in flight together: {peak}");
    // With a wide margin: one round trip per hash cannot take less than
    // 500 × 20 ms = 10 s; the batch takes well under a second.
    assert!(
        took < Duration::from_secs(5),
        "a cold batch of 500 took {took:?}"
    );

    // Warm, it makes no request.
    w.faulty.delay_gets(None);
    let before = w.remote.reads();
    assert!(Reader::batch_get_txs(&*rep, &hashes).expect("warm") == want);
    assert_eq!(w.remote.reads(), before);
}

/// A batch keeps at most `replica.batch_gets_in_flight` GETs in flight:
/// one at a time is one round trip a GET; more let its phases overlap
/// them. The answers are the same.
#[test]
fn a_batch_keeps_its_setting_of_gets_in_flight() {
    let w = World::publishing(PackForm::Frames {
        level: 3,
        dict_kib: 64,
    });
    let hashes = w.spread(300);
    let want: Vec<_> = hashes
        .iter()
        .map(|h| Some(w.store.get_tx(h).expect("store").expect("stored")))
        .collect();
    // Each GET waits, so the ones a batch lets run together overlap.
    w.faulty.delay_gets(Some(Duration::from_millis(5)));
    let mut seen = Vec::new();
    for n in [1, 3, 1024] {
        let rep = w.replica_holding(
            &format!("gets-{n}"),
            HeldMemory {
                batch_gets: n,
                ..HeldMemory::default()
            },
        );
        w.faulty.reset_flights();
        let (gets, _) = w.remote.reads();
        assert!(Reader::batch_get_txs(&*rep, &hashes).expect("batch") == want);
        let (in_flight, peak, rounds) = w.faulty.flights();
        let made = w.remote.reads().0 - gets;
        eprintln!("{n} in flight at most: {made} GETs, {peak} at once, {rounds} round trips");
        assert_eq!(in_flight, 0);
        assert!(peak as usize <= n, "{peak} GETs at once, {n} allowed");
        seen.push((made, peak, rounds));
    }
    let [
        (made1, peak1, rounds1),
        (_, peak3, _),
        (made_all, peak_all, rounds_all),
    ] = seen[..]
    else {
        unreachable!()
    };
    assert_eq!((peak1, rounds1), (1, made1), "one GET a round trip");
    assert_eq!(peak3, 3);
    assert_eq!(made_all, made1, "the same GETs");
    assert!(
        peak_all > 3 && rounds_all < rounds1,
        "{peak_all} at once, {rounds_all} round trips"
    );
}

#[test]
fn a_batch_answers_exactly_what_one_lookup_per_hash_answers() {
    batch_answers_as_lookups(PackForm::Entries);
}

#[test]
fn a_batch_from_ledger_frames_answers_exactly_what_one_lookup_per_hash_answers() {
    batch_answers_as_lookups(PackForm::Frames {
        level: 3,
        dict_kib: 0,
    });
    batch_answers_as_lookups(PackForm::Frames {
        level: 3,
        dict_kib: 64,
    });
}

fn batch_answers_as_lookups(form: PackForm) {
    let w = World::publishing(form);
    let absent = |n: u8| TxHash([n; 32]);
    let mut hashes = vec![
        w.tx(3, 0),
        w.inner(3, 1),
        absent(1),
        w.tx(3, 1),
        w.inner(27, 4),
        w.tx(50, 7),
        w.tx(3, 0),
        absent(2),
        w.inner(3, 1),
        w.tx(PUBLISHED + 1, 0),
        w.inner(PUBLISHED + 2, 1),
        w.tx(12, 5),
    ];
    hashes.extend(w.spread(200));

    // Cold and warm replicas, batch first or lookups first: the same.
    let batch_first = w.replica("a");
    let got = Reader::batch_get_txs(&*batch_first, &hashes);
    let lookups = w.replica("b");
    let want = one_by_one(&lookups, &hashes);
    assert_eq!(text(&got), text(&want));
    let want = want.expect("no damage yet");
    assert_eq!(want[2], None);
    assert_eq!(want[9], None, "not published");
    assert_eq!(want[1], want[3], "an inner hash answers its fee bump");
    assert_eq!(
        Reader::batch_get_txs(&*lookups, &hashes).expect("warm"),
        want
    );
    assert_eq!(one_by_one(&batch_first, &hashes).expect("warm"), want);
    // Keeping no frame and no dictionary in memory changes no answer.
    let none = HeldMemory {
        frames: 0,
        dicts: 0,
        ..HeldMemory::default()
    };
    let bare = w.replica_holding("bare", none);
    assert_eq!(Reader::batch_get_txs(&*bare, &hashes).expect("bare"), want);
    assert_eq!(one_by_one(&bare, &hashes).expect("bare"), want);
    let bare = w.replica_holding("bare-lookups", none);
    assert_eq!(one_by_one(&bare, &hashes).expect("bare, lookups"), want);
    assert_eq!(Reader::batch_get_txs(&*bare, &hashes).expect("bare"), want);
    // Each version-4 pack's dictionary is opened once while memory holds
    // them all (every pack was looked up, twice, one read at a time, so
    // no two reads missed one at once), and again and again when it
    // holds none; what is held is counted and bounded.
    let dicts = matches!(form, PackForm::Frames { dict_kib, .. } if dict_kib > 0);
    let (held, none) = (lookups.figures(), bare.figures());
    assert_eq!(held.packs, 7);
    let opens = if dicts { held.packs } else { 0 };
    assert_eq!(
        (held.pack_dict_opens, held.pack_dict_limit_bytes),
        (opens, 64 << 20)
    );
    assert_eq!(held.pack_dict_bytes > 0, dicts, "{held:?}");
    assert!(held.pack_dict_bytes <= opens * (128 << 10), "{held:?}");
    assert_eq!((none.pack_dict_bytes, none.pack_dict_limit_bytes), (0, 0));
    assert_eq!(none.pack_dict_opens > 2 * opens, dicts, "{none:?}");
    // Reading a ledger a round changes no answer either, cold or warm.
    let rounds = HeldMemory {
        batch: 1,
        ..HeldMemory::default()
    };
    let small = w.replica_holding("small", rounds);
    assert_eq!(
        Reader::batch_get_txs(&*small, &hashes).expect("small"),
        want
    );
    assert_eq!(
        Reader::batch_get_txs(&*small, &hashes).expect("small"),
        want
    );

    // Damage one body (ledger 12's fifth) in the pack of 10..=19 (in a
    // pack of frames, ledger 12's frame, so all its bodies): a batch that
    // needs it fails as the lookup of that hash does (DATA_LOSS naming the
    // pack), whichever replica and cache state.
    let m =
        w.rt.block_on(w.remote.newest_manifest())
            .expect("read")
            .expect("published");
    let pack = m.pack_of(12).expect("pack").object.key.clone();
    let path = w.bucket.join(&pack);
    let mut bytes = std::fs::read(&path).expect("pack");
    let hd = ledgerstore_pack::Header::parse(&bytes).expect("header");
    let target = w
        .store
        .get_tx(&w.tx(12, 5))
        .expect("store")
        .expect("stored");
    let lt = hd.ledger_table as usize + 24 * 2;
    let be64 = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8")) as usize;
    let be32 = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4")) as usize;
    let at = if hd.frames() {
        be64(lt) + be32(lt + 8) / 2
    } else {
        let first_body = be32(lt + 16);
        be64(hd.body_table as usize + 16 * (first_body + target.index as usize)) + 40
    };
    bytes[at] ^= 0x5a;
    std::fs::write(&path, &bytes).expect("damage");

    let cold = w.replica("c");
    let got = Reader::batch_get_txs(&*cold, &hashes);
    match &got {
        Err(StoreError::RemoteDamaged { object, detail }) if hd.frames() => {
            assert_eq!(object, &pack);
            assert!(
                detail.contains("ledger 12: ") && detail.contains("CRC-32"),
                "{detail}"
            );
        }
        Err(StoreError::RemoteDamaged { object, detail }) => {
            assert_eq!(object, &pack);
            assert!(detail.contains("ledger 12 body"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    let lookups = w.replica("d");
    assert_eq!(text(&got), text(&one_by_one(&lookups, &hashes)));
    let small = w.replica_holding("small-damaged", rounds);
    assert_eq!(text(&Reader::batch_get_txs(&*small, &hashes)), text(&got));
    // Warm replicas (the damaged piece is not kept): the same.
    assert_eq!(text(&Reader::batch_get_txs(&*lookups, &hashes)), text(&got));
    assert_eq!(text(&one_by_one(&cold, &hashes)), text(&got));
    // Without the damaged hashes (in a pack of frames, every one of
    // ledger 12), the rest answers.
    let damaged: Vec<TxHash> = if hd.frames() {
        (0..TXS)
            .flat_map(|i| [w.tx(12, i), w.inner(12, i)])
            .collect()
    } else {
        vec![w.tx(12, 5)]
    };
    let rest: Vec<TxHash> = hashes
        .iter()
        .copied()
        .filter(|h| !damaged.contains(h))
        .collect();
    let got = Reader::batch_get_txs(&*cold, &rest).expect("undamaged");
    assert_eq!(got, one_by_one(&lookups, &rest).expect("undamaged"));

    // The pack of 20..=29 missing: its hashes fail as they do one by one,
    // naming it; the first failure in the order asked is the batch's.
    let gone = m.pack_of(25).expect("pack").object.key.clone();
    std::fs::remove_file(w.bucket.join(&gone)).expect("remove");
    let order = [w.tx(5, 0), w.inner(27, 4), w.tx(12, 5), absent(3)];
    let (a, b) = (w.replica("e"), w.replica("f"));
    let got = Reader::batch_get_txs(&*a, &order);
    assert_eq!(text(&got), text(&one_by_one(&b, &order)));
    assert!(text(&got).contains(&gone), "{}", text(&got));
}

/// A world of version-4 packs and a replica with room for one dictionary
/// (~91 KiB each here) and no frame, holding the dictionary of the pack
/// of `late` (ledger 55); `early` lies in ledger 12's, and `want` is what
/// a batch of `[late, early]` answers.
fn one_dictionary_of_room() -> (World, Arc<Replica>, [TxHash; 2], Vec<Option<TxRecord>>) {
    let (w, rep) = a_replica_of_dictionary_packs(
        "one",
        HeldMemory {
            frames: 0,
            dicts: 150 << 10,
            ..HeldMemory::default()
        },
    );
    let (early, late) = (w.tx(12, 0), w.tx(55, 0));
    let want: Vec<_> = [late, early]
        .iter()
        .map(|h| Some(w.store.get_tx(h).expect("store").expect("stored")))
        .collect();
    assert_eq!(Reader::get_tx(&*rep, &late).expect("late"), want[0]);
    assert_eq!(rep.figures().pack_dict_opens, 1);
    (w, rep, [early, late], want)
}

/// A batch keeps in hand no dictionary memory held when it began: one
/// that another reader's pushed out while the batch waited on its
/// fetches is read and opened again when the batch reaches its pack,
/// rather than kept alive past `replica.dict_memory_mb` for the batch.
#[test]
fn a_batch_keeps_no_held_dictionary_in_hand_while_it_waits() {
    let (w, rep, [early, late], want) = one_dictionary_of_room();
    let other = w.tx(33, 0);
    // The batch fetches the earlier pack's dictionary; that GET waits.
    let m = rep.manifest().expect("a manifest");
    let p = m.pack_of(12).expect("a pack").clone();
    let pack = std::fs::read(w.bucket.join(&p.object.key)).expect("pack");
    let dict = ledgerstore_pack::Header::parse(&pack)
        .expect("header")
        .dict_range()
        .expect("a dictionary");
    w.faulty.hold_range(Some((&p.object.key, dict.start)));
    let batch = {
        let rep = Arc::clone(&rep);
        std::thread::spawn(move || Reader::batch_get_txs(&*rep, &[late, early]))
    };
    let holding = w.a_get_waits();
    // Meanwhile a lookup in a third pack takes the only room.
    let third = holding.then(|| Reader::get_tx(&*rep, &other));
    w.faulty.hold_range(None);
    assert!(holding, "the batch's dictionary GET never started");
    assert!(third.expect("held").expect("third").is_some());
    let got = batch.join().expect("the batch's thread").expect("batch");
    assert!(got == want);
    // The later pack's dictionary was opened again (4: late, third,
    // late again, early); kept in hand since the batch began, it would
    // not have been (3).
    let f = rep.figures();
    assert_eq!(f.pack_dict_opens, 4, "{f:?}");
}

/// A batch opens the packs whose dictionary memory holds first, from
/// memory, and only then the ones whose dictionary it fetched: those
/// would otherwise take the room of the held ones before their packs are
/// reached, and have them read and opened again.
#[test]
fn a_batch_uses_the_dictionaries_memory_holds_before_it_opens_others() {
    let (_w, rep, [early, late], want) = one_dictionary_of_room();
    assert!(Reader::batch_get_txs(&*rep, &[late, early]).expect("batch") == want);
    // One more: the earlier pack's, fetched. In key order the earlier
    // pack's would be opened first, take the only room, and the later
    // one's be read and opened again (3).
    let f = rep.figures();
    assert_eq!(f.pack_dict_opens, 2, "{f:?}");
}

/// A batch holds at most `replica.batch_memory_mb` of frames and
/// dictionaries fetched and not yet opened (a ledger's at least): past
/// it, it reads them in rounds of whole ledgers, each opened and let go
/// of before the next round's GETs (but the dictionary of a pack the next
/// round goes on in), and answers the same.
#[test]
fn a_batch_holds_at_most_its_memory_of_fetched_frames_and_dictionaries() {
    let w = World::publishing(PackForm::Frames {
        level: 3,
        dict_kib: 64,
    });
    let hashes = w.spread(300);
    let ledgers = {
        let mut seqs: Vec<u32> = hashes
            .iter()
            .map(|h| {
                w.store
                    .get_tx(h)
                    .expect("store")
                    .expect("stored")
                    .ledger_seq
            })
            .collect();
        seqs.sort_unstable();
        seqs.dedup();
        seqs.len() as u64
    };
    let want: Vec<_> = hashes
        .iter()
        .map(|h| Some(w.store.get_tx(h).expect("store").expect("stored")))
        .collect();
    let batch = |name: &str, batch: usize| {
        let rep = w.replica_holding(
            name,
            HeldMemory {
                batch,
                ..HeldMemory::default()
            },
        );
        w.faulty.reset_flights();
        assert!(Reader::batch_get_txs(&*rep, &hashes).expect("batch") == want);
        let (in_flight, _, rounds) = w.faulty.flights();
        assert_eq!(in_flight, 0);
        let (peak, total) = rep.batch_bytes();
        // Nothing opened in one round is kept through the next one's GETs
        // unless that round reads it (its pack's dictionary).
        assert_eq!(rep.batch_carried(), 0, "{name}: kept in hand through GETs");
        (peak, total, rounds)
    };
    let (all, all_total, all_rounds) = batch("all", usize::MAX);
    // A ledger a round: the most one ledger's frame and its pack's
    // dictionary take, and a round trip a ledger at least; each piece
    // still read once (a pack's dictionary in the round of its first
    // ledger only).
    let (one, one_total, one_rounds) = batch("one", 1);
    assert_eq!(one_total, all_total);
    eprintln!(
        "held at once: {all} bytes in {all_rounds} round trips unbounded, {one} in \
         {one_rounds} a ledger a round ({ledgers} ledgers)"
    );
    assert!(one > 0 && one * 8 < all, "{one} and {all} bytes held");
    assert!(
        one_rounds >= ledgers && all_rounds < ledgers,
        "{one_rounds} and {all_rounds} round trips for {ledgers} ledgers"
    );
    // A bound between: held within it, in a few rounds.
    let bound = all / 4;
    let (some, some_total, some_rounds) = batch("some", bound as usize);
    assert_eq!(some_total, all_total);
    eprintln!("held at once within {bound}: {some} bytes in {some_rounds} round trips");
    assert!(
        some <= bound.max(one) && some > one,
        "{some} held, bound {bound}"
    );
}

/// A world of packs of ledger frames with their own dictionaries, and a
/// replica of them keeping `held` in memory.
fn a_replica_of_dictionary_packs(name: &str, held: HeldMemory) -> (World, Arc<Replica>) {
    let w = World::publishing(PackForm::Frames {
        level: 3,
        dict_kib: 64,
    });
    let rep = w.replica_holding(name, held);
    (w, rep)
}

/// What a replica holding no dictionary and no frame in memory keeps.
fn bare_memory() -> HeldMemory {
    HeldMemory {
        frames: 0,
        dicts: 0,
        ..HeldMemory::default()
    }
}

/// A replica holding no dictionary and no frame in memory, over packs
/// of ledger frames with their own dictionaries.
fn a_bare_replica_of_dictionary_packs(name: &str) -> (World, Arc<Replica>) {
    a_replica_of_dictionary_packs(name, bare_memory())
}

/// The key of the pack that holds ledger `seq`, as `rep`'s manifest lists it.
fn pack_key(rep: &Replica, seq: u32) -> String {
    let m = rep.manifest().expect("a manifest");
    m.pack_of(seq).expect("a pack").object.key.clone()
}

/// The file of pack `key`'s dictionary entry (`d/KEY`, '/' as '~') in
/// the disk cache named `cache`.
fn dict_entry_file(w: &World, cache: &str, key: &str) -> std::path::PathBuf {
    w.tmp
        .path()
        .join(cache)
        .join(format!("d/{key}").replace('/', "~"))
}

/// Pack `key`'s dictionary: its header, and its bytes as stored.
fn stored_dict(w: &World, key: &str) -> (ledgerstore_pack::Header, Vec<u8>) {
    let pack = std::fs::read(w.bucket.join(key)).expect("pack");
    let h = ledgerstore_pack::Header::parse(&pack).expect("header");
    let r = h.dict_range().expect("a dictionary");
    (h, pack[r.start as usize..r.end as usize].to_vec())
}

/// A dictionary memory let go of is opened again from the disk cache,
/// where it is kept unpacked (raw: opening it decompresses nothing), with
/// no GET; a cached copy that fails its check is fetched again from the
/// pack, which is not damaged for it.
#[test]
fn a_dictionary_let_go_of_opens_again_from_its_unpacked_copy_on_disk() {
    let (w, rep) = a_bare_replica_of_dictionary_packs("bare");
    let key = pack_key(&rep, 15);
    let (h, stored) = stored_dict(&w, &key);
    let raw = ledgerstore_pack::DictReader::raw_of(&h, &stored).expect("raw");
    let entry = dict_entry_file(&w, "bare", &key);
    let get = |i: usize| Reader::get_tx(&*rep, &w.tx(15, i)).expect("lookup");
    let want = |i: usize| w.store.get_tx(&w.tx(15, i)).expect("store");

    assert_eq!(get(0), want(0));
    // Its form (`u`: a cache of 1 GiB holds every pack's unpacked), then
    // the dictionary unpacked.
    let unpacked = [&b"u"[..], &ledgerstore_pack::DictReader::unpacked(&raw)].concat();
    assert!(std::fs::read(&entry).expect("cached") == unpacked);
    let gets = w.faulty.gets(&key);
    assert_eq!(get(1), want(1));
    assert_eq!(w.faulty.gets(&key), gets, "its frame and dictionary cached");
    assert_eq!(rep.figures().pack_dict_opens, 2);

    let mut bad = unpacked.clone();
    bad[1 + raw.len() / 3] ^= 0x10;
    std::fs::write(&entry, &bad).expect("damage the cached copy");
    assert_eq!(get(2), want(2));
    assert_eq!(
        w.faulty.gets(&key),
        gets + 1,
        "the dictionary fetched again"
    );
    assert!(std::fs::read(&entry).expect("cached again") == unpacked);
    assert_eq!(get(3), want(3));
    let f = rep.figures();
    assert_eq!(f.pack_dict_opens, 4, "{f:?}");
    assert_eq!(w.faulty.gets(&key), gets + 1);
}

/// A disk cache whose pack pieces' budget would hold the unpacked
/// dictionaries of fewer than twice the packs the manifest lists keeps
/// each one as its pack stores it (`s`, then the pack's bytes), and opens
/// it again from there with no GET, for lookups and batches; a cached copy
/// that fails its check is fetched again, once, and the pack serves on.
/// One byte more of cache and they are kept unpacked.
#[test]
fn a_cache_short_of_every_packs_unpacked_dictionary_keeps_them_as_stored() {
    let (w, probe) = a_bare_replica_of_dictionary_packs("probe");
    let key = pack_key(&probe, 15);
    let (h, stored) = stored_dict(&w, &key);
    let raw = ledgerstore_pack::DictReader::raw_of(&h, &stored).expect("raw");
    // Every pack's dictionary unpacked, as `dict_entry::choose` counts it
    // (this pack's size for each).
    let packs = probe.manifest().expect("a manifest").packs.len() as u64;
    let unpacked = packs * (raw.len() as u64 + 4);
    let bare = bare_memory();
    // Pieces get a quarter of the cache: exactly twice the unpacked
    // dictionaries keeps them unpacked, a byte less (of the pieces) not.
    let at_limit = w.replica_caching("limit", bare, 4 * 2 * unpacked);
    assert_eq!(
        Reader::get_tx(&*at_limit, &w.tx(15, 0)).expect("lookup"),
        w.store.get_tx(&w.tx(15, 0)).expect("store")
    );
    assert_eq!(
        std::fs::read(dict_entry_file(&w, "limit", &key)).expect("cached")[0],
        b'u'
    );

    let rep = w.replica_caching("small", bare, 4 * (2 * unpacked - 1));
    let entry = dict_entry_file(&w, "small", &key);
    let get = |i: usize| Reader::get_tx(&*rep, &w.tx(15, i)).expect("lookup");
    let want = |i: usize| w.store.get_tx(&w.tx(15, i)).expect("store");
    assert_eq!(get(0), want(0));
    let kept = [&b"s"[..], &stored].concat();
    assert!(
        std::fs::read(&entry).expect("cached") == kept,
        "the stored form"
    );
    let gets = w.faulty.gets(&key);
    assert_eq!(get(1), want(1));
    assert_eq!(
        w.faulty.gets(&key),
        gets,
        "opened again from the disk cache"
    );
    assert_eq!(
        Reader::batch_get_txs(&*rep, &[w.tx(15, 2), w.tx(15, 3)]).expect("batch"),
        vec![want(2), want(3)]
    );
    assert_eq!(
        w.faulty.gets(&key),
        gets,
        "the batch opened it from there too"
    );
    assert_eq!(rep.figures().pack_dict_opens, 3);

    let mut bad = kept.clone();
    bad[1 + stored.len() / 3] ^= 0x10;
    std::fs::write(&entry, &bad).expect("damage the cached copy");
    assert_eq!(get(4), want(4));
    assert_eq!(w.faulty.gets(&key), gets + 1, "fetched again, once");
    assert!(std::fs::read(&entry).expect("cached again") == kept);
    assert_eq!(get(5), want(5));
    assert_eq!(w.faulty.gets(&key), gets + 1);
    assert_eq!(rep.dict_damage_failures(&key), None, "the pack not damaged");
}

/// A dictionary the disk cache holds (checked when it was cached, and
/// when it is opened) serves even while the pack's own copy is in the
/// backoff of a damaged read (one that raced the read that cached it),
/// for lookups and batches alike, and opening it forgets that damage, as
/// a fetched copy that opens does: a later failure starts its backoff
/// afresh rather than doubled. Without a cached copy the backoff holds.
#[test]
fn a_cached_dictionary_serves_through_its_packs_backoff_and_clears_it() {
    let (w, rep) = a_bare_replica_of_dictionary_packs("bare");
    let key = pack_key(&rep, 15);
    let get = |i: usize| Reader::get_tx(&*rep, &w.tx(15, i)).expect("lookup");
    let want = |i: usize| w.store.get_tx(&w.tx(15, i)).expect("store");
    assert_eq!(get(0), want(0));
    let gets = w.faulty.gets(&key);
    for over in [true, false] {
        rep.damage_dict(&key, over);
        assert_eq!(rep.dict_damage_failures(&key), Some(1));
        assert_eq!(get(1), want(1));
        assert_eq!(w.faulty.gets(&key), gets, "opened from the disk cache");
        assert_eq!(rep.dict_damage_failures(&key), None);
    }
    let batch = [w.tx(15, 2), w.tx(15, 3)];
    rep.damage_dict(&key, false);
    assert_eq!(
        Reader::batch_get_txs(&*rep, &batch).expect("batch"),
        vec![want(2), want(3)]
    );
    assert_eq!(
        w.faulty.gets(&key),
        gets,
        "the batch opened it from the disk cache"
    );
    assert_eq!(rep.dict_damage_failures(&key), None);

    // Not cached: the backoff holds, with no GET.
    let name = format!("d/{key}");
    rep.disk_cache().remove(crate::cache::Kind::Piece, &name);
    assert!(!rep.disk_cache().holds(&name));
    rep.damage_dict(&key, false);
    let e = Reader::get_tx(&*rep, &w.tx(15, 4)).expect_err("in its backoff");
    assert!(e.to_string().contains("damaged by a test"), "{e}");
    let e = Reader::batch_get_txs(&*rep, &batch).expect_err("in its backoff");
    assert!(e.to_string().contains("damaged by a test"), "{e}");
    assert_eq!(w.faulty.gets(&key), gets);
}

/// A batch opens each dictionary the disk cache holds from there when
/// it reaches the dictionary's pack, one at a time, instead of reading
/// it in with its round's frames: a warm batch holds its frames alone.
#[test]
fn a_batch_opens_the_dictionaries_the_disk_cache_holds_without_holding_them() {
    let (w, rep) = a_bare_replica_of_dictionary_packs("bare");
    let hashes = w.spread(120);
    let want: Vec<_> = hashes
        .iter()
        .map(|h| Some(w.store.get_tx(h).expect("store").expect("stored")))
        .collect();
    let m = rep.manifest().expect("a manifest");
    let mut keys: Vec<String> = want
        .iter()
        .flatten()
        .map(|r| m.pack_of(r.ledger_seq).expect("a pack").object.key.clone())
        .collect();
    keys.sort();
    keys.dedup();
    let dicts: u64 = keys.iter().map(|k| stored_dict(&w, k).1.len() as u64).sum();

    assert!(Reader::batch_get_txs(&*rep, &hashes).expect("cold") == want);
    let (_, cold) = rep.batch_bytes();
    let gets = w.faulty.gets("");
    assert!(Reader::batch_get_txs(&*rep, &hashes).expect("warm") == want);
    let (_, both) = rep.batch_bytes();
    assert_eq!(w.faulty.gets(""), gets, "all of it from the disk cache");
    assert_eq!(
        both - cold,
        cold - dicts,
        "the warm batch read its frames, and no dictionary with them"
    );
    let f = rep.figures();
    assert_eq!(f.pack_dict_opens, 2 * keys.len() as u64, "{f:?}");
}

/// A dictionary the disk cache held when a batch began, and let go of
/// before the round that first meets its pack, is fetched with that
/// round's frames (counted among what the round holds), not alone when
/// its pack is opened.
#[test]
fn a_batch_fetches_a_cached_dictionary_let_go_of_since_it_began_with_its_round() {
    // A ledger a round.
    let one = HeldMemory {
        frames: 0,
        dicts: 0,
        batch: 1,
        ..HeldMemory::default()
    };
    let (w, rep) = a_replica_of_dictionary_packs("one", one);
    let m = rep.manifest().expect("a manifest");
    let key = |seq: u32| m.pack_of(seq).expect("a pack").object.key.clone();
    let (a, b) = (key(15), key(25));
    assert!(a < b, "{a} is opened first");
    let want = |hashes: &[TxHash]| -> Vec<Option<TxRecord>> {
        hashes
            .iter()
            .map(|h| Some(w.store.get_tx(h).expect("store").expect("stored")))
            .collect()
    };
    // Both dictionaries cached, and ledgers 15's and 25's frames.
    let first = [w.tx(15, 0), w.tx(25, 0)];
    assert!(Reader::batch_get_txs(&*rep, &first).expect("first") == want(&first));
    let (h, stored_b) = stored_dict(&w, &b);
    assert!(h.dict_range().is_some());
    // Ledger 16's frame (not cached) is the first round's only GET: held
    // there while the cache lets the other pack's dictionary go.
    let pack = std::fs::read(w.bucket.join(&a)).expect("pack");
    let ha = ledgerstore_pack::Header::parse(&pack).expect("header");
    let (page, _) = ha.ledger_page_of(16).expect("page");
    let r = ha.ledger_page(page).expect("page range");
    let le = ha
        .ledger_entry(&pack[r.start as usize..r.end as usize], 16)
        .expect("entry");
    let frame = ha.data_range(&le.record).expect("frame");
    let second = [w.tx(16, 0), w.tx(25, 1)];
    let (_, before) = rep.batch_bytes();
    let gets_b = w.faulty.gets(&b);
    w.faulty.hold_range(Some((&a, frame.start)));
    let batch = {
        let rep = Arc::clone(&rep);
        std::thread::spawn(move || Reader::batch_get_txs(&*rep, &second))
    };
    let holding = w.a_get_waits();
    rep.disk_cache()
        .remove(crate::cache::Kind::Piece, &format!("d/{b}"));
    w.faulty.hold_range(None);
    assert!(holding, "the first round's GET never started");
    let got = batch.join().expect("the batch's thread").expect("batch");
    assert!(got == want(&second));
    assert_eq!(w.faulty.gets(&b), gets_b + 1, "the dictionary, once");
    // What the batch held: ledger 16's frame, ledger 25's (from the
    // cache) and the dictionary it fetched with it. The same batch again,
    // everything cached, holds the frames alone.
    let (_, held) = rep.batch_bytes();
    assert!(Reader::batch_get_txs(&*rep, &second).expect("again") == want(&second));
    let (_, again) = rep.batch_bytes();
    assert_eq!(
        (held - before) - (again - held),
        stored_b.len() as u64,
        "fetched with its round"
    );
}

#[test]
fn a_batch_stops_reading_at_its_deadline() {
    let w = World::new();
    let hashes = w.spread(300);
    let rep = w.replica("r");

    // Past already: no request at all.
    let before = w.faulty.gets("");
    let r = Reader::batch_get_txs_until(&*rep, &hashes, Instant::now());
    assert!(matches!(r, Err(StoreError::DeadlinePassed { .. })), "{r:?}");
    assert_eq!(w.faulty.gets(""), before);

    // Segments mapped (unknown hashes probe them all, and read no pack).
    let unknown: Vec<TxHash> = (1..=20u8).map(|n| TxHash([n; 32])).collect();
    assert!(
        Reader::batch_get_txs(&*rep, &unknown)
            .expect("probe")
            .iter()
            .all(Option::is_none)
    );
    let packs = rep.manifest().expect("manifest").packs.len() as u64;
    // Each GET takes 400 ms; the deadline passes after 100: the GETs in
    // flight are dropped, and no other starts.
    w.faulty.delay_gets(Some(Duration::from_millis(400)));
    let before = w.faulty.gets("");
    let r =
        Reader::batch_get_txs_until(&*rep, &hashes, Instant::now() + Duration::from_millis(100));
    assert!(matches!(r, Err(StoreError::DeadlinePassed { .. })), "{r:?}");
    let started = w.faulty.gets("") - before;
    assert!(
        started <= packs,
        "only the packs' headers were asked for: {started} GETs"
    );
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(w.faulty.gets("") - before, started, "nothing is read after");
    assert_eq!(w.faulty.flights().0, 0, "no GET is left in flight");

    // Without a deadline the same batch answers.
    w.faulty.delay_gets(None);
    assert!(
        Reader::batch_get_txs(&*rep, &hashes)
            .expect("batch")
            .iter()
            .all(Option::is_some)
    );
}

/// A lookup (ledger 5's first transaction) on a thread of its own, whose
/// segment GET hangs (GETs of `segments/` held) until `hold_gets(None)`:
/// it holds the replica's one-at-a-time segment fetch.
fn a_lookup_holding_the_segment_fetch(
    w: &World,
    rep: &Arc<Replica>,
) -> std::thread::JoinHandle<StoreResult<Option<TxRecord>>> {
    w.faulty.hold_gets(Some("segments/"));
    let one = {
        let (rep, hash) = (Arc::clone(rep), w.tx(5, 0));
        std::thread::spawn(move || Reader::get_tx(&*rep, &hash))
    };
    let mut hanging = false;
    for _ in 0..2000 {
        if w.faulty.flights().0 > 0 {
            hanging = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(hanging, "the lookup's segment GET never started");
    one
}

/// A lookup, or a batch without a deadline of its own (getTransactions),
/// run with a read deadline (the daemon sets one around each unary read)
/// does not wait past it for the segment fetch another lookup holds; that
/// fetch runs to its end and serves.
#[test]
fn a_lookup_does_not_wait_past_its_read_deadline_for_anothers_segment_fetch() {
    let w = World::new();
    let rep = w.replica("r");
    let one = a_lookup_holding_the_segment_fetch(&w, &rep);
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let (rep, hash, hashes) = (Arc::clone(&rep), w.tx(12, 1), w.spread(20));
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_millis(200);
            let one = with_read_deadline(deadline, || Reader::get_tx(&*rep, &hash)).map(|_| ());
            let deadline = Instant::now() + Duration::from_millis(200);
            let batch =
                with_read_deadline(deadline, || Reader::batch_get_txs(&*rep, &hashes)).map(|_| ());
            let _ = tx.send((one, batch));
        });
    }
    let waited = rx.recv_timeout(Duration::from_secs(20));
    let still_hanging = w.faulty.flights().0 > 0;
    w.faulty.hold_gets(None);
    let (one_waited, batch_waited) =
        waited.expect("a read waited for another's fetch past its deadline");
    for r in [one_waited, batch_waited] {
        assert!(
            matches!(&r, Err(StoreError::DeadlinePassed { what }) if what.contains("waiting for the index")),
            "{r:?}"
        );
    }
    assert!(still_hanging, "the other lookup's fetch was let go first");
    let got = one.join().expect("lookup").expect("the lookup answers");
    assert!(got.is_some(), "the held lookup finds its transaction");
}

/// Past its read deadline a lookup answers the deadline, not the failure
/// of a newer range it met first (a damaged segment's DATA_LOSS).
#[test]
fn a_lookup_past_its_read_deadline_answers_the_deadline_not_an_earlier_failure() {
    let w = World::new();
    let m =
        w.rt.block_on(w.remote.newest_manifest())
            .expect("read")
            .expect("published");
    let n = m.segments.len();
    assert!(n >= 2, "{n} segments");
    let (newest, next) = (&m.segments[n - 1].object.key, &m.segments[n - 2].object.key);
    let path = w.bucket.join(newest);
    let len = std::fs::metadata(&path).expect("segment").len() as usize;
    std::fs::write(&path, vec![0x5a; len]).expect("damage the newest segment");
    let rep = w.replica("r");
    // Another lookup finds the newest segment damaged, then holds the
    // fetch of the next one.
    w.faulty.hold_gets(Some(next));
    let one = {
        let (rep, hash) = (Arc::clone(&rep), w.tx(5, 0));
        std::thread::spawn(move || Reader::get_tx(&*rep, &hash))
    };
    let mut hanging = false;
    for _ in 0..2000 {
        if w.faulty.flights().0 > 0 && w.faulty.gets(next) > 0 {
            hanging = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        hanging,
        "the lookup's GET of the next segment never started"
    );
    let hash = w.tx(1, 0);
    let r = with_read_deadline(Instant::now() + Duration::from_millis(200), || {
        Reader::get_tx(&*rep, &hash)
    });
    w.faulty.hold_gets(None);
    assert!(
        matches!(&r, Err(StoreError::DeadlinePassed { what }) if what.contains("waiting for the index")),
        "{r:?}"
    );
    // A damaged newer range does not hide an older one's answer.
    let got = one.join().expect("lookup").expect("the lookup answers");
    assert!(got.is_some(), "the held lookup finds its transaction");
}

/// A batch does not wait past its deadline for the one-at-a-time segment
/// fetch another lookup holds (issue 30): it answers DEADLINE_EXCEEDED
/// while that fetch still hangs, and the other lookup answers once its
/// GET is let go.
#[test]
fn a_batch_does_not_wait_past_its_deadline_for_anothers_segment_fetch() {
    let w = World::new();
    let rep = w.replica("r");
    let one = a_lookup_holding_the_segment_fetch(&w, &rep);
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let (rep, hashes) = (Arc::clone(&rep), w.spread(20));
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_millis(200);
            let _ = tx.send(Reader::batch_get_txs_until(&*rep, &hashes, deadline));
        });
    }
    let batch = rx.recv_timeout(Duration::from_secs(20));
    let still_hanging = w.faulty.flights().0 > 0;
    w.faulty.hold_gets(None);
    let batch = batch.expect("the batch waited for another lookup's fetch past its deadline");
    assert!(
        matches!(&batch, Err(StoreError::DeadlinePassed { what }) if what.contains("waiting for the index")),
        "{batch:?}"
    );
    assert!(still_hanging, "the other lookup's fetch was let go first");
    let got = one.join().expect("lookup").expect("the lookup answers");
    assert!(got.is_some(), "the held lookup finds its transaction");
    assert!(
        Reader::batch_get_txs(&*rep, &w.spread(20))
            .expect("batch")
            .iter()
            .all(Option::is_some)
    );
}

/// A world of version-4 packs (each with its dictionary), a replica of
/// it named `name` with an empty cache, the pack holding ledger 15, and
/// that pack's bytes.
fn a_pack_with_a_dictionary(name: &str) -> (World, Arc<Replica>, PackRef, Vec<u8>) {
    let w = World::publishing(PackForm::Frames {
        level: 3,
        dict_kib: 64,
    });
    let rep = w.replica(name);
    let m = rep.manifest().expect("a manifest");
    let p = m.pack_of(15).expect("a pack").clone();
    let bytes = std::fs::read(w.bucket.join(&p.object.key)).expect("pack");
    (w, rep, p, bytes)
}

/// A lookup run with a read deadline waits for another lookup's read of
/// its pack's dictionary (version 4) no later than the deadline, and
/// leaves that read's gate to it; the read runs to its end and serves,
/// and its gate is gone once its last reader has left.
#[test]
fn a_lookup_does_not_wait_past_its_read_deadline_for_anothers_dictionary_read() {
    let (w, rep, p, pack) = a_pack_with_a_dictionary("r");
    assert!(p.last > p.first, "a pack of one ledger");
    let dict = ledgerstore_pack::Header::parse(&pack)
        .expect("header")
        .dict_range()
        .expect("a dictionary");
    w.faulty.hold_range(Some((&p.object.key, dict.start)));
    let one = {
        let (rep, hash) = (Arc::clone(&rep), w.tx(p.first, 0));
        std::thread::spawn(move || Reader::get_tx(&*rep, &hash))
    };
    let holding = w.a_get_waits();
    assert!(holding, "the lookup's dictionary GET never started");
    assert_eq!(rep.dicts_loading(), 1, "the first reader's gate");
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let (rep, hash) = (Arc::clone(&rep), w.tx(p.first + 1, 0));
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_millis(200);
            let _ = tx.send(with_read_deadline(deadline, || {
                Reader::get_tx(&*rep, &hash)
            }));
        });
    }
    let waited = rx.recv_timeout(Duration::from_secs(20));
    let still_held = w.faulty.held() > 0;
    let gates = rep.dicts_loading();
    w.faulty.hold_range(None);
    let waited = waited.expect("a lookup waited for another's dictionary read past its deadline");
    assert!(
        matches!(&waited, Err(StoreError::DeadlinePassed { what })
            if what.contains(&p.object.key) && what.contains("dictionary")),
        "{:?}",
        waited.map(|_| ())
    );
    assert!(still_held, "the other lookup's read was let go first");
    assert_eq!(
        gates, 1,
        "the lookup that gave up left the gate to the reader"
    );
    let got = one
        .join()
        .expect("lookup")
        .expect("the held lookup answers");
    assert!(got.is_some(), "the held lookup finds its transaction");
    assert_eq!(
        rep.dicts_loading(),
        0,
        "the last reader out removed the gate"
    );
    let gets = w.faulty.gets(&p.object.key);
    let again = Reader::get_tx(&*rep, &w.tx(p.first + 1, 0)).expect("the lookup again");
    assert!(again.is_some());
    assert_eq!(rep.dicts_loading(), 0);
    assert!(
        w.faulty.gets(&p.object.key) <= gets + 1,
        "the dictionary was read again rather than taken from memory"
    );
}

#[test]
fn a_batch_fetches_no_frame_of_a_pack_whose_dictionary_is_in_backoff() {
    let (w, rep, p, good) = a_pack_with_a_dictionary("cold");
    let path = w.bucket.join(&p.object.key);
    let hd = ledgerstore_pack::Header::parse(&good).expect("header");
    let dict = hd.dict_range().expect("a dictionary");
    let mut bad = good.clone();
    bad[dict.start as usize + 9] ^= 0x5a;
    std::fs::write(&path, &bad).expect("damage");
    let damaged = |r: Result<_, StoreError>, what: &str| match r {
        Err(StoreError::RemoteDamaged { object, detail }) => {
            assert_eq!(object, p.object.key, "{what}: {detail}");
            assert!(detail.contains("the pack's dictionary"), "{what}: {detail}");
        }
        other => panic!("{what}: {:?}", other.map(|_: Vec<_>| ())),
    };
    // The first lookup reads the dictionary and finds it damaged; lookups
    // of the pack's other ledgers read their ledger table entries, then
    // meet the backoff before fetching a frame.
    damaged(
        Reader::get_tx(&*rep, &w.tx(p.first, 0)).map(|r| vec![r]),
        "first lookup",
    );
    let rest: Vec<u32> = (p.first + 1..=p.last).collect();
    assert!(!rest.is_empty());
    for &seq in &rest {
        damaged(
            Reader::get_tx(&*rep, &w.tx(seq, 0)).map(|r| vec![r]),
            "a lookup in backoff",
        );
    }
    // A batch over those ledgers' transactions fails the same way without
    // a GET of the pack: no frame is fetched for a pack that cannot open
    // it.
    let hashes: Vec<TxHash> = rest
        .iter()
        .flat_map(|&seq| (0..TXS).map(move |i| (seq, i)))
        .map(|(seq, i)| w.tx(seq, i))
        .collect();
    let before = w.faulty.gets(&p.object.key);
    damaged(Reader::batch_get_txs(&*rep, &hashes), "a batch in backoff");
    assert_eq!(
        w.faulty.gets(&p.object.key),
        before,
        "a batch fetched frames of a pack whose dictionary is in backoff"
    );
}
