//! Links that lead out of the writable roots. Host git run where a link
//! leads (a `cd` through it, a linked worktree whose path passes through
//! it) takes the repository it finds there, or above there, as its own.
//! The command can make one wherever it writes outside the roots (the
//! `--cache overlay` layer kept on the host, the `$XDG_CACHE_HOME` of
//! `--isolation landlock`, the host's temp directory under `--tmp host`,
//! a `--cache shared` cache), where the end's walk of the roots does not
//! look, in this run or an earlier one. So every link below the roots is
//! followed, one component at a time as the kernel would (and the links
//! where it leads). A link made inside (or with a link on its way made
//! inside) that leads to a repository naming a program is removed,
//! whenever that repository was made; a link there from the start, where
//! the place, the repository or its top changed during the run. So is a
//! link made inside that leads through /proc, where it leads depends on
//! who follows it (`/proc/self/cwd` is each reader's own directory). The
//! repository itself stays: it lies outside the roots, where qwrap
//! changes nothing on a link's say-so.

use super::git_dir_risks::{changed, repo_changed_since, risks, work_tree_reads};
use crate::policy::{Reach, UserGit, Way, discovered, follow, repositories_below};
use rustix::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

/// Places outside the roots followed, at most, for all the links of a
/// run (each walked up to `policy::MAX_SCAN` directories); a link made
/// inside that leads outside past them is removed unfollowed.
const FOLLOWED: usize = 64;

/// Each link below `roots` that leads host git to a repository naming a
/// program (made inside, or there from the start where what it leads to
/// changed since `since`), or that leads where qwrap cannot tell
/// (through /proc, past what it follows): removed (what it said is said,
/// on `fd`, qwrap's stderr). A link holds nothing but its text: nothing is
/// lost, and no name is left that leads there.
pub(super) fn held(
    roots: &[PathBuf],
    links: &[PathBuf],
    since: SystemTime,
    user: &UserGit,
    fd: Option<&OwnedFd>,
) {
    let mut budget = FOLLOWED;
    let elsewhere = written_elsewhere();
    for link in links {
        let before = budget;
        let Some((repo, what)) = leads_to(roots, &elsewhere, link, since, user, &mut budget) else {
            continue;
        };
        if before > 0 && budget == 0 {
            say(
                fd,
                &format!(
                    "more than {FOLLOWED} places outside the writable roots are where links made inside lead: those past them were not followed, and each such link made inside is removed"
                ),
            );
        }
        let target = crate::sys::kernel::read_link(link).unwrap_or_default();
        let done = if what.is_empty() {
            "qwrap found nothing host git would run in it, but host git trusts all of it; look at it first"
                .to_string()
        } else {
            match remove_link(link) {
                Ok(()) => format!(
                    "whose {} host git would run: the link removed (review the repository before any git runs there)",
                    what.join(", ")
                ),
                Err(e) => format!(
                    "whose {} host git would run: remove the link, or review the repository before any git runs there (removing the link failed: {e})",
                    what.join(", ")
                ),
            }
        };
        say(
            fd,
            &format!(
                "{}: a link (to {}) leads host git to {}, outside the writable roots, {done}",
                crate::lossy::shown(link),
                crate::lossy::shown(&target),
                crate::lossy::shown(&repo),
            ),
        );
    }
}

fn say(fd: Option<&OwnedFd>, line: &str) {
    if let Some(fd) = fd {
        let _ = crate::sys::write_all(fd, format!("qwrap: git: {line}\n").as_bytes());
    }
}

/// The first repository outside the roots that host git could take
/// through `link` and that names a program (or, plain, was made or
/// changed since `since`), and what in it would run one (none: a plain
/// one); or the link itself where it leads where qwrap cannot tell. Where
/// the link leads outside the roots: the repository git finds there
/// (there or above), those below it, and again where the links below it
/// lead. A link there from the start, all of whose way is too, counts only
/// where the place, the repository's top or the repository changed since
/// then, and never for what qwrap cannot tell.
fn leads_to(
    roots: &[PathBuf],
    elsewhere: &[PathBuf],
    link: &Path,
    since: SystemTime,
    user: &UserGit,
    budget: &mut usize,
) -> Option<(PathBuf, Vec<String>)> {
    let (place, made) = match follow(link, &|p| changed(p, since)) {
        Way::To(place, made) => (place, made),
        Way::Unknowable(made) => {
            return made.then(|| (link.to_path_buf(), vec![THROUGH_PROC.into()]));
        }
    };
    // Where sandboxes write outside their roots, what a later run puts
    // there would be host git's through the link: it goes, there or not.
    if made
        && !roots.iter().any(|r| place.starts_with(r))
        && let Some(e) = elsewhere.iter().find(|e| place.starts_with(e))
    {
        return Some((
            place,
            vec![format!(
                "a place where sandboxes write outside their roots ({}), where a later run can make one",
                crate::lossy::shown(e)
            )],
        ));
    }
    let mut next = vec![place];
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(place) = next.pop() {
        if !place.is_dir() || roots.iter().any(|r| place.starts_with(r)) || seen.contains(&place) {
            continue;
        }
        if *budget == 0 {
            return made.then(|| (place, vec!["a place past what qwrap follows".into()]));
        }
        *budget -= 1;
        seen.push(place.clone());
        let found = repositories_below(std::slice::from_ref(&place), Reach::Beyond);
        let linked = found.linked.iter().map(|d| (d.clone(), true));
        let repos = discovered(&place)
            .into_iter()
            .chain(found.dot_gits.iter().chain(&found.bare).cloned())
            .map(|d| (d, false));
        for (repo, is_link) in repos.chain(linked) {
            if roots.iter().any(|r| repo.starts_with(r)) {
                continue;
            }
            let top = if repo.ends_with(".git") {
                repo.parent()
            } else {
                Some(repo.as_path())
            };
            let fresh = || {
                changed(&place, since)
                    || top.is_some_and(|t| changed(t, since))
                    || repo_changed_since(&repo, since, user)
            };
            if !made && !fresh() {
                continue;
            }
            if is_link {
                return Some((repo, vec!["a link where git looks (a .git or HEAD)".into()]));
            }
            let mut what = risks(&repo);
            what.extend(work_tree_reads(&repo, user));
            if !what.is_empty() || fresh() {
                return Some((repo, what));
            }
        }
        if let Some(note) = found.note.filter(|_| made) {
            return Some((place, vec![note]));
        }
        for l in found.links {
            match follow(&l, &|p| changed(p, since)) {
                Way::To(p, _) => next.push(p),
                Way::Unknowable(fresh) if made || fresh => return Some((l, vec![THROUGH_PROC.into()])),
                Way::Unknowable(_) => {}
            }
        }
    }
    None
}

/// Where sandboxes write outside their roots, kept on the host: qwrap's
/// state directory (the cache and review layers, `--isolation landlock`'s
/// `$XDG_CACHE_HOME`), the temporary directories (`--tmp host`), and the
/// user's cache directory (`--cache shared`); each as it really lies.
fn written_elsewhere() -> Vec<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let home = env("HOME").map(PathBuf::from);
    let mut places: Vec<PathBuf> = ["/tmp", "/dev/shm"].iter().map(PathBuf::from).collect();
    places.extend(env("TMPDIR").map(PathBuf::from));
    places.extend(crate::policy::state_dir(home.as_deref(), env("XDG_STATE_HOME")));
    places.extend(
        env("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".cache"))),
    );
    places
        .into_iter()
        .filter(|p| p.is_absolute())
        .map(|p| crate::sys::kernel::canonicalize(&p).unwrap_or(p))
        .collect()
}

/// Why a link through /proc is removed.
const THROUGH_PROC: &str = "a way through /proc (where it leads depends on who follows it: `/proc/self/cwd` is each reader's own directory)";

/// Removes a link below the roots: its directory opened from `/` one
/// component at a time without following a link, then the name unlinked
/// only if it is still a link.
fn remove_link(link: &Path) -> Result<(), rustix::io::Errno> {
    use crate::sys::kernel as k;
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    let (Some(parent), Some(name)) = (link.parent(), link.file_name()) else {
        return Err(rustix::io::Errno::INVAL);
    };
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = k::open("/", flags, Mode::empty())?;
    for c in parent.components().filter(|c| matches!(c, Component::Normal(_))) {
        dir = k::openat(&dir, c.as_os_str(), flags, Mode::empty())?;
    }
    let st = k::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::Symlink {
        return Err(rustix::io::Errno::NOLINK);
    }
    k::unlinkat(&dir, name, AtFlags::empty())
}

#[cfg(test)]
mod tests {
    use super::remove_link;
    use crate::sys::fake::{self, Scripted};
    use rustix::io::Errno;
    use std::path::Path;

    #[test]
    fn a_link_is_unlinked_from_its_directory_reached_without_following_one() {
        fake::start();
        fake::script(Scripted::Mode(0o120777));
        assert_eq!(remove_link(Path::new("/ws/a/l")), Ok(()));
        let c = fake::finish();
        let names: Vec<&str> = c.iter().map(|c| &c[..c.find('(').unwrap()]).collect();
        assert_eq!(
            names,
            ["openat", "openat", "openat", "newfstatat", "unlinkat"],
            "{c:?}"
        );
        assert!(c[..3].iter().all(|c| c.contains("NOFOLLOW")), "{c:?}");
        assert!(c[4].starts_with("unlinkat(dirfd, \"l\""), "{c:?}");
    }

    #[test]
    fn a_name_that_is_a_link_no_longer_stays() {
        fake::start();
        // The command put a directory (or anything else) in its place.
        fake::script(Scripted::Mode(0o40755));
        assert_eq!(remove_link(Path::new("/ws/l")), Err(Errno::NOLINK));
        let c = fake::finish();
        assert!(!c.iter().any(|c| c.starts_with("unlinkat")), "{c:?}");
    }
}
