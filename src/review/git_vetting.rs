//! The files of a layer's git dirs that host git trusts completely (the
//! index, the sequencer's and rebase's state), vetted at apply by the live
//! guard's rules (git_rules): one git would refuse from a remote refuses
//! the apply, named; an index that hides changes (assume-unchanged, new
//! stat data) is applied rewritten.

use super::changes::{Change, Kind, dir_flags, open_below, read_at};
use super::{Layer, shown};
use crate::git_rules::{self, Vetted};
use rustix::fd::AsFd;
use rustix::fs::Mode;
use std::path::{Component, Path, PathBuf};

/// The most of a vetted file read (as the live guard).
const VET_MAX: usize = 256 << 20;

/// Where a change lies in a git dir: the directory (relative to its tree)
/// and the name git_rules judges it by, for the files it vets.
fn vetted_name(c: &Change) -> Option<(PathBuf, PathBuf)> {
    let parts: Vec<Component> = c.rel.components().collect();
    let git = super::changes::in_git_dir(c, &parts)?;
    let tail: PathBuf = parts.get(git..)?.iter().collect();
    let git_dir: PathBuf = parts[..git].iter().collect();
    git_rules::vetted(&tail).then_some((git_dir, tail))
}

/// A change's bytes as they may reach the host: None where it is no file
/// git_rules vets; otherwise the bytes to write, or why git would refuse
/// them.
pub fn vetted_bytes(layer: &Layer, c: &Change) -> Option<Result<Vec<u8>, String>> {
    if !matches!(c.kind, Kind::File { .. }) {
        return None;
    }
    let (git_dir, tail) = vetted_name(c)?;
    let tree = layer.info.trees.get(c.tree)?;
    let Some(data) = read_vetted(&layer.upper(c.tree), &c.rel) else {
        return Some(Err(
            "it cannot be read whole (larger than 256 MiB, or not a file)".into(),
        ));
    };
    let host = read_vetted(tree, &c.rel);
    let parent = c.rel.parent().unwrap_or(Path::new(""));
    let sparse = sparse_checkout(&tree.join(&git_dir), &tree.join(parent));
    Some(match git_rules::vet(&tail, &data, host.as_deref(), sparse) {
        Ok(Vetted::Keep) => Ok(data),
        Ok(Vetted::Rewritten(b)) => Ok(b),
        Err(why) => Err(why),
    })
}

/// The file at `rel` below `root`, whole up to VET_MAX, never through a
/// link.
fn read_vetted(root: &Path, rel: &Path) -> Option<Vec<u8>> {
    let r = rustix::fs::open(root, dir_flags(), Mode::empty()).ok()?;
    let d = open_below(r.as_fd(), rel.parent().unwrap_or(Path::new("")))?;
    read_at(d.as_fd(), rel.file_name()?, VET_MAX)
}

/// An index's new entries' objects, brought over first: each on the host
/// as the type git takes it for (host git commits them as they are).
pub fn index_objects_there(layer: &Layer, c: &Change, data: &[u8]) -> Result<(), String> {
    let Some((git_dir, tail)) = vetted_name(c) else {
        return Ok(());
    };
    if tail != Path::new("index") {
        return Ok(());
    }
    let tree = layer.info.trees.get(c.tree).ok_or("no such tree")?;
    let host = read_vetted(tree, &c.rel);
    let want = git_rules::index_objects(data, host.as_deref());
    match crate::git_receive::objects_as(&tree.join(&git_dir), &want)? {
        true => Ok(()),
        false => Err("an entry names an object the host does not have".into()),
    }
}

/// Whether the host's checkout is sparse (skip-worktree is git's own
/// there): `core.sparseCheckout` in its config or its worktree's.
fn sparse_checkout(git_dir: &Path, own_dir: &Path) -> bool {
    [git_dir.join("config"), own_dir.join("config.worktree")]
        .iter()
        .filter_map(|p| crate::policy::read_small(p))
        .any(|d| crate::policy::git::core_flag(&d, "sparsecheckout"))
}

/// Each change git would refuse from a remote, as `PATH: git would refuse
/// it: why`.
pub fn refused(layer: &Layer, changes: &[Change]) -> Vec<String> {
    let mut out: Vec<String> = changes
        .iter()
        .filter_map(|c| match vetted_bytes(layer, c)? {
            Ok(_) => None,
            Err(why) => Some(format!(
                "{}: git would refuse it: {why}",
                shown(layer, c.tree, &c.rel)
            )),
        })
        .collect();
    out.extend(super::git_objects::forged(layer, changes));
    out.extend(links_out(layer, changes));
    out.extend(outside_checkouts(layer, changes));
    out.extend(changes.iter().filter_map(|c| {
        let why = removes_structure(layer, c)?;
        Some(format!("{}: {why}", shown(layer, c.tree, &c.rel)))
    }));
    out
}

/// Why a change takes away what makes a git dir one to host git, as the
/// live guard keeps it: the git dir itself (a `.git` removed, the
/// repository's history with it), its `HEAD`, index, `refs/` or
/// `objects/` (host git without them went on to a parent's repository),
/// or the branch the host's HEAD names (git deletes no branch checked
/// out, nor does a push).
fn removes_structure(layer: &Layer, c: &Change) -> Option<&'static str> {
    let (git_dir, tail) = in_a_git_dir(c)?;
    let gone = match &c.kind {
        Kind::Deleted => true,
        Kind::Dir { opaque, .. } => *opaque,
        _ => false,
    };
    let not_dir = !matches!(c.kind, Kind::Dir { .. });
    let top = tail.as_os_str().is_empty();
    if top && (git_dir.as_os_str().is_empty() || c.tree > 0) {
        return None;
    }
    if (top || tail == Path::new("refs") || tail == Path::new("objects")) && (gone || not_dir) {
        return Some(
            "a git dir, or its refs or objects, removed: host git would take another repository for this one, or none",
        );
    }
    if gone && (tail == Path::new("HEAD") || tail == Path::new("index")) {
        return Some(
            "removed: git never removes it, and host git without it takes another repository for this one",
        );
    }
    let why = "removed: the branch the host's HEAD names, its reflog or HEAD's (git deletes none of them, nor does a push)";
    // With the directory above it too (`rm -rf .git/logs`).
    if gone && Path::new("logs/HEAD").starts_with(&tail) {
        return Some(why);
    }
    let host_dir = layer.info.trees.get(c.tree)?.join(&git_dir);
    let upper = layer.upper(c.tree).join(&git_dir);
    let branches = host_branches(&host_dir);
    let reflog = tail == Path::new("logs/HEAD") || branches.iter().any(|b| tail == Path::new("logs").join(b));
    if reflog && matches!(c.kind, Kind::File { .. }) && !grows(&host_dir.join(&tail), &upper.join(&tail)) {
        return Some(
            "lines removed from HEAD's reflog or the checked-out branch's: they only grow (cut, with the branch rewound, the user's commits are reachable from nothing, and a host git gc prunes them)",
        );
    }
    // `packed-refs` as it is after (removed: empty).
    let packed_after = match (&c.kind, tail == Path::new("packed-refs")) {
        (Kind::Deleted, true) => Some(Vec::new()),
        (Kind::File { .. }, true) => std::fs::read(upper.join("packed-refs")).ok(),
        _ => None,
    };
    let packed_before = std::fs::read(host_dir.join("packed-refs")).ok();
    branches
        .iter()
        .any(|branch| {
            if gone && (branch.starts_with(&tail) || Path::new("logs").join(branch).starts_with(&tail)) {
                return true;
            }
            // Its `packed-refs` line gone, and no loose file for it after.
            let loose = match std::fs::symlink_metadata(upper.join(branch)) {
                Ok(m) => m.is_file(),
                Err(_) => host_dir.join(branch).is_file(),
            };
            !loose
                && packed_after.as_deref().is_some_and(|new| {
                    branch
                        .to_str()
                        .is_some_and(|b| crate::policy::git::packed_drops(b, new, packed_before.as_deref()))
                })
        })
        .then_some(why)
}

/// Whether the file `new` begins with all of `old` (the host's, missing:
/// empty), read in blocks, never through a link; one that cannot be read
/// does not.
fn grows(old: &Path, new: &Path) -> bool {
    use std::io::Read;
    let open =
        |p: &Path| rustix::fs::open(p, super::changes::file_flags(), Mode::empty()).map(std::fs::File::from);
    let mut old = match open(old) {
        Ok(f) => f,
        Err(rustix::io::Errno::NOENT) => return true,
        Err(_) => return false,
    };
    let Ok(mut new) = open(new) else { return false };
    let (mut a, mut b) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let Ok(n) = old.read(&mut a) else { return false };
        if n == 0 {
            return true;
        }
        if new.read_exact(&mut b[..n]).is_err() || a[..n] != b[..n] {
            return false;
        }
    }
}

/// The branches checked out in a host git dir (policy::git::checked_out).
fn host_branches(git_dir: &Path) -> Vec<PathBuf> {
    let worktrees = std::fs::read_dir(git_dir.join("worktrees"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name());
    crate::policy::git::checked_out(&|h| crate::policy::read_small(&git_dir.join(h)), worktrees)
}

/// Each change to what host git keeps for a checkout outside the
/// workspace, as the live guard refuses it: the branches such a checkout
/// has checked out or comes back to, the stash, the main checkout's own
/// refs there (loose, in `packed-refs`, and their logs), a symbolic ref to
/// any of them, and a linked worktree's own git dir there (its HEAD and
/// index: staged work).
fn outside_checkouts(layer: &Layer, changes: &[Change]) -> Vec<String> {
    let ws = &layer.info.workspace;
    let mut out = Vec::new();
    for c in changes {
        let Some((git_dir, tail)) = vetted_name(c).or_else(|| in_a_git_dir(c)) else {
            continue;
        };
        let Some(tree) = layer.info.trees.get(c.tree) else {
            continue;
        };
        let host_dir = tree.join(&git_dir);
        let (held, frozen) = kept_for_outside(&host_dir, ws);
        let why = if frozen.iter().any(|f| tail.starts_with(f)) {
            Some("a linked worktree's own, its work tree outside the workspace")
        } else if crate::policy::git::touches_held(&held, &tail) {
            Some(
                "what a work tree outside the workspace has checked out or comes back to, the stash (every checkout's), or a main checkout's there (its bisect, rebase and worktree refs)",
            )
        } else if tail == Path::new("packed-refs") && packed_moves(layer, c, &host_dir, &held) {
            Some(
                "it moves what a work tree outside the workspace has checked out or comes back to, the stash, or a main checkout's bisect, rebase or worktree refs there",
            )
        } else if names_held(layer, c, &host_dir, &held) {
            Some(
                "it names what a work tree outside the workspace has checked out or comes back to (a symbolic ref, a bisect's start, a rebase's branch or its update-ref orders): host git in the workspace would move it or check it out",
            )
        } else {
            None
        };
        if let Some(why) = why {
            out.push(format!("{}: {why}", shown(layer, c.tree, &c.rel)));
        }
    }
    out
}

/// Whether the change makes a HEAD or ref a symbolic ref to one of the
/// `held` names, or a state file name one for host git to move or check
/// out (policy::git::state_names_held); a linked worktree's own git dir (`COMMON/worktrees/NAME`)
/// is held to what its common dir holds.
fn names_held(layer: &Layer, c: &Change, host_dir: &Path, held: &[PathBuf]) -> bool {
    let Some(data) = crate::policy::read_small(&layer.upper(c.tree).join(&c.rel)) else {
        return false;
    };
    let common = host_dir
        .parent()
        .filter(|p| p.ends_with("worktrees"))
        .and_then(Path::parent);
    let names = |targets: &[PathBuf]| {
        crate::policy::git::names_held(targets, data.as_bytes())
            || crate::policy::git::state_names_held(targets, &c.rel, data.as_bytes())
    };
    match common {
        Some(common) => names(&kept_for_outside(common, &layer.info.workspace).0),
        None => names(held),
    }
}

/// Why a change in a git dir stays in the layer (host housekeeping, a
/// rerere cache, a name git does not write: the live guard carries none
/// of them either), if it does.
pub fn left_out(c: &Change) -> Option<&'static str> {
    let (_, tail) = in_a_git_dir(c)?;
    crate::git_rules::names::carried(&tail).err()
}

/// Where any change lies in a git dir (not only the files git_rules vets).
fn in_a_git_dir(c: &Change) -> Option<(PathBuf, PathBuf)> {
    let parts: Vec<Component> = c.rel.components().collect();
    let git = super::changes::in_git_dir(c, &parts)?;
    Some((parts[..git].iter().collect(), parts.get(git..)?.iter().collect()))
}

/// The refs (and logs) of a host git dir that checkouts outside `ws`
/// keep, and its linked worktrees' own dirs (`worktrees/NAME`) outside.
fn kept_for_outside(git_dir: &Path, ws: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let outside = |top: &Path| !top.starts_with(ws);
    let main_outside =
        git_dir.file_name().is_some_and(|n| n == ".git") && git_dir.parent().is_some_and(outside);
    let mut levels = Vec::new();
    let mut frozen = Vec::new();
    if main_outside {
        levels.push(git_dir.to_path_buf());
    }
    for e in std::fs::read_dir(git_dir.join("worktrees"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let pointer = crate::policy::read_small(&e.path().join("gitdir")).unwrap_or_default();
        let top = Path::new(pointer.trim_end()).parent().map(Path::to_path_buf);
        if top.as_deref().is_none_or(outside) {
            levels.push(e.path());
            frozen.push(Path::new("worktrees").join(e.file_name()));
        }
    }
    let branches = levels
        .iter()
        .flat_map(|l| {
            let reflog = crate::policy::read_tail(&l.join("logs/HEAD"), crate::policy::git::REFLOG_TAIL);
            crate::policy::git::comes_back_to(
                &|name| crate::policy::read_small(&l.join(name)),
                reflog.as_deref(),
            )
        })
        .collect();
    let held = crate::policy::git::held_for_outside(branches, !levels.is_empty(), main_outside);
    (held, frozen)
}

/// Whether the layer's `packed-refs` names a held ref otherwise than the
/// host's does (each name's first line; a name twice is refused by
/// git_rules).
fn packed_moves(layer: &Layer, c: &Change, host_dir: &Path, held: &[PathBuf]) -> bool {
    let new = std::fs::read(layer.upper(c.tree).join(&c.rel)).unwrap_or_default();
    let old = std::fs::read(host_dir.join("packed-refs")).ok();
    crate::policy::git::packed_moves_held(held, &new, old.as_deref())
}

/// Each link the layer makes that leads host git out of the workspace's
/// trees to a repository (git in the link's directory, or a worktree whose
/// path passes through it, would take that repository's config and hooks
/// as its own; the command could have made it where it writes outside
/// them), or that leads through /proc (where it leads depends on who
/// follows it).
fn links_out(layer: &Layer, changes: &[Change]) -> Vec<String> {
    use crate::policy::{Reach, Way};
    let trees = &layer.info.trees;
    let why = |c: &Change| -> Option<String> {
        let Kind::Symlink { target } = &c.kind else {
            return None;
        };
        let at = trees.get(c.tree)?.join(&c.rel);
        match crate::policy::follow(&at.parent()?.join(target), &|_| true) {
            Way::Unknowable(_) => {
                Some("a link through /proc, where it leads depends on who follows it".into())
            }
            Way::To(place, _) if place.is_dir() && !trees.iter().any(|t| place.starts_with(t)) => {
                let below = || {
                    let f = crate::policy::repositories_below(std::slice::from_ref(&place), Reach::Beyond);
                    f.dot_gits.into_iter().chain(f.bare).chain(f.linked).next()
                };
                let repo = crate::policy::discovered(&place).or_else(below)?;
                Some(format!(
                    "a link that leads host git to the repository {}, outside the workspace (make it on the host if it is wanted)",
                    crate::lossy::shown(&repo)
                ))
            }
            Way::To(..) => None,
        }
    };
    changes
        .iter()
        .filter_map(|c| why(c).map(|w| format!("{}: {w}", shown(layer, c.tree, &c.rel))))
        .collect()
}
