//! The process steps: capabilities, no_new_privs, Landlock, seccomp, fds, session, the command.

use super::*;
use crate::plan::{
    BlockOnFd, CallerSeccomp, Chdir, DropCapabilities, Exec, HandGitDirs, JoinCgroup, Landlock,
    LandlockOnlyFilter, LandlockScopes, ListenEgress, LockFile, PidOneInit, ProcessStep, ReopenFd, SealFds,
    SeccompToMonitor,
};
use crate::supervise::handover::Handed;

impl Executor {
    /// One process step: each its own call.
    pub(super) fn process_step(&mut self, step: ProcessStep<'_>) -> Result<(), Fail> {
        match step {
            ProcessStep::ListenEgress(s) => self.listen_egress_step(s)?,
            ProcessStep::SeccompToMonitor(s) => self.seccomp_to_monitor_step(s)?,
            ProcessStep::JoinCgroup(s) => self.join_cgroup_step(s)?,
            ProcessStep::Chdir(s) => self.chdir_step(s)?,
            ProcessStep::DropCapabilities(s) => self.drop_capabilities_step(s)?,
            ProcessStep::Landlock(s) => self.landlock_step(s)?,
            ProcessStep::LandlockOnlyFilter(s) => self.landlock_only_filter_step(s)?,
            ProcessStep::HandGitDirs(s) => self.hand_git_dirs_step(s)?,
            ProcessStep::CallerSeccomp(s) => self.caller_seccomp_step(s)?,
            ProcessStep::ReopenFd(s) => self.reopen_fd_step(s)?,
            ProcessStep::SealFds(s) => self.seal_fds_step(s)?,
            ProcessStep::PidOneInit(s) => self.pid_one_init_step(s)?,
            ProcessStep::LandlockScopes(s) => self.landlock_scopes_step(s)?,
            ProcessStep::BlockOnFd(s) => self.block_on_fd_step(s)?,
            ProcessStep::LockFile(s) => self.lock_file_step(s)?,
            ProcessStep::Exec(s) => self.exec_step(s)?,
            ProcessStep::Seccomp(p) if p.warden => {
                let listener = seccomp::notify_listener(*p)?;
                let link = self.warden.take().ok_or(Errno::NOTCONN)?;
                link.hand_over(Handed::Listener(listener))?;
            }
            ProcessStep::NoNewPrivs => k::set_no_new_privs()?,
            ProcessStep::Seccomp(p) => seccomp::apply(*p)?,
            ProcessStep::LandlockAllowList(rules) => landlock::allow_list(rules)?,
            ProcessStep::RefuseKeyrings => seccomp::apply_keyring_refusal()?,
            ProcessStep::StartReaper => {
                let link = self.warden.as_ref().ok_or(Errno::NOTCONN)?;
                let reaper = crate::supervise::reaper::start(link.warden)?;
                link.hand_over(Handed::Reaper(reaper))?;
            }
            ProcessStep::DieWithParent => {
                self.die_with_parent = true;
                k::die_with_parent()?;
                if k::getppid() != self.parent {
                    return Err(Errno::SRCH.into());
                }
            }
            ProcessStep::NewSession => new_session(self.die_with_parent)?,
            ProcessStep::StayInit => self.parent = stay_init()?,
            ProcessStep::DetachTerminal => {
                sys::give_up_controlling_terminal()?;
            }
            ProcessStep::HandInit => {
                let me = k::pidfd_open(k::getpid(), rustix::process::PidfdFlags::empty())?;
                let link = self.warden.as_ref().ok_or(Errno::NOTCONN)?;
                link.hand_over(Handed::Init(me))?;
            }
        }
        Ok(())
    }

    fn listen_egress_step(&mut self, s: &ListenEgress) -> Result<(), Fail> {
        let ListenEgress { port } = s;
        let listener = k::listen_loopback(*port).map_err(|e| {
            Fail::call(
                "bind",
                format!("127.0.0.1:{port}"),
                Errno::from_io_error(&e).unwrap_or(Errno::IO),
            )
        })?;
        let link = self.warden.as_ref().ok_or(Errno::NOTCONN)?;
        link.hand_over(Handed::Egress(listener))?;
        Ok(())
    }

    fn seccomp_to_monitor_step(&mut self, s: &SeccompToMonitor) -> Result<(), Fail> {
        let SeccompToMonitor { layers } = s;
        self.hand_calls_to_monitor(*layers)?;
        Ok(())
    }

    fn join_cgroup_step(&mut self, s: &JoinCgroup) -> Result<(), Fail> {
        let JoinCgroup { groups } = s;
        for g in groups {
            let procs = g.join("cgroup.procs");
            write_at(&CWD, &procs, b"0").map_err(|e| Fail::call("write", format!("{procs:?}, \"0\""), e))?;
        }
        Ok(())
    }

    fn chdir_step(&mut self, s: &Chdir) -> Result<(), Fail> {
        let Chdir { candidates } = s;
        self.enter(candidates)?;
        Ok(())
    }

    fn drop_capabilities_step(&mut self, s: &DropCapabilities) -> Result<(), Fail> {
        let DropCapabilities {
            keep,
            bounding,
            ambient,
        } = s;
        caps::drop_capabilities(keep, *bounding, *ambient)?;
        Ok(())
    }

    fn landlock_step(&mut self, s: &Landlock) -> Result<(), Fail> {
        let Landlock {
            abi,
            paths,
            fifo,
            scoped,
        } = s;
        landlock::apply(*abi, paths, fifo, *scoped)?;
        Ok(())
    }

    fn landlock_only_filter_step(&mut self, s: &LandlockOnlyFilter) -> Result<(), Fail> {
        let LandlockOnlyFilter { closed } = s;
        seccomp::apply_landlock_only(*closed)?;
        Ok(())
    }

    fn hand_git_dirs_step(&mut self, s: &HandGitDirs) -> Result<(), Fail> {
        let HandGitDirs { dirs } = s;
        self.hand_git_dirs(dirs)?;
        Ok(())
    }

    fn caller_seccomp_step(&mut self, s: &CallerSeccomp) -> Result<(), Fail> {
        let CallerSeccomp { programs } = s;
        // Installed as the last thing before execve.
        self.filters = programs.iter().map(|p| seccomp::from_bytes(p)).collect();
        Ok(())
    }

    fn reopen_fd_step(&mut self, s: &ReopenFd) -> Result<(), Fail> {
        let ReopenFd { fd, path } = s;
        reopen_fd(*fd, path)?;
        Ok(())
    }

    fn seal_fds_step(&mut self, s: &SealFds) -> Result<(), Fail> {
        let SealFds { keep, .. } = s;
        sys::close_others_at_exec(keep)?;
        Ok(())
    }

    fn pid_one_init_step(&mut self, s: &PidOneInit) -> Result<(), Fail> {
        let PidOneInit {
            forward_signals,
            wait_all,
        } = s;
        crate::supervise::monitor::pid_one(
            self.die_with_parent,
            &self.filters,
            *forward_signals,
            *wait_all,
            self.monitor.ended.take(),
        )?;
        Ok(())
    }

    fn landlock_scopes_step(&mut self, s: &LandlockScopes) -> Result<(), Fail> {
        let LandlockScopes { abi } = s;
        landlock::scopes_only(*abi)?;
        Ok(())
    }

    fn block_on_fd_step(&mut self, s: &BlockOnFd) -> Result<(), Fail> {
        let BlockOnFd { fd } = s;
        sys::block_on_fd(*fd)?;
        Ok(())
    }

    fn lock_file_step(&mut self, s: &LockFile) -> Result<(), Fail> {
        let LockFile { path } = s;
        let fd = k::open(path, OFlags::RDONLY, Mode::empty())?;
        sys::read_lock(fd.as_fd())?;
        // Left open across exec: the command holds the lock until it ends.
        std::mem::forget(fd);
        Ok(())
    }

    fn exec_step(&mut self, s: &Exec) -> Result<(), Fail> {
        Err(self.exec(s))
    }

    /// Enters the first of the candidates that can be entered.
    fn enter(&mut self, candidates: &[std::path::PathBuf]) -> Result<(), Fail> {
        let mut last = Errno::NOENT;
        for c in candidates {
            match k::chdir(c) {
                Ok(()) => {
                    // PWD names the directory entered (bubblewrap's rule).
                    self.pwd = Some(c.clone());
                    return Ok(());
                }
                Err(e) => last = e,
            }
        }
        Err(last.into())
    }

    /// Runs the command; returns only why it could not.
    fn exec(&mut self, s: &Exec) -> Fail {
        let Exec { argv, argv0, env } = s;
        self.monitor.starting();
        let mut vars = env.apply(std::env::vars_os());
        if let Some(pwd) = &self.pwd {
            vars.retain(|(k, _)| k != "PWD");
            vars.push(("PWD".into(), pwd.clone().into_os_string()));
        }
        let cmd = match command::prepare(argv, argv0.as_ref(), &vars) {
            Ok(c) => c,
            Err(e) => return e.into(),
        };
        let errno = sys::exec_after_filters(&cmd.candidates, &cmd.argv, &cmd.envp, &self.filters);
        self.monitor.exec_failed();
        errno.into()
    }

    /// Hands each of the sandbox's own git dirs to the warden, opened
    /// inside, and waits until it has copied the host's files in.
    fn hand_git_dirs(&mut self, dirs: &[std::path::PathBuf]) -> Result<(), Fail> {
        let link = self.warden.as_ref().ok_or(Errno::NOTCONN)?;
        for d in dirs {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let fd = k::open(d, flags, Mode::empty())
                .map_err(|e| Fail::call("open", format!("{d:?}, O_RDONLY|O_DIRECTORY|O_NOFOLLOW"), e))?;
            link.hand_over(Handed::GitDir(fd))?;
        }
        link.wait_for_git_dirs()?;
        Ok(())
    }
}

/// Opens `path` with fd's access mode (and O_APPEND/O_NONBLOCK) and puts it
/// at fd. A character device must be the same device as before, a file or
/// directory the same file; anything else is being replaced by `path`
/// (/dev/null).
fn reopen_fd(fd: i32, path: &Path) -> Result<(), Errno> {
    use rustix::fs::FileType;
    let (flags, old_dev, old_file) = sys::with_inherited_fd(fd, |b| {
        let flags = k::fcntl_getfl(b)?;
        let st = k::fstat(b)?;
        let kind = FileType::from_raw_mode(st.st_mode);
        let is_char = kind == FileType::CharacterDevice;
        let is_file = matches!(kind, FileType::RegularFile | FileType::Directory);
        Ok::<_, Errno>((
            flags,
            is_char.then_some(st.st_rdev),
            is_file.then_some((st.st_dev, st.st_ino)),
        ))
    })??;
    let keep = OFlags::RWMODE | OFlags::APPEND | OFlags::NONBLOCK;
    let new = k::open(
        path,
        (flags & keep) | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    if let Some(dev) = old_dev
        && k::fstat(&new)?.st_rdev != dev
    {
        return Err(Errno::XDEV);
    }
    // A file or directory opened again by its name (not one replaced by
    // /dev/null) must be the same file.
    if let Some(file) = old_file {
        let st = k::fstat(&new)?;
        let replaced = FileType::from_raw_mode(st.st_mode) == FileType::CharacterDevice;
        if !replaced && (st.st_dev, st.st_ino) != file {
            return Err(Errno::XDEV);
        }
    }
    sys::dup_onto(new, fd)
}

/// PID 1 of its PID namespace: the child goes on, with its parent (PID 1
/// now); the parent reaps every process until none is left (the warden's
/// last work done), then exits as the child did.
fn stay_init() -> Result<Option<rustix::process::Pid>, Errno> {
    let Some(pid) = sys::fork()? else {
        // The signals' own actions back: what is sent now is the child's.
        sys::stop_forwarding();
        return Ok(k::getppid());
    };
    k::not_dumpable()?;
    sys::forward_signals_to(pid, false)?;
    let status = sys::reap_all_children(pid)?;
    sys::exit_like(status.exit_status(), status.terminating_signal())
}

/// Starts a new session, without a controlling terminal. A process group
/// leader (a shell's job, a pty's first process) cannot: then qwrap forks,
/// the child starts the session and goes on to run the command, and the
/// parent stays as a supervisor that passes signals on and exits as the
/// child does.
fn new_session(die_with_parent: bool) -> Result<(), Errno> {
    match k::setsid() {
        Ok(_) => Ok(()),
        Err(Errno::PERM) => match sys::fork()? {
            None => {
                k::setsid()?;
                if die_with_parent {
                    k::die_with_parent()?;
                }
                Ok(())
            }
            Some(pid) => {
                // The command's parent: nothing of it for the command.
                k::not_dumpable()?;
                sys::forward_signals_to(pid, false)?;
                let status = crate::sys::wait_child(pid)?;
                sys::exit_like(status.exit_status(), status.terminating_signal())
            }
        },
        Err(e) => Err(e),
    }
}

impl Executor {
    /// bwrap mode with `QWRAP_EXPLAIN`: the filter, its listener to the
    /// monitor.
    fn hand_calls_to_monitor(&mut self, layers: bool) -> Result<(), Fail> {
        let link = self.monitor.explain.take().ok_or(Errno::NOTCONN)?;
        // Without a listener the link closes: the monitor hears nothing.
        if let Some(listener) = seccomp::monitor_listener(layers)? {
            crate::supervise::handover::hand_to(&link, Handed::Listener(listener))?;
        }
        Ok(())
    }
}

/// What on this host explains a process step's errno, where the step
/// knows.
pub(super) fn hint(step: ProcessStep<'_>, raw: i32) -> Option<String> {
    use super::host_steps::{THREADS, WARDEN_NEEDS, cgroup_hint};
    Some(match step {
        ProcessStep::Exec(Exec { argv, .. }) => exec_hint(raw, argv.first()),
        ProcessStep::DieWithParent => "the process that started qwrap exited during setup".into(),
        ProcessStep::StartReaper if raw == libc::EBUSY => THREADS.into(),
        ProcessStep::JoinCgroup(_) => cgroup_hint(true, raw),
        ProcessStep::Seccomp(p) if p.warden && raw == libc::ENOSYS => WARDEN_NEEDS.into(),
        ProcessStep::SealFds(_) if raw == libc::ENOSYS => {
            "this kernel lacks close_range(2) (Linux 5.9)".into()
        }
        _ => return None,
    })
}

/// Why the command could not be executed.
fn exec_hint(errno: i32, cmd: Option<&std::ffi::OsString>) -> String {
    let cmd = cmd.map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
    match errno {
        libc::ENOENT => format!("{cmd:?} was not found (PATH is searched inside the sandbox)"),
        libc::EACCES => format!(
            "{cmd:?} is not executable: a directory, a file without execute permission, or on a noexec mount"
        ),
        _ => format!("{cmd:?} could not be executed"),
    }
}
