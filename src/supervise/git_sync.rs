//! The git guard's live half, run by the warden outside the sandbox. Inside,
//! the top level of each git dir (and its `objects/info`) is the sandbox's
//! own small tmpfs; `refs/`, `logs/` and `objects/` are the host's. Git's
//! own files at those levels are copied both ways as they change:
//!
//! - only names on git's allow-list ([`synced`]), only regular files and
//!   directories, read with O_NOFOLLOW|O_NONBLOCK relative to descriptors
//!   the warden holds (a link or FIFO made inside is never followed, never
//!   copied, never blocks);
//! - every write takes git's lock on the side it writes (`NAME.lock`,
//!   created exclusively, then renamed into place), so that neither side's
//!   git is torn; a lock held there defers the write;
//! - each name's last copied content is remembered: a side that changed it
//!   since is copied to the other; both sides changed it: the host's wins,
//!   and qwrap says so.
//!
//! Everything else the sandbox writes at those levels (`commondir`,
//! `gitdir`, `config`, `config.worktree`, `hooks/`, `info/`,
//! `objects/info/alternates`, any new name) stays in its tmpfs and is gone
//! with it. The config, hooks and info the sandbox starts with are copies of
//! the host's.

use super::git_files::{
    self, Data, State, VET_MAX, copy_in, dir_flags, make_dirs, names, put, put_data, remove, state,
};
use super::{git_checkouts, git_objects};
use crate::git_rules as git_vet;
use crate::git_rules::Vetted;
use crate::git_rules::names::REF_DIRS;
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::fs::Mode;
use rustix::io::Errno;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why the main checkout's own files stay the host's.
const MAIN_CHECKOUT: &str =
    "the main checkout's own, outside the writable roots (a linked worktree shares only refs with it)";
/// Why a linked worktree's own files stay the host's.
const OUTSIDE_WORKTREE: &str = "a linked worktree's own, its work tree outside the writable roots";
/// Why a ref stays the host's.
const CHECKED_OUT: &str = "what a work tree outside the writable roots has checked out or comes back to (its branch, the one its bisect or rebase returns to), the stash (every checkout's), or a main checkout's there (its bisect, rebase and worktree refs): host git there would take the change for the user's";

const CURRENT_BRANCH: &str = "it removes the branch the host's HEAD names, its reflog or HEAD's (git deletes no branch checked out, nor does a push: receive.denyDeleteCurrent); host git would take every file for one staged anew, and the history for none";

/// The objects known present on the host kept at most (about 100 bytes
/// each).
const PRESENT_MOST: usize = 200_000;

const NAMES_HELD: &str = "it names what a work tree outside the writable roots has checked out or comes back to (a symbolic ref, a bisect's start, a rebase's branch or its update-ref orders): host git here would move it or check it out";

/// Copied in once, never back: what chooses code or another git dir.
const COPIED_IN: [&str; 6] = [
    "config",
    "config.worktree",
    "commondir",
    "gitdir",
    "hooks",
    "info",
];

/// Which level of a git dir an own directory stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Top,
    /// `objects/`: nothing copied; what is new imported (git_objects.rs).
    Objects,
}

/// What is copied both ways at `rel` (a path below the level), if anything.
pub(super) use crate::git_rules::names::Shape;

/// Whether `rel` is git's own data at this level (git_rules/names.rs).
pub(super) fn synced(kind: Kind, rel: &Path) -> Option<Shape> {
    match kind {
        Kind::Top => crate::git_rules::names::git_data(rel),
        Kind::Objects => None,
    }
}

const LINK: &str = "made inside as a link, FIFO or device";

/// The content last copied, by name: the base both sides are compared to.
const DIR_BASE: u64 = u64::MAX;

/// A host git dir level and the sandbox's own copy of it.
pub(super) struct Pair {
    pub(super) host_path: PathBuf,
    host: OwnedFd,
    /// The host's git dir as it was when the sandbox started, held (O_PATH,
    /// inherited by the host git the warden runs): host git is given
    /// `/proc/self/fd/N`, so that a path the command renames and puts a
    /// link in the place of (`mv lib lib2; ln -s elsewhere lib`) cannot
    /// lead the objects it imports elsewhere.
    pinned: OwnedFd,
    /// Its work tree lies outside the writable roots (a linked worktree's
    /// main checkout): only the refs are shared, its HEAD, index and state
    /// stay the host's.
    foreign: bool,
    /// Refs (and their logs) a checkout outside the writable roots has
    /// checked out or comes back to, the stash, and a main checkout's own
    /// refs there: the host's stay (git_checkouts.rs).
    held: Vec<PathBuf>,
    /// The refs no symbolic ref made inside may name (a HEAD too): those
    /// the common dir's checkouts outside the roots hold. A linked
    /// worktree's own git dir takes them from its common dir.
    held_targets: Vec<PathBuf>,
    /// A linked worktree's own git dir, its work tree outside the
    /// writable roots: nothing of it is carried out.
    frozen: bool,
    own: OwnedFd,
    kind: Kind,
    base: HashMap<PathBuf, u64>,
    /// The host's checkout is sparse: skip-worktree is git's own there.
    sparse: bool,
    /// Objects and packs brought to the host, or refused, already.
    imported: git_objects::Imported,
    /// Refs whose object the host lacked, since when.
    missing: HashMap<PathBuf, Instant>,
    /// Objects the host was found to have, asked once for a directory's
    /// new refs together (one look-up each had taken 4,000 tags 12 s).
    present: HashSet<String>,
    /// Files the warden rewrote on their way out: (the sandbox's hash, the
    /// host's copy's).
    rewritten: HashMap<PathBuf, (u64, u64)>,
    /// Directories copied in whole at the start: watched, not walked again.
    seeded: HashSet<PathBuf>,
}

impl Pair {
    /// `own`: the sandbox's directory, as the executor opened it inside.
    pub(super) fn new(host_path: PathBuf, own: OwnedFd, kind: Kind) -> Result<Pair, Errno> {
        let host = crate::sys::kernel::open(&host_path, dir_flags(), Mode::empty())?;
        let git_dir = match kind {
            Kind::Objects => host_path.parent().unwrap_or(Path::new("/")),
            Kind::Top => host_path.as_path(),
        };
        // Without O_CLOEXEC: the host git the warden runs reaches it.
        let pinned = crate::sys::kernel::open(
            git_dir,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
            Mode::empty(),
        )?;
        let sparse = ["config", "config.worktree"]
            .iter()
            .any(|n| match state(host.as_fd(), Path::new(n)) {
                State::File { data, .. } => data.bytes(VET_MAX).is_ok_and(|d| {
                    crate::policy::git::core_flag(&String::from_utf8_lossy(&d), "sparsecheckout")
                }),
                _ => false,
            });
        Ok(Pair {
            host_path,
            host,
            pinned,
            foreign: false,
            held: Vec::new(),
            held_targets: Vec::new(),
            frozen: false,
            own,
            kind,
            base: HashMap::new(),
            sparse,
            imported: git_objects::Imported::default(),
            missing: HashMap::new(),
            present: HashSet::new(),
            seeded: HashSet::new(),
            rewritten: HashMap::new(),
        })
    }

    /// The same pair, its work tree outside the writable roots or not;
    /// what checkouts outside `roots` keep held.
    pub(super) fn foreign(mut self, foreign: bool, roots: &[PathBuf]) -> Pair {
        self.foreign = foreign;
        if self.kind == Kind::Top && !roots.is_empty() {
            let worktree = self.host_path.parent().is_some_and(|p| p.ends_with("worktrees"));
            self.frozen =
                worktree && git_checkouts::work_tree_outside(self.host.as_fd(), Path::new(""), roots);
            self.held = git_checkouts::held_refs(self.host.as_fd(), foreign, roots);
            self.held_targets = if worktree {
                git_checkouts::held_by_common_dir(&self.host_path, roots)
            } else {
                self.held.clone()
            };
        }
        self
    }

    /// Why what the sandbox did at `rel` stays inside: the main checkout's
    /// own, a worktree's outside the roots, a ref one of them holds (or a
    /// directory that holds one).
    fn stays_the_hosts(&self, rel: &Path) -> Option<&'static str> {
        if self.frozen {
            Some(OUTSIDE_WORKTREE)
        } else if self.foreign && !Self::shared_with_worktrees(rel) {
            Some(MAIN_CHECKOUT)
        } else if crate::policy::git::touches_held(&self.held, rel) {
            Some(CHECKED_OUT)
        } else {
            None
        }
    }

    /// A directory made on one side, or removed on one side since the last
    /// look (`host_has`: the host's side has it).
    fn dir_made_or_removed(
        &mut self,
        rel: &Path,
        base: Option<u64>,
        host_has: bool,
        below: &mut Vec<PathBuf>,
    ) -> Done {
        // Made or removed on the host's side.
        if (base == Some(DIR_BASE)) == host_has
            && let Some(why) = self.stays_the_hosts(rel)
        {
            return Done::Refused(why.into());
        }
        let r = if base == Some(DIR_BASE) && host_has {
            // Removed inside: `refs/` stays (without it a git dir is none
            // to host git, which went on to a parent's repository), and
            // below it each name goes as git removes one, with its checks;
            // the directory once empty.
            if self.kind == Kind::Top && rel == Path::new("refs") {
                return Done::Refused(
                    "removed inside: git never removes it, and host git without it takes another repository for this one"
                        .into(),
                );
            }
            if let Some(kept) = self.each_removed_below(rel) {
                return kept;
            }
            self.base.remove(rel);
            remove(self.host.as_fd(), rel, true)
        } else if base == Some(DIR_BASE) {
            // Removed on the host since the last look.
            self.base.remove(rel);
            remove(self.own.as_fd(), rel, true)
        } else if !host_has && !git_vet::dir_ok(rel) {
            return Done::Refused("not a name git gives a ref".into());
        } else {
            self.base.insert(rel.to_path_buf(), DIR_BASE);
            below.push(rel.to_path_buf());
            make_dirs(self.root(host_has), rel).map(drop)
        };
        r.map_or_else(Done::from, |()| Done::Copied)
    }

    /// Each name below the host's `rel`, removed inside, reconciled now as
    /// removed one by one (a ref checked out stays); None where none is
    /// left, else why one is (the first refusal, or a lock held).
    fn each_removed_below(&mut self, rel: &Path) -> Option<Done> {
        let (_, done) = self.reconcile(rel);
        if names(self.host.as_fd(), rel).is_empty() {
            return None;
        }
        let kept = done
            .into_iter()
            .map(|(_, d)| d)
            .find(|d| matches!(d, Done::Refused(_) | Done::Deferred));
        Some(kept.unwrap_or(Done::Nothing))
    }

    /// The objects the new loose refs among `names` in `rel_dir` name,
    /// looked up on the host in one go: those it has are `present`.
    fn ask_for_refs(&mut self, rel_dir: &Path, names: &BTreeSet<OsString>) {
        let mut ids = Vec::new();
        for n in names {
            let rel = rel_dir.join(n);
            let State::File { data, .. } = state(self.own.as_fd(), &rel) else {
                continue;
            };
            let Ok(d) = data.bytes(128) else { continue };
            let id = d.trim_ascii_end();
            if crate::git_rules::is_oid(id) {
                ids.push(String::from_utf8_lossy(id).into_owned());
            }
        }
        ids.retain(|id| !self.present.contains(id));
        // Its memory bounded: past PRESENT_MOST it starts again.
        if self.present.len() + ids.len() > PRESENT_MOST {
            self.present.clear();
        }
        if ids.len() > 1 {
            self.present
                .extend(crate::git_receive::present(&self.git_dir(), ids));
        }
    }

    /// Whether `rel` is a branch a host HEAD names, its reflog, or HEAD's
    /// reflog (git removes none of them).
    fn host_head_names(&self, rel: &Path) -> bool {
        rel == Path::new("logs/HEAD")
            || self
                .host_branches()
                .iter()
                .any(|b| rel == b || rel == Path::new("logs").join(b))
    }

    /// Whether a `packed-refs` made inside deletes a branch a host HEAD
    /// names: its line gone, and no loose file inside holds it.
    fn drops_host_branch(&self, data: &[u8], host: Option<&[u8]>) -> bool {
        self.host_branches().iter().any(|b| {
            let loose = matches!(state(self.own.as_fd(), b), State::File { .. });
            !loose
                && b.to_str()
                    .is_some_and(|n| crate::policy::git::packed_drops(n, data, host))
        })
    }

    /// The branches the host's HEADs name: this git dir's and each of its
    /// linked worktrees' (policy::git::checked_out).
    fn host_branches(&self) -> Vec<PathBuf> {
        let read = |h: &Path| match state(self.host.as_fd(), h) {
            State::File { data, .. } => Some(String::from_utf8_lossy(&data.bytes(4096).ok()?).into_owned()),
            _ => None,
        };
        crate::policy::git::checked_out(&read, names(self.host.as_fd(), Path::new("worktrees")))
    }

    /// What a main checkout outside the roots shares with its linked
    /// worktrees: refs, their logs and `packed-refs`.
    fn shared_with_worktrees(rel: &Path) -> bool {
        rel.starts_with("refs") || rel.starts_with("logs/refs") || rel == Path::new("packed-refs")
    }

    /// The host's git dir, held since the start: `/proc/self/fd/N`, the
    /// same in the warden and in the host git it runs.
    fn git_dir(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.pinned.as_raw_fd()))
    }

    fn root(&self, own: bool) -> BorrowedFd<'_> {
        if own { self.own.as_fd() } else { self.host.as_fd() }
    }

    /// Copies in what the sandbox starts with and is never copied back;
    /// objects start with the alternates that name the host's.
    pub(super) fn populate(&mut self) {
        if self.kind == Kind::Objects {
            let host_alternates = match state(self.host.as_fd(), Path::new("info/alternates")) {
                State::File { data, .. } => data.bytes(VET_MAX).ok().map(|d| d.into_owned()),
                _ => None,
            };
            let git_dir = self.host_path.parent().unwrap_or(Path::new("/"));
            let text = git_objects::alternates(git_dir, host_alternates.as_deref());
            let _ = put(self.own.as_fd(), Path::new("info/alternates"), &text, 0o644);
            return;
        }
        for n in COPIED_IN {
            copy_in(self.host.as_fd(), self.own.as_fd(), Path::new(n), 0);
        }
        for d in REF_DIRS {
            let host = git_files::open_dir(self.host.as_fd(), Path::new(d));
            let own = make_dirs(self.own.as_fd(), Path::new(d));
            if let (Ok(host), Ok(own)) = (host, own) {
                self.seed(&host, &own, Path::new(d), 0);
            }
        }
    }

    /// Copies a tree of refs or reflogs in before the command starts (its
    /// own side empty, nobody else writing there: no locks), each file
    /// remembered as copied; the directories seeded are watched without
    /// being walked again (`seeded`). Each level is walked from the
    /// descriptors of the one above (a walk from the top for every name
    /// cost a git dir of a few refs about 0.5 ms at start-up).
    fn seed(&mut self, host: &OwnedFd, own: &OwnedFd, rel: &Path, depth: usize) {
        self.base.insert(rel.to_path_buf(), DIR_BASE);
        self.seeded.insert(rel.to_path_buf());
        for n in git_files::names_in(host.as_fd()) {
            if n.as_encoded_bytes().ends_with(b".lock") {
                continue;
            }
            let child = rel.join(&n);
            match git_files::seed_file(host.as_fd(), own.as_fd(), &n) {
                Some(git_files::Seeded::File(hash)) => {
                    self.base.insert(child, hash);
                }
                Some(git_files::Seeded::Dir(sub)) if depth < 16 => {
                    if let Ok(own_sub) = git_files::make_dir_at(own.as_fd(), &n) {
                        self.seed(&sub, &own_sub, &child, depth + 1);
                    }
                }
                _ => {}
            }
        }
    }
}

impl From<Errno> for Done {
    fn from(e: Errno) -> Done {
        if e == Errno::AGAIN {
            Done::Deferred
        } else {
            Done::Nothing
        }
    }
}

/// What one reconcile of a name did (for the report and the retries).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Done {
    Nothing,
    Copied,
    /// Both sides changed it: the host's was kept.
    Conflict,
    /// A lock on the side to write is held: try again later.
    Deferred,
    /// Its object is not on the host yet: the objects looked at again,
    /// then this.
    Missing,
    /// Made inside as something that is never copied (a link, a FIFO),
    /// or what git on the host must not trust: why.
    Refused(String),
}

impl Pair {
    /// Brings one directory level into agreement; returns the directories
    /// below it to look at too and what was done, by name.
    pub(super) fn reconcile(&mut self, rel_dir: &Path) -> (Vec<PathBuf>, Vec<(PathBuf, Done)>) {
        if self.kind == Kind::Objects {
            return self.import(rel_dir);
        }
        let mut all: BTreeSet<OsString> = BTreeSet::new();
        all.extend(names(self.host.as_fd(), rel_dir));
        all.extend(names(self.own.as_fd(), rel_dir));
        if rel_dir.starts_with("refs") {
            self.ask_for_refs(rel_dir, &all);
        }
        let mut below = Vec::new();
        let mut done = Vec::new();
        for n in all {
            let rel = rel_dir.join(&n);
            let Some(shape) = synced(self.kind, &rel) else {
                continue;
            };
            let d = self.one(&rel, shape, &mut below);
            if d != Done::Nothing {
                done.push((rel, d));
            }
        }
        (below, done)
    }

    fn one(&mut self, rel: &Path, shape: Shape, below: &mut Vec<PathBuf>) -> Done {
        let h = state(self.host.as_fd(), rel);
        let s = state(self.own.as_fd(), rel);
        let base = self.base.get(rel).copied();
        // Directories only where git keeps them (a state dir and below).
        let dir_ok = shape == Shape::Dir || rel.iter().count() > 1;
        let result = match (&h, &s) {
            (_, State::Other) => return Done::Refused(LINK.into()),
            (_, State::Dir) if !dir_ok => return Done::Refused(LINK.into()),
            (State::Other, _) => return Done::Nothing,
            (State::Dir, _) if !dir_ok => return Done::Nothing,
            (State::Dir, State::Dir) => {
                self.base.insert(rel.to_path_buf(), DIR_BASE);
                if !self.seeded.contains(rel) {
                    below.push(rel.to_path_buf());
                }
                return Done::Nothing;
            }
            (State::Dir, State::Absent) | (State::Absent, State::Dir) => {
                return self.dir_made_or_removed(rel, base, matches!(h, State::Dir), below);
            }
            (State::File { hash: hh, .. }, State::File { hash: sh, .. }) if hh == sh => {
                self.base.insert(rel.to_path_buf(), *hh);
                return Done::Nothing;
            }
            (
                State::File {
                    hash: hh,
                    data: hd,
                    mode: hm,
                },
                State::File {
                    hash: sh,
                    data: sd,
                    mode: sm,
                },
            ) => {
                // A copy the warden rewrote on its way out (an index
                // without what hides changes): the two sides agree.
                let rewrite = self.rewritten.get(rel).copied();
                if rewrite == Some((*sh, *hh)) {
                    return Done::Nothing;
                }
                if base == Some(*hh) {
                    return self.vetted_out(rel, sd, *sm, *sh, Some(hd));
                } else {
                    let r = self.copy(true, rel, hd, *hm, *hh);
                    let own_unchanged = base == Some(*sh) || rewrite.is_some_and(|(o, _)| o == *sh);
                    self.rewritten.remove(rel);
                    if !own_unchanged && r.is_ok() {
                        return Done::Conflict;
                    }
                    r
                }
            }
            (State::File { hash, data, mode }, State::Absent) => {
                if base == Some(*hash) {
                    // Without HEAD a git dir is none to host git, which goes
                    // on to a parent's repository (its `reset --hard`
                    // reverted a file there); git never removes HEAD or the
                    // index itself.
                    if let Some(why) = self.stays_the_hosts(rel) {
                        return Done::Refused(why.into());
                    }
                    if self.kind == Kind::Top && (rel == Path::new("HEAD") || rel == Path::new("index")) {
                        return Done::Refused(
                            "removed inside: git never removes it, and host git without it takes another repository for this one"
                                .into(),
                        );
                    }
                    if self.kind == Kind::Top && self.host_head_names(rel) {
                        return Done::Refused(CURRENT_BRANCH.into());
                    }
                    // `packed-refs` removed: every ref packed there goes.
                    if self.kind == Kind::Top && rel == Path::new("packed-refs") {
                        let host = data.bytes(VET_MAX).ok();
                        if crate::policy::git::packed_moves_held(&self.held, b"", host.as_deref()) {
                            return Done::Refused(CHECKED_OUT.into());
                        }
                        if self.drops_host_branch(b"", host.as_deref()) {
                            return Done::Refused(CURRENT_BRANCH.into());
                        }
                    }
                    if self.packed_inside_only(rel) {
                        // Packed inside (`git pack-refs`), and that
                        // packed-refs not the host's (yet, or refused):
                        // the host keeps its loose ref, or loses the ref.
                        return Done::Nothing;
                    }
                    self.base.remove(rel);
                    remove(self.host.as_fd(), rel, false)
                } else {
                    self.copy(true, rel, data, *mode, *hash)
                }
            }
            (State::Absent, State::File { hash, data, mode }) => {
                if base == Some(*hash) {
                    self.base.remove(rel);
                    remove(self.own.as_fd(), rel, false)
                } else {
                    return self.vetted_out(rel, data, *mode, *hash, None);
                }
            }
            (State::Absent, State::Absent) => {
                self.base.remove(rel);
                return Done::Nothing;
            }
            _ => return Done::Nothing,
        };
        result.map_or_else(Done::from, |()| Done::Copied)
    }

    /// Whether the loose ref `rel` removed inside lives on in the
    /// sandbox's own `packed-refs` with a line the host's lacks.
    fn packed_inside_only(&self, rel: &Path) -> bool {
        if self.kind != Kind::Top || !rel.starts_with("refs") {
            return false;
        }
        let line_of = |root: BorrowedFd<'_>| -> Option<Vec<u8>> {
            let State::File { data, .. } = state(root, Path::new("packed-refs")) else {
                return None;
            };
            let bytes = data.bytes(VET_MAX).ok()?;
            let name = rel.as_os_str().as_encoded_bytes();
            bytes
                .split(|c| *c == b'\n')
                .find(|l| l.len() > name.len() && l.ends_with(name) && l[l.len() - name.len() - 1] == b' ')
                .map(<[u8]>::to_vec)
        };
        match line_of(self.own.as_fd()) {
            Some(own) => line_of(self.host.as_fd()).as_ref() != Some(&own),
            None => false,
        }
    }

    /// Objects: the subdirectories to watch (at the top level), and what
    /// is new brought to the host.
    fn import(&mut self, rel_dir: &Path) -> (Vec<PathBuf>, Vec<(PathBuf, Done)>) {
        let below = if rel_dir.as_os_str().is_empty() {
            names(self.own.as_fd(), rel_dir)
                .into_iter()
                .filter(|n| n.len() == 2 || n == "pack")
                .map(PathBuf::from)
                .collect()
        } else {
            Vec::new()
        };
        let git_dir = self.git_dir();
        let done = git_objects::import(
            &git_dir,
            self.pinned.as_fd(),
            self.own.as_fd(),
            &mut self.imported,
        )
        .into_iter()
        .map(|(rel, r)| (rel, r.map_or_else(Done::Refused, |()| Done::Copied)))
        .collect();
        (below, done)
    }

    /// A ref's object that the host lacks (refused as a push would be, or
    /// not brought over) keeps the ref, or its log, from moving there: the
    /// object a ref names, those of the lines a reflog gained.
    fn names_missing_object(&self, rel: &Path, data: &[u8], host: Option<&[u8]>) -> bool {
        let text = String::from_utf8_lossy(data);
        let oids: Vec<&str> = if rel.starts_with("logs") {
            let old = host.filter(|h| data.starts_with(h)).map_or(0, <[u8]>::len);
            let new = std::str::from_utf8(&data[old..]).unwrap_or("");
            new.lines()
                .flat_map(|l| l.split(' ').take(2))
                .filter(|o| o.bytes().any(|b| b != b'0'))
                .collect()
        } else if rel == Path::new("packed-refs") {
            // The objects of the lines the host's copy does not have.
            let old = host.map(String::from_utf8_lossy).unwrap_or_default();
            let old: HashSet<&str> = old.lines().collect();
            let new: Vec<String> = text
                .lines()
                .filter(|l| !l.starts_with('#') && !old.contains(l))
                .filter_map(|l| l.trim_start_matches('^').split(' ').next().map(str::to_string))
                .collect();
            let new: Vec<&str> = new.iter().map(String::as_str).collect();
            return !new.is_empty()
                && git_objects::missing_on_host(&self.git_dir(), self.host.as_fd(), &new).is_some();
        } else if rel.starts_with("refs") || rel == Path::new("HEAD") {
            let v = text.trim_end();
            match v.strip_prefix("ref: ") {
                // A branch made inside, not on the host yet: HEAD waits
                // for it, so that host git never sees an unborn branch.
                Some(target) => {
                    // A linked worktree's branches are its common dir's:
                    // host git says (loose, packed, or through commondir).
                    let here = matches!(state(self.root(false), Path::new(target)), State::File { .. });
                    return !here && !git_objects::ref_on_host(&self.git_dir(), target);
                }
                None => vec![v],
            }
        } else {
            vec![]
        };
        let oids: Vec<&str> = oids.into_iter().filter(|o| !self.present.contains(*o)).collect();
        !oids.is_empty() && git_objects::missing_on_host(&self.git_dir(), self.host.as_fd(), &oids).is_some()
    }

    /// Copies the sandbox's content to the host once vetted; a rewritten
    /// copy (an index without what hides changes) comes back in next.
    fn vetted_out(&mut self, rel: &Path, content: &Data, mode: u32, hash: u64, host: Option<&Data>) -> Done {
        if let Some(why) = self.stays_the_hosts(rel) {
            return Done::Refused(why.into());
        }
        if self.kind != Kind::Top || !git_vet::vetted(rel) {
            return self
                .copy(false, rel, content, mode, hash)
                .map_or_else(Done::from, |()| Done::Copied);
        }
        // What is vetted is read whole, up to VET_MAX.
        let data = match content.bytes(VET_MAX) {
            Ok(d) => d,
            Err(why) => return Done::Refused(why),
        };
        let host = host.and_then(|h| h.bytes(VET_MAX).ok());
        let (data, host) = (&data[..], host.as_deref());
        if rel == Path::new("packed-refs") && crate::policy::git::packed_moves_held(&self.held, data, host) {
            return Done::Refused(CHECKED_OUT.into());
        }
        if rel == Path::new("packed-refs") && self.kind == Kind::Top && self.drops_host_branch(data, host) {
            return Done::Refused(CURRENT_BRANCH.into());
        }
        // HEAD's reflog and a checked-out branch's only grow: emptied or cut
        // inside (and the branch rewound), the user's commits were
        // reachable from nothing, and a host `git gc` pruned them.
        if self.kind == Kind::Top
            && rel.starts_with("logs")
            && self.host_head_names(rel)
            && host.is_some_and(|h| !data.starts_with(h))
        {
            return Done::Refused(CURRENT_BRANCH.into());
        }
        if crate::policy::git::names_held(&self.held_targets, data)
            || crate::policy::git::state_names_held(&self.held_targets, rel, data)
        {
            return Done::Refused(NAMES_HELD.into());
        }
        let vetted = git_vet::vet(rel, data, host, self.sparse);
        // The index's new entries: each object there, as the type git
        // takes it for (host git commits them as they are).
        let index_missing = match vetted.is_ok() && rel == Path::new("index") {
            true => {
                match crate::git_receive::objects_as(&self.git_dir(), &git_vet::index_objects(data, host)) {
                    Ok(all) => !all,
                    Err(why) => return Done::Refused(why),
                }
            }
            false => false,
        };
        if vetted.is_ok() && (index_missing || self.names_missing_object(rel, data, host)) {
            // Its object may be on its way (an event not yet read): waited
            // for, up to two seconds.
            let since = *self.missing.entry(rel.to_path_buf()).or_insert_with(Instant::now);
            if since.elapsed() < Duration::from_secs(2) {
                return Done::Missing;
            }
            return Done::Refused(
                "it names an object the host does not have (refused as a push would be)".into(),
            );
        }
        self.missing.remove(rel);
        let r = match vetted {
            Err(why) => return Done::Refused(why),
            Ok(Vetted::Keep) => self.copy(false, rel, content, mode, hash),
            // The base stays the sandbox's: the host's rewritten copy is
            // then the newer side, and is copied back in.
            // The sandbox keeps its own; the pair of the two is
            // remembered, so that neither is copied over the other.
            Ok(Vetted::Rewritten(new)) => put(self.host.as_fd(), rel, &new, mode).map(|()| {
                let written = git_files::hash(&new);
                self.base.insert(rel.to_path_buf(), written);
                self.rewritten.insert(rel.to_path_buf(), (hash, written));
            }),
        };
        r.map_or_else(Done::from, |()| Done::Copied)
    }

    /// Copies one side's content to the other (`to_own`: host to sandbox).
    fn copy(&mut self, to_own: bool, rel: &Path, data: &Data, mode: u32, hash: u64) -> Result<(), Errno> {
        put_data(self.root(to_own), rel, data, mode)?;
        self.base.insert(rel.to_path_buf(), hash);
        Ok(())
    }
}

/// Every pair, the inotify descriptor that watches both sides, and what is
/// left to look at.
pub(super) struct GitSync {
    pairs: Vec<Pair>,
    inotify: OwnedFd,
    watches: HashMap<i32, (usize, PathBuf)>,
    /// The directories watched, by pair (a lookup, not a scan of `watches`).
    watched: HashSet<(usize, PathBuf)>,
    dirty: BTreeSet<(usize, PathBuf)>,
    report: Option<OwnedFd>,
    said: BTreeSet<PathBuf>,
    /// Refusals not said yet: git writes some files in steps (empty, then
    /// whole), so only a refusal that stands at the end is said.
    refused: std::collections::BTreeMap<(usize, PathBuf), String>,
    /// git-lfs's stores (the host's) and the pair whose own top holds the
    /// sandbox's; the objects looked at already.
    lfs: Vec<(usize, PathBuf)>,
    lfs_done: HashSet<OsString>,
}

impl GitSync {
    /// Starts watching; the first reconcile copies the host's files in.
    pub(super) fn new(pairs: Vec<Pair>, report: Option<OwnedFd>) -> Result<GitSync, Errno> {
        let fd = crate::sys::kernel::inotify_init()?;
        let mut s = GitSync {
            pairs,
            inotify: fd,
            watches: HashMap::new(),
            watched: HashSet::new(),
            dirty: BTreeSet::new(),
            report,
            said: BTreeSet::new(),
            refused: std::collections::BTreeMap::new(),
            lfs: Vec::new(),
            lfs_done: HashSet::new(),
        };
        for i in 0..s.pairs.len() {
            s.pairs[i].populate();
            s.watch(i, Path::new(""));
            let seeded: Vec<PathBuf> = s.pairs[i].seeded.iter().cloned().collect();
            for d in seeded {
                s.watch(i, &d);
            }
            s.dirty.insert((i, PathBuf::new()));
        }
        s.flush();
        // From now on a seeded directory is walked like any other.
        for p in &mut s.pairs {
            p.seeded.clear();
        }
        Ok(s)
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.inotify.as_fd()
    }

    /// Carries git-lfs's objects made inside to these stores of the
    /// host's (lfs_carry.rs).
    pub(super) fn carry_lfs_to(&mut self, stores: &[PathBuf]) {
        for store in stores {
            let top = (0..self.pairs.len()).find(|&i| {
                self.pairs[i].kind == Kind::Top && Some(self.pairs[i].host_path.as_path()) == store.parent()
            });
            if let Some(i) = top {
                self.lfs.push((i, store.clone()));
            }
        }
    }

    /// What is new in the sandbox's lfs stores, to the host's.
    fn carry_lfs(&mut self) {
        for k in 0..self.lfs.len() {
            let (i, store) = self.lfs[k].clone();
            // The store beside the git dir held since the start.
            let store = match store.file_name() {
                Some(n) => self.pairs[i].git_dir().join(n),
                None => store,
            };
            let out = super::lfs_carry::carry(self.pairs[i].root(true), &store, &mut self.lfs_done);
            for (rel, r) in out {
                if let Err(why) = r {
                    self.say(
                        i,
                        &Path::new("lfs").join(rel),
                        &format!("not copied to the host: {why}"),
                    );
                }
            }
        }
    }

    /// Watches a directory level on both sides.
    fn watch(&mut self, i: usize, rel: &Path) {
        use rustix::fs::inotify::WatchFlags as W;
        let mask = W::CLOSE_WRITE
            | W::MOVED_TO
            | W::MOVED_FROM
            | W::CREATE
            | W::DELETE
            | W::ONLYDIR
            | W::DONT_FOLLOW;
        self.watched.insert((i, rel.to_path_buf()));
        for own in [false, true] {
            let fd = self.pairs[i].root(own).as_raw_fd();
            let path = Path::new(&format!("/proc/self/fd/{fd}")).join(rel);
            if let Ok(wd) = crate::sys::kernel::inotify_add_watch(&self.inotify, &path, mask) {
                self.watches.insert(wd, (i, rel.to_path_buf()));
            }
        }
    }

    /// Takes what inotify says changed.
    pub(super) fn on_events(&mut self) {
        let mut marks = Vec::new();
        for (wd, mask) in crate::sys::kernel::inotify_events(&self.inotify).unwrap_or_default() {
            if mask.contains(rustix::fs::inotify::ReadFlags::QUEUE_OVERFLOW) {
                marks.extend((0..self.pairs.len()).map(|i| (i, PathBuf::new())));
            } else if let Some(w) = self.watches.get(&wd) {
                marks.push(w.clone());
            }
        }
        self.dirty.extend(marks);
        self.flush();
    }

    /// How long the warden's poll may wait: a write that waits for a git
    /// lock is tried again soon; otherwise until something happens.
    pub(super) fn retry(&self) -> Option<std::time::Duration> {
        self.waiting().then_some(std::time::Duration::from_millis(50))
    }

    /// After a poll: the events read when `ready`, else the deferred
    /// writes tried again.
    pub(super) fn tend(&mut self, ready: bool) {
        if ready {
            self.on_events();
        } else if self.waiting() {
            self.flush();
        }
    }

    /// Whether a write waits for a lock.
    pub(super) fn waiting(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Reconciles what is dirty; what waits for a lock stays dirty.
    pub(super) fn flush(&mut self) {
        let mut again = BTreeSet::new();
        // A ref whose object was missing is looked at once more at once,
        // after the objects, then only on the next retry.
        let mut retried = BTreeSet::new();
        while let Some(d) = self.dirty.pop_first() {
            // The command has ended: the rest waits for the last copies,
            // after the repositories made inside are held aside (4,000
            // tags made at the end, each looked up on the host, had kept
            // a planted one live for 13 s).
            if crate::git_receive::imports_halted() {
                self.dirty.insert(d);
                break;
            }
            let (i, rel) = d;
            let (below, done) = self.pairs[i].reconcile(&rel);
            for b in below {
                if !self.watched.contains(&(i, b.clone())) {
                    self.watch(i, &b);
                }
                self.dirty.insert((i, b));
            }
            for (name, what) in done {
                match what {
                    Done::Deferred => {
                        again.insert((i, rel.clone()));
                    }
                    Done::Missing => {
                        let objects = (0..self.pairs.len()).filter(|j| self.pairs[*j].kind == Kind::Objects);
                        let objects: Vec<(usize, PathBuf)> = objects.map(|j| (j, PathBuf::new())).collect();
                        if retried.insert((i, rel.clone())) {
                            self.dirty.insert((i, rel.clone()));
                            self.dirty.extend(objects);
                        } else {
                            again.insert((i, rel.clone()));
                            again.extend(objects);
                        }
                    }
                    Done::Conflict => {
                        self.refused.remove(&(i, name.clone()));
                        self.say(
                            i,
                            &name,
                            "changed on the host and inside at once: the host's kept",
                        )
                    }
                    Done::Refused(why) => {
                        self.refused.insert((i, name), why);
                    }
                    Done::Copied | Done::Nothing => {
                        self.refused.remove(&(i, name));
                    }
                }
            }
        }
        self.dirty.extend(again);
        // git writes its index or a ref after git-lfs stored an object: the
        // object goes out with it.
        self.carry_lfs();
    }

    /// Reconciles everything, for the last time (the sandbox is gone):
    /// waits up to two seconds for locks held on the host.
    pub(super) fn last(&mut self) {
        // Imports were halted since the command ended: what waits for an
        // object waits afresh.
        for p in &mut self.pairs {
            p.missing.clear();
        }
        self.on_events();
        for i in 0..self.pairs.len() {
            self.dirty.insert((i, PathBuf::new()));
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        self.flush();
        while self.waiting() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            self.flush();
        }
        self.carry_lfs();
        for ((i, name), why) in std::mem::take(&mut self.refused) {
            self.say(i, &name, &format!("not copied to the host: {why}"));
        }
        self.say_what_was_not_kept();
    }

    /// The config and hooks the sandbox changed in its own copy end with
    /// it: says so, and how to keep them.
    fn say_what_was_not_kept(&mut self) {
        for i in 0..self.pairs.len() {
            if self.pairs[i].kind != Kind::Top {
                continue;
            }
            let p = &self.pairs[i];
            let read = |own: bool, rel: &str| match state(p.root(own), Path::new(rel)) {
                State::File { hash, .. } => Some(hash),
                _ => None,
            };
            let mut changed = Vec::new();
            for c in ["config", "config.worktree"] {
                if read(true, c) != read(false, c) {
                    changed.push(c.to_string());
                }
            }
            for n in names(p.own.as_fd(), Path::new("info")) {
                let rel = format!("info/{}", n.to_string_lossy());
                if read(true, &rel) != read(false, &rel) {
                    changed.push(rel);
                }
            }
            for n in names(p.own.as_fd(), Path::new("hooks")) {
                let rel = format!("hooks/{}", n.to_string_lossy());
                if read(true, &rel) != read(false, &rel) {
                    changed.push(rel);
                }
            }
            for c in changed {
                let what = if c.starts_with("config") {
                    "changed inside and not kept (run the same git config on the host, or use --allow-git-config)"
                } else if c.starts_with("info/") {
                    "changed inside and not kept (git's own info: excludes, attributes; change it on the host)"
                } else {
                    "written inside and not kept (install the hook on the host, or use --allow-git-config)"
                };
                self.say(i, Path::new(&c), what);
            }
        }
    }

    fn say(&mut self, i: usize, rel: &Path, what: &str) {
        let path = self.pairs[i].host_path.join(rel);
        if !self.said.insert(path.clone()) {
            return;
        }
        if let Some(r) = &self.report {
            let line = format!("qwrap: git: {}: {what}\n", crate::lossy::shown(&path));
            let _ = crate::sys::write_all(r, line.as_bytes());
        }
    }
}

#[cfg(test)]
#[path = "git_sync_tests.rs"]
mod tests;
