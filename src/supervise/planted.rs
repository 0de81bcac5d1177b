//! Repositories the command made: a `.git` (a directory or a pointer file),
//! or a git dir by another name (a bare one, or one whose `core.worktree`
//! names a work tree), below a writable root that was not there when the
//! sandbox started. No
//! mount can guard a name that does not exist yet, and host git trusts a
//! repository's own config and hooks, so each one is named when the
//! sandbox ends, with what in it would run a program under host git. One
//! that holds such a thing is moved aside (`.git.qwrap-held`; a bare one's
//! `HEAD.qwrap-held`), so that no host git takes it for a repository until
//! the user has looked; a plain one stays (it may be the work asked for:
//! `git init`).

use super::git_dir_risks::{
    LOOKED, changed, config_bytes, disarm, is, lstat, objects_from_now, repo_changed_since, risks, there,
    work_tree_reads,
};
use crate::plan::RepoScan;
use crate::sys::kernel as k;
use rustix::fd::OwnedFd;
use rustix::fs::FileType;
use std::path::Path;

/// The repositories there at the start, by what their paths named then
/// (device and inode, not followed): one the command put in the place of
/// another (`mv app old; git init app`) is one it made, and one it moved
/// (`old`) is still the user's. And when the sandbox started: a
/// repository where the walk at the start did not look (deep, or in
/// `node_modules`) is the command's when it, its config or a hook was
/// made or changed since.
pub(crate) struct Known(
    Vec<(u64, u64, u64)>,
    std::time::SystemTime,
    /// What host git reads as config or hooks: each path's file then.
    Vec<(std::path::PathBuf, Option<(u64, u64)>)>,
    /// Those paths as config spells them, through a link: where each led.
    Vec<(std::path::PathBuf, Option<std::path::PathBuf>)>,
);

impl Known {
    pub(crate) fn now(scan: &RepoScan) -> Known {
        // The kernel's file times run on a coarse clock (a tick behind).
        let since = std::time::SystemTime::now() - std::time::Duration::from_millis(50);
        let files = scan.trusted.iter().map(|p| (p.clone(), file_id(p))).collect();
        let ways = scan
            .ways
            .iter()
            .map(|p| (p.clone(), k::canonicalize(p).ok()))
            .collect();
        Known(
            scan.known.iter().filter_map(|p| identity(p)).collect(),
            since,
            files,
            ways,
        )
    }

    fn holds(&self, p: &Path) -> bool {
        identity(p).is_some_and(|id| self.0.contains(&id))
    }
}

/// The file a path names, by device and inode (never through a link).
fn file_id(p: &Path) -> Option<(u64, u64)> {
    lstat(p).map(|m| (m.st_dev, m.st_ino))
}

/// Device, inode and, for a git dir by another name (bare: no mount
/// guards it, and it can be removed), a hash of what in it would run
/// something (its risks and its config files' bytes). A `.git` is guarded
/// while the command runs (its config is the sandbox's own copy), and the
/// host's git may change it meanwhile: its device and inode only.
fn identity(p: &Path) -> Option<(u64, u64, u64)> {
    use std::hash::{Hash, Hasher};
    let m = lstat(p)?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    if FileType::from_raw_mode(m.st_mode) != FileType::Symlink && p.file_name().is_some_and(|n| n != ".git") {
        // A linked worktree's own git dir (guarded, its state vetted on the
        // way out) goes through a rebase or cherry-pick of the user's: an
        // operation stopped there is no change of its identity (its HEAD
        // had gone aside after every `rebase -i` stopped inside).
        let worktree = there(&p.join("commondir"));
        let stopped = |r: &String| {
            ["rebase-merge/", "rebase-apply/", "sequencer/"]
                .iter()
                .any(|d| r.starts_with(d))
        };
        let r: Vec<String> = risks(p)
            .into_iter()
            .filter(|r| !(worktree && stopped(r)))
            .collect();
        r.hash(&mut h);
        for c in ["config", "config.worktree"] {
            config_bytes(&p.join(c)).ok().flatten().hash(&mut h);
        }
    }
    Some((m.st_dev, m.st_ino, h.finish()))
}

/// Holds aside each repository made inside that names a program, and
/// says each (where qwrap's stderr is kept: `fd`).
pub(crate) fn say(scan: &RepoScan, known: &Known, fd: Option<&OwnedFd>) {
    objects_from_now();
    let mut now = crate::policy::repositories_below(&scan.roots, crate::policy::Reach::Whole);
    hold_and_say(scan, known, fd, &now);
    now.give_modes_back();
}

/// Each repository made inside held aside where it names a program, and
/// said.
fn hold_and_say(scan: &RepoScan, known: &Known, fd: Option<&OwnedFd>, now: &crate::policy::Found) {
    // What the user's configs name: includes and hooks every repository
    // takes, beside its own.
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let cwd = std::env::current_dir().unwrap_or_default();
    let user = crate::policy::UserGit::of(&|k| std::env::var_os(k), home.as_deref(), &cwd);
    if let (Some(note), Some(fd)) = (&now.note, fd) {
        let _ = crate::sys::write_all(fd, format!("qwrap: git: {note}\n").as_bytes());
    }
    ignores_said(known, fd, now);
    absent_held(scan, fd);
    replaced_held(known, fd);
    for dot_git in now
        .dot_gits
        .iter()
        .chain(&now.bare)
        .chain(&now.linked)
        .filter(|d| !known.holds(d))
        .filter(|d| reached(scan, d) || repo_changed_since(d, known.1, &user))
    {
        // Where the walk at the start did not look, a repository changed
        // inside may be the user's: not guarded, so the command's now.
        let made = if reached(scan, dot_git) {
            "a repository made inside"
        } else {
            "a repository made or changed inside, where the walk at the start did not look,"
        };
        // Nothing is read through a link the command made.
        let risks = if now.linked.contains(dot_git) {
            vec!["a link where git looks (a .git or HEAD)".to_string()]
        } else {
            let mut r = risks(dot_git);
            r.extend(work_tree_reads(dot_git, &user));
            r
        };
        let what = if risks.is_empty() {
            let disarmed = match now.linked.contains(dot_git) {
                true => Vec::new(),
                false => disarm(dot_git),
            };
            let disarmed = match disarmed.is_empty() {
                true => String::new(),
                false => format!(" ({}: host git takes them on trust)", disarmed.join(", ")),
            };
            format!(
                "{made}: qwrap found nothing host git would run in its config, hooks, index or state, but host git trusts all of it; look at it first{disarmed}"
            )
        } else {
            // A `.git` goes aside whole; a git dir by another name (bare)
            // loses its HEAD, without which git takes it for none.
            let aside = if dot_git.file_name().is_some_and(|n| n == ".git") {
                dot_git.clone()
            } else {
                dot_git.join("HEAD")
            };
            let done = match hold_aside(&aside) {
                Ok((held, head)) => format!(
                    "moved aside to {}{} (no host git takes it for a repository there or inside it; review it, then move it back)",
                    crate::lossy::shown(&held),
                    match head {
                        Some(h) => format!(", its HEAD renamed {} in it", crate::lossy::shown(h)),
                        None => String::new(),
                    }
                ),
                Err(Held::Not(e)) => {
                    format!("remove it, or review it before any git runs there (moving it aside failed: {e})")
                }
                Err(Held::Partly(held, e)) => format!(
                    "moved aside to {}, but a HEAD in it could not be ({e}): remove it, or review it before any git runs in it",
                    crate::lossy::shown(&held)
                ),
            };
            if now.linked.contains(dot_git) {
                format!(
                    "{made} with a link where git looks (a .git or HEAD), which host git would follow: {done}"
                )
            } else {
                format!("{made} whose {} host git would run: {done}", risks.join(", "))
            }
        };
        let line = format!("qwrap: git: {}: {what}\n", crate::lossy::shown(dot_git));
        if let Some(fd) = fd {
            let _ = crate::sys::write_all(fd, line.as_bytes());
        }
    }
    super::planted_links::held(&scan.roots, &now.links, known.1, &user, fd);
    hg_held(scan, known, fd, now);
}

/// Each Mercurial repository made inside: host hg run there (a prompt, an
/// editor) runs the hooks and extensions its `hgrc` names, so one with a
/// config (or a link for its `.hg`) goes aside, and each is said.
fn hg_held(scan: &RepoScan, known: &Known, fd: Option<&OwnedFd>, now: &crate::policy::Found) {
    for hg in now.hg.iter().filter(|d| !known.holds(d) && reached(scan, d)) {
        let link = is(hg, FileType::Symlink);
        let config = crate::policy::hg::CONFIG
            .iter()
            .any(|f| lstat(&hg.join(f)).is_some());
        let what = if !link && !config {
            "a Mercurial repository made inside: qwrap found no config in it, but host hg trusts all of it; look at it first".to_string()
        } else {
            let why = if link {
                "a link for .hg, which host hg would follow"
            } else {
                "an hgrc (hooks, extensions) host hg would run"
            };
            match hold_aside(hg) {
                Ok((held, _)) => format!(
                    "a Mercurial repository made inside with {why}: moved aside to {} (no host hg takes it for a repository; review it, then move it back)",
                    crate::lossy::shown(&held)
                ),
                Err(Held::Not(e) | Held::Partly(_, e)) => format!(
                    "a Mercurial repository made inside with {why}: remove it, or review it before hg runs there (moving it aside failed: {e})"
                ),
            }
        };
        if let Some(fd) = fd {
            let line = format!("qwrap: hg: {}: {what}\n", crate::lossy::shown(hg));
            let _ = crate::sys::write_all(fd, line.as_bytes());
        }
    }
}

/// Each of what host git would read as config or hooks that was missing
/// at the start (an included file, `core.hooksPath`, `core.excludesFile`)
/// and is there now: the command made it, and host git would run or take
/// what it says. Moved aside and said.
fn absent_held(scan: &RepoScan, fd: Option<&OwnedFd>) {
    for p in scan.absent.iter().filter(|p| there(p)) {
        config_aside(p, "made", fd);
    }
}

/// Each of what host git reads as config or hooks that names another file
/// now than at the start (its parent renamed, the path made again): moved
/// aside and said.
fn replaced_held(known: &Known, fd: Option<&OwnedFd>) {
    for (p, then) in &known.2 {
        let now = file_id(p);
        if now.is_some() && now != *then {
            config_aside(p, "replaced", fd);
        }
    }
    // A link on the way pointed elsewhere: the first link goes aside
    // (hold_aside stops at it), so host git reads nothing there.
    for (p, then) in &known.3 {
        let now = k::canonicalize(p).ok();
        if now.is_some() && now != *then {
            config_aside(p, "led elsewhere by a link changed", fd);
        }
    }
}

/// What host git reads as its own config or hooks, `how` (made, replaced)
/// inside: moved aside, and said.
fn config_aside(p: &Path, how: &str, fd: Option<&OwnedFd>) {
    let tool = match p.components().any(|c| c.as_os_str() == ".hg") {
        true => "hg",
        false => "git",
    };
    let what = match hold_aside(p) {
        Ok((held, _)) => format!(
            "{how} inside where host {tool} reads its own config or hooks: moved aside to {} (review it, then move it back)",
            crate::lossy::shown(&held)
        ),
        Err(Held::Not(e) | Held::Partly(_, e)) => format!(
            "{how} inside where host {tool} reads its own config or hooks: remove it, or review it before {tool} runs here (moving it aside failed: {e})"
        ),
    };
    if let Some(fd) = fd {
        let line = format!("qwrap: {tool}: {}: {what}\n", crate::lossy::shown(p));
        let _ = crate::sys::write_all(fd, line.as_bytes());
    }
}

/// Each `.gitignore` made or changed during the run, said: new files it
/// matches (itself too) never show in host `git status`, so a review
/// there would miss them; so is each `.gitmodules` (its `ignore = all`
/// hides a submodule's changes), and one that is a link is moved aside
/// (git reads `.gitmodules` through a link, and `/dev/tty` there held host
/// git status up).
fn ignores_said(known: &Known, fd: Option<&OwnedFd>, now: &crate::policy::Found) {
    for p in now.ignores.iter().filter(|p| changed(p, known.1)) {
        let line = format!(
            "qwrap: git: {}: an ignore file made or changed inside: files it matches do not show in host git status (git status --ignored lists them)\n",
            crate::lossy::shown(p)
        );
        if let Some(fd) = fd {
            let _ = crate::sys::write_all(fd, line.as_bytes());
        }
    }
    for p in now.odd_names.iter().filter(|p| changed(p, known.1)) {
        let line = format!(
            "qwrap: git: {}: a name made inside with characters a terminal acts on or that hide text (shown escaped here; host git prints it as it is where core.quotePath is off)\n",
            crate::lossy::shown(p)
        );
        if let Some(fd) = fd {
            let _ = crate::sys::write_all(fd, line.as_bytes());
        }
    }
    for p in now.gitmodules.iter().filter(|p| changed(p, known.1)) {
        let is_link = is(p, FileType::Symlink);
        let what = if !is_link {
            "submodules' settings made or changed inside: an `ignore` there hides a submodule's changes from host git status".to_string()
        } else {
            // git reads it through the link: a device there holds it up.
            match hold_aside(p) {
                Ok((held, _)) => format!(
                    "a link made inside, which host git would read through (a device there holds git status up): moved aside to {}",
                    crate::lossy::shown(&held)
                ),
                Err(Held::Not(e) | Held::Partly(_, e)) => {
                    format!(
                        "a link made inside, which host git would read through: remove it (moving it aside failed: {e})"
                    )
                }
            }
        };
        let line = format!("qwrap: git: {}: {what}\n", crate::lossy::shown(p));
        if let Some(fd) = fd {
            let _ = crate::sys::write_all(fd, line.as_bytes());
        }
    }
}

/// Whether the walk at the start looked where `p` lies (it did not where
/// it stopped early): a repository there then was guarded, so one there
/// now that it did not find was made inside.
fn reached(scan: &RepoScan, p: &Path) -> bool {
    !scan.cut && crate::policy::looked_at_start(&scan.roots, p)
}

/// Renames a repository made inside to `NAME.qwrap-held` (or `-2` … `-9`
/// after it), beside it: its directory opened from `/` one component at a
/// time without following a link (a link planted on the way leads
/// nowhere), the rename replacing nothing.
fn hold_aside(dot_git: &Path) -> Result<(std::path::PathBuf, Option<std::ffi::OsString>), Held> {
    use rustix::fs::{AtFlags, FileType, Mode};
    use rustix::io::Errno;
    let (Some(parent), Some(name)) = (dot_git.parent(), dot_git.file_name()) else {
        return Err(Errno::INVAL.into());
    };
    let rel = parent.strip_prefix("/").map_err(|_| Errno::INVAL)?;
    // O_PATH: a directory its owner made unreadable (mode 0311) is still
    // one host git passes through, and a rename needs only search.
    let flags = path_flags();
    let mut dir = k::open("/", flags, Mode::empty())?;
    let mut at = std::path::PathBuf::from("/");
    for c in rel.iter() {
        match k::openat(&dir, c, flags, Mode::empty()) {
            Ok(next) => dir = next,
            // A link on the way (made inside: the roots are real paths)
            // goes aside itself, and what lies beyond it with it.
            Err(Errno::NOTDIR | Errno::LOOP)
                if k::statat(&dir, c, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink) =>
            {
                let held = rename_aside(&dir, c)?;
                return Ok((at.join(held), None));
            }
            Err(e) => return Err(e.into()),
        }
        at.push(c);
    }
    let held = rename_aside(&dir, name)?;
    // A git dir by any name is one to git run inside it (it looks at the
    // directory it is in first): its HEAD goes aside too, and so does every
    // HEAD below it (`modules/x`, `worktrees/y`: git dirs of their own).
    let head = match k::openat(&dir, &held, flags, Mode::empty()) {
        Ok(inner) => heads_aside(inner),
        // A bare one's HEAD went aside: the git dirs below it too.
        Err(_) if name == "HEAD" => heads_aside(dir).map(|_| None),
        Err(_) => Ok(None),
    };
    let held = parent.join(held);
    match head {
        Ok(head) => Ok((held, head)),
        Err(e) => Err(Held::Partly(held, e)),
    }
}

/// A directory opened only to be walked through or renamed in, never
/// through a link.
fn path_flags() -> rustix::fs::OFlags {
    use rustix::fs::OFlags;
    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Why a repository could not be held aside whole.
enum Held {
    /// It stayed where it was.
    Not(rustix::io::Errno),
    /// It was moved aside, but a HEAD in it could not be.
    Partly(std::path::PathBuf, rustix::io::Errno),
}

impl From<rustix::io::Errno> for Held {
    fn from(e: rustix::io::Errno) -> Held {
        Held::Not(e)
    }
}

/// Every entry named HEAD in a directory and below it renamed aside,
/// without following a link, up to LOOKED entries (past them: EXIST, and
/// the line says moving it aside failed); the name the top one got. A directory
/// its owner made unreadable (0311, 0000) is opened with the owner's bits
/// for the moment, and its mode given back.
fn heads_aside(top: OwnedFd) -> Result<Option<std::ffi::OsString>, rustix::io::Errno> {
    let mut opened = Vec::new();
    let r = heads_aside_opening(top, &mut opened);
    for (dir, mode) in opened.into_iter().rev() {
        let _ = set_mode(&dir, mode);
    }
    r
}

fn heads_aside_opening(
    top: OwnedFd,
    opened: &mut Vec<(OwnedFd, u32)>,
) -> Result<Option<std::ffi::OsString>, rustix::io::Errno> {
    use rustix::fs::{FileType, Mode};
    let mut dirs = vec![top];
    let (mut seen, mut top_head) = (0, None);
    while let Some(at) = dirs.pop() {
        let is_top = seen == 0;
        let d = listable(at, opened)?;
        let mut head_here = false;
        let entries = k::dir_entries(&d, LOOKED + 1 - seen)?;
        seen += entries.len().max(1);
        if seen > LOOKED {
            return Err(rustix::io::Errno::EXIST);
        }
        for (name, kind) in entries {
            if name == "HEAD" {
                head_here = true;
            } else if kind == FileType::Directory {
                dirs.push(k::openat(&d, &name, path_flags(), Mode::empty())?);
            }
        }
        if head_here {
            let held = rename_aside(&d, std::ffi::OsStr::new("HEAD"))?;
            if is_top {
                top_head = Some(held);
            }
        }
    }
    Ok(top_head)
}

/// A directory (held as an O_PATH descriptor) opened for listing and
/// renaming in; where its owner took the read, write or search bits away,
/// with the owner's bits added (the warden is its owner), the mode to give
/// back kept in `opened`.
fn listable(at: OwnedFd, opened: &mut Vec<(OwnedFd, u32)>) -> Result<OwnedFd, rustix::io::Errno> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mode = k::fstat(&at)?.st_mode & 0o7777;
    if mode & 0o700 != 0o700 {
        set_mode(&at, mode | 0o700)?;
        let d = k::openat(&at, ".", flags, Mode::empty());
        opened.push((at, mode));
        return d;
    }
    k::openat(&at, ".", flags, Mode::empty())
}

/// A directory's mode set through its descriptor (an O_PATH one: through
/// /proc, as fchmod refuses it).
fn set_mode(dir: &OwnedFd, mode: u32) -> Result<(), rustix::io::Errno> {
    let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(dir));
    k::chmod(path.as_str(), rustix::fs::Mode::from_raw_mode(mode))
}

/// `NAME` renamed `NAME.qwrap-held` (or `-2` … `-9`, then a name the
/// clock makes, which a command cannot have taken in advance) in `dir`,
/// replacing nothing; the new name.
fn rename_aside(dir: &OwnedFd, name: &std::ffi::OsStr) -> Result<std::ffi::OsString, rustix::io::Errno> {
    let nanos = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    };
    for i in 1..13 {
        let mut held = name.to_os_string();
        held.push(".qwrap-held");
        match i {
            1 => {}
            2..10 => held.push(format!("-{i}")),
            _ => held.push(format!("-{}", nanos())),
        }
        match rename_opened(dir, name, &held) {
            Ok(()) => return Ok(held),
            Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e),
        }
    }
    Err(rustix::io::Errno::EXIST)
}

/// `renameat` replacing nothing; where the directory's owner made it
/// unwritable (mode 0555), with the owner's write and search bits added
/// for the moment (the warden is its owner), then its mode given back.
fn rename_opened(
    dir: &OwnedFd,
    from: &std::ffi::OsStr,
    to: &std::ffi::OsStr,
) -> Result<(), rustix::io::Errno> {
    match k::renameat_noreplace(dir, from, to) {
        Err(rustix::io::Errno::ACCESS) => {}
        r => return r,
    }
    let mode = k::fstat(dir)?.st_mode & 0o7777;
    set_mode(dir, mode | 0o300)?;
    let r = k::renameat_noreplace(dir, from, to);
    let _ = set_mode(dir, mode);
    r
}

#[cfg(test)]
mod tests {
    /// Holding aside, answered by the recording fake: what is renamed,
    /// and what is never touched.
    mod through_the_seam {
        use super::super::{hold_aside, rename_aside};
        use crate::sys::fake::{self, Scripted};
        use rustix::io::Errno;
        use std::ffi::OsStr;
        use std::path::Path;

        #[test]
        fn a_name_taken_is_passed_over_never_replaced() {
            fake::start();
            fake::fail_next("renameat2", Errno::EXIST);
            fake::fail_next("renameat2", Errno::EXIST);
            let held = rename_aside(&fake::fd(), OsStr::new("HEAD"));
            let c = fake::finish();
            assert_eq!(held.unwrap(), "HEAD.qwrap-held-3");
            assert_eq!(c.len(), 3, "{c:?}");
            assert!(c.iter().all(|c| c.ends_with("RENAME_NOREPLACE)")), "{c:?}");
            assert!(c[1].contains("\"HEAD.qwrap-held-2\""), "{c:?}");
        }

        #[test]
        fn a_directory_made_unwritable_gets_its_mode_back() {
            fake::start();
            fake::fail_next("renameat2", Errno::ACCESS);
            fake::script(Scripted::Mode(0o40555));
            assert!(rename_aside(&fake::fd(), OsStr::new(".git")).is_ok());
            let c = fake::finish();
            let names: Vec<&str> = c.iter().map(|c| &c[..c.find('(').unwrap()]).collect();
            assert_eq!(
                names,
                ["renameat2", "fstat", "fchmodat", "renameat2", "fchmodat"],
                "{c:?}"
            );
            assert!(c[2].ends_with(", 0o755)"), "write and search added: {c:?}");
            assert!(c[4].ends_with(", 0o555)"), "the owner's mode given back: {c:?}");
        }

        #[test]
        fn a_link_on_the_way_goes_aside_itself_and_nothing_past_it_is_touched() {
            fake::start();
            fake::script(Scripted::FailOn("openat", "\"b\"", Errno::LOOP));
            fake::script(Scripted::Mode(0o120777));
            let r = hold_aside(Path::new("/a/b/c/.git"));
            let c = fake::finish();
            let Ok((held, head)) = r else {
                panic!("not held: {c:?}")
            };
            assert_eq!(held, Path::new("/a/b.qwrap-held"));
            assert_eq!(head, None);
            assert_eq!(c.len(), 5, "{c:?}");
            assert!(c[3].starts_with("newfstatat(dirfd, \"b\""), "{c:?}");
            assert!(
                c[4].starts_with("renameat2(dirfd, \"b\", dirfd, \"b.qwrap-held\""),
                "{c:?}"
            );
        }

        #[test]
        fn a_directory_on_the_way_that_fails_otherwise_holds_nothing() {
            fake::start();
            fake::script(Scripted::FailOn("openat", "\"b\"", Errno::NOTDIR));
            // Not a link (no type at all): the walk stops, nothing renamed.
            let r = hold_aside(Path::new("/a/b/c/.git"));
            let c = fake::finish();
            assert!(r.is_err(), "{c:?}");
            assert!(!c.iter().any(|c| c.starts_with("renameat2")), "{c:?}");
        }
    }
}
