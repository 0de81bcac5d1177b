//! bwrap mode's filesystem options as the shared mount operations
//! (`plan::MountOp`), in argument order; plan::lower lowers them on
//! either mount API. The only filesystem I/O here: whether a `-try`
//! source exists, whether a source is a directory (what its mount point
//! must be), and the paths `--bind-fd` names.

use super::args::{Config, FsOp};
use super::{Context, LowerError};
use crate::plan::{DevStyle, MountOp, OverlayUpper, ProcCover};
use std::path::{Path, PathBuf};

/// The operations, and the destinations left writable (for the Landlock
/// layer). `own_proc`: a new PID namespace, so `--proc` mounts its own.
pub(super) fn mount_ops(
    c: &Config,
    ctx: &Context,
    own_proc: bool,
) -> Result<(Vec<MountOp>, Vec<PathBuf>), LowerError> {
    // Host paths, as the caller named them (relative to the working
    // directory, where there is one).
    let host = |p: &Path| match &ctx.cwd {
        Some(cwd) if p.is_relative() => cwd.join(p),
        _ => p.to_path_buf(),
    };
    let mut ops = Vec::with_capacity(c.ops.len());
    let mut writable = Vec::new();
    for op in resolve_fd_binds(&c.ops)? {
        ops.push(match op {
            FsOp::Bind {
                src,
                dest,
                readonly,
                devices,
                optional,
            } => {
                let Ok(meta) = std::fs::metadata(&src).or_else(|_| std::fs::symlink_metadata(&src)) else {
                    if optional {
                        continue;
                    }
                    return Err(LowerError::MissingSource(src));
                };
                if !readonly {
                    writable.push(absolute(&dest));
                }
                MountOp::Bind {
                    path: absolute(&dest),
                    source: host(&src),
                    readonly,
                    devices,
                    dir: meta.is_dir(),
                }
            }
            // Turned into binds of their paths by resolve_fd_binds.
            FsOp::BindFd { .. } => continue,
            FsOp::RemountRo(dest) => MountOp::RemountReadOnly(absolute(&dest)),
            FsOp::Proc(dest) => MountOp::Proc {
                path: absolute(&dest),
                own: own_proc,
                cover: ProcCover::Bubblewrap,
            },
            FsOp::Dev(dest) => {
                writable.push(absolute(&dest));
                MountOp::Dev {
                    path: absolute(&dest),
                    style: DevStyle::Bubblewrap {
                        console: ctx.console.clone(),
                    },
                }
            }
            FsOp::Tmpfs { dest, perms, size } => {
                writable.push(absolute(&dest));
                MountOp::Tmpfs {
                    path: absolute(&dest),
                    mode: perms.unwrap_or(0o755),
                    size,
                }
            }
            FsOp::Mqueue(dest) => MountOp::Mqueue(absolute(&dest)),
            FsOp::Dir { dest, perms } => MountOp::Dir {
                path: absolute(&dest),
                mode: perms.unwrap_or(0o755),
            },
            FsOp::Symlink { target, link } => MountOp::Link {
                path: absolute(&link),
                target,
            },
            FsOp::File { fd, dest, perms } => MountOp::File {
                path: absolute(&dest),
                fd,
                mode: perms.unwrap_or(0o666),
            },
            FsOp::BindData {
                fd,
                dest,
                readonly,
                perms,
            } => MountOp::BindData {
                path: absolute(&dest),
                fd,
                readonly,
                mode: perms.unwrap_or(0o600),
            },
            FsOp::Chmod { perms, path } => MountOp::Chmod {
                path: absolute(&path),
                mode: perms,
            },
            FsOp::Overlay { sources, upper, dest } => {
                if upper != OverlayUpper::ReadOnly {
                    writable.push(absolute(&dest));
                }
                MountOp::Overlay {
                    path: absolute(&dest),
                    lower: sources.iter().map(|p| host(p)).collect(),
                    upper: match upper {
                        OverlayUpper::Dirs { upper, work } => OverlayUpper::Dirs {
                            upper: host(&upper),
                            work: host(&work),
                        },
                        other => other,
                    },
                }
            }
        });
    }
    Ok((ops, writable))
}

/// `--bind-fd`/`--ro-bind-fd` as the binds of the paths their fds name: the
/// fd's mount lives in the caller's mount namespace, which a clone made
/// inside the sandbox's cannot reach, but its path can.
fn resolve_fd_binds(ops: &[FsOp]) -> Result<Vec<FsOp>, LowerError> {
    ops.iter()
        .map(|op| match op {
            FsOp::BindFd { fd, dest, readonly } => {
                let src = std::fs::read_link(format!("/proc/self/fd/{fd}"))
                    .ok()
                    .filter(|p| p.is_absolute())
                    .ok_or(LowerError::UnresolvableFd(*fd))?;
                Ok(FsOp::Bind {
                    src,
                    dest: dest.clone(),
                    readonly: *readonly,
                    devices: false,
                    optional: false,
                })
            }
            other => Ok(other.clone()),
        })
        .collect()
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new("/").join(p)
    }
}
