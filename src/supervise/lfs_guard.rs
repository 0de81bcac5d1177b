//! git-lfs's stores while the command runs (the host's, bound in): every
//! directory is watched (inotify, on the git dirs' descriptor), and what
//! the command makes there that is neither a regular file nor a directory
//! (a link host git-lfs would read through, a FIFO it would block on) is
//! removed as soon as the warden sees it, and named. A directory is found
//! again by its path from the store, a component at a time without
//! following a link, and acted in only if it is still the one watched
//! (device and inode); one moved is watched again under its new path.
//! What is there before the command runs is left. The sweep when the
//! sandbox ends (planted.rs) goes over the whole store once more. A
//! command that makes a link again and again keeps one there most of the
//! time: this narrows the window, it does not close it (docs/security.md).

use super::git_files::{dir_flags, names_in, open_dir};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Directories watched at most (each is one inotify watch), and how deep
/// (git-lfs nests three levels), as deep as the exit's sweep goes.
const MAX_DIRS: usize = 8192;
const MAX_DEPTH: usize = super::planted::LFS_SWEEP_DEPTH;

/// A watched directory: its store, its path from there, what it is.
struct Watched {
    store: usize,
    rel: PathBuf,
    dev: u64,
    ino: u64,
}

pub(super) struct LfsGuard {
    /// Each store's root, held.
    stores: Vec<(PathBuf, OwnedFd)>,
    dirs: HashMap<i32, Watched>,
    /// The first walk, before the command runs: what is there is the
    /// user's (a link they made stays; the exit's sweep judges it).
    starting: bool,
    /// Said once: the stores hold more directories than are watched.
    full: bool,
}

impl LfsGuard {
    /// Watches every directory of each store, removing what is there already.
    pub(super) fn new(inotify: BorrowedFd<'_>, stores: &[PathBuf], say: Option<BorrowedFd<'_>>) -> LfsGuard {
        let mut g = LfsGuard {
            stores: Vec::new(),
            dirs: HashMap::new(),
            starting: true,
            full: false,
        };
        for s in stores {
            if let Ok(fd) = rustix::fs::open(s, dir_flags(), Mode::empty()) {
                g.stores.push((s.clone(), fd));
                g.take(inotify, g.stores.len() - 1, Path::new(""), say);
            }
        }
        g.starting = false;
        g
    }

    /// Whether a watch is one of the stores'.
    pub(super) fn owns(&self, wd: i32) -> bool {
        self.dirs.contains_key(&wd)
    }

    /// A watched directory is gone.
    pub(super) fn forget(&mut self, wd: i32) {
        self.dirs.remove(&wd);
    }

    /// Something was made in, or moved to, a watched directory (None:
    /// look at all it holds).
    pub(super) fn made(
        &mut self,
        inotify: BorrowedFd<'_>,
        wd: i32,
        name: Option<&OsStr>,
        say: Option<BorrowedFd<'_>>,
    ) {
        let Some((store, rel, dir)) = self.dir(wd) else {
            return;
        };
        let names = match name {
            Some(n) => vec![n.to_os_string()],
            None => names_in(dir.as_fd()),
        };
        for n in names {
            self.look(inotify, store, &rel, &dir, &n, say);
        }
    }

    /// Events were lost: every watched directory looked at again.
    pub(super) fn again(&mut self, inotify: BorrowedFd<'_>, say: Option<BorrowedFd<'_>>) {
        let wds: Vec<i32> = self.dirs.keys().copied().collect();
        for wd in wds {
            self.made(inotify, wd, None, say);
        }
    }

    /// The watched directory, opened again from its store and checked.
    fn dir(&self, wd: i32) -> Option<(usize, PathBuf, OwnedFd)> {
        let w = self.dirs.get(&wd)?;
        let fd = open_dir(self.stores.get(w.store)?.1.as_fd(), &w.rel).ok()?;
        let st = rustix::fs::fstat(&fd).ok()?;
        (st.st_dev == w.dev && st.st_ino == w.ino).then(|| (w.store, w.rel.clone(), fd))
    }

    /// Watches `rel` in a store and looks at what it holds.
    fn take(&mut self, inotify: BorrowedFd<'_>, store: usize, rel: &Path, say: Option<BorrowedFd<'_>>) {
        use rustix::fs::inotify::{WatchFlags as W, add_watch};
        if rel.components().count() > MAX_DEPTH {
            return;
        }
        let Some(dir) = self
            .stores
            .get(store)
            .and_then(|s| open_dir(s.1.as_fd(), rel).ok())
        else {
            return;
        };
        let Ok(st) = rustix::fs::fstat(&dir) else {
            return;
        };
        if self.dirs.len() >= MAX_DIRS {
            if !self.full {
                self.full = true;
                let line = format!(
                    "qwrap: git: {}: more than {MAX_DIRS} directories in git-lfs's store: the rest is swept only when the sandbox ends\n",
                    self.stores[store].0.display()
                );
                if let Some(fd) = say {
                    let _ = rustix::io::write(fd, line.as_bytes());
                }
            }
            return;
        }
        // The directory held, through its descriptor's link (no
        // DONT_FOLLOW: that would watch the link).
        let mask = W::CREATE | W::MOVED_TO | W::DELETE_SELF | W::ONLYDIR;
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&dir));
        let Ok(wd) = add_watch(inotify, path, mask) else {
            return;
        };
        // A directory moved within the store keeps its watch: its new path.
        self.dirs.insert(
            wd,
            Watched {
                store,
                rel: rel.to_path_buf(),
                dev: st.st_dev,
                ino: st.st_ino,
            },
        );
        for n in names_in(dir.as_fd()) {
            self.look(inotify, store, rel, &dir, &n, say);
        }
    }

    /// One name in a watched directory: a directory is watched, a regular
    /// file left, anything else removed and named.
    fn look(
        &mut self,
        inotify: BorrowedFd<'_>,
        store: usize,
        rel: &Path,
        dir: &OwnedFd,
        name: &OsStr,
        say: Option<BorrowedFd<'_>>,
    ) {
        let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            return;
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => self.take(inotify, store, &rel.join(name), say),
            _ if self.starting => {}
            _ => {
                if rustix::fs::unlinkat(dir, name, AtFlags::empty()).is_ok()
                    && let Some(fd) = say
                {
                    let line = format!(
                        "qwrap: git: {}: a link, FIFO or device made inside git-lfs's store while the command ran: removed\n",
                        self.stores[store].0.join(rel).join(name).display()
                    );
                    let _ = rustix::io::write(fd, line.as_bytes());
                }
            }
        }
    }
}
