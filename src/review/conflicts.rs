//! What the host changed since the run started, that applying a layer
//! would lose: a file or directory the change writes, changed on the host
//! since (a git index only refreshed is none), or its directory's names.
//! `review diff` names them; `review apply` refuses while there are any.

use super::changes::{Change, Host, HostKind, Kind, dir_flags, host_at, names, open_below};
use super::{Layer, shown};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::Mode;
use std::path::Path;

/// Whether an inode changed at or after the start. On a filesystem that
/// keeps whole seconds, a change in the start's second counts too.
pub(super) fn after(ctime: (i64, i64), started: (i64, i64)) -> bool {
    ctime >= started || (ctime.0 == started.0 && ctime.1 == 0)
}

/// The first entry beneath a host directory (`rel` in the tree) changed
/// since the start; a git index only refreshed is no change.
fn changed_below(
    at: (&Layer, BorrowedFd<'_>, usize),
    dir: BorrowedFd<'_>,
    rel: &Path,
    started: (i64, i64),
    depth: usize,
) -> Option<String> {
    for n in names(dir).unwrap_or_default() {
        let h = host_at(Some(dir), &n);
        let p = rel.join(&n);
        // A directory by what it holds: its ctime moves with its names.
        let judged = match h.kind {
            HostKind::Dir => false,
            HostKind::File => !index_refreshed(at.0, at.1, at.2, &p),
            _ => true,
        };
        if judged && after(h.ctime, started) {
            return Some(p.display().to_string());
        }
        if h.kind == HostKind::Dir
            && depth < 256
            && let Ok(sub) = rustix::fs::openat(dir, n.as_os_str(), dir_flags(), Mode::empty())
            && let Some(found) = changed_below(at, sub.as_fd(), &p, started, depth + 1)
        {
            return Some(found);
        }
    }
    None
}

/// Whether `c` is a git index the host only refreshed since the start: its
/// entries, stat data aside, those of the index linked at the start.
fn index_refreshed(layer: &Layer, root: BorrowedFd<'_>, tree: usize, rel: &Path) -> bool {
    let Some(host) = layer.info.trees.get(tree).map(|t| t.join(rel)) else {
        return false;
    };
    let Some((n, _)) = layer.info.bases.iter().find(|(_, p)| *p == host) else {
        return false;
    };
    let base = std::fs::read(layer.dir.join(format!("base-{n}")));
    let now = open_below(root, rel.parent().unwrap_or(Path::new("")))
        .and_then(|d| super::changes::read_at(d.as_fd(), rel.file_name().unwrap_or_default(), 1 << 30));
    match (base, now) {
        (Ok(b), Some(n)) => super::git_index::same_entries(&b, &n),
        _ => false,
    }
}

/// Why writing `c` would lose a change the host made since `started`.
pub(super) fn conflict(
    layer: &Layer,
    root: BorrowedFd<'_>,
    c: &Change,
    h: Host,
    started: (i64, i64),
) -> Option<String> {
    let copied_up = matches!(
        c.kind,
        Kind::File { origin: true, .. } | Kind::Dir { origin: true, .. }
    );
    match (&c.kind, h.kind) {
        (Kind::Unsupported(_), _) => None,
        // A directory whose mode changes: its entries are checked as theirs.
        (Kind::Dir { .. }, HostKind::Dir) => None,
        // Copied up, yet no host file by its name: removed on the host, or
        // a new name the command gave a copied-up file (a hard link), which
        // the host's directory, unchanged since the start, tells apart.
        (_, HostKind::Missing) if copied_up && names_changed(root, &c.rel, started) => {
            Some("removed on the host since the run started".into())
        }
        (_, HostKind::Missing) => None,
        // A directory the layer removes or replaces: what it holds is
        // checked (its own ctime moves with every name made in it).
        (_, HostKind::Dir) => {
            let dir = open_below(root, &c.rel)?;
            changed_below((layer, root, c.tree), dir.as_fd(), &c.rel, started, 0)
                .map(|p| format!("{p} in it changed on the host since the run started"))
        }
        (Kind::File { .. }, HostKind::File)
            if after(h.ctime, started) && index_refreshed(layer, root, c.tree, &c.rel) =>
        {
            None
        }
        _ if after(h.ctime, started) => Some("changed on the host since the run started".into()),
        _ => None,
    }
}

/// Whether the host directory that holds `rel` changed its names since
/// `started` (or is gone, or cannot be read: counted as changed).
fn names_changed(root: BorrowedFd<'_>, rel: &Path, started: (i64, i64)) -> bool {
    let parent = rel.parent().unwrap_or(Path::new(""));
    let Some(dir) = open_below(root, parent) else {
        return true;
    };
    match rustix::fs::fstat(&dir) {
        Ok(st) => after((st.st_ctime, st.st_ctime_nsec as i64), started),
        Err(_) => true,
    }
}

/// Each change that the host's changes since the run started forbid, as
/// `PATH: why`.
pub(super) fn conflicts(layer: &Layer, changes: &[Change]) -> Vec<String> {
    let Some(started) = layer.info.started else {
        return vec!["the layer records no start: nothing can be checked against the host".into()];
    };
    let roots: Vec<Option<OwnedFd>> = layer
        .info
        .trees
        .iter()
        .map(|t| rustix::fs::open(t, dir_flags(), Mode::empty()).ok())
        .collect();
    changes
        .iter()
        .filter_map(|c| {
            let root = roots.get(c.tree)?.as_ref()?;
            conflict(layer, root.as_fd(), c, c.host, started)
                .map(|why| format!("{}: {why}", shown(layer, c.tree, &c.rel)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_and_after_it() {
        let start = (100, 500);
        assert!(after((100, 500), start));
        assert!(after((101, 0), start));
        assert!(!after((100, 499), start));
        // A filesystem of whole seconds: the start's second counts.
        assert!(after((100, 0), start));
        assert!(!after((99, 0), start));
    }
}
