//! Probe checks that try to reach the host from inside: its processes
//! (signals, limits, /proc), its abstract and pathname sockets.

use super::Check;
use crate::errno::errno_text;
use std::path::Path;

/// Measured on every kernel, by every route verify knows: the kill family
/// and a pidfd (Landlock's scope refuses them where it exists, the warden or
/// the filter everywhere else), and without the scope the calls that set a
/// file's SIGIO owner (refused by the filter; with the scope the kernel
/// refuses the signal itself at delivery).
pub(super) fn signal(pid: Option<u32>, scoped: bool, private_pid: bool) -> Check {
    const N: &str = "signal-host";
    const T: &str = "a host process cannot be signalled (every route)";
    let Some(pid) = pid.filter(|&p| p > 0) else {
        return Check::skip(N, T, "no host process to try".into());
    };
    if let Some(skip) = private_pid.then(|| taken_inside(N, T, pid)).flatten() {
        return skip;
    }
    // With a PID namespace of its own the number names no process here.
    let held = |e: rustix::io::Errno| {
        e == rustix::io::Errno::PERM
            || e == rustix::io::Errno::NOSYS
            || (private_pid && e == rustix::io::Errno::SRCH)
    };
    let by = if private_pid {
        "a PID namespace of its own"
    } else if scoped {
        "Landlock scope"
    } else {
        "the warden and the filter, without Landlock's signal scope"
    };
    let through: Vec<String> = crate::sys::signal_routes(pid as i32, !scoped)
        .into_iter()
        .filter(|(_, r)| !matches!(r, Err(e) if held(*e)))
        .map(|(name, r)| match r {
            Ok(()) => format!("{name} succeeded"),
            Err(e) => format!("{name}: {}", errno_text(e.raw_os_error())),
        })
        .collect();
    if through.is_empty() {
        Check::pass(N, T)
    } else {
        Check::fail(
            N,
            T,
            &errno_text(libc::EPERM),
            format!("{} ({by})", through.join(", ")),
        )
    }
}

/// A host process's limits and priority cannot be changed (the warden):
/// asked to set what they already are, so that nothing changes either way.
pub(super) fn host_limits(pid: Option<u32>, private_pid: bool) -> Check {
    const N: &str = "host-limits";
    const T: &str = "a host process's limits and priority cannot be changed";
    let Some(pid) = pid else {
        return Check::skip(N, T, "no host process to try".into());
    };
    let Some(p) = rustix::process::Pid::from_raw(pid as i32) else {
        return Check::skip(N, T, "no host process to try".into());
    };
    if let Some(skip) = private_pid.then(|| taken_inside(N, T, pid)).flatten() {
        return skip;
    }
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let prlimit = rustix::process::prlimit(Some(p), rustix::process::Resource::Nofile, limit);
    // In a PID namespace of its own the host's number names nothing.
    if private_pid {
        return match prlimit {
            Err(rustix::io::Errno::SRCH) => Check::pass(N, T),
            other => Check::fail(N, T, &errno_text(libc::ESRCH), result_text(other.map(drop))),
        };
    }
    let nice = rustix::process::getpriority_process(Some(p)).unwrap_or(0);
    let renice = rustix::process::setpriority_process(Some(p), nice);
    match (prlimit, renice) {
        (Err(rustix::io::Errno::PERM), Err(rustix::io::Errno::PERM)) => Check::pass(N, T),
        (a, b) => Check::fail(
            N,
            T,
            &errno_text(libc::EPERM),
            format!(
                "prlimit: {}, setpriority: {}",
                result_text(a.map(drop)),
                result_text(b)
            ),
        ),
    }
}

/// In a PID namespace of its own, a SKIP when a process of the sandbox's
/// has the host process's number (which otherwise names nothing here).
fn taken_inside(name: &str, title: &str, pid: u32) -> Option<Check> {
    std::path::Path::new(&format!("/proc/{pid}")).exists().then(|| {
        Check::skip(
            name,
            title,
            format!("the host process's number {pid} names one of the sandbox's here"),
        )
    })
}

fn result_text(r: Result<(), rustix::io::Errno>) -> String {
    match r {
        Ok(()) => "succeeded".into(),
        Err(e) => errno_text(e.raw_os_error()),
    }
}

pub(super) fn host_proc(pid: Option<u32>) -> Check {
    const N: &str = "host-proc";
    const T: &str = "/proc/<host pid>/root and /environ unreachable";
    let Some(pid) = pid else {
        return Check::skip(N, T, "no host process to try".into());
    };
    let root = std::fs::read_link(format!("/proc/{pid}/root"));
    let environ = std::fs::File::open(format!("/proc/{pid}/environ"));
    match (root, environ) {
        (Err(_), Err(_)) => Check::pass(N, T),
        (Ok(p), _) => Check::fail(N, T, "EACCES", format!("root readable: {}", p.display())),
        (_, Ok(_)) => Check::fail(N, T, "EACCES", "environ readable".into()),
    }
}

pub(super) fn abstract_socket(name: Option<&str>, scoped: bool, closed: bool) -> Check {
    const N: &str = "abstract-socket";
    const T: &str = "a host abstract socket cannot be reached";
    let Some(name) = name else {
        return Check::skip(N, T, "no host abstract socket to try".into());
    };
    // Measured on every kernel: without Landlock's scope and with the host's
    // network, the host's abstract sockets are reachable, and this says so.
    let why = if scoped || closed {
        ""
    } else {
        " (no Landlock scope on this kernel or policy, and the network is open: --network closed keeps them out; accept with accept_degraded = [\"abstract-socket\"])"
    };
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketType};
    let result = rustix::net::socket(AddressFamily::UNIX, SocketType::STREAM, None).and_then(|s| {
        let addr = SocketAddrUnix::new_abstract_name(name.as_bytes())?;
        rustix::net::connect(&s, &addr)
    });
    match result {
        Err(_) => Check::pass(N, T),
        Ok(()) => Check::fail(N, T, "connect() refused", format!("connected{why}")),
    }
}

/// `--isolation landlock`: no Unix socket can be made (no host socket is
/// reachable), and with the network closed no socket at all.
pub(super) fn no_sockets(closed: bool) -> Check {
    use rustix::net::{AddressFamily, SocketType};
    const N: &str = "network";
    let (title, families) = if closed {
        (
            "network closed: socket(2) refused for every family",
            &[AddressFamily::UNIX, AddressFamily::INET, AddressFamily::INET6][..],
        )
    } else {
        (
            "no Unix socket can be made (the host's are out of reach)",
            &[AddressFamily::UNIX][..],
        )
    };
    for f in families {
        match rustix::net::socket(*f, SocketType::STREAM, None) {
            Err(rustix::io::Errno::PERM) => {}
            Err(e) => return Check::fail(N, title, &errno_text(libc::EPERM), errno_text(e.raw_os_error())),
            Ok(_) => {
                return Check::fail(
                    N,
                    title,
                    &errno_text(libc::EPERM),
                    format!("a {f:?} socket was made"),
                );
            }
        }
    }
    Check::pass(N, title)
}

pub(super) fn masked_socket(path: Option<&Path>) -> Check {
    const N: &str = "masked-socket";
    const T: &str = "a masked host socket refuses connections";
    let Some(path) = path else {
        return Check::skip(
            N,
            T,
            "no place outside the writable roots for a test socket".into(),
        );
    };
    match std::os::unix::net::UnixStream::connect(path) {
        Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => Check::pass(N, T),
        Err(e) => Check::fail(
            N,
            T,
            &errno_text(libc::ECONNREFUSED),
            errno_text(e.raw_os_error().unwrap_or(libc::EIO)),
        ),
        Ok(_) => Check::fail(N, T, &errno_text(libc::ECONNREFUSED), "connected".into()),
    }
}
