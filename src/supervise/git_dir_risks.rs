//! What in a git dir host git would run or be misled by, read as host
//! git would read it but never through a link, a FIFO or a device: config
//! keys past a plain repository's, hooks, a pointer elsewhere, an operation
//! stopped half-way, an index or state git's rules refuse, objects it
//! could not read in time; and whether a repository changed since a
//! moment. The walk at the end (planted.rs) and the links leading out of
//! the roots (planted_links.rs) judge repositories by it.

use crate::sys::kernel as k;
use rustix::fs::FileType;
use std::path::Path;

/// The config keys a plain repository holds (`git init`, `git clone`,
/// `git remote add`, an upstream set), none of which names a program: any
/// other key, or a line that cannot be read, makes it one to hold aside
/// (an allow-list: git's list of keys that run something keeps growing).
const PLAIN: [&str; 22] = [
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.sharedrepository",
    "extensions.objectformat",
    "extensions.refstorage",
    "init.defaultbranch",
    "user.name",
    "user.email",
    "pull.rebase",
    "gc.auto",
    "receive.denycurrentbranch",
    "remote.*.url",
    "remote.*.fetch",
    "branch.*.remote",
    "branch.*.merge",
];

/// Config larger than this is not read: held aside.
const CONFIG_MAX: u64 = 1 << 20;

/// An index (or a shared part of one) larger than this is not read: held
/// aside (a repository of a million files has one of about 100 MiB).
const INDEX_MAX: u64 = 256 << 20;

/// Entries of a git dir looked at for links, FIFOs and devices; one with
/// more is held aside, not all of it having been looked at.
pub(super) const LOOKED: usize = 100_000;

/// What a path names itself (a link not followed), where it can be seen.
pub(super) fn lstat(p: &Path) -> Option<rustix::fs::Stat> {
    k::lstat(p).ok()
}

/// Whether anything is at `p` (a link, dangling or not, too).
pub(super) fn there(p: &Path) -> bool {
    lstat(p).is_some()
}

/// Whether `p` itself is of this type (a link not followed).
pub(super) fn is(p: &Path, t: FileType) -> bool {
    lstat(p).is_some_and(|m| FileType::from_raw_mode(m.st_mode) == t)
}

/// A directory's entries with their types (a type the directory does not
/// say asked of the entry itself), at most `most` of them (the command
/// may have made millions); None where it cannot be read.
fn listed(dir: &Path, most: usize) -> Option<Vec<(std::path::PathBuf, FileType)>> {
    use rustix::fs::{Mode, OFlags};
    let fd = k::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let all = k::dir_entries(&fd, most).ok()?;
    Some(
        all.into_iter()
            .map(|(name, t)| {
                let p = dir.join(name);
                let t = match t {
                    FileType::Unknown => lstat(&p).map_or(t, |m| FileType::from_raw_mode(m.st_mode)),
                    t => t,
                };
                (p, t)
            })
            .collect(),
    )
}

/// What host git would take config or hooks from in the repository's own
/// work tree (a relative `core.hooksPath` of the user's names `.githooks`
/// in every repository): there, the command's.
pub(super) fn work_tree_reads(dot_git: &Path, user: &crate::policy::UserGit) -> Vec<String> {
    let git_dir = pointed_dir(dot_git).unwrap_or_else(|| dot_git.to_path_buf());
    let top = match dot_git.parent() {
        Some(p) if dot_git.file_name().is_some_and(|n| n == ".git") => p,
        _ => dot_git,
    };
    crate::policy::config_reads(&git_dir, user)
        .into_iter()
        .filter(|p| p.starts_with(top) && !p.starts_with(&git_dir) && there(p))
        .map(|p| {
            format!(
                "{} (config or hooks host git takes from the work tree)",
                crate::lossy::shown(&p)
            )
        })
        .collect()
}

/// Whether a git dir (or `.git` file), anything in it, or what host git
/// takes config and hooks from outside it was made or changed since
/// `since` (its change time, which no call can set back): the git dir a
/// `.git` file names, whole, and what its config names outside it
/// (includes, `core.hooksPath` and the hooks in it, the ignores and
/// attributes files).
pub(super) fn repo_changed_since(
    dot_git: &Path,
    since: std::time::SystemTime,
    user: &crate::policy::UserGit,
) -> bool {
    let git_dir = pointed_dir(dot_git).unwrap_or_else(|| dot_git.to_path_buf());
    if changed(dot_git, since) || tree_changed_since(&git_dir, since) {
        return true;
    }
    crate::policy::config_reads(&git_dir, user)
        .into_iter()
        .any(|p| changed(&p, since) || entries(&p).iter().any(|e| changed(e, since)))
}

/// Whether anything in a git dir, at any depth, was made or changed since
/// `since`: a ref, a reflog or `objects/pack` replaced by a link, a ref of
/// a terabyte of holes, the submodules' and worktrees' git dirs inside.
/// Past LOOKED entries: taken as changed (not all looked at).
fn tree_changed_since(git_dir: &Path, since: std::time::SystemTime) -> bool {
    let mut dirs = vec![git_dir.to_path_buf()];
    let mut seen = 0;
    while let Some(d) = dirs.pop() {
        if changed(&d, since) {
            return true;
        }
        for (e, t) in listed(&d, LOOKED + 1 - seen.min(LOOKED)).unwrap_or_default() {
            seen += 1;
            if seen > LOOKED {
                return true;
            }
            match t {
                FileType::Directory => dirs.push(e),
                _ if changed(&e, since) => return true,
                _ => {}
            }
        }
    }
    false
}

/// Whether the file at `p` (not followed) was made or changed since
/// `since`: its change time, which no call can set back.
pub(super) fn changed(p: &Path, since: std::time::SystemTime) -> bool {
    lstat(p).is_some_and(|m| {
        let ctime = std::time::UNIX_EPOCH
            + std::time::Duration::new(
                m.st_ctime.max(0) as u64,
                m.st_ctime_nsec.clamp(0, 999_999_999) as u32,
            );
        ctime >= since
    })
}

/// The git dir a `.git` file names (`gitdir: PATH`, relative to it), read
/// by git's own rule for the pointer (policy/git.rs), never through a link.
fn pointed_dir(dot_git: &Path) -> Option<std::path::PathBuf> {
    let text = String::from_utf8(small_file(dot_git, 4096).ok()??).ok()?;
    let to = crate::policy::git::parse_pointer(&text, "gitdir: ")?;
    Some(dot_git.parent()?.join(to))
}

/// A directory's entries (none where it is no directory).
fn entries(dir: &Path) -> Vec<std::path::PathBuf> {
    listed(dir, LOOKED)
        .unwrap_or_default()
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

/// What in a planted `.git` names a program: config keys, hooks, a
/// pointer elsewhere.
pub(crate) fn risks(dot_git: &Path) -> Vec<String> {
    if is(dot_git, FileType::RegularFile) {
        return vec!["pointer to another git dir".into()];
    }
    let mut out = Vec::new();
    // A linked worktree's git dir takes config and hooks from its common dir.
    if there(&dot_git.join("commondir")) {
        out.push("commondir (another git dir's config and hooks)".into());
    }
    for config in ["config", "config.worktree"] {
        match config_bytes(&dot_git.join(config)) {
            Ok(None) => {}
            Ok(Some(t)) => out.extend(
                keys_not_plain(&String::from_utf8_lossy(&t))
                    .into_iter()
                    .map(|k| format!("{config} key {k}")),
            ),
            Err(()) => out.push(format!("{config} (not a small regular file qwrap can read)")),
        }
    }
    // Submodules' and worktrees' git dirs hold config and hooks of their
    // own; a plain repository has none.
    for sub in ["modules", "worktrees"] {
        if there(&dot_git.join(sub)) {
            out.push(format!("{sub}/ (git dirs of their own)"));
        }
    }
    out.extend(odd_entry(dot_git));
    out.extend(in_progress(dot_git));
    out.extend(index_risks(dot_git));
    out.extend(object_risks(dot_git));
    // Hooks only from a real directory: a link git resolves from the work
    // tree (`/proc/self/cwd/…`) leads elsewhere than it does here.
    let hooks = dot_git.join("hooks");
    let hooks_dir = lstat(&hooks).map(|m| FileType::from_raw_mode(m.st_mode) == FileType::Directory);
    if hooks_dir == Some(false) {
        out.push("hooks (not a directory)".into());
    }
    if let Some(rd) = (hooks_dir == Some(true))
        .then(|| listed(&hooks, LOOKED))
        .flatten()
    {
        let mut hooks: Vec<String> = rd
            .into_iter()
            .filter_map(|(p, _)| Some(p.file_name()?.to_string_lossy().into_owned()))
            .filter(|n| !n.ends_with(".sample"))
            .collect();
        hooks.sort();
        out.extend(hooks.into_iter().map(|h| format!("hook {h}")));
    }
    out
}

/// An operation stopped half-way: host git's `--continue` runs what its
/// state names (a todo list's `exec` lines, a merge strategy, which is a
/// program looked up in the work tree).
fn in_progress(dot_git: &Path) -> Vec<String> {
    let mut out: Vec<String> = ["rebase-merge", "rebase-apply", "sequencer"]
        .into_iter()
        .filter(|d| there(&dot_git.join(d)))
        .map(|d| format!("{d}/ (an operation in progress: its --continue runs what the state names)"))
        .collect();
    // `git notes merge --commit` writes whatever ref it names.
    if there(&dot_git.join("NOTES_MERGE_REF")) {
        out.push("NOTES_MERGE_REF (a notes merge in progress: its --commit writes the ref it names)".into());
    }
    out.extend(info_risks(dot_git));
    out
}

/// What `info/` holds that hides a change from host git: an exclude file
/// that names anything (`*` there hid every new file from `git status`),
/// grafts (another history under the same commits).
fn info_risks(dot_git: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let exclude = small_file(&dot_git.join("info/exclude"), 1 << 20);
    let names = |t: &[u8]| {
        t.split(|b| *b == b'\n')
            .any(|l| !l.trim_ascii().is_empty() && !l.starts_with(b"#"))
    };
    match exclude {
        Ok(Some(t)) if names(&t) => out.push("info/exclude (what it names never shows in git status)".into()),
        Err(()) => out.push("info/exclude (not a small regular file qwrap can read)".into()),
        _ => {}
    }
    if there(&dot_git.join("info/grafts")) {
        out.push("info/grafts (another history under the same commits)".into());
    }
    out
}

/// Objects from elsewhere (alternates), or a commit, tag or tree too large
/// for host git to read whole (a compressed one of 2 MB inflated to 2 GB
/// in a host `git status` at the top, through a gitlink to it).
/// The time host git has to look at the objects of one repository made
/// inside, and of all of them at the end of a run: past it, the rest are
/// held aside unread (many repositories each taking their time had delayed
/// the end, and each one's holding, by minutes).
const OBJECTS_EACH: std::time::Duration = std::time::Duration::from_secs(10);

const OBJECTS_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

/// When the end's look at objects runs out (set as it starts).
static OBJECTS_UNTIL: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);

/// What is left of the time for objects, at most OBJECTS_EACH; None once
/// it ran out.
/// The time for objects starts now, for every repository the walk at the
/// end looks at.
pub(super) fn objects_from_now() {
    *OBJECTS_UNTIL.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(std::time::Instant::now() + OBJECTS_WITHIN);
}

fn objects_time() -> Option<std::time::Duration> {
    time_left(
        *OBJECTS_UNTIL.lock().unwrap_or_else(|e| e.into_inner()),
        std::time::Instant::now(),
    )
}

/// The time left before `until` (OBJECTS_EACH without one), at most
/// OBJECTS_EACH; None once none is left.
fn time_left(until: Option<std::time::Instant>, now: std::time::Instant) -> Option<std::time::Duration> {
    let left = until.map_or(OBJECTS_EACH, |u| u.saturating_duration_since(now));
    Some(left.min(OBJECTS_EACH)).filter(|d| !d.is_zero())
}

fn object_risks(dot_git: &Path) -> Option<String> {
    let objects = dot_git.join("objects");
    if !is(&objects, FileType::Directory) {
        return None;
    }
    for alt in ["info/alternates", "info/http-alternates"] {
        if there(&objects.join(alt)) {
            return Some(format!("objects/{alt} (objects from elsewhere)"));
        }
    }
    let Some(within) = objects_time() else {
        return Some(format!(
            "objects (not looked at: the {}s qwrap gives the objects of all repositories made inside ran out)",
            OBJECTS_WITHIN.as_secs()
        ));
    };
    crate::git_receive::objects_too_large(&objects, within, head_id(dot_git).as_deref())
        .err()
        .map(|e| format!("objects ({})", crate::lossy::shown(e)))
}

/// The object a repository's HEAD names, read as git resolves it (a
/// branch's loose file, else its line in `packed-refs`), never by a name
/// with a component but a plain one; None where it names none yet.
fn head_id(dot_git: &Path) -> Option<String> {
    let is_id = |t: &str| matches!(t.len(), 40 | 64) && t.bytes().all(|b| b.is_ascii_hexdigit());
    let head = crate::policy::read_small(&dot_git.join("HEAD"))?;
    let head = head.trim_end();
    let Some(name) = head.strip_prefix("ref: ") else {
        return is_id(head).then(|| head.to_string());
    };
    let plain = Path::new(name)
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain || !name.starts_with("refs/") {
        return None;
    }
    if let Some(loose) = crate::policy::read_small(&dot_git.join(name)) {
        return Some(loose.trim_end().to_string()).filter(|t| is_id(t));
    }
    packed_id(&dot_git.join("packed-refs"), name).filter(|t| is_id(t))
}

/// The object `packed-refs` gives `name`, read line by line from a regular
/// file opened without blocking (a FIFO there is never waited on).
fn packed_id(path: &Path, name: &str) -> Option<String> {
    use rustix::fs::{Mode, OFlags};
    use std::io::BufRead;
    let fd = k::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let f = std::fs::File::from(fd);
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    // Lines of at most 4 KiB (an id, a space, a ref's name): a longer one
    // is passed over in pieces, never held whole.
    let mut r = std::io::BufReader::new(f);
    let mut line = Vec::new();
    let mut whole = true;
    loop {
        line.clear();
        if std::io::Read::take(&mut r, 4096)
            .read_until(b'\n', &mut line)
            .ok()?
            == 0
        {
            return None;
        }
        let ended = line.last() == Some(&b'\n');
        if std::mem::replace(&mut whole, ended) && ended {
            let text = String::from_utf8_lossy(&line[..line.len() - 1]);
            if let Some((id, n)) = text.split_once(' ')
                && n == name
            {
                return Some(id.to_string());
            }
        }
    }
}

/// The index and its shared parts, taken by git's own path rules as the
/// top repository's are: an entry named `../x`, `/x` or `.git/hooks/x`
/// is a file a host `git restore .` writes there.
fn index_risks(dot_git: &Path) -> Vec<String> {
    let Some(rd) = listed(dot_git, LOOKED) else {
        return Vec::new();
    };
    let mut names: Vec<_> = rd
        .into_iter()
        .filter_map(|(p, _)| p.file_name().map(|n| n.to_os_string()))
        .filter(|n| n == "index" || n.as_encoded_bytes().starts_with(b"sharedindex."))
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|n| {
            let why = match small_file(&dot_git.join(&n), INDEX_MAX) {
                Err(()) => "not a regular file qwrap can read whole".to_string(),
                Ok(None) => return None,
                Ok(Some(data)) => match crate::git_rules::vet(Path::new(&n), &data, None, true) {
                    Err(why) => crate::lossy::shown(why),
                    // What hides a change from host `git status`: the
                    // command's bits, in a repository no guard held.
                    Ok(_) if n == "index" && crate::git_rules::index_hides(&data, sparse(dot_git)) => {
                        "entries hidden from git status: assume-unchanged, skip-worktree or an fsmonitor's record"
                            .to_string()
                    }
                    Ok(_) => return None,
                },
            };
            Some(format!("{} ({why})", crate::lossy::shown(Path::new(&n))))
        })
        .collect()
}

/// What host git takes on trust in a repository made or changed inside
/// that stays, made harmless: its index's stat data and cache-tree
/// (rewritten as a carried index is: a forged cache-tree put a file the
/// user never saw into the user's next commit, and stat data hid an edit
/// from `git status`; git refreshes the one and makes the other again) and
/// its commit-graph (removed: a forged root tree id did the same; git
/// reads the commits themselves without it). What was done, said.
pub(super) fn disarm(dot_git: &Path) -> Vec<String> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let mut done = Vec::new();
    let Ok(dir) = k::open(
        dot_git,
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return done;
    };
    if let Ok(Some(data)) = small_file(&dot_git.join("index"), INDEX_MAX)
        && let Ok(crate::git_rules::Vetted::Rewritten(new)) =
            crate::git_rules::vet(Path::new("index"), &data, None, sparse(dot_git))
    {
        // Under git's own lock, then renamed over the index.
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if let Ok(lock) = k::openat(&dir, "index.lock", flags, Mode::from_raw_mode(0o644)) {
            let written = crate::sys::write_all(&lock, &new).is_ok();
            if written && k::renameat(&dir, "index.lock", "index").is_ok() {
                done.push("its index's stat data and cache-tree dropped".to_string());
            } else {
                let _ = k::unlinkat(&dir, "index.lock", AtFlags::empty());
            }
        }
    }
    let info = dot_git.join("objects/info");
    if is(&info, FileType::Directory) {
        let graph = is(&info.join("commit-graph"), FileType::RegularFile)
            && std::fs::remove_file(info.join("commit-graph")).is_ok();
        let graphs = is(&info.join("commit-graphs"), FileType::Directory)
            && std::fs::remove_dir_all(info.join("commit-graphs")).is_ok();
        if graph || graphs {
            done.push("its commit-graph removed".to_string());
        }
    }
    done
}

/// Whether a repository's checkout is sparse (skip-worktree is git's own
/// there): `core.sparseCheckout` in its config or `config.worktree`.
fn sparse(dot_git: &Path) -> bool {
    ["config", "config.worktree"]
        .iter()
        .filter_map(|c| crate::policy::read_small(&dot_git.join(c)))
        .any(|d| crate::policy::git::core_flag(&d, "sparsecheckout"))
}

/// Anything in a git dir but regular files and directories: a link, FIFO
/// or device host git would read through (a ref linked to /dev/zero grows
/// every host git that resolves it until it runs out of memory), or a
/// directory qwrap cannot read, or more than LOOKED entries.
/// Why git's rules refuse a ref, a reflog or a state file host git prints
/// (a branch named with a bidi mark, an escape sequence in a reflog), as
/// they refuse one from the sandbox's copy of a guarded repository.
fn state_refused(dot_git: &Path, p: &Path) -> Option<String> {
    let rel = p.strip_prefix(dot_git).ok()?;
    let first = rel.iter().next()?.to_str()?;
    let printed = ["refs", "logs"].contains(&first)
        || (rel.iter().count() == 1
            && (["HEAD", "packed-refs", "MERGE_MSG", "SQUASH_MSG"].contains(&first)
                || first.ends_with("_HEAD")
                || first.starts_with("BISECT_")));
    if !printed {
        return None;
    }
    // Host git reads each whole, into memory: a ref of a terabyte of holes
    // grew it without end. A ref is a line; a reflog or packed-refs of a
    // large repository is megabytes.
    let most = if ["logs", "packed-refs"].contains(&first) {
        crate::supervise::git_files::VET_MAX
    } else {
        1 << 20
    };
    match small_file(p, most) {
        Ok(Some(data)) => crate::git_rules::vet(rel, &data, None, false).err(),
        Ok(None) => None,
        Err(()) => Some(format!(
            "larger than {} MiB, which host git reads whole",
            most >> 20
        )),
    }
}

fn odd_entry(dot_git: &Path) -> Option<String> {
    let mut dirs = vec![dot_git.to_path_buf()];
    let mut seen = 0;
    while let Some(d) = dirs.pop() {
        let Some(rd) = listed(&d, LOOKED + 1 - seen.min(LOOKED)) else {
            return Some(format!(
                "{} (a directory qwrap cannot read)",
                shown_in(dot_git, &d)
            ));
        };
        for (p, t) in rd {
            seen += 1;
            if seen > LOOKED {
                return Some(format!("more than {LOOKED} entries (not all looked at)"));
            }
            // A git dir inside this one (`objects/.git`, a bare one in
            // `refs/`): git run there takes it for a repository (a HEAD
            // beside objects and refs, or beside a commondir).
            let name = p.file_name().unwrap_or_default();
            let beside = |n: &str| there(&d.join(n));
            let git_dir = name == "HEAD"
                && d != dot_git
                && ((beside("objects") && beside("refs")) || beside("commondir"));
            if git_dir || name == ".git" {
                return Some(format!("{} (a git dir inside it)", shown_in(dot_git, &p)));
            }
            match t {
                FileType::Directory => dirs.push(p),
                FileType::RegularFile => {
                    if let Some(why) = state_refused(dot_git, &p) {
                        return Some(format!("{} ({why})", shown_in(dot_git, &p)));
                    }
                }
                _ => {
                    return Some(format!(
                        "{} (a link, FIFO or device, which host git would read through)",
                        shown_in(dot_git, &p)
                    ));
                }
            }
        }
    }
    None
}

/// A path inside a git dir, as a risk names it.
fn shown_in(dot_git: &Path, p: &Path) -> String {
    match p.strip_prefix(dot_git) {
        Ok(rel) if rel.as_os_str().is_empty() => "the git dir itself".into(),
        Ok(rel) => crate::lossy::shown(rel),
        Err(_) => crate::lossy::shown(p),
    }
}

/// A git dir's config file: None where there is none, Err where it is not
/// a small regular file that reads (a FIFO would block, a link leads
/// elsewhere).
pub(super) fn config_bytes(path: &Path) -> Result<Option<Vec<u8>>, ()> {
    small_file(path, CONFIG_MAX)
}

/// A regular file of at most `max` bytes, read without following a link
/// or blocking on a FIFO: None where there is none, Err where it is not
/// such a file.
fn small_file(path: &Path, max: u64) -> Result<Option<Vec<u8>>, ()> {
    use rustix::fs::{Mode, OFlags};
    if !there(path) {
        return Ok(None);
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = k::open(path, flags, Mode::empty()).map_err(drop)?;
    let meta = k::fstat(&fd).map_err(drop)?;
    if FileType::from_raw_mode(meta.st_mode) != FileType::RegularFile || meta.st_size as u64 > max {
        return Err(());
    }
    let mut data = Vec::with_capacity(meta.st_size as usize);
    let mut buf = [0u8; 8192];
    loop {
        match k::read(&fd, &mut buf) {
            Ok(0) => break,
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return Err(()),
        }
        if data.len() as u64 > max {
            return Err(());
        }
    }
    Ok(Some(data))
}

/// The keys of a config text that a plain repository does not hold, and
/// each line that cannot be read as git reads it, by name.
fn keys_not_plain(text: &str) -> Vec<String> {
    let mut section = String::new();
    let mut sub = false;
    let mut out = Vec::new();
    let mut add = |k: String| {
        if !out.contains(&k) {
            out.push(k);
        }
    };
    for line in text.trim_start_matches('\u{feff}').lines() {
        let mut l = line.trim();
        if let Some(h) = l.strip_prefix('[') {
            let Some((h, rest)) = h.split_once(']') else {
                add("a section header qwrap cannot read".into());
                continue;
            };
            let h = h.trim();
            sub = h.contains([' ', '.', '"']);
            section = h.split([' ', '.', '"']).next().unwrap_or("").to_ascii_lowercase();
            // git reads a key on the header's line too.
            l = rest.trim();
        }
        if l.is_empty() || l.starts_with(['#', ';']) {
            continue;
        }
        let k = l
            .split_once('=')
            .map_or(l, |(k, _)| k)
            .trim()
            .to_ascii_lowercase();
        let name = if sub {
            format!("{section}.*.{k}")
        } else {
            format!("{section}.{k}")
        };
        let valid = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid || !PLAIN.contains(&name.as_str()) {
            add(name);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{keys_not_plain, risks};
    use crate::sys::fake::{self, Scripted};
    use rustix::io::Errno;

    /// A repository's risks as the kernel seam answers: every path there,
    /// each call answered as the fake scripts it.
    fn risks_answered(script: &[Scripted]) -> (Vec<String>, Vec<String>) {
        fake::start();
        for s in script {
            fake::script(s.clone());
        }
        let r = risks(std::path::Path::new("/w/sub/.git"));
        (r, fake::finish())
    }

    /// The stat answers on the way to the config's bytes: the git dir, its
    /// commondir (none: ENOENT), the config, the config opened (`fstat`).
    fn config_answers(config: u32, data: &[u8]) -> Vec<Scripted> {
        vec![
            Scripted::Mode(libc::S_IFDIR),
            Scripted::FailOn("newfstatat", "commondir", Errno::NOENT),
            Scripted::Mode(libc::S_IFREG),
            Scripted::Stat {
                mode: config,
                size: data.len() as i64,
                blocks: 1,
            },
            Scripted::Read(data.to_vec()),
        ]
    }

    #[test]
    fn a_config_is_read_through_the_seam_and_its_program_named() {
        let (r, calls) = risks_answered(&config_answers(libc::S_IFREG, b"[core]\n\tfsmonitor = ./x\n"));
        assert!(
            r.iter()
                .any(|x| x.starts_with("config key") && x.contains("fsmonitor")),
            "{r:?} {calls:?}"
        );
        // Nothing is read through a link or a FIFO: the open says so.
        assert!(
            calls
                .iter()
                .any(|c| c.starts_with("openat(\"/w/sub/.git/config\"")
                    && c.contains("NOFOLLOW")
                    && c.contains("NONBLOCK")),
            "{calls:?}"
        );
    }

    #[test]
    fn a_config_that_cannot_be_read_is_a_risk_not_a_pass() {
        let mut script = config_answers(libc::S_IFREG, b"[core]\n\tfsmonitor = ./x\n");
        script.push(Scripted::FailOn("openat", "/w/sub/.git/config\"", Errno::ACCESS));
        let (r, calls) = risks_answered(&script);
        assert!(
            r.iter()
                .any(|x| x == "config (not a small regular file qwrap can read)"),
            "{r:?} {calls:?}"
        );
        assert!(!r.iter().any(|x| x.contains("fsmonitor")), "{r:?}");
    }

    #[test]
    fn a_config_that_is_no_regular_file_once_opened_is_a_risk() {
        let (r, _) = risks_answered(&config_answers(libc::S_IFIFO, b"[core]\n\tfsmonitor = ./x\n"));
        assert!(
            r.iter()
                .any(|x| x == "config (not a small regular file qwrap can read)"),
            "{r:?}"
        );
        assert!(!r.iter().any(|x| x.contains("fsmonitor")), "{r:?}");
    }

    #[test]
    fn a_git_dir_that_cannot_be_listed_is_a_risk_not_a_pass() {
        let (r, _) = risks_answered(&[Scripted::FailOn(
            "openat",
            "/w/sub/.git\", OFlags(DIRECTORY",
            Errno::ACCESS,
        )]);
        assert!(
            r.iter()
                .any(|x| x == "the git dir itself (a directory qwrap cannot read)"),
            "{r:?}"
        );
    }

    #[test]
    fn a_git_dir_that_borrows_another_is_a_risk() {
        let d = tempfile::tempdir().unwrap();
        let g = d.path().join(".git");
        std::fs::create_dir_all(g.join("hooks")).unwrap();
        std::fs::write(g.join("hooks/pre-commit.sample"), "").unwrap();
        assert!(risks(&g).is_empty(), "{:?}", risks(&g));
        std::fs::write(g.join("commondir"), "/elsewhere\n").unwrap();
        std::fs::write(g.join("hooks/post-checkout"), "").unwrap();
        assert_eq!(
            risks(&g),
            vec![
                "commondir (another git dir's config and hooks)",
                "hook post-checkout"
            ]
        );
        std::fs::write(d.path().join("ptr"), "gitdir: x\n").unwrap();
        assert_eq!(risks(&d.path().join("ptr")), vec!["pointer to another git dir"]);
        // A ref that is a link (to a device: host git reads it without end).
        let p = d.path().join("p/.git");
        std::fs::create_dir_all(p.join("refs/heads")).unwrap();
        std::fs::write(p.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(risks(&p).is_empty());
        std::os::unix::fs::symlink("/dev/zero", p.join("refs/heads/main")).unwrap();
        assert_eq!(
            risks(&p),
            vec!["refs/heads/main (a link, FIFO or device, which host git would read through)"]
        );
    }

    #[test]
    fn the_ends_time_for_objects_is_shared_and_runs_out() {
        use std::time::{Duration, Instant};
        let now = Instant::now();
        assert_eq!(super::time_left(None, now), Some(super::OBJECTS_EACH));
        assert_eq!(
            super::time_left(Some(now + Duration::from_secs(60)), now),
            Some(super::OBJECTS_EACH)
        );
        assert_eq!(
            super::time_left(Some(now + Duration::from_secs(3)), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(super::time_left(Some(now), now), None);
        assert_eq!(super::time_left(Some(now), now + Duration::from_secs(1)), None);
    }

    #[test]
    fn only_a_plain_repositorys_keys_pass() {
        let init = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://x/y\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n";
        assert!(keys_not_plain(init).is_empty(), "{:?}", keys_not_plain(init));
        let text = "[core]\n\tfsmonitor = touch x\n\tbare = false\n[filter \"lfs\"]\n\tsmudge = x\n[alias]\n\tpwn = !sh -c x\n[includeIf \"gitdir:/x\"]\n\tpath = /tmp/c\n[gpg \"ssh\"]\n\tdefaultKeyCommand = x\n";
        assert_eq!(
            keys_not_plain(text),
            vec![
                "core.fsmonitor",
                "filter.*.smudge",
                "alias.pwn",
                "includeif.*.path",
                "gpg.*.defaultkeycommand"
            ]
        );
        // A key on the header's line, after a byte-order mark, in old
        // subsection syntax; a header cut short.
        assert_eq!(
            keys_not_plain("\u{feff}[core] fsmonitor = x\n"),
            vec!["core.fsmonitor"]
        );
        assert_eq!(
            keys_not_plain("[remote.o]\n\tuploadpack = x\n"),
            vec!["remote.*.uploadpack"]
        );
        assert_eq!(
            keys_not_plain("[core\n"),
            vec!["a section header qwrap cannot read"]
        );
    }

    #[test]
    fn a_head_is_resolved_as_git_resolves_it_and_never_through_dot_dot() {
        let d = tempfile::tempdir().unwrap();
        let g = d.path();
        let id = "0123456789abcdef0123456789abcdef01234567";
        std::fs::create_dir_all(g.join("refs/heads")).unwrap();
        std::fs::write(g.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(super::head_id(g), None, "a branch yet to be born");
        let long = "y".repeat(10_000);
        std::fs::write(
            g.join("packed-refs"),
            format!("# pack-refs with: peeled\n{long}\n{id} refs/heads/main\n"),
        )
        .unwrap();
        assert_eq!(super::head_id(g).as_deref(), Some(id), "packed, past a long line");
        let loose = "89abcdef0123456789abcdef0123456789abcdef";
        std::fs::write(g.join("refs/heads/main"), format!("{loose}\n")).unwrap();
        assert_eq!(super::head_id(g).as_deref(), Some(loose), "the loose file first");
        std::fs::write(g.join("HEAD"), "ref: refs/../../outside\n").unwrap();
        assert_eq!(super::head_id(g), None);
        std::fs::write(g.join("HEAD"), format!("{id}\n")).unwrap();
        assert_eq!(super::head_id(g).as_deref(), Some(id), "detached");
    }
}
