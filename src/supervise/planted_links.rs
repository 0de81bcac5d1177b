//! Links made inside that lead out of the writable roots. Host git run
//! where a link leads (a `cd` through it, a linked worktree whose path
//! passes through it) takes the repository it finds there, or above
//! there, as its own. The command can make one wherever it writes outside
//! the roots (the `--cache overlay` layer kept on the host, the
//! `$XDG_CACHE_HOME` of `--isolation landlock`, the host's temp directory
//! under `--tmp host`, a `--cache shared` cache), where the end's walk of
//! the roots does not look, in this run or an earlier one. So every link
//! below the roots is followed (and the links where it leads). A link
//! made inside that leads to a repository naming a program goes aside,
//! whenever that repository was made; a link there from the start, where
//! the repository was made or changed since the start. The repository
//! itself stays: it lies outside the roots, where qwrap changes nothing
//! on a link's say-so.

use super::planted::{Held, changed, hold_aside, repo_changed_since, risks, work_tree_reads};
use crate::policy::{Reach, UserGit, repositories_below};
use rustix::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Places outside the roots followed, at most, for all the links of a
/// run (each walked up to `policy::MAX_SCAN` directories).
const FOLLOWED: usize = 64;

/// Each link below `roots` that leads host git to a repository naming a
/// program (made inside, or there from the start where the repository
/// changed since `since`): moved aside, and said (on `fd`, qwrap's
/// stderr).
pub(super) fn held(
    roots: &[PathBuf],
    links: &[PathBuf],
    since: SystemTime,
    user: &UserGit,
    fd: Option<&OwnedFd>,
) {
    let mut budget = FOLLOWED;
    // One qwrap moved aside already stays as it is.
    let aside = |l: &&PathBuf| {
        l.file_name()
            .is_some_and(|n| n.as_encoded_bytes().windows(11).any(|w| w == b".qwrap-held"))
    };
    for link in links.iter().filter(|l| !aside(l)) {
        if budget == 0 {
            say(
                fd,
                &format!(
                    "{}: more than {FOLLOWED} places outside the writable roots that links made inside lead to: the rest were not followed; look before running git through a link made inside",
                    crate::lossy::shown(link)
                ),
            );
            return;
        }
        let made = changed(link, since);
        let Some((repo, what)) = leads_to(roots, link, made, since, user, &mut budget) else {
            continue;
        };
        let target = std::fs::read_link(link).unwrap_or_default();
        let done = if what.is_empty() {
            "qwrap found nothing host git would run in it, but host git trusts all of it; look at it first"
                .to_string()
        } else {
            match hold_aside(link) {
                Ok((aside, _)) => format!(
                    "whose {} host git would run: the link moved aside to {} (review the repository before any git runs there)",
                    what.join(", "),
                    crate::lossy::shown(&aside)
                ),
                Err(Held::Not(e) | Held::Partly(_, e)) => format!(
                    "whose {} host git would run: remove the link, or review the repository before any git runs there (moving the link aside failed: {e})",
                    what.join(", ")
                ),
            }
        };
        say(
            fd,
            &format!(
                "{}: a link {} (to {}) leads host git to {}, a repository outside the writable roots{}, {done}",
                crate::lossy::shown(link),
                if made {
                    "made inside"
                } else {
                    "there from the start"
                },
                crate::lossy::shown(&target),
                crate::lossy::shown(&repo),
                if made {
                    ""
                } else {
                    " made or changed during the run"
                }
            ),
        );
    }
}

fn say(fd: Option<&OwnedFd>, line: &str) {
    if let Some(fd) = fd {
        let _ = rustix::io::write(fd, format!("qwrap: git: {line}\n").as_bytes());
    }
}

/// The first repository outside the roots that host git could take
/// through `link` and that names a program (or, plain, was made or
/// changed since `since`), and what in it would run one (none: a plain
/// one). Where the link leads outside the roots: the repository git finds
/// there (there or above), those below it, and again where the links
/// below it lead. A link there from the start (not `made` inside) counts
/// only for a repository made or changed since then, never for a walk cut
/// short.
fn leads_to(
    roots: &[PathBuf],
    link: &Path,
    made: bool,
    since: SystemTime,
    user: &UserGit,
    budget: &mut usize,
) -> Option<(PathBuf, Vec<String>)> {
    let mut next = vec![link.to_path_buf()];
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(l) = next.pop() {
        let Ok(place) = std::fs::canonicalize(&l) else {
            continue;
        };
        if !place.is_dir() || roots.iter().any(|r| place.starts_with(r)) || seen.contains(&place) {
            continue;
        }
        if *budget == 0 {
            return made.then(|| (place, vec!["a place past what qwrap follows".into()]));
        }
        *budget -= 1;
        seen.push(place.clone());
        let found = repositories_below(std::slice::from_ref(&place), Reach::Beyond);
        let linked = found.linked.iter().map(|d| (d, true));
        let repos = discovered(&place)
            .into_iter()
            .chain(found.dot_gits.iter().chain(&found.bare).cloned());
        for (repo, is_link) in repos
            .map(|d| (d, false))
            .chain(linked.map(|(d, l)| (d.clone(), l)))
        {
            if roots.iter().any(|r| repo.starts_with(r)) {
                continue;
            }
            let fresh = || repo_changed_since(&repo, since, user);
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
        next.extend(found.links);
    }
    None
}

/// The repository host git run in `dir` takes: the first directory, from
/// `dir` up, that holds a `.git` or is a git dir itself (`HEAD`, `objects`
/// and `refs`), as git's own discovery looks.
fn discovered(dir: &Path) -> Option<PathBuf> {
    let there = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    dir.ancestors().find_map(|a| {
        if there(&a.join(".git")) {
            Some(a.join(".git"))
        } else if ["HEAD", "objects", "refs"].iter().all(|n| there(&a.join(n))) {
            Some(a.to_path_buf())
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::discovered;

    #[test]
    fn git_finds_the_nearest_repository_up_from_where_it_runs() {
        let d = tempfile::tempdir().unwrap();
        let deep = d.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir_all(d.path().join("a/.git")).unwrap();
        assert_eq!(discovered(&deep), Some(d.path().join("a/.git")));
        // A bare one nearer wins.
        for n in ["HEAD", "objects", "refs"] {
            std::fs::create_dir_all(d.path().join("a/b").join(n)).unwrap();
        }
        assert_eq!(discovered(&deep), Some(d.path().join("a/b")));
    }
}
