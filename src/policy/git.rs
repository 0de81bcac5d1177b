//! Git discovery by reading files, never by running git, and deaf to
//! `GIT_DIR`/`GIT_COMMON_DIR`: the roots a commit needs, and only when the
//! checkout's pointers agree with each other.

use serde::Serialize;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// What kind of checkout the workspace is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Checkout {
    /// `.git` is a directory.
    Normal,
    /// `.git` is a file pointing at `COMMON/worktrees/NAME`.
    LinkedWorktree,
    /// `.git` is a file pointing into a superproject's `.git/modules`.
    Submodule,
    /// Not a git checkout, or pointers that do not agree.
    None,
}

impl std::fmt::Display for Checkout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Normal => "normal",
            Self::LinkedWorktree => "linked-worktree",
            Self::Submodule => "submodule",
            Self::None => "none",
        })
    }
}

/// The result of discovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GitInfo {
    pub checkout: Checkout,
    /// The checkout's top directory (where `.git` is).
    #[serde(serialize_with = "crate::lossy::opt_path")]
    pub top: Option<PathBuf>,
    /// Directories a commit writes to.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub roots: Vec<PathBuf>,
    /// Why no roots were granted, when `.git` was found but rejected.
    pub note: Option<String>,
}

impl GitInfo {
    fn none(note: Option<String>) -> Self {
        GitInfo {
            checkout: Checkout::None,
            top: None,
            roots: Vec::new(),
            note,
        }
    }
}

/// Longest a pointer file may be; real ones are one short line.
const MAX_POINTER: u64 = 4096;

/// Discovers the checkout that contains `start` (an absolute, canonical path).
pub fn discover(start: &Path) -> GitInfo {
    let mut dir = Some(start);
    while let Some(d) = dir {
        let dot_git = d.join(".git");
        match fs::symlink_metadata(&dot_git) {
            Ok(m) if m.is_dir() => {
                return GitInfo {
                    checkout: Checkout::Normal,
                    top: Some(d.to_path_buf()),
                    roots: vec![dot_git],
                    note: None,
                };
            }
            Ok(m) if m.is_file() => return from_git_file(d, &dot_git),
            Ok(_) => {
                return GitInfo::none(Some(format!(
                    "{} is neither a file nor a directory",
                    dot_git.display()
                )));
            }
            Err(_) => dir = d.parent(),
        }
    }
    GitInfo::none(None)
}

fn from_git_file(top: &Path, dot_git: &Path) -> GitInfo {
    let reject = |why: String| GitInfo {
        note: Some(format!("{}: {why}; no git roots granted", dot_git.display())),
        ..GitInfo::none(None)
    };
    let Some(target) = read_pointer(dot_git, "gitdir: ") else {
        return reject("not a `gitdir:` pointer".into());
    };
    let Ok(gitdir) = fs::canonicalize(top.join(&target)) else {
        return reject(format!("gitdir {} does not exist", target.display()));
    };
    if !gitdir.is_dir() {
        return reject(format!("gitdir {} is not a directory", gitdir.display()));
    }
    if gitdir.join("commondir").is_file() {
        linked_worktree(top, dot_git, gitdir).unwrap_or_else(reject)
    } else {
        submodule(top, gitdir).unwrap_or_else(reject)
    }
}

/// `COMMON/worktrees/NAME` must exist and its `gitdir` file must point back
/// at this worktree's `.git` file.
fn linked_worktree(top: &Path, dot_git: &Path, gitdir: PathBuf) -> Result<GitInfo, String> {
    let common_rel = read_pointer(&gitdir.join("commondir"), "").ok_or("unreadable commondir")?;
    let common = fs::canonicalize(gitdir.join(&common_rel))
        .map_err(|_| format!("commondir {} does not exist", common_rel.display()))?;
    let name = gitdir.file_name().ok_or("gitdir has no name")?;
    let expected = common.join("worktrees").join(name);
    if fs::canonicalize(&expected).ok().as_deref() != Some(gitdir.as_path()) {
        return Err(format!("{} is not {}", gitdir.display(), expected.display()));
    }
    let back = read_pointer(&gitdir.join("gitdir"), "").ok_or("no gitdir back-pointer")?;
    let back = fs::canonicalize(gitdir.join(back)).map_err(|_| "gitdir back-pointer does not exist")?;
    let ours = fs::canonicalize(dot_git).map_err(|_| "cannot resolve .git")?;
    if back != ours {
        return Err(format!(
            "back-pointer {} does not point at {}",
            back.display(),
            ours.display()
        ));
    }
    Ok(GitInfo {
        checkout: Checkout::LinkedWorktree,
        top: Some(top.to_path_buf()),
        roots: vec![gitdir, common],
        note: None,
    })
}

/// A submodule's git dir lives in the superproject's `.git/modules/…`, and its
/// `core.worktree` (when set) must lead back to this checkout.
fn submodule(top: &Path, gitdir: PathBuf) -> Result<GitInfo, String> {
    let modules = gitdir
        .ancestors()
        .find(|a| {
            a.file_name() == Some("modules".as_ref())
                && a.parent().and_then(Path::file_name) == Some(".git".as_ref())
        })
        .ok_or_else(|| format!("{} is not under a superproject's .git/modules", gitdir.display()))?;
    if !modules.parent().is_some_and(Path::is_dir) || !gitdir.join("HEAD").is_file() {
        return Err(format!("{} is not a git directory", gitdir.display()));
    }
    // The superproject is the checkout above this one: the git dir must be
    // its git dir's modules/<path of this checkout in it>.
    let above = top
        .parent()
        .map(discover)
        .ok_or("no superproject above the checkout")?;
    let (Some(super_top), Some(super_dir)) = (&above.top, above.roots.last()) else {
        return Err("no superproject above the checkout".into());
    };
    let super_dir = match above.checkout {
        Checkout::LinkedWorktree => &above.roots[0],
        _ => super_dir,
    };
    let rel = top
        .strip_prefix(super_top)
        .map_err(|_| "checkout outside its superproject")?;
    let expected = super_dir.join("modules").join(rel);
    if fs::canonicalize(&expected).ok().as_deref() != Some(gitdir.as_path()) {
        return Err(format!(
            "gitdir {} is not the superproject's {}",
            gitdir.display(),
            expected.display()
        ));
    }
    if let Some(wt) = core_worktree(&gitdir.join("config")) {
        let wt = fs::canonicalize(gitdir.join(&wt)).map_err(|_| "core.worktree does not exist")?;
        if wt != top {
            return Err(format!("core.worktree {} is not {}", wt.display(), top.display()));
        }
    }
    Ok(GitInfo {
        checkout: Checkout::Submodule,
        top: Some(top.to_path_buf()),
        roots: vec![gitdir],
        note: None,
    })
}

/// Reads a one-line pointer file with the given prefix.
fn read_pointer(path: &Path, prefix: &str) -> Option<PathBuf> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_POINTER {
        return None;
    }
    let text = fs::read_to_string(path).ok()?;
    parse_pointer(&text, prefix)
}

/// `gitdir: PATH\n` → PATH. Pure, so it can be fuzzed.
pub fn parse_pointer(text: &str, prefix: &str) -> Option<PathBuf> {
    let line = text.lines().next()?;
    let rest = line.strip_prefix(prefix)?.trim_end_matches('\r');
    if rest.is_empty() || rest.contains('\0') {
        return None;
    }
    Some(PathBuf::from(rest))
}

/// `worktree = …` in the `[core]` section of a git config file.
fn core_worktree(config: &Path) -> Option<PathBuf> {
    let meta = fs::metadata(config).ok()?;
    if meta.len() > 1 << 20 {
        return None;
    }
    parse_core_worktree(&fs::read_to_string(config).ok()?)
}

/// Pure part of [`core_worktree`].
pub fn parse_core_worktree(text: &str) -> Option<PathBuf> {
    core_key(text, "worktree")
}

/// A key of the `[core]` section (case-insensitive), as a path.
/// Whether a `[core]` boolean is on in a config's text.
pub(crate) fn core_flag(text: &str, key: &str) -> bool {
    core_key(text, key).is_some_and(|v| {
        let v = v.to_string_lossy().to_ascii_lowercase();
        ["true", "yes", "on", "1"].contains(&v.as_str())
    })
}

pub(crate) fn core_key(text: &str, key: &str) -> Option<PathBuf> {
    let key = key.to_ascii_lowercase();
    let v = config_values(text, &|sec, sub, k| sec == "core" && sub.is_none() && k == key).pop()?;
    (!v.is_empty()).then(|| PathBuf::from(v))
}

/// Every value of the keys `want` takes (section and key lowercased, the
/// subsection as written), in order (git takes the last of a single-valued
/// key), read as git reads a config: a key on a header's line too, a
/// comment after a value, quotes, escapes, continued lines, a BOM.
pub(crate) fn config_values(text: &str, want: &dyn Fn(&str, Option<&str>, &str) -> bool) -> Vec<String> {
    let mut c = text.trim_start_matches('\u{feff}').chars().peekable();
    let (mut section, mut sub): (String, Option<String>) = (String::new(), None);
    let mut out = Vec::new();
    while let Some(&ch) = c.peek() {
        if ch.is_whitespace() {
            c.next();
        } else if ch == '#' || ch == ';' {
            while c.next().is_some_and(|x| x != '\n') {}
        } else if ch == '[' {
            c.next();
            let head: String = c.by_ref().take_while(|x| *x != ']').collect();
            (section, sub) = header(&head);
        } else {
            let key: String =
                std::iter::from_fn(|| c.next_if(|x| x.is_ascii_alphanumeric() || *x == '-')).collect();
            if key.is_empty() {
                // Not a key git reads: the rest of the line is skipped.
                while c.next().is_some_and(|x| x != '\n') {}
                continue;
            }
            while c.next_if(|x| *x == ' ' || *x == '\t').is_some() {}
            let value = if c.next_if_eq(&'=').is_some() {
                value(&mut c)
            } else {
                "true".into()
            };
            if want(&section, sub.as_deref(), &key.to_ascii_lowercase()) {
                out.push(value);
            }
        }
    }
    out
}

/// A section header's name (lowercased) and subsection: `core`,
/// `remote "origin"`, the old `branch.main`.
fn header(head: &str) -> (String, Option<String>) {
    let head = head.trim();
    match head.split_once(['"', ' ']) {
        Some((name, rest)) => {
            let rest = rest.trim().trim_start_matches('"');
            let rest = rest.strip_suffix('"').unwrap_or(rest);
            (
                name.trim().to_ascii_lowercase(),
                Some(rest.replace("\\\"", "\"").replace("\\\\", "\\")),
            )
        }
        None => match head.split_once('.') {
            Some((name, rest)) => (name.to_ascii_lowercase(), Some(rest.to_ascii_lowercase())),
            None => (head.to_ascii_lowercase(), None),
        },
    }
}

/// A value up to its line's end or an unquoted comment: quotes dropped,
/// escapes taken, a backslash at the line's end continuing it, trailing
/// blanks outside quotes dropped.
fn value(c: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    while c.next_if(|x| *x == ' ' || *x == '\t').is_some() {}
    let (mut v, mut quoted, mut kept) = (String::new(), false, 0);
    while let Some(ch) = c.next() {
        match ch {
            '\n' => break,
            '"' => quoted = !quoted,
            '#' | ';' if !quoted => {
                while c.next().is_some_and(|x| x != '\n') {}
                break;
            }
            '\\' => {
                match c.next() {
                    Some('\n') => {}
                    Some('n') => v.push('\n'),
                    Some('t') => v.push('\t'),
                    Some('b') => {
                        v.pop();
                    }
                    Some(x) => v.push(x),
                    None => break,
                }
                kept = v.len();
                continue;
            }
            x => v.push(x),
        }
        if quoted || !ch.is_whitespace() {
            kept = v.len();
        }
    }
    v.truncate(kept);
    v
}

/// A ref and the refs git takes its short name for first, where it is a
/// branch (`refs/NAME` and `refs/tags/NAME` before `refs/heads/NAME`: a
/// tag named `main` made `git reset --hard main` take it over the branch).
pub fn with_shadows(r: &Path) -> Vec<PathBuf> {
    let mut all = vec![r.to_path_buf()];
    if let Ok(short) = r.strip_prefix("refs/heads") {
        all.push(Path::new("refs").join(short));
        all.push(Path::new("refs/tags").join(short));
    }
    all
}

/// The refs git keeps per checkout (per worktree), the main checkout's
/// among the shared refs: a bisect's terms, a rebase's labels, the
/// checkout's own. Held whole where the main checkout is outside the roots.
pub const PER_CHECKOUT: [&str; 3] = ["refs/bisect", "refs/rewritten", "refs/worktree"];

/// How much of the end of a checkout's HEAD reflog is read for the
/// branch `git checkout -` goes back to.
pub const REFLOG_TAIL: u64 = 1 << 20;

/// The branch a HEAD's text names (`ref: refs/heads/main`); None where
/// it is detached.
pub fn head_branch(head: &str) -> Option<PathBuf> {
    head.trim_end().strip_prefix("ref: ").map(PathBuf::from)
}

/// The branches checked out in a git dir, as `read` gives its files: its
/// own HEAD's and each linked worktree's (`worktrees/NAME/HEAD`, NAME
/// among `worktrees`); git deletes none of them.
pub fn checked_out(
    read: &dyn Fn(&Path) -> Option<String>,
    worktrees: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<PathBuf> {
    let heads = worktrees
        .into_iter()
        .map(|n| Path::new("worktrees").join(n).join("HEAD"));
    std::iter::once(PathBuf::from("HEAD"))
        .chain(heads)
        .filter_map(|h| head_branch(&read(&h)?))
        .collect()
}

/// The branches a checkout comes back to, from its own files as `read`
/// gives them (`HEAD`, `BISECT_START`, `rebase-merge/head-name`,
/// `rebase-apply/head-name`) and the end of its HEAD's reflog as
/// `reflog_tail` gives it (up to REFLOG_TAIL bytes): the one its HEAD
/// names; the one it was on before (`git checkout -`); mid-bisect (HEAD
/// detached) the one `git bisect reset` checks out again, a short name;
/// mid-rebase the one the rebase rewrites.
pub fn comes_back_to(read: &dyn Fn(&str) -> Option<String>, reflog_tail: Option<&[u8]>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    out.extend(reflog_tail.and_then(previous_branch));
    if let Some(head) = read("HEAD") {
        out.extend(head_branch(&head));
    }
    if let Some(start) = read("BISECT_START") {
        let start = start.trim_end();
        // A commit's name where the bisect started detached: held as a
        // branch's too, which costs nothing.
        if !start.is_empty() {
            out.push(if start.starts_with("refs/") {
                PathBuf::from(start)
            } else {
                Path::new("refs/heads").join(start)
            });
        }
    }
    for f in ["rebase-merge/head-name", "rebase-apply/head-name"] {
        out.extend(read(f).map(|n| PathBuf::from(n.trim_end())));
    }
    out.retain(|r| r.starts_with("refs") && r.components().all(|c| matches!(c, Component::Normal(_))));
    out
}

/// The branch `git checkout -` (`@{-1}`) takes from the end of a HEAD
/// reflog: the one the last `checkout: moving from A to B` left, as git
/// reads it (from the newest line back; a line cut at the start of the
/// tail is not read).
pub fn previous_branch(tail: &[u8]) -> Option<PathBuf> {
    let lines = tail.split(|b| *b == b'\n');
    lines.rev().find_map(|line| {
        let tab = line.iter().position(|b| *b == b'\t')?;
        let message = line[tab + 1..].strip_prefix(b"checkout: moving from ")?;
        let end = message.windows(4).position(|w| w == b" to ")?;
        let name = std::str::from_utf8(&message[..end]).ok()?;
        (!name.is_empty()).then(|| Path::new("refs/heads").join(name))
    })
}

/// What a repository keeps for its checkouts outside the roots: the
/// `branches` they come back to, the stash wherever one lies outside
/// (`any_outside`: it is every checkout's, and a user's entry made in one
/// outside is popped there), and the main checkout's own refs where it
/// does; each with the names that shadow it, and their logs.
pub fn held_for_outside(mut branches: Vec<PathBuf>, any_outside: bool, main_outside: bool) -> Vec<PathBuf> {
    if any_outside {
        branches.push("refs/stash".into());
    }
    if main_outside {
        branches.extend(PER_CHECKOUT.map(PathBuf::from));
    }
    held_names(&branches)
}

/// What stays the host's for `refs` (branches and the stash checked out
/// or kept outside the roots): each, the names that shadow it, and their
/// logs.
pub fn held_names(refs: &[PathBuf]) -> Vec<PathBuf> {
    refs.iter()
        .flat_map(|r| with_shadows(r))
        .flat_map(|r| [Path::new("logs").join(&r), r])
        .collect()
}

/// Whether a `packed-refs` (`new`) names one of the `held` refs otherwise
/// than the host's (`old`) does: moved, made or removed.
pub fn packed_moves_held(held: &[PathBuf], new: &[u8], old: Option<&[u8]>) -> bool {
    let (new, old) = (
        String::from_utf8_lossy(new),
        String::from_utf8_lossy(old.unwrap_or_default()),
    );
    held.iter()
        .filter(|h| h.starts_with("refs"))
        .filter_map(|h| h.to_str())
        .any(|name| packed(&new, name) != packed(&old, name))
}

/// Whether the `packed-refs` `new` drops the line `old` has for `name`
/// (the ref deleted, where no loose file holds it).
pub fn packed_drops(name: &str, new: &[u8], old: Option<&[u8]>) -> bool {
    let line = |text: &[u8]| {
        String::from_utf8_lossy(text)
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
            .any(|l| l.split_once(' ').is_some_and(|(_, n)| n == name))
    };
    old.is_some_and(line) && !line(new)
}

/// The lines a `packed-refs` gives `name` and the refs below it (a held
/// namespace: `refs/bisect`).
fn packed<'a>(text: &'a str, name: &str) -> Vec<(&'a str, &'a str)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, n)| *n == name || n.strip_prefix(name).is_some_and(|rest| rest.starts_with('/')))
        .collect()
}

/// Whether a ref's or HEAD's content (`data`) is a symbolic ref to one of
/// the `held` names, or below one.
pub fn names_held(held: &[PathBuf], data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    text.trim_end()
        .strip_prefix("ref:")
        .map(str::trim)
        .is_some_and(|target| !target.is_empty() && touches_held(held, Path::new(target)))
}

/// Whether a state file of a checkout (`rel` in its git dir, `data` its
/// content) names one of the `held` refs for host git to move or check
/// out: `BISECT_START` (a short name: `git bisect reset` checks it out),
/// a rebase's `head-name` (`--continue` moves it, `--abort` checks it
/// out), its `update-refs` and the `update-ref` lines of its todo (host
/// `--continue` moves each, checked out elsewhere or not).
pub fn state_names_held(held: &[PathBuf], rel: &Path, data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let in_state = rel.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some("rebase-merge" | "rebase-apply" | "sequencer")
        )
    });
    let held_ref = |r: &str| r.starts_with("refs/") && touches_held(held, Path::new(r));
    match name {
        "BISECT_START" => {
            let start = text.trim();
            !start.is_empty() && (held_ref(start) || touches_held(held, &Path::new("refs/heads").join(start)))
        }
        "head-name" | "update-refs" if in_state => text.lines().any(|l| held_ref(l.trim())),
        "git-rebase-todo" | "done" if in_state => text.lines().any(|l| {
            let mut w = l.split_whitespace();
            matches!(w.next(), Some("update-ref" | "u")) && w.next().is_some_and(held_ref)
        }),
        _ => false,
    }
}

/// Whether `rel` (a path in a git dir) is one of the `held` names, below
/// one (a held namespace), or a directory holding one.
pub fn touches_held(held: &[PathBuf], rel: &Path) -> bool {
    held.iter().any(|h| h.starts_with(rel) || rel.starts_with(h))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_held_ref_moved_made_or_removed_in_packed_refs_is_seen() {
        let held = [
            PathBuf::from("refs/heads/main"),
            PathBuf::from("logs/refs/heads/main"),
        ];
        let old = b"# pack-refs with: peeled fully-peeled sorted\naaaa refs/heads/main\nbbbb refs/heads/w\n";
        let other =
            b"# pack-refs with: peeled fully-peeled sorted\naaaa refs/heads/main\ncccc refs/heads/w\n";
        assert!(
            !super::packed_moves_held(&held, other, Some(old)),
            "another branch moves freely"
        );
        let moved = b"cccc refs/heads/main\nbbbb refs/heads/w\n";
        assert!(super::packed_moves_held(&held, moved, Some(old)));
        let removed = b"bbbb refs/heads/w\n";
        assert!(super::packed_moves_held(&held, removed, Some(old)));
        assert!(super::packed_moves_held(&held, old, None), "made");
        // A peeled line is no ref of that name.
        let peeled = b"aaaa refs/heads/main\n^dddd refs/heads/main\n";
        assert!(!super::packed_moves_held(&held, peeled, Some(old)));
    }

    #[test]
    fn a_held_namespace_holds_every_ref_below_it_and_no_neighbour() {
        use std::path::{Path, PathBuf};
        let held = [PathBuf::from("refs/bisect")];
        let old = b"aaaa refs/bisect/bad\nbbbb refs/bisect/good-1\n";
        let moved = b"cccc refs/bisect/bad\nbbbb refs/bisect/good-1\n";
        let made = b"aaaa refs/bisect/bad\nbbbb refs/bisect/good-1\ncccc refs/bisect/good-2\n";
        let neighbour = b"aaaa refs/bisect/bad\nbbbb refs/bisect/good-1\ncccc refs/bisectx\n";
        assert!(super::packed_moves_held(&held, moved, Some(old)));
        assert!(super::packed_moves_held(&held, made, Some(old)));
        assert!(!super::packed_moves_held(&held, neighbour, Some(old)));
        assert!(super::touches_held(&held, Path::new("refs/bisect/bad")));
        assert!(
            super::touches_held(&held, Path::new("refs")),
            "a directory holding it"
        );
        assert!(!super::touches_held(&held, Path::new("refs/bisectx")));
    }

    #[test]
    fn a_symbolic_ref_to_a_held_name_is_seen_and_an_object_id_is_none() {
        use std::path::PathBuf;
        let held = [PathBuf::from("refs/heads/main"), PathBuf::from("refs/bisect")];
        assert!(super::names_held(&held, b"ref: refs/heads/main\n"));
        assert!(super::names_held(&held, b"ref:refs/bisect/bad"));
        assert!(!super::names_held(&held, b"ref: refs/heads/mainx\n"));
        assert!(!super::names_held(
            &held,
            b"0123456789012345678901234567890123456789\n"
        ));
        assert!(!super::names_held(&held, b"ref: \n"));
    }

    #[test]
    fn state_that_names_a_held_branch_for_host_git_to_move_is_seen() {
        use std::path::{Path, PathBuf};
        let held = [PathBuf::from("refs/heads/feat")];
        let seen = |rel: &str, data: &str| super::state_names_held(&held, Path::new(rel), data.as_bytes());
        assert!(seen("BISECT_START", "feat\n"));
        assert!(!seen("BISECT_START", "main\n"));
        assert!(seen("rebase-merge/head-name", "refs/heads/feat\n"));
        assert!(seen("worktrees/w/rebase-apply/head-name", "refs/heads/feat\n"));
        assert!(seen(
            "rebase-merge/update-refs",
            "refs/heads/x\naaaa\nbbbb\nrefs/heads/feat\naaaa\nbbbb\n"
        ));
        assert!(seen(
            "rebase-merge/git-rebase-todo",
            "pick abc one\nupdate-ref refs/heads/feat\n"
        ));
        assert!(seen("rebase-merge/done", "u refs/heads/feat\n"));
        assert!(
            !seen(
                "rebase-merge/git-rebase-todo",
                "pick abc mentions refs/heads/feat\n"
            ),
            "a subject is no order"
        );
        assert!(!seen("head-name", "refs/heads/feat\n"), "not a rebase's");
    }

    #[test]
    fn a_checkout_comes_back_to_its_branch_its_bisect_s_and_its_rebase_s() {
        use std::path::PathBuf;
        let files = |f: &str| -> Option<String> {
            match f {
                "HEAD" => Some("0123456789012345678901234567890123456789\n".into()),
                "BISECT_START" => Some("main\n".into()),
                "rebase-merge/head-name" => Some("refs/heads/topic\n".into()),
                "rebase-apply/head-name" => Some("refs/../../x\n".into()),
                _ => None,
            }
        };
        assert_eq!(
            super::comes_back_to(&files, None),
            [PathBuf::from("refs/heads/main"), "refs/heads/topic".into()],
            "a detached HEAD names none; a name with `..` is none"
        );
        let on_branch = |f: &str| (f == "HEAD").then(|| "ref: refs/heads/w\n".to_string());
        assert_eq!(
            super::comes_back_to(&on_branch, None),
            [PathBuf::from("refs/heads/w")]
        );
        let reflog = b"cut line\n\
            0 1 U <u@h> 1 +0000\tcheckout: moving from prev to w\n\
            1 2 U <u@h> 2 +0000\tcommit: checkout: moving from x to y\n\
            2 3 U <u@h> 3 +0000\tcommit: more\n";
        assert_eq!(
            super::comes_back_to(&on_branch, Some(reflog)),
            [PathBuf::from("refs/heads/prev"), "refs/heads/w".into()],
            "the previous branch, from the newest move back (a subject is no move)"
        );
        assert_eq!(
            super::previous_branch(b"0 1 U <u@h> 1 +0000\tcommit: one\n"),
            None
        );
    }

    #[test]
    fn a_branch_comes_with_the_names_that_shadow_it() {
        use std::path::{Path, PathBuf};
        let all = super::with_shadows(Path::new("refs/heads/main"));
        assert_eq!(
            all,
            [
                PathBuf::from("refs/heads/main"),
                "refs/main".into(),
                "refs/tags/main".into()
            ]
        );
        assert_eq!(
            super::with_shadows(Path::new("refs/stash")),
            [PathBuf::from("refs/stash")]
        );
    }

    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn config_values_are_read_as_git_reads_them() {
        let hp = |t: &str| core_key(t, "hooksPath");
        assert_eq!(
            hp("[core]\n\thooksPath = .githooks # managed\n"),
            Some(".githooks".into())
        );
        assert_eq!(hp("[core] hooksPath=a\n"), Some("a".into()));
        assert_eq!(
            hp("[core]\nhookspath = a\nHOOKSPATH = \"b c\" ; x\n"),
            Some("b c".into())
        );
        assert_eq!(hp("\u{feff}[Core]\n  hooksPath = d\\\ne\n"), Some("de".into()));
        assert_eq!(
            hp("[core \"x\"]\nhooksPath = no\n[remote \"o\"]\nhooksPath=no\n"),
            None
        );
        let inc = config_values(
            "[include]\npath = ../.gitconfig\n[includeIf \"gitdir:/w/\"]\n\tpath = ~/x\n",
            &|s, _, k| (s == "include" || s == "includeif") && k == "path",
        );
        assert_eq!(inc, ["../.gitconfig", "~/x"]);
    }

    fn tmp() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = fs::canonicalize(d.path()).unwrap();
        (d, p)
    }

    /// repo/.git (normal) with a linked worktree `wt` named `w1`.
    fn worktree(base: &Path) -> (PathBuf, PathBuf, PathBuf) {
        let common = base.join("repo/.git");
        let gitdir = common.join("worktrees/w1");
        let wt = base.join("wt");
        fs::create_dir_all(&gitdir).unwrap();
        fs::create_dir_all(wt.join("src")).unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
        fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        fs::write(gitdir.join("gitdir"), format!("{}\n", wt.join(".git").display())).unwrap();
        (common, gitdir, wt)
    }

    #[test]
    fn normal_checkout_from_a_subdirectory() {
        let (_d, base) = tmp();
        fs::create_dir_all(base.join("repo/.git")).unwrap();
        fs::create_dir_all(base.join("repo/a/b")).unwrap();
        let g = discover(&base.join("repo/a/b"));
        assert_eq!(g.checkout, Checkout::Normal);
        assert_eq!(g.top, Some(base.join("repo")));
        assert_eq!(g.roots, vec![base.join("repo/.git")]);
    }

    #[test]
    fn no_checkout() {
        let (_d, base) = tmp();
        let g = discover(&base);
        // The temp dir could sit inside a checkout on some machines; at
        // least it must not be a rejected one.
        assert!(g.note.is_none());
    }

    #[test]
    fn linked_worktree_grants_gitdir_and_common() {
        let (_d, base) = tmp();
        let (common, gitdir, wt) = worktree(&base);
        let g = discover(&wt.join("src"));
        assert_eq!(g.checkout, Checkout::LinkedWorktree, "{:?}", g.note);
        assert_eq!(g.roots, vec![gitdir, common]);
        assert_eq!(g.top, Some(wt));
    }

    #[test]
    fn relative_gitdir_pointer() {
        let (_d, base) = tmp();
        let (_common, gitdir, wt) = worktree(&base);
        fs::write(wt.join(".git"), "gitdir: ../repo/.git/worktrees/w1\n").unwrap();
        let g = discover(&wt);
        assert_eq!(g.checkout, Checkout::LinkedWorktree);
        assert_eq!(g.roots[0], gitdir);
    }

    #[test]
    fn forged_back_pointer_gives_no_roots() {
        let (_d, base) = tmp();
        let (_common, gitdir, wt) = worktree(&base);
        fs::create_dir_all(base.join("other")).unwrap();
        fs::write(base.join("other/.git"), "x").unwrap();
        fs::write(
            gitdir.join("gitdir"),
            format!("{}\n", base.join("other/.git").display()),
        )
        .unwrap();
        let g = discover(&wt);
        assert_eq!(g.checkout, Checkout::None);
        assert!(g.roots.is_empty());
        assert!(g.note.unwrap().contains("back-pointer"));
    }

    #[test]
    fn gitdir_outside_worktrees_dir_is_rejected() {
        let (_d, base) = tmp();
        let (_common, gitdir, wt) = worktree(&base);
        // A look-alike elsewhere: commondir points at the real repo, but the
        // gitdir is not COMMON/worktrees/NAME.
        let fake = base.join("secrets/w1");
        fs::create_dir_all(&fake).unwrap();
        fs::write(
            fake.join("commondir"),
            format!("{}\n", base.join("repo/.git").display()),
        )
        .unwrap();
        fs::write(fake.join("gitdir"), format!("{}\n", wt.join(".git").display())).unwrap();
        fs::write(wt.join(".git"), format!("gitdir: {}\n", fake.display())).unwrap();
        let g = discover(&wt);
        assert_eq!(g.checkout, Checkout::None, "{g:?}");
        drop(gitdir);
    }

    #[test]
    fn pointer_into_home_without_commondir_is_rejected() {
        let (_d, base) = tmp();
        fs::create_dir_all(base.join("home/.ssh")).unwrap();
        fs::create_dir_all(base.join("wt")).unwrap();
        fs::write(
            base.join("wt/.git"),
            format!("gitdir: {}\n", base.join("home/.ssh").display()),
        )
        .unwrap();
        let g = discover(&base.join("wt"));
        assert_eq!(g.checkout, Checkout::None);
        assert!(g.roots.is_empty());
    }

    #[test]
    fn missing_and_looping_pointers() {
        let (_d, base) = tmp();
        fs::create_dir_all(base.join("wt")).unwrap();
        fs::write(base.join("wt/.git"), "gitdir: /nonexistent/qwrap\n").unwrap();
        assert_eq!(discover(&base.join("wt")).checkout, Checkout::None);
        symlink(base.join("loop"), base.join("loop")).unwrap();
        fs::write(
            base.join("wt/.git"),
            format!("gitdir: {}\n", base.join("loop").display()),
        )
        .unwrap();
        assert_eq!(discover(&base.join("wt")).checkout, Checkout::None);
        fs::write(base.join("wt/.git"), "garbage\n").unwrap();
        assert_eq!(discover(&base.join("wt")).checkout, Checkout::None);
    }

    #[test]
    fn submodule_checkout() {
        let (_d, base) = tmp();
        let gitdir = base.join("super/.git/modules/lib");
        fs::create_dir_all(&gitdir).unwrap();
        fs::create_dir_all(base.join("super/lib")).unwrap();
        fs::write(gitdir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        fs::write(gitdir.join("config"), "[core]\n\tworktree = ../../../lib\n").unwrap();
        fs::write(base.join("super/lib/.git"), "gitdir: ../.git/modules/lib\n").unwrap();
        let g = discover(&base.join("super/lib"));
        assert_eq!(g.checkout, Checkout::Submodule, "{:?}", g.note);
        assert_eq!(g.roots, vec![gitdir.clone()]);
        // A core.worktree that leads elsewhere is a forgery.
        fs::write(gitdir.join("config"), "[core]\n\tworktree = /\n").unwrap();
        assert_eq!(discover(&base.join("super/lib")).checkout, Checkout::None);
    }

    #[test]
    fn pointer_parsing() {
        assert_eq!(
            parse_pointer("gitdir: /a/b\n", "gitdir: "),
            Some(PathBuf::from("/a/b"))
        );
        assert_eq!(
            parse_pointer("gitdir: rel\r\n", "gitdir: "),
            Some(PathBuf::from("rel"))
        );
        assert_eq!(parse_pointer("gitdir:\n", "gitdir: "), None);
        assert_eq!(parse_pointer("", ""), None);
        assert_eq!(parse_pointer("../..\n", ""), Some(PathBuf::from("../..")));
        assert_eq!(
            parse_core_worktree("[user]\nworktree = /x\n[core]\n  bare = false\n  worktree = \"../a b\"\n"),
            Some(PathBuf::from("../a b"))
        );
        assert_eq!(parse_core_worktree("[core]\n"), None);
    }
}
