//! Evaluating a query over posting lists: a tree of unions (filters,
//! contract ids, types, topic patterns, topic counts) and intersections
//! (a filter's parts, a pattern's positions), walked by `seek`s so that a
//! page decodes only the blocks it passes through.

use ledgerstore_stellar::events::{EventId, EventType};

use crate::error::EventIndexResult;
use crate::keys::{FIXED_CONTRACT, FIXED_SYSTEM, ListRef, TOPIC_POSITIONS, fixed_count, topic_key};
use crate::postings::Cursor;
use crate::query::{Filter, Query, TopicPattern};
use crate::read::EventIndex;

enum Node<'a> {
    All,
    Empty,
    List(Cursor<'a>),
    And(Vec<(usize, Node<'a>)>),
    Or(Vec<Node<'a>>),
}

/// A bounded search's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seek {
    /// The least member `≥ t`.
    Found(u32),
    /// No member `≥ t`.
    None,
    /// The budget ran out: no member lies in `t..x` (and `x > t`).
    Paused(u32),
}

impl Node<'_> {
    /// The least member `≥ t`, spending one unit of `budget` per round of
    /// an intersection (an intersection whose lists interleave without
    /// meeting may otherwise walk a whole file for one answer).
    fn seek(&mut self, t: u32, budget: &mut u32) -> EventIndexResult<Seek> {
        match self {
            Node::All => Ok(Seek::Found(t)),
            Node::Empty => Ok(Seek::None),
            Node::List(c) => Ok(c.seek(t)?.map_or(Seek::None, Seek::Found)),
            Node::Or(children) => {
                // The least of the children's answers; a paused child
                // bounds the answer like a found one, and a tie goes to
                // the found one (the paused child has nothing below).
                let mut best: Option<(u32, bool)> = None;
                for c in children.iter_mut() {
                    let (v, found) = match c.seek(t, budget)? {
                        Seek::None => continue,
                        Seek::Found(v) => (v, true),
                        Seek::Paused(x) => (x, false),
                    };
                    best = Some(match best {
                        Some((b, bf)) if b < v || (b == v && bf) => (b, bf),
                        _ => (v, found),
                    });
                    if found && v == t {
                        break;
                    }
                }
                Ok(match best {
                    None => Seek::None,
                    Some((v, true)) => Seek::Found(v),
                    Some((x, false)) => Seek::Paused(x),
                })
            }
            Node::And(children) => {
                // Each intersection runs one round at least, whatever is
                // left: a round meets (found) or moves past `t`, so a pause
                // is always beyond `t` and a search always gets on, even
                // where an earlier branch spent the budget.
                let mut x = t;
                let mut first = true;
                'outer: loop {
                    if !first && *budget == 0 {
                        return Ok(Seek::Paused(x));
                    }
                    first = false;
                    *budget = budget.saturating_sub(1);
                    for (_, c) in children.iter_mut() {
                        match c.seek(x, budget)? {
                            Seek::None => return Ok(Seek::None),
                            Seek::Found(y) | Seek::Paused(y) if y > x => {
                                x = y;
                                continue 'outer;
                            }
                            // Paused at x: nothing is known beyond it.
                            Seek::Paused(_) => return Ok(Seek::Paused(x)),
                            Seek::Found(_) => {}
                        }
                    }
                    return Ok(Seek::Found(x));
                }
            }
        }
    }
}

impl<'a> Node<'a> {
    /// Its lists' cursors.
    fn cursors<'n>(&'n self, out: &mut Vec<&'n Cursor<'a>>) {
        match self {
            Node::All | Node::Empty => {}
            Node::List(c) => out.push(c),
            Node::And(children) => children.iter().for_each(|(_, c)| c.cursors(out)),
            Node::Or(children) => children.iter().for_each(|c| c.cursors(out)),
        }
    }
}

/// Asks for what a cold query reads before its first hit in rounds of
/// reads that do not depend on each other (a query of 15 lists waits for
/// the disk about 5 times, not 5 times a list): the contract entries,
/// topic directory entries and start and end ledgers' table entries; the
/// topic keys and the ledgers' runs; the lists' heads. The tree is built
/// after, from the page cache; [`prefetch_first_seeks`] does the rest.
fn prefetch_plan(idx: &EventIndex, q: &Query) {
    let keys: Vec<u64> = q
        .filters
        .iter()
        .flat_map(|f| &f.topics)
        .flat_map(|p| p.fixed.iter().enumerate())
        .filter_map(|(pos, v)| v.as_ref().map(|v| topic_key(pos, v)))
        .collect();
    let ledgers = [Some(q.start), q.end]
        .into_iter()
        .flatten()
        .map(|id| id.ledger);
    idx.prefetch_contracts(q.filters.iter().flat_map(|f| &f.contract_ids));
    for &k in &keys {
        idx.prefetch_topic(k, false);
    }
    ledgers.clone().for_each(|l| idx.prefetch_ledger(l, false));
    for &k in &keys {
        idx.prefetch_topic(k, true);
    }
    ledgers.for_each(|l| idx.prefetch_ledger(l, true));
    for c in q.filters.iter().flat_map(|f| &f.contract_ids) {
        if let Ok(r) = idx.contract(c) {
            idx.prefetch_list(r);
        }
    }
    for &k in &keys {
        if let Ok(r) = idx.topic(k) {
            idx.prefetch_list(r);
        }
    }
    if q.filters
        .iter()
        .any(|f| !f.types.is_empty() || !f.topics.is_empty())
    {
        for i in 0..crate::keys::FIXED {
            if let Ok(r) = idx.fixed(i) {
                idx.prefetch_list(r);
            }
        }
    }
}

/// Asks for the skip table pages of every list's first seek to `at`
/// together, then for their blocks together.
fn prefetch_first_seeks(idx: &EventIndex, root: &Node<'_>, at: u32) {
    let mut cs = Vec::new();
    root.cursors(&mut cs);
    for step in 0..2 {
        for c in &cs {
            if let Some(b) = c.first_seek_bytes(at, step) {
                idx.prefetch_slice(b);
            }
        }
    }
}

/// A node and an upper bound of its size.
type Sized<'a> = (usize, Node<'a>);

fn or(children: Vec<Sized<'_>>, all: usize) -> Sized<'_> {
    let mut kept = Vec::new();
    let mut size = 0;
    for (s, c) in children {
        match c {
            Node::All => return (all, Node::All),
            Node::Empty => {}
            c => {
                size += s;
                kept.push(c);
            }
        }
    }
    match kept.len() {
        0 => (0, Node::Empty),
        1 => (size, kept.pop().unwrap_or(Node::Empty)),
        _ => (size.min(all), Node::Or(kept)),
    }
}

fn and(children: Vec<Sized<'_>>, all: usize) -> Sized<'_> {
    let mut kept = Vec::new();
    for (s, c) in children {
        match c {
            Node::All => {}
            Node::Empty => return (0, Node::Empty),
            c => kept.push((s, c)),
        }
    }
    // Shortest first: it leads the leapfrog.
    kept.sort_by_key(|k| k.0);
    match kept.len() {
        0 => (all, Node::All),
        1 => kept.pop().unwrap_or((0, Node::Empty)),
        _ => (kept[0].0, Node::And(kept)),
    }
}

fn list(idx: &EventIndex, r: ListRef) -> EventIndexResult<Sized<'_>> {
    Ok(match idx.cursor(r)? {
        None => (0, Node::Empty),
        Some((c, len)) => (len, Node::List(c)),
    })
}

fn pattern<'a>(idx: &'a EventIndex, p: &TopicPattern, all: usize) -> EventIndexResult<Sized<'a>> {
    let k = p.fixed.len();
    let counts = if p.rest {
        if k == 0 {
            (all, Node::All)
        } else {
            let lists = (k..=TOPIC_POSITIONS + 1)
                .map(|c| list(idx, idx.fixed(fixed_count(c))?))
                .collect::<EventIndexResult<Vec<_>>>()?;
            or(lists, all)
        }
    } else {
        list(idx, idx.fixed(fixed_count(k))?)?
    };
    let mut parts = vec![counts];
    for (pos, seg) in p.fixed.iter().enumerate() {
        if let Some(v) = seg {
            parts.push(list(idx, idx.topic(topic_key(pos, v))?)?);
        }
    }
    Ok(and(parts, all))
}

fn filter<'a>(idx: &'a EventIndex, f: &Filter, all: usize) -> EventIndexResult<Sized<'a>> {
    let mut parts = Vec::new();
    if !f.types.is_empty() {
        let mut lists = Vec::new();
        for t in [EventType::System, EventType::Contract] {
            if f.types.contains(&t) {
                let i = if t == EventType::System {
                    FIXED_SYSTEM
                } else {
                    FIXED_CONTRACT
                };
                lists.push(list(idx, idx.fixed(i)?)?);
            }
        }
        parts.push(or(lists, all));
    }
    if !f.contract_ids.is_empty() {
        let lists = f
            .contract_ids
            .iter()
            .map(|c| list(idx, idx.contract(c)?))
            .collect::<EventIndexResult<Vec<_>>>()?;
        parts.push(or(lists, all));
    }
    if !f.topics.is_empty() {
        let pats = f
            .topics
            .iter()
            .map(|p| pattern(idx, p, all))
            .collect::<EventIndexResult<Vec<_>>>()?;
        parts.push(or(pats, all));
    }
    Ok(and(parts, all))
}

/// One matching event: its ordinal in the file and its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// Its position in the file's id order.
    pub ordinal: u32,
    /// Its id.
    pub id: EventId,
}

/// The events a query may match, in id order, found by walking postings.
/// Topic values are matched by a 64-bit hash of position and value, so a
/// hit can be a false positive: the reader confirms each against the
/// event's real topics ([`Query::matches`]). Memory is one decoded block
/// per list the query names, whatever the page length.
pub struct Matches<'a> {
    idx: &'a EventIndex,
    root: Node<'a>,
    at: u32,
    end: u32,
    /// The ledger (index in the range) of the last hit, or of the start:
    /// where the next hit's id is searched from.
    near: usize,
}

impl std::fmt::Debug for Matches<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Matches {{ at: {}, end: {} }}", self.at, self.end)
    }
}

impl<'a> Matches<'a> {
    pub(crate) fn new(idx: &'a EventIndex, q: &Query) -> EventIndexResult<Self> {
        q.validate()?;
        let prefetch = idx.mapped();
        if prefetch {
            prefetch_plan(idx, q);
        }
        let all = idx.events() as usize;
        let root = if q.filters.is_empty() {
            Node::All
        } else {
            let fs = q
                .filters
                .iter()
                .map(|f| filter(idx, f, all))
                .collect::<EventIndexResult<Vec<_>>>()?;
            or(fs, all).1
        };
        let at = idx.ordinal_from(q.start)?;
        let end = match q.end {
            Some(e) => idx.ordinal_from(e)?,
            None => idx.events(),
        };
        if prefetch {
            prefetch_first_seeks(idx, &root, at);
        }
        let near = q.start.ledger.saturating_sub(idx.first_ledger()) as usize;
        Ok(Matches {
            idx,
            root,
            at,
            end,
            near,
        })
    }

    /// The ordinal the next search starts at.
    pub fn next_ordinal(&self) -> u32 {
        self.at
    }
}

/// What one bounded step of a search gives ([`Matches::step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The next candidate.
    Hit(Hit),
    /// The step's budget ran out before a candidate was found: none lies
    /// before [`Matches::next_ordinal`], where the next step resumes. A
    /// caller out of time ends its page there (its cursor: the id just
    /// before that position).
    Paused,
}

/// Rounds of intersection a step of [`Iterator::next`] spends before it
/// goes on (it goes on until an answer: use [`Matches::step`] to stop).
const NEXT_STEP: u32 = 1 << 16;

impl Matches<'_> {
    /// The next candidate, searching at most `budget` rounds of
    /// intersection (each a seek per list of an intersection, a few
    /// blocks at most); `None` once there is none.
    pub fn step(&mut self, budget: u32) -> Option<EventIndexResult<Step>> {
        let found = match self.step_ordinal(budget)? {
            Ok(Some(o)) => o,
            Ok(None) => return Some(Ok(Step::Paused)),
            Err(e) => return Some(Err(e)),
        };
        Some(self.idx.id_near(found, self.near).map(|(id, near)| {
            self.near = near;
            Step::Hit(Hit { ordinal: found, id })
        }))
    }

    /// [`step`](Self::step) without the id: the next candidate's ordinal,
    /// or `None` for a pause.
    fn step_ordinal(&mut self, budget: u32) -> Option<EventIndexResult<Option<u32>>> {
        if self.at >= self.end {
            return None;
        }
        let mut left = budget.max(1);
        let found = match self.root.seek(self.at, &mut left) {
            Ok(Seek::Found(o)) if o < self.end => o,
            Ok(Seek::Paused(x)) if x < self.end => {
                // Progress is guaranteed: a round either meets or moves on.
                self.at = x.max(self.at);
                return Some(Ok(None));
            }
            Ok(_) => {
                self.at = self.end;
                return None;
            }
            Err(e) => {
                self.at = self.end;
                return Some(Err(e));
            }
        };
        self.at = found + 1;
        Some(Ok(Some(found)))
    }

    /// Up to `limit` candidates' ordinals, however long the search.
    fn ordinals(&mut self, limit: usize) -> EventIndexResult<Vec<u32>> {
        let mut out = Vec::new();
        while out.len() < limit {
            match self.step_ordinal(NEXT_STEP) {
                None => break,
                Some(Ok(Some(o))) => out.push(o),
                Some(Ok(None)) => {}
                Some(Err(e)) => return Err(e),
            }
        }
        Ok(out)
    }
}

impl Iterator for Matches<'_> {
    type Item = EventIndexResult<Hit>;

    /// The next candidate, however long the search (see [`Matches::step`]
    /// for a bounded one).
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.step(NEXT_STEP)? {
                Ok(Step::Hit(h)) => return Some(Ok(h)),
                Ok(Step::Paused) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl EventIndex {
    /// The candidates of `q` in this file, in id order; take a page with
    /// `take(limit)` (or see [`EventIndex::query`]).
    pub fn matches(&self, q: &Query) -> EventIndexResult<Matches<'_>> {
        Matches::new(self, q)
    }

    /// Up to `limit` candidates of `q`, in id order: as
    /// `matches(q)?.take(limit)`, but the page's ordinals are found first
    /// and their ids resolved together (their pages of the ledger table,
    /// then of the runs, read at once: see [`Matches`] for one at a time).
    pub fn query(&self, q: &Query, limit: usize) -> EventIndexResult<Vec<Hit>> {
        let mut m = self.matches(q)?;
        let ords = m.ordinals(limit)?;
        let ids = self.ids_of(&ords, m.near)?;
        Ok(ords
            .into_iter()
            .zip(ids)
            .map(|(ordinal, id)| Hit { ordinal, id })
            .collect())
    }
}
