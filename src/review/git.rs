//! The git dirs a layer changed: the refs it moved (loose, packed and
//! HEAD, read from the layer over the host's as overlayfs merges them) and
//! the commits new to the host. The commits are listed by the host's git
//! run on the host's git dir (its config, never the layer's), reading the
//! layer's objects as an alternate only where no symlink lies among them.

use super::Layer;
use super::changes::{dir_flags, names, read_at};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// A ref the layer moved: its value on the host and in the layer (None:
/// missing), and the commits new to the host it leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    pub name: String,
    pub old: Option<String>,
    pub new: Option<String>,
    pub commits: Vec<String>,
    /// What those commits hold: each one's files changed (`--stat`), and
    /// its patch where asked; bounded.
    pub contents: String,
}

/// One git dir the layer changed.
#[derive(Debug, Clone)]
pub struct GitDir {
    /// As people read it.
    pub shown: String,
    pub moved: Vec<Moved>,
    /// Why the commits are not listed, where they are not.
    pub note: Option<String>,
}

/// What a name is in the merged view.
enum Merged {
    File(Vec<u8>),
    Gone,
    Host,
}

/// A git dir: the host's and the layer's side.
struct Sides {
    host: Option<OwnedFd>,
    upper: OwnedFd,
}

impl Sides {
    /// `rel` in the merged view: the layer's file, gone (a whiteout or an
    /// opaque directory above it), or the host's to read.
    fn merged(&self, rel: &Path) -> Merged {
        let mut dir = match rustix::fs::openat(&self.upper, ".", dir_flags(), Mode::empty()) {
            Ok(d) => d,
            Err(_) => return Merged::Host,
        };
        let parts: Vec<&OsStr> = rel.iter().collect();
        let mut opaque = false;
        for (i, part) in parts.iter().enumerate() {
            let Ok(st) = rustix::fs::statat(&dir, *part, AtFlags::SYMLINK_NOFOLLOW) else {
                return if opaque { Merged::Gone } else { Merged::Host };
            };
            let kind = FileType::from_raw_mode(st.st_mode);
            if kind == FileType::CharacterDevice && st.st_rdev == 0 {
                return Merged::Gone;
            }
            if i + 1 == parts.len() {
                return match read_at(dir.as_fd(), part, 1 << 26) {
                    Some(b) => Merged::File(b),
                    None => Merged::Gone,
                };
            }
            match rustix::fs::openat(&dir, *part, dir_flags(), Mode::empty()) {
                Ok(sub) => {
                    let mut b = [0u8; 4];
                    opaque |= rustix::fs::fgetxattr(&sub, "user.overlay.opaque", &mut b)
                        .is_ok_and(|n| b[..n] == *b"y");
                    dir = sub;
                }
                Err(_) => return Merged::Gone,
            }
        }
        Merged::Host
    }

    fn host_file(&self, rel: &Path) -> Option<Vec<u8>> {
        let host = self.host.as_ref()?;
        let parent = super::changes::open_below(host.as_fd(), rel.parent().unwrap_or(Path::new("")))?;
        read_at(parent.as_fd(), rel.file_name()?, 1 << 26)
    }

    fn after_file(&self, rel: &Path) -> Option<Vec<u8>> {
        match self.merged(rel) {
            Merged::File(b) => Some(b),
            Merged::Gone => None,
            Merged::Host => self.host_file(rel),
        }
    }
}

fn value(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_string()
}

/// `packed-refs`: name → object name.
fn packed(text: Option<Vec<u8>>) -> BTreeMap<String, String> {
    let text = String::from_utf8_lossy(&text.unwrap_or_default()).into_owned();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
        .filter_map(|l| l.split_once(' '))
        .map(|(v, n)| (n.trim().to_string(), v.to_string()))
        .collect()
}

/// The loose ref names below `rel` on one side (files only).
fn loose_names(root: Option<&OwnedFd>, rel: &Path, out: &mut BTreeSet<String>, depth: usize) {
    let Some(dir) = root.and_then(|r| super::changes::open_below(r.as_fd(), rel)) else {
        return;
    };
    for n in names(dir.as_fd()).unwrap_or_default() {
        let p = rel.join(&n);
        match rustix::fs::openat(&dir, n.as_os_str(), dir_flags(), Mode::empty()) {
            Ok(_) if depth < 32 => loose_names(root, &p, out, depth + 1),
            Ok(_) => {}
            Err(_) => {
                out.insert(p.to_string_lossy().into_owned());
            }
        }
    }
}

/// The git dirs of a layer: tree 0's `.git` where the layer holds it, and
/// each git root outside the workspace.
fn git_dirs(layer: &Layer) -> Vec<(usize, PathBuf)> {
    let mut v = Vec::new();
    if layer.upper(0).join(".git").is_dir() && !layer.upper(0).join(".git").is_symlink() {
        v.push((0, PathBuf::from(".git")));
    }
    for n in 1..layer.info.trees.len() {
        v.push((n, PathBuf::new()));
    }
    v
}

/// Every git dir the layer changed, with its moved refs; their new
/// commits' patches too where `patches`.
pub fn changed(layer: &Layer, patches: bool) -> Vec<GitDir> {
    let mut out = Vec::new();
    for (n, rel) in git_dirs(layer) {
        let (Some(tree), upper) = (layer.info.trees.get(n), layer.upper(n).join(&rel)) else {
            continue;
        };
        let host_path = tree.join(&rel);
        let Ok(up) = rustix::fs::open(&upper, dir_flags(), Mode::empty()) else {
            continue;
        };
        let sides = Sides {
            host: rustix::fs::open(&host_path, dir_flags(), Mode::empty()).ok(),
            upper: up,
        };
        let mut touched = BTreeSet::new();
        let mut layer_refs = BTreeSet::new();
        loose_names(Some(&sides.upper), Path::new("refs"), &mut layer_refs, 0);
        touched.extend(layer_refs);
        // A removed or emptied refs directory: every host ref below it.
        loose_names(sides.host.as_ref(), Path::new("refs"), &mut touched, 0);
        let upper_has = |p: &str| rustix::fs::statat(&sides.upper, p, AtFlags::SYMLINK_NOFOLLOW).is_ok();
        let packed_before = packed(sides.host_file(Path::new("packed-refs")));
        let packed_after = packed(sides.after_file(Path::new("packed-refs")));
        touched.extend(packed_before.keys().cloned());
        touched.extend(packed_after.keys().cloned());
        if upper_has("HEAD") {
            touched.insert("HEAD".into());
        }
        let mut moved = Vec::new();
        for name in touched {
            let rel = Path::new(&name);
            let old = sides
                .host_file(rel)
                .map(|b| value(&b))
                .or_else(|| packed_before.get(&name).cloned());
            let new = sides
                .after_file(rel)
                .map(|b| value(&b))
                .or_else(|| packed_after.get(&name).cloned());
            if old != new {
                moved.push(Moved {
                    name,
                    old,
                    new,
                    commits: Vec::new(),
                    contents: String::new(),
                });
            }
        }
        let mut dir = GitDir {
            shown: super::shown(layer, n, &rel),
            moved,
            note: None,
        };
        if !dir.moved.is_empty() {
            commits(&mut dir, &host_path, &upper, sides.host.is_some(), patches);
        }
        out.push(dir);
    }
    out
}

/// Whether a tree holds a symlink anywhere (checked before git reads it).
pub(super) fn holds_a_link(dir: &Path) -> bool {
    fn walk(fd: &OwnedFd, depth: usize) -> bool {
        for n in names(fd.as_fd()).unwrap_or_default() {
            let Ok(st) = rustix::fs::statat(fd, n.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            match FileType::from_raw_mode(st.st_mode) {
                FileType::Symlink => return true,
                FileType::Directory => {
                    match rustix::fs::openat(fd, n.as_os_str(), dir_flags(), Mode::empty()) {
                        Ok(sub) if depth < 8 => {
                            if walk(&sub, depth + 1) {
                                return true;
                            }
                        }
                        _ => return true,
                    }
                }
                _ => {}
            }
        }
        false
    }
    rustix::fs::open(dir, dir_flags(), Mode::empty()).is_ok_and(|fd| walk(&fd, 0))
}

fn is_object_name(v: &str) -> bool {
    matches!(v.len(), 40 | 64) && v.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The most of a commit listing's contents shown per ref.
const CONTENTS_MAX: usize = 256 << 10;

/// The commits each moved ref leads to that no host ref reaches: the
/// host's git on the host's git dir, the layer's objects an alternate.
fn commits(dir: &mut GitDir, host_git: &Path, upper_git: &Path, host_exists: bool, patches: bool) {
    if !host_exists {
        dir.note = Some("no git dir on the host: the commits are not listed".into());
        return;
    }
    let objects = upper_git.join("objects");
    // git follows an alternate's own `info/alternates`: a pointer the
    // command wrote, as a link would be.
    let points_away = std::fs::symlink_metadata(objects.join("info/alternates")).is_ok();
    if objects.is_dir() && (holds_a_link(&objects) || points_away) {
        dir.note =
            Some("the layer's objects hold a symlink or name alternates: the commits are not listed".into());
        return;
    }
    // Sizes first, from the objects' headers: a commit of a few MB on disk
    // whose message inflated to 5 GB held each `git log` at 4 GB.
    if objects.is_dir()
        && let Err(why) = crate::git_receive::objects_too_large(&objects, LOG_DEADLINE, None)
    {
        dir.note = Some(format!("the commits are not listed: {why}"));
        return;
    }
    for m in &mut dir.moved {
        let Some(new) = m.new.as_deref().filter(|v| is_object_name(v)) else {
            continue;
        };
        let list = host_git_log(host_git, &objects, &["--format=%h %s", "-n", "21", new]);
        // Their contents: git's own diff, no driver or filter a config
        // names (the host's config, but no program runs for a review).
        let mut args = vec![
            "--format=commit %h %s",
            "-n",
            "20",
            "--stat",
            "--no-ext-diff",
            "--no-textconv",
        ];
        if patches {
            args.push("-p");
        }
        args.push(new);
        let contents = host_git_log(host_git, &objects, &args);
        match (list, contents) {
            (Ok(list), Ok(mut contents)) => {
                m.commits = list.lines().map(str::to_string).collect();
                if contents.len() > CONTENTS_MAX {
                    let mut end = CONTENTS_MAX;
                    while !contents.is_char_boundary(end) {
                        end -= 1;
                    }
                    contents.truncate(end);
                    contents.push_str("\n… (more: `git log -p` after apply)\n");
                }
                m.contents = contents;
            }
            (Err(e), _) | (_, Err(e)) => dir.note = Some(e),
        }
    }
}

/// `git log ARGS --not --all` by the host's git on the host's git dir,
/// the layer's objects an alternate; its output, or why not.
fn host_git_log(host_git: &Path, objects: &Path, args: &[&str]) -> Result<String, String> {
    let mut c = std::process::Command::new("git");
    c.arg("--git-dir")
        .arg(host_git)
        .args(["--no-replace-objects", "-c", "core.fsmonitor=false", "log"])
        .args(args)
        .args(["--not", "--all", "--"])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null());
    for k in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_EXTERNAL_DIFF",
        "GIT_PAGER",
        "GIT_EXEC_PATH",
    ] {
        c.env_remove(k);
    }
    // The command's objects: at nice 19, its heap held (as an import's).
    crate::git_receive::hold(&mut c, LOG_HEAP);
    if objects.is_dir() {
        c.env("GIT_ALTERNATE_OBJECT_DIRECTORIES", objects);
    } else {
        c.env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES");
    }
    bounded(c)
}

/// The heap host git may take to list a layer's commits.
const LOG_HEAP: u64 = 1 << 30;

/// Longest host git may take to list a layer's commits: a tree that names
/// one subtree many times over (a few kilobytes) is a billion paths to
/// `git log -p`.
const LOG_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// A command's output, at most [`CONTENTS_MAX`] and a little more (the
/// caller cuts it), within [`LOG_DEADLINE`]: killed past either.
fn bounded(mut c: std::process::Command) -> Result<String, String> {
    use std::io::Read;
    let mut child = c
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("git could not run: {e}"))?;
    let out = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(o) = out {
            let _ = o.take(CONTENTS_MAX as u64 + 4096).read_to_end(&mut buf);
        }
        buf
    });
    let start = std::time::Instant::now();
    // Past the limit the reader lets the pipe go, and git ends on EPIPE.
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() < LOG_DEADLINE => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let out = reader.join().unwrap_or_default();
    match status {
        Some(s) if s.success() || out.len() > CONTENTS_MAX => Ok(String::from_utf8_lossy(&out).into_owned()),
        Some(_) => Err("git could not list the commits".into()),
        None => Err(format!(
            "git did not list the commits within {} s (a tree that names the same subtree many times over?): look with git on the host",
            LOG_DEADLINE.as_secs()
        )),
    }
}
