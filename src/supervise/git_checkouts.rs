//! Checkouts outside the writable roots that share a repository with one
//! inside (a linked worktree and its main checkout). What host git keeps
//! for such a checkout stays the host's: the branch it has checked out
//! (moved inside, host `git status` there showed the command's tree as
//! the user's, and a host `git stash` wrote the command's files into it)
//! or comes back to from a bisect or rebase, the stash (every checkout's:
//! the user's entries), a main checkout's own refs there, and a linked
//! worktree's own HEAD and index (its staged work). Read once, from the
//! host's git dir, before the command runs.

use super::git_files::{State, names, state};
use rustix::fd::BorrowedFd;
use std::path::{Path, PathBuf};

/// The refs of a common dir (and their logs) that stay the host's: the
/// branches each checkout outside `roots` comes back to (the one checked
/// out; mid-bisect or mid-rebase the one it returns to or rewrites; and
/// the names that would shadow each's short name), and where the main
/// checkout is outside (`main_outside`) `refs/stash` and its per-checkout
/// refs (`refs/bisect`, `refs/rewritten`, `refs/worktree`).
pub(super) fn held_refs(git_dir: BorrowedFd<'_>, main_outside: bool, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut levels: Vec<PathBuf> = Vec::new();
    if main_outside {
        levels.push(PathBuf::new());
    }
    for name in names(git_dir, Path::new("worktrees")) {
        let level = Path::new("worktrees").join(&name);
        if work_tree_outside(git_dir, &level, roots) {
            levels.push(level);
        }
    }
    let branches = levels.iter().flat_map(|l| comes_back_to(git_dir, l)).collect();
    crate::policy::git::held_for_outside(branches, !levels.is_empty(), main_outside)
}

/// What the common dir of the linked worktree whose git dir is `wt_dir`
/// (`COMMON/worktrees/NAME`) holds for its checkouts outside `roots`, its
/// main checkout among them where that lies outside.
pub(super) fn held_by_common_dir(wt_dir: &Path, roots: &[PathBuf]) -> Vec<PathBuf> {
    use rustix::fs::Mode;
    let Some(common) = wt_dir.parent().and_then(Path::parent) else {
        return Vec::new();
    };
    let Ok(fd) = crate::sys::kernel::open(common, super::git_files::dir_flags(), Mode::empty()) else {
        return Vec::new();
    };
    let main_outside = common.file_name().is_some_and(|n| n == ".git")
        && common
            .parent()
            .is_some_and(|top| !roots.iter().any(|r| top.starts_with(r)));
    held_refs(rustix::fd::AsFd::as_fd(&fd), main_outside, roots)
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

/// The branches the checkout whose git dir is `level` (below `git_dir`)
/// comes back to, read from its own files (and its HEAD's reflog's end,
/// for `git checkout -`).
fn comes_back_to(git_dir: BorrowedFd<'_>, level: &Path) -> Vec<PathBuf> {
    let read = |name: &str| -> Option<String> {
        let State::File { data, .. } = state(git_dir, &level.join(name)) else {
            return None;
        };
        String::from_utf8(data.bytes(4096).ok()?.into_owned()).ok()
    };
    let reflog =
        super::git_files::tail_of(git_dir, &level.join("logs/HEAD"), crate::policy::git::REFLOG_TAIL);
    crate::policy::git::comes_back_to(&read, reflog.as_deref())
}
