//! bubblewrap's command line, parsed as bubblewrap parses it: options in
//! order, filesystem operations applied in argument order to a new empty
//! root, `--args FD` splicing NUL-separated arguments, `--` ending options,
//! the first non-option starting the command. An option qwrap does not
//! support is refused by name, never ignored.

use crate::plan::OverlayUpper;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

use super::config::err;
pub use super::config::{ArgError, Config, EnvOp, FsOp, Parsed};

/// Options bubblewrap has that qwrap refuses, and why.
const REFUSED: &[(&str, &str)] = &[
    ("--exec-label", "SELinux labels are not supported"),
    ("--file-label", "SELinux labels are not supported"),
];

/// Parses bubblewrap's arguments (without argv[0]).
pub fn parse(args: Vec<OsString>) -> Result<Parsed, ArgError> {
    let mut c = Config::default();
    let mut it: std::collections::VecDeque<OsString> = args.into();
    let (mut perms, mut size): (Option<u32>, Option<u64>) = (None, None);
    let mut spliced_total = 0usize;
    // --overlay-src directories waiting for the overlay that uses them.
    let mut overlay_sources: Vec<PathBuf> = Vec::new();
    let (mut pending_overlay, mut overlay_waiting) = (false, false);
    let mut legacy_seccomp = false;
    while let Some(arg) = it.pop_front() {
        let a = arg.to_string_lossy().into_owned();
        if !a.starts_with("--") {
            it.push_front(arg);
            break;
        }
        if a == "--" {
            break;
        }
        let mut next = |what: &str| -> Result<OsString, ArgError> {
            it.pop_front().ok_or_else(|| err(format!("{a} takes {what}")))
        };
        let (pending_perms, pending_size) = (perms.take(), size.take());
        let (mut used_perms, mut used_size) = (false, false);
        match a.as_str() {
            "--help" => return Ok(Parsed::Help),
            "--version" => return Ok(Parsed::Version),
            "--args" => {
                let fd = fd_arg(&next("an fd")?)?;
                splice_args(&mut it, &mut spliced_total, fd)?
            }
            "--tmpfs" => {
                used_perms = true;
                used_size = true;
                c.ops.push(FsOp::Tmpfs {
                    dest: next("a destination")?.into(),
                    perms: pending_perms,
                    size: pending_size,
                });
            }
            "--dir" => {
                used_perms = true;
                c.ops.push(FsOp::Dir {
                    dest: next("a destination")?.into(),
                    perms: pending_perms,
                });
            }
            "--file" => {
                used_perms = true;
                let fd = fd_arg(&next("an fd and a destination")?)?;
                let dest = next("an fd and a destination")?.into();
                c.ops.push(FsOp::File {
                    fd,
                    dest,
                    perms: pending_perms,
                });
            }
            "--bind-data" | "--ro-bind-data" => {
                used_perms = true;
                let fd = fd_arg(&next("an fd and a destination")?)?;
                let dest = next("an fd and a destination")?.into();
                c.ops.push(FsOp::BindData {
                    fd,
                    dest,
                    readonly: a == "--ro-bind-data",
                    perms: pending_perms,
                });
            }
            "--overlay-src" | "--overlay" | "--tmp-overlay" | "--ro-overlay" => {
                pending_overlay = overlay_option(&mut c, &a, &mut next, &mut overlay_sources)?
            }
            // --perms and --size wait, in either order, for the option that
            // uses them; each only once.
            "--perms" => {
                if pending_perms.is_some() {
                    return Err(err("--perms given twice for the same destination"));
                }
                perms = Some(octal(&next("permissions")?, &a)?);
                size = pending_size;
                (used_perms, used_size) = (true, true);
            }
            "--size" => {
                if pending_size.is_some() {
                    return Err(err("--size given twice for the same destination"));
                }
                size = Some(size_arg(&next("a size")?)?);
                perms = pending_perms;
                (used_perms, used_size) = (true, true);
            }
            "--seccomp" | "--add-seccomp-fd" => seccomp_option(&mut c, &mut legacy_seccomp, &a, &mut next)?,
            other => {
                if !plain_option(&mut c, other, &mut next)? {
                    return Err(match REFUSED.iter().find(|(n, _)| *n == other) {
                        Some((n, why)) => err(format!("{n}: {why} (qwrap's bwrap mode)")),
                        None => err(format!("Unknown option {other}")),
                    });
                }
            }
        }
        if overlay_waiting && !a.contains("overlay") {
            return Err(err(OVERLAY_SRC_ALONE));
        }
        overlay_waiting = std::mem::take(&mut pending_overlay);
        if pending_perms.is_some() && !used_perms {
            return Err(err("--perms must be followed by an option that creates a file"));
        }
        if pending_size.is_some() && !used_size {
            return Err(err("--size must be followed by --tmpfs"));
        }
    }
    if overlay_waiting {
        return Err(err(OVERLAY_SRC_ALONE));
    }
    if perms.is_some() || size.is_some() {
        return Err(err(PERMS_OR_SIZE_ALONE));
    }
    c.command = it.into_iter().collect();
    validate(&c)?;
    Ok(Parsed::Run(Box::new(c)))
}

/// `--overlay-src` (waiting for its overlay: true) and the overlays that
/// take the sources given before them.
fn overlay_option(
    c: &mut Config,
    a: &str,
    next: &mut dyn FnMut(&str) -> Result<OsString, ArgError>,
    sources: &mut Vec<PathBuf>,
) -> Result<bool, ArgError> {
    match a {
        "--overlay-src" => {
            sources.push(next("a source")?.into());
            return Ok(true);
        }
        "--overlay" | "--tmp-overlay" | "--ro-overlay" => {
            let sources = std::mem::take(sources);
            let (upper, least) = match a {
                "--overlay" => (
                    OverlayUpper::Dirs {
                        upper: next("a directory, a work directory and a destination")?.into(),
                        work: next("a directory, a work directory and a destination")?.into(),
                    },
                    (1, "one"),
                ),
                "--tmp-overlay" => (OverlayUpper::Tmpfs, (1, "one")),
                _ => (OverlayUpper::ReadOnly, (2, "two")),
            };
            if sources.len() < least.0 {
                return Err(err(format!("{a} requires at least {} --overlay-src", least.1)));
            }
            let dest = next("a destination")?.into();
            c.ops.push(FsOp::Overlay { sources, upper, dest });
        }
        _ => {}
    }
    Ok(false)
}

/// `--perms` or `--size` last, with nothing to apply it to.
const PERMS_OR_SIZE_ALONE: &str = "--perms or --size must be followed by an option that uses it";

/// A tmpfs size: positive and at most SIZE_MAX / 2, as bubblewrap accepts.
fn size_arg(v: &OsString) -> Result<u64, ArgError> {
    v.to_str()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|&n| n > 0 && n <= i64::MAX as u64)
        .ok_or_else(|| err(format!("Invalid size: {}", v.to_string_lossy())))
}

/// bubblewrap's rules on options that need each other.
fn validate(c: &Config) -> Result<(), ArgError> {
    if c.command.is_empty() {
        return Err(err("No command specified"));
    }
    if c.hostname.is_some() && !c.unshare_uts {
        return Err(err("Specifying --hostname requires --unshare-uts"));
    }
    if c.userns_block_fd.is_some() && (c.info_fd.is_none() || !c.unshare_user) {
        return Err(err("--userns-block-fd requires --unshare-user and --info-fd"));
    }
    if c.disable_userns && !c.unshare_user {
        return Err(err("--disable-userns requires --unshare-user"));
    }
    if c.userns_fd.is_some() && c.unshare_user {
        return Err(err("--userns not compatible --unshare-user"));
    }
    if c.userns2_fd.is_some() && c.userns_fd.is_none() {
        return Err(err("--userns2 requires --userns"));
    }
    Ok(())
}

/// `--seccomp FD` and `--add-seccomp-fd FD`, as bubblewrap takes them: a
/// repeated `--seccomp` replaces the last, and the two forms never mix.
fn seccomp_option(
    c: &mut Config,
    legacy: &mut bool,
    a: &str,
    next: &mut dyn FnMut(&str) -> Result<OsString, ArgError>,
) -> Result<(), ArgError> {
    match a {
        "--seccomp" => {
            let fd = fd_arg(&next("an fd")?)?;
            if !c.seccomp_programs.is_empty() && !*legacy {
                return Err(err("--seccomp cannot be combined with --add-seccomp-fd"));
            }
            *legacy = true;
            c.seccomp_programs = vec![seccomp_program(fd)?];
        }
        "--add-seccomp-fd" => {
            let fd = fd_arg(&next("an fd")?)?;
            if *legacy {
                return Err(err("--add-seccomp-fd cannot be combined with --seccomp"));
            }
            c.seccomp_programs.push(seccomp_program(fd)?);
        }
        _ => {}
    }
    Ok(())
}

/// `--args FD`: the NUL-separated arguments read from FD go in front of the
/// rest (several, and `--args` inside them, as bubblewrap allows; its bound
/// on the total keeps nesting finite).
fn splice_args(
    it: &mut std::collections::VecDeque<OsString>,
    total: &mut usize,
    fd: i32,
) -> Result<(), ArgError> {
    let data = read_fd(fd).map_err(|e| err(format!("Can't read --args data: {e}")))?;
    let mut spliced = nul_words(&data);
    *total += spliced.len();
    if *total > MAX_ARGS {
        return Err(err(format!("Exceeded maximum number of arguments {MAX_ARGS}")));
    }
    spliced.reverse();
    for s in spliced {
        it.push_front(s);
    }
    Ok(())
}

/// An option that sets one field of the config (a namespace, an id, a
/// descriptor, a flag), `next` giving its argument; whether it was one.
fn plain_option(
    c: &mut Config,
    a: &str,
    next: &mut dyn FnMut(&str) -> Result<OsString, ArgError>,
) -> Result<bool, ArgError> {
    match a {
        "--unshare-all" => {
            c.unshare_user_try = true;
            c.unshare_pid = true;
            c.unshare_net = true;
            c.unshare_ipc = true;
            c.unshare_uts = true;
            c.unshare_cgroup_try = true;
        }
        "--share-net" => c.unshare_net = false,
        "--unshare-user" => c.unshare_user = true,
        "--unshare-user-try" => c.unshare_user_try = true,
        "--unshare-pid" => c.unshare_pid = true,
        "--unshare-net" => c.unshare_net = true,
        "--unshare-ipc" => c.unshare_ipc = true,
        "--unshare-uts" => c.unshare_uts = true,
        "--unshare-cgroup" => c.unshare_cgroup = true,
        "--unshare-cgroup-try" => c.unshare_cgroup_try = true,
        "--uid" => c.uid = Some(num(&next("a uid")?, a)?),
        "--gid" => c.gid = Some(num(&next("a gid")?, a)?),
        "--hostname" => c.hostname = Some(next("a name")?),
        "--unsetenv" => c.env.push(EnvOp::Unset(next("a name")?)),
        "--clearenv" => c.env.push(EnvOp::Clear),
        "--argv0" => c.argv0 = Some(next("a value")?),
        "--remount-ro" => c.ops.push(FsOp::RemountRo(next("a destination")?.into())),
        "--proc" => c.ops.push(FsOp::Proc(next("a destination")?.into())),
        "--dev" => c.ops.push(FsOp::Dev(next("a destination")?.into())),
        "--mqueue" => c.ops.push(FsOp::Mqueue(next("a destination")?.into())),
        "--lock-file" => c.lock_files.push(next("a destination")?.into()),
        "--disable-userns" => c.disable_userns = true,
        "--assert-userns-disabled" => c.assert_userns_disabled = true,
        "--userns" => c.userns_fd = Some(fd_arg(&next("an fd")?)?),
        "--userns2" => c.userns2_fd = Some(fd_arg(&next("an fd")?)?),
        "--pidns" => c.pidns_fd = Some(fd_arg(&next("an fd")?)?),
        "--new-session" => c.new_session = true,
        "--die-with-parent" => c.die_with_parent = true,
        "--as-pid-1" => c.as_pid_1 = true,
        "--info-fd" => c.info_fd = Some(fd_arg(&next("an fd")?)?),
        "--json-status-fd" => c.json_status_fd = Some(fd_arg(&next("an fd")?)?),
        "--sync-fd" => c.sync_fd = Some(fd_arg(&next("an fd")?)?),
        "--block-fd" => c.block_fd = Some(fd_arg(&next("an fd")?)?),
        "--userns-block-fd" => c.userns_block_fd = Some(fd_arg(&next("an fd")?)?),
        "--level-prefix" => c.level_prefix = true,
        "--chdir" => {
            if c.chdir.is_some() {
                c.warnings
                    .push("Only the last --chdir option will take effect".into());
            }
            c.chdir = Some(next("a directory")?.into());
        }
        "--setenv" => {
            let k = next("a name and a value")?;
            let v = next("a name and a value")?;
            c.env.push(EnvOp::Set(k, v));
        }
        "--bind" | "--bind-try" | "--ro-bind" | "--ro-bind-try" | "--dev-bind" | "--dev-bind-try" => {
            let src = next("a source and a destination")?.into();
            let dest = next("a source and a destination")?.into();
            c.ops.push(FsOp::Bind {
                src,
                dest,
                readonly: a.starts_with("--ro-"),
                devices: a.starts_with("--dev-"),
                optional: a.ends_with("-try"),
            });
        }
        "--bind-fd" | "--ro-bind-fd" => {
            let fd = fd_arg(&next("an fd and a destination")?)?;
            let dest = next("an fd and a destination")?.into();
            c.ops.push(FsOp::BindFd {
                fd,
                dest,
                readonly: a == "--ro-bind-fd",
            });
        }
        "--symlink" => {
            let target = next("a target and a destination")?.into();
            let link = next("a target and a destination")?.into();
            c.ops.push(FsOp::Symlink { target, link });
        }
        "--cap-add" => {
            let given = next("a capability")?.to_string_lossy().into_owned();
            let cap = given.to_uppercase();
            if cap != "ALL" && cap_number(&cap).is_none() {
                return Err(err(format!("unknown cap: {given}")));
            }
            c.cap_ops.push((true, cap));
        }
        "--chmod" => {
            let p = octal(&next("permissions and a path")?, a)?;
            let path = next("permissions and a path")?.into();
            c.ops.push(FsOp::Chmod { perms: p, path });
        }
        "--cap-drop" => {
            let cap = next("a capability")?.to_string_lossy().to_uppercase();
            let cap = if cap == "ALL" || cap.starts_with("CAP_") {
                cap
            } else {
                format!("CAP_{cap}")
            };
            if cap != "ALL" && cap_number(&cap).is_none() {
                return Err(err(format!("--cap-drop: Unknown cap: {cap}")));
            }
            c.cap_ops.push((false, cap));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Capability names in kernel order (include/uapi/linux/capability.h).
pub const CAPABILITIES: [&str; 41] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
];

/// A capability's number from its name.
pub fn cap_number(name: &str) -> Option<u32> {
    CAPABILITIES.iter().position(|c| *c == name).map(|i| i as u32)
}

fn num(v: &OsStr, opt: &str) -> Result<u32, ArgError> {
    v.to_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| err(format!("{opt}: invalid number {}", v.to_string_lossy())))
}

/// A seccomp program from the caller's fd, read (and closed) as bubblewrap
/// does while parsing.
fn seccomp_program(fd: i32) -> Result<Vec<u8>, ArgError> {
    let data = read_fd(fd).map_err(|e| err(format!("Can't read seccomp data: {e}")))?;
    // An empty or overlong program is the kernel's to refuse, as in bubblewrap.
    if data.len() % 8 != 0 {
        return Err(err("Invalid seccomp data, must be multiple of 8"));
    }
    Ok(data)
}

/// bubblewrap's wording, which callers and its tests match.
fn fd_arg(v: &OsStr) -> Result<i32, ArgError> {
    v.to_str()
        .and_then(|s| s.parse::<i32>().ok())
        .filter(|fd| *fd >= 0)
        .ok_or_else(|| err(format!("Invalid fd: {}", v.to_string_lossy())))
}

fn octal(v: &OsStr, opt: &str) -> Result<u32, ArgError> {
    v.to_str()
        .and_then(|s| u32::from_str_radix(s, 8).ok())
        .filter(|p| *p <= 0o7777)
        .ok_or_else(|| {
            err(format!(
                "{opt}: Permissions {} are not valid",
                v.to_string_lossy()
            ))
        })
}

fn read_fd(fd: i32) -> std::io::Result<Vec<u8>> {
    crate::sys::read_inherited_fd(fd)
}

const OVERLAY_SRC_ALONE: &str = "--overlay-src must be followed by another --overlay-src or one of --overlay, --tmp-overlay, or --ro-overlay";

/// bubblewrap's bound on the arguments it will parse, files included.
const MAX_ARGS: usize = 9000;

/// NUL-terminated words, empty ones included (an empty value is a value);
/// a last word without its NUL still counts.
fn nul_words(data: &[u8]) -> Vec<OsString> {
    if data.is_empty() {
        return Vec::new();
    }
    data.strip_suffix(&[0])
        .unwrap_or(data)
        .split(|&b| b == 0)
        .map(|s| OsString::from_vec(s.to_vec()))
        .collect()
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
