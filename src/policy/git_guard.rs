//! What keeps a later, unconfined host `git` from running code planted
//! inside: the git dirs a commit needs stay writable (objects, refs, logs,
//! index, HEAD, lock files and state dirs all live there), but
//!
//! - every git dir, the `modules/` and `worktrees/` dirs leading to the
//!   others, and each submodule's checkout are mount points, so that none
//!   of them can be renamed, replaced or removed (EBUSY);
//! - in each git dir, what chooses code or other git dirs is read-only:
//!   `config`, `config.worktree`, `hooks/`, `commondir`, `gitdir`,
//!   `objects/info/alternates`, and the directory `core.hooksPath` names;
//! - the checkout's `.git` file and each submodule's `.git` file are
//!   read-only (a file mount point cannot be renamed or removed either).
//!
//! The walk is bounded: a repository with thousands of submodules gets the
//! first [`MAX_GIT_DIRS`] guarded and a note.

use super::git::{Checkout, GitInfo, core_key};
use std::fs;
use std::path::{Path, PathBuf};

/// Most git dirs guarded in one repository.
pub const MAX_GIT_DIRS: usize = 256;
/// Deepest nesting of `modules/` walked.
const MAX_DEPTH: usize = 8;

/// Files in a git dir that choose code, configuration or another git dir.
const POINTERS: [&str; 5] = [
    "config",
    "config.worktree",
    "commondir",
    "gitdir",
    "objects/info/alternates",
];

/// The guard for one checkout.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Guard {
    /// Directories bound over themselves, writable.
    pub pins: Vec<PathBuf>,
    /// Files and directories made read-only.
    pub protect: Vec<PathBuf>,
    /// Hooks directories that do not exist yet: created (empty) on the host
    /// first, so that they can be made read-only.
    pub create: Vec<PathBuf>,
    /// Pointer files that do not exist: no mount can guard them; the
    /// warden moves aside what the command creates there.
    pub absent: Vec<PathBuf>,
    /// Submodule git dirs' `config` files that set `core.worktree`: shown
    /// read-only without that key, which `git submodule update` would
    /// otherwise rewrite (git writes it only where it is set).
    pub worktree_configs: Vec<PathBuf>,
    /// Why the walk stopped early, when it did.
    pub note: Option<String>,
}

impl Guard {
    fn pin(&mut self, p: PathBuf) {
        if !self.pins.contains(&p) {
            self.pins.push(p);
        }
    }

    fn protect(&mut self, p: PathBuf) {
        if !self.protect.contains(&p) {
            self.protect.push(p);
        }
    }
}

/// The guard for a discovered checkout.
pub fn guard(info: &GitInfo) -> Guard {
    let mut g = Guard::default();
    let Some(top) = &info.top else { return g };
    let common = match info.checkout {
        Checkout::None => return g,
        Checkout::LinkedWorktree => info.roots[1].clone(),
        Checkout::Normal | Checkout::Submodule => info.roots[0].clone(),
    };
    let dot_git = top.join(".git");
    if info.checkout != Checkout::Normal {
        g.protect(dot_git);
        // The worktree's own admin dir (COMMON/worktrees/NAME).
        g.pin(info.roots[0].clone());
        guard_dir(&mut g, &info.roots[0], false, false, top);
    }
    let mut queue = vec![(common, 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = queue.pop() {
        seen += 1;
        if seen > MAX_GIT_DIRS {
            g.note = Some(format!(
                "more than {MAX_GIT_DIRS} git dirs: the rest are not guarded"
            ));
            break;
        }
        g.pin(dir.clone());
        let submodule = depth > 0 || info.checkout == Checkout::Submodule;
        guard_dir(&mut g, &dir, true, submodule, top);
        for wt in subdirs(&dir.join("worktrees")) {
            g.pin(dir.join("worktrees"));
            g.pin(wt.clone());
            guard_dir(&mut g, &wt, false, false, top);
        }
        if depth < MAX_DEPTH {
            let modules = dir.join("modules");
            for m in module_git_dirs(&modules, MAX_DEPTH) {
                let mut p = m.as_path();
                while let Some(parent) = p.parent() {
                    g.pin(parent.to_path_buf());
                    if parent == modules {
                        break;
                    }
                    p = parent;
                }
                submodule_checkout(&mut g, &m);
                queue.push((m, depth + 1));
            }
        }
    }
    g
}

/// The pointer files of one git dir; `common` dirs also own hooks.
fn guard_dir(g: &mut Guard, dir: &Path, common: bool, submodule: bool, top: &Path) {
    for name in POINTERS {
        let p = dir.join(name);
        if submodule && name == "config" && read_small(&p).and_then(|t| core_key(&t, "worktree")).is_some() {
            g.protect(p.clone());
            g.worktree_configs.push(p);
        } else if fs::symlink_metadata(&p).is_ok() {
            g.protect(p);
        } else if !g.absent.contains(&p) {
            g.absent.push(p);
        }
    }
    if !common {
        return;
    }
    let hooks = dir.join("hooks");
    if fs::symlink_metadata(&hooks).is_err() {
        g.create.push(hooks.clone());
    }
    g.protect(hooks);
    if let Some(hp) = read_small(&dir.join("config")).and_then(|t| core_key(&t, "hookspath")) {
        let hp = if hp.is_absolute() { hp } else { top.join(hp) };
        if let Ok(real) = fs::canonicalize(&hp) {
            g.protect(real);
        }
    }
}

/// A submodule's checkout (its git dir's `core.worktree`): the directory is
/// pinned and its `.git` file made read-only.
fn submodule_checkout(g: &mut Guard, gitdir: &Path) {
    let Some(wt) = read_small(&gitdir.join("config")).and_then(|t| core_key(&t, "worktree")) else {
        return;
    };
    let Ok(wt) = fs::canonicalize(gitdir.join(wt)) else {
        return;
    };
    let dot_git = wt.join(".git");
    if fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file()) {
        g.pin(wt);
        g.protect(dot_git);
    }
}

/// Git dirs under `modules/` (a submodule's name may hold slashes): a
/// directory with a HEAD file is one; others are walked into.
fn module_git_dirs(modules: &Path, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in subdirs(modules) {
        if d.join("HEAD").is_file() {
            out.push(d);
        } else if depth > 0 {
            out.extend(module_git_dirs(&d, depth - 1));
        }
        if out.len() > MAX_GIT_DIRS {
            break;
        }
    }
    out
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .take(MAX_GIT_DIRS + 1)
        .collect();
    v.sort();
    v
}

/// A git config without `core.worktree`: only lines are taken away, so the
/// result chooses no code the original does not. A key's continuation
/// lines (after a trailing backslash) go with it; a continuation of
/// another key is never read as a key.
pub fn without_core_worktree(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_core = false;
    let mut continued = false;
    let mut dropping = false;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let is_continuation = continued;
        continued = body.ends_with('\\') && !body.ends_with("\\\\");
        if is_continuation {
            if !dropping {
                out.push_str(line);
            }
            continue;
        }
        dropping = false;
        let mut l = body.trim_start();
        if let Some(rest) = l.strip_prefix('[') {
            let (section, after) = rest.split_once(']').unwrap_or((rest, ""));
            in_core = section.trim().eq_ignore_ascii_case("core");
            l = after.trim_start();
            if l.is_empty() {
                out.push_str(line);
                continue;
            }
        }
        let key = l.split(['=', ' ', '\t', ';', '#']).next().unwrap_or_default();
        if in_core && key.eq_ignore_ascii_case("worktree") {
            dropping = true;
            // A section header on the same line stays.
            if body.trim_start().starts_with('[') {
                let header_end = body.find(']').map_or(0, |i| i + 1);
                out.push_str(&body[..header_end]);
                out.push('\n');
            }
            continue;
        }
        out.push_str(line);
    }
    out
}

fn read_small(p: &Path) -> Option<String> {
    if fs::metadata(p).ok()?.len() > 1 << 20 {
        return None;
    }
    fs::read_to_string(p).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_worktree_is_taken_out_and_nothing_else() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tworktree = ../../../lib\n\tbare = false\n[remote \"origin\"]\n\turl = x\n\tworktree = stays\n";
        assert_eq!(
            without_core_worktree(text),
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = x\n\tworktree = stays\n"
        );
        // Case, a header on the key's line, continuation lines, a
        // continuation that looks like a key.
        assert_eq!(
            without_core_worktree("[CORE] WorkTree = a\\\n  b\n\tfsmonitor = x\\\nworktree = kept\n"),
            "[CORE]\n\tfsmonitor = x\\\nworktree = kept\n"
        );
        assert_eq!(
            without_core_worktree("[core]\nworktreex = 1\n"),
            "[core]\nworktreex = 1\n"
        );
    }

    #[test]
    fn normal_checkout_with_a_submodule_and_a_worktree() {
        let d = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(d.path()).unwrap();
        let git = base.join("repo/.git");
        let sub = git.join("modules/lib/a");
        for p in [
            &git.join("hooks"),
            &sub.join("hooks"),
            &git.join("worktrees/w1"),
            &base.join("repo/lib/a"),
        ] {
            fs::create_dir_all(p).unwrap();
        }
        fs::write(git.join("config"), "[core]\n").unwrap();
        fs::write(sub.join("HEAD"), "ref: x\n").unwrap();
        fs::write(sub.join("config"), "[core]\n\tworktree = ../../../../lib/a\n").unwrap();
        fs::write(base.join("repo/lib/a/.git"), "gitdir: ../../.git/modules/lib/a\n").unwrap();
        fs::write(git.join("worktrees/w1/commondir"), "../..\n").unwrap();
        fs::write(git.join("worktrees/w1/gitdir"), "/x/.git\n").unwrap();
        let info = GitInfo {
            checkout: Checkout::Normal,
            top: Some(base.join("repo")),
            roots: vec![git.clone()],
            note: None,
        };
        let g = guard(&info);
        for p in [
            &git,
            &git.join("worktrees"),
            &git.join("worktrees/w1"),
            &git.join("modules"),
            &git.join("modules/lib"),
            &sub,
            &base.join("repo/lib/a"),
        ] {
            assert!(g.pins.contains(p), "{p:?} not pinned: {:?}", g.pins);
        }
        for p in [
            git.join("config"),
            git.join("hooks"),
            git.join("worktrees/w1/commondir"),
            git.join("worktrees/w1/gitdir"),
            sub.join("config"),
            sub.join("hooks"),
            base.join("repo/lib/a/.git"),
        ] {
            assert!(g.protect.contains(&p), "{p:?} not protected: {:?}", g.protect);
        }
        // The submodule's config sets core.worktree: shown without it.
        assert_eq!(g.worktree_configs, vec![sub.join("config")]);
        assert!(g.create.is_empty(), "{:?}", g.create);
        assert_eq!(
            guard(&GitInfo {
                checkout: Checkout::None,
                top: None,
                roots: vec![],
                note: None
            }),
            Guard::default()
        );
    }
}
