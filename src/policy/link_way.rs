//! Where a link leads, told as the kernel would tell it for any process,
//! and which repository host git takes there: the end of a run and
//! `review apply` judge the links the command made by it.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Where a path leads, resolved one component at a time as the kernel
/// resolves it for a process whose root is `/` (`follow`); each link on
/// the way is given to `fresh_link`, whether it is new.
#[derive(Debug, PartialEq, Eq)]
pub enum Way {
    /// The place, and whether a link on the way was made or changed since
    /// the start.
    To(PathBuf, bool),
    /// Through /proc (`/proc/self/cwd`, `/dev/fd`): where it leads depends
    /// on who follows it; or round in a loop. Whether a link on the way
    /// was made or changed since the start.
    Unknowable(bool),
}

pub fn follow(path: &Path, fresh_link: &dyn Fn(&Path) -> bool) -> Way {
    let mut todo: Vec<OsString> = Vec::new();
    push_parts(&mut todo, path);
    let (mut at, mut hops, mut fresh) = (PathBuf::from("/"), 0, false);
    while let Some(c) = todo.pop() {
        if c == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&c);
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                hops += 1;
                fresh |= fresh_link(&next);
                let Ok(text) = std::fs::read_link(&next) else {
                    return Way::Unknowable(fresh);
                };
                if hops > 40 {
                    return Way::Unknowable(fresh);
                }
                if text.is_absolute() {
                    at = PathBuf::from("/");
                }
                push_parts(&mut todo, &text);
            }
            _ => at = next,
        }
        if at.starts_with("/proc") || at.starts_with("/dev/fd") {
            return Way::Unknowable(fresh);
        }
    }
    Way::To(at, fresh)
}

/// A path's parts, last first (to be popped in order), without `/` or `.`.
fn push_parts(todo: &mut Vec<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    todo.extend(parts.into_iter().rev());
}

/// The repository host git run in `dir` takes: the first directory, from
/// `dir` up, that holds a `.git` or is a git dir itself (`HEAD`, `objects`
/// and `refs`), as git's own discovery looks.
pub fn discovered(dir: &Path) -> Option<PathBuf> {
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
    use super::{Way, discovered, follow};
    use std::path::Path;
    use std::time::SystemTime;

    fn since(t: SystemTime) -> impl Fn(&Path) -> bool {
        move |p: &Path| {
            use std::os::unix::fs::MetadataExt;
            std::fs::symlink_metadata(p).is_ok_and(|m| {
                std::time::UNIX_EPOCH + std::time::Duration::new(m.ctime() as u64, m.ctime_nsec() as u32) >= t
            })
        }
    }

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

    #[test]
    fn a_way_is_followed_link_by_link_and_through_proc_is_unknowable() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join("real/sub")).unwrap();
        std::os::unix::fs::symlink("real", top.join("rel")).unwrap();
        std::os::unix::fs::symlink(top.join("rel/sub"), top.join("abs")).unwrap();
        std::os::unix::fs::symlink("/proc/self/cwd/x/../real", top.join("cwd")).unwrap();
        std::os::unix::fs::symlink("cwd", top.join("chain")).unwrap();
        std::os::unix::fs::symlink("loop", top.join("loop")).unwrap();
        let long_ago = SystemTime::UNIX_EPOCH;
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert_eq!(
            follow(&top.join("abs"), &since(long_ago)),
            Way::To(top.join("real/sub"), true)
        );
        assert_eq!(
            follow(&top.join("abs"), &since(later)),
            Way::To(top.join("real/sub"), false)
        );
        assert_eq!(follow(&top.join("cwd"), &since(long_ago)), Way::Unknowable(true));
        assert_eq!(follow(&top.join("chain"), &since(later)), Way::Unknowable(false));
        assert_eq!(follow(&top.join("loop"), &since(long_ago)), Way::Unknowable(true));
    }
}
