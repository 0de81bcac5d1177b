//! The probe's checks that run in a child of it: a nested namespace trying
//! to make / writable again, and TIOCSTI on a pty made the controlling
//! terminal (which changes the session, so not in the probe itself).

use super::Check;
use crate::errno::errno_text;
use rustix::fs::{Mode, OFlags};

/// A nested user and mount namespace must not be able to make / writable
/// again: the read-only flag is locked.
pub(super) fn nested_remount() -> Check {
    const N: &str = "nested-remount";
    const T: &str = "a nested namespace cannot remount / read-write";
    let out = std::process::Command::new("/proc/self/exe")
        .args([super::PROBE_COMMAND, "--nested-remount"])
        .output();
    match out {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if text.starts_with("refused") {
                Check::pass(N, T)
            } else {
                Check::fail(N, T, "EPERM", text)
            }
        }
        Err(e) => Check::fail(N, T, "a child process", e.to_string()),
    }
}

/// Runs in a child of the probe: tries to clear read-only on / from a fresh
/// user and mount namespace. Prints `refused: …` or what succeeded.
pub fn nested_remount_attempt() -> String {
    if let Err(e) = crate::sys::unshare_user_mount() {
        return format!("refused: unshare: {e}");
    }
    let attr = crate::sys::MountAttr {
        attr_clr: crate::sys::MOUNT_ATTR_RDONLY,
        ..Default::default()
    };
    let setattr = crate::sys::mount_setattr(rustix::fs::CWD, c"/", crate::sys::AT_RECURSIVE, &attr);
    let remount = rustix::mount::mount_remount("/", rustix::mount::MountFlags::BIND, "");
    match (setattr, remount) {
        (Err(a), Err(b)) => format!("refused: mount_setattr: {a}; mount: {b}"),
        (Ok(()), _) => "mount_setattr(/, clear RDONLY) succeeded".into(),
        (_, Ok(())) => "mount(/, MS_REMOUNT|MS_BIND) without MS_RDONLY succeeded".into(),
    }
}

/// TIOCSTI on a real pty that is the controlling terminal must fail EPERM.
/// Runs in a child: taking a controlling terminal changes the session.
pub(super) fn tiocsti() -> Check {
    in_fresh_qwrap("--tiocsti", |text| {
        Check::fail("tiocsti", "TIOCSTI refused on a real pty", "a result", text)
    })
}

/// The check a fresh `qwrap __probe FLAG` prints as its last JSON line;
/// `no_result` of its output when it printed none.
pub(super) fn in_fresh_qwrap(flag: &str, no_result: impl FnOnce(String) -> Check) -> Check {
    in_fresh_qwrap_with(&[flag], no_result)
}

/// `in_fresh_qwrap` with more arguments.
pub(super) fn in_fresh_qwrap_with(args: &[&str], no_result: impl FnOnce(String) -> Check) -> Check {
    let out = std::process::Command::new("/proc/self/exe")
        .arg(super::PROBE_COMMAND)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output();
    let text = out
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    match text.lines().rev().find_map(|l| serde_json::from_str(l).ok()) {
        Some(check) => check,
        None => no_result(text),
    }
}

/// The child's half of [`tiocsti`]: prints the check as JSON.
pub fn tiocsti_attempt() -> String {
    serde_json::to_string(&tiocsti_check()).expect("check serialises")
}

fn tiocsti_check() -> Check {
    const N: &str = "tiocsti";
    const T: &str = "TIOCSTI refused on a real pty";
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = match openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY) {
        Ok(m) => m,
        Err(e) => return Check::fail(N, T, "a pty", format!("openpt: {e}")),
    };
    let slave = grantpt(&master)
        .and_then(|_| unlockpt(&master))
        .and_then(|_| ptsname(&master, Vec::new()))
        .and_then(|name| rustix::fs::open(name.as_c_str(), OFlags::RDWR | OFlags::NOCTTY, Mode::empty()));
    let slave = match slave {
        Ok(s) => s,
        // --isolation landlock: the host's /dev/pts is not writable; the
        // master is a terminal too, and can be made the controlling one.
        Err(rustix::io::Errno::ACCESS) => match rustix::io::fcntl_dupfd_cloexec(&master, 3) {
            Ok(m) => m,
            Err(e) => return Check::fail(N, T, "a pty", format!("dup of the pty's master: {e}")),
        },
        Err(e) => return Check::fail(N, T, "a pty", format!("opening the pty: {e}")),
    };
    // Session leaders (after --new-session) cannot start another session.
    let _ = rustix::process::setsid();
    if let Err(e) = rustix::process::ioctl_tiocsctty(&slave) {
        return Check::skip(N, T, format!("cannot make the pty the controlling terminal: {e}"));
    }
    let check = match crate::sys::tiocsti(rustix::fd::AsFd::as_fd(&slave), b'x') {
        Err(e) if e == rustix::io::Errno::PERM => Check::pass(N, T),
        Err(e) => Check::fail(N, T, &errno_text(libc::EPERM), errno_text(e.raw_os_error())),
        Ok(()) => Check::fail(N, T, &errno_text(libc::EPERM), "a byte was injected".into()),
    };
    // Closing the pty hangs up this session; report first.
    std::mem::forget(master);
    std::mem::forget(slave);
    check
}

/// Creates `path` as a new file (never through one already there), as the
/// probe's write checks do; the errno when refused.
pub(crate) fn create(path: &std::path::Path) -> Result<(), i32> {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        path,
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map(drop)
    .map_err(|e| e.raw_os_error())
}
