//! The few raw system calls rustix does not wrap, and the ones rustix marks
//! unsafe. Every `unsafe` block of the crate lives here (`#![deny(unsafe_code)]`
//! holds everywhere else).

mod error;
mod exec;
pub mod fake;
mod fds;
mod files;
pub mod kernel;
pub mod landlock;
mod notify;
mod process;
mod signals;
mod spawn;

pub use error::SysError;
pub use exec::{apply_filters, exec_after_filters};

pub use fds::{close_others_at_exec, dup_onto, open_truncate, unix_socket_file, with_inherited_fd};
pub use files::link;
pub use notify::{
    Notification, detach_warden, exit_now, notif_answer, notif_id_valid, notif_recv, notif_send,
    notif_sync_wake_up, read_memory, seccomp_install, seccomp_listener,
};
pub use process::*;
pub use signals::{next_signal, send_signal, signal_fd, unblock_signals};
pub use spawn::{held_before_exec, spawn_detached, spawn_in_session, spawn_reaper};

/// TIOCGEXCL: whether a terminal is in exclusive mode.
pub fn terminal_exclusive(fd: impl rustix::fd::AsFd) -> Result<bool, Errno> {
    let mut on: libc::c_int = 0;
    // SAFETY: TIOCGEXCL writes one int, which `on` is.
    if unsafe { libc::ioctl(fd.as_fd().as_raw_fd(), libc::TIOCGEXCL, &mut on) } != 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    Ok(on != 0)
}

/// Gives up the caller's controlling terminal (`open("/dev/tty")`, then
/// TIOCNOTTY on it): Ok(false) where there is none. A session leader would
/// hang up its foreground group instead: the caller asks only as another.
pub fn give_up_controlling_terminal() -> Result<bool, Errno> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDWR | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match kernel::open("/dev/tty", flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NXIO | Errno::NOENT) => return Ok(false),
        Err(e) => return Err(e),
    };
    faked!("ioctl", Ok(true));
    // SAFETY: TIOCNOTTY takes no argument; `fd` is open for the call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCNOTTY) } != 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    Ok(true)
}

/// TIOCEXCL: a terminal's exclusive mode on.
pub fn set_terminal_exclusive(fd: impl rustix::fd::AsFd) -> Result<(), Errno> {
    // SAFETY: TIOCEXCL takes no argument.
    if unsafe { libc::ioctl(fd.as_fd().as_raw_fd(), libc::TIOCEXCL) } != 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    Ok(())
}

/// A terminal's line discipline (TIOCGETD), after setting it (TIOCSETD)
/// where `set` names one.
pub fn terminal_line_discipline(fd: impl rustix::fd::AsFd, set: Option<i32>) -> Result<i32, Errno> {
    let fd = fd.as_fd().as_raw_fd();
    if let Some(mut d) = set {
        // SAFETY: TIOCSETD reads one int, which `d` is.
        if unsafe { libc::ioctl(fd, libc::TIOCSETD, &mut d) } != 0 {
            return Err(Errno::from_raw_os_error(last_errno()));
        }
    }
    let mut d: libc::c_int = 0;
    // SAFETY: TIOCGETD writes one int, which `d` is.
    if unsafe { libc::ioctl(fd, libc::TIOCGETD, &mut d) } != 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    Ok(d)
}

/// The errno the kernel answers to syscall `nr` with no arguments (for a
/// number no kernel knows: ENOSYS).
pub fn unknown_syscall_errno(nr: u32) -> i32 {
    // SAFETY: a syscall with zero arguments; one the kernel knows would
    // only read registers, and this is called for numbers it does not.
    let r = unsafe { libc::syscall(libc::c_long::from(nr), 0, 0, 0, 0, 0, 0) };
    if r < 0 { last_errno() } else { 0 }
}

use fake::faked;
use rustix::fd::{AsRawFd, BorrowedFd};
use rustix::io::Errno;
use std::ffi::CStr;

/// `MOUNT_ATTR_*` bits for `mount_setattr(2)`.
pub const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub const MOUNT_ATTR_NODEV: u64 = 0x4;
pub const MOUNT_ATTR_NOEXEC: u64 = 0x8;
/// `AT_RECURSIVE`: apply to the whole subtree.
pub const AT_RECURSIVE: u32 = 0x8000;
/// `MS_PRIVATE` as a propagation type for `struct mount_attr`.
pub const MS_PRIVATE: u64 = 1 << 18;

/// `struct mount_attr` (include/uapi/linux/mount.h, MOUNT_ATTR_SIZE_VER0).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct MountAttr {
    pub attr_set: u64,
    pub attr_clr: u64,
    pub propagation: u64,
    pub userns_fd: u64,
}

/// `mount_setattr(dirfd, path, flags, attr, sizeof attr)`.
pub fn mount_setattr(dirfd: BorrowedFd<'_>, path: &CStr, flags: u32, attr: &MountAttr) -> Result<(), Errno> {
    faked!("mount_setattr", Ok(()));
    // SAFETY: `path` is a valid NUL-terminated string and `attr` a valid
    // `struct mount_attr` that outlive the call; the size passed is its exact
    // size, and the kernel only reads from both.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd.as_raw_fd(),
            path.as_ptr(),
            flags,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if ret == 0 {
        Ok(())
    } else {
        Err(Errno::from_raw_os_error(last_errno()))
    }
}

/// Whether the kernel has `mount_setattr(2)` (Linux ≥ 5.12). Unknown flags
/// give EINVAL before any permission check where it exists; ENOSYS (or EPERM
/// under some seccomp filters) where it does not.
pub fn mount_setattr_available() -> bool {
    let attr = MountAttr::default();
    // SAFETY: as above; with unknown flags the kernel fails before reading
    // the path or the attributes.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            -1,
            std::ptr::null::<libc::c_char>(),
            u32::MAX,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    !(ret != 0 && matches!(last_errno(), libc::ENOSYS | libc::EPERM))
}

const SIOCGIFFLAGS: libc::c_ulong = 0x8913;
const SIOCSIFFLAGS: libc::c_ulong = 0x8914;

/// `struct ifreq` with the flags member of its union (40 bytes on Linux).
#[repr(C)]
struct IfReqFlags {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Brings an interface up with `ioctl(SIOCSIFFLAGS)` on `sock`.
pub fn interface_up(sock: BorrowedFd<'_>, name: &str) -> Result<(), Errno> {
    faked!("ioctl", Ok(()));
    let mut req = IfReqFlags {
        name: [0; 16],
        flags: 0,
        _pad: [0; 22],
    };
    if name.len() >= req.name.len() {
        return Err(Errno::NAMETOOLONG);
    }
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: `req` is a properly sized, initialised `struct ifreq` that lives
    // across both calls; SIOCGIFFLAGS writes only its flags member.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), SIOCGIFFLAGS, &mut req as *mut IfReqFlags) != 0 {
            return Err(Errno::from_raw_os_error(last_errno()));
        }
        req.flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), SIOCSIFFLAGS, &req as *const IfReqFlags) != 0 {
            return Err(Errno::from_raw_os_error(last_errno()));
        }
    }
    Ok(())
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The Landlock ABI version the kernel offers (0: none). Uses
/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`.
pub fn landlock_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: with a NULL attribute pointer, size 0 and the VERSION flag the
    // kernel reads nothing and returns the ABI version or an error.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(ret).unwrap_or(0)
}

/// `ioctl(fd, TIOCSTI, &byte)`: pushes a byte into a terminal's input.
pub fn tiocsti(fd: BorrowedFd<'_>, byte: u8) -> Result<(), Errno> {
    // SAFETY: TIOCSTI reads one byte through the pointer, which points at a
    // live local.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSTI, &byte as *const u8) };
    if ret == 0 {
        Ok(())
    } else {
        Err(Errno::from_raw_os_error(last_errno()))
    }
}

/// `unshare(CLONE_NEWUSER|CLONE_NEWNS)` for the verify probe's nested-remount
/// attempt, which runs in a throwaway child process.
pub fn unshare_user_mount() -> Result<(), Errno> {
    use rustix::thread::UnshareFlags;
    // SAFETY: CLONE_FILES is not among the flags, and the probe child is
    // single-threaded.
    unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNS) }
}

/// Reads to its end an fd the caller handed over by number (bubblewrap's
/// `--args FD`, `--file FD`, `--seccomp FD`), then closes it.
pub fn read_inherited_fd(fd: i32) -> std::io::Result<Vec<u8>> {
    faked!("read", Ok(Vec::new()));
    use std::io::Read;
    use std::os::fd::FromRawFd;
    // SAFETY: F_GETFD only inspects the descriptor table entry.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the fd is open (checked just above, and qwrap is
    // single-threaded); the caller gave it to us to consume, so taking
    // ownership (and closing it when done) is what it asked for.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut v = Vec::new();
    f.read_to_end(&mut v)?;
    Ok(v)
}

/// `ioctl(NS_GET_PARENT)`: the user namespace that owns `ns` (EPERM above
/// the caller's own).
pub fn ns_get_parent(ns: BorrowedFd<'_>) -> Result<rustix::fd::OwnedFd, Errno> {
    const NS_GET_PARENT: libc::c_ulong = 0xb702;
    // SAFETY: NS_GET_PARENT takes no argument and returns a new descriptor.
    let fd = unsafe { libc::ioctl(ns.as_raw_fd(), NS_GET_PARENT) };
    if fd < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    // SAFETY: a new descriptor the kernel just returned, owned by nobody else.
    Ok(unsafe { <rustix::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// Writes all of `data` to an fd handed over by number, without closing it.
pub fn write_inherited_fd(fd: i32, data: &[u8]) -> Result<(), Errno> {
    faked!("write", Ok(()));
    // SAFETY: F_GETFD only inspects the descriptor table entry.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    // SAFETY: the fd is open (checked above; single-threaded) and stays
    // open for this borrow, which ends before we return.
    let b = unsafe { BorrowedFd::borrow_raw(fd) };
    write_all(b, data)
}

/// All of `data` written to `fd` (a short write goes on, EINTR again).
pub fn write_all(fd: impl rustix::fd::AsFd, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        match kernel::write(&fd, data) {
            Ok(n) => data = &data[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Closes an fd handed over by number (bubblewrap closes --info-fd).
pub fn close_inherited_fd(fd: i32) {
    if fake::takes("close") {
        return;
    }
    // SAFETY: closing a descriptor number the caller handed to us; nothing
    // in qwrap holds it.
    unsafe { libc::close(fd) };
}

/// Blocks until `fd` has data (or EOF): bubblewrap's `--block-fd`.
pub fn block_on_fd(fd: i32) -> Result<(), Errno> {
    faked!("read", Ok(()));
    let mut byte = [0u8; 1];
    loop {
        // SAFETY: reads at most one byte into a live local buffer.
        let n = unsafe { libc::read(fd, byte.as_mut_ptr().cast(), 1) };
        if n >= 0 {
            return Ok(());
        }
        let e = last_errno();
        if e != libc::EINTR {
            return Err(Errno::from_raw_os_error(e));
        }
    }
}

/// `fcntl(fd, F_SETLK, {F_RDLCK, whole file})`, as bubblewrap's --lock-file.
pub fn read_lock(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    faked!("fcntl", Ok(()));
    // SAFETY: a zeroed flock is valid; the fields set describe a read lock
    // on the whole file, and the kernel only reads the struct.
    let ret = unsafe {
        let mut lock: libc::flock = std::mem::zeroed();
        lock.l_type = libc::F_RDLCK as libc::c_short;
        lock.l_whence = libc::SEEK_SET as libc::c_short;
        libc::fcntl(fd.as_raw_fd(), libc::F_SETLK, &lock as *const libc::flock)
    };
    if ret == 0 {
        Ok(())
    } else {
        Err(Errno::from_raw_os_error(last_errno()))
    }
}

/// `setns(fd, CLONE_NEWUSER or CLONE_NEWPID)` on an fd handed over by
/// number (bubblewrap's `--userns`, `--userns2`, `--pidns`).
pub fn setns_inherited_fd(fd: i32, pid: bool) -> Result<(), Errno> {
    faked!("setns", Ok(()));
    // SAFETY: F_GETFD only inspects the descriptor table entry.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(Errno::from_raw_os_error(last_errno()));
    }
    // SAFETY: the fd is open (checked above; single-threaded) for the
    // duration of this borrow.
    let b = unsafe { BorrowedFd::borrow_raw(fd) };
    let kind = if pid {
        rustix::thread::LinkNameSpaceType::ProcessID
    } else {
        rustix::thread::LinkNameSpaceType::User
    };
    rustix::thread::move_into_link_name_space(b, Some(kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::thread::UnshareFlags;

    #[test]
    fn unshare_refuses_what_is_not_a_namespace() {
        for f in [
            UnshareFlags::FILES,
            UnshareFlags::FS,
            UnshareFlags::NEWNS | UnshareFlags::FILES,
        ] {
            assert_eq!(unshare_namespaces(f), Err(Errno::INVAL), "{f:?}");
        }
    }
}
