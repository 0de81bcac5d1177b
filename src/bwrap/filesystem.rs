//! bwrap mode's new root: every host source cloned before anything is
//! mounted, then a staging tmpfs with the root in it, then each filesystem
//! option in argument order, then the switch into the root.

use super::args::{Config, FsOp};
use super::{Context, NEW_ROOT, PROC_READ_ONLY, STAGING};
use crate::plan::{DEVICES, Flags, Namespaces, OverlayUpper, Role, Step, under};
use std::path::{Path, PathBuf};

/// The steps, and the destinations left writable (for the Landlock layer).
pub(super) fn steps(
    c: &Config,
    ctx: &Context,
    ns: Namespaces,
    ops: &[FsOp],
) -> Result<(Vec<Step>, Vec<PathBuf>), String> {
    let mut s: Vec<Step> = Vec::new();
    // Every host source is cloned before anything is mounted.
    let mut trees = 0usize;
    let clone = |s: &mut Vec<Step>, trees: &mut usize, role: Role, source: &Path, recursive: bool| {
        let tree = *trees;
        *trees += 1;
        s.push(Step::CloneTree {
            tree,
            role,
            source: source.to_path_buf(),
            recursive,
        });
        tree
    };
    let mut op_trees: Vec<Vec<usize>> = Vec::with_capacity(c.ops.len());
    let mut skip: Vec<bool> = Vec::with_capacity(c.ops.len());
    for op in ops {
        let mut t = Vec::new();
        let mut skipped = false;
        match op {
            FsOp::Bind {
                src,
                readonly,
                devices,
                optional,
                ..
            } => {
                if std::fs::symlink_metadata(src).is_err() {
                    if *optional {
                        skipped = true;
                    } else {
                        return Err(format!(
                            "Can't find source path {}: No such file or directory",
                            src.display()
                        ));
                    }
                } else {
                    let tree = clone(&mut s, &mut trees, Role::WritableRoot, src, true);
                    s.push(Step::SetTreeAttr {
                        tree,
                        set: Flags {
                            rdonly: *readonly,
                            nosuid: true,
                            nodev: !*devices,
                            noexec: false,
                        },
                        private: true,
                    });
                    t.push(tree);
                }
            }
            FsOp::Dev(_) => {
                for d in DEVICES {
                    t.push(clone(
                        &mut s,
                        &mut trees,
                        Role::Device,
                        &Path::new("/dev").join(d),
                        false,
                    ));
                }
                if let Some(console) = &ctx.console {
                    t.push(clone(&mut s, &mut trees, Role::Device, console, false));
                }
            }
            FsOp::Overlay { sources, upper, .. } => {
                // Host paths, resolved as the caller named them.
                let host = |p: &Path| match &ctx.cwd {
                    Some(cwd) if p.is_relative() => cwd.join(p),
                    _ => p.to_path_buf(),
                };
                let upper = match upper {
                    OverlayUpper::Dirs { upper, work } => OverlayUpper::Dirs {
                        upper: host(upper),
                        work: host(work),
                    },
                    other => other.clone(),
                };
                s.push(Step::MakeOverlay {
                    tree: trees,
                    lower: sources.iter().map(|p| host(p)).collect(),
                    upper,
                    userxattr: ns.user || c.userns_fd.is_some(),
                });
                t.push(trees);
                trees += 1;
            }
            FsOp::Proc(_) if !ns.pid => t.push(clone(
                &mut s,
                &mut trees,
                Role::HostRoot,
                Path::new("/proc"),
                true,
            )),
            _ => {}
        }
        op_trees.push(t);
        skip.push(skipped);
    }

    let staging = PathBuf::from(STAGING);
    s.push(Step::MountTmpfs {
        target: staging.clone(),
        flags: Flags::NOSUID_NODEV,
        mode: 0o755,
        size: None,
    });
    let new_root = PathBuf::from(NEW_ROOT);
    s.push(Step::MakeMountPoint {
        path: new_root.clone(),
        dir: true,
        mode: 0o755,
        if_missing: false,
    });
    s.push(Step::BindMount {
        role: Role::HostRoot,
        source: new_root.clone(),
        target: new_root.clone(),
        recursive: false,
    });
    let mut data_files = 0usize;
    let mut writable: Vec<PathBuf> = Vec::new();
    for ((op, t), skipped) in ops.iter().zip(&op_trees).zip(&skip) {
        if *skipped {
            continue;
        }
        let at = |p: &Path| under(&new_root, &absolute(p));
        match op {
            FsOp::Bind {
                src, dest, readonly, ..
            } => {
                let target = at(dest);
                if target != new_root {
                    // bubblewrap's modes: a file made to mount on is 0444.
                    let dir = src.is_dir();
                    s.push(Step::MakeMountPoint {
                        path: target.clone(),
                        dir,
                        mode: if dir { 0o755 } else { 0o444 },
                        if_missing: true,
                    });
                }
                s.push(Step::AttachTree {
                    tree: t[0],
                    role: Role::Bind,
                    target,
                });
                if !*readonly {
                    writable.push(absolute(dest));
                }
            }
            // Turned into binds of their paths by resolve_fd_binds.
            FsOp::BindFd { .. } => {}
            FsOp::RemountRo(dest) => s.push(Step::SetPathAttr {
                target: at(dest),
                recursive: false,
                set: Flags {
                    rdonly: true,
                    ..Flags::NONE
                },
                private: false,
            }),
            FsOp::Proc(dest) => {
                let target = at(dest);
                ensure_dir(&mut s, target.clone());
                if ns.pid {
                    s.push(Step::MountProc {
                        target: target.clone(),
                    });
                } else {
                    s.push(Step::AttachTree {
                        tree: t[0],
                        role: Role::HostRoot,
                        target: target.clone(),
                    });
                }
                for sub in PROC_READ_ONLY {
                    s.push(Step::ReadOnlyInPlace {
                        path: target.join(sub),
                    });
                }
            }
            FsOp::Dev(dest) => {
                dev(&mut s, &at(dest), t, ctx.console.is_some());
                writable.push(absolute(dest));
            }
            FsOp::Tmpfs { dest, perms, size } => {
                let target = at(dest);
                ensure_dir(&mut s, target.clone());
                s.push(Step::MountTmpfs {
                    target,
                    flags: Flags::NOSUID_NODEV,
                    mode: perms.unwrap_or(0o755),
                    size: *size,
                });
                writable.push(absolute(dest));
            }
            FsOp::Mqueue(dest) => {
                let target = at(dest);
                ensure_dir(&mut s, target.clone());
                s.push(Step::MountMqueue { target });
            }
            FsOp::Dir { dest, perms } => s.push(Step::MakeMountPoint {
                path: at(dest),
                dir: true,
                mode: perms.unwrap_or(0o755),
                if_missing: true,
            }),
            FsOp::Symlink { target, link } => {
                let link = at(link);
                if let Some(parent) = link.parent() {
                    ensure_dir(&mut s, parent.to_path_buf());
                }
                s.push(Step::Symlink {
                    target: target.clone(),
                    link,
                });
            }
            FsOp::File { fd, dest, perms } => {
                let path = at(dest);
                if let Some(parent) = path.parent() {
                    ensure_dir(&mut s, parent.to_path_buf());
                }
                s.push(Step::CopyFdToFile {
                    fd: *fd,
                    path,
                    mode: perms.unwrap_or(0o666),
                });
            }
            FsOp::BindData {
                fd,
                dest,
                readonly,
                perms,
            } => {
                let data = staging.join(format!(".bind-data-{data_files}"));
                data_files += 1;
                s.push(Step::CopyFdToFile {
                    fd: *fd,
                    path: data.clone(),
                    mode: perms.unwrap_or(0o600),
                });
                let target = at(dest);
                s.push(Step::MakeMountPoint {
                    path: target.clone(),
                    dir: false,
                    mode: 0o444,
                    if_missing: true,
                });
                s.push(Step::BindMount {
                    role: Role::WritableRoot,
                    source: data,
                    target: target.clone(),
                    recursive: false,
                });
                if *readonly {
                    s.push(Step::Remount {
                        target,
                        flags: Flags {
                            rdonly: true,
                            nosuid: true,
                            nodev: true,
                            noexec: false,
                        },
                    });
                }
            }
            FsOp::Overlay { upper, dest, .. } => {
                let target = at(dest);
                ensure_dir(&mut s, target.clone());
                s.push(Step::AttachTree {
                    tree: t[0],
                    role: Role::Bind,
                    target,
                });
                if *upper != OverlayUpper::ReadOnly {
                    writable.push(absolute(dest));
                }
            }
            FsOp::Chmod { perms, path } => s.push(Step::Chmod {
                path: at(path),
                mode: *perms,
            }),
        }
    }
    s.push(Step::EnterRoot { new_root });
    Ok((s, writable))
}

/// `--bind-fd`/`--ro-bind-fd` as the binds of the paths their fds name: the
/// fd's mount lives in the caller's mount namespace, which a clone made
/// inside the sandbox's cannot reach, but its path can.
pub(super) fn resolve_fd_binds(ops: &[FsOp]) -> Result<Vec<FsOp>, String> {
    ops.iter()
        .map(|op| match op {
            FsOp::BindFd { fd, dest, readonly } => {
                let src = std::fs::read_link(format!("/proc/self/fd/{fd}"))
                    .ok()
                    .filter(|p| p.is_absolute())
                    .ok_or_else(|| format!("Can't resolve fd {fd}: not an open file or directory"))?;
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

/// A directory (and its parents) made when missing.
fn ensure_dir(s: &mut Vec<Step>, path: PathBuf) {
    s.push(Step::MakeMountPoint {
        path,
        dir: true,
        mode: 0o755,
        if_missing: true,
    });
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new("/").join(p)
    }
}

/// bubblewrap's /dev: a tmpfs with the host's null zero full random urandom
/// tty bound over empty files, the /proc/self/fd links and `core`, an `shm`
/// directory, a new devpts with `ptmx`, and the caller's terminal as
/// `console` when stdout is one.
fn dev(s: &mut Vec<Step>, dev: &Path, trees: &[usize], console: bool) {
    ensure_dir(s, dev.to_path_buf());
    s.push(Step::MountTmpfs {
        target: dev.to_path_buf(),
        flags: Flags::NOSUID_NODEV,
        mode: 0o755,
        size: None,
    });
    for (i, name) in DEVICES.iter().enumerate() {
        let path = dev.join(name);
        s.push(Step::MakeMountPoint {
            path: path.clone(),
            dir: false,
            mode: 0o444,
            if_missing: false,
        });
        s.push(Step::AttachTree {
            tree: trees[i],
            role: Role::Device,
            target: path,
        });
    }
    for (link, target) in [
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("fd", "/proc/self/fd"),
        ("core", "/proc/kcore"),
    ] {
        s.push(Step::Symlink {
            target: target.into(),
            link: dev.join(link),
        });
    }
    for dir in ["shm", "pts"] {
        s.push(Step::MakeMountPoint {
            path: dev.join(dir),
            dir: true,
            mode: 0o755,
            if_missing: false,
        });
    }
    s.push(Step::MountDevpts {
        target: dev.join("pts"),
    });
    s.push(Step::Symlink {
        target: "pts/ptmx".into(),
        link: dev.join("ptmx"),
    });
    if console {
        s.push(Step::MakeMountPoint {
            path: dev.join("console"),
            dir: false,
            mode: 0o444,
            if_missing: false,
        });
        s.push(Step::AttachTree {
            tree: trees[DEVICES.len()],
            role: Role::Device,
            target: dev.join("console"),
        });
    }
}
