//! The executor: the one module that makes setup syscalls. It runs a Plan's
//! steps in order and stops at the first failure; nothing after a failed step
//! runs, and the command runs only as the last step.

mod caps;
mod capture;
mod command;
mod error;
mod hidden;
mod hints;
mod in_root;
mod landlock;
mod monitor;
mod mount_point;
mod overlay;
mod pointers;
mod reroot;
mod seccomp;
mod warden;

pub use capture::{Captured, capture};
pub use error::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_SETUP, SetupError};

use crate::host::mountinfo;
use crate::plan::{Flags, Plan, Step};
use crate::sys;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{CWD, Mode, OFlags};
use rustix::io::Errno;
use rustix::mount::{MountFlags, MountPropagationFlags, MoveMountFlags, OpenTreeFlags};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// How the executor reports progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Print each step to stderr before running it.
    pub trace: bool,
    /// Print how long each step took, just before the command runs.
    pub timing: bool,
}

/// Runs the plan. On success the process has become the command, so this
/// only ever returns the error that stopped it.
pub fn execute(plan: &Plan, opts: Options) -> SetupError {
    let mut ex = Executor {
        trees: (0..plan.tree_count()).map(|_| None).collect(),
        parent: rustix::process::getppid(),
        mounts: None,
        monitor: monitor::Link::default(),
        proc: None,
        root: plan.new_root.clone().map(in_root::NewRoot::new),
        pwd: None,
        filters: Vec::new(),
        warden: None,
        hidden: None,
    };
    let mut times: Vec<std::time::Duration> = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if opts.trace {
            eprintln!("qwrap: step {i}: {step}");
        }
        if opts.timing && matches!(step, Step::Exec { .. }) {
            print_timing(plan, &times);
        }
        #[cfg(feature = "fault-injection")]
        if let Some(err) = fault::injected(i, step) {
            return err;
        }
        let start = std::time::Instant::now();
        if let Err(fail) = ex.run(step) {
            return fail.into_error(i, step);
        }
        times.push(start.elapsed());
    }
    // The last step is always Exec, which either replaced the process or failed.
    SetupError::new(plan.steps.len(), &Step::NoNewPrivs, libc::EINVAL)
}

fn print_timing(plan: &Plan, times: &[std::time::Duration]) {
    let total: std::time::Duration = times.iter().sum();
    for (i, (step, t)) in plan.steps.iter().zip(times).enumerate() {
        eprintln!(
            "qwrap: time: step {i:>3} {:>8.1} µs  {}",
            t.as_secs_f64() * 1e6,
            step.purpose()
        );
    }
    eprintln!("qwrap: time: setup steps {:>8.1} µs", total.as_secs_f64() * 1e6);
}

/// Test builds only (cargo feature `fault-injection`, never in release
/// builds): `QWRAP_FAULT_STEP=K` makes step K fail as if its syscall had
/// returned EIO, so that tests can prove every step fails closed.
#[cfg(feature = "fault-injection")]
mod fault {
    use super::{Fail, SetupError, Step};

    pub(super) fn injected(index: usize, step: &Step) -> Option<SetupError> {
        let k: usize = std::env::var("QWRAP_FAULT_STEP").ok()?.parse().ok()?;
        if k != index {
            return None;
        }
        let mut e = Fail {
            errno: rustix::io::Errno::IO,
            detail: Some("fault injected by QWRAP_FAULT_STEP (test build)".into()),
        }
        .into_error(index, step);
        // The command never ran, even when the failing step is its exec.
        e.at_exec = false;
        Some(e)
    }
}

/// A failed syscall inside a step, before it is dressed as a SetupError.
struct Fail {
    errno: Errno,
    detail: Option<String>,
}

impl From<Errno> for Fail {
    fn from(errno: Errno) -> Self {
        Fail { errno, detail: None }
    }
}

impl Fail {
    fn into_error(self, index: usize, step: &Step) -> SetupError {
        let raw = self.errno.raw_os_error();
        let mut e = SetupError::new(index, step, raw);
        e.detail = self.detail;
        e.hint = hints::for_step(step, raw);
        e
    }
}

struct Executor {
    /// Detached mount trees from `open_tree`, by TreeId.
    trees: Vec<Option<OwnedFd>>,
    /// Our parent when setup began, to detect it dying before PDEATHSIG is set.
    parent: Option<rustix::process::Pid>,
    /// The mount table, read once by the first legacy read-only remount.
    mounts: Option<Vec<mountinfo::MountEntry>>,
    /// bwrap mode: what the sandbox tells its monitor.
    monitor: monitor::Link,
    /// /proc as the sandbox started, for steps after the root has changed.
    proc: Option<OwnedFd>,
    /// bwrap mode: the new root, inside which destinations are resolved.
    root: Option<in_root::NewRoot>,
    /// bwrap mode: the working directory entered, the command's PWD.
    pwd: Option<std::path::PathBuf>,
    /// bwrap mode: the caller's seccomp programs, installed just before execve.
    filters: Vec<Vec<libc::sock_filter>>,
    /// The link to the warden, until the listener is handed over.
    warden: Option<warden::Link>,
    /// What hidden paths are covered with.
    hidden: Option<hidden::Source>,
}

impl Executor {
    fn run(&mut self, step: &Step) -> Result<(), Fail> {
        match step {
            Step::CreateHostDir { path } => match rustix::fs::mkdir(path, Mode::from_raw_mode(0o755)) {
                Err(Errno::EXIST) if path.is_dir() => {}
                other => other?,
            },
            Step::StartWarden {
                keep_background,
                watch,
            } => self.warden = Some(warden::start(*keep_background, watch)?),
            Step::NewSessionKeyring => sys::join_new_session_keyring()?,
            Step::SeccompNotify { signals } => {
                let listener = seccomp::notify_listener(*signals).map_err(|(errno, detail)| Fail {
                    errno,
                    detail: Some(detail),
                })?;
                let link = self.warden.take().ok_or(Errno::NOTCONN)?;
                warden::hand_over(link, listener)?;
            }
            Step::Unshare { net, ipc } => {
                use rustix::thread::UnshareFlags;
                let mut flags = UnshareFlags::NEWUSER | UnshareFlags::NEWNS;
                if *net {
                    flags |= UnshareFlags::NEWNET;
                }
                if *ipc {
                    flags |= UnshareFlags::NEWIPC;
                }
                sys::unshare_namespaces(flags)?;
            }
            Step::DenySetgroups => match write_proc("/proc/self/setgroups", b"deny") {
                // Kernels before 3.19 have no setgroups file and no need for it.
                Err(Errno::NOENT) => {}
                other => other?,
            },
            Step::WriteIdMap { map, inside, outside } => {
                let file = match map {
                    crate::plan::IdMap::Uid => "/proc/self/uid_map",
                    crate::plan::IdMap::Gid => "/proc/self/gid_map",
                };
                write_proc(file, format!("{inside} {outside} 1").as_bytes())?;
            }
            Step::LoopbackUp => {
                use rustix::net::{AddressFamily, SocketType};
                let sock = rustix::net::socket(AddressFamily::INET, SocketType::DGRAM, None)?;
                sys::interface_up(sock.as_fd(), "lo")?;
            }
            Step::MakeMountsSlave => {
                rustix::mount::mount_change(
                    "/",
                    MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
                )?;
            }
            Step::CloneTree {
                tree,
                source,
                recursive,
                ..
            } => {
                let mut flags = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC;
                if *recursive {
                    flags |= OpenTreeFlags::AT_RECURSIVE;
                }
                *self.slot(*tree)? = Some(rustix::mount::open_tree(CWD, source, flags)?);
            }
            Step::SetTreeAttr { tree, set, private } => {
                let attr = sys::MountAttr {
                    attr_set: attr_bits(set),
                    propagation: if *private { sys::MS_PRIVATE } else { 0 },
                    ..Default::default()
                };
                let fd = self.tree(*tree)?;
                sys::mount_setattr(
                    fd.as_fd(),
                    c"",
                    libc::AT_EMPTY_PATH as u32 | sys::AT_RECURSIVE,
                    &attr,
                )?;
            }
            Step::MountTmpfs {
                target,
                flags,
                mode,
                size,
            } => {
                let size = size.map(|s| format!(",size={s}")).unwrap_or_default();
                let data = CString::new(format!("mode={mode:04o}{size}")).expect("no NUL");
                let target = self.place(target, false)?;
                rustix::mount::mount("tmpfs", target.path(), "tmpfs", ms_flags(flags), data.as_c_str())?;
            }
            Step::AttachTree { tree, target, role } => {
                let fd = self
                    .trees
                    .get_mut(*tree)
                    .and_then(Option::take)
                    .ok_or(Errno::BADF)?;
                let target = self.place(target, false)?;
                // A bind follows a symlink at its destination (resolved in
                // the new root already when placed there).
                let follow = if *role == crate::plan::Role::Bind || target.via_fd() {
                    MoveMountFlags::MOVE_MOUNT_T_SYMLINKS
                } else {
                    MoveMountFlags::empty()
                };
                let attached = rustix::mount::move_mount(
                    fd.as_fd(),
                    "",
                    CWD,
                    target.path(),
                    MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | follow,
                );
                tolerate_vanished_socket(*role, attached)?;
            }
            Step::Mkdir { path, mode } => {
                rustix::fs::mkdir(self.place(path, true)?.path(), Mode::from_raw_mode(*mode))?
            }
            // One mknod, not open + close: an empty file fails if it exists.
            Step::CreateFile { path } => rustix::fs::mknodat(
                CWD,
                self.place(path, true)?.path(),
                rustix::fs::FileType::RegularFile,
                Mode::from_raw_mode(0o444),
                0,
            )?,
            // As bubblewrap: a symlink already there with the same target is
            // the one asked for.
            Step::Symlink { target, link } => {
                let at = self.place(link, true)?;
                match rustix::fs::symlink(target, at.path()) {
                    Err(Errno::EXIST) => match std::fs::read_link(at.path()) {
                        Ok(t) if t == *target => {}
                        found => {
                            return Err(Fail {
                                errno: Errno::EXIST,
                                detail: Some(match found {
                                    Ok(t) => format!(
                                        "Can't make symlink at {}: existing destination is {}",
                                        link.display(),
                                        t.display()
                                    ),
                                    Err(_) => format!(
                                        "Can't make symlink at {}: something else is there",
                                        link.display()
                                    ),
                                }),
                            });
                        }
                    },
                    other => other?,
                }
            }
            Step::MountDevpts { target } => {
                rustix::mount::mount(
                    "devpts",
                    target,
                    "devpts",
                    MountFlags::NOSUID | MountFlags::NOEXEC,
                    c"newinstance,ptmxmode=0666,mode=620",
                )?;
            }
            Step::SetPathAttr {
                target,
                recursive,
                set,
                private,
            } => {
                let path = CString::new(target.as_os_str().as_bytes()).map_err(|_| Errno::INVAL)?;
                let attr = sys::MountAttr {
                    attr_set: attr_bits(set),
                    propagation: if *private { sys::MS_PRIVATE } else { 0 },
                    ..Default::default()
                };
                let flags = if *recursive { sys::AT_RECURSIVE } else { 0 };
                sys::mount_setattr(CWD, &path, flags, &attr)?;
            }
            Step::BindMount {
                source,
                target,
                recursive,
                role,
            } => {
                let target = self.place(target, false)?;
                if *recursive {
                    rustix::mount::mount_bind_recursive(source, target.path())?;
                } else {
                    tolerate_vanished_socket(*role, rustix::mount::mount_bind(source, target.path()))?;
                }
            }
            Step::MakeTreePrivate { target } => {
                rustix::mount::mount_change(
                    target,
                    MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
                )?;
            }
            Step::RemountTreeReadOnly { target, table } => self.remount_tree_read_only(target, table)?,
            Step::Remount { target, flags } => {
                let target = self.place(target, false)?;
                rustix::mount::mount_remount(target.path(), MountFlags::BIND | ms_flags(flags), "")?;
            }
            Step::PivotRoot { new_root, put_old } => reroot::pivot(new_root, put_old)?,
            Step::EnterRoot { new_root } => reroot::enter(new_root)?,
            Step::Chdir { path } => rustix::process::chdir(path)?,
            Step::DropCapabilities => caps::drop_capabilities()?,
            Step::DropCapabilityList {
                caps,
                bounding,
                keep_across_exec,
            } => caps::drop_capability_list(caps, *bounding, *keep_across_exec)?,
            Step::NoNewPrivs => rustix::thread::set_no_new_privs(true)?,
            Step::Landlock { abi, paths, scoped } => {
                landlock::apply(*abi, paths, *scoped).map_err(|(errno, detail)| Fail {
                    errno,
                    detail: Some(detail),
                })?
            }
            Step::Seccomp => seccomp::apply().map_err(|(errno, detail)| Fail {
                errno,
                detail: Some(detail),
            })?,
            Step::ReopenFd { fd, path } => reopen_fd(*fd, path)?,
            Step::MakeHiddenSource { .. } => self.hidden = Some(hidden::make_source()?),
            Step::AttachHidden { dir, target, .. } => {
                hidden::attach(self.hidden.as_ref().ok_or(Errno::BADF)?, *dir, target)?
            }
            Step::SealFds { keep, .. } => sys::close_others_at_exec(keep)?,
            Step::NewSession { die_with_parent } => new_session(*die_with_parent)?,
            Step::DieWithParent => {
                rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
                if rustix::process::getppid() != self.parent {
                    return Err(Errno::SRCH.into());
                }
            }
            Step::CloneMonitor {
                ns,
                info_fd,
                json_status_fd,
                die_with_parent,
                join,
            } => self.monitor = monitor::clone(*ns, *info_fd, *json_status_fd, *die_with_parent, *join)?,
            Step::JoinNamespace { fd, pid } => sys::setns_inherited_fd(*fd, *pid)?,
            Step::UnshareNamespaces { ns } => {
                let flags = rustix::thread::UnshareFlags::from_bits_retain(
                    (ns.clone_flags() & !(libc::CLONE_NEWPID as u64)) as u32,
                );
                sys::unshare_namespaces(flags)?;
            }
            Step::ForkIntoPidNamespace {
                new_pidns,
                die_with_parent,
            } => monitor::fork_into_pidns(*new_pidns, *die_with_parent, self.monitor.ready.take())?,
            Step::NotifyMonitor => {
                if let Some(r) = self.monitor.ready.take() {
                    monitor::notify(r, rustix::process::getpid().as_raw_nonzero().get())?;
                }
            }
            Step::AssertUsernsDisabled => {
                match sys::unshare_namespaces(rustix::thread::UnshareFlags::NEWUSER) {
                    Err(_) => {}
                    Ok(()) => {
                        return Err(Fail {
                            errno: Errno::PERM,
                            detail: Some(
                                "creation of new user namespaces was not disabled as requested".into(),
                            ),
                        });
                    }
                }
            }
            Step::SetHostname { name } => rustix::system::sethostname(name.as_bytes())?,
            Step::EnsureMountPoint { path, dir, mode } => match &self.root {
                Some(root) => root.ensure(path, *dir, *mode)?,
                None => mount_point::ensure(CWD, path, rustix::fs::ResolveFlags::empty(), *dir, *mode)?,
            },
            Step::MountProc { target } => {
                rustix::mount::mount(
                    "proc",
                    self.place(target, false)?.path(),
                    "proc",
                    MountFlags::NOSUID | MountFlags::NOEXEC | MountFlags::NODEV,
                    None,
                )?;
            }
            Step::MountMqueue { target } => {
                rustix::mount::mount(
                    "mqueue",
                    self.place(target, false)?.path(),
                    "mqueue",
                    MountFlags::empty(),
                    None,
                )?;
            }
            Step::ReadOnlyInPlace { path } => match read_only_in_place(path) {
                // Not every kernel has every /proc entry.
                Err(Errno::NOENT) => {}
                other => other?,
            },
            Step::CloneTreeFromFd { tree, fd } => {
                let flags = OpenTreeFlags::OPEN_TREE_CLONE
                    | OpenTreeFlags::OPEN_TREE_CLOEXEC
                    | OpenTreeFlags::AT_RECURSIVE
                    | OpenTreeFlags::AT_EMPTY_PATH;
                let t = sys::open_tree_inherited_fd(*fd, flags)?;
                *self.slot(*tree)? = Some(t);
            }
            Step::CopyFdToFile { fd, path, mode } => {
                let data =
                    sys::read_inherited_fd(*fd).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
                let file = rustix::fs::open(
                    self.place(path, true)?.path(),
                    OFlags::CREATE | OFlags::WRONLY | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::from_raw_mode(*mode),
                )?;
                let mut rest = &data[..];
                while !rest.is_empty() {
                    let n = rustix::io::write(&file, rest)?;
                    rest = &rest[n..];
                }
                rustix::fs::fchmod(&file, Mode::from_raw_mode(*mode))?;
            }
            Step::Chmod { path, mode } => {
                rustix::fs::chmod(self.place(path, false)?.path(), Mode::from_raw_mode(*mode))?
            }
            Step::ChdirFirst { candidates } => {
                let mut last = Errno::NOENT;
                let mut entered = false;
                for c in candidates {
                    match rustix::process::chdir(c) {
                        Ok(()) => {
                            // bubblewrap sets PWD to the directory entered.
                            self.pwd = Some(c.clone());
                            entered = true;
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                if !entered {
                    return Err(last.into());
                }
            }
            Step::CallerSeccomp { programs } => {
                // Installed as the last thing before execve.
                self.filters = programs.iter().map(|p| seccomp::from_bytes(p)).collect();
            }
            Step::PidOneInit { die_with_parent } => monitor::pid_one(*die_with_parent, &self.filters)?,
            Step::BlockOnFd { fd } => sys::block_on_fd(*fd)?,
            Step::LockFile { path } => {
                let fd = rustix::fs::open(path, OFlags::RDONLY, Mode::empty())?;
                sys::read_lock(fd.as_fd())?;
                // Left open across exec: the command holds the lock until it ends.
                std::mem::forget(fd);
            }
            Step::DisableUserns => {
                let proc = rustix::fs::open(
                    "/proc",
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                write_at(&proc, "sys/user/max_user_namespaces", b"1")?;
                self.proc = Some(proc);
            }
            Step::MakeOverlay {
                tree,
                lower,
                upper,
                userxattr,
            } => {
                let made = overlay::make(lower, upper, *userxattr).map_err(|(errno, said)| Fail {
                    errno,
                    detail: (!said.is_empty()).then_some(said),
                })?;
                *self.slot(*tree)? = Some(made);
            }
            Step::NestUserNamespace { uid, gid } => {
                let proc = self.proc.take().ok_or(Errno::BADF)?;
                sys::unshare_namespaces(rustix::thread::UnshareFlags::NEWUSER)?;
                // setgroups stays denied: a nested namespace inherits it.
                write_at(&proc, "self/uid_map", format!("{uid} {uid} 1").as_bytes())?;
                write_at(&proc, "self/gid_map", format!("{gid} {gid} 1").as_bytes())?;
            }
            Step::Exec { argv, argv0, env } => {
                self.monitor.starting();
                let mut vars = env.apply(std::env::vars_os());
                if let Some(pwd) = &self.pwd {
                    vars.retain(|(k, _)| k != "PWD");
                    vars.push(("PWD".into(), pwd.clone().into_os_string()));
                }
                let cmd = command::prepare(argv, argv0.as_ref(), &vars)?;
                let errno = sys::exec_after_filters(&cmd.candidates, &cmd.argv, &cmd.envp, &self.filters);
                self.monitor.exec_failed();
                return Err(errno.into());
            }
        }
        Ok(())
    }

    /// A destination: inside the new root when the plan has one (bwrap
    /// mode), else as named.
    fn place(&self, path: &std::path::Path, create: bool) -> Result<in_root::Placed, Errno> {
        match &self.root {
            Some(root) => root.place(path, create),
            None => Ok(in_root::Placed::as_named(path)),
        }
    }

    /// Where a tree is kept; a plan naming a tree it did not count is refused.
    fn slot(&mut self, id: usize) -> Result<&mut Option<OwnedFd>, Errno> {
        self.trees.get_mut(id).ok_or(Errno::INVAL)
    }

    fn tree(&self, id: usize) -> Result<&OwnedFd, Errno> {
        self.trees.get(id).and_then(Option::as_ref).ok_or(Errno::BADF)
    }

    /// Legacy path: remount `target` and every mount beneath it read-only,
    /// keeping each mount's locked flags. The table is read once and reused:
    /// a later bind of a path onto itself recreates mounts at the same paths.
    fn remount_tree_read_only(&mut self, target: &Path, table: &Path) -> Result<(), Fail> {
        if self.mounts.is_none() {
            let text = std::fs::read(table).map_err(|e| Fail {
                errno: Errno::from_io_error(&e).unwrap_or(Errno::IO),
                detail: Some(format!("reading {}", table.display())),
            })?;
            let parsed = mountinfo::parse(&text).map_err(|e| Fail {
                errno: Errno::INVAL,
                detail: Some(e.to_string()),
            })?;
            self.mounts = Some(parsed);
        }
        let mounts = self.mounts.as_deref().unwrap_or_default();
        // The target keeps the flags of the mount that holds it.
        let holder = mounts
            .iter()
            .filter(|m| target.starts_with(&m.mount_point))
            .max_by_key(|m| m.mount_point.components().count());
        let own = holder.map_or(MountFlags::RDONLY | MountFlags::NOSUID, kept_flags);
        rustix::mount::mount_remount(target, MountFlags::BIND | own, "")?;
        for m in mounts
            .iter()
            .filter(|m| m.mount_point.starts_with(target) && m.mount_point != target)
        {
            match rustix::mount::mount_remount(&m.mount_point, MountFlags::BIND | kept_flags(m), "") {
                Ok(()) => {}
                // Hidden under another mount or behind a directory we cannot
                // search: unreachable by path from inside, so nothing to do.
                Err(Errno::NOENT | Errno::ACCESS | Errno::INVAL) => {}
                Err(errno) => {
                    return Err(Fail {
                        errno,
                        detail: Some(format!("submount {}", m.mount_point.display())),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Clones the tree at `path`, makes the clone read-only and puts it back
/// over `path`. Like bubblewrap, a path this process cannot write anyway is
/// left alone.
fn read_only_in_place(path: &Path) -> Result<(), Errno> {
    if let Err(Errno::ACCESS | Errno::NOENT | Errno::ROFS) =
        rustix::fs::access(path, rustix::fs::Access::WRITE_OK)
    {
        return Ok(());
    }
    let t = rustix::mount::open_tree(
        CWD,
        path,
        OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC | OpenTreeFlags::AT_RECURSIVE,
    )?;
    let attr = sys::MountAttr {
        attr_set: sys::MOUNT_ATTR_RDONLY,
        ..Default::default()
    };
    sys::mount_setattr(
        t.as_fd(),
        c"",
        libc::AT_EMPTY_PATH as u32 | sys::AT_RECURSIVE,
        &attr,
    )?;
    rustix::mount::move_mount(t.as_fd(), "", CWD, path, MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH)
}

/// Opens `path` with fd's access mode (and O_APPEND/O_NONBLOCK) and puts it
/// at fd. A character device must be the same device as before; anything
/// else is being replaced by `path` (/dev/null).
fn reopen_fd(fd: i32, path: &Path) -> Result<(), Errno> {
    let (flags, old_dev) = sys::with_inherited_fd(fd, |b| {
        let flags = rustix::fs::fcntl_getfl(b)?;
        let st = rustix::fs::fstat(b)?;
        let is_char =
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::CharacterDevice;
        Ok::<_, Errno>((flags, is_char.then_some(st.st_rdev)))
    })??;
    let keep = OFlags::RWMODE | OFlags::APPEND | OFlags::NONBLOCK;
    let new = rustix::fs::open(
        path,
        (flags & keep) | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    if let Some(dev) = old_dev
        && rustix::fs::fstat(&new)?.st_rdev != dev
    {
        return Err(Errno::XDEV);
    }
    sys::dup_onto(new, fd)
}

/// A host socket can vanish between the inventory and the mask: then there is
/// nothing to mask.
fn tolerate_vanished_socket(role: crate::plan::Role, r: Result<(), Errno>) -> Result<(), Errno> {
    match r {
        Err(Errno::NOENT) if role == crate::plan::Role::SocketMask => Ok(()),
        other => other,
    }
}

/// Starts a new session, without a controlling terminal. A process group
/// leader (a shell's job, a pty's first process) cannot: then qwrap forks,
/// the child starts the session and goes on to run the command, and the
/// parent stays as a supervisor that passes signals on and exits as the
/// child does.
fn new_session(die_with_parent: bool) -> Result<(), Errno> {
    match rustix::process::setsid() {
        Ok(_) => Ok(()),
        Err(Errno::PERM) => match sys::fork()? {
            None => {
                rustix::process::setsid()?;
                if die_with_parent {
                    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
                }
                Ok(())
            }
            Some(pid) => {
                sys::forward_signals_to(pid)?;
                let status = wait_child(pid)?;
                sys::exit_like(status.exit_status(), status.terminating_signal())
            }
        },
        Err(e) => Err(e),
    }
}

/// RDONLY|NOSUID plus the mount's own NODEV/NOEXEC, which may be locked.
fn kept_flags(m: &mountinfo::MountEntry) -> MountFlags {
    let mut f = MountFlags::RDONLY | MountFlags::NOSUID;
    if m.nodev {
        f |= MountFlags::NODEV;
    }
    if m.noexec {
        f |= MountFlags::NOEXEC;
    }
    f
}

fn ms_flags(f: &Flags) -> MountFlags {
    let mut out = MountFlags::empty();
    for (on, flag) in [
        (f.rdonly, MountFlags::RDONLY),
        (f.nosuid, MountFlags::NOSUID),
        (f.nodev, MountFlags::NODEV),
        (f.noexec, MountFlags::NOEXEC),
    ] {
        if on {
            out |= flag;
        }
    }
    out
}

fn attr_bits(f: &Flags) -> u64 {
    [
        (f.rdonly, sys::MOUNT_ATTR_RDONLY),
        (f.nosuid, sys::MOUNT_ATTR_NOSUID),
        (f.nodev, sys::MOUNT_ATTR_NODEV),
        (f.noexec, sys::MOUNT_ATTR_NOEXEC),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .fold(0, |acc, (_, bit)| acc | bit)
}

/// Writes a /proc control file in one write(2), as the kernel requires.
fn write_proc(path: &str, data: &[u8]) -> Result<(), Errno> {
    write_at(&rustix::fs::CWD, path, data)
}

fn write_at<Fd: rustix::fd::AsFd>(dir: &Fd, path: &str, data: &[u8]) -> Result<(), Errno> {
    let fd = rustix::fs::openat(dir, path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    let n = rustix::io::write(&fd, data)?;
    if n != data.len() {
        return Err(Errno::IO);
    }
    Ok(())
}

/// Waits for one child to end, through interruptions.
pub(super) fn wait_child(pid: i32) -> Result<rustix::process::WaitStatus, Errno> {
    let child = rustix::process::Pid::from_raw(pid).ok_or(Errno::SRCH)?;
    loop {
        match rustix::process::waitpid(Some(child), rustix::process::WaitOptions::empty()) {
            Ok(Some((_, status))) => return Ok(status),
            Ok(None) | Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
}
