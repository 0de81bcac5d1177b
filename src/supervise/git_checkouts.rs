//! Checkouts outside the writable roots that share a repository with one
//! inside (a linked worktree and its main checkout). What host git keeps
//! for such a checkout stays the host's: the branch it has checked out
//! (moved inside, host `git status` there showed the command's tree as
//! the user's, and a host `git stash` wrote the command's files into it),
//! with the main checkout outside the stash (the user's entries), and a
//! linked worktree's own HEAD and index (its staged work). Read once, from
//! the host's git dir, before the command runs.

use super::git_files::{State, names, state};
use rustix::fd::BorrowedFd;
use std::path::{Path, PathBuf};

/// The refs of a common dir (and their logs) that stay the host's: the
/// branch each checkout outside `roots` has checked out (and the names
/// that would shadow its short name), and `refs/stash` where the main
/// checkout is outside (`main_outside`).
pub(super) fn held_refs(git_dir: BorrowedFd<'_>, main_outside: bool, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut heads: Vec<PathBuf> = Vec::new();
    if main_outside {
        heads.push("HEAD".into());
    }
    for name in names(git_dir, Path::new("worktrees")) {
        let level = Path::new("worktrees").join(&name);
        if work_tree_outside(git_dir, &level, roots) {
            heads.push(level.join("HEAD"));
        }
    }
    let mut refs: Vec<PathBuf> = heads.iter().filter_map(|h| branch_of(git_dir, h)).collect();
    if main_outside {
        refs.push("refs/stash".into());
    }
    crate::policy::git::held_names(&refs)
}

/// Whether the linked worktree whose git dir is `level` (below
/// `git_dir`; `worktrees/NAME`, or "" for `git_dir` itself) has its work
/// tree outside `roots`: its `gitdir` names the worktree's `.git` file. One
/// that cannot be read counts as outside.
pub(super) fn work_tree_outside(git_dir: BorrowedFd<'_>, level: &Path, roots: &[PathBuf]) -> bool {
    let State::File { data, .. } = state(git_dir, &level.join("gitdir")) else {
        return true;
    };
    let Ok(text) = data.bytes(4096) else {
        return true;
    };
    let dot_git = PathBuf::from(String::from_utf8_lossy(&text).trim_end());
    match dot_git.parent() {
        Some(top) if dot_git.is_absolute() => !roots.iter().any(|r| top.starts_with(r)),
        _ => true,
    }
}

/// The branch a HEAD names (`ref: refs/…`), if it names one.
fn branch_of(git_dir: BorrowedFd<'_>, head: &Path) -> Option<PathBuf> {
    let State::File { data, .. } = state(git_dir, head) else {
        return None;
    };
    let text = data.bytes(4096).ok()?;
    let name = std::str::from_utf8(&text)
        .ok()?
        .trim_end()
        .strip_prefix("ref: ")?;
    let name = Path::new(name);
    (name.starts_with("refs")
        && name
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_))))
    .then(|| name.to_path_buf())
}
