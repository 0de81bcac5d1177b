//! `qwrap review`: the layers `run --review` keeps on the host, one per
//! run, several pending per workspace, under
//! `${XDG_STATE_HOME:-~/.local/state}/qwrap/reviews/NAME-HASH/ID`:
//!
//! - `info`: the record the run wrote before its sandbox started (the
//!   workspace, each tree overlaid, the command, the start: the ctime of
//!   the layer's lock file, by the filesystem's own clock);
//! - `lock`: held by the run's warden while any of the sandbox lives;
//! - `N/upper`, `N/work`: tree N's overlay (0 the workspace, then each git
//!   root outside it).
//!
//! `list` reads them; `diff` shows a layer against the host's trees as
//! they are now; `apply` applies it (apply.rs) and removes it; `discard`
//! removes it. What the layer holds is the command's: it is read only
//! through descriptors opened with O_NOFOLLOW, never run or interpreted as
//! configuration.

mod apply;
mod changes;
mod conflicts;
mod flags;
mod git;
mod git_index;
mod git_objects;
mod git_vetting;
mod show;
mod text_diff;

pub use changes::{Change, Kind};

use std::ffi::OsString;
use std::fmt::Write as _;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// What `qwrap review` was asked.
pub enum Request {
    List,
    Diff { id: Option<String>, stat: bool },
    Apply { id: Option<String>, yes: bool },
    Discard { id: Option<String> },
}

/// What a review command prints and how it ends.
#[derive(Debug, Default)]
pub struct Said {
    pub stdout: String,
    pub stderr: Vec<String>,
    /// 0 done; 1 refused (a conflict, a question not answered yes).
    pub code: u8,
}

/// A layer's record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    pub workspace: PathBuf,
    /// The host directories overlaid, tree 0 the workspace.
    pub trees: Vec<PathBuf>,
    pub args: Vec<OsString>,
    /// The run's start: the lock file's ctime (seconds, nanoseconds).
    pub started: Option<(i64, i64)>,
    /// The git indexes linked into the layer at the start (`base-N`).
    pub bases: Vec<(u32, PathBuf)>,
    /// The id of the boot the run started in.
    pub boot: String,
}

impl Info {
    /// Parses the NUL-separated `KEY\tVALUE` records of `info`.
    pub fn parse(bytes: &[u8]) -> Info {
        let mut info = Info::default();
        for rec in bytes.split(|b| *b == 0) {
            let Some(tab) = rec.iter().position(|b| *b == b'\t') else {
                continue;
            };
            let (key, value) = (&rec[..tab], &rec[tab + 1..]);
            let path = || PathBuf::from(OsString::from_vec(value.to_vec()));
            match key {
                b"workspace" => info.workspace = path(),
                b"boot" => info.boot = String::from_utf8_lossy(value).into_owned(),
                b"tree" => info.trees.push(path()),
                b"arg" => info.args.push(OsString::from_vec(value.to_vec())),
                b"base" => {
                    if let Some(tab) = value.iter().position(|b| *b == b'\t')
                        && let Some(n) = std::str::from_utf8(&value[..tab])
                            .ok()
                            .and_then(|n| n.parse().ok())
                    {
                        let p = PathBuf::from(OsString::from_vec(value[tab + 1..].to_vec()));
                        info.bases.push((n, p));
                    }
                }
                b"started" => {
                    let text = String::from_utf8_lossy(value);
                    if let Some((s, n)) = text.split_once('.') {
                        info.started = s.parse().ok().zip(n.parse().ok());
                    }
                }
                _ => {}
            }
        }
        info
    }

    /// The command as one line.
    /// The command line as a line of text: its control characters escaped
    /// (a newline in an argument would make one layer look like several).
    pub fn command(&self) -> String {
        self.args
            .iter()
            .map(crate::lossy::shown)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One layer of a workspace.
#[derive(Debug, Clone)]
pub struct Layer {
    pub id: u32,
    pub dir: PathBuf,
    pub info: Info,
}

impl Layer {
    /// Tree `n`'s upper directory.
    pub fn upper(&self, n: usize) -> PathBuf {
        crate::plan::review::tree_dirs(&self.dir, n).0
    }

    /// Whether the layer is whole: its overlay was `volatile` (nothing
    /// synced it while the command ran), so it is only where the warden
    /// wrote it out at the end (`synced`) or the host has not restarted
    /// since the run started (the page cache holds what was not written).
    pub fn intact(&self) -> bool {
        self.dir.join("synced").exists()
            || (!self.info.boot.is_empty() && self.info.boot == crate::host::review::boot_id())
    }

    /// Whether a sandbox still holds the layer (its lock). One whose
    /// command is gone lets it go in a moment (its warden ends what is
    /// left, waiting at most two seconds for the reaper): that is waited
    /// for, up to five seconds.
    pub fn running(&self) -> bool {
        let lock = self.dir.join("lock");
        let free = || crate::host::caches::slot_free(&lock);
        if free() {
            return false;
        }
        !(crate::host::caches::command_gone(&lock)
            && (0..1000).any(|_| {
                std::thread::sleep(std::time::Duration::from_millis(5));
                free()
            }))
    }
}

/// Where the review layers are kept.
pub fn base(home: Option<&Path>, state_home: Option<OsString>) -> Option<PathBuf> {
    crate::policy::state_dir(home, state_home).map(|s| s.join("reviews"))
}

/// A workspace's layers, by id.
pub fn layers_of(set: &Path) -> Vec<Layer> {
    let mut v: Vec<Layer> = std::fs::read_dir(set)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let id: u32 = e.file_name().to_str()?.parse().ok()?;
                    let dir = e.path();
                    let record = std::fs::read(dir.join("info")).ok();
                    let layer = Layer {
                        id,
                        info: Info::parse(record.as_deref().unwrap_or_default()),
                        dir,
                    };
                    // An idle layer (left empty, kept for the next run) is
                    // no pending one; one being made has its lock held.
                    (record.is_some() || layer.running()).then_some(layer)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_by_key(|l| l.id);
    v
}

/// `qwrap review` for the workspace `workspace` (canonical) whose layers
/// are under `base`. `confirm` asks the person at the terminal (apply).
pub fn run(base: &Path, workspace: &Path, request: Request, confirm: &mut dyn FnMut(&str) -> bool) -> Said {
    let set = base.join(crate::policy::layer_set_name(workspace));
    match request {
        Request::List => Said {
            stdout: list(base),
            ..Said::default()
        },
        Request::Diff { id, stat } => with_layer(&set, workspace, id, |l| show::diff(l, stat)),
        Request::Apply { id, yes } => with_layer(&set, workspace, id, |l| apply::apply(l, yes, confirm)),
        Request::Discard { id } => with_layer(&set, workspace, id, |l| match remove_layer(&l.dir) {
            Ok(()) => Said {
                stdout: format!("discarded layer {} of {}\n", l.id, workspace.display()),
                ..Said::default()
            },
            Err(e) => refused(format!("qwrap: review: layer {}: {e}", l.id)),
        }),
    }
}

fn refused(line: String) -> Said {
    Said {
        stdout: String::new(),
        stderr: vec![line],
        code: 1,
    }
}

/// Runs `f` on the layer named (or the only one), not while a sandbox holds
/// it.
fn with_layer(set: &Path, workspace: &Path, id: Option<String>, f: impl FnOnce(&Layer) -> Said) -> Said {
    let layers = layers_of(set);
    let chosen = match &id {
        Some(id) => match layers.iter().find(|l| l.id.to_string() == *id) {
            Some(l) => l,
            None => {
                return refused(format!(
                    "qwrap: review: no layer {id} for {} (qwrap review list)",
                    workspace.display()
                ));
            }
        },
        None => match layers.as_slice() {
            [] => {
                return refused(format!(
                    "qwrap: review: no pending layer for {}",
                    workspace.display()
                ));
            }
            [one] => one,
            _ => {
                let ids: Vec<String> = layers.iter().map(|l| l.id.to_string()).collect();
                return refused(format!(
                    "qwrap: review: {} has {} pending layers ({}): name one",
                    workspace.display(),
                    layers.len(),
                    ids.join(", ")
                ));
            }
        },
    };
    if chosen.running() {
        return refused(format!(
            "qwrap: review: layer {} is in use by a running sandbox: wait for it to end",
            chosen.id
        ));
    }
    if chosen.info.workspace != workspace
        || chosen.info.trees.first().map(PathBuf::as_path) != Some(workspace)
    {
        return refused(format!(
            "qwrap: review: layer {} records another workspace ({}): left alone",
            chosen.id,
            chosen.info.workspace.display()
        ));
    }
    f(chosen)
}

/// Every workspace's pending layers.
fn list(base: &Path) -> String {
    let mut o = String::new();
    let mut sets: Vec<PathBuf> = std::fs::read_dir(base)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    sets.sort();
    let mut any = false;
    for set in sets {
        let layers = layers_of(&set);
        let Some(first) = layers.first() else { continue };
        any = true;
        let _ = writeln!(o, "{}", first.info.workspace.display());
        for l in &layers {
            let state = if l.running() {
                "running".to_string()
            } else {
                let n: usize = (0..l.info.trees.len()).map(|t| changes::count(&l.upper(t))).sum();
                format!("{n} change{}", if n == 1 { "" } else { "s" })
            };
            let _ = writeln!(
                o,
                "  {:>3}  {}  {:<12}  {}",
                l.id,
                l.info
                    .started
                    .map(|(s, _)| when(s))
                    .unwrap_or_else(|| "(starting)".into()),
                state,
                l.info.command()
            );
        }
    }
    if !any {
        let _ = writeln!(o, "no pending review layers in {}", base.display());
    }
    o
}

/// How long ago a run started: `started 5 min ago`.
fn when(secs: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let ago = (now - secs).max(0);
    let text = match ago {
        0..60 => format!("{ago} s"),
        60..3600 => format!("{} min", ago / 60),
        3600..86_400 => format!("{} h", ago / 3600),
        _ => format!("{} d", ago / 86_400),
    };
    format!("started {text:>6} ago")
}

/// Removes a layer, never following a link, and its set once empty.
pub fn remove_layer(dir: &Path) -> std::io::Result<()> {
    crate::cache_layers::remove_tree(dir)?;
    if let Some(set) = dir.parent() {
        let _ = std::fs::remove_dir(set);
    }
    Ok(())
}

/// A path for people: relative to the workspace for tree 0, absolute for
/// the git roots outside it.
pub fn shown(layer: &Layer, tree: usize, rel: &Path) -> String {
    let p = if tree == 0 {
        rel.to_path_buf()
    } else {
        layer
            .info
            .trees
            .get(tree)
            .map(|t| t.join(rel))
            .unwrap_or_default()
    };
    let b = p.as_os_str().as_bytes();
    visible(&String::from_utf8_lossy(b), false)
}

/// Text a terminal shows as it is: control characters (ESC, a carriage
/// return, C1 codes, DEL), bidirectional overrides and, unless
/// `newlines`, line breaks and tabs are written as escapes (`\x1b`,
/// `\u{202e}`, `\n`), so that a name or line the command chose cannot
/// move the cursor, clear the screen, retitle the window or forge a line
/// of the summary.
pub fn visible(s: &str, newlines: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}');
        match c {
            '\n' | '\t' if newlines => out.push(c),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if ('\u{80}'..='\u{9f}').contains(&c) || bidi => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_command_named_is_shown_not_obeyed() {
        let evil = "a\x1b[2J\x1b]0;title\x07\u{202e}txt.sh\r\nD README.md\u{9b}";
        assert_eq!(
            visible(evil, false),
            "a\\x1b[2J\\x1b]0;title\\x07\\u{202e}txt.sh\\x0d\\nD README.md\\u{9b}"
        );
        assert_eq!(visible("line\n\tnext\x1b[1m", true), "line\n\tnext\\x1b[1m");
    }

    #[test]
    fn the_record_parses() {
        let text = b"qwrap-review\t1\0boot\tb-1\0workspace\t/w\0tree\t/w\0tree\t/r/.git\0arg\tsh\0arg\t-c\0arg\ta\tb\0base\t0\t/w/.git/index\0started\t1700000000.000000042\0";
        let i = Info::parse(text);
        assert_eq!(i.workspace, PathBuf::from("/w"));
        assert_eq!(i.trees, vec![PathBuf::from("/w"), PathBuf::from("/r/.git")]);
        // Shown on one line: a control character escaped.
        assert_eq!(i.command(), "sh -c a\\tb");
        assert_eq!(i.started, Some((1_700_000_000, 42)));
        assert_eq!(i.bases, vec![(0, PathBuf::from("/w/.git/index"))]);
        assert_eq!(i.boot, "b-1");
        assert!(when(1_700_000_000).ends_with(" d ago"));
    }
}
