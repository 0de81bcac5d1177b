//! `qwrap review apply`: a layer's changes written to the host's trees.
//!
//! - Every path is reached from a descriptor of the tree's top, one
//!   directory at a time with O_NOFOLLOW, on both sides: a link the command
//!   made is copied as a link, never followed; a host directory that became
//!   a link is met as one.
//! - A file is written whole into a new temporary name beside its place
//!   (O_CREAT|O_EXCL), given its mode (without setuid and setgid) and
//!   modification time, and renamed over the old one.
//! - Nothing is written while the host changed any path the layer
//!   touches since the run started: its ctime (which no program can set
//!   back) is at or after the start recorded by the run, taken from the
//!   same clock (the lock file's ctime). That costs nothing at start-up,
//!   whatever the workspace's size. A file copied up from the host that
//!   the host removed since counts as changed. Each path is checked again
//!   just before it is written.
//! - Directories are made writable by their owner while they are filled,
//!   and given their mode last.

use super::changes::{Change, HostKind, Kind, dir_flags, file_flags, host_at, names, open_below};
use super::conflicts::{conflict, conflicts};
use super::{Layer, Said, shown};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::path::Path;

/// `qwrap review apply`.
pub fn apply(layer: &Layer, yes: bool, confirm: &mut dyn FnMut(&str) -> bool) -> Said {
    let refused = super::refused;
    let changes = match super::changes::of_layer(layer) {
        Ok(c) => c,
        Err(e) => return refused(format!("qwrap: review: layer {}: {e}", layer.id)),
    };
    let ws = layer.info.workspace.display();
    let Some(started) = layer.info.started else {
        return refused(format!(
            "qwrap: review: layer {} records no start: not applied",
            layer.id
        ));
    };
    if !layer.intact() {
        return refused(format!(
            "qwrap: review: layer {} was not written out before the host restarted (its run did not end cleanly): its files may be torn; `qwrap review diff {}` shows what is there, copy what you need by hand, then discard it",
            layer.id, layer.id
        ));
    }
    if let Err(said) = may_apply(layer, &changes, yes, confirm) {
        return said;
    }
    // New objects first, through host git's receiving path, so that the
    // refs written after find them.
    if let Err(why) = super::git_objects::import(layer, &changes) {
        return refused(format!("qwrap: review: layer {} not applied: {why}", layer.id));
    }
    let mut done = 0usize;
    let mut modes: Vec<(usize, std::path::PathBuf, u32)> = Vec::new();
    let mut skipped = Vec::new();
    for c in &changes {
        if let Some(why) = super::git_vetting::left_out(c) {
            skipped.push(format!("{} ({why})", super::show::line(layer, c)));
            continue;
        }
        let result = apply_one(layer, c, started, &mut modes);
        match result {
            Ok(true) => done += 1,
            Ok(false) => skipped.push(super::show::line(layer, c)),
            Err(why) => {
                return Said {
                    stderr: vec![
                        format!(
                            "qwrap: review: layer {} stopped at {}: {why}",
                            layer.id,
                            shown(layer, c.tree, &c.rel)
                        ),
                        format!(
                            "qwrap: review: {done} of {} changes were applied; the layer is kept",
                            changes.len()
                        ),
                    ],
                    code: 1,
                    ..Said::default()
                };
            }
        }
    }
    // Directories' modes last, the deepest first: a read-only one could
    // not have been filled.
    modes.sort_by_key(|m| std::cmp::Reverse(m.1.components().count()));
    for (tree, rel, mode) in modes {
        if let Some(root) = layer.info.trees.get(tree)
            && let Ok(r) = rustix::fs::open(root, dir_flags(), Mode::empty())
            && let Some(d) = open_below(r.as_fd(), &rel)
        {
            let _ = rustix::fs::fchmod(&d, Mode::from_raw_mode(mode & 0o1777));
        }
    }
    let mut stdout = format!(
        "applied {done} change{} of layer {} to {ws}\n",
        if done == 1 { "" } else { "s" },
        layer.id
    );
    for s in &skipped {
        stdout.push_str(&format!("  not applied: {s}\n"));
    }
    match super::remove_layer(&layer.dir) {
        Ok(()) => stdout.push_str(&format!("removed layer {}\n", layer.id)),
        Err(e) => stdout.push_str(&format!("layer {} could not be removed: {e}\n", layer.id)),
    }
    Said {
        stdout,
        ..Said::default()
    }
}

/// What must hold before anything is written: no host change since the
/// start under the layer's changes, nothing git would refuse from a
/// remote, and consent to the files that choose code a host tool runs.
fn may_apply(
    layer: &Layer,
    changes: &[Change],
    yes: bool,
    confirm: &mut dyn FnMut(&str) -> bool,
) -> Result<(), Said> {
    let refused = super::refused;
    let conflicts = conflicts(layer, changes);
    if !conflicts.is_empty() {
        let mut lines = vec![format!(
            "qwrap: review: layer {} not applied: the host changed what it changes since the run started:",
            layer.id
        )];
        lines.extend(conflicts.iter().map(|c| format!("  {c}")));
        lines.push("hint: `qwrap review diff` shows both sides; bring the host's change into the layer's or discard it".into());
        return Err(Said {
            stderr: lines,
            code: 1,
            ..Said::default()
        });
    }
    let refused_by_git = super::git_vetting::refused(layer, changes);
    if !refused_by_git.is_empty() {
        let mut lines = vec![format!(
            "qwrap: review: layer {} not applied: it holds git files git would refuse from a remote, or links that lead host git out of the workspace:",
            layer.id
        )];
        lines.extend(refused_by_git.iter().map(|c| format!("  {c}")));
        lines.push("hint: the command forged what host git trusts; `qwrap review discard` it".into());
        return Err(Said {
            stderr: lines,
            code: 1,
            ..Said::default()
        });
    }
    let flags = super::flags::flagged(layer, changes);
    if !flags.is_empty() && !yes {
        let mut text = format!(
            "Layer {} changes files that choose code a host tool runs later:\n",
            layer.id
        );
        for f in &flags {
            text.push_str(&format!("  {}  ({})\n", f.path, f.why));
        }
        if !confirm(&text) {
            return Err(refused(format!("qwrap: review: layer {} not applied", layer.id)));
        }
    }
    Ok(())
}

/// Writes one change; Ok(false) where it is not applied (a socket, a
/// device node).
fn apply_one(
    layer: &Layer,
    c: &Change,
    started: (i64, i64),
    modes: &mut Vec<(usize, std::path::PathBuf, u32)>,
) -> Result<bool, String> {
    if let Kind::Unsupported(_) = c.kind {
        return Ok(false);
    }
    // git's objects: imported above, or left to host git.
    if super::git_objects::classify(c).is_some() {
        return Ok(true);
    }
    let io = |e: Errno| e.to_string();
    let tree = layer.info.trees.get(c.tree).ok_or("no such tree")?;
    let root = rustix::fs::open(tree, dir_flags(), Mode::empty()).map_err(io)?;
    let parent_rel = c.rel.parent().unwrap_or(Path::new(""));
    let name = c.rel.file_name().ok_or("no name")?;
    let host = open_below(root.as_fd(), parent_rel)
        .ok_or("its directory is missing on the host, or a link there")?;
    let now = host_at(Some(host.as_fd()), name);
    if let Some(why) = conflict(layer, root.as_fd(), c, now, started) {
        return Err(why);
    }
    let upper_root = rustix::fs::open(layer.upper(c.tree), dir_flags(), Mode::empty()).map_err(io)?;
    let up = || {
        open_below(upper_root.as_fd(), parent_rel)
            .ok_or_else(|| "its directory in the layer is gone".to_string())
    };
    let tmp = format!(".qwrap-apply-{}", std::process::id());
    let tmp = OsStr::new(&tmp);
    // Something new in place of what is there: made beside it, renamed over.
    let replace = |host: &OwnedFd| -> Result<(), String> {
        if now.kind == HostKind::Dir {
            remove_at(host.as_fd(), name).map_err(io)?;
        }
        rustix::fs::renameat(host, tmp, host, name).map_err(|e| {
            let _ = rustix::fs::unlinkat(host, tmp, AtFlags::empty());
            e.to_string()
        })
    };
    match &c.kind {
        Kind::Deleted => {
            if now.kind != HostKind::Missing {
                remove_at(host.as_fd(), name).map_err(io)?;
            }
        }
        Kind::File { mode, .. } => {
            let src = rustix::fs::openat(up()?, name, file_flags(), Mode::empty()).map_err(io)?;
            let st = rustix::fs::fstat(&src).map_err(io)?;
            if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                return Err("no longer a regular file in the layer".into());
            }
            let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let dst = rustix::fs::openat(&host, tmp, flags, Mode::from_raw_mode(0o600)).map_err(io)?;
            // A git file host git trusts: its vetted bytes (an index
            // rewritten without what hides changes), else a copy.
            let bytes = match super::git_vetting::vetted_bytes(layer, c) {
                Some(Err(why)) => {
                    let _ = rustix::fs::unlinkat(&host, tmp, AtFlags::empty());
                    return Err(format!("git would refuse it: {why}"));
                }
                Some(Ok(b)) => {
                    if let Err(why) = super::git_vetting::index_objects_there(layer, c, &b) {
                        let _ = rustix::fs::unlinkat(&host, tmp, AtFlags::empty());
                        return Err(format!("git would refuse it: {why}"));
                    }
                    Some(b)
                }
                None => None,
            };
            let copied = match &bytes {
                Some(b) => copy_range_from(b, dst.as_fd()),
                None => copy(src.as_fd(), dst.as_fd()),
            }
            .and_then(|()| rustix::fs::fchmod(&dst, Mode::from_raw_mode(mode & 0o1777)))
            .and_then(|()| {
                let times = rustix::fs::Timestamps {
                    last_access: rustix::fs::Timespec {
                        tv_sec: st.st_atime,
                        tv_nsec: st.st_atime_nsec as _,
                    },
                    last_modification: rustix::fs::Timespec {
                        tv_sec: st.st_mtime,
                        tv_nsec: st.st_mtime_nsec as _,
                    },
                };
                rustix::fs::futimens(&dst, &times)
            });
            if let Err(e) = copied {
                let _ = rustix::fs::unlinkat(&host, tmp, AtFlags::empty());
                return Err(e.to_string());
            }
            replace(&host)?;
        }
        Kind::Symlink { target } => {
            rustix::fs::symlinkat(target.as_os_str(), &host, tmp).map_err(io)?;
            replace(&host)?;
        }
        Kind::Fifo { mode } => {
            rustix::fs::mknodat(&host, tmp, FileType::Fifo, Mode::from_raw_mode(mode & 0o777), 0)
                .map_err(io)?;
            replace(&host)?;
        }
        Kind::Dir { mode, .. } => {
            if now.kind != HostKind::Dir {
                if now.kind != HostKind::Missing {
                    remove_at(host.as_fd(), name).map_err(io)?;
                }
                rustix::fs::mkdirat(&host, name, Mode::from_raw_mode(0o700)).map_err(io)?;
            }
            modes.push((c.tree, c.rel.clone(), *mode));
        }
        Kind::Unsupported(_) => return Ok(false),
    }
    Ok(true)
}

/// Copies a file's bytes, its holes kept holes (a sparse file the
/// command made is not written out whole).
fn copy(src: BorrowedFd<'_>, dst: BorrowedFd<'_>) -> Result<(), Errno> {
    use rustix::fs::SeekFrom;
    let size = rustix::fs::fstat(src)?.st_size as u64;
    let mut buf = vec![0u8; 256 << 10];
    let mut pos = 0u64;
    while pos < size {
        let data = match rustix::fs::seek(src, SeekFrom::Data(pos)) {
            Ok(d) => d,
            Err(Errno::NXIO) => break,                   // a hole to the end
            Err(Errno::INVAL | Errno::OPNOTSUPP) => pos, // no hole support: all data
            Err(e) => return Err(e),
        };
        let end = rustix::fs::seek(src, SeekFrom::Hole(data))
            .unwrap_or(size)
            .min(size);
        copy_range(src, dst, data, end, &mut buf)?;
        pos = end.max(data + 1);
    }
    rustix::fs::ftruncate(dst, size)
}

/// Writes `bytes` as a file's whole content.
fn copy_range_from(bytes: &[u8], dst: BorrowedFd<'_>) -> Result<(), Errno> {
    let mut rest = bytes;
    while !rest.is_empty() {
        match rustix::io::write(dst, rest) {
            Ok(0) => return Err(Errno::IO),
            Ok(k) => rest = &rest[k..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Copies the bytes `from..to` of `src` to the same place in `dst`.
fn copy_range(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    from: u64,
    to: u64,
    buf: &mut [u8],
) -> Result<(), Errno> {
    let mut at = from;
    while at < to {
        let want = buf.len().min((to - at) as usize);
        let n = match rustix::io::pread(src, &mut buf[..want], at) {
            Ok(0) => return Ok(()), // shrank while read: ftruncate sets the size
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        };
        let mut done = 0;
        while done < n {
            match rustix::io::pwrite(dst, &buf[done..n], at + done as u64) {
                Ok(0) => return Err(Errno::IO),
                Ok(k) => done += k,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e),
            }
        }
        at += n as u64;
    }
    Ok(())
}

/// Removes `name` in `dir` and all beneath it, never following a link.
fn remove_at(dir: BorrowedFd<'_>, name: &OsStr) -> Result<(), Errno> {
    let sub = match rustix::fs::openat(dir, name, dir_flags(), Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOTDIR | Errno::LOOP) => return rustix::fs::unlinkat(dir, name, AtFlags::empty()),
        Err(Errno::ACCESS) => {
            rustix::fs::chmodat(dir, name, Mode::from_raw_mode(0o700), AtFlags::empty())?;
            rustix::fs::openat(dir, name, dir_flags(), Mode::empty())?
        }
        Err(e) => return Err(e),
    };
    let _ = rustix::fs::fchmod(&sub, Mode::from_raw_mode(0o700));
    for n in names(sub.as_fd())? {
        remove_at(sub.as_fd(), &n)?;
    }
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)
}
