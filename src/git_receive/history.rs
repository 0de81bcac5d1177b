//! How hard the history an import brings is for host git to walk. Git
//! walks commits newest first from a queue, and while it computes how far
//! a branch is ahead of another (`git status`) it looks over the whole
//! queue at each step: a history that keeps many lines open at once (one
//! commit with 150,000 parents; a tree of 262,143 merges) held a host
//! `git status` or `git log` past two minutes, though each commit was
//! small. What the walk of the new commits would look at, in all, is
//! bounded: ordinary history keeps a few lines open, and costs a small
//! part of it.

use super::{Oid, oid};
use std::collections::{BinaryHeap, HashMap, HashSet};

/// The queue entries a newest-first walk of an import's commits may look
/// at in all (a tree of 8,192 merged lines: 90 million, host `git status`
/// half a second; 16,384: four times that, 1.7 s).
pub(super) const AREA_MOST: u64 = 500_000_000;

/// The commits an import brings: each one's commit time and parents.
#[derive(Default)]
pub(super) struct History {
    commits: HashMap<Oid, (i64, Vec<Oid>)>,
}

impl History {
    /// One commit's text, as `cat-file` gives it.
    pub(super) fn add(&mut self, id: &str, text: &[u8]) {
        let Some(id) = oid(id) else {
            return;
        };
        let mut parents = Vec::new();
        let mut time = 0i64;
        for line in text.split(|c| *c == b'\n') {
            if line.is_empty() {
                break;
            }
            if let Some(p) = line.strip_prefix(b"parent ") {
                if let Some(p) = std::str::from_utf8(p).ok().and_then(oid) {
                    parents.push(p);
                }
            } else if let Some(c) = line.strip_prefix(b"committer ") {
                // `NAME <EMAIL> SECONDS ZONE`: the seconds before the zone.
                let mut w = c.rsplit(|b| *b == b' ');
                let _zone = w.next();
                time = w
                    .next()
                    .and_then(|s| std::str::from_utf8(s).ok())
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
            }
        }
        self.commits.insert(id, (time, parents));
    }

    /// What a newest-first walk from the new tips looks at, in all: at each
    /// step, every commit waiting in the queue (the host's commits the new
    /// ones name wait there too, walked no further: the host's history is
    /// its own). None once past AREA_MOST.
    pub(super) fn area(&self) -> Option<u64> {
        let named: HashSet<&Oid> = self.commits.values().flat_map(|(_, p)| p.iter()).collect();
        let mut queue: BinaryHeap<(i64, Oid)> = self
            .commits
            .iter()
            .filter(|(id, _)| !named.contains(id))
            .map(|(id, (t, _))| (*t, *id))
            .collect();
        let mut seen: HashSet<Oid> = queue.iter().map(|(_, id)| *id).collect();
        let mut area = 0u64;
        while let Some((_, id)) = queue.pop() {
            area += queue.len() as u64 + 1;
            if area > AREA_MOST {
                return None;
            }
            let Some((_, parents)) = self.commits.get(&id) else {
                continue;
            };
            for p in parents {
                if seen.insert(*p) {
                    // A host commit's time is not read: it waits to the end.
                    let t = self.commits.get(p).map_or(i64::MIN, |(t, _)| *t);
                    queue.push((t, *p));
                }
            }
        }
        Some(area)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> String {
        format!("{n:040x}")
    }

    fn commit(h: &mut History, n: u32, time: i64, parents: &[u32]) {
        let mut text = format!("tree {}\n", id(0));
        for p in parents {
            text.push_str(&format!("parent {}\n", id(*p)));
        }
        text.push_str(&format!(
            "author a <a> {time} +0000\ncommitter c <c@d> {time} +0000\n\nmsg\n"
        ));
        h.add(&id(n), text.as_bytes());
    }

    #[test]
    fn a_line_of_history_costs_its_length() {
        let mut h = History::default();
        for n in 1..=10_000u32 {
            commit(&mut h, n, n as i64, &[n - 1]);
        }
        // Each step sees itself; commit 0 (the host's) waits at the end.
        assert_eq!(h.area(), Some(10_001));
    }

    #[test]
    fn many_lines_open_at_once_cost_too_much() {
        // One commit whose 40,000 parents are each on the host's commit.
        let mut h = History::default();
        let parents: Vec<u32> = (2..40_002).collect();
        for p in &parents {
            commit(&mut h, *p, 100 - *p as i64, &[1]);
        }
        commit(&mut h, 50_000, 1000, &parents);
        assert_eq!(h.area(), None);
        // A tree of merges 2^15 wide.
        let mut t = History::default();
        let mut level: Vec<u32> = (10..10 + (1 << 15)).collect();
        for l in &level {
            commit(&mut t, *l, *l as i64, &[1]);
        }
        let mut next_id = 100_000u32;
        while level.len() > 1 {
            let mut up = Vec::new();
            for pair in level.chunks(2) {
                next_id += 1;
                commit(&mut t, next_id, next_id as i64, pair);
                up.push(next_id);
            }
            level = up;
        }
        assert_eq!(t.area(), None);
        // The same 2^10 wide passes.
        let mut small = History::default();
        let mut level: Vec<u32> = (10..10 + (1 << 10)).collect();
        for l in &level {
            commit(&mut small, *l, *l as i64, &[1]);
        }
        while level.len() > 1 {
            let mut up = Vec::new();
            for pair in level.chunks(2) {
                next_id += 1;
                commit(&mut small, next_id, next_id as i64, pair);
                up.push(next_id);
            }
            level = up;
        }
        assert!(small.area().is_some());
    }
}
