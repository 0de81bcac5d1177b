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
                    mkdir_parents(d).map_err(|e| Fail::with(e, format!("mkdir {}", d.display())))?;
                }
                for l in layers {
                    for d in [l.join("upper"), l.join("work")] {
                        mkdir_parents(&d).map_err(|e| Fail::with(e, format!("mkdir {}", d.display())))?;
                    }
                }
                for m in marked {
                    k::open(
                        m,
                        OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
                        Mode::from_raw_mode(0o600),
                    )
                    .map_err(|e| Fail::with(e, format!("open {}", m.display())))?;
                }
                if let Some(l) = lock {
                    let fd = k::open(
                        l,
                        OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC,
                        Mode::from_raw_mode(0o600),
                    )
                    .map_err(|e| Fail::with(e, format!("open {}", l.display())))?;
                    k::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                        .map_err(|e| Fail::with(e, format!("flock {}", l.display())))?;
                    // The command's pid (qwrap's, which it takes over): the
                    // next sandbox of the workspace waits for this slot once
                    // that process is gone, instead of taking another.
                    // Always ten digits wide, so that it covers any pid
                    // written before: a truncation costs half a
                    // millisecond on a journalling filesystem.
                    let pid = format!("{:>10}\n", k::getpid().as_raw_nonzero());
                    k::pwrite(&fd, pid.as_bytes(), 0)
                        .map(drop)
                        .map_err(|e| Fail::with(e, format!("write {}", l.display())))?;
                    self.held.push(fd);
                }
            }
            Step::WriteHostFile { path, text } => {
                let fail = |e: std::io::Error, p: &Path| {
                    Fail::with(
                        Errno::from_io_error(&e).unwrap_or(Errno::IO),
                        p.display().to_string(),
                    )
                };
                if let Some(dir) = path.parent() {
                    mkdir_parents(dir).map_err(|e| Fail::with(e, format!("mkdir {}", dir.display())))?;
                }
                if k::read_file(path).ok().as_deref() != Some(text.as_bytes()) {
                    // Another sandbox may read it meanwhile: replaced whole.
                    let mut tmp = path.clone().into_os_string();
                    tmp.push(format!(".{}", k::getpid().as_raw_nonzero()));
                    let tmp = std::path::PathBuf::from(tmp);
                    k::create_file(&tmp, text.as_bytes(), Mode::from_raw_mode(0o600))
                        .map_err(|e| Fail::with(e, tmp.display().to_string()))?;
                    k::rename(&tmp, path).map_err(|e| fail(e, path))?;
                }
            }
            Step::StartWarden {
                keep_background,
                egress,
                git,
                scoped,
                notes,
            } => {
                self.warden = Some(crate::supervise::warden::start(
                    *keep_background,
                    &self.held,
                    egress.as_ref(),
                    git,
                    *scoped,
                    *notes,
                )?)
            }
            _ => return Err(Errno::INVAL.into()),
        }
        Ok(())
    }
}
