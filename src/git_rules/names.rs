//! Which paths of a git dir are git's own data, carried between a sandbox
//! and the host (by the live guard as the command writes them, by `review
//! apply` from a layer), and where the git dirs within a git dir lie (a
//! submodule's under `modules/`, a linked worktree's under `worktrees/`:
//! git dirs of their own, judged alike). An allow-list: host housekeeping
//! (`gc.pid`, `gc.log`), `rr-cache/` and any name git does not write as
//! data stay where the command made them.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Top-level files of a git dir that are git's own data. Not `gc.pid` and
/// `gc.log`: the host's housekeeping (a `gc.pid` naming another machine
/// held the host's gc off for 12 hours, a `gc.log` is shown by its next
/// `git gc --auto` and holds it off for a day).
pub const TOP_FILES: [&str; 15] = [
    "index",
    "HEAD",
    "packed-refs",
    "COMMIT_EDITMSG",
    "MERGE_MSG",
    "MERGE_MODE",
    "MERGE_RR",
    "SQUASH_MSG",
    "TAG_EDITMSG",
    "NOTES_EDITMSG",
    "EDIT_DESCRIPTION",
    "description",
    "shallow",
    "AUTO_MERGE",
    "FETCH_HEAD",
];

/// State directories, copied whole (regular files and directories).
/// Not `rr-cache`: a resolution recorded inside would be host git's in
/// its next merge, unasked (the directory alone turns rerere on). Not a
/// notes merge's state (`NOTES_MERGE_REF`, `_PARTIAL`, `_WORKTREE`): notes
/// are not carried, and a host `git notes merge --commit` writes whatever
/// ref `NOTES_MERGE_REF` names (`refs/replace/…` hid a change).
pub const STATE_DIRS: [&str; 3] = ["rebase-merge", "rebase-apply", "sequencer"];

/// Refs and their logs, vetted both by name and content on their way.
pub const REF_DIRS: [&str; 2] = ["refs", "logs"];

/// What git keeps in a git dir besides its data, which a checkout's own
/// tools write: config and hooks (code a host tool runs: `review apply`
/// asks first, the live guard keeps its copy), objects (brought over
/// through host git's receiving path), git-lfs's store, the git dirs
/// within, a linked worktree's pointers.
const KEPT_APART: [&str; 12] = [
    "config",
    "config.worktree",
    "hooks",
    "info",
    "objects",
    "lfs",
    "modules",
    "worktrees",
    "commondir",
    "gitdir",
    "branches",
    "remotes",
];

/// What is carried at `rel` (a path below a git dir's top).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    File,
    Dir,
}

/// Whether `rel` is git's own data (a file, or a directory of it), which
/// the live guard copies both ways.
pub fn git_data(rel: &Path) -> Option<Shape> {
    let parts: Vec<&OsStr> = rel.iter().collect();
    // A name that is no UTF-8 goes on to be vetted (and refused, said):
    // git's own names are ASCII.
    let name = parts.last()?.to_string_lossy();
    let name = name.as_ref();
    if name.ends_with(".lock") || name.is_empty() {
        return None;
    }
    let first = parts[0].to_string_lossy();
    let first = first.as_ref();
    if parts.len() == 1 {
        if STATE_DIRS.contains(&name) || REF_DIRS.contains(&name) {
            Some(Shape::Dir)
        } else if TOP_FILES.contains(&name)
            || (name.ends_with("_HEAD") && name.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
            || name.starts_with("BISECT_")
            || (name.starts_with("sharedindex.") && name[12..].chars().all(|c| c.is_ascii_hexdigit()))
        {
            Some(Shape::File)
        } else {
            None
        }
    } else if STATE_DIRS.contains(&first) || REF_DIRS.contains(&first) {
        // Inside a state directory: files and directories of any name;
        // refs and reflogs, vetted on their way to the host.
        Some(Shape::File)
    } else {
        None
    }
}

/// Whether `review apply` carries `rel` (below the innermost git dir that
/// holds it): git's data, or what git keeps apart (objects, config and
/// hooks, which apply asks for); else why not.
pub fn carried(rel: &Path) -> Result<(), &'static str> {
    // The git dir itself (made, removed or replaced whole).
    if rel.as_os_str().is_empty() {
        return Ok(());
    }
    let first = rel.iter().next().map(OsStr::to_string_lossy).unwrap_or_default();
    if rel
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().ends_with(b".lock"))
    {
        return Err("a lock git leaves only while it writes");
    }
    if git_data(rel).is_some() || KEPT_APART.contains(&first.as_ref()) {
        return Ok(());
    }
    Err(
        "not git's data (host housekeeping such as gc.pid and gc.log, a rerere cache, or a name git does not write): it stays in the layer",
    )
}

/// The names a git dir's top holds, by which a git dir within
/// `modules/` is told from the directories of its name.
fn git_dir_entry(name: &OsStr) -> bool {
    let n = name.to_string_lossy();
    git_data(Path::new(name)).is_some() || KEPT_APART.contains(&n.as_ref()) || n == "gc.pid" || n == "gc.log"
}

/// `rel` (below a git dir's top) as (the innermost git dir that holds
/// it, relative to that top; the path below that git dir): a submodule's
/// git dir is `modules/NAME` (a NAME of one or more components, up to the
/// first that a git dir's top holds), a linked worktree's `worktrees/NAME`.
pub fn innermost(rel: &Path) -> (PathBuf, PathBuf) {
    let parts: Vec<Component<'_>> = rel.components().collect();
    let mut at = 0;
    loop {
        let name = |i: usize| match parts.get(i) {
            Some(Component::Normal(n)) => Some(*n),
            _ => None,
        };
        let next = match name(at).map(|n| n.as_encoded_bytes()) {
            Some(b"worktrees") if parts.len() > at + 2 => Some(at + 2),
            Some(b"modules") => (at + 2..parts.len()).find(|&j| name(j).is_some_and(git_dir_entry)),
            _ => None,
        };
        match next {
            Some(j) => at = j,
            None => break,
        }
    }
    (parts[..at].iter().collect(), parts[at..].iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_git_dirs_within_a_git_dir() {
        let split = |p: &str| {
            let (a, b) = innermost(Path::new(p));
            (a.to_string_lossy().into_owned(), b.to_string_lossy().into_owned())
        };
        assert_eq!(split("HEAD"), ("".into(), "HEAD".into()));
        assert_eq!(split("modules/sub/HEAD"), ("modules/sub".into(), "HEAD".into()));
        assert_eq!(
            split("modules/a/b/refs/heads/x"),
            ("modules/a/b".into(), "refs/heads/x".into())
        );
        assert_eq!(
            split("modules/a/modules/b/gc.pid"),
            ("modules/a/modules/b".into(), "gc.pid".into())
        );
        assert_eq!(
            split("worktrees/wt/index"),
            ("worktrees/wt".into(), "index".into())
        );
        assert_eq!(split("modules"), ("".into(), "modules".into()));
    }

    #[test]
    fn review_carries_git_s_data_and_what_it_keeps_apart_only() {
        for ok in [
            "HEAD",
            "refs/heads/x",
            "ORIG_HEAD",
            "objects/ab/cd",
            "config",
            "hooks/pre-commit",
            "lfs/objects/x",
            "rebase-merge/done",
            "BISECT_LOG",
        ] {
            assert!(carried(Path::new(ok)).is_ok(), "{ok}");
        }
        for no in [
            "gc.pid",
            "gc.log",
            "rr-cache",
            "rr-cache/x/preimage",
            "HEAD.lock",
            "refs/heads/x.lock",
            "NOTES_MERGE_PARTIAL/x",
            "odd",
        ] {
            assert!(carried(Path::new(no)).is_err(), "{no}");
        }
    }
}
