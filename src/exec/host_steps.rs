//! The host steps: what is made on the host before anything is unshared —
//! directories, the redacted rc files, the caches' layers and their slot's
//! lock, the warden.

use super::mounts_steps::mkdir_parents;
use super::*;

impl Executor {
    pub(super) fn host_step(&mut self, step: &Step) -> Result<(), Fail> {
        match step {
            Step::CreateHostDir { path } => match k::mkdir(path, Mode::from_raw_mode(0o755)) {
                Err(Errno::EXIST) if path.is_dir() => {}
                other => other?,
            },
            Step::PrepareCaches {
                create,
                layers,
                marked,
                lock,
            } => {
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
            }
            Step::WriteHostFile { path, text } => {
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
            }
            Step::StartWarden {
                keep_background,
                egress,
                git,
                scoped,
                notes,
                remove,
                writable,
                explain,
                limits,
                repos,
            } => {
                let orders = crate::supervise::warden::Orders {
                    keep_background: *keep_background,
                    egress: egress.as_ref(),
                    git,
                    scoped: *scoped,
                    notes: *notes,
                    remove: remove.as_deref(),
                    writable,
                    explain: explain.as_deref(),
                    limits: limits.as_ref(),
                    repos: repos.as_ref(),
                };
                self.warden = Some(crate::supervise::warden::start(orders, &self.held)?)
            }
            Step::MakeCgroup { dir, limits } => {
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
            }
            Step::MakePrivateDir { path } => k::mkdir(path, Mode::from_raw_mode(0o700))
                .map_err(|e| Fail::call("mkdir", format!("{path:?}, 0700"), e))?,
            _ => return Err(Errno::INVAL.into()),
        }
        Ok(())
    }
}
