//! The sandbox's mount layout as an ordered list of operations on the new
//! root, independent of the mount API that carries it out. Parents always come
//! before children, so every operation lands on what it should.

use super::{CacheHow, CacheMount, DevStyle, MountOp, OverlayUpper, ProcCover};
use crate::policy::view::EntryKind;
use crate::policy::{Policy, TmpMode, ViewMode};
use std::path::{Path, PathBuf};

/// The host device nodes bound into the sandbox's /dev.
pub const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// Everything in the sandbox's /dev, sorted as `ls -A` lists it.
pub fn dev_entries() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = DEVICES.to_vec();
    v.extend(["pts", "ptmx", "shm", "fd", "stdin", "stdout", "stderr"]);
    v.sort_unstable();
    v
}

/// The layout for a policy: host root, /dev, private /tmp (and /dev/shm:
/// `tmpfs_size` bytes each, the kernel's default where None), writable roots,
/// read-only paths, socket masks; then a stable sort by depth puts parents
/// first.
pub fn layout(
    policy: &Policy,
    masks: &[PathBuf],
    console: Option<&Path>,
    caches: &[CacheMount],
    home: Option<&super::caches::HomeOverlay>,
    caller_root: bool,
    tmpfs_size: Option<u64>,
) -> Vec<MountOp> {
    let minimal = policy.settings.view.value == ViewMode::Minimal;
    // The minimal view starts from an empty tmpfs (made read-only last).
    let root = if minimal {
        MountOp::Tmpfs {
            path: PathBuf::from("/"),
            mode: 0o755,
            size: None,
        }
    } else {
        MountOp::HostRoot
    };
    let mut ops = vec![
        root,
        MountOp::Dev {
            path: PathBuf::from("/dev"),
            style: DevStyle::Minimal { shm_size: tmpfs_size },
        },
    ];
    if minimal {
        minimal_view(policy, &mut ops);
    }
    let sealed = listed_home(policy, &mut ops);
    if policy.settings.pid.value == crate::policy::PidMode::Private {
        // The PID namespace's own /proc: no host process in it.
        ops.push(MountOp::Proc {
            path: PathBuf::from("/proc"),
            own: true,
            cover: if caller_root {
                ProcCover::HostWide
            } else {
                ProcCover::None
            },
        });
    }
    ops.extend(console.map(|c| MountOp::Console(c.to_path_buf())));
    ops.extend(console.and_then(terminal_name));
    if policy.settings.tmp.value == TmpMode::Private {
        private_tmp(policy, tmpfs_size, &mut ops);
    }
    // --home overlay: the home's overlay at the home itself (the caches in
    // it are part of it).
    if let Some(h) = home {
        ops.push(MountOp::Overlay {
            path: h.home.clone(),
            lower: vec![h.home.clone()],
            upper: OverlayUpper::Dirs {
                upper: h.upper.clone(),
                work: h.work.clone(),
            },
        });
    }
    ops.extend(root_ops(policy, caches, home.is_some()));
    ops.extend(policy.pinned.iter().map(|p| MountOp::Writable(p.clone())));
    git_dirs(policy, &mut ops);
    ops.extend(policy.read_only.iter().map(|r| MountOp::ReadOnly(r.path.clone())));
    // An allowed socket under the private /tmp is shown at its own path
    // (elsewhere the host's view shows it already).
    if !minimal {
        ops.extend(policy.tmp_sockets.iter().map(|p| MountOp::HostFile(p.clone())));
    }
    // Shell start-up files without their credential assignments.
    ops.extend(
        policy
            .redacted_rc
            .iter()
            .filter(|r| policy.shows(&r.path))
            .map(|r| MountOp::FileFrom {
                path: r.path.clone(),
                source: r.copy.clone(),
            }),
    );
    // The masks come from the assessment, which leaves out what the view
    // does not show.
    ops.extend(masks.iter().map(|m| MountOp::Mask(m.clone())));
    // Paths under /dev or the private /tmp are not the host's inside anyway
    // (but a writable root under /tmp is).
    ops.extend(
        policy
            .hidden
            .iter()
            .filter(|h| !policy.replaced_inside(&h.path))
            .map(|h| MountOp::Hidden {
                path: h.path.clone(),
                dir: h.dir,
            }),
    );
    ops.sort_by_key(|op| depth(op.path()));
    // Read-only once everything beneath is mounted.
    ops.extend(sealed.into_iter().map(MountOp::Seal));
    ops
}

/// The minimal view's entries, each shown read-only as the host has it,
/// and the home as an empty directory.
fn minimal_view(policy: &Policy, ops: &mut Vec<MountOp>) {
    for e in &policy.view_entries {
        ops.push(match &e.kind {
            EntryKind::Dir => MountOp::HostReadOnly(e.path.clone()),
            EntryKind::File => MountOp::HostFile(e.path.clone()),
            EntryKind::Link(t) => MountOp::Link {
                path: e.path.clone(),
                target: t.clone(),
            },
        });
    }
    if let Some(h) = &policy.home {
        ops.push(MountOp::Dir {
            path: h.clone(),
            mode: 0o755,
        });
    }
}

/// The private /tmp.
fn private_tmp(policy: &Policy, tmpfs_size: Option<u64>, ops: &mut Vec<MountOp>) {
    let tmp = Path::new("/tmp");
    ops.push(MountOp::Tmpfs {
        path: tmp.to_path_buf(),
        mode: 0o1777,
        size: tmpfs_size,
    });
    // A root deeper under /tmp would otherwise sit in throwaway tmpfs
    // directories: a write beside it would succeed and vanish, and a
    // checkout's top above it would be missing. Its top directory
    // under /tmp is shown read-only from the host instead.
    for r in &policy.writable_roots {
        if let Ok(rel) = r.path.strip_prefix(tmp)
            && rel.components().count() >= 2
            && let Some(first) = rel.components().next()
        {
            let top = MountOp::HostReadOnly(tmp.join(first));
            if !ops.contains(&top) {
                ops.push(top);
            }
        }
    }
}

/// Each writable root as it is mounted: bound, a cache's overlay or
/// layer, a private tmpfs; a cache in the overlaid whole home is part of it.
fn root_ops<'a>(
    policy: &'a Policy,
    caches: &'a [CacheMount],
    whole_home: bool,
) -> impl Iterator<Item = MountOp> + 'a {
    let in_whole_home = move |how: Option<&CacheHow>| whole_home && matches!(how, Some(CacheHow::InHome(_)));
    policy.writable_roots.iter().filter_map(move |r| {
        let how = caches.iter().find(|c| c.path == r.path).map(|c| &c.how);
        if in_whole_home(how) {
            return None;
        }
        Some(match how {
            Some(CacheHow::Overlay { upper, work }) => MountOp::Overlay {
                path: r.path.clone(),
                lower: vec![r.path.clone()],
                upper: OverlayUpper::Dirs {
                    upper: upper.clone(),
                    work: work.clone(),
                },
            },
            Some(CacheHow::InHome(layer)) => MountOp::InHomeLayer {
                path: r.path.clone(),
                layer: layer.clone(),
            },
            Some(CacheHow::Bare { upper }) => MountOp::Layer {
                path: r.path.clone(),
                upper: upper.clone(),
            },
            Some(CacheHow::Private { .. }) => MountOp::Tmpfs {
                path: r.path.clone(),
                mode: 0o700,
                size: None,
            },
            Some(CacheHow::Shared) | None => MountOp::Writable(r.path.clone()),
        })
    })
}

/// The listed home: an empty tmpfs at the home (and at `/home`, which then
/// holds only the home and the roots' tops), with its entries shown
/// read-only; returns the tmpfs to seal once the rest is mounted.
fn listed_home(policy: &Policy, ops: &mut Vec<MountOp>) -> Vec<PathBuf> {
    let Some(l) = &policy.home_listing else {
        return Vec::new();
    };
    let mut sealed = Vec::new();
    if let Some(homes) = &l.homes {
        ops.push(MountOp::Tmpfs {
            path: homes.clone(),
            mode: 0o755,
            size: None,
        });
        ops.extend(
            l.tops
                .iter()
                .filter(|t| !policy.writable_roots.iter().any(|r| r.path == **t))
                .map(|t| MountOp::HostReadOnly(t.clone())),
        );
        sealed.push(homes.clone());
    }
    ops.push(MountOp::Tmpfs {
        path: l.home.clone(),
        mode: l.mode,
        size: None,
    });
    // A redacted start-up file is its copy (below), not the host's.
    let redacted = |p: &Path| policy.redacted_rc.iter().any(|r| r.path == p);
    ops.extend(
        l.entries
            .iter()
            .filter(|e| !redacted(&e.path))
            .map(|e| match &e.kind {
                EntryKind::Dir => MountOp::HostReadOnly(e.path.clone()),
                EntryKind::File => MountOp::HostFile(e.path.clone()),
                EntryKind::Link(t) => MountOp::Link {
                    path: e.path.clone(),
                    target: t.clone(),
                },
            }),
    );
    sealed.insert(0, l.home.clone());
    sealed
}

fn depth(p: &Path) -> usize {
    p.components().count()
}

/// The caller's terminal at its own name, when it is a pty of the host's
/// /dev/pts (a console or serial line keeps only /dev/console).
fn terminal_name(tty: &Path) -> Option<MountOp> {
    let index = tty.strip_prefix("/dev/pts").ok()?.to_str()?.parse().ok()?;
    Some(MountOp::TerminalName {
        path: tty.to_path_buf(),
        tty: tty.to_path_buf(),
        index,
    })
}

/// Each git dir's top level and objects are tmpfs of the sandbox's own,
/// the host's objects (and lfs objects) seen read-only beside them:
/// a bind of the git dir itself gives way to them.
fn git_dirs(policy: &Policy, ops: &mut Vec<MountOp>) {
    for g in &policy.git_layouts {
        ops.retain(|o| !matches!(o, MountOp::Writable(p) if *p == g.dir));
        for own in g.own() {
            ops.push(MountOp::Tmpfs {
                path: own,
                mode: 0o755,
                size: None,
            });
        }
        // git-lfs's store stays the sandbox's own (a tmpfs level); the
        // host's objects are seen read-only where git-lfs looks beside an
        // alternate (`qwrap-host/objects` → `qwrap-host/lfs/objects`).
        ops.extend(
            g.shared
                .iter()
                .filter(|s| s.join("objects").is_dir())
                .map(|s| MountOp::Bind {
                    path: g.dir.join("qwrap-host/lfs/objects"),
                    source: s.join("objects"),
                    readonly: true,
                    devices: false,
                    dir: true,
                }),
        );
        ops.extend(g.host_objects().map(|(path, source)| MountOp::Bind {
            path,
            source,
            readonly: true,
            devices: false,
            dir: true,
        }));
    }
}
