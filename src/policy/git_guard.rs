//! What keeps a host `git`, now or later, from running code planted inside
//! or reading anything but git's own data:
//!
//! - the top level of every git dir (the checkout's, a linked worktree's
//!   and its common dir, each submodule's under `modules/`, each
//!   `worktrees/NAME`) and its `objects/info` are the sandbox's own: a
//!   tmpfs the warden keeps in step with the host's for git's allow-listed
//!   files only, refs and reflogs included, vetted on their way out
//!   (supervise/git_sync.rs, git_vet.rs); `objects/` is the sandbox's own
//!   too, the host's objects read through alternates and what is new
//!   brought over as a push would be (git_receive.rs, supervise/git_objects.rs); `lfs/` is
//!   its own as well, the host's lfs objects seen read-only beside the
//!   alternate, what is new carried out as a download (supervise/lfs_carry.rs).
//!   Nothing the sandbox makes there
//!   (`commondir`, `gitdir`, `config`, `hooks/`, a FIFO, any new name)
//!   reaches the host;
//! - each submodule's checkout is a mount point (it cannot be renamed,
//!   replaced or removed), and the checkout's `.git` file, each
//!   submodule's `.git` file and the directory `core.hooksPath` names are
//!   read-only.
//!
//! The walk is bounded: a repository with thousands of submodules gets the
//! first [`MAX_GIT_DIRS`] guarded and a note.

use super::git::{Checkout, GitInfo, core_key};
use super::read_small;
use std::fs;
use std::path::{Path, PathBuf};

/// Most git dirs guarded in one repository.
pub const MAX_GIT_DIRS: usize = 256;
/// Deepest nesting of `modules/` walked.
const MAX_DEPTH: usize = 8;

/// One git dir as the sandbox sees it: its top level the sandbox's own,
/// the host's `shared` stores seen read-only (their objects), its `objects/` the
/// sandbox's own too when it has one (`objects`), the host's objects then
/// seen read-only beside it through git's alternates.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GitLayout {
    #[serde(serialize_with = "crate::lossy::path")]
    pub dir: PathBuf,
    #[serde(serialize_with = "crate::lossy::paths")]
    pub shared: Vec<PathBuf>,
    pub objects: bool,
}

/// Subdirectories of a git dir that stay the host's.
const SHARED: [&str; 1] = ["lfs"];
/// Where the host's objects are seen read-only inside, at a git dir's top
/// (a name git does not use; supervise/git_objects.rs writes the
/// alternates that name it).
pub const HOST_OBJECTS: &str = "qwrap-host/objects";

impl GitLayout {
    fn of(dir: &Path) -> GitLayout {
        let shared: Vec<PathBuf> = SHARED
            .iter()
            .map(|s| dir.join(s))
            .filter(|p| fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
            .collect();
        let objects = fs::symlink_metadata(dir.join("objects")).is_ok_and(|m| m.is_dir());
        GitLayout {
            dir: dir.to_path_buf(),
            shared,
            objects,
        }
    }

    /// The sandbox's own directories: its objects (first, so that the
    /// warden brings new objects over before the refs that name them), and
    /// the top level.
    pub fn own(&self) -> Vec<PathBuf> {
        let mut v = Vec::new();
        if self.objects {
            v.push(self.dir.join("objects"));
        }
        v.push(self.dir.clone());
        v
    }

    /// The host's objects, seen read-only inside: (where, the host's).
    pub fn host_objects(&self) -> Option<(PathBuf, PathBuf)> {
        self.objects
            .then(|| (self.dir.join(HOST_OBJECTS), self.dir.join("objects")))
    }
}

/// The guard for one checkout.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Guard {
    /// Every git dir, laid out as the sandbox sees it.
    pub layouts: Vec<GitLayout>,
    /// Directories bound over themselves, writable.
    pub pins: Vec<PathBuf>,
    /// Files and directories made read-only.
    pub protect: Vec<PathBuf>,
    /// Hooks directories that do not exist yet: created (empty) on the host
    /// first, so that they can be made read-only.
    pub create: Vec<PathBuf>,
    /// Why the walk stopped early, when it did.
    pub note: Option<String>,
    /// Files and directories host git would read as its own config or
    /// hooks that are missing at the start: held aside at the end where
    /// the command made them.
    pub absent: Vec<PathBuf>,
    /// Files and directories host git reads as its own config or hooks
    /// outside a git dir, there at the start: read-only inside, and held
    /// aside at the end where the path names another file then (its parent
    /// renamed and the path made again).
    pub trusted: Vec<PathBuf>,
    /// Paths host git reads as config or hooks as it spells them, where a
    /// link lies on the way: each resolved again at the end, and held
    /// aside where it leads elsewhere then.
    pub ways: Vec<PathBuf>,
    /// Of `protect`, what other host tools read as their config (the
    /// home's, Mercurial's): named as such in reports.
    pub host_config: Vec<PathBuf>,
}

impl Guard {
    fn pin(&mut self, p: PathBuf) {
        if !self.pins.contains(&p) {
            self.pins.push(p);
        }
    }

    fn protect(&mut self, p: PathBuf) {
        if !self.protect.contains(&p) {
            self.protect.push(p);
        }
    }
}

/// The guard for a discovered checkout.
pub fn guard(info: &GitInfo) -> Guard {
    let mut g = Guard::default();
    let Some(top) = &info.top else { return g };
    let common = match info.checkout {
        Checkout::None => return g,
        Checkout::LinkedWorktree => info.roots[1].clone(),
        Checkout::Normal | Checkout::Submodule => info.roots[0].clone(),
    };
    if info.checkout != Checkout::Normal {
        g.protect(top.join(".git"));
    }
    uninitialised_submodules(&mut g, top);
    let mut queue = vec![(common, 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = queue.pop() {
        seen += 1;
        if seen > MAX_GIT_DIRS {
            g.note = Some(format!(
                "more than {MAX_GIT_DIRS} git dirs: the rest are not guarded"
            ));
            break;
        }
        let mut layout = GitLayout::of(&dir);
        // git-lfs keeps its store in the common dir: the host's is made
        // first where a repository that uses it has none yet, so that there
        // is one to see read-only and to carry new objects to.
        let lfs = dir.join("lfs");
        if uses_lfs(top, &dir) {
            for d in [lfs.clone(), lfs.join("objects")] {
                if !d.is_dir() {
                    g.create.push(d);
                }
            }
            if !layout.shared.contains(&lfs) {
                layout.shared.push(lfs);
            }
        }
        g.layouts.push(layout);
        for wt in subdirs(&dir.join("worktrees")) {
            g.layouts.push(GitLayout::of(&wt));
        }
        if depth < MAX_DEPTH {
            for m in module_git_dirs(&dir.join("modules"), MAX_DEPTH) {
                submodule_checkout(&mut g, &m);
                queue.push((m, depth + 1));
            }
        }
    }
    g
}

/// Directories read, at most, looking for repositories below the
/// writable roots.
pub const MAX_SCAN: usize = 4096;
/// Deepest level below a root looked at when the sandbox starts.
const SCAN_DEPTH: usize = 4;
/// Trees of dependencies and build output: not looked into when the
/// sandbox starts.
const NOT_SCANNED: [&str; 6] = ["node_modules", "target", ".venv", "venv", "__pycache__", ".tox"];
/// When the sandbox has ended, every directory is looked at, as deep as
/// they go, up to this many. (Past the kernel's PATH_MAX a path no longer
/// opens, and host git cannot run there either: it cannot read its
/// working directory.)
const WHOLE_SCAN: usize = 250_000;
/// Links kept of a walk when the sandbox has ended.
pub const LINKS_MET: usize = 100_000;

/// How far a walk for repositories looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// When the sandbox starts, quickly: [`SCAN_DEPTH`] levels, at most
    /// [`MAX_SCAN`] directories, not into [`NOT_SCANNED`].
    StartUp,
    /// When it has ended: every directory, up to [`WHOLE_SCAN`] of them.
    Whole,
    /// When it has ended, outside the writable roots, where a link made
    /// inside leads: every directory, up to [`MAX_SCAN`] of them, none of
    /// them changed (an unreadable one stays unread).
    Beyond,
}

/// Whether the walk at the start looked at `p` (a path below one of
/// `roots`): not below a tree it skips, nor deeper than it goes.
pub fn looked_at_start(roots: &[PathBuf], p: &Path) -> bool {
    roots.iter().any(|r| {
        p.strip_prefix(r).is_ok_and(|rel| {
            let dirs: Vec<_> = rel.parent().map(|d| d.iter().collect()).unwrap_or_default();
            dirs.len() <= SCAN_DEPTH && !dirs.iter().any(|c| NOT_SCANNED.iter().any(|n| c == n))
        })
    })
}

/// What the walk below the writable roots found: every `.git` (directory
/// or pointer file), and why it stopped early, when it did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    pub dot_gits: Vec<PathBuf>,
    /// Git dirs without a `.git` in their path (bare, or with a
    /// `core.worktree`): a directory holding `HEAD`, `objects` and `refs`.
    pub bare: Vec<PathBuf>,
    /// A `.git` that is a link, a git dir whose `HEAD`, `objects` or
    /// `refs` is one, and one that borrows them (`commondir`): never
    /// guarded, but named and held at exit when made inside.
    pub linked: Vec<PathBuf>,
    pub note: Option<String>,
    /// When the sandbox has ended: every `.gitignore` (what it matches
    /// does not show in `git status`).
    pub ignores: Vec<PathBuf>,
    /// When the sandbox has ended: every `.gitmodules` (a file or a link).
    pub gitmodules: Vec<PathBuf>,
    /// At the start: what host git would read as config or hooks that is
    /// missing ([`Guard::absent`]).
    pub absent: Vec<PathBuf>,
    /// At the start: what host git reads as config or hooks there then
    /// ([`Guard::trusted`]).
    pub trusted: Vec<PathBuf>,
    /// At the start: those paths as spelled, through a link ([`Guard::ways`]).
    pub ways: Vec<PathBuf>,
    /// When the sandbox has ended: the symbolic links met (but `.git`),
    /// the first [`LINKS_MET`]; host git run where one leads takes the
    /// repository there as its own.
    pub links: Vec<PathBuf>,
    /// When the sandbox has ended: names with characters a terminal acts
    /// on or that hide text (the first 100), which host git prints as they
    /// are where `core.quotePath` is off.
    pub odd_names: Vec<PathBuf>,
    /// Mercurial's repositories (`.hg`, a directory or a link): host hg
    /// runs the hooks and extensions their `hgrc` names.
    pub hg: Vec<PathBuf>,
    /// When the sandbox has ended: directories its owner had made
    /// unreadable, opened for the walk, with the mode each is to get back
    /// ([`Found::give_modes_back`]) once what was found in them is dealt
    /// with.
    pub opened: Vec<(PathBuf, u32)>,
}

impl Found {
    /// The directories the walk opened given their modes back, the
    /// deepest first.
    pub fn give_modes_back(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        for (dir, mode) in self.opened.drain(..).rev() {
            let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(mode));
        }
    }
}

/// Every `.git` below `roots`, breadth first, never through a link, as
/// far as `reach` goes.
pub fn repositories_below(roots: &[PathBuf], reach: Reach) -> Found {
    let (most, deepest, skip) = match reach {
        Reach::StartUp => (MAX_SCAN, SCAN_DEPTH, &NOT_SCANNED[..]),
        Reach::Whole => (WHOLE_SCAN, usize::MAX, &[][..]),
        Reach::Beyond => (MAX_SCAN, usize::MAX, &[][..]),
    };
    let mut found = Found::default();
    let mut queue: std::collections::VecDeque<(PathBuf, usize)> =
        roots.iter().map(|r| (r.clone(), 0)).collect();
    let mut read = 0usize;
    while let Some((dir, depth)) = queue.pop_front() {
        read += 1;
        if read > most {
            found.note = Some(match reach {
                Reach::StartUp => format!(
                    "more than {MAX_SCAN} directories below the writable roots: repositories beyond them are not guarded while the command runs"
                ),
                Reach::Beyond => format!(
                    "more than {MAX_SCAN} directories below {}: repositories made beyond them were not looked for",
                    roots
                        .iter()
                        .map(crate::lossy::shown)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Reach::Whole => format!(
                    "more than {WHOLE_SCAN} directories below the writable roots: the walk for repositories made inside stopped there, so one made beyond it is live (host git run in it would run its config and hooks); look before running git below {}",
                    roots
                        .iter()
                        .map(crate::lossy::shown)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
            break;
        }
        let Some(rd) = list(&dir, reach, &mut found) else {
            continue;
        };
        let mut git_dir = [false; 3];
        // git opens HEAD, objects and refs through links too, and takes
        // objects and refs from a `commondir`'s directory.
        let (mut linked, mut head, mut common) = (false, false, false);
        for e in rd.flatten() {
            let name = e.file_name();
            let Ok(t) = e.file_type() else { continue };
            let link = t.is_symlink();
            // git takes a directory for a repository where HEAD reads and
            // `objects` and `refs` pass access(X_OK): an executable file
            // does as well as a directory.
            match name.as_encoded_bytes() {
                b"HEAD" => (git_dir[0], head, linked) = (!t.is_dir() && !link, !t.is_dir(), linked || link),
                b"objects" => (git_dir[1], linked) = (!link, linked || link),
                b"refs" => (git_dir[2], linked) = (!link, linked || link),
                b"commondir" => common = true,
                _ => {}
            }
            if name == ".gitignore" && reach == Reach::Whole && t.is_file() {
                found.ignores.push(e.path());
            }
            if name == ".gitmodules" && reach == Reach::Whole && (t.is_file() || link) {
                found.gitmodules.push(e.path());
            }
            if reach == Reach::Whole
                && found.odd_names.len() < 100
                && unshowable_name(name.as_encoded_bytes())
            {
                found.odd_names.push(e.path());
            }
            if link && name != ".git" && reach != Reach::StartUp && found.links.len() < LINKS_MET {
                found.links.push(e.path());
            }
            if name == ".git" {
                if t.is_dir() || t.is_file() {
                    found.dot_gits.push(e.path());
                } else if t.is_symlink() {
                    found.linked.push(e.path());
                }
            } else if name == ".hg" && (t.is_dir() || link) {
                found.hg.push(e.path());
            } else if t.is_dir() && depth < deepest && !skip.iter().any(|n| name == *n) {
                queue.push_back((e.path(), depth + 1));
            }
        }
        if git_dir == [true; 3] {
            found.bare.push(dir);
        } else if head && (linked || common) {
            found.linked.push(dir);
        }
    }
    found.bare.sort();
    found.linked.sort();
    found.dot_gits.sort();
    found.dot_gits.dedup();
    found.hg.sort();
    found
}

/// A `.hg` there at the start: what host hg reads as its config
/// (policy::hg) read-only inside, or held aside at the end where made.
fn hg_guarded(g: &mut Guard, hg: &Path, home: Option<&Path>) {
    if fs::symlink_metadata(hg).is_ok_and(|m| m.file_type().is_symlink()) {
        return;
    }
    for f in super::hg::repo_config(hg, home) {
        host_tool_read(g, f);
    }
}

/// A path another host tool reads as its config: guarded as git's, and
/// named for what it is.
fn host_tool_read(g: &mut Guard, p: PathBuf) {
    let before = g.protect.len();
    seen(g, p);
    let added: Vec<PathBuf> = g.protect[before..].to_vec();
    g.host_config.extend(added);
}

/// Whether a name holds what a terminal acts on or what hides text, as
/// UTF-8 or as raw 8-bit bytes.
fn unshowable_name(n: &[u8]) -> bool {
    n.iter().any(|b| *b < 0x20 || *b >= 0x7f)
        && n.utf8_chunks().any(|c| {
            c.valid().chars().any(crate::lossy::unshowable)
                || c.invalid().iter().any(|b| crate::lossy::raw_c1(*b))
        })
}

/// A directory's entries. When the sandbox has ended, one the caller owns
/// but may not read (mode 0311 or 0000: a path through it still leads host
/// git to a repository inside, at once or after a chmod) is read with its
/// owner's read and search bits added until what was found beneath it is
/// dealt with (`found.opened`); one still unread is named in `found.note`.
fn list(dir: &Path, reach: Reach, found: &mut Found) -> Option<fs::ReadDir> {
    use std::os::unix::fs::PermissionsExt;
    match fs::read_dir(dir) {
        Ok(rd) => return Some(rd),
        Err(e) if reach != Reach::Whole || e.kind() != std::io::ErrorKind::PermissionDenied => return None,
        Err(_) => {}
    }
    let mode = fs::symlink_metadata(dir)
        .ok()
        .filter(|m| m.is_dir())?
        .permissions()
        .mode()
        & 0o7777;
    let opened = fs::set_permissions(dir, fs::Permissions::from_mode(mode | 0o500))
        .ok()
        .and_then(|()| {
            found.opened.push((dir.to_path_buf(), mode));
            fs::read_dir(dir).ok()
        });
    if opened.is_none() {
        found.note.get_or_insert_with(|| {
            format!(
                "{}: a directory qwrap cannot read: repositories made in it were not looked for",
                crate::lossy::shown(dir)
            )
        });
    }
    opened
}

impl Guard {
    /// Adds another repository's guard (one below the workspace, or in an
    /// included root).
    pub fn merge(&mut self, other: Guard) {
        for l in other.layouts {
            if !self.layouts.iter().any(|m| m.dir == l.dir) {
                self.layouts.push(l);
            }
        }
        for p in other.pins {
            self.pin(p);
        }
        for p in other.protect {
            self.protect(p);
        }
        for p in other.create {
            if !self.create.contains(&p) {
                self.create.push(p);
            }
        }
        for p in other.absent {
            absent(self, p);
        }
        for p in other.trusted {
            trusted(self, p);
        }
        for p in other.ways {
            if !self.ways.contains(&p) {
                self.ways.push(p);
            }
        }
        if self.note.is_none() {
            self.note = other.note;
        }
    }
}

/// The roots walked for repositories: the writable ones but the caches
/// and the host's shared temp (`--tmp host`), where other processes' come
/// and go.
pub fn scanned(roots: &[super::WritableRoot]) -> Vec<PathBuf> {
    roots
        .iter()
        .filter(|r| r.cache.is_none() && r.reason != super::RootReason::Temp)
        .map(|r| r.path.clone())
        .collect()
}

/// The guard of the workspace's checkout and of every repository below
/// the [`scanned`] roots, and what the walk found.
pub fn for_roots(
    git: &GitInfo,
    roots: &[super::WritableRoot],
    allowed: bool,
    user: &UserGit,
) -> (Guard, Found) {
    let scanned = scanned(roots);
    let found = if allowed {
        Found::default()
    } else {
        repositories_below(&scanned, Reach::StartUp)
    };
    if allowed {
        return (Guard::default(), found);
    }
    let mut g = if git.roots.is_empty() {
        Guard::default()
    } else {
        guard(git)
    };
    for dot_git in &found.dot_gits {
        let Some(top) = dot_git.parent() else { continue };
        // One the caller may not write (another user's, under a shared
        // /tmp) cannot be planted in: no mounts spent on it.
        let writable = |p: &Path| rustix::fs::access(p, rustix::fs::Access::WRITE_OK).is_ok();
        if !writable(top) && !writable(dot_git) {
            continue;
        }
        // The workspace's own checkout, and each submodule's (its `.git`
        // file protected by its superproject's guard), are guarded already.
        if g.layouts.iter().any(|l| l.dir == *dot_git) || g.protect.contains(dot_git) {
            continue;
        }
        let info = super::git::discover(top);
        if info.top.as_deref() == Some(top) {
            g.merge(guard(&info));
        }
    }
    for hg in &found.hg {
        hg_guarded(&mut g, hg, user.home.as_deref());
    }
    // A bare repository (a local remote, fixtures) is a git dir host git
    // runs hooks and config from as well: guarded the same way.
    for bare in &found.bare {
        let writable = rustix::fs::access(bare, rustix::fs::Access::WRITE_OK).is_ok();
        if !writable || g.layouts.iter().any(|l| l.dir == *bare) {
            continue;
        }
        g.merge(guard(&GitInfo {
            checkout: Checkout::Normal,
            top: Some(bare.clone()),
            roots: vec![bare.clone()],
            note: None,
        }));
    }
    let dirs: Vec<PathBuf> = g.layouts.iter().map(|l| l.dir.clone()).collect();
    let mut linked = Vec::new();
    for dir in dirs {
        linked.extend(trusted_paths(&mut g, &dir, user));
    }
    // The caller's own configs, and the ignores and attributes git reads
    // beside them by default.
    for p in user.configs.iter().chain(&user.files) {
        seen(&mut g, p.clone());
    }
    // What other host tools read from the home as their own config.
    for p in user.host_tool_config(&scanned) {
        host_tool_read(&mut g, p);
    }
    other_names(&mut g, &scanned, linked);
    let mut found = found;
    found.absent = g.absent.clone();
    found.trusted = g.trusted.clone();
    found.ways = g.ways.clone();
    if g.note.is_none() {
        g.note = found.note.clone();
    }
    (g, found)
}

/// What host git reads as its own config or hooks for the git dir `dir`
/// outside it (there or missing): review names a change to any of them.
pub fn config_reads(dir: &Path, user: &UserGit) -> Vec<PathBuf> {
    let mut g = Guard::default();
    let _linked = trusted_paths(&mut g, dir, user);
    for p in user.configs.iter().chain(&user.files) {
        seen(&mut g, p.clone());
    }
    g.trusted.into_iter().chain(g.absent).chain(g.ways).collect()
}

/// The user's own git configs (system, global: where their `core.hooksPath`
/// and includes apply to every repository) and the home `~/` names.
#[derive(Debug, Default, Clone)]
pub struct UserGit {
    pub configs: Vec<PathBuf>,
    /// Config given in the environment (`GIT_CONFIG_KEY_n`), as config text.
    pub texts: Vec<String>,
    /// The ignores and attributes git reads by default
    /// (`$XDG_CONFIG_HOME/git/ignore`, `.../attributes`).
    pub files: Vec<PathBuf>,
    pub home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME`, or `~/.config`.
    pub xdg: Option<PathBuf>,
    /// `$CARGO_HOME` where it is set.
    pub cargo: Option<PathBuf>,
}

impl UserGit {
    /// What other host tools read from this user's home as their config
    /// that lies in one of `roots` (policy::home_config).
    pub fn host_tool_config(&self, roots: &[PathBuf]) -> Vec<PathBuf> {
        let Some(home) = &self.home else {
            return Vec::new();
        };
        let places = super::home_config::Places {
            xdg: self.xdg.as_deref(),
            cargo: self.cargo.as_deref(),
        };
        super::home_config::paths(home, &places, roots)
    }

    /// The caller's own git configs, in git's order: the system's
    /// (`$GIT_CONFIG_SYSTEM`), then the global one (`$GIT_CONFIG_GLOBAL`, or
    /// `$XDG_CONFIG_HOME/git/config` and `~/.gitconfig`); the config its
    /// environment gives (`GIT_CONFIG_COUNT`); the ignores and attributes git
    /// reads by default.
    pub fn of(env: &dyn Fn(&str) -> Option<std::ffi::OsString>, home: Option<&Path>, cwd: &Path) -> UserGit {
        let var = |k: &str| env(k).filter(|v| !v.is_empty());
        let mut configs = Vec::new();
        if var("GIT_CONFIG_NOSYSTEM").is_none() {
            configs.push(
                var("GIT_CONFIG_SYSTEM").map_or_else(|| PathBuf::from("/etc/gitconfig"), PathBuf::from),
            );
        }
        let xdg = var("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| home.map(|h| h.join(".config")));
        match var("GIT_CONFIG_GLOBAL") {
            Some(g) => configs.push(super::absolutize(Path::new(&g), cwd)),
            None => {
                configs.extend(xdg.as_ref().map(|x| x.join("git/config")));
                configs.extend(home.map(|h| h.join(".gitconfig")));
            }
        }
        // `GIT_CONFIG_COUNT` pairs, as git applies them: `a.b.c` is key c of
        // section a, subsection b.
        let count: usize = var("GIT_CONFIG_COUNT")
            .and_then(|c| c.to_str()?.parse().ok())
            .unwrap_or(0);
        let texts = (0..count.min(1024))
            .filter_map(|i| {
                let key = var(&format!("GIT_CONFIG_KEY_{i}"))?
                    .to_string_lossy()
                    .into_owned();
                let value = var(&format!("GIT_CONFIG_VALUE_{i}")).unwrap_or_default();
                let (head, name) = key.rsplit_once('.')?;
                let head = match head.split_once('.') {
                    Some((sec, sub)) => {
                        format!("{sec} \"{}\"", sub.replace('\\', "\\\\").replace('"', "\\\""))
                    }
                    None => head.to_string(),
                };
                let value = value.to_string_lossy().replace('\\', "\\\\").replace('"', "\\\"");
                Some(format!("[{head}]\n\t{name} = \"{value}\"\n"))
            })
            .collect();
        UserGit {
            configs,
            texts,
            // gitk sources its file as Tcl; a template directory gives every
            // new repository its hooks and config.
            files: xdg
                .as_ref()
                .map(|x| {
                    ["ignore", "attributes", "gitk", "credentials"]
                        .map(|f| x.join("git").join(f))
                        .to_vec()
                })
                .unwrap_or_default()
                .into_iter()
                .chain(var("GIT_TEMPLATE_DIR").map(|t| super::absolutize(Path::new(&t), cwd)))
                .collect(),
            home: home.map(Path::to_path_buf),
            xdg,
            cargo: var("CARGO_HOME").map(PathBuf::from).filter(|p| p.is_absolute()),
        }
    }
}

/// What host git takes config and hooks from for the git dir `dir` that
/// lies outside it, made read-only inside (where it lies in a writable
/// root): the target of a link at `config`, `config.worktree`, `hooks` or
/// a hook (a tracked script the hook links to), every file a config
/// includes (`include.path = ../.gitconfig`), `core.excludesFile` and
/// `core.attributesFile`, and the directory `core.hooksPath` names, the
/// last value of every config in git's order; each of them missing at the
/// start is [`Guard::absent`]. Returns the files of the git dir among
/// them that have more than one name (device, inode): [`other_names`].
fn trusted_paths(g: &mut Guard, dir: &Path, user: &UserGit) -> Vec<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let hooks = dir.join("hooks");
    // `info/` too: its `exclude` hides files, `grafts` history, and
    // `attributes` chooses drivers (`info -> ../gitinfo`, a tracked one).
    let hook_links = entries(&hooks).chain(entries(&dir.join("info")));
    let mut linked = Vec::new();
    for p in [
        dir.join("config"),
        dir.join("config.worktree"),
        hooks.clone(),
        dir.join("info"),
    ]
    .into_iter()
    .chain(hook_links)
    {
        let Ok(m) = fs::symlink_metadata(&p) else { continue };
        if m.file_type().is_symlink() {
            if let Ok(real) = fs::canonicalize(&p) {
                trusted(g, real);
            }
        } else if m.is_file() && m.nlink() > 1 {
            linked.push((m.dev(), m.ino()));
        }
    }
    // Hooks run in the work tree's top (a bare repository's: itself).
    let top = if dir.file_name().is_some_and(|n| n == ".git") {
        dir.parent().unwrap_or(dir)
    } else {
        dir
    };
    let mut reads = Reads {
        top,
        user,
        configs: user.configs.clone(),
        hooks_path: None,
    };
    reads
        .configs
        .extend([dir.join("config"), dir.join("config.worktree")]);
    // The caller's `GIT_CONFIG_KEY_n`: read before the files, as git
    // applies them after (its relative includes are refused by git).
    for text in &user.texts {
        reads.config(g, text, None);
    }
    let mut i = 0;
    while i < reads.configs.len() && i < 64 {
        let file = reads.configs[i].clone();
        i += 1;
        if let Some(text) = read_small(&file) {
            reads.config(g, &text, Some(file.parent().unwrap_or(Path::new("/"))));
        }
    }
    if let Some(hp) = reads.hooks_path {
        seen(g, hp);
    }
    linked
}

/// The paths of a directory's entries (none where it cannot be read).
fn entries(dir: &Path) -> impl Iterator<Item = PathBuf> + use<> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
}

/// Directories looked at, at most, for the other names of a file host git
/// trusts (the walk at the end's bound).
const OTHER_NAMES_WALK: usize = 250_000;

/// The other names below the writable roots of each file host git trusts
/// that has more than one: the git dirs' own (`linked`, from
/// [`trusted_paths`]) and every file and hooks directory's file of
/// [`Guard::trusted`]; made read-only as well.
/// `ln tools/pre-commit .git/hooks/pre-commit` is one file under two
/// names: the command rewrote the tracked one and the host's next commit
/// ran it. Only where such a file exists are the roots walked (every
/// directory on that file system, never through a link, up to
/// OTHER_NAMES_WALK; past it, said).
fn other_names(g: &mut Guard, roots: &[PathBuf], linked: Vec<(u64, u64)>) {
    use std::collections::HashSet;
    use std::os::unix::fs::MetadataExt;
    let trusted_files = g
        .trusted
        .iter()
        .flat_map(|t| std::iter::once(t.clone()).chain(entries(t)));
    let mut linked: HashSet<(u64, u64)> = linked.into_iter().collect();
    linked.extend(
        trusted_files
            .filter_map(|p| fs::symlink_metadata(p).ok())
            .filter(|m| m.is_file() && m.nlink() > 1)
            .map(|m| (m.dev(), m.ino())),
    );
    if linked.is_empty() {
        return;
    }
    let devs: HashSet<u64> = linked.iter().map(|(d, _)| *d).collect();
    // The git dirs are the sandbox's own copies inside: their names are not.
    let git_dirs: HashSet<PathBuf> = g.layouts.iter().map(|l| l.dir.clone()).collect();
    let mut stack: Vec<PathBuf> = roots
        .iter()
        .filter(|r| fs::symlink_metadata(r).is_ok_and(|m| m.is_dir() && devs.contains(&m.dev())))
        .cloned()
        .collect();
    let mut looked = 0;
    while let Some(dir) = stack.pop() {
        looked += 1;
        if looked > OTHER_NAMES_WALK {
            g.note = Some(format!(
                "a file host git trusts has another name (a hard link), and the walk for it stopped after {OTHER_NAMES_WALK} directories: a name beyond is writable inside"
            ));
            return;
        }
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() && devs.contains(&m.dev()) && !git_dirs.contains(&e.path()) {
                stack.push(e.path());
            } else if m.is_file() && m.nlink() > 1 && linked.contains(&(m.dev(), m.ino())) {
                trusted(g, e.path());
            }
        }
    }
}

/// What host git reads for one git dir: the configs found so far (the
/// user's, the git dir's, what they include), the last `core.hooksPath`.
struct Reads<'a> {
    top: &'a Path,
    user: &'a UserGit,
    configs: Vec<PathBuf>,
    hooks_path: Option<PathBuf>,
}

impl Reads<'_> {
    /// `~/`, absolute, or relative to `base` (none: from the environment,
    /// where git takes no relative path).
    fn expand(&self, v: &str, base: Option<&Path>) -> Option<PathBuf> {
        let p = match v.strip_prefix("~/") {
            Some(rest) => self.user.home.as_ref()?.join(rest),
            None if Path::new(v).is_absolute() => PathBuf::from(v),
            None => base?.join(v),
        };
        Some(super::lexical(&p))
    }

    /// One config's text: the files it includes (read next), the ignores
    /// and attributes files it names (a new line there hides a file from
    /// `git status` or chooses a driver), its `core.hooksPath`.
    fn config(&mut self, g: &mut Guard, text: &str, base: Option<&Path>) {
        let included = super::git::config_values(text, &|s, sub, k| {
            k == "path" && (s == "include" || (s == "includeif" && sub.is_some()))
        });
        let included: Vec<PathBuf> = included.iter().filter_map(|v| self.expand(v, base)).collect();
        for inc in included {
            if let Ok(real) = fs::canonicalize(&inc)
                && !self.configs.contains(&real)
            {
                self.configs.push(real);
            }
            seen(g, inc);
        }
        if let Some(hp) = core_key(text, "hookspath") {
            self.hooks_path = self.expand(&hp.to_string_lossy(), Some(self.top));
        }
        for key in ["excludesfile", "attributesfile"] {
            if let Some(f) =
                core_key(text, key).and_then(|v| self.expand(&v.to_string_lossy(), Some(self.top)))
            {
                seen(g, f);
            }
        }
        // The template a host `git init` or `git clone` copies hooks and
        // config from.
        let templates = super::git::config_values(text, &|s, sub, k| {
            s == "init" && sub.is_none() && k == "templatedir"
        });
        if let Some(t) = templates.last().and_then(|v| self.expand(v, base)) {
            seen(g, t);
        }
    }
}

/// A path host git reads as its own: read-only inside and its identity
/// looked at again at the end where it exists ([`Guard::trusted`]), held
/// aside at the end where it is missing now and made then
/// ([`Guard::absent`]).
fn seen(g: &mut Guard, p: PathBuf) {
    match fs::canonicalize(&p) {
        Ok(real) => {
            // A link on the way (`tools -> ../shared-tools`): the mount holds
            // the target, not the link, which the command can point elsewhere.
            if real != p && !g.ways.contains(&p) {
                g.ways.push(p);
            }
            trusted(g, real)
        }
        Err(_) => absent(g, p),
    }
}

fn trusted(g: &mut Guard, real: PathBuf) {
    g.protect(real.clone());
    if !g.trusted.contains(&real) {
        g.trusted.push(real);
    }
}

/// A path host git would read that is missing: named for the end.
fn absent(g: &mut Guard, p: PathBuf) {
    // Its existing part as it really is: a link on the way (`~/ln -> ws`)
    // must not hide that it lies in a writable root.
    let p = super::toolchains::canonical_prefix(&p);
    if !g.absent.contains(&p) {
        g.absent.push(p);
    }
}

/// Each submodule `.gitmodules` names whose directory holds no `.git`:
/// read-only inside (made empty on the host first where it is missing, as
/// `git clone` leaves it), so that no repository is planted where host git
/// would recurse into it as a submodule (`git status` runs its config).
/// Such submodules are initialised on the host.
fn uninitialised_submodules(g: &mut Guard, top: &Path) {
    let Some(text) = read_small(&top.join(".gitmodules")) else {
        return;
    };
    for line in text.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if !k.trim().eq_ignore_ascii_case("path") {
            continue;
        }
        let rel = Path::new(v.trim().trim_matches('"'));
        let plain = rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain || rel.as_os_str().is_empty() {
            continue;
        }
        let dir = top.join(rel);
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() && fs::symlink_metadata(dir.join(".git")).is_err() => g.protect(dir),
            Err(_) if fs::symlink_metadata(dir.parent().unwrap_or(top)).is_ok_and(|m| m.is_dir()) => {
                g.create.push(dir.clone());
                g.protect(dir);
            }
            _ => {}
        }
    }
}

/// Whether a repository uses git-lfs: its config names it, or its
/// top-level `.gitattributes` has an lfs filter.
fn uses_lfs(top: &Path, dir: &Path) -> bool {
    read_small(&dir.join("config")).is_some_and(|c| c.contains("lfs"))
        || read_small(&top.join(".gitattributes")).is_some_and(|a| a.contains("filter=lfs"))
}

/// A submodule's checkout (its git dir's `core.worktree`): the directory is
/// pinned and its `.git` file made read-only.
fn submodule_checkout(g: &mut Guard, gitdir: &Path) {
    let Some(wt) = read_small(&gitdir.join("config")).and_then(|t| core_key(&t, "worktree")) else {
        return;
    };
    let Ok(wt) = fs::canonicalize(gitdir.join(wt)) else {
        return;
    };
    let dot_git = wt.join(".git");
    if fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file()) {
        g.pin(wt);
        g.protect(dot_git);
    }
}

/// Git dirs under `modules/` (a submodule's name may hold slashes): a
/// directory with a HEAD file is one; others are walked into.
fn module_git_dirs(modules: &Path, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in subdirs(modules) {
        if d.join("HEAD").is_file() {
            out.push(d);
        } else if depth > 0 {
            out.extend(module_git_dirs(&d, depth - 1));
        }
        if out.len() > MAX_GIT_DIRS {
            break;
        }
    }
    out
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .take(MAX_GIT_DIRS + 1)
        .collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_checkout_with_a_submodule_and_a_worktree() {
        let d = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(d.path()).unwrap();
        let git = base.join("repo/.git");
        let sub = git.join("modules/lib/a");
        for p in [
            &git.join("hooks"),
            &sub.join("hooks"),
            &git.join("worktrees/w1"),
            &base.join("repo/lib/a"),
        ] {
            fs::create_dir_all(p).unwrap();
        }
        fs::write(git.join("config"), "[core]\n").unwrap();
        fs::write(sub.join("HEAD"), "ref: x\n").unwrap();
        fs::write(sub.join("config"), "[core]\n\tworktree = ../../../../lib/a\n").unwrap();
        fs::write(base.join("repo/lib/a/.git"), "gitdir: ../../.git/modules/lib/a\n").unwrap();
        fs::write(git.join("worktrees/w1/commondir"), "../..\n").unwrap();
        fs::write(git.join("worktrees/w1/gitdir"), "/x/.git\n").unwrap();
        let info = GitInfo {
            checkout: Checkout::Normal,
            top: Some(base.join("repo")),
            roots: vec![git.clone()],
            note: None,
        };
        fs::create_dir_all(git.join("objects/info")).unwrap();
        fs::create_dir_all(git.join("refs")).unwrap();
        let g = guard(&info);
        // Every git dir is laid out: the common dir, the worktree's admin
        // dir, the submodule's; the host's refs and objects bound in.
        let dirs: Vec<&PathBuf> = g.layouts.iter().map(|l| &l.dir).collect();
        for p in [&git, &git.join("worktrees/w1"), &sub] {
            assert!(dirs.contains(&p), "{p:?} not laid out: {dirs:?}");
        }
        let top = g.layouts.iter().find(|l| l.dir == git).unwrap();
        assert_eq!(top.shared, Vec::<PathBuf>::new());
        assert_eq!(top.own(), vec![git.join("objects"), git.clone()]);
        // The submodule's checkout is pinned, its .git file read-only; the
        // git dirs' own files are the sandbox's copies, nothing to protect.
        assert_eq!(g.pins, vec![base.join("repo/lib/a")]);
        assert_eq!(g.protect, vec![base.join("repo/lib/a/.git")]);
        assert_eq!(
            guard(&GitInfo {
                checkout: Checkout::None,
                top: None,
                roots: vec![],
                note: None
            }),
            Guard::default()
        );
    }
}
