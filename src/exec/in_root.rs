//! bwrap mode's destinations, resolved inside the new root as bubblewrap's
//! pivot into its own tmpfs resolves them: a symlink a caller's tree plants
//! on the way (`lnk -> $HOME`) is followed as the sandbox will see it and
//! never reaches the host. Each step opens the root afresh, since an
//! argument may mount over the root itself.

use crate::sys::kernel as k;
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::fs::{CWD, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::path::{Path, PathBuf};

/// A destination as a path the kernel resolves to what was found inside
/// the root (`/proc/self/fd/N[/NAME]`), holding the descriptor it names.
pub(super) struct Placed {
    path: PathBuf,
    held: Option<OwnedFd>,
}

impl Placed {
    pub fn as_named(path: &Path) -> Self {
        Placed {
            path: path.to_path_buf(),
            held: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the path names a descriptor (move_mount must follow it).
    pub fn via_fd(&self) -> bool {
        self.held.is_some()
    }
}

pub(super) struct NewRoot {
    prefix: PathBuf,
    /// Where /proc is: the legacy path's first pivot moves it under the
    /// old root.
    proc: PathBuf,
}

impl NewRoot {
    pub fn new(prefix: PathBuf) -> Self {
        NewRoot {
            prefix,
            proc: PathBuf::from("/proc"),
        }
    }

    /// Where /proc is now.
    pub fn proc(&self) -> &Path {
        &self.proc
    }

    /// After `pivot_root(new_root, put_old)`: the host's /proc is under
    /// the old root.
    pub fn pivoted(&mut self, new_root: &Path, put_old: &Path) {
        if let Ok(old) = put_old.strip_prefix(new_root) {
            self.proc = Path::new("/").join(old).join("proc");
        }
    }

    /// Whether a step's printed form names a path strictly under the root.
    pub fn holds_a_path_of(&self, text: &str) -> bool {
        text.contains(&format!("\"{}/", self.prefix.display()))
    }

    /// The part of `path` under the root, when strictly under it.
    fn inside<'a>(&self, path: &'a Path) -> Option<&'a Path> {
        path.strip_prefix(&self.prefix)
            .ok()
            .filter(|r| !r.as_os_str().is_empty())
    }

    fn open_root(&self) -> Result<OwnedFd, Errno> {
        k::open(
            &self.prefix,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    }

    /// `path` itself (its last component followed) or, with `create`, its
    /// parent and the name to make in it.
    pub fn place(&self, path: &Path, create: bool) -> Result<Placed, Errno> {
        let Some(rel) = self.inside(path) else {
            return Ok(Placed::as_named(path));
        };
        let root = self.open_root()?;
        let (look, name) = match (create, rel.parent(), rel.file_name()) {
            (true, Some(parent), Some(name)) => (parent, Some(name)),
            _ => (rel, None),
        };
        let look = if look.as_os_str().is_empty() {
            Path::new(".")
        } else {
            look
        };
        let fd = k::openat2(
            root.as_fd(),
            look,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
        )?;
        let mut p = self.proc.join(format!("self/fd/{}", fd.as_raw_fd()));
        if let Some(n) = name {
            p.push(n);
        }
        Ok(Placed {
            path: p,
            held: Some(fd),
        })
    }

    /// `mount_point::ensure` inside the root (or as named, outside it).
    pub fn ensure(&self, path: &Path, dir: bool, mode: u32) -> Result<(), Errno> {
        match self.inside(path) {
            Some(rel) => {
                let root = self.open_root()?;
                super::mount_point::ensure(
                    root.as_fd(),
                    rel,
                    ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
                    dir,
                    mode,
                )
            }
            None => super::mount_point::ensure(CWD, path, ResolveFlags::empty(), dir, mode),
        }
    }
}
