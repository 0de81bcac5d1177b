//! `qwrap review diff`: a layer against the host's trees as they are now.
//! First a summary (one line a change), the files that choose code a host
//! tool runs later, the git refs moved and their new commits, and what the
//! host changed since the run started (apply refuses those); then a
//! unified diff of each text file, a summary of each binary one.

use super::changes::{Change, HostKind, Kind, dir_flags, open_below, read_at};
use super::{Layer, Said, shown, text_diff};
use rustix::fd::AsFd;
use rustix::fs::Mode;
use std::fmt::Write as _;
use std::path::Path;

/// Larger files are summarised, not diffed.
const MAX_DIFF: u64 = 8 << 20;

/// git's way of writing a mode: the type, then the permissions.
fn git_mode(kind: HostKind, mode: u32) -> String {
    let t = match kind {
        HostKind::Dir => 0o040000,
        HostKind::Symlink => 0o120000,
        HostKind::File => 0o100000,
        _ => 0,
    };
    format!("{:06o}", t | mode)
}

/// The summary line of a change.
pub(super) fn line(layer: &Layer, c: &Change) -> String {
    let p = shown(layer, c.tree, &c.rel);
    let was = match c.host.kind {
        HostKind::Missing => None,
        HostKind::File => Some("a file"),
        HostKind::Dir => Some("a directory"),
        HostKind::Symlink => Some("a symlink"),
        HostKind::Other => Some("a special file"),
    };
    let replaced = |what: &str| match was {
        Some(w) => format!("T {p}{what} (was {w})"),
        None => format!("A {p}{what}"),
    };
    match &c.kind {
        Kind::File {
            mode, same_content, ..
        } => match c.host.kind {
            HostKind::File if *same_content => format!(
                "m {p} (mode {} -> {})",
                git_mode(HostKind::File, c.host.mode),
                git_mode(HostKind::File, *mode)
            ),
            HostKind::File if c.host.mode != *mode => format!(
                "M {p} (mode {} -> {})",
                git_mode(HostKind::File, c.host.mode),
                git_mode(HostKind::File, *mode)
            ),
            HostKind::File => format!("M {p}"),
            _ => replaced(""),
        },
        Kind::Dir { mode, opaque, .. } => match c.host.kind {
            HostKind::Dir if *opaque => format!(
                "R {p}/ (emptied and filled again: what the host has there and the layer not is removed)"
            ),
            HostKind::Dir => format!(
                "m {p}/ (mode {} -> {})",
                git_mode(HostKind::Dir, c.host.mode),
                git_mode(HostKind::Dir, *mode)
            ),
            _ => replaced("/"),
        },
        Kind::Symlink { target } => replaced(&format!(
            " -> {} (symlink)",
            super::visible(&target.to_string_lossy(), false)
        )),
        Kind::Fifo { .. } => replaced(" (FIFO)"),
        Kind::Deleted => format!("D {p}{}", if c.host.kind == HostKind::Dir { "/" } else { "" }),
        Kind::Unsupported(what) => format!("? {p} ({what}: not applied)"),
    }
}

/// `qwrap review diff`.
pub fn diff(layer: &Layer, stat: bool) -> Said {
    let changes = match super::changes::of_layer(layer) {
        Ok(c) => c,
        Err(e) => return super::refused(format!("qwrap: review: layer {}: {e}", layer.id)),
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "layer {} of {}: {}",
        layer.id,
        layer.info.workspace.display(),
        layer.info.command()
    );
    if !layer.intact() {
        let _ = writeln!(
            o,
            "(not written out before the host restarted: files may be torn; apply refuses it)"
        );
    }
    if changes.is_empty() {
        let _ = writeln!(o, "no changes");
        return Said {
            stdout: o,
            ..Said::default()
        };
    }
    // A git dir's objects are counted, not listed: the commits below say
    // what they are.
    let mut lines: Vec<Result<String, (String, usize, usize)>> = Vec::new();
    for c in &changes {
        // Only git's own files are counted: anything else is listed.
        let counted = matches!(c.kind, Kind::File { .. } | Kind::Deleted | Kind::Dir { .. });
        let Some(dir) = objects_dir(layer, c).filter(|_| counted) else {
            lines.push(Ok(line(layer, c)));
            continue;
        };
        let at = match lines.iter().position(|l| matches!(l, Err((d, ..)) if *d == dir)) {
            Some(i) => i,
            None => {
                lines.push(Err((dir, 0, 0)));
                lines.len() - 1
            }
        };
        if let Err((_, added, removed)) = &mut lines[at] {
            match c.kind {
                Kind::Deleted => *removed += 1,
                Kind::File { .. } => *added += 1,
                _ => {}
            }
        }
    }
    for l in lines {
        let _ = match l {
            Ok(text) => writeln!(o, "  {text}"),
            Err((dir, added, removed)) => writeln!(
                o,
                "  {dir}: {added} file{} added, {removed} removed (git's objects and packs)",
                if added == 1 { "" } else { "s" }
            ),
        };
    }
    let flags = super::flags::flagged(layer, &changes);
    if !flags.is_empty() {
        let _ = writeln!(o, "\nFiles that choose code a host tool runs later:");
        for f in &flags {
            let _ = writeln!(o, "  {}  ({})", f.path, f.why);
        }
    }
    git_section(&mut o, layer, stat);
    refusals(&mut o, layer, &changes);
    if !stat {
        for c in &changes {
            hunks(&mut o, layer, c);
        }
    }
    Said {
        stdout: o,
        ..Said::default()
    }
}

/// The refs a layer moved, with their new commits and what they hold.
fn git_section(o: &mut String, layer: &Layer, stat: bool) {
    for g in super::git::changed(layer, !stat) {
        if g.moved.is_empty() {
            continue;
        }
        let _ = writeln!(o, "\nGit ({}):", g.shown);
        for m in &g.moved {
            let v = |x: &Option<String>| x.clone().unwrap_or_else(|| "(none)".into());
            let _ = writeln!(o, "  ref {}: {} -> {}", m.name, v(&m.old), v(&m.new));
            for (i, c) in m.commits.iter().enumerate() {
                if i == 20 {
                    let _ = writeln!(o, "      …");
                    break;
                }
                let _ = writeln!(o, "      {c}");
            }
            if !m.contents.is_empty() {
                let _ = writeln!(o, "    what they hold:");
                for l in m.contents.lines() {
                    let _ = writeln!(o, "{}", format!("      | {l}").trim_end());
                }
            }
        }
        if let Some(n) = &g.note {
            let _ = writeln!(o, "  ({n})");
        }
    }
}

/// What apply would refuse: git files git would refuse from a remote, and
/// what the host changed since the run started.
fn refusals(o: &mut String, layer: &Layer, changes: &[Change]) {
    let refused = super::git_vetting::refused(layer, changes);
    if !refused.is_empty() {
        let _ = writeln!(
            o,
            "\nGit files apply refuses (git would refuse them from a remote):"
        );
        for r in &refused {
            let _ = writeln!(o, "  {r}");
        }
    }
    let conflicts = super::conflicts::conflicts(layer, changes);
    if !conflicts.is_empty() {
        let _ = writeln!(
            o,
            "\nChanged on the host since the run started (apply refuses them):"
        );
        for c in &conflicts {
            let _ = writeln!(o, "  {c}");
        }
    }
}

/// The git dir's `objects` a change lies in, as shown, if it does.
fn objects_dir(layer: &Layer, c: &Change) -> Option<String> {
    let git = if c.tree > 0 {
        Path::new("")
    } else {
        Path::new(".git")
    };
    let rest = c.rel.strip_prefix(git.join("objects")).ok()?;
    (!rest.as_os_str().is_empty()).then(|| shown(layer, c.tree, &git.join("objects")))
}

/// A change's unified diff (text), or its summary (binary, large).
fn hunks(o: &mut String, layer: &Layer, c: &Change) {
    if objects_dir(layer, c).is_some() {
        return;
    }
    let p = shown(layer, c.tree, &c.rel);
    let Kind::File {
        size,
        same_content,
        mode,
        ..
    } = &c.kind
    else {
        if let Kind::Symlink { target } = &c.kind {
            let _ = writeln!(
                o,
                "\n--- a/{p}\n+++ b/{p}\nsymlink -> {}",
                super::visible(&target.to_string_lossy(), false)
            );
        }
        return;
    };
    if *same_content {
        return;
    }
    let parent = c.rel.parent().unwrap_or(Path::new(""));
    let Some(name) = c.rel.file_name() else { return };
    let read = |root: &Path, limit: u64| {
        let d = rustix::fs::open(root, dir_flags(), Mode::empty()).ok()?;
        let sub = open_below(d.as_fd(), parent)?;
        read_at(sub.as_fd(), name, limit as usize)
    };
    let new_file = c.host.kind != HostKind::File;
    let _ = writeln!(
        o,
        "\n--- {}",
        if new_file {
            "/dev/null".into()
        } else {
            format!("a/{p}")
        }
    );
    let _ = writeln!(o, "+++ b/{p}");
    if new_file {
        let _ = writeln!(o, "new file mode {}", git_mode(HostKind::File, *mode));
    }
    if *size > MAX_DIFF || c.host.size > MAX_DIFF {
        let _ = writeln!(o, "(large: {} -> {size} bytes, not shown)", c.host.size);
        return;
    }
    let old = if new_file {
        Some(Vec::new())
    } else {
        layer.info.trees.get(c.tree).and_then(|t| read(t, MAX_DIFF))
    };
    let new = read(&layer.upper(c.tree), MAX_DIFF);
    match (old, new) {
        (Some(a), Some(b)) if text_diff::is_text(&a) && text_diff::is_text(&b) => {
            o.push_str(&text_diff::unified(&a, &b));
        }
        (Some(a), Some(b)) => {
            let _ = writeln!(o, "Binary files differ ({} -> {} bytes)", a.len(), b.len());
        }
        _ => {
            let _ = writeln!(o, "(could not be read)");
        }
    }
}
