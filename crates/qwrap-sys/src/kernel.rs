//! The executor's calls to the kernel, one function each, with rustix's
//! signatures (or std's, for whole-file reads and writes). Every call the
//! executor makes goes through here or through the raw calls of this
//! module's parent, so that a unit test can answer them from the recording
//! fake (`fake.rs`) and compare what a step calls with what it prints. Each
//! function records the system call(s) strace would show.

use super::fake::{self, faked};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{Access, AtFlags, FileType, FlockOperation, Mode, OFlags, RenameFlags, ResolveFlags, Stat};
use rustix::io::Errno;
use rustix::mount::{
    FsMountFlags, FsOpenFlags, MountAttrFlags, MountFlags, MountPropagationFlags, MoveMountFlags,
    OpenTreeFlags, UnmountFlags,
};
use rustix::path::Arg;
use rustix::process::{Pid, PidfdFlags, Signal, WaitOptions, WaitStatus};
use rustix::thread::{CapabilitySet, CapabilitySets};
use std::ffi::CStr;
use std::path::Path;

type R<T> = Result<T, Errno>;

pub fn open<P: Arg>(path: P, flags: OFlags, mode: Mode) -> R<OwnedFd> {
    faked!("openat", args: format!("{}, {flags:?}", q(&path)), Ok(fake::fd()));
    rustix::fs::open(path, flags, mode)
}

pub fn openat<P: Arg, Fd: AsFd>(dir: Fd, path: P, flags: OFlags, mode: Mode) -> R<OwnedFd> {
    faked!("openat", args: format!("dirfd, {}, {flags:?}", q(&path)), Ok(fake::fd()));
    rustix::fs::openat(dir, path, flags, mode)
}

pub fn openat2<Fd: AsFd, P: Arg>(
    dir: Fd,
    path: P,
    flags: OFlags,
    mode: Mode,
    resolve: ResolveFlags,
) -> R<OwnedFd> {
    faked!("openat2", args: format!("dirfd, {}, {flags:?}, {resolve:?}", q(&path)), Ok(fake::fd()));
    rustix::fs::openat2(dir, path, flags, mode, resolve)
}

pub fn mkdir<P: Arg>(path: P, mode: Mode) -> R<()> {
    faked!("mkdirat", args: format!("{}, {:#o}", q(&path), mode.as_raw_mode()), Ok(()));
    rustix::fs::mkdir(path, mode)
}

pub fn mkdirat<P: Arg, Fd: AsFd>(dir: Fd, path: P, mode: Mode) -> R<()> {
    faked!("mkdirat", args: format!("dirfd, {}, {:#o}", q(&path), mode.as_raw_mode()), Ok(()));
    rustix::fs::mkdirat(dir, path, mode)
}

pub fn mknodat<P: Arg, Fd: AsFd>(dir: Fd, path: P, kind: FileType, mode: Mode, dev: u64) -> R<()> {
    faked!("mknodat", args: format!("dirfd, {}, {kind:?}, {:#o}", q(&path), mode.as_raw_mode()), Ok(()));
    rustix::fs::mknodat(dir, path, kind, mode, dev)
}

pub fn symlink<P: Arg, Q: Arg>(target: P, path: Q) -> R<()> {
    faked!("symlinkat", args: format!("{}, {}", q(&target), q(&path)), Ok(()));
    rustix::fs::symlink(target, path)
}

pub fn chmod<P: Arg>(path: P, mode: Mode) -> R<()> {
    faked!("fchmodat", args: format!("{}, {:#o}", q(&path), mode.as_raw_mode()), Ok(()));
    rustix::fs::chmod(path, mode)
}

pub fn fchmod<Fd: AsFd>(fd: Fd, mode: Mode) -> R<()> {
    faked!("fchmod", Ok(()));
    rustix::fs::fchmod(fd, mode)
}

pub fn access<P: Arg>(path: P, access: Access) -> R<()> {
    faked!("faccessat", args: format!("{}, {access:?}", q(&path)), Ok(()));
    rustix::fs::access(path, access)
}

pub fn fstat<Fd: AsFd>(fd: Fd) -> R<Stat> {
    faked!("fstat", Ok(fake::stat()));
    rustix::fs::fstat(fd)
}

pub fn statvfs<P: Arg>(path: P) -> R<rustix::fs::StatVfs> {
    faked!("statfs", args: q(&path), Ok(fake::statvfs()));
    rustix::fs::statvfs(path)
}

/// What a path names itself, a link not followed (`lstat`).
pub fn lstat<P: Arg>(path: P) -> R<Stat> {
    statat(rustix::fs::CWD, path, AtFlags::SYMLINK_NOFOLLOW)
}

pub fn statat<P: Arg, Fd: AsFd>(dir: Fd, path: P, flags: AtFlags) -> R<Stat> {
    faked!("newfstatat", args: format!("dirfd, {}, {flags:?}", q(&path)), Ok(fake::stat()));
    rustix::fs::statat(dir, path, flags)
}

pub fn fcntl_getfl<Fd: AsFd>(fd: Fd) -> R<OFlags> {
    faked!("fcntl", Ok(OFlags::RDWR));
    rustix::fs::fcntl_getfl(fd)
}

pub fn fcntl_setfl<Fd: AsFd>(fd: Fd, flags: OFlags) -> R<()> {
    faked!("fcntl", Ok(()));
    rustix::fs::fcntl_setfl(fd, flags)
}

pub fn fcntl_dupfd_cloexec<Fd: AsFd>(fd: Fd, min: i32) -> R<OwnedFd> {
    faked!("fcntl", Ok(fake::fd()));
    rustix::io::fcntl_dupfd_cloexec(fd, min)
}

pub fn flock<Fd: AsFd>(fd: Fd, op: FlockOperation) -> R<()> {
    faked!("flock", Ok(()));
    rustix::fs::flock(fd, op)
}

pub fn renameat_noreplace<Fd: AsFd, P: Arg, Q: Arg>(dir: Fd, from: P, to: Q) -> R<()> {
    faked!("renameat2", args: format!("dirfd, {}, dirfd, {}, RENAME_NOREPLACE", q(&from), q(&to)), Ok(()));
    rustix::fs::renameat_with(&dir, from, &dir, to, RenameFlags::NOREPLACE)
}

/// Reads into `buf`; the fake reads nothing (end of file).
pub fn read<Fd: AsFd>(fd: Fd, buf: &mut [u8]) -> R<usize> {
    faked!("read", Ok(fake::read_into(buf)));
    rustix::io::read(fd, buf)
}

pub fn write<Fd: AsFd>(fd: Fd, data: &[u8]) -> R<usize> {
    faked!("write", args: format!("fd, {}", shown(data)), Ok(data.len()));
    rustix::io::write(fd, data)
}

/// Reads into `buf` at `offset`; the fake reads nothing (end of file).
pub fn pread<Fd: AsFd>(fd: Fd, buf: &mut [u8], offset: u64) -> R<usize> {
    faked!("pread64", args: format!("fd, {}, {offset}", buf.len()), Ok(fake::read_into(buf)));
    rustix::io::pread(fd, buf, offset)
}

/// Where the next data at or after `offset` starts (`SEEK_DATA`; ENXIO
/// past the last), or the next hole (`SEEK_HOLE`).
pub fn seek_data<Fd: AsFd>(fd: Fd, offset: u64, hole: bool) -> R<u64> {
    faked!("lseek", args: format!("fd, {offset}, {}", if hole { "SEEK_HOLE" } else { "SEEK_DATA" }), Ok(offset));
    let to = if hole {
        rustix::fs::SeekFrom::Hole(offset)
    } else {
        rustix::fs::SeekFrom::Data(offset)
    };
    rustix::fs::seek(fd, to)
}

pub fn ftruncate<Fd: AsFd>(fd: Fd, len: u64) -> R<()> {
    faked!("ftruncate", args: format!("fd, {len}"), Ok(()));
    rustix::fs::ftruncate(fd, len)
}

pub fn unlinkat<P: Arg, Fd: AsFd>(dir: Fd, path: P, flags: AtFlags) -> R<()> {
    faked!("unlinkat", args: format!("dirfd, {}, {flags:?}", q(&path)), Ok(()));
    rustix::fs::unlinkat(dir, path, flags)
}

pub fn renameat<Fd: AsFd, P: Arg, Q: Arg>(dir: Fd, from: P, to: Q) -> R<()> {
    faked!("renameat", args: format!("dirfd, {}, dirfd, {}", q(&from), q(&to)), Ok(()));
    rustix::fs::renameat(&dir, from, &dir, to)
}

pub fn chmodat<P: Arg, Fd: AsFd>(dir: Fd, path: P, mode: Mode) -> R<()> {
    faked!("fchmodat", args: format!("dirfd, {}, {:#o}", q(&path), mode.as_raw_mode()), Ok(()));
    rustix::fs::chmodat(dir, path, mode, AtFlags::empty())
}

pub fn syncfs<Fd: AsFd>(fd: Fd) -> R<()> {
    faked!("syncfs", Ok(()));
    rustix::fs::syncfs(fd)
}

/// A directory's entries (`.` and `..` left out), each with its type as
/// the directory says it (`getdents64`), at most `most` of them (a
/// directory the command made may hold millions); the fake's directories
/// are empty.
pub fn dir_entries<Fd: AsFd>(dir: Fd, most: usize) -> R<Vec<(std::ffi::OsString, FileType)>> {
    use std::os::unix::ffi::OsStrExt;
    faked!("getdents64", Ok(fake::entries()));
    let mut out = Vec::new();
    let mut entries = rustix::fs::Dir::read_from(dir)?;
    while out.len() < most {
        let Some(e) = entries.next() else { break };
        let e = e?;
        let name = e.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push((std::ffi::OsStr::from_bytes(name).to_os_string(), e.file_type()));
        }
    }
    Ok(out)
}

/// Sets a file's times through a path (`/proc/self/fd/N`: the file a
/// descriptor holds).
pub fn utimensat<P: Arg>(path: P, stamps: &rustix::fs::Timestamps) -> R<()> {
    faked!("utimensat", args: q(&path), Ok(()));
    rustix::fs::utimensat(rustix::fs::CWD, path, stamps, AtFlags::empty())
}

/// A copy of another process's descriptor `fd`.
pub fn pidfd_getfd<Fd: AsFd>(pidfd: Fd, fd: i32) -> R<OwnedFd> {
    faked!("pidfd_getfd", args: format!("pidfd, {fd}"), Ok(fake::fd()));
    rustix::process::pidfd_getfd(pidfd, fd, rustix::process::PidfdGetfdFlags::empty())
}

pub fn pwrite<Fd: AsFd>(fd: Fd, data: &[u8], offset: u64) -> R<usize> {
    faked!("pwrite64", args: format!("fd, {}, {offset}", shown(data)), Ok(data.len()));
    rustix::io::pwrite(fd, data, offset)
}

/// A queue of inotify events, not blocking, closed on exec.
pub fn inotify_init() -> R<OwnedFd> {
    faked!("inotify_init1", args: "IN_NONBLOCK|IN_CLOEXEC".into(), Ok(fake::fd()));
    rustix::fs::inotify::init(
        rustix::fs::inotify::CreateFlags::NONBLOCK | rustix::fs::inotify::CreateFlags::CLOEXEC,
    )
}

/// Watches `path`; the fake's watch is number 1.
pub fn inotify_add_watch<P: Arg, Fd: AsFd>(fd: Fd, path: P, mask: rustix::fs::inotify::WatchFlags) -> R<i32> {
    faked!("inotify_add_watch", args: format!("fd, {}, {mask:?}", q(&path)), Ok(1));
    rustix::fs::inotify::add_watch(fd, path, mask)
}

/// Every event queued now, each as (watch, mask): read until the queue is
/// empty (the descriptor does not block).
pub fn inotify_events<Fd: AsFd>(fd: Fd) -> R<Vec<(i32, rustix::fs::inotify::ReadFlags)>> {
    use rustix::fs::inotify::{ReadFlags, Reader};
    faked!(
        "read",
        Ok(fake::events()
            .into_iter()
            .map(|(wd, m)| (wd, ReadFlags::from_bits_retain(m)))
            .collect())
    );
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 8192];
    let mut reader = Reader::new(&fd, &mut buf);
    let mut out = Vec::new();
    loop {
        match reader.next() {
            Ok(e) => out.push((e.wd(), e.events())),
            Err(Errno::AGAIN) => return Ok(out),
            Err(_) if !out.is_empty() => return Ok(out),
            Err(e) => return Err(e),
        }
    }
}

/// A whole file (open and read); the fake's holds what a test scripted
/// for the next read (`Scripted::Read`), else nothing.
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    if let Some(opened) = fake::answer_about("openat", || format!("{path:?}, O_RDONLY")) {
        opened.map_err(std::io::Error::from)?;
        fake::takes("read");
        return Ok(fake::read_all());
    }
    std::fs::read(path)
}

/// `data` written to a file that is there already (a cgroup's, a control
/// file of /proc): open(O_WRONLY|O_CLOEXEC), one write, all of it or an
/// error.
pub fn write_existing(path: &Path, data: &[u8]) -> R<()> {
    let opened = fake::answer_about("openat", || format!("{path:?}, O_WRONLY|O_CLOEXEC"));
    if let Some(r) = opened {
        r?;
        return match fake::answer_about("write", || format!("fd, {}", shown(data))) {
            Some(Err(e)) => Err(e),
            _ => Ok(()),
        };
    }
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    match rustix::io::write(&fd, data)? {
        n if n == data.len() => Ok(()),
        _ => Err(Errno::IO),
    }
}

/// A new file holding `data`, made exclusively (never through an existing
/// name or link) with `mode`: open(O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC) and
/// write until all is written.
pub fn create_file(path: &Path, data: &[u8], mode: Mode) -> R<()> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
    let opened = fake::answer_about("openat", || {
        format!(
            "{path:?}, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, {:#o}",
            mode.as_raw_mode()
        )
    });
    if let Some(r) = opened {
        r?;
        return match fake::answer_about("write", || format!("fd, {}", shown(data))) {
            Some(Err(e)) => Err(e),
            _ => Ok(()),
        };
    }
    let fd = rustix::fs::open(path, flags, mode)?;
    let mut rest = data;
    while !rest.is_empty() {
        match rustix::io::write(&fd, rest) {
            Ok(0) => return Err(Errno::IO),
            Ok(n) => rest = &rest[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub fn rename(from: &Path, to: &Path) -> std::io::Result<()> {
    faked!("rename", args: format!("{from:?}, {to:?}"), Ok(()));
    std::fs::rename(from, to)
}

/// The path with every link on its way resolved (`realpath`); the fake
/// has none.
pub fn canonicalize(path: &Path) -> std::io::Result<std::path::PathBuf> {
    faked!("realpath", args: format!("{path:?}"), Err(std::io::Error::from_raw_os_error(libc::ENOENT)));
    std::fs::canonicalize(path)
}

/// A directory and all it holds removed (a link removed, never followed).
pub fn remove_tree(path: &Path) -> std::io::Result<()> {
    faked!("remove_tree", args: format!("{path:?}"), Ok(()));
    std::fs::remove_dir_all(path)
}

pub fn read_link(path: &Path) -> std::io::Result<std::path::PathBuf> {
    faked!("readlink", args: format!("{path:?}"), Err(std::io::Error::from_raw_os_error(libc::ENOENT)));
    std::fs::read_link(path)
}

pub fn exists(path: &Path) -> bool {
    if fake::answer_about("statx", || format!("{path:?}")).is_some() {
        return false;
    }
    std::fs::metadata(path).is_ok()
}

/// A file opened for appending, made 0600 when missing.
pub fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    faked!("openat", args: format!("{path:?}, O_WRONLY|O_APPEND|O_CREAT"), Ok(std::fs::File::from(fake::fd())));
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
}

/// A TCP socket listening on 127.0.0.1:port.
pub fn listen_loopback(port: u16) -> std::io::Result<OwnedFd> {
    if fake::takes("socket") && fake::takes("setsockopt") && fake::takes("bind") && fake::takes("listen") {
        return Ok(fake::fd());
    }
    std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).map(OwnedFd::from)
}

/// A seccomp program installed without a listener (no_new_privs first).
pub fn seccomp_filter(program: &[(u16, u8, u8, u32)]) -> R<()> {
    if fake::takes("prctl") && fake::takes("seccomp") {
        return Ok(());
    }
    rustix::thread::set_no_new_privs(true)?;
    super::seccomp_install(program, false).map(drop)
}

pub fn open_tree<P: Arg, Fd: AsFd>(dir: Fd, path: P, flags: OpenTreeFlags) -> R<OwnedFd> {
    faked!("open_tree", args: format!("dirfd, {}, {flags:?}", q(&path)), Ok(fake::fd()));
    rustix::mount::open_tree(dir, path, flags)
}

pub fn move_mount<P: Arg, Q: Arg, F: AsFd, T: AsFd>(
    from: F,
    fp: P,
    to: T,
    tp: Q,
    flags: MoveMountFlags,
) -> R<()> {
    faked!("move_mount", args: format!("fd, {}, fd, {}, {flags:?}", q(&fp), q(&tp)), Ok(()));
    rustix::mount::move_mount(from, fp, to, tp, flags)
}

pub fn fsopen<P: Arg>(fs: P, flags: FsOpenFlags) -> R<OwnedFd> {
    faked!("fsopen", args: q(&fs), Ok(fake::fd()));
    rustix::mount::fsopen(fs, flags)
}

pub fn fsmount<Fd: AsFd>(fs: Fd, flags: FsMountFlags, attr: MountAttrFlags) -> R<OwnedFd> {
    faked!("fsmount", Ok(fake::fd()));
    rustix::mount::fsmount(fs, flags, attr)
}

pub fn fsconfig_set_string<K: Arg, V: Arg, Fd: AsFd>(fs: Fd, key: K, value: V) -> R<()> {
    faked!("fsconfig", args: format!("fd, FSCONFIG_SET_STRING, {}, {}", q(&key), q(&value)), Ok(()));
    rustix::mount::fsconfig_set_string(fs, key, value)
}

pub fn fsconfig_set_flag<K: Arg, Fd: AsFd>(fs: Fd, key: K) -> R<()> {
    faked!("fsconfig", args: format!("fd, FSCONFIG_SET_FLAG, {}", q(&key)), Ok(()));
    rustix::mount::fsconfig_set_flag(fs, key)
}

pub fn fsconfig_create<Fd: AsFd>(fs: Fd) -> R<()> {
    faked!("fsconfig", args: "fd, FSCONFIG_CMD_CREATE".into(), Ok(()));
    rustix::mount::fsconfig_create(fs)
}

pub fn mount<'a, S: Arg, T: Arg, F: Arg, D: Into<Option<&'a CStr>>>(
    source: S,
    target: T,
    fstype: F,
    flags: MountFlags,
    data: D,
) -> R<()> {
    faked!("mount", args: format!("{}, {}, {}, {flags:?}", q(&source), q(&target), q(&fstype)), Ok(()));
    rustix::mount::mount(source, target, fstype, flags, data)
}

pub fn mount_remount<T: Arg, D: Arg>(target: T, flags: MountFlags, data: D) -> R<()> {
    faked!("mount", args: format!("NULL, {}, NULL, MS_REMOUNT|{flags:?}, {}", q(&target), q(&data)), Ok(()));
    rustix::mount::mount_remount(target, flags, data)
}

pub fn mount_change<T: Arg>(target: T, flags: MountPropagationFlags) -> R<()> {
    faked!("mount", args: format!("NULL, {}, NULL, {flags:?}", q(&target)), Ok(()));
    rustix::mount::mount_change(target, flags)
}

pub fn mount_bind<S: Arg, T: Arg>(source: S, target: T) -> R<()> {
    faked!("mount", args: format!("{}, {}, NULL, MS_BIND", q(&source), q(&target)), Ok(()));
    rustix::mount::mount_bind(source, target)
}

pub fn mount_bind_recursive<S: Arg, T: Arg>(source: S, target: T) -> R<()> {
    faked!("mount", args: format!("{}, {}, NULL, MS_BIND|MS_REC", q(&source), q(&target)), Ok(()));
    rustix::mount::mount_bind_recursive(source, target)
}

pub fn mount_move<S: Arg, T: Arg>(source: S, target: T) -> R<()> {
    faked!("mount", args: format!("{}, {}, NULL, MS_MOVE", q(&source), q(&target)), Ok(()));
    rustix::mount::mount_move(source, target)
}

pub fn unmount<T: Arg>(target: T, flags: UnmountFlags) -> R<()> {
    faked!("umount2", args: format!("{}, {flags:?}", q(&target)), Ok(()));
    rustix::mount::unmount(target, flags)
}

/// Our pid (the fake answers with the real one: nothing changes).
pub fn getpid() -> Pid {
    if fake::takes("getpid") {
        return rustix::process::getpid();
    }
    rustix::process::getpid()
}

pub fn getppid() -> Option<Pid> {
    if fake::takes("getppid") {
        return rustix::process::getppid();
    }
    rustix::process::getppid()
}

/// No signal when the parent dies (PR_SET_PDEATHSIG, 0).
pub fn outlive_parent() -> R<()> {
    faked!("prctl", Ok(()));
    rustix::process::set_parent_process_death_signal(None)
}

/// PR_SET_DUMPABLE 0: no ptrace, /proc/PID/fd, mem or environ of this
/// process for a process without CAP_SYS_PTRACE over it (the sandbox has
/// none), and no core dump.
pub fn not_dumpable() -> R<()> {
    faked!("prctl", Ok(()));
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
}

pub fn die_with_parent() -> R<()> {
    faked!("prctl", Ok(()));
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
}

pub fn chdir<P: Arg>(path: P) -> R<()> {
    faked!("chdir", args: q(&path), Ok(()));
    rustix::process::chdir(path)
}

pub fn chroot<P: Arg>(path: P) -> R<()> {
    faked!("chroot", args: q(&path), Ok(()));
    rustix::process::chroot(path)
}

pub fn pivot_root<P: Arg, Q: Arg>(new_root: P, put_old: Q) -> R<()> {
    faked!("pivot_root", args: format!("{}, {}", q(&new_root), q(&put_old)), Ok(()));
    rustix::process::pivot_root(new_root, put_old)
}

pub fn setsid() -> R<Pid> {
    faked!("setsid", Ok(rustix::process::getpid()));
    rustix::process::setsid()
}

pub fn waitpid(pid: Option<Pid>, opts: WaitOptions) -> R<Option<(Pid, WaitStatus)>> {
    faked!("wait4", Err(Errno::CHILD));
    rustix::process::waitpid(pid, opts)
}

pub fn wait(opts: WaitOptions) -> R<Option<(Pid, WaitStatus)>> {
    faked!("wait4", Err(Errno::CHILD));
    rustix::process::wait(opts)
}

pub fn kill_process(pid: Pid, signal: Signal) -> R<()> {
    faked!("kill", args: format!("{}, {}", pid.as_raw_nonzero(), signal.as_raw()), Ok(()));
    rustix::process::kill_process(pid, signal)
}

/// `kill(pid, 0)`: whether a signal could reach the process.
pub fn test_kill_process(pid: Pid) -> R<()> {
    faked!("kill", Ok(()));
    rustix::process::test_kill_process(pid)
}

/// Waits until one of `fds` has an event, at most `timeout` (None: until
/// one has). The fake answers that none has.
pub fn poll(fds: &mut [rustix::event::PollFd<'_>], timeout: Option<std::time::Duration>) -> R<usize> {
    faked!("poll", args: format!("{} fds, {timeout:?}", fds.len()), Ok(0));
    let timeout = timeout.map(|d| rustix::event::Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: i64::from(d.subsec_nanos()),
    });
    rustix::event::poll(fds, timeout.as_ref())
}

/// The calling thread's nice value (Linux keeps one per thread).
pub fn thread_nice() -> R<i32> {
    faked!("getpriority", Ok(0));
    rustix::process::getpriority_process(None)
}

/// `setpriority(PRIO_PROCESS, 0, nice)`: this thread's nice value only
/// (below the current one needs CAP_SYS_NICE or RLIMIT_NICE).
pub fn set_thread_nice(nice: i32) -> R<()> {
    faked!("setpriority", args: format!("PRIO_PROCESS, 0, {nice}"), Ok(()));
    rustix::process::setpriority_process(None, nice)
}

pub fn pidfd_open(pid: Pid, flags: PidfdFlags) -> R<OwnedFd> {
    faked!("pidfd_open", Ok(fake::fd()));
    rustix::process::pidfd_open(pid, flags)
}

/// A signal to the process a pidfd names: never to a process that took
/// its pid after it (ESRCH once it is gone).
pub fn pidfd_send_signal(pidfd: impl AsFd, signal: Signal) -> R<()> {
    faked!("pidfd_send_signal", Ok(()));
    rustix::process::pidfd_send_signal(pidfd, signal)
}

pub fn drop_from_bounding_set(cap: CapabilitySet) -> R<()> {
    faked!("prctl", Ok(()));
    rustix::thread::remove_capability_from_bounding_set(cap)
}

pub fn clear_ambient_set() -> R<()> {
    faked!("prctl", Ok(()));
    rustix::thread::clear_ambient_capability_set()
}

pub fn set_ambient(cap: CapabilitySet, on: bool) -> R<()> {
    faked!("prctl", Ok(()));
    rustix::thread::configure_capability_in_ambient_set(cap, on)
}

pub fn capabilities() -> R<CapabilitySets> {
    faked!(
        "capget",
        Ok(CapabilitySets {
            effective: CapabilitySet::all(),
            permitted: CapabilitySet::all(),
            inheritable: CapabilitySet::empty(),
        })
    );
    rustix::thread::capabilities(None)
}

pub fn set_capabilities(sets: CapabilitySets) -> R<()> {
    faked!("capset", Ok(()));
    rustix::thread::set_capabilities(None, sets)
}

pub fn set_no_new_privs() -> R<()> {
    faked!("prctl", Ok(()));
    rustix::thread::set_no_new_privs(true)
}

pub fn sethostname(name: &[u8]) -> R<()> {
    faked!("sethostname", args: shown(name), Ok(()));
    rustix::system::sethostname(name)
}

pub fn socket_datagram() -> R<OwnedFd> {
    faked!("socket", Ok(fake::fd()));
    rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::DGRAM,
        None,
    )
}

pub fn seqpacket_pair() -> R<(OwnedFd, OwnedFd)> {
    faked!("socketpair", Ok((fake::fd(), fake::fd())));
    rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::SEQPACKET,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )
}

/// A pty master's number (TIOCGPTN), as ptsname(3) reads it.
/// A new pty of the devpts at /dev/ptmx: its master and its other end
/// (TIOCGPTPEER, so no path in /dev/pts is trusted), neither a controlling
/// terminal; the failing call and errno when there is none.
pub fn open_pty() -> Result<(OwnedFd, OwnedFd), (&'static str, Errno)> {
    use rustix::pty::{OpenptFlags, grantpt, ioctl_tiocgptpeer, openpt, unlockpt};
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY;
    let master = openpt(flags).map_err(|e| ("open(/dev/ptmx)", e))?;
    grantpt(&master).map_err(|e| ("ioctl(TIOCGPTN)", e))?;
    unlockpt(&master).map_err(|e| ("ioctl(TIOCSPTLCK)", e))?;
    let peer = ioctl_tiocgptpeer(&master, flags).map_err(|e| ("ioctl(TIOCGPTPEER)", e))?;
    Ok((master, peer))
}

pub fn pty_number<Fd: AsFd>(master: Fd) -> R<u32> {
    faked!("ioctl", Ok(0));
    let name = rustix::pty::ptsname(master, Vec::new())?;
    name.to_str()
        .ok()
        .and_then(|n| n.rsplit('/').next()?.parse().ok())
        .ok_or(rustix::io::Errno::INVAL)
}

/// Sends a descriptor with a one-byte message (SCM_RIGHTS).
pub fn send_fd<Fd: AsFd>(socket: Fd, kind: u8, fd: rustix::fd::BorrowedFd<'_>) -> R<usize> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    faked!("sendmsg", Ok(1));
    let fds = [fd];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    rustix::net::sendmsg(
        socket,
        &[std::io::IoSlice::new(&[kind])],
        &mut control,
        SendFlags::empty(),
    )
}

/// One byte and the descriptor passed with it (`SCM_RIGHTS`, made
/// close-on-exec), the other end's `send_fd`: None once that end is
/// closed; the fake's end is closed.
pub fn recv_fd<Fd: AsFd>(socket: Fd) -> R<Option<(u8, Option<OwnedFd>)>> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    faked!("recvmsg", Ok(None));
    let mut space = [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut anc = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let msg = rustix::net::recvmsg(
        socket,
        &mut [std::io::IoSliceMut::new(&mut byte)],
        &mut anc,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    if msg.bytes == 0 {
        return Ok(None);
    }
    let fd = anc.drain().find_map(|m| match m {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    });
    Ok(Some((byte[0], fd)))
}

/// An eventfd, close-on-exec and non-blocking.
pub fn eventfd() -> R<OwnedFd> {
    faked!("eventfd2", Ok(fake::fd()));
    rustix::event::eventfd(
        0,
        rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
    )
}

/// The effective uid; the fake's is 0.
pub fn geteuid() -> u32 {
    if fake::takes("geteuid") {
        return 0;
    }
    rustix::process::geteuid().as_raw()
}

/// Makes a terminal the caller's controlling one (`TIOCSCTTY`, not
/// stealing it from another session).
pub fn set_controlling_terminal<Fd: AsFd>(tty: Fd) -> R<()> {
    faked!("ioctl", args: "fd, TIOCSCTTY, 0".to_string(), Ok(()));
    rustix::process::ioctl_tiocsctty(tty)
}

pub fn pipe_cloexec() -> R<(OwnedFd, OwnedFd)> {
    faked!("pipe2", Ok((fake::fd(), fake::fd())));
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
}

/// A path argument as the fake records it: quoted.
fn q<P: Arg>(path: &P) -> String {
    format!("{:?}", path.to_string_lossy())
}

/// Written bytes as the fake records them: quoted, at most 64 of them.
fn shown(data: &[u8]) -> String {
    let text = String::from_utf8_lossy(&data[..data.len().min(64)]).into_owned();
    if data.len() > 64 {
        format!("{text:?}...")
    } else {
        format!("{text:?}")
    }
}
