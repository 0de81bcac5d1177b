//! A layer's new git objects brought to the host's repository as a push's
//! would be: loose objects packed out of the layer by host git and
//! unpacked strictly (git hashes each one again, so a name that is not its
//! content's hash never lands), packs indexed strictly. An object file the
//! host has, rewritten inside, is refused: git never rewrites one, so the
//! content is forged. What git makes again (a pack's index, commit-graphs,
//! `info/`) and removals (a `gc` inside) are left to host git.

use super::changes::{Change, HostKind, Kind};
use super::{Layer, shown};
use crate::git_receive;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, PathBuf};
use std::process::Stdio;

/// What apply does with a change below a git dir's `objects/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    /// A new loose object (`ab/cdef…`), by its id.
    Loose(String),
    /// A new pack (`pack/pack-….pack`).
    Pack,
    /// Left to host git: removals, directories, what git makes again.
    Left,
    /// An object the host has, rewritten.
    Forged,
}

/// The git dir a change lies in (relative to its tree) and its path below
/// that git dir's `objects/`; None where it lies elsewhere.
fn below_objects(c: &Change) -> Option<(PathBuf, PathBuf)> {
    let parts: Vec<Component> = c.rel.components().collect();
    let git = super::changes::in_git_dir(c, &parts)?;
    // A submodule's or a linked worktree's git dir below `.git`: its own
    // `objects/` is the one just above the path's.
    let at = parts[git..]
        .iter()
        .rposition(|p| *p == Component::Normal("objects".as_ref()))?
        + git;
    // Between the two only a submodule's place (`modules/NAME…`): a ref
    // named `objects` is a ref.
    let between = &parts[git..at];
    if !between.is_empty() && between[0] != Component::Normal("modules".as_ref()) {
        return None;
    }
    let git_dir: PathBuf = parts[..at].iter().collect();
    let rest: PathBuf = parts[at + 1..].iter().collect();
    Some((git_dir, rest))
}

fn is_hex(s: &[u8]) -> bool {
    s.iter().all(u8::is_ascii_hexdigit)
}

/// What apply does with `c`, if it lies below a git dir's `objects/`.
pub fn classify(c: &Change) -> Option<(PathBuf, Object)> {
    let (git_dir, rest) = below_objects(c)?;
    let Kind::File { same_content, .. } = c.kind else {
        return Some((git_dir, Object::Left));
    };
    if c.host.kind == HostKind::File {
        let o = if same_content {
            Object::Left
        } else {
            Object::Forged
        };
        return Some((git_dir, o));
    }
    let parts: Vec<&[u8]> = rest.iter().map(|p| p.as_bytes()).collect();
    let o = match parts.as_slice() {
        [dir, name] if dir.len() == 2 && is_hex(dir) && matches!(name.len(), 38 | 62) && is_hex(name) => {
            Object::Loose(format!(
                "{}{}",
                String::from_utf8_lossy(dir),
                String::from_utf8_lossy(name)
            ))
        }
        [b"pack", name] if name.starts_with(b"pack-") && name.ends_with(b".pack") => Object::Pack,
        _ => Object::Left,
    };
    Some((git_dir, o))
}

/// Each object the host has that the layer rewrote, as `PATH: why`.
pub fn forged(layer: &Layer, changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .filter(|c| matches!(classify(c), Some((_, Object::Forged))))
        .map(|c| {
            format!(
                "{}: git would refuse it: an object the host has, rewritten (git never rewrites one)",
                shown(layer, c.tree, &c.rel)
            )
        })
        .collect()
}

/// A git dir's new objects: (its tree and place), loose ids, packs.
type NewObjects = ((usize, PathBuf), Vec<String>, Vec<PathBuf>);

/// Brings the layer's new objects to the host's repositories; the count.
pub fn import(layer: &Layer, changes: &[Change]) -> Result<usize, String> {
    let mut by_dir: Vec<NewObjects> = Vec::new();
    for c in changes {
        let Some((git_dir, o)) = classify(c) else { continue };
        let key = (c.tree, git_dir);
        let at = match by_dir.iter().position(|(k, ..)| *k == key) {
            Some(i) => i,
            None => {
                by_dir.push((key, Vec::new(), Vec::new()));
                by_dir.len() - 1
            }
        };
        match o {
            Object::Loose(id) => by_dir[at].1.push(id),
            Object::Pack => by_dir[at].2.push(c.rel.clone()),
            Object::Left | Object::Forged => {}
        }
    }
    let mut n = 0;
    for ((tree, git_dir), loose, packs) in by_dir {
        if loose.is_empty() && packs.is_empty() {
            continue;
        }
        let host = layer.info.trees.get(tree).ok_or("no such tree")?.join(&git_dir);
        let objects = layer.upper(tree).join(&git_dir).join("objects");
        if super::git::holds_a_link(&objects) {
            return Err(format!(
                "{}: the layer's objects hold a symlink: not imported",
                shown(layer, tree, &git_dir.join("objects"))
            ));
        }
        if !loose.is_empty() {
            git_receive::transfer(&host, &objects, &loose).map_err(|e| format!("git's objects: {e}"))?;
        }
        for p in &packs {
            let f = std::fs::File::open(layer.upper(tree).join(p))
                .map_err(|e| format!("{}: {e}", p.display()))?;
            git_receive::index_pack(&host, Stdio::from(f))
                .map_err(|e| format!("{}: {e}", shown(layer, tree, p)))?;
        }
        n += loose.len() + packs.len();
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::changes::Host;

    fn change(rel: &str, tree: usize, host: HostKind, same: bool) -> Change {
        Change {
            tree,
            rel: rel.into(),
            kind: Kind::File {
                mode: 0o444,
                size: 1,
                same_content: same,
                origin: false,
            },
            host: Host {
                kind: host,
                mode: 0o444,
                size: 1,
                ctime: (0, 0),
            },
        }
    }

    #[test]
    fn objects_by_place() {
        let id = "ab".to_string() + &"c".repeat(38);
        let loose = format!(".git/objects/ab/{}", "c".repeat(38));
        let c = change(&loose, 0, HostKind::Missing, false);
        assert_eq!(classify(&c), Some((PathBuf::from(".git"), Object::Loose(id))));
        let c = change(&loose, 0, HostKind::File, false);
        assert_eq!(classify(&c).unwrap().1, Object::Forged);
        let c = change(&loose, 0, HostKind::File, true);
        assert_eq!(classify(&c).unwrap().1, Object::Left);
        let c = change(".git/objects/pack/pack-1.pack", 0, HostKind::Missing, false);
        assert_eq!(classify(&c).unwrap().1, Object::Pack);
        let c = change(".git/objects/pack/pack-1.idx", 0, HostKind::Missing, false);
        assert_eq!(classify(&c).unwrap().1, Object::Left);
        let c = change(
            ".git/modules/m/objects/info/alternates",
            0,
            HostKind::Missing,
            false,
        );
        assert_eq!(
            classify(&c),
            Some((PathBuf::from(".git/modules/m"), Object::Left))
        );
        let c = change("objects/ab/cd", 1, HostKind::Missing, false);
        assert_eq!(classify(&c).unwrap().0, PathBuf::new());
        assert_eq!(
            classify(&change("src/objects/x", 0, HostKind::Missing, false)),
            None
        );
        assert_eq!(
            classify(&change(".git/refs/heads/main", 0, HostKind::Missing, false)),
            None
        );
        assert_eq!(
            classify(&change(".git/refs/heads/objects", 0, HostKind::Missing, false)),
            None
        );
        assert_eq!(
            classify(&change(".git/logs/refs/objects/x", 0, HostKind::Missing, false)),
            None
        );
    }
}
