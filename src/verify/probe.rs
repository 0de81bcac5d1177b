//! The in-sandbox half of `qwrap verify`: qwrap re-executed inside a sandbox
//! built from the policy under test, observing from inside. It prints its
//! checks as one JSON line.

use super::attempts::{nested_remount, tiocsti};
use super::reach::{abstract_socket, host_limits, host_proc, masked_socket, signal};
use super::{Check, Outcome};
use crate::errno::errno_text;
use crate::plan::dev_entries;
use rustix::fs::{Mode, OFlags};
use std::path::{Path, PathBuf};

pub use super::attempts::{nested_remount_attempt, tiocsti_attempt};
pub use super::probe_args::ProbeArgs;

impl ProbeArgs {
    /// As arguments for `qwrap __probe`.
    pub fn to_args(&self) -> Vec<std::ffi::OsString> {
        let mut v: Vec<std::ffi::OsString> = vec![
            "--workspace".into(),
            self.workspace.clone().into(),
            "--outside".into(),
            self.outside.clone().into(),
            "--host-pidns".into(),
            self.host_pidns.clone().into(),
        ];
        if let Some(h) = &self.home {
            v.push("--home".into());
            v.push(h.clone().into());
        }
        if self.closed_network {
            v.push("--closed-network".into());
        }
        if self.host_has_nonlo {
            v.push("--host-has-nonlo".into());
        }
        if let Some(pid) = self.host_pid {
            v.push("--host-pid".into());
            v.push(pid.to_string().into());
        }
        if let Some(n) = &self.abstract_name {
            v.push("--abstract".into());
            v.push(n.into());
        }
        if let Some(m) = &self.masked_socket {
            v.push("--masked-socket".into());
            v.push(m.clone().into());
        }
        for p in &self.protected {
            v.push("--protected".into());
            v.push(p.clone().into());
        }
        for p in &self.git_dirs {
            v.push("--git-dir".into());
            v.push(p.clone().into());
        }
        for p in &self.hidden {
            v.push("--hidden".into());
            v.push(p.clone().into());
        }
        if let Some(p) = &self.absent {
            v.push("--absent".into());
            v.push(p.clone().into());
        }
        if let Some(p) = &self.canary {
            v.push("--canary".into());
            v.push(p.clone().into());
        }
        if let Some(p) = &self.replaced {
            v.push("--replaced".into());
            v.push(p.clone().into());
        }
        for p in &self.second_paths {
            v.push("--second-path".into());
            v.push(p.clone().into());
        }
        if self.scoped {
            v.push("--scoped".into());
        }
        if self.private_pid {
            v.push("--private-pid".into());
        }
        if self.home_overlaid {
            v.push("--home-overlaid".into());
        }
        for c in &self.caches {
            v.push("--cache".into());
            v.push(c.clone().into());
        }
        if let Some(t) = &self.cache_tag {
            v.push("--cache-tag".into());
            v.push(t.into());
        }
        if let Some(t) = &self.review_tag {
            v.push("--review-tag".into());
            v.push(t.into());
        }
        if let Some(t) = &self.leftover_tag {
            v.push("--leftover-tag".into());
            v.push(t.into());
        }
        if self.proxied {
            v.push("--proxied".into());
        }
        if let Some(t) = &self.proxy_target {
            v.push("--proxy-target".into());
            v.push(t.into());
        }
        if self.landlock_only {
            v.push("--landlock-only".into());
        }
        if let Some(p) = &self.write_at {
            v.push("--write-at".into());
            v.push(p.clone().into());
        }
        v
    }
}

/// Runs every in-sandbox check.
pub fn run(a: &ProbeArgs) -> Vec<Check> {
    let tag = format!(".qwrap-verify-{}", std::process::id());
    // Without a mount, Landlock refuses (EACCES) what a read-only mount
    // would (EROFS).
    let refused = if a.landlock_only {
        libc::EACCES
    } else {
        libc::EROFS
    };
    let mut checks = vec![
        workspace_write(&a.write_at.as_ref().unwrap_or(&a.workspace).join(&tag)),
        must_be_refused("outside-write", "outside write", &a.outside.join(&tag), refused),
    ];
    checks.push(match &a.home {
        Some(_) if a.home_overlaid => Check::skip(
            "home-write",
            "home write",
            "--home overlay: a write lands in the workspace's layer; cache-isolated checks that it stays off the host".into(),
        ),
        Some(h) if h.is_dir() => must_be_refused("home-write", "home write", &h.join(&tag), refused),
        Some(h) => Check::skip(
            "home-write",
            "home write",
            format!("{} does not exist", h.display()),
        ),
        None => Check::skip("home-write", "home write", "no home directory".into()),
    });
    if let Some(h) = a.home.as_deref().filter(|h| h.is_dir() && !a.home_overlaid) {
        // Without a mount the warden refuses it (EPERM); with one, the
        // read-only mount does (EROFS).
        checks.push(home_metadata(
            h,
            if a.landlock_only { libc::EPERM } else { libc::EROFS },
        ));
    }
    checks.push(pid_namespace(&a.host_pidns, a.private_pid));
    if a.landlock_only {
        checks.push(super::reach::no_sockets(a.closed_network));
        checks.push(Check::not_provided(
            "dev",
            "/dev is minimal",
            "the host's /dev (no mount namespace); writable: null zero full random urandom tty ptmx".into(),
        ));
    } else {
        checks.push(network(a.closed_network, a.host_has_nonlo));
        checks.push(dev_listing());
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = rustix::process::getuid().is_root();
    checks.push(capabilities(&status, !a.landlock_only || root));
    checks.push(no_new_privs(&status));
    checks.push(signal(a.host_pid, a.scoped, a.private_pid));
    checks.push(host_proc(a.host_pid));
    checks.push(host_limits(a.host_pid, a.private_pid));
    checks.push(abstract_socket(
        a.abstract_name.as_deref(),
        a.scoped,
        a.closed_network,
    ));
    checks.push(if a.landlock_only {
        Check::skip(
            "masked-socket",
            "a masked host socket refuses connections",
            "no socket is masked here: none can be made (the network check)".into(),
        )
    } else {
        masked_socket(a.masked_socket.as_deref())
    });
    checks.push(protected(&a.protected, &tag, refused));
    checks.push(super::git_check::check(&a.git_dirs, &tag, &a.workspace, refused));
    checks.push(hidden(&a.hidden));
    if let Some(p) = &a.canary {
        checks.push(canary(p));
    }
    if a.home.is_some() {
        checks.push(super::home_check::replaced(a.replaced.as_deref(), &a.workspace));
        checks.push(super::home_check::second_paths(&a.second_paths));
    }
    if let Some(p) = &a.absent {
        checks.push(absent(p));
    }
    if a.proxied {
        checks.extend(super::egress_checks::checks(a.proxy_target.as_deref()));
    }
    if let Some(t) = &a.review_tag {
        checks.push(super::review_check::write(&a.workspace, t));
    }
    if let Some(t) = &a.cache_tag {
        checks.push(super::cache_check::write(&a.caches, t));
    }
    checks.push(nested_remount());
    checks.push(tiocsti());
    if let Some(t) = &a.leftover_tag {
        checks.push(super::leftover_check::start(t));
    }
    checks
}

fn protected(paths: &[PathBuf], tag: &str, refused: i32) -> Check {
    const N: &str = "git-protected";
    const T: &str = "git hooks and config read-only";
    if paths.is_empty() {
        return Check::skip(N, T, "no protected git paths".into());
    }
    for p in paths {
        let result = if p.is_dir() {
            super::create(&p.join(tag))
        } else {
            rustix::fs::open(
                p,
                OFlags::WRONLY | OFlags::APPEND | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map(drop)
            .map_err(|e| e.raw_os_error())
        };
        match result {
            Err(e) if e == refused => {}
            Err(e) => {
                return Check::fail(
                    N,
                    T,
                    &format!("{}: {}", p.display(), errno_text(refused)),
                    errno_text(e),
                );
            }
            Ok(()) => {
                if p.is_dir() {
                    std::fs::remove_file(p.join(tag)).ok();
                }
                return Check::fail(N, T, &errno_text(refused), format!("{} is writable", p.display()));
            }
        }
    }
    Check::pass(N, &format!("{T} ({} paths)", paths.len()))
}

/// Every hidden path refuses to be read (or listed) with EACCES.
fn hidden(paths: &[PathBuf]) -> Check {
    const N: &str = "hidden-paths";
    const T: &str = "hidden credential stores cannot be read";
    if paths.is_empty() {
        return Check::skip(N, T, "no hidden path exists on this host".into());
    }
    for p in paths {
        match rustix::fs::open(p, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) {
            Err(e) if e == rustix::io::Errno::ACCESS => {}
            Err(e) => {
                return Check::fail(
                    N,
                    T,
                    &errno_text(libc::EACCES),
                    format!("{}: {}", p.display(), errno_text(e.raw_os_error())),
                );
            }
            // Without a mount (--isolation landlock) a hidden directory's
            // names stay listable: what is in it must not be read.
            Ok(_) if p.is_dir() => {
                if let Some(f) = readable_inside(p) {
                    return Check::fail(
                        N,
                        T,
                        &errno_text(libc::EACCES),
                        format!("{} is readable", f.display()),
                    );
                }
            }
            Ok(_) => {
                return Check::fail(
                    N,
                    T,
                    &errno_text(libc::EACCES),
                    format!("{} is readable", p.display()),
                );
            }
        }
    }
    Check::pass(N, &format!("{T} ({} paths)", paths.len()))
}

/// A file beneath `dir` that opens for reading, if any (the first 64
/// names looked at).
fn readable_inside(dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .flatten()
        .take(64)
        .map(|e| e.path())
        .find(|f| !f.is_dir() && std::fs::File::open(f).is_ok())
}

/// The listed home: a file the host made there, under a name nothing
/// lists, cannot be read (ENOENT: absent; EACCES: Landlock alone).
fn canary(p: &Path) -> Check {
    const N: &str = "home-listed";
    let title = format!("an unlisted file of the home ({}) cannot be read", p.display());
    match std::fs::read(p) {
        Err(e) => Check::pass(N, &format!("{title}: {e}")),
        Ok(_) => Check::fail(N, &title, "ENOENT or EACCES", "it was read".into()),
    }
}

/// Minimal view: a host path outside the view does not exist inside.
fn absent(p: &Path) -> Check {
    const N: &str = "minimal-view";
    let title = format!("outside the minimal view, {} does not exist", p.display());
    match std::fs::symlink_metadata(p) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Check::pass(N, &title),
        Err(e) => Check::fail(N, &title, &errno_text(libc::ENOENT), e.to_string()),
        Ok(_) => Check::fail(N, &title, &errno_text(libc::ENOENT), "it exists".into()),
    }
}

fn workspace_write(path: &Path) -> Check {
    let title = format!("workspace write ({})", path.parent().unwrap_or(path).display());
    match super::create(path) {
        Ok(()) => match std::fs::remove_file(path) {
            Ok(()) => Check::pass("workspace-write", &title),
            Err(e) => Check::fail(
                "workspace-write",
                &title,
                "create and remove a file",
                format!("remove failed: {e}"),
            ),
        },
        Err(e) => Check::fail(
            "workspace-write",
            &title,
            "create and remove a file",
            errno_text(e),
        ),
    }
}

/// The write must fail with `errno`: EROFS where a read-only mount holds
/// it (EACCES would prove nothing about the mount), EACCES where Landlock
/// alone does.
fn must_be_refused(name: &str, what: &str, path: &Path, errno: i32) -> Check {
    let title = format!("{what} ({})", path.parent().unwrap_or(path).display());
    let expected = errno_text(errno);
    match super::create(path) {
        Err(e) if e == errno => Check::pass(name, &title),
        Err(e) => Check::fail(name, &title, &expected, errno_text(e)),
        Ok(()) => {
            std::fs::remove_file(path).ok();
            Check::fail(name, &title, &expected, "the write succeeded".into())
        }
    }
}

/// A chmod of the home directory to the mode it has must be refused.
fn home_metadata(home: &Path, errno: i32) -> Check {
    const N: &str = "home-metadata";
    let title = format!("the home's mode cannot change ({})", home.display());
    let mode = match rustix::fs::stat(home) {
        Ok(st) => st.st_mode & 0o7777,
        Err(e) => return Check::skip(N, &title, format!("stat: {e}")),
    };
    match rustix::fs::chmod(home, Mode::from_raw_mode(mode)) {
        Err(e) if e.raw_os_error() == errno => Check::pass(N, &title),
        Err(e) => Check::fail(N, &title, &errno_text(errno), errno_text(e.raw_os_error())),
        Ok(()) => Check::fail(N, &title, &errno_text(errno), "chmod succeeded".into()),
    }
}

/// The PID namespace is the one the mode says: the host's, or (`--pid
/// private`) one of its own.
fn pid_namespace(host: &str, private: bool) -> Check {
    let inside = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string())
        .unwrap_or_else(|e| e.to_string());
    let (title, holds, expected) = if private {
        (
            "PID namespace of its own (--pid private)",
            inside != host,
            format!("not {host}"),
        )
    } else {
        (
            "PID namespace shared with the host",
            inside == host,
            host.to_string(),
        )
    };
    if holds {
        Check::pass("pid-namespace", title)
    } else {
        Check::fail("pid-namespace", title, &expected, inside)
    }
}

/// Interface names in /proc/net/dev, sorted.
pub fn interfaces(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .skip(2)
        .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim().to_string()))
        .collect();
    v.sort();
    v
}

fn network(closed: bool, host_has_nonlo: bool) -> Check {
    let ifs = interfaces(&std::fs::read_to_string("/proc/net/dev").unwrap_or_default());
    let got = ifs.join(", ");
    if closed {
        let title = "network closed: only lo";
        if ifs == ["lo"] {
            Check::pass("network", title)
        } else {
            Check::fail("network", title, "lo", got)
        }
    } else {
        let title = "network open: host interfaces visible";
        if !host_has_nonlo {
            Check::skip("network", title, "the host has no non-loopback interface".into())
        } else if ifs.iter().any(|i| i != "lo") {
            Check::pass("network", title)
        } else {
            Check::fail("network", title, "a non-loopback interface", got)
        }
    }
}

fn dev_listing() -> Check {
    let mut got: Vec<String> = std::fs::read_dir("/dev")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    got.sort();
    let want = dev_entries();
    if got == want {
        Check::pass("dev", "/dev is minimal")
    } else {
        Check::fail("dev", "/dev is minimal", &want.join(" "), got.join(" "))
    }
}

fn field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status.lines().find_map(|l| l.strip_prefix(key).map(str::trim))
}

/// `bounding`: the bounding set must be empty too. Without a user
/// namespace an unprivileged caller cannot cut it (CAP_SETPCAP), and needs
/// not: with no_new_privs nothing it holds can be gained.
fn capabilities(status: &str, bounding: bool) -> Check {
    let sets: &[&str] = if bounding {
        &["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"]
    } else {
        &["CapInh:", "CapPrm:", "CapEff:", "CapAmb:"]
    };
    let nonzero: Vec<String> = sets
        .iter()
        .filter(|k| field(status, k) != Some("0000000000000000"))
        .map(|k| format!("{k} {}", field(status, k).unwrap_or("missing")))
        .collect();
    let (title, expected) = if bounding {
        ("no capabilities", "all five sets zero")
    } else {
        (
            "no capabilities (the bounding set left: no user namespace, no_new_privs)",
            "the inheritable, permitted, effective and ambient sets zero",
        )
    };
    if nonzero.is_empty() {
        Check::pass("capabilities", title)
    } else {
        Check::fail("capabilities", title, expected, nonzero.join(", "))
    }
}

fn no_new_privs(status: &str) -> Check {
    match field(status, "NoNewPrivs:") {
        Some("1") => Check::pass("no-new-privs", "no_new_privs set"),
        other => Check::fail(
            "no-new-privs",
            "no_new_privs set",
            "1",
            other.unwrap_or("missing").into(),
        ),
    }
}

impl Check {
    pub(super) fn pass(name: &str, title: &str) -> Check {
        Check {
            name: name.into(),
            title: title.into(),
            outcome: Outcome::Pass,
            expected: None,
            got: None,
        }
    }
    pub(super) fn fail(name: &str, title: &str, expected: &str, got: String) -> Check {
        Check {
            name: name.into(),
            title: title.into(),
            outcome: Outcome::Fail,
            expected: Some(expected.into()),
            got: Some(got),
        }
    }
    pub(super) fn not_provided(name: &str, title: &str, why: String) -> Check {
        Check {
            name: name.into(),
            title: title.into(),
            outcome: Outcome::NotProvided,
            expected: None,
            got: Some(why),
        }
    }

    pub(super) fn skip(name: &str, title: &str, why: String) -> Check {
        Check {
            name: name.into(),
            title: title.into(),
            outcome: Outcome::Skip,
            expected: None,
            got: Some(why),
        }
    }
}

#[cfg(test)]
#[path = "probe_tests.rs"]
mod tests;
