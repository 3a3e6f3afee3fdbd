//! Writing an index file: [`EventIndexBuilder`] from events, and the
//! [`Writer`] it (and [`merge`](crate::merge)) streams lists into.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;

use ledgerstore_stellar::events::{EventId, EventType};
use sha2::{Digest, Sha256};

use crate::error::{EventIndexError, EventIndexResult};
use crate::ids::IdsBuilder;
use crate::keys::{
    FIXED, FIXED_CONTRACT, FIXED_SYSTEM, ListRef, TOPIC_POSITIONS, fixed_count, topic_key,
};
use crate::{CONTRACT_SAMPLE, HEADER, LEDGER_SAMPLE, MAGIC, SECTIONS, VERSION, postings};

/// Where a [`Writer`] puts the file: a file (synced at the end) or
/// memory.
pub(crate) trait Sink: Read + Write + Seek {
    /// Makes the bytes durable (a file's `sync_all`; nothing in memory).
    fn sync(&mut self) -> std::io::Result<()>;
}

impl Sink for File {
    fn sync(&mut self) -> std::io::Result<()> {
        self.sync_all()
    }
}

impl Sink for Cursor<Vec<u8>> {
    fn sync(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Streams posting lists into a new file, then writes the tables, the
/// header and the SHA-256 trailer.
pub(crate) struct Writer<S: Sink = File> {
    path: std::path::PathBuf,
    out: BufWriter<S>,
    postings: u64,
    scratch: Vec<u8>,
}

impl Writer<File> {
    pub(crate) fn create(path: &Path) -> EventIndexResult<Self> {
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(EventIndexError::io(path, "creating"))?;
        Self::with_sink(path, file)
    }
}

impl Writer<Cursor<Vec<u8>>> {
    /// A writer into memory (`path` only names it in errors).
    pub(crate) fn in_memory() -> EventIndexResult<Self> {
        Self::with_sink(Path::new("<memory>"), Cursor::new(Vec::new()))
    }
}

impl<S: Sink> Writer<S> {
    fn with_sink(path: &Path, sink: S) -> EventIndexResult<Self> {
        let mut out = BufWriter::with_capacity(1 << 20, sink);
        out.write_all(&[0u8; HEADER])
            .map_err(EventIndexError::io(path, "writing"))?;
        Ok(Writer {
            path: path.to_path_buf(),
            out,
            postings: 0,
            scratch: Vec::new(),
        })
    }

    /// Writes one list (strictly increasing ordinals) and gives its ref.
    pub(crate) fn list(&mut self, vals: &[u32]) -> EventIndexResult<ListRef> {
        Ok(match vals {
            [] => ListRef::Empty,
            [v] => ListRef::Single(*v),
            _ => {
                if vals.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(EventIndexError::corrupt(
                        "a list's ordinals do not increase",
                    ));
                }
                self.scratch.clear();
                postings::encode(vals, &mut self.scratch);
                let at = self.postings;
                self.out
                    .write_all(&self.scratch)
                    .map_err(EventIndexError::io(&self.path, "writing"))?;
                self.postings += self.scratch.len() as u64;
                ListRef::At(at)
            }
        })
    }

    /// Writes the rest and syncs; `contracts` and `topics` sorted by key.
    /// Gives the size and the sink.
    pub(crate) fn finish(
        mut self,
        range: (u32, u32, u32),
        ids: &IdsBuilder,
        fixed: &[ListRef; FIXED],
        contracts: &[([u8; 32], ListRef)],
        topics: &[(u64, ListRef)],
    ) -> EventIndexResult<(u64, S)> {
        let io = |a| EventIndexError::io(&self.path, a);
        let bits = dir_bits(topics.len());
        let mut dir = Vec::with_capacity(4 * ((1 << bits) + 1));
        let mut k = 0usize;
        for bucket in 0..=(1u64 << bits) {
            while k < topics.len() && bucket_of(topics[k].0, bits) < bucket {
                k += 1;
            }
            dir.extend_from_slice(&(k as u32).to_le_bytes());
        }
        let mut tail: Vec<Vec<u8>> = vec![
            ids.table.clone(),
            ids.runs.clone(),
            fixed
                .iter()
                .flat_map(|r| r.to_u64().to_le_bytes())
                .collect(),
            contracts
                .iter()
                .flat_map(|(id, r)| id.iter().copied().chain(r.to_u64().to_le_bytes()))
                .collect(),
            dir,
            topics
                .iter()
                .flat_map(|(key, r)| {
                    key.to_le_bytes()
                        .into_iter()
                        .chain(r.to_u64().to_le_bytes())
                })
                .collect(),
        ];
        tail.extend(samples(&ids.table, contracts));
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&range.0.to_le_bytes());
        header.extend_from_slice(&range.1.to_le_bytes());
        header.extend_from_slice(&u64::from(range.2).to_le_bytes());
        header.extend_from_slice(&(contracts.len() as u64).to_le_bytes());
        header.extend_from_slice(&(topics.len() as u64).to_le_bytes());
        header.extend_from_slice(&bits.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        let mut off = HEADER as u64;
        let mut lens = vec![self.postings];
        lens.extend(tail.iter().map(|t| t.len() as u64));
        debug_assert_eq!(lens.len(), SECTIONS);
        for len in lens {
            header.extend_from_slice(&off.to_le_bytes());
            header.extend_from_slice(&len.to_le_bytes());
            off += len;
        }
        debug_assert_eq!(header.len(), HEADER);
        for t in tail.drain(..) {
            self.out.write_all(&t).map_err(io("writing"))?;
        }
        let mut file = self
            .out
            .into_inner()
            .map_err(|e| io("writing")(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(io("seeking"))?;
        file.write_all(&header).map_err(io("writing"))?;
        file.seek(SeekFrom::Start(0)).map_err(io("seeking"))?;
        let mut sha = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let got = file.read(&mut buf).map_err(io("reading back"))?;
            if got == 0 {
                break;
            }
            sha.update(&buf[..got]);
        }
        file.write_all(&sha.finalize()).map_err(io("writing"))?;
        file.sync().map_err(io("syncing"))?;
        Ok((off + 32, file))
    }
}

/// The ledger sample (the first ordinal of every [`LEDGER_SAMPLE`]th
/// entry of the ledger table, the last entry included) and the contract
/// sample (every [`CONTRACT_SAMPLE`]th contract id).
pub(crate) fn samples(table: &[u8], contracts: &[([u8; 32], ListRef)]) -> [Vec<u8>; 2] {
    let ledgers = table
        .chunks(8)
        .step_by(LEDGER_SAMPLE)
        .flat_map(|e| e[..4].to_vec())
        .collect();
    let ids = contracts
        .iter()
        .step_by(CONTRACT_SAMPLE)
        .flat_map(|c| c.0)
        .collect();
    [ledgers, ids]
}

/// Bits of the topic directory: about 16 keys a bucket, at most 2^24
/// buckets.
pub(crate) fn dir_bits(keys: usize) -> u32 {
    let mut bits = 0;
    while bits < 24 && (keys >> bits) > 16 {
        bits += 1;
    }
    bits
}

/// A key's bucket: its top `bits` bits.
pub(crate) fn bucket_of(key: u64, bits: u32) -> u64 {
    if bits == 0 { 0 } else { key >> (64 - bits) }
}

/// Builds one index file from a closed range's events, given in id order.
/// Holds every posting in memory (about 4 bytes per event and topic) until
/// [`finish`](Self::finish).
#[derive(Debug)]
pub struct EventIndexBuilder {
    first: u32,
    last: u32,
    ids: IdsBuilder,
    n: u32,
    fixed: [Vec<u32>; FIXED],
    contracts: HashMap<[u8; 32], Vec<u32>>,
    topics: HashMap<u64, Vec<u32>>,
}

impl EventIndexBuilder {
    /// A builder for ledgers `first..=last` (at most `i32::MAX`, as event
    /// ids require).
    pub fn new(first: u32, last: u32) -> EventIndexResult<Self> {
        if first > last || last > i32::MAX as u32 {
            return Err(EventIndexError::Invalid(format!(
                "bad ledger range {first}..={last}"
            )));
        }
        Ok(EventIndexBuilder {
            first,
            last,
            ids: IdsBuilder::new(first, last),
            n: 0,
            fixed: Default::default(),
            contracts: HashMap::new(),
            topics: HashMap::new(),
        })
    }

    /// Adds the next event: its id (greater than the previous one's), its
    /// type, its contract id and its topics' `SCVal` XDR bytes (the first
    /// [`TOPIC_POSITIONS`] are indexed by value, all are counted). An event
    /// of type `diagnostic` among the served ones (stellar-core never
    /// writes one there, but stellar-rpc serves it if it does) is on no
    /// type list: only filters without a type match it, as in stellar-rpc,
    /// where a filter's type can only be `system` or `contract`.
    pub fn push(
        &mut self,
        id: EventId,
        kind: EventType,
        contract: Option<&[u8; 32]>,
        topics: &[&[u8]],
    ) -> EventIndexResult<()> {
        let fixed_type = match kind {
            EventType::System => Some(FIXED_SYSTEM),
            EventType::Contract => Some(FIXED_CONTRACT),
            EventType::Diagnostic => None,
        };
        self.ids.push(id)?;
        let ord = self.n;
        self.n += 1;
        if let Some(t) = fixed_type {
            self.fixed[t].push(ord);
        }
        self.fixed[fixed_count(topics.len())].push(ord);
        if let Some(c) = contract {
            self.contracts.entry(*c).or_default().push(ord);
        }
        for (pos, t) in topics.iter().take(TOPIC_POSITIONS).enumerate() {
            let list = self.topics.entry(topic_key(pos, t)).or_default();
            if list.last() != Some(&ord) {
                list.push(ord);
            }
        }
        Ok(())
    }

    /// Events added so far.
    pub fn events(&self) -> u32 {
        self.n
    }

    /// Writes the file at `path` (created or truncated, then synced; the
    /// caller renames it into place) and returns its size in bytes.
    pub fn finish(self, path: &Path) -> EventIndexResult<u64> {
        let w = Writer::create(path)?;
        self.write(w).map(|(size, _)| size)
    }

    /// The file's bytes, built in memory (for [`EventIndex::from_bytes`]:
    /// an index of a few live ledgers that is rebuilt as they come, never
    /// written); the same bytes [`finish`](Self::finish) writes.
    ///
    /// [`EventIndex::from_bytes`]: crate::EventIndex::from_bytes
    pub fn finish_to_vec(self) -> EventIndexResult<Vec<u8>> {
        let w = Writer::in_memory()?;
        self.write(w).map(|(_, c)| c.into_inner())
    }

    fn write<S: Sink>(mut self, mut w: Writer<S>) -> EventIndexResult<(u64, S)> {
        let n = self.ids.finish()?;
        let mut contracts: Vec<_> = self.contracts.into_iter().collect();
        contracts.sort_unstable_by_key(|c| c.0);
        let mut crefs = Vec::with_capacity(contracts.len());
        for (id, list) in contracts {
            crefs.push((id, w.list(&list)?));
        }
        let mut topics: Vec<_> = self.topics.drain().collect();
        topics.sort_unstable_by_key(|t| t.0);
        let mut trefs = Vec::with_capacity(topics.len());
        for (key, list) in topics {
            trefs.push((key, w.list(&list)?));
        }
        let mut fixed = [ListRef::Empty; FIXED];
        for (r, list) in fixed.iter_mut().zip(&self.fixed) {
            *r = w.list(list)?;
        }
        w.finish(
            (self.first, self.last, n),
            &self.ids,
            &fixed,
            &crefs,
            &trefs,
        )
    }
}
