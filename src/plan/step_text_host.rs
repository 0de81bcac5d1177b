//! The printed calls of the host steps: what is made on the host before
//! anything is unshared, and the warden.

use super::step::Step;
use super::step_args::{DETACHED, DETACHED_END, ONE_THREAD, q};
use std::fmt;

/// A host step's text; the others are step_text.rs's.
pub(super) fn write(step: &Step, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match step {
        Step::WriteHostFile { path, text } => {
            let mut temporary = path.clone().into_os_string();
            temporary.push(".<getpid()>");
            write!(
                f,
                "mkdir(its directory, 0700); unless open({}) and read() find it already: open({}, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600), write() {} bytes, rename(it, {}) on the host",
                q(path),
                q(std::path::Path::new(&temporary)),
                text.len(),
                q(path)
            )
        }
        Step::CreateHostDir { path } => write!(f, "mkdir({}, 0755) on the host", q(path)),
        Step::PrepareCaches {
            create,
            layers,
            marked,
            lock,
        } => {
            let mut calls: Vec<String> = create.iter().map(|d| format!("mkdir({}, 0700)", q(d))).collect();
            for l in layers {
                calls.push(format!(
                    "mkdir({}, 0700); mkdir({}, 0700)",
                    q(&l.join("upper")),
                    q(&l.join("work"))
                ));
            }
            for m in marked {
                calls.push(format!("open({}, O_WRONLY|O_CREAT|O_CLOEXEC, 0600)", q(m)));
            }
            if let Some(l) = lock {
                calls.push(format!(
                        "open({}, O_RDWR|O_CREAT|O_CLOEXEC, 0600) = <lock>; flock(<lock>, LOCK_EX|LOCK_NB); pwrite(<lock>, getpid() ten digits wide)",
                        q(l)
                    ));
            }
            write!(f, "{} on the host (with missing parents)", calls.join("; "))
        }
        Step::StartWarden {
            keep_background,
            egress,
            git,
            scoped,
            notes,
            remove,
            writable,
            watch,
            review,
        } => {
            write!(f, "socketpair(AF_UNIX, SOCK_SEQPACKET); getpid() = the command; ")?;
            if *notes {
                write!(f, "fcntl(stderr, F_DUPFD_CLOEXEC) for its notes; ")?;
            }
            if let Some(l) = egress.as_ref().and_then(|e| e.log.as_ref()) {
                write!(f, "open({}, O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, 0600); ", q(l))?;
            }
            write!(
                f,
                "{ONE_THREAD}{DETACHED}the warden{DETACHED_END}, so that it is no child of the command (outside the sandbox; {}",
                match (keep_background, scoped) {
                    (true, _) => "leaves the command's leftovers running",
                    (false, true) =>
                        "when the command exits, waits (poll, at most 2 s) for the reaper's kill(-1) to empty the sandbox",
                    (false, false) =>
                        "when the command exits, holds every fork and kills every process whose user namespace is the sandbox's or one made inside it (NS_GET_PARENT), until none is left",
                }
            )?;
            write!(
                f,
                "; holds the cache layer slot's lock, when there is one, through fcntl(F_DUPFD_CLOEXEC), and lets it go once the command and its leftovers are gone"
            )?;
            if let Some(e) = egress {
                write!(
                    f,
                    "; serves the egress proxy to {} listed destinations",
                    e.allow.0.len()
                )?;
            }
            if let Some(dir) = remove {
                write!(f, "; removes {} once the sandbox is gone", q(dir))?;
            }
            if !writable.is_empty() {
                let names: Vec<String> = writable.iter().map(|p| q(p)).collect();
                write!(
                    f,
                    "; makes the trapped chmod and utimensat calls itself, for a file beneath {} that the command's user owns (read from /proc/PID/mem, opened O_PATH, judged by its /proc/self/fd link), EPERM elsewhere",
                    names.join(", ")
                )?;
            }
            if !git.is_empty() {
                let names: Vec<String> = git.iter().map(|p| q(p)).collect();
                write!(
                    f,
                    "; keeps the sandbox's own {} in step with the host's for git's allow-listed files, from open(each, O_RDONLY|O_DIRECTORY) and inotify_init1(), reporting on fcntl(2, F_DUPFD_CLOEXEC)",
                    names.join(", ")
                )?;
            }
            if !watch.is_empty() {
                let names: Vec<String> = watch.iter().map(|p| q(p)).collect();
                write!(
                    f,
                    "; when the command exits, names on stderr each of {} that is there (made inside)",
                    names.join(", ")
                )?;
            }
            if let Some(l) = review {
                write!(
                    f,
                    "; when the command exits, writes out the layer {} with syncfs and names it on stderr, or where every upper directory is empty leaves it idle for the next run",
                    q(l)
                )?;
            }
            write!(f, ")")
        }
        Step::PrepareReview {
            layer,
            trees,
            fresh,
            bases,
            ..
        } => {
            let set = layer.parent().unwrap_or(layer);
            let mut calls = if *fresh {
                vec![
                    format!("mkdir({}, 0700) with missing parents", q(set)),
                    format!("mkdir({}, 0700) (EEXIST: another run took this id)", q(layer)),
                ]
            } else {
                vec![format!(
                    "the idle layer {} reused (its directories there, left empty by an earlier run)",
                    q(layer)
                )]
            };
            for n in (0..*trees).filter(|_| *fresh) {
                let (upper, work) = super::review::tree_dirs(layer, n);
                calls.push(format!(
                    "mkdir({}, 0700); mkdir({}, 0700); mkdir({}, 0700)",
                    q(&layer.join(n.to_string())),
                    q(&upper),
                    q(&work)
                ));
            }
            for (n, b) in bases.iter().enumerate() {
                calls.push(format!(
                    "link({}, {}) where it is there",
                    q(b),
                    q(&layer.join(format!("base-{n}")))
                ));
            }
            calls.push(format!(
                "open({}, O_RDWR|O_CREAT|O_CLOEXEC, 0600) = <lock>; flock(<lock>, LOCK_EX|LOCK_NB) (EWOULDBLOCK: another run took it); pwrite(<lock>, getpid() ten digits wide); fstat(<lock>) = the run's start, its ctime; open({}, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600), write() the trees, the command and the start",
                q(&layer.join("lock")),
                q(&layer.join("info"))
            ));
            write!(f, "{} on the host", calls.join("; "))
        }
        _ => Ok(()),
    }
}
