//! How deep the tags an import brings nest. Host git peels a tag ref down
//! its whole chain (a tag of a tag of …) and, for `git log --decorate`,
//! `git show` and `git describe`, names every link after every ref above
//! it: a chain of 10,000 tags, each with a ref, held those at 2.35 GB for
//! up to 37 s, the square of the chain. git warns of a tag of a tag
//! ("nested tag"); ordinary repositories have none, or two levels.

use super::{Oid, oid};
use std::collections::HashMap;

/// The tags a chain may hold, a ref's own included. With it a ref costs
/// host git at most that many names, as many refs as the host has.
pub(super) const DEPTH_MOST: usize = 16;

/// Each tag read: the object it tags, and whether that is a tag.
#[derive(Default)]
pub(super) struct Tags {
    tagged: HashMap<Oid, Option<(Oid, bool)>>,
}

impl Tags {
    /// A tag's text, as `cat-file` gives it (its header's `object` and
    /// `type` lines); None: what git said of it is no tag (missing).
    pub(super) fn add(&mut self, id: &str, text: Option<&[u8]>) {
        let Some(id) = oid(id) else {
            return;
        };
        let (mut object, mut tag) = (None, false);
        for line in text.unwrap_or_default().split(|c| *c == b'\n') {
            if line.is_empty() {
                break;
            }
            if let Some(o) = line.strip_prefix(b"object ") {
                object = std::str::from_utf8(o).ok().and_then(oid);
            } else if let Some(t) = line.strip_prefix(b"type ") {
                tag = t == b"tag";
            }
        }
        self.tagged.insert(id, object.map(|o| (o, tag)));
    }

    /// The tags named as a tag's object and not read yet, as hex.
    pub(super) fn unread(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .tagged
            .values()
            .flatten()
            .filter(|(o, tag)| *tag && !self.tagged.contains_key(o))
            .map(|(o, _)| hex(o))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Whether a chain holds more than DEPTH_MOST tags: each followed at
    /// most that far (no recursion, no circle can hold it).
    pub(super) fn too_deep(&self) -> bool {
        self.tagged.keys().any(|id| {
            let mut at = Some(*id);
            let mut depth = 0;
            while let Some(link) = at {
                depth += 1;
                if depth > DEPTH_MOST {
                    return true;
                }
                at = match self.tagged.get(&link) {
                    Some(Some((o, true))) => Some(*o),
                    _ => None,
                };
            }
            false
        })
    }
}

/// An id's hex, as long as git's (SHA-1's 40, SHA-256's 64): `oid` keeps
/// either in 32 bytes, SHA-1's last 12 zero.
fn hex(o: &Oid) -> String {
    let n = if o[20..].iter().all(|b| *b == 0) { 20 } else { 32 };
    o[..n].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> String {
        format!("{n:040x}")
    }

    fn tag(t: &mut Tags, n: u32, on: u32, of_tag: bool) {
        let ty = if of_tag { "tag" } else { "commit" };
        let text = format!(
            "object {}\ntype {ty}\ntag t{n}\ntagger a <a> 1 +0000\n\nm\n",
            id(on)
        );
        t.add(&id(n), Some(text.as_bytes()));
    }

    #[test]
    fn a_chain_deeper_than_the_bound_is_too_deep() {
        let mut t = Tags::default();
        tag(&mut t, 1, 0, false);
        for n in 2..=DEPTH_MOST as u32 {
            tag(&mut t, n, n - 1, true);
        }
        assert!(!t.too_deep());
        assert!(t.unread().is_empty());
        tag(&mut t, 100, DEPTH_MOST as u32, true);
        assert!(t.too_deep());
    }

    #[test]
    fn a_tag_of_a_tag_not_read_is_asked_for() {
        let mut t = Tags::default();
        tag(&mut t, 5, 4, true);
        tag(&mut t, 6, 4, true);
        assert_eq!(t.unread(), vec![id(4)]);
        // Missing on the host: the chain ends there.
        t.add(&id(4), None);
        assert!(t.unread().is_empty());
        assert!(!t.too_deep());
    }

    #[test]
    fn many_flat_tags_are_not_deep() {
        let mut t = Tags::default();
        for n in 1..10_000 {
            tag(&mut t, n, 0, false);
        }
        assert!(!t.too_deep());
    }
}
