//! The host steps: what is made on the host before anything is unshared —
//! directories, the redacted rc files, the caches' layers and their slot's
//! lock, the warden.

use super::mounts_steps::mkdir_parents;
use super::*;
use crate::plan::{
    CreateHostDir, HostStep, MakeCgroup, MakePrivateDir, PrepareCaches, PrepareReview, WriteHostFile,
};

impl Executor {
    /// One host step: each its own call.
    pub(super) fn host_step(&mut self, step: HostStep<'_>) -> Result<(), Fail> {
        match step {
            HostStep::CreateHostDir(s) => self.create_host_dir_step(s)?,
            HostStep::PrepareCaches(s) => self.prepare_caches_step(s)?,
            HostStep::WriteHostFile(s) => self.write_host_file_step(s)?,
            HostStep::PrepareReview(s) => self.prepare_review_step(s)?,
            HostStep::MakeCgroup(s) => self.make_cgroup_step(s)?,
            HostStep::MakePrivateDir(s) => self.make_private_dir_step(s)?,
            HostStep::StartWarden(orders) => {
                self.warden = Some(crate::supervise::warden::start(orders, &self.held)?)
            }
        }
        Ok(())
    }

    fn create_host_dir_step(&mut self, s: &CreateHostDir) -> Result<(), Fail> {
        let CreateHostDir { path } = s;
        match k::mkdir(path, Mode::from_raw_mode(0o755)) {
            Err(Errno::EXIST) if path.is_dir() => {}
            other => other?,
        };
        Ok(())
    }

    fn prepare_caches_step(&mut self, s: &PrepareCaches) -> Result<(), Fail> {
        let PrepareCaches {
            create,
            layers,
            marked,
            lock,
        } = s;
        for d in create {
            mkdir_parents(d).map_err(|e| Fail::call("mkdir", format!("{d:?}, 0700"), e))?;
        }
        for l in layers {
            for d in [l.join("upper"), l.join("work")] {
                mkdir_parents(&d).map_err(|e| Fail::call("mkdir", format!("{d:?}, 0700"), e))?;
            }
        }
        for m in marked {
            k::open(
                m,
                OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map_err(|e| Fail::call("open", format!("{m:?}, O_WRONLY|O_CREAT|O_CLOEXEC, 0600"), e))?;
        }
        if let Some(l) = lock {
            let fd = k::open(
                l,
                OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map_err(|e| Fail::call("open", format!("{l:?}, O_RDWR|O_CREAT|O_CLOEXEC, 0600"), e))?;
            k::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                .map_err(|e| Fail::call("flock", format!("{l:?}, LOCK_EX|LOCK_NB"), e))?;
            // The command's pid (qwrap's, which it takes over): the
            // next sandbox of the workspace waits for this slot once
            // that process is gone, instead of taking another.
            // Always ten digits wide, so that it covers any pid
            // written before: a truncation costs half a
            // millisecond on a journalling filesystem.
            let pid = format!("{:>10}\n", k::getpid().as_raw_nonzero());
            k::pwrite(&fd, pid.as_bytes(), 0)
                .map(drop)
                .map_err(|e| Fail::call("pwrite", format!("{l:?}"), e))?;
            self.held.push(fd);
        }
        Ok(())
    }

    fn write_host_file_step(&mut self, s: &WriteHostFile) -> Result<(), Fail> {
        let WriteHostFile { path, text } = s;
        if let Some(dir) = path.parent() {
            mkdir_parents(dir).map_err(|e| Fail::call("mkdir", format!("{dir:?}, 0700"), e))?;
        }
        if k::read_file(path).ok().as_deref() != Some(text.as_bytes()) {
            // Another sandbox may read it meanwhile: replaced whole.
            let mut tmp = path.clone().into_os_string();
            tmp.push(format!(".{}", k::getpid().as_raw_nonzero()));
            let tmp = std::path::PathBuf::from(tmp);
            k::create_file(&tmp, text.as_bytes(), Mode::from_raw_mode(0o600)).map_err(|e| {
                Fail::call(
                    "open",
                    format!("{tmp:?}, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600"),
                    e,
                )
            })?;
            k::rename(&tmp, path).map_err(|e| {
                Fail::call(
                    "rename",
                    format!("{tmp:?}, {path:?}"),
                    Errno::from_io_error(&e).unwrap_or(Errno::IO),
                )
            })?;
        }
        Ok(())
    }

    fn prepare_review_step(&mut self, s: &PrepareReview) -> Result<(), Fail> {
        let PrepareReview {
            layer,
            trees,
            fresh,
            bases,
            record,
        } = s;
        self.prepare_review(layer, (*trees, *fresh), bases, record)?;
        Ok(())
    }

    fn make_cgroup_step(&mut self, s: &MakeCgroup) -> Result<(), Fail> {
        let MakeCgroup { dir, limits } = s;
        make_cgroup(dir, limits)?;
        Ok(())
    }

    fn make_private_dir_step(&mut self, s: &MakePrivateDir) -> Result<(), Fail> {
        let MakePrivateDir { path } = s;
        k::mkdir(path, Mode::from_raw_mode(0o700))
            .map_err(|e| Fail::call("mkdir", format!("{path:?}, 0700"), e))?;
        Ok(())
    }
}

/// `Step::MakeCgroup`: the sandbox's group, each limit written to its
/// file in order, then the group the command joins beneath it.
fn make_cgroup(dir: &std::path::Path, limits: &[(String, String)]) -> Result<(), Fail> {
    k::mkdir(dir, Mode::from_raw_mode(0o755))
        .map_err(|e| Fail::call("mkdir", format!("{dir:?}, 0755"), e))?;
    for (file, value) in limits {
        let path = dir.join(file);
        write_at(&CWD, &path, value.as_bytes())
            .map_err(|e| Fail::call("write", format!("{path:?}, {value:?}"), e))?;
    }
    let leaf = dir.join(crate::plan::limits::LEAF);
    k::mkdir(&leaf, Mode::from_raw_mode(0o755))
        .map_err(|e| Fail::call("mkdir", format!("{leaf:?}, 0755"), e))?;
    Ok(())
}

impl Executor {
    /// `Step::PrepareReview`: the run's layer on the host, its lock held
    /// (by the warden, from its start on), its record written last.
    fn prepare_review(
        &mut self,
        layer: &std::path::Path,
        (trees, fresh): (usize, bool),
        bases: &[std::path::PathBuf],
        record: &[u8],
    ) -> Result<(), Fail> {
        let mkdir = |d: &std::path::Path| {
            k::mkdir(d, Mode::from_raw_mode(0o700))
                .map_err(|e| Fail::call("mkdir", format!("{d:?}, 0700"), e))
        };
        if let Some(set) = layer.parent().filter(|_| fresh) {
            mkdir_parents(set).map_err(|e| Fail::call("mkdir", format!("{set:?}, 0700"), e))?;
            mkdir(layer)?;
        }
        for n in (0..trees).filter(|_| fresh) {
            let (upper, work) = crate::plan::review::tree_dirs(layer, n);
            mkdir(&layer.join(n.to_string()))?;
            mkdir(&upper)?;
            mkdir(&work)?;
        }
        // Without a base (no index, another filesystem) apply holds the
        // index to the start alone.
        for (n, b) in bases.iter().enumerate() {
            let _ = crate::sys::link(b, layer.join(format!("base-{n}")));
        }
        let lock = layer.join("lock");
        let fd = k::open(
            &lock,
            OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| Fail::call("open", format!("{lock:?}, O_RDWR|O_CREAT|O_CLOEXEC, 0600"), e))?;
        k::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .map_err(|e| Fail::call("flock", format!("{lock:?}, LOCK_EX|LOCK_NB"), e))?;
        // The command's pid (qwrap's, which it takes over): `qwrap review`
        // waits for the lock once that process is gone.
        let pid = format!("{:>10}\n", k::getpid().as_raw_nonzero());
        k::pwrite(&fd, pid.as_bytes(), 0).map_err(|e| Fail::call("pwrite", format!("{lock:?}"), e))?;
        // The start, by the filesystem's own clock: a host file changed
        // after this has a ctime no earlier.
        let st = k::fstat(&fd).map_err(|e| Fail::call("fstat", format!("{lock:?}"), e))?;
        let mut text = record.to_vec();
        text.extend(format!("started\t{}.{:09}\0", st.st_ctime, st.st_ctime_nsec).as_bytes());
        let info = layer.join("info");
        k::create_file(&info, &text, Mode::from_raw_mode(0o600)).map_err(|e| {
            Fail::call(
                "open",
                format!("{info:?}, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600"),
                e,
            )
        })?;
        self.held.push(fd);
        Ok(())
    }
}

/// What on this host explains a host step's errno, where the step knows.
pub(super) fn hint(step: HostStep<'_>, raw: i32) -> Option<String> {
    Some(match step {
        HostStep::StartWarden(_) if raw == libc::ENOENT => {
            "/proc is not mounted here (or not procfs): qwrap needs /proc/self/stat to fork safely".into()
        }
        HostStep::StartWarden(_) if raw == libc::EBUSY => THREADS.into(),
        HostStep::StartWarden(w) if raw != libc::ENOSYS && w.egress.as_ref().is_some_and(|e| e.log.is_some()) => format!(
            "the egress log {} must be a file the caller can open for appending",
            w.egress
                .as_ref()
                .and_then(|e| e.log.as_deref())
                .unwrap_or(Path::new(""))
                .display()
        ),
        HostStep::StartWarden(_) if raw == libc::ENOSYS => WARDEN_NEEDS.into(),
        HostStep::PrepareCaches(_) if raw == libc::EWOULDBLOCK => {
            "another sandbox of this workspace took the same cache layer slot meanwhile: run the command again".into()
        }
        HostStep::PrepareCaches(_) => "a cache directory or its layer could not be made on the host: --cache private keeps the caches \
             in a tmpfs, --no-detect leaves out the toolchains' caches"
            .into(),
        HostStep::PrepareReview(_) if raw == libc::EEXIST || raw == libc::EWOULDBLOCK => {
            "another run of this workspace took the same review layer id meanwhile: run the command again".into()
        }
        HostStep::PrepareReview(_) => {
            "the review layer could not be made in qwrap's state directory (${XDG_STATE_HOME:-~/.local/state}/qwrap/reviews)".into()
        }
        HostStep::MakeCgroup(_) => cgroup_hint(false, raw),
        _ => return None,
    })
}

// The words the process steps' hints share: the warden's filter, a fork
// among threads, the cgroup joined.

/// What the warden needs of the kernel: its filter's and its start's hint.
pub(super) const WARDEN_NEEDS: &str = "this kernel lacks seccomp user notification (Linux 5.0) or pidfd_open (Linux 5.3), which the warden needs";

/// A fork refused while another thread runs (the warden's, the reaper's).
pub(super) const THREADS: &str =
    "this process has more than one thread, and a fork could copy a lock another thread holds";

/// Why a cgroup step of the limits failed, and what to do.
pub(super) fn cgroup_hint(join: bool, raw: i32) -> String {
    match raw {
        libc::EEXIST => "a group of this name was left by an earlier sandbox whose warden did not end (it was killed): remove it (rmdir) and run again".into(),
        libc::ENOENT => "the group has no such file: the kernel lacks it (memory.oom.group: Linux 4.19), or swap is not accounted (memory.swap.max, memory.memsw.*: boot with swapaccount=1, or turn swap off); or leave that limit out".into(),
        libc::EACCES | libc::EPERM | libc::EROFS if join => "the caller may not move itself into the group (on cgroup v2 it needs write access to cgroup.procs of the group both lie under): run qwrap in a group delegated to it, e.g. `systemd-run --user --scope -p Delegate=yes qwrap run …`, or leave the limits out".into(),
        libc::EACCES | libc::EPERM | libc::EROFS => "the caller may not make or write cgroups there: run qwrap in a group delegated to it, e.g. `systemd-run --user --scope -p Delegate=yes qwrap run …`, or leave the limits out".into(),
        libc::EINVAL => "the kernel refused the value (a CPU quota below 1 ms a period, or a limit the parent group does not allow)".into(),
        _ => "the sandbox's cgroup could not be set up; leave the limits out to run without them".into(),
    }
}
