//! Host git's receiving path: objects made inside brought into a host
//! repository as a push's are, by host git itself (`unpack-objects
//! --strict`, `index-pack --strict`), so that git hashes and checks each
//! one again. The warden's live import and `review apply` both take it.

use crate::git_rules::COMMIT_MAX;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Fewer new objects than this are unpacked loose, as `receive.unpackLimit`.
mod history;
mod tags;

const UNPACK_LIMIT: usize = 100;

/// Host git on `git_dir`, with nothing of the caller's git environment.
pub fn git(git_dir: &Path) -> Command {
    let mut c = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.as_bytes().starts_with(b"GIT_") {
            c.env_remove(k);
        }
    }
    c.arg("--git-dir").arg(git_dir).env("GIT_TERMINAL_PROMPT", "0");
    c.stderr(Stdio::piped());
    c
}

/// The heap host git may take when it works on the command's objects:
/// the sandbox's `--memory` (at least [`HELD_FLOOR`]), where it has one.
static HELD_DATA: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
/// Below this, host git cannot index even a small pack.
const HELD_FLOOR: u64 = 64 << 20;

/// Host git run on the command's objects from now on has its heap held
/// to `bytes` (the sandbox's `--memory`): those objects are the command's
/// work, but host git runs outside the sandbox's groups (a 4 MB pack of
/// deltas made `index-pack` take 2 GiB under `--memory 256M`).
pub fn hold_to_memory(bytes: u64) {
    let _ = HELD_DATA.set(bytes.max(HELD_FLOOR));
}

/// Host git started on the command's objects: at nice 19 (it works
/// outside the sandbox's groups and must not take the host's CPU from the
/// user), its heap held where the sandbox's memory is (`hold_to_memory`),
/// both before its exec; where they cannot be set, it does not run.
fn spawn_held(c: &mut Command) -> Result<std::process::Child, String> {
    crate::sys::held_before_exec(c, Some(19), HELD_DATA.get().copied());
    c.spawn()
        .map_err(|e| format!("git could not run at nice 19 with its memory held: {e}"))
}

/// Host git to run on the command's objects elsewhere (`review diff`'s
/// `git log`): at nice 19, its heap held to `heap`, both before its exec.
pub fn hold(c: &mut Command, heap: u64) {
    crate::sys::held_before_exec(c, Some(19), Some(heap));
}

/// Host git looking ids up in the host's own objects: its cost follows
/// the ids', so it runs at the caller's priority (at nice 19 on a busy
/// machine 20,000 look-ups outlasted their 10 s, and an index went
/// uncopied), its heap held all the same.
fn spawn_looking(c: &mut Command) -> Result<std::process::Child, String> {
    crate::sys::held_before_exec(c, None, HELD_DATA.get().copied());
    c.spawn()
        .map_err(|e| format!("git could not run with its memory held: {e}"))
}

/// How a `batch` runs host git.
#[derive(Clone, Copy, PartialEq)]
enum Run {
    /// On the command's objects, brought in: the end's halt can stop it.
    Import,
    /// On the command's objects, looked at where they lie.
    Held,
    /// Ids looked up in the host's own objects.
    Lookup,
}

/// Host git's runs on the command's objects (imports), which the end of
/// the run stops while it looks at the repositories made inside.
struct Imports {
    halted: bool,
    running: Vec<u32>,
}

static IMPORTS: std::sync::Mutex<Imports> = std::sync::Mutex::new(Imports {
    halted: false,
    running: Vec::new(),
});

/// Why an import did not run, or stopped: taken up again after the end's
/// look at the repositories made inside.
pub const HALTED: &str = "stopped while the end of the run looked at the repositories made inside";

fn imports() -> std::sync::MutexGuard<'static, Imports> {
    IMPORTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long an import running when the command ends may go on before it
/// is stopped: most take milliseconds (the last commit's objects), and one
/// stopped midway leaves git's temporary file in the host's objects.
const HALT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The command has ended: no import starts until `resume_imports`, and
/// one still running after HALT_GRACE is stopped (a pack of deltas had
/// kept host `index-pack` busy for minutes, and the repositories made
/// inside live until the end looks at them). Called from a thread of its
/// own: it waits.
pub fn halt_imports() {
    imports().halted = true;
    let until = std::time::Instant::now() + HALT_GRACE;
    while std::time::Instant::now() < until {
        if imports().running.is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let i = imports();
    // Taken up again meanwhile: what runs now is the end's own.
    if !i.halted {
        return;
    }
    for pid in &i.running {
        if let Some(pid) = rustix::process::Pid::from_raw(*pid as i32) {
            let _ = crate::sys::kernel::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// Whether the command has ended and the end's look at the repositories
/// made inside has not yet come: what else waits may wait for it.
pub fn imports_halted() -> bool {
    imports().halted
}

/// Imports may run again.
pub fn resume_imports() {
    imports().halted = false;
}

/// An import started, unless imports are halted (under the lock that
/// halting takes, so that none slips between).
fn spawn_import(c: &mut Command) -> Result<std::process::Child, String> {
    let mut i = imports();
    if i.halted {
        return Err(HALTED.into());
    }
    let child = spawn_held(c)?;
    i.running.push(child.id());
    Ok(child)
}

/// An import's child is done (reaped): HALTED where it stopped because
/// imports were halted meanwhile.
fn import_done(pid: u32, ok: bool) -> Result<(), String> {
    let mut i = imports();
    i.running.retain(|p| *p != pid);
    if !ok && i.halted {
        Err(HALTED.into())
    } else {
        Ok(())
    }
}

/// An import's child waited for.
fn waited(child: std::process::Child) -> Result<(), String> {
    let pid = child.id();
    let o = child.wait_with_output();
    import_done(pid, o.as_ref().is_ok_and(|o| o.status.success()))?;
    said(o)
}

/// A git run's outcome, with git's last line where it refused.
pub fn said(o: std::io::Result<std::process::Output>) -> Result<(), String> {
    match o {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "refused by git as a push would be: {}",
            String::from_utf8_lossy(&o.stderr)
                .trim()
                .lines()
                .last()
                .unwrap_or("")
        )),
        Err(e) => Err(format!("git could not run: {e}")),
    }
}

/// A pack on `pack`, indexed as a pushed one would be: into a quarantine
/// beside the host's objects (as receive-pack's), its objects' sizes
/// looked at there, then moved in.
pub fn index_pack(git_dir: &Path, pack: Stdio) -> Result<(), String> {
    let q = Incoming::new(git_dir)?;
    let mut c = git(git_dir);
    let o = c
        .args(["index-pack", "--strict", "--stdin", "--fix-thin"])
        .env("GIT_OBJECT_DIRECTORY", &q.path)
        .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", git_dir.join("objects"))
        .stdin(pack)
        .stdout(Stdio::null());
    waited(spawn_import(o)?)?;
    too_large(git_dir, &q.path, None, IMPORT_WITHIN, true)?;
    q.move_in(git_dir)
}

/// The largest tree: a directory of a million entries takes about 40 MiB.
const TREE_MAX: u64 = 64 << 20;
/// The commits and tags host git is given in one run, in all: `git status`
/// reads every commit its branch is ahead by and keeps each whole (2,001
/// commits of 4 MB, each a delta of the last, held a host `git status` for
/// a minute at 8 GB). About a million ordinary commits.
const COMMITS_TOTAL: u64 = 256 << 20;
/// What imports have brought of them so far in this run.
static COMMITS_SEEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// How long host git may take to read the sizes of what is imported.
const IMPORT_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

/// Refuses where a commit, tag or tree among the objects of `objects`
/// (those named, else all of them) is larger than host git should read
/// whole. git reads each object's size from its header (a delta's from
/// the delta's), inflating nothing more; the receiving command then checks
/// that the object holds what its header says. Refuses too where git
/// cannot read them, or has not within `within`.
fn too_large(
    git_dir: &Path,
    objects: &Path,
    ids: Option<&[String]>,
    within: std::time::Duration,
    import: bool,
) -> Result<(), String> {
    let mut c = git(git_dir);
    c.args([
        "cat-file",
        "--batch-check=%(objecttype) %(objectsize) %(objectname) %(deltabase)",
    ])
    .env("GIT_OBJECT_DIRECTORY", objects)
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    if ids.is_none() {
        c.args(["--batch-all-objects", "--unordered"]);
    }
    let ids = ids.unwrap_or_default().to_vec();
    let deadline = std::time::Instant::now() + within;
    let late = format!("refused: its objects were not all looked at within {within:?}");
    let run = if import { Run::Import } else { Run::Held };
    let (status, found) = batch(&mut c, ids, deadline, run, &late, move |out| {
        first_too_large(out, import)
    })?;
    let (commits, tags) = found?;
    if !status.success() {
        return Err("refused: git could not read its objects' sizes".into());
    }
    if import && !commits.is_empty() {
        history_walk_bounded(git_dir, objects, commits, deadline)?;
    }
    if import && !tags.is_empty() {
        tags_nest_bounded(git_dir, objects, tags, deadline)?;
    }
    Ok(())
}

/// `git cat-file` given `ids` on its input (by a thread of its own) and
/// its output read by `read` (by another) as it comes: git answers as it
/// reads, and a full pipe each way would hold both. Past `deadline` it is
/// killed and `late` is the refusal. An import's (`Run::Import`) is one the
/// end's halt can stop.
fn batch<T: Send + 'static>(
    c: &mut Command,
    ids: Vec<String>,
    deadline: std::time::Instant,
    run: Run,
    late: &str,
    read: impl FnOnce(std::process::ChildStdout) -> T + Send + 'static,
) -> Result<(std::process::ExitStatus, T), String> {
    let import = run == Run::Import;
    let mut child = match run {
        Run::Import => spawn_import(c)?,
        Run::Held => spawn_held(c)?,
        Run::Lookup => spawn_looking(c)?,
    };
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        std::thread::spawn(move || {
            for id in ids {
                let _ = writeln!(stdin, "{id}");
            }
        });
    }
    let stdout = child.stdout.take().ok_or("no pipe")?;
    let reader = std::thread::spawn(move || read(stdout));
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                if import {
                    import_done(pid, false)?;
                }
                return Err(late.to_string());
            }
        }
    };
    if import {
        import_done(pid, status.success())?;
    }
    let read = reader
        .join()
        .map_err(|_| "refused: git's answer could not be read")?;
    Ok((status, read))
}

/// The first of `oids` host git lacks (None: it has them all); one not
/// answered in time counts as lacking.
pub fn first_missing(git_dir: &Path, oids: &[String]) -> Option<String> {
    let Ok(answer) = batch_check(git_dir, "%(objectname)", oids.to_vec()) else {
        return oids.first().cloned();
    };
    let mut lines = answer.lines();
    oids.iter()
        .find(|oid| lines.next() != Some(oid.as_str()))
        .cloned()
}

/// Those of `ids` host git has (none where it could not say in time).
pub fn present(git_dir: &Path, ids: Vec<String>) -> Vec<String> {
    let Ok(answer) = batch_check(git_dir, "%(objectname) %(objecttype)", ids) else {
        return Vec::new();
    };
    answer
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, t)| *t != "missing")
        .map(|(id, _)| id.to_string())
        .collect()
}

/// Whether host git has each of `want` as the type named: Ok(true) where
/// all are there, Ok(false) where one is missing, Err where one is of
/// another type (or git could not say in time).
pub fn objects_as(git_dir: &Path, want: &[(String, &'static str)]) -> Result<bool, String> {
    if want.is_empty() {
        return Ok(true);
    }
    let ids: Vec<String> = want.iter().map(|(id, _)| id.clone()).collect();
    let answer = batch_check(git_dir, "%(objectname) %(objecttype)", ids)?;
    let mut all = true;
    let mut lines = answer.lines();
    for (id, ty) in want {
        match lines.next().and_then(|l| l.split_once(' ')) {
            Some((_, "missing")) => all = false,
            Some((_, t)) if t == *ty => {}
            Some((_, t)) => return Err(format!("an entry names {id}, a {t}, as a {ty}")),
            None => return Err(LOOKED_UP_LATE.into()),
        }
    }
    Ok(all)
}

const LOOKED_UP_LATE: &str = "its objects were not all looked up in time";

/// Host git's answer, in `format`, for each of `ids`, asked of one `git
/// cat-file --batch-check` fed while its answer is read (written first,
/// 10,000 ids of a `packed-refs` filled both pipes, and the warden waited
/// on git for ever), within 10 s.
fn batch_check(git_dir: &Path, format: &str, ids: Vec<String>) -> Result<String, String> {
    let mut c = git(git_dir);
    c.arg("cat-file")
        .arg(format!("--batch-check={format}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (_, answer) = batch(&mut c, ids, deadline, Run::Lookup, LOOKED_UP_LATE, |mut out| {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    })?;
    Ok(answer)
}

/// Refuses where host git's walk of the new commits would look at more
/// than history::AREA_MOST queue entries in all (history.rs), or where
/// they cannot be read by `deadline`.
fn history_walk_bounded(
    git_dir: &Path,
    objects: &Path,
    commits: Vec<String>,
    deadline: std::time::Instant,
) -> Result<(), String> {
    let mut c = git(git_dir);
    c.args(["cat-file", "--batch"])
        .env("GIT_OBJECT_DIRECTORY", objects)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let late = "refused: its commits were not all read in time";
    let (_, history) = batch(&mut c, commits, deadline, Run::Import, late, read_history)?;
    let history = history?;
    match history.area() {
        Some(_) => Ok(()),
        None => Err(format!(
            "refused: its history keeps so many lines open at once (a commit of thousands of parents, a wide tree of merges) that host git's walk of it would look at more than {} commits waiting in all",
            history::AREA_MOST
        )),
    }
}

/// Refuses where a new tag heads a chain of more than tags::DEPTH_MOST
/// tags (tags.rs), the host's tags below it counted: read a link a round
/// (the host's objects an alternate), the rounds as many as the bound.
fn tags_nest_bounded(
    git_dir: &Path,
    objects: &Path,
    mut ask: Vec<String>,
    deadline: std::time::Instant,
) -> Result<(), String> {
    let mut tags = tags::Tags::default();
    for _ in 0..=tags::DEPTH_MOST {
        if ask.is_empty() {
            break;
        }
        let mut c = git(git_dir);
        c.args(["cat-file", "--batch"])
            .env("GIT_OBJECT_DIRECTORY", objects)
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", git_dir.join("objects"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let late = "refused: its tags were not all read in time";
        let (_, read) = batch(&mut c, ask, deadline, Run::Import, late, move |out| {
            read_tags(out, &mut tags).map(|()| tags)
        })?;
        tags = read?;
        if tags.too_deep() {
            break;
        }
        ask = tags.unread();
    }
    if tags.too_deep() || !tags.unread().is_empty() {
        return Err(format!(
            "refused: a tag of a tag of … more than {} deep (host git names every link below each ref: a chain of 10,000 held `git log --decorate` at 2.35 GB)",
            tags::DEPTH_MOST
        ));
    }
    Ok(())
}

/// The objects `cat-file --batch` gives, each a tag at most COMMIT_MAX
/// (one buffer at a time); `ID missing` for one the host lacks too.
fn read_tags(out: std::process::ChildStdout, tags: &mut tags::Tags) -> Result<(), String> {
    use std::io::{BufRead, Read};
    let mut r = std::io::BufReader::new(out);
    let mut head = String::new();
    loop {
        head.clear();
        if r.read_line(&mut head).map_err(|e| e.to_string())? == 0 {
            return Ok(());
        }
        let mut w = head.trim_end().split(' ');
        let (Some(id), kind, size) = (w.next(), w.next(), w.next()) else {
            return Err("refused: git said something of a tag that is no object".into());
        };
        let size = size.and_then(|s| s.parse::<u64>().ok());
        let Some(size) = size.filter(|n| *n <= COMMIT_MAX) else {
            tags.add(id, None);
            if kind == Some("missing") {
                continue;
            }
            return Err(format!("refused: {id} is no tag host git reads whole"));
        };
        let mut text = vec![0u8; size as usize + 1];
        r.read_exact(&mut text).map_err(|e| e.to_string())?;
        tags.add(id, (kind == Some("tag")).then_some(&text[..size as usize]));
    }
}

/// The commits `cat-file --batch` gives: `ID TYPE SIZE`, the object, a
/// line end; each read whole (each at most COMMIT_MAX, all of them at most
/// COMMITS_TOTAL, bounded already).
fn read_history(out: std::process::ChildStdout) -> Result<history::History, String> {
    use std::io::{BufRead, Read};
    let mut r = std::io::BufReader::new(out);
    let mut h = history::History::default();
    let mut head = String::new();
    loop {
        head.clear();
        if r.read_line(&mut head).map_err(|e| e.to_string())? == 0 {
            return Ok(h);
        }
        let mut w = head.trim_end().split(' ');
        let (Some(id), Some(kind), Some(size)) = (w.next(), w.next(), w.next()) else {
            return Err("refused: git said something of a commit that is no object".into());
        };
        let size: u64 = size
            .parse()
            .map_err(|_| "refused: a commit's size is no number")?;
        if kind != "commit" || size > COMMIT_MAX {
            return Err(format!("refused: {id} is no commit host git reads whole"));
        }
        let mut text = vec![0u8; size as usize + 1];
        r.read_exact(&mut text).map_err(|e| e.to_string())?;
        h.add(id, &text[..size as usize]);
    }
}

/// The first line of `cat-file --batch-check`'s that names a commit, tag
/// or tree over its bound, read as they come; where the objects are
/// imported (`counted`), or the one that takes the run's commits and tags
/// past COMMITS_TOTAL; then, where reading every commit, tag and tree
/// through its chain of deltas would cost more than CHAINS_TOTAL.
fn first_too_large(
    out: std::process::ChildStdout,
    counted: bool,
) -> Result<(Vec<String>, Vec<String>), String> {
    use std::io::BufRead;
    use std::sync::atomic::Ordering;
    let mut chains = Chains::default();
    let (mut commits, mut tags) = (Vec::new(), Vec::new());
    for line in std::io::BufReader::new(out).lines() {
        let Ok(line) = line else {
            break;
        };
        let mut w = line.split(' ');
        let (Some(kind), Some(size), Some(id)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        let most = match kind {
            "commit" | "tag" => COMMIT_MAX,
            "tree" => TREE_MAX,
            _ => u64::MAX,
        };
        let Some(n) = size.parse::<u64>().ok().filter(|n| *n <= most) else {
            return Err(format!(
                "refused: {kind} {id} is {size} bytes, more than host git should read whole (at most {most})"
            ));
        };
        if counted && most == COMMIT_MAX && COMMITS_SEEN.fetch_add(n, Ordering::Relaxed) + n > COMMITS_TOTAL {
            return Err(format!(
                "refused: with {kind} {id} the commits and tags brought to the host in this run come to more than host git should read (at most {COMMITS_TOTAL} bytes in all)"
            ));
        }
        if !chains.add(id, n, w.next(), most != u64::MAX) {
            return Err(format!(
                "refused: more than {CHAINS_OBJECTS} objects to look at in one go"
            ));
        }
        if counted && kind == "commit" {
            commits.push(id.to_string());
        } else if counted && kind == "tag" {
            tags.push(id.to_string());
        }
    }
    match chains.too_costly() {
        Some(e) => Err(e),
        None => Ok((commits, tags)),
    }
}

/// What host git may have to inflate, in all, to read each commit, tag and
/// tree once through its chain of deltas (a delta is rebuilt from its
/// base, and its base from its own): 100 small trees, each a delta on
/// another link of a chain of 200 trees of 60 MB, held every host `git
/// status` for minutes. A git-made pack of ordinary history costs a
/// fraction of it.
const CHAINS_TOTAL: u64 = 16 << 30;
/// The objects `Chains` keeps in memory at most (about 100 bytes each).
const CHAINS_OBJECTS: usize = 1_000_000;

/// An object's name as bytes (SHA-1's 20 in the first of 32).
type Oid = [u8; 32];

fn oid(hex: &str) -> Option<Oid> {
    let mut out = [0u8; 32];
    if hex.len() > 64 || hex.len() % 2 == 1 {
        return None;
    }
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// Each object's size and delta base, as `cat-file` gives them.
#[derive(Default)]
struct Chains {
    objects: std::collections::HashMap<Oid, (u64, Option<Oid>)>,
    /// The commits, tags and trees.
    read: Vec<Oid>,
}

impl Chains {
    /// One object; false once there are more than CHAINS_OBJECTS.
    fn add(&mut self, id: &str, size: u64, base: Option<&str>, read: bool) -> bool {
        let Some(id) = oid(id) else {
            return true;
        };
        let base = base.and_then(oid).filter(|b| b.iter().any(|x| *x != 0));
        if read {
            self.read.push(id);
        }
        self.objects.insert(id, (size, base));
        self.objects.len() <= CHAINS_OBJECTS
    }

    /// Whether reading every commit, tag and tree through its chain costs
    /// more than CHAINS_TOTAL; each link's cost known once.
    fn too_costly(&self) -> Option<String> {
        let mut known: std::collections::HashMap<Oid, u64> = std::collections::HashMap::new();
        let mut total = 0u64;
        for id in &self.read {
            // The links below it not known yet, then their costs from the
            // bottom up (no recursion: a chain may be thousands long).
            let mut links: Vec<Oid> = Vec::new();
            let mut at = Some(*id);
            while let Some(link) = at.filter(|l| !known.contains_key(l)) {
                let Some((_, base)) = self.objects.get(&link) else {
                    break;
                };
                links.push(link);
                at = *base;
                if links.len() > self.objects.len() {
                    return Some("refused: its deltas make a circle".into());
                }
            }
            for link in links.into_iter().rev() {
                let (size, base) = self.objects[&link];
                let below = base.and_then(|b| known.get(&b)).copied().unwrap_or(0);
                known.insert(link, size.saturating_add(below));
            }
            total = total.saturating_add(known.get(id).copied().unwrap_or(0));
            if total > CHAINS_TOTAL {
                return Some(format!(
                    "refused: reading its commits, tags and trees through their deltas would take host git past {CHAINS_TOTAL} bytes inflated"
                ));
            }
        }
        None
    }
}

/// Whether an objects directory has a pack, or a loose object whose file
/// could inflate past COMMIT_MAX (a `git init` and a few commits: no).
fn could_hold_large(objects: &Path) -> bool {
    let Ok(top) = std::fs::read_dir(objects) else {
        return false;
    };
    top.flatten().any(|d| {
        let name = d.file_name();
        let packs = name == "pack" && std::fs::read_dir(d.path()).is_ok_and(|mut p| p.next().is_some());
        let loose = name.len() == 2
            && std::fs::read_dir(d.path()).is_ok_and(|rd| {
                rd.flatten()
                    .any(|f| f.metadata().map_or(true, |m| m.len() > COMMIT_MAX / 1040))
            });
        packs || loose
    })
}

/// Whether a repository's objects (made inside: not through host git)
/// hold a commit, tag or tree too large to read whole: asked of host git
/// with no repository of theirs (an empty git dir of the warden's), so
/// that nothing of their config is read; not looked at all within
/// `within`: refused.
pub fn objects_too_large(
    objects: &Path,
    within: std::time::Duration,
    head: Option<&str>,
) -> Result<(), String> {
    if !could_hold_large(objects) {
        return Ok(());
    }
    let deadline = std::time::Instant::now() + within;
    use std::os::unix::fs::DirBuilderExt;
    // A name of its own, made here (mode 0700, never one that was there).
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("qwrap-empty-git-{}-{nanos}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    for d in ["objects", "refs"] {
        std::fs::create_dir(dir.join(d)).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/none\n").map_err(|e| e.to_string())?;
    if head.is_some_and(|h| h.len() == 64) {
        let sha256 = "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n";
        std::fs::write(dir.join("config"), sha256).map_err(|e| e.to_string())?;
    }
    let r = too_large(&dir, objects, None, within, false).and_then(|()| match head {
        Some(head) => head_read_in_time(&dir, objects, head, deadline),
        None => Ok(()),
    });
    let _ = std::fs::remove_dir_all(&dir);
    r
}

/// Whether host git reads a commit and its whole tree (what `git status`
/// reads of a repository's HEAD, and of one a gitlink names) by
/// `deadline`: sizes say nothing of the deltas an object is made from (a
/// commit at the end of a chain of 30,000 deltas held host `git status`
/// for a minute). Where git cannot read them at all (a HEAD yet to be
/// born), it holds nobody up.
fn head_read_in_time(
    git_dir: &Path,
    objects: &Path,
    head: &str,
    deadline: std::time::Instant,
) -> Result<(), String> {
    let mut c = git(git_dir);
    c.args(["ls-tree", "-r", "--full-tree", head])
        .env("GIT_OBJECT_DIRECTORY", objects)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = spawn_held(&mut c)?;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return Ok(()),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "refused: host git did not read the commit {head} and its tree in the time given"
                ));
            }
        }
    }
}

/// A quarantine for a pack beside the host's objects (the same file
/// system, so that moving it in is a rename), removed with what is left
/// in it.
struct Incoming {
    path: std::path::PathBuf,
}

impl Incoming {
    fn new(git_dir: &Path) -> Result<Incoming, String> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = git_dir
            .join("objects")
            .join(format!("incoming-qwrap-{}-{n}", std::process::id()));
        std::fs::create_dir_all(path.join("pack")).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Incoming { path })
    }

    /// The pack's files renamed into the host's `objects/pack`, its index
    /// last (git finds a pack by its index).
    fn move_in(self, git_dir: &Path) -> Result<(), String> {
        let from = self.path.join("pack");
        let to = git_dir.join("objects/pack");
        let mut names: Vec<_> = std::fs::read_dir(&from)
            .map_err(|e| e.to_string())?
            .flatten()
            .map(|e| e.file_name())
            .collect();
        names.sort_by_key(|n| n.as_bytes().ends_with(b".idx"));
        for n in names {
            std::fs::rename(from.join(&n), to.join(&n))
                .map_err(|e| format!("{}: {e}", to.join(&n).display()))?;
        }
        Ok(())
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// `git pack-objects` of `ids` out of `objects` (the host's objects an
/// alternate), piped into the host's strict unpacking (or indexing, for
/// many).
pub fn transfer(git_dir: &Path, objects: &Path, ids: &[String]) -> Result<(), String> {
    // Every import is looked at: many small commits (or a few compressed
    // ones) count towards COMMITS_TOTAL and the history's walk too.
    too_large(git_dir, objects, Some(ids), IMPORT_WITHIN, true)?;
    let mut pack = spawn_import(
        git(git_dir)
            // No search for deltas: the pack only crosses a pipe, and the
            // search among the command's objects (1,800 of random content)
            // had held a CPU for minutes.
            .args(["pack-objects", "--stdout", "-q", "--window=0"])
            .env("GIT_OBJECT_DIRECTORY", objects)
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", git_dir.join("objects"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped()),
    )?;
    let stdout = pack.stdout.take().ok_or("no pipe")?;
    let mut receive = git(git_dir);
    if ids.len() < UNPACK_LIMIT {
        receive.args(["unpack-objects", "-q", "--strict"]);
    } else {
        receive.args(["index-pack", "--strict", "--stdin", "--fix-thin"]);
    }
    let receive = spawn_import(receive.stdin(Stdio::from(stdout)).stdout(Stdio::null()));
    if let Some(mut stdin) = pack.stdin.take() {
        for id in ids {
            let _ = writeln!(stdin, "{id}");
        }
    }
    let packed = waited(pack);
    let received = receive.and_then(waited);
    // Stopped midway: the import stopped, whichever side saw it.
    if [&packed, &received]
        .iter()
        .any(|r| r.as_ref().err().is_some_and(|e| e == HALTED))
    {
        return Err(HALTED.into());
    }
    packed.and(received)
}

#[cfg(test)]
mod chain_tests {
    use super::{CHAINS_TOTAL, Chains};

    fn id(n: u32) -> String {
        format!("{n:040x}")
    }

    #[test]
    fn a_chain_costs_each_read_its_links_below_it_once_known() {
        let mut c = Chains::default();
        // A chain of 4 large trees, 1 GiB each, and many small trees each a
        // delta on its last link: each small one costs the whole chain.
        for k in 1..=4u32 {
            let base = (k > 1).then(|| id(k - 1));
            assert!(c.add(&id(k), 1 << 30, base.as_deref(), true));
        }
        assert!(c.too_costly().is_none(), "the chain alone: 1+2+3+4 GiB");
        for s in 100..102u32 {
            c.add(&id(s), 37, Some(&id(4)), true);
        }
        assert!(
            c.too_costly().is_some(),
            "two small ones take it past {CHAINS_TOTAL}"
        );
        // A blob at the end of the same chain is no read of host git's.
        let mut blobs = Chains::default();
        for k in 1..=40u32 {
            let base = (k > 1).then(|| id(k - 1));
            blobs.add(&id(k), 1 << 30, base.as_deref(), false);
        }
        assert!(blobs.too_costly().is_none());
        // A null base is none.
        let mut plain = Chains::default();
        plain.add(&id(1), 10, Some(&"0".repeat(40)), true);
        assert!(plain.too_costly().is_none());
    }
}

#[cfg(test)]
mod lookup_tests {
    /// 20,000 ids, far more than a pipe holds either way: asked while the
    /// answer is read, not written first (both pipes filled, and the
    /// warden waited on git for ever).
    #[test]
    fn many_ids_are_asked_without_filling_both_pipes() {
        let d = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(d.path())
            .status()
            .unwrap();
        assert!(ok.success());
        let ids: Vec<String> = (0..20_000u32).map(|n| format!("{n:040x}")).collect();
        let t = std::time::Instant::now();
        assert_eq!(super::first_missing(d.path(), &ids), Some(ids[0].clone()));
        assert!(
            t.elapsed() < std::time::Duration::from_secs(9),
            "{:?}",
            t.elapsed()
        );
        let want: Vec<(String, &'static str)> = ids.iter().map(|i| (i.clone(), "blob")).collect();
        assert_eq!(super::objects_as(d.path(), &want), Ok(false));
    }
}
