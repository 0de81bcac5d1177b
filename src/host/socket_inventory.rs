//! Finds the file of every bound pathname Unix socket in this network
//! namespace, whatever its name looked like when bound: an absolute name is
//! checked by inode; a relative one (or an absolute one no longer there) is
//! looked for beside the processes that hold the socket. A socket whose file
//! may be in view but cannot be found is reported, and for the caller's own
//! sockets it stops the sandbox (the planner's decision).

use super::unix_sockets::{Bound, diag_request, parse, parse_diag};
use rustix::io::Errno;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A bound socket whose file could not be found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unresolved {
    /// The socket's inode, the name it was bound with, its owner.
    pub what: String,
    /// Owned by the caller (or the caller is root): the sandbox must not
    /// start while it may be reachable.
    pub own: bool,
}

/// The inventory: socket files to mask (or keep), and what was not found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Inventory {
    #[serde(serialize_with = "crate::lossy::paths")]
    pub paths: Vec<PathBuf>,
    pub unresolved: Vec<Unresolved>,
    /// Set when sock_diag was unavailable and /proc/net/unix was read.
    pub fallback: Option<String>,
}

pub fn inventory(caller_uid: u32) -> Inventory {
    let first = inventory_once(caller_uid);
    if first.unresolved.iter().any(|u| u.own) {
        // A socket whose holder is exiting (its fds closed, the socket not
        // yet released) and whose file was just removed looks the same for
        // a moment: look again once before failing closed.
        std::thread::sleep(std::time::Duration::from_millis(20));
        return inventory_once(caller_uid);
    }
    first
}

fn inventory_once(caller_uid: u32) -> Inventory {
    match dump() {
        Ok(bound) => resolve(&bound, caller_uid),
        Err(e) => Inventory {
            paths: from_proc_net_unix(),
            unresolved: Vec::new(),
            fallback: Some(format!(
                "sock_diag unavailable ({}): only absolute socket names from /proc/net/unix are masked",
                crate::errno::errno_text(e.raw_os_error())
            )),
        },
    }
}

/// The sock_diag dump of every unix socket, bound pathname ones kept.
fn dump() -> Result<Vec<Bound>, Errno> {
    use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};
    let sock = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        Some(rustix::net::netlink::SOCK_DIAG),
    )?;
    rustix::net::send(&sock, &diag_request(1), SendFlags::empty())?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let (n, _) = rustix::net::recv(&sock, &mut buf[..], RecvFlags::empty())?;
        if n == 0 {
            return Err(Errno::IO);
        }
        let chunk = parse_diag(&buf[..n]);
        if let Some(e) = chunk.error {
            return Err(Errno::from_raw_os_error(e));
        }
        out.extend(chunk.sockets);
        if chunk.done {
            return Ok(out);
        }
    }
}

fn resolve(bound: &[Bound], caller_uid: u32) -> Inventory {
    let mut inv = Inventory::default();
    let mut holders: Option<BTreeMap<u32, Vec<(u32, i32)>>> = None;
    let mut devs: Option<BTreeSet<(u32, u32)>> = None;
    let own_ns = std::fs::read_link("/proc/self/ns/mnt").ok();
    for b in bound {
        let Some((vdev, vino)) = b.file else { continue };
        let (major, minor) = (vdev >> 20, vdev & 0xf_ffff);
        let is_it = |p: &Path| {
            rustix::fs::lstat(p).is_ok_and(|st| {
                rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Socket
                    && rustix::fs::major(st.st_dev) == major
                    && rustix::fs::minor(st.st_dev) == minor
                    && st.st_ino == u64::from(vino)
            })
        };
        let name = Path::new(OsStr::from_bytes(&b.name));
        // A socket under a directory this user cannot search without
        // capabilities (another user's tmux, agent or runtime dir, 0700)
        // cannot be connected to from the sandbox, which has none (root's
        // included): nothing to mask, nothing to report.
        if name.is_absolute() && !searchable_without_caps(name) {
            continue;
        }
        // /dev/null at its name: masked already by a sandbox this process
        // runs in (a nested qwrap), and out of reach.
        if name.is_absolute() && masked_by_null(name) {
            continue;
        }
        let mut found = (name.is_absolute() && is_it(name)).then(|| name.to_path_buf());
        let mut gone = false;
        if found.is_none() {
            let held = holders.get_or_insert_with(socket_holders).get(&b.ino);
            for &(pid, fd) in held.into_iter().flatten() {
                let proc = PathBuf::from(format!("/proc/{pid}"));
                // Paths a holder in another mount namespace sees are not ours.
                if std::fs::read_link(proc.join("ns/mnt")).ok() != own_ns {
                    continue;
                }
                // Beside the holder, where a relative name was bound from.
                let beside = std::fs::read_link(proc.join("cwd")).map(|cwd| cwd.join(name));
                // Or asked of the kernel (root: the holder moved on since).
                // A file removed since (no link left) leaves no path to
                // the socket: nothing to mask.
                let mut removed = false;
                let mut asked = || {
                    let f = crate::sys::unix_socket_file(pid, fd).ok()?;
                    if rustix::fs::fstat(&f).is_ok_and(|st| st.st_nlink == 0) {
                        removed = true;
                        return None;
                    }
                    std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).ok()
                };
                if let Some(cand) = beside
                    .ok()
                    .filter(|c| is_it(c))
                    .or_else(|| asked().filter(|c| is_it(c)))
                {
                    found = Some(cand);
                    break;
                }
                if removed {
                    gone = true;
                    break;
                }
            }
        }
        if gone {
            continue;
        }
        match found {
            Some(p) if !inv.paths.contains(&p) => inv.paths.push(p),
            Some(_) => {}
            // Its filesystem is mounted nowhere here: out of reach.
            None if !devs.get_or_insert_with(mounted_devs).contains(&(major, minor)) => {}
            None => inv.unresolved.push(Unresolved {
                what: format!(
                    "socket inode {} bound as {:?}{}",
                    b.ino,
                    name,
                    b.uid.map(|u| format!(" by uid {u}")).unwrap_or_default()
                ),
                own: caller_uid == 0 || b.uid.is_none_or(|u| u == caller_uid),
            }),
        }
    }
    inv
}

/// Whether `path` is the null device (a socket mask's bind).
fn masked_by_null(path: &Path) -> bool {
    rustix::fs::stat(path).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::CharacterDevice
            && rustix::fs::major(st.st_rdev) == 1
            && rustix::fs::minor(st.st_rdev) == 3
    })
}

/// Whether every directory on the way to `path` lets this process's uid
/// (or one of its groups) search it by its mode bits alone, as a process
/// without capabilities needs (a directory that cannot be read counts as
/// not searchable).
fn searchable_without_caps(path: &Path) -> bool {
    let uid = rustix::process::getuid().as_raw();
    // Not root: the kernel's own answer (it compares the real ids, which
    // a user namespace of a caller's making may show as the overflow uid).
    if uid != 0 {
        return path
            .parent()
            .is_some_and(|p| rustix::fs::access(p, rustix::fs::Access::EXEC_OK).is_ok());
    }
    let gid = rustix::process::getgid().as_raw();
    let groups: Vec<u32> = rustix::process::getgroups()
        .map(|g| g.iter().map(|g| g.as_raw()).collect())
        .unwrap_or_default();
    let mut dir = path.parent();
    while let Some(d) = dir {
        let Ok(st) = rustix::fs::stat(d) else { return false };
        let bit = if st.st_uid == uid {
            0o100
        } else if st.st_gid == gid || groups.contains(&st.st_gid) {
            0o010
        } else {
            0o001
        };
        if st.st_mode & bit == 0 {
            return false;
        }
        dir = d.parent();
    }
    true
}

/// Socket inode → the (pid, fd) holding it, from every /proc/PID/fd this
/// process may read. Only walked when a name needs it.
fn socket_holders() -> BTreeMap<u32, Vec<(u32, i32)>> {
    let mut map: BTreeMap<u32, Vec<(u32, i32)>> = BTreeMap::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return map;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(t) = std::fs::read_link(fd.path()) else {
                continue;
            };
            if let Some(ino) = t
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse::<u32>().ok())
                && let Some(n) = fd.file_name().to_str().and_then(|n| n.parse::<i32>().ok())
            {
                map.entry(ino).or_default().push((pid, n));
            }
        }
    }
    map
}

/// (major, minor) of every mount in this namespace.
fn mounted_devs() -> BTreeSet<(u32, u32)> {
    let text = std::fs::read("/proc/self/mountinfo").unwrap_or_default();
    super::mountinfo::parse(&text)
        .map(|ms| ms.iter().map(|m| (m.major, m.minor)).collect())
        .unwrap_or_default()
}

/// The fallback: absolute names that exist as sockets now.
fn from_proc_net_unix() -> Vec<PathBuf> {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    // One large buffer: each read(2) re-enters the kernel's table walk.
    let mut text = Vec::with_capacity(64 << 10);
    let _ = std::fs::File::open("/proc/net/unix").and_then(|mut f| f.read_to_end(&mut text));
    parse(&text)
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn finds_absolute_relative_and_newline_names() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let abs = base.join("a b.sock");
        let _a = UnixListener::bind(&abs).unwrap();
        let nl = base.join("new\nline.sock");
        let _n = UnixListener::bind(&nl).unwrap();
        // A relative name, bound by another process from inside the dir.
        let mut holder = std::process::Command::new("python3")
            .current_dir(&base)
            .args(["-c", "import socket,time\ns=socket.socket(socket.AF_UNIX)\ns.bind('rel.sock')\ns.listen()\nprint('r',flush=True)\ntime.sleep(30)"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        // The owner comes with each socket (an unknown owner would count as
        // the caller's).
        let uid = rustix::process::getuid().as_raw();
        let ours = dump()
            .unwrap()
            .into_iter()
            .find(|b| b.name == abs.as_os_str().as_bytes())
            .unwrap();
        assert_eq!(ours.uid, Some(uid));
        let inv = inventory(uid);
        assert!(inv.fallback.is_none(), "{:?}", inv.fallback);
        for p in [abs, nl, base.join("rel.sock")] {
            assert!(inv.paths.contains(&p), "{p:?} not in {:?}", inv.paths);
        }
        holder.kill().unwrap();
        holder.wait().unwrap();
    }
}
