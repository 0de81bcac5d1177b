//! What the warden says when the command has exited: each agent or editor
//! file it made (missing at the start, there now), and with `--review` the
//! layer that holds the run's changes — left idle instead, for the next
//! run, where the command changed nothing.

use crate::sys::kernel as k;
use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, Mode, OFlags};
use std::path::{Path, PathBuf};

/// The repositories below the writable roots: those there at the start,
/// and where it is said which the command made.
pub(super) struct Repos {
    pub scan: crate::plan::RepoScan,
    /// What each repository there at the start is, before the command runs.
    known: super::planted::Known,
    pub say: Option<OwnedFd>,
}

impl Repos {
    /// Taken before the command runs. `say`: on a copy of qwrap's stderr
    /// (not with --keep-background, where the walk comes when the last
    /// process left has ended, and a copy would hold a caller's pipe open).
    pub(super) fn new(scan: &crate::plan::RepoScan, say: bool) -> Repos {
        Repos {
            say: say
                .then(|| k::fcntl_dupfd_cloexec(rustix::stdio::stderr(), 3).ok())
                .flatten(),
            known: super::planted::Known::now(scan),
            scan: scan.clone(),
        }
    }
}

/// The warden's orders for the command's exit.
pub(super) struct AtExit {
    /// The repositories made inside, held aside and named first: before
    /// the git dirs' last copies, which may take a while, and before the
    /// caller's next host git.
    pub repos: Option<Repos>,
    /// Files missing at the start, named when there at the exit.
    pub watch: Vec<PathBuf>,
    /// `--review`: the run's layer.
    pub review: Option<PathBuf>,
    /// Where it is said (a copy of qwrap's stderr); None: nothing is said.
    pub out: Option<OwnedFd>,
}

impl AtExit {
    pub(super) fn new(
        repos: Option<Repos>,
        watch: &[PathBuf],
        review: Option<&Path>,
        out: Option<OwnedFd>,
    ) -> AtExit {
        AtExit {
            repos,
            watch: watch.to_vec(),
            review: review.map(Path::to_path_buf),
            out,
        }
    }

    /// The command and what it left are gone: the repositories it made
    /// held aside and named, first of all.
    pub(super) fn repositories(&self) {
        if let Some(r) = &self.repos {
            super::planted::say(&r.scan, &r.known, r.say.as_ref());
        }
    }

    /// The command ran and is gone.
    pub(super) fn command_done(&self) {
        let mut said = String::new();
        for p in &self.watch {
            if k::lstat(p).is_ok() {
                said.push_str(&format!(
                    "qwrap: {}: made inside during the run: an agent's or editor's settings, which choose what a host tool runs; read it before such a tool opens this directory\n",
                    p.display()
                ));
            }
        }
        if let Some(layer) = &self.review
            && !idle_if_empty(layer)
        {
            written_out(layer);
            let id = layer
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            said.push_str(&format!(
                "qwrap: review: the run's changes are kept in layer {id}, the workspace is unchanged: `qwrap review diff {id}`, then `qwrap review apply {id}` or `qwrap review discard {id}`\n"
            ));
        }
        if let Some(out) = &self.out
            && !said.is_empty()
        {
            let _ = crate::sys::write_all(out, said.as_bytes());
        }
    }

    /// qwrap failed before the command ran: its layer holds nothing.
    pub(super) fn setup_failed(&self) {
        if let Some(layer) = &self.review {
            idle_if_empty(layer);
        }
    }
}

/// Leaves a review layer whose every tree's upper directory is empty
/// idle for the workspace's next run (its record and the git index links
/// removed, its directories and lock kept: reusing them costs no
/// directory made or removed); whether it was empty.
fn idle_if_empty(layer: &Path) -> bool {
    let trees: Vec<PathBuf> = (0..)
        .map(|n| layer.join(n.to_string()))
        .take_while(|t| t.is_dir())
        .collect();
    let empty = !trees.is_empty() && trees.iter().all(|t| upper_empty(&t.join("upper")));
    if !empty {
        return false;
    }
    let Ok(dir) = k::open(layer, dir_flags(), Mode::empty()) else {
        return false;
    };
    for n in (0..).map(|k| format!("base-{k}")) {
        if k::unlinkat(&dir, n.as_str(), AtFlags::empty()).is_err() {
            break;
        }
    }
    // The volatile overlay's mark (`work/work/incompat/volatile`) would
    // refuse the next mount: the work directory's own `work` goes.
    for t in &trees {
        if let Ok(work) = k::open(t.join("work"), dir_flags(), Mode::empty()) {
            let _ = remove(&work, std::ffi::OsStr::new("work"));
        }
    }
    k::unlinkat(&dir, "info", AtFlags::empty()).is_ok()
}

/// A layer that holds changes, written out (its overlay was `volatile`:
/// nothing synced it) and marked so: `qwrap review apply` takes a layer
/// after the host restarted only with this mark.
fn written_out(layer: &Path) {
    let Ok(dir) = k::open(layer, dir_flags(), Mode::empty()) else {
        return;
    };
    if k::syncfs(&dir).is_ok() {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let _ = k::openat(&dir, "synced", flags, Mode::from_raw_mode(0o600));
    }
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Removes `name` in `dir` and all beneath it, never following a link;
/// each directory made readable first (overlayfs leaves its work
/// directory's `work` mode 0000).
fn remove(dir: &OwnedFd, name: &std::ffi::OsStr) -> Result<(), rustix::io::Errno> {
    use rustix::io::Errno;
    let sub = match k::openat(dir, name, dir_flags(), Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOTDIR | Errno::LOOP) => return k::unlinkat(dir, name, AtFlags::empty()),
        Err(Errno::ACCESS) => {
            k::chmodat(dir, name, Mode::from_raw_mode(0o700))?;
            k::openat(dir, name, dir_flags(), Mode::empty())?
        }
        Err(e) => return Err(e),
    };
    let _ = k::fchmod(&sub, Mode::from_raw_mode(0o700));
    for (n, _) in k::dir_entries(&sub, usize::MAX)? {
        remove(&sub, &n)?;
    }
    k::unlinkat(dir, name, AtFlags::REMOVEDIR)
}

/// Whether a layer's upper directory holds nothing (and can be read).
fn upper_empty(upper: &Path) -> bool {
    use rustix::fs::{Mode, OFlags};
    k::open(
        upper,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .and_then(|d| k::dir_entries(&d, 1))
    .is_ok_and(|e| e.is_empty())
}

#[cfg(test)]
mod tests {
    use super::remove;
    use crate::sys::fake;
    use rustix::io::Errno;
    use std::ffi::OsStr;

    #[test]
    fn a_directory_made_unreadable_is_opened_by_its_owner_bits_and_removed() {
        fake::start();
        fake::fail_next("openat", Errno::ACCESS);
        assert_eq!(remove(&fake::fd(), OsStr::new("work")), Ok(()));
        let c = fake::finish();
        let calls: Vec<&str> = c.iter().map(|c| &c[..c.find('(').unwrap()]).collect();
        assert_eq!(
            calls,
            ["openat", "fchmodat", "openat", "fchmod", "getdents64", "unlinkat"],
            "{c:?}"
        );
        // AT_REMOVEDIR, which rustix's Debug names by the same bit's other
        // name, EACCESS.
        assert!(c[5].ends_with("AtFlags(EACCESS))"), "{c:?}");
    }

    #[test]
    fn a_link_in_the_layer_is_unlinked_never_followed() {
        fake::start();
        fake::fail_next("openat", Errno::LOOP);
        assert_eq!(remove(&fake::fd(), OsStr::new("l")), Ok(()));
        let c = fake::finish();
        assert_eq!(c.len(), 2, "{c:?}");
        assert!(c[0].contains("NOFOLLOW"), "{c:?}");
        assert!(c[1].starts_with("unlinkat(dirfd, \"l\", AtFlags(0x0)"), "{c:?}");
    }
}
