//! `--explain`: what a call the filter handed to the warden meets. The
//! warden answers it as the filters without `--explain` would (`base`: the
//! same rules compiled again and run on the call), so the judgment here
//! never decides an answer: for a call they refuse it says which and why;
//! for a call they let go on (CONTINUE: the kernel runs it and enforces as
//! always) it predicts from the arguments, read once from the caller's
//! memory, whether the sandbox will refuse it: a write where the mount is
//! read-only (asked through /proc/PID/root, the sandbox's own view), a read
//! of a hidden path or of a host path the minimal view leaves out, a
//! connect to a masked socket. A thread that changes the path meanwhile
//! can make the report wrong, never the call possible.

use super::refusal::{Kind, Refusal, show};
use crate::plan::explain::{Explain, Marked};
use crate::plan::filter_landlock::{keyring_rules, landlock_only_rules};
use crate::plan::filter_rules::{self as rules, Arch, Insn, Profile, RET_USER_NOTIF, Rule, compile};
use crate::sys::Notification;
use crate::sys::kernel as k;
use std::collections::HashMap;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

const AT_FDCWD: i32 = -100;
const O_ACCMODE: u64 = 0o3;
const O_CREAT: u64 = 0o100;
const O_TRUNC: u64 = 0o1000;
const O_TMPFILE: u64 = 0o20200000;

/// How the filters without `--explain` answer a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Base {
    Allow,
    Errno(i32),
    /// One the warden decodes already (calls.rs, metadata.rs).
    Notify,
}

/// The judge: the orders, the filters it answers by, the caller's memory.
pub(super) struct Judge {
    orders: Explain,
    programs: Vec<Vec<Insn>>,
    names: HashMap<i64, (&'static str, Rule)>,
}

impl Judge {
    pub(super) fn new(orders: Explain) -> Judge {
        let arch = Arch::HERE;
        let profile = Profile {
            warden: true,
            unscoped: orders.signals,
            root: orders.root,
            landlock_only: orders.landlock_only,
            explain: false,
        };
        let mut programs = match orders.bwrap {
            // bwrap mode: its layers' filter, or none.
            Some(layers) => layers
                .then(|| compile(arch, &crate::plan::filter_profile::rules(arch, Profile::PLAIN)))
                .into_iter()
                .collect(),
            None => vec![compile(arch, &crate::plan::filter_profile::rules(arch, profile))],
        };
        if orders.keyrings {
            programs.push(compile(arch, &keyring_rules(arch)));
        }
        if let Some(closed) = orders.second {
            programs.push(compile(arch, &landlock_only_rules(arch, closed)));
        }
        let names = rules::table()
            .into_iter()
            .filter(|s| s.nr_on(arch) >= 0)
            .map(|s| (s.nr_on(arch), (s.name, s.rule)))
            .collect();
        Judge {
            orders,
            programs,
            names,
        }
    }

    /// The filters' answer: the one the kernel would take of them all
    /// (an errno before a notification before allow).
    pub(super) fn base(&self, n: &Notification) -> Base {
        let audit = Arch::HERE.audit();
        let action = self
            .programs
            .iter()
            .map(|p| rules::run(p, audit, n.nr as u32, n.args))
            .min_by_key(|a| (a & 0xffff_0000) as i32)
            .unwrap_or(rules::RET_ALLOW);
        if rules::is_errno(action) {
            Base::Errno((action & 0xffff) as i32)
        } else if action == RET_USER_NOTIF {
            Base::Notify
        } else {
            Base::Allow
        }
    }

    fn name(&self, nr: i32) -> (&'static str, Rule) {
        self.names
            .get(&i64::from(nr))
            .copied()
            .unwrap_or(("-", Rule::Unneeded))
    }

    /// A call the filters refuse with `errno`: which, and why.
    pub(super) fn filtered(&self, n: &Notification, errno: i32) -> Refusal {
        let (name, rule) = self.name(n.nr);
        super::explain_why::filtered(&self.orders, name, rule, n, errno)
    }

    /// A call aimed at a process outside the sandbox, refused by the warden.
    pub(super) fn outside(&self, n: &Notification, errno: i32) -> Refusal {
        super::explain_why::outside(self.name(n.nr).0, errno)
    }

    /// Whether a call is one of the signal rule's (kill, tgkill…).
    pub(super) fn is_signal(&self, n: &Notification) -> bool {
        self.name(n.nr).1 == Rule::Signal
    }

    /// A signal to a process outside the sandbox, which Landlock's signal
    /// scope refuses.
    pub(super) fn scoped(&self, n: &Notification, errno: i32) -> Refusal {
        let mut r = super::explain_why::outside(self.name(n.nr).0, errno);
        r.reason = format!("{} (Landlock's signal scope)", r.reason);
        r
    }

    /// What a call the filters let go on will meet (None: nothing known).
    pub(super) fn predict(&mut self, n: &Notification) -> Option<Refusal> {
        let (name, _) = self.name(n.nr);
        let a = n.args;
        let int = |x: u64| x as u32 as i32;
        let tid = n.pid as i32;
        let cwd = AT_FDCWD;
        let (write, at) = match name {
            "open" => return self.open(tid, name, cwd, a[0], a[1]),
            "execve" | "access" | "chdir" => return self.read(tid, name, cwd, a[0]),
            "execveat" | "faccessat" | "faccessat2" => return self.read(tid, name, int(a[0]), a[1]),
            "openat" => return self.open(tid, name, int(a[0]), a[1], a[2]),
            "creat" => return self.open(tid, name, cwd, a[0], O_CREAT | O_TRUNC | 1),
            "connect" => return self.connect(tid, a[1], a[2]),
            "mkdir" | "mknod" => (Write::Create, (cwd, a[0])),
            "mkdirat" | "mknodat" => (Write::Create, (int(a[0]), a[1])),
            "symlink" | "link" => (Write::Create, (cwd, a[1])),
            "symlinkat" => (Write::Create, (int(a[1]), a[2])),
            "linkat" => (Write::Create, (int(a[2]), a[3])),
            "rmdir" | "unlink" => (Write::Remove, (cwd, a[0])),
            "unlinkat" => (Write::Remove, (int(a[0]), a[1])),
            "rename" => {
                return self
                    .write(tid, name, Write::Remove, cwd, a[0])
                    .or_else(|| self.write(tid, name, Write::Replace, cwd, a[1]));
            }
            "renameat" | "renameat2" => {
                return self
                    .write(tid, name, Write::Remove, int(a[0]), a[1])
                    .or_else(|| self.write(tid, name, Write::Replace, int(a[2]), a[3]));
            }
            "truncate" | "chmod" => (Write::Change, (cwd, a[0])),
            "fchmodat" | "fchmodat2" => (Write::Change, (int(a[0]), a[1])),
            _ => return None,
        };
        self.write(tid, name, write, at.0, at.1)
    }

    fn open(&mut self, tid: i32, op: &str, dirfd: i32, ptr: u64, flags: u64) -> Option<Refusal> {
        let writes = flags & O_ACCMODE != 0 || flags & (O_CREAT | O_TRUNC) != 0;
        if !writes {
            return self.read(tid, op, dirfd, ptr);
        }
        let how = if flags & O_TMPFILE == O_TMPFILE {
            Write::Change
        } else {
            Write::Open {
                create: flags & O_CREAT != 0,
                // O_CREAT alone opens a file that exists as asked: no write.
                access: flags & O_ACCMODE != 0 || flags & O_TRUNC != 0,
            }
        };
        self.write(tid, op, how, dirfd, ptr)
    }

    /// A read: of a hidden path, or of a host path the minimal view leaves out.
    fn read(&mut self, tid: i32, op: &str, dirfd: i32, ptr: u64) -> Option<Refusal> {
        let path = self.path(tid, dirfd, ptr)?;
        if let Some(h) = self.orders.hidden.iter().find(|h| within(&path, h)) {
            // A hidden file is a mode-0000 file inside, a hidden directory
            // a mode-0000 directory: the command, which holds no
            // capability (root's neither), can open neither nor search it.
            return Some(Refusal {
                kind: Kind::Read,
                op: op.into(),
                target: show(&path),
                errno: Some(libc::EACCES),
                reason: h.why.clone(),
                option: h.allow.clone(),
            });
        }
        if let (Some(listed), Some(home)) = (&self.orders.home_listed, &self.orders.home)
            && path.starts_with(home)
            && path != *home
            && !listed
                .iter()
                .any(|e| within(&path, e) || e.path.starts_with(&path))
            && k::lstat(&path).is_ok()
        {
            return Some(Refusal {
                kind: Kind::Read,
                op: op.into(),
                target: show(&path),
                errno: Some(libc::ENOENT),
                reason: "a name of the home the listed view leaves out".into(),
                // --show both lists it and takes it out of the hidden set.
                option: Some(format!("--show {}", show(&path))),
            });
        }
        let view = self.orders.view.as_ref()?;
        let system = ["/proc", "/sys", "/dev", "/tmp"]
            .iter()
            .any(|s| path.starts_with(s));
        if system || view.iter().any(|e| within(&path, e)) || k::lstat(&path).is_err() {
            return None;
        }
        Some(Refusal {
            kind: Kind::Read,
            op: op.into(),
            target: show(&path),
            errno: Some(libc::ENOENT),
            reason: "a host path the minimal view leaves out".into(),
            option: Some(format!("--expose {}", show(&path))),
        })
    }

    /// A write: refused where the sandbox's view of the path (or of its
    /// directory, for a new name) is a read-only mount; without namespaces,
    /// outside the paths Landlock lets the command write.
    fn write(&mut self, tid: i32, op: &str, how: Write, dirfd: i32, ptr: u64) -> Option<Refusal> {
        let path = self.path(tid, dirfd, ptr)?;
        let inside = |p: &Path| self.orders.writable.iter().any(|w| p.starts_with(w));
        let read_only = self.orders.read_only.iter().find(|m| within(&path, m));
        if inside(&path) && read_only.is_none() {
            return None;
        }
        let parent = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        let view = |p: &Path| -> PathBuf {
            if self.orders.landlock_only {
                p.to_path_buf()
            } else {
                crate::plan::under(Path::new(&format!("/proc/{tid}/root")), p)
            }
        };
        let target = k::lstat(view(&path))
            .ok()
            .map(|m| rustix::fs::FileType::from_raw_mode(m.st_mode));
        // Where the kernel answers something else first (EEXIST, ENOENT),
        // or the open of a device, FIFO or socket needs no write access to
        // its mount, nothing is said.
        let judged = match how {
            Write::Open { create, access } => match &target {
                Some(_) if !access => return None,
                Some(rustix::fs::FileType::RegularFile) => path.clone(),
                Some(rustix::fs::FileType::Symlink) => {
                    match k::statat(rustix::fs::CWD, view(&path), rustix::fs::AtFlags::empty()) {
                        Ok(t)
                            if rustix::fs::FileType::from_raw_mode(t.st_mode)
                                == rustix::fs::FileType::RegularFile =>
                        {
                            path.clone()
                        }
                        _ => return None,
                    }
                }
                Some(_) => return None,
                None if create => parent.clone(),
                None => return None,
            },
            Write::Create => match &target {
                Some(_) => return None,
                None => parent.clone(),
            },
            Write::Remove => match &target {
                Some(_) => parent.clone(),
                None => return None,
            },
            Write::Replace => parent.clone(),
            Write::Change => match &target {
                Some(rustix::fs::FileType::BlockDevice | rustix::fs::FileType::CharacterDevice) => {
                    return None;
                }
                Some(_) => path.clone(),
                None => return None,
            },
        };
        let refused = if self.orders.landlock_only {
            !inside(&judged) || read_only.is_some()
        } else {
            read_only_mount(&view(&judged))?
        };
        if !refused {
            return None;
        }
        let (errno, reason, option) = super::explain_why::write(&self.orders, &path, &parent, read_only);
        Some(Refusal {
            kind: Kind::Write,
            op: op.into(),
            target: show(&path),
            errno: Some(errno),
            reason,
            option,
        })
    }

    /// A connect to a masked host socket (it is /dev/null inside: ECONNREFUSED).
    fn connect(&mut self, tid: i32, addr: u64, len: u64) -> Option<Refusal> {
        if self.orders.sockets.is_empty() || !(3..=110).contains(&len) {
            return None;
        }
        let mut buf = vec![0u8; len as usize];
        if self.read_memory(tid, addr, &mut buf, false)? < buf.len() {
            return None;
        }
        if u16::from_ne_bytes([buf[0], buf[1]]) != libc::AF_UNIX as u16 || buf[2] == 0 {
            return None;
        }
        let end = buf[2..].iter().position(|b| *b == 0).map_or(buf.len(), |e| e + 2);
        let name = PathBuf::from(std::ffi::OsStr::from_bytes(&buf[2..end]));
        let path = self.absolute(tid, AT_FDCWD, name)?;
        self.orders.sockets.iter().find(|s| **s == path)?;
        Some(Refusal {
            kind: Kind::Socket,
            op: "connect".into(),
            target: show(&path),
            errno: Some(libc::ECONNREFUSED),
            reason: "a host socket, masked inside".into(),
            option: Some(format!("--allow-socket {}", show(&path))),
        })
    }

    /// The path a call names, made absolute against its directory
    /// (the caller's cwd or descriptor, as /proc links it).
    fn path(&mut self, tid: i32, dirfd: i32, ptr: u64) -> Option<PathBuf> {
        if ptr == 0 {
            return None;
        }
        let mut buf = vec![0u8; 4096];
        let got = self.read_memory(tid, ptr, &mut buf, true)?;
        let end = buf[..got].iter().position(|b| *b == 0)?;
        if end == 0 {
            return None;
        }
        buf.truncate(end);
        self.absolute(tid, dirfd, PathBuf::from(std::ffi::OsString::from_vec(buf)))
    }

    fn absolute(&self, tid: i32, dirfd: i32, path: PathBuf) -> Option<PathBuf> {
        let full = if path.is_absolute() {
            path
        } else {
            let link = if dirfd == AT_FDCWD {
                format!("/proc/{tid}/cwd")
            } else {
                format!("/proc/{tid}/fd/{dirfd}")
            };
            k::read_link(Path::new(&link)).ok()?.join(path)
        };
        Some(normal(&full))
    }

    /// Up to `buf.len()` bytes of the caller's memory at `at`, page by
    /// page (a string near the end of its mapping reads up to there), up
    /// to the first NUL where `string`.
    fn read_memory(&self, tid: i32, at: u64, buf: &mut [u8], string: bool) -> Option<usize> {
        let mut got = 0;
        while got < buf.len() {
            let from = at + got as u64;
            let want = (((from | 4095) + 1 - from) as usize).min(buf.len() - got);
            match crate::sys::read_memory(tid, from, &mut buf[got..got + want]) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    got += n;
                    if string && buf[got - n..got].contains(&0) {
                        break;
                    }
                }
            }
        }
        (got > 0).then_some(got)
    }
}

/// What a write does to its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    /// open with O_CREAT (`create`), for writing or O_TRUNC (`access`).
    Open { create: bool, access: bool },
    /// A new name: refused where its directory is read-only, unless it
    /// exists (EEXIST first).
    Create,
    /// A name taken away: refused where its directory is read-only.
    Remove,
    /// A name replaced or made (rename's new side).
    Replace,
    /// The file itself changed (truncate, chmod, O_TMPFILE's directory).
    Change,
}

/// Whether a path lies at or beneath a marked entry (at it, for a file).
fn within(p: &Path, m: &Marked) -> bool {
    if m.dir {
        p.starts_with(&m.path)
    } else {
        p == m.path
    }
}

/// Whether the mount at a path (of the sandbox's view) is read-only; None
/// where it cannot be asked.
fn read_only_mount(p: &Path) -> Option<bool> {
    let st = crate::sys::kernel::statvfs(p).ok()?;
    Some(st.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY))
}

/// `.` and `..` taken out by the text (a `..` after a symlink can make
/// this name another path than the kernel's: a report may be wrong, no
/// call is decided by it).
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_normal() {
        assert_eq!(normal(Path::new("/a/./b/../c//d")), PathBuf::from("/a/c/d"));
        assert_eq!(normal(Path::new("/../x")), PathBuf::from("/x"));
    }

    #[test]
    fn marked_dirs_hold_what_lies_beneath_and_files_only_themselves() {
        let m = |p: &str, dir| Marked {
            path: p.into(),
            dir,
            why: String::new(),
            allow: None,
        };
        assert!(within(Path::new("/h/.ssh/id_rsa"), &m("/h/.ssh", true)));
        assert!(!within(Path::new("/h/.sshx"), &m("/h/.ssh", true)));
        assert!(within(Path::new("/h/.netrc"), &m("/h/.netrc", false)));
        assert!(!within(Path::new("/h/.netrc/x"), &m("/h/.netrc", false)));
    }
}
