//! `--isolation landlock`: a file's mode bits and times, for which Landlock
//! has no right, changed by the warden on the command's behalf — only for
//! a file that lies where Landlock lets the command write and that the
//! command's user owns; EPERM elsewhere. The path and the times are read
//! once from the caller's memory, the file is opened by the warden, judged
//! by where that descriptor leads, and changed through it: what the caller
//! changes in its memory or on disk afterwards changes nothing.

use crate::plan::filter_rules::{Arch, name_of};
use crate::sys::{Notification, kernel as k};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Mode, OFlags, Timespec, Timestamps, UTIME_NOW, UTIME_OMIT};
use rustix::io::Errno;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

const AT_FDCWD: i32 = -100;

/// The answer to a trapped mode or times call (None: not one of them).
pub(super) fn handle(n: &Notification, writable: &[PathBuf]) -> Option<Result<(), Errno>> {
    let name = name_of(Arch::HERE, i64::from(n.nr));
    let a = n.args;
    let int = |x: u64| x as u32 as i32;
    let pid = n.pid as i32;
    let r = match name {
        "chmod" => chmod(pid, Named::Path(AT_FDCWD, a[0], true), a[1], writable),
        "fchmod" => chmod(pid, Named::Fd(int(a[0])), a[1], writable),
        "fchmodat" => chmod(pid, Named::Path(int(a[0]), a[1], true), a[2], writable),
        "fchmodat2" => chmod(pid, at_target(int(a[0]), a[1], int(a[3])), a[2], writable),
        "utime" => times(
            pid,
            Named::Path(AT_FDCWD, a[0], true),
            Times::Utimbuf(a[1]),
            writable,
        ),
        "utimes" => times(
            pid,
            Named::Path(AT_FDCWD, a[0], true),
            Times::Timeval(a[1]),
            writable,
        ),
        "futimesat" => times(
            pid,
            Named::Path(int(a[0]), a[1], true),
            Times::Timeval(a[2]),
            writable,
        ),
        "utimensat" => times(
            pid,
            at_target(int(a[0]), a[1], int(a[3])),
            Times::Timespec(a[2]),
            writable,
        ),
        _ => return None,
    };
    Some(r)
}

/// What a call names: a path (relative to a directory descriptor, to
/// follow a final symlink or not) or a descriptor.
enum Named {
    Path(i32, u64, bool),
    Fd(i32),
}

/// `*at` calls: AT_EMPTY_PATH or a NULL path name the descriptor itself.
fn at_target(dirfd: i32, path: u64, flags: i32) -> Named {
    if path == 0 || flags & libc::AT_EMPTY_PATH != 0 {
        return Named::Fd(dirfd);
    }
    Named::Path(dirfd, path, flags & libc::AT_SYMLINK_NOFOLLOW == 0)
}

/// How a call gives its times (the pointer; 0: now).
enum Times {
    Utimbuf(u64),
    Timeval(u64),
    Timespec(u64),
}

fn chmod(pid: i32, target: Named, mode: u64, writable: &[PathBuf]) -> Result<(), Errno> {
    let fd = open_judged(pid, target, writable)?;
    k::chmod(magic(&fd), Mode::from_raw_mode(mode as u32 & 0o7777))
}

fn times(pid: i32, target: Named, given: Times, writable: &[PathBuf]) -> Result<(), Errno> {
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: UTIME_NOW,
    };
    let (access, modification) = match given {
        Times::Utimbuf(0) | Times::Timeval(0) | Times::Timespec(0) => (now, now),
        Times::Utimbuf(p) => {
            let w = words(pid, p, 2)?;
            (seconds(w[0], 0), seconds(w[1], 0))
        }
        Times::Timeval(p) => {
            let w = words(pid, p, 4)?;
            (seconds(w[0], w[1] * 1000), seconds(w[2], w[3] * 1000))
        }
        Times::Timespec(p) => {
            let w = words(pid, p, 4)?;
            (seconds(w[0], w[1]), seconds(w[2], w[3]))
        }
    };
    if access.tv_nsec == UTIME_OMIT && modification.tv_nsec == UTIME_OMIT {
        return Ok(());
    }
    let fd = open_judged(pid, target, writable)?;
    let stamps = Timestamps {
        last_access: access,
        last_modification: modification,
    };
    k::utimensat(magic(&fd), &stamps)
}

fn seconds(sec: i64, nsec: i64) -> Timespec {
    Timespec {
        tv_sec: sec,
        tv_nsec: nsec as _,
    }
}

/// The file, opened by the warden (O_PATH), if it lies beneath a path the
/// command may write and its owner is the warden's (the command's) user:
/// EPERM otherwise, the kernel's errno where it cannot be opened.
fn open_judged(pid: i32, target: Named, writable: &[PathBuf]) -> Result<OwnedFd, Errno> {
    let fd = match target {
        Named::Fd(fd) => their_fd(pid, fd)?,
        Named::Path(dirfd, ptr, follow) => {
            let path = c_string(pid, ptr)?;
            let dir = if dirfd == AT_FDCWD {
                k::open(
                    format!("/proc/{pid}/cwd"),
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )?
            } else {
                their_fd(pid, dirfd)?
            };
            let mut flags = OFlags::PATH | OFlags::CLOEXEC;
            if !follow {
                flags |= OFlags::NOFOLLOW;
            }
            k::openat(&dir, path.as_path(), flags, Mode::empty())?
        }
    };
    let st = k::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink {
        // Only an O_NOFOLLOW open stops at a symlink: its own mode and
        // times are not worth a way around.
        return Err(Errno::OPNOTSUPP);
    }
    let at = k::read_link(&magic(&fd)).map_err(|_| Errno::PERM)?;
    let inside = at.is_absolute() && writable.iter().any(|w| at.starts_with(w));
    if !inside || st.st_uid != crate::sys::kernel::geteuid() {
        return Err(Errno::PERM);
    }
    Ok(fd)
}

/// A copy of the caller's descriptor.
fn their_fd(pid: i32, fd: i32) -> Result<OwnedFd, Errno> {
    let p = rustix::process::Pid::from_raw(pid).ok_or(Errno::SRCH)?;
    let pidfd = k::pidfd_open(p, rustix::process::PidfdFlags::empty())?;
    k::pidfd_getfd(pidfd.as_fd(), fd)
}

/// `/proc/self/fd/N`: the file the warden holds, by the kernel's link.
fn magic(fd: &OwnedFd) -> PathBuf {
    use rustix::fd::AsRawFd;
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The caller's memory, read once.
fn memory(pid: i32) -> Result<std::fs::File, Errno> {
    let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC;
    k::open(format!("/proc/{pid}/mem"), flags, rustix::fs::Mode::empty()).map(std::fs::File::from)
}

/// A NUL-terminated path at `ptr` in the caller's memory (at most PATH_MAX).
fn c_string(pid: i32, ptr: u64) -> Result<PathBuf, Errno> {
    use std::os::unix::ffi::OsStringExt;
    if ptr == 0 {
        return Err(Errno::FAULT);
    }
    let mem = memory(pid)?;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    let mut got = 0;
    while got < buf.len() {
        match mem.read_at(&mut buf[got..], ptr + got as u64) {
            Ok(0) => break,
            Ok(n) => {
                if buf[got..got + n].contains(&0) {
                    got += n;
                    break;
                }
                got += n;
            }
            Err(_) if got > 0 => break,
            Err(_) => return Err(Errno::FAULT),
        }
    }
    let end = buf[..got]
        .iter()
        .position(|b| *b == 0)
        .ok_or(Errno::NAMETOOLONG)?;
    buf.truncate(end);
    if buf.is_empty() {
        return Err(Errno::NOENT);
    }
    Ok(PathBuf::from(std::ffi::OsString::from_vec(buf)))
}

/// `n` 64-bit words at `ptr` in the caller's memory.
fn words(pid: i32, ptr: u64, n: usize) -> Result<Vec<i64>, Errno> {
    let mut buf = vec![0u8; 8 * n];
    memory(pid)?
        .read_exact_at(&mut buf, ptr)
        .map_err(|_| Errno::FAULT)?;
    Ok(buf
        .chunks_exact(8)
        .map(|c| i64::from_ne_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fake;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    /// A trapped call of this process's, `nr` with `args`.
    fn call(nr: i64, args: [u64; 6]) -> Notification {
        Notification {
            id: 1,
            pid: std::process::id(),
            nr: nr as i32,
            args,
        }
    }

    #[test]
    fn only_mode_and_times_calls_are_made_here() {
        assert!(handle(&call(libc::SYS_kill, [0; 6]), &[]).is_none());
        assert!(handle(&call(libc::SYS_fchmod, [0; 6]), &[]).is_some());
        assert!(handle(&call(libc::SYS_utimensat, [0; 6]), &[]).is_some());
    }

    #[test]
    fn a_file_outside_the_writable_paths_is_refused_before_its_mode_changes() {
        let f = std::fs::File::open("/dev/null").unwrap();
        let fd = rustix::fd::AsRawFd::as_raw_fd(&f) as u64;
        fake::start();
        let r = handle(&call(libc::SYS_fchmod, [fd, 0o4755, 0, 0, 0, 0]), &[]);
        let calls = fake::take();
        fake::stop();
        assert_eq!(r, Some(Err(Errno::PERM)));
        // The file is known by the kernel's link to it, which the fake
        // leaves unanswered: refused before any change.
        assert_eq!(
            calls,
            ["pidfd_open", "pidfd_getfd", "fstat", "readlink"],
            "no fchmodat"
        );
    }

    #[test]
    fn a_file_beneath_a_writable_path_has_its_mode_set_and_one_outside_keeps_it() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("f");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let path = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).unwrap();
        let ptr = path.as_ptr() as u64;
        let at = |dir: &Path| {
            handle(
                &call(libc::SYS_chmod, [ptr, 0o600, 0, 0, 0, 0]),
                &[dir.to_path_buf()],
            )
        };
        assert_eq!(at(Path::new("/nonexistent")), Some(Err(Errno::PERM)));
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o644
        );
        assert_eq!(at(d.path()), Some(Ok(())));
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn a_link_s_own_mode_is_not_worth_a_way_around() {
        let d = tempfile::tempdir().unwrap();
        let link = d.path().join("l");
        std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
        let path = std::ffi::CString::new(link.as_os_str().as_encoded_bytes()).unwrap();
        // fchmodat2(AT_FDCWD, link, 0600, AT_SYMLINK_NOFOLLOW).
        let n = call(
            libc::SYS_fchmodat2,
            [
                AT_FDCWD as u32 as u64,
                path.as_ptr() as u64,
                0o600,
                libc::AT_SYMLINK_NOFOLLOW as u64,
                0,
                0,
            ],
        );
        assert_eq!(handle(&n, &[d.path().to_path_buf()]), Some(Err(Errno::OPNOTSUPP)));
        let n = call(libc::SYS_chmod, [path.as_ptr() as u64, 0o600, 0, 0, 0, 0]);
        assert_eq!(
            handle(&n, &[d.path().to_path_buf()]),
            Some(Err(Errno::PERM)),
            "followed, it leads outside"
        );
    }
}
