//! Objects written inside, brought to the host the way a push brings them:
//! the sandbox's `objects/` is its own (the host's are read through
//! `objects/info/alternates`, from a read-only view), and the warden hands
//! what is new to the host's git: loose objects packed from a quarantine
//! beside the host's objects (out of the sandbox's reach, in every mode:
//! under `--tmp host` one in the host's temp directory was the command's
//! to put a FIFO in, which held the import, and host git, for ever) and
//! unpacked with `git unpack-objects --strict`, packs read
//! by `git index-pack --strict --stdin --fix-thin`. Each object is checked
//! as git checks what a remote sends (fsck: tree entries named `.git` or
//! `..`, malformed commits and tags, links to objects that do not exist);
//! nothing made inside (a link, a FIFO, a file of any name) is ever in the
//! host's `objects/`. Files are read with O_NOFOLLOW|O_NONBLOCK from the
//! warden's descriptors and streamed in a fixed buffer.

use super::git_files::{names, open_dir};
use crate::git_receive::git;
use crate::sys::kernel as k;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags};
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The alternates file the sandbox starts with: the host's objects (seen
/// read-only at the git dir's top) and the host's own alternates, made
/// absolute.
pub(super) fn alternates(git_dir: &Path, host_alternates: Option<&[u8]>) -> Vec<u8> {
    let objects = git_dir.join("objects");
    let mut out = git_dir
        .join(crate::policy::HOST_OBJECTS)
        .into_os_string()
        .into_vec();
    out.push(b'\n');
    for l in host_alternates.unwrap_or_default().split(|c| *c == b'\n') {
        if l.is_empty() || l.starts_with(b"#") {
            continue;
        }
        let p = Path::new(OsStr::from_bytes(l));
        out.extend_from_slice(objects.join(p).as_os_str().as_bytes());
        out.push(b'\n');
    }
    out
}

/// What one import did: each object or pack and whether the host took it.
pub(super) type Outcome = Vec<(PathBuf, Result<(), String>)>;

/// How often a loose object the host refused is tried again, each time
/// with what is new: the objects it names may not have been written when
/// it was read (a commit found in a directory listed before the new
/// directories of its tree and blobs), and it is then refused as naming
/// what the host lacks, and so is every commit after it.
const TRIES: u8 = 4;

/// The objects of a batch git refused tried again one at a time, at most,
/// in one import.
const SINGLES: usize = 256;

/// The objects and packs brought to the host (or refused for good), and
/// how often each loose one refused was tried.
#[derive(Default)]
pub(super) struct Imported {
    done: HashSet<OsString>,
    tries: HashMap<OsString, u8>,
}

impl Imported {
    /// A loose object refused: looked at again with the next import, up
    /// to TRIES times in all.
    fn refused(&mut self, id: &Path) {
        let n = self.tries.entry(id.as_os_str().to_os_string()).or_insert(0);
        *n += 1;
        if *n < TRIES {
            self.done.remove(id.as_os_str());
        }
    }
}

/// Brings what is new in the sandbox's objects to the host's repository
/// (`git_dir`: `/proc/self/fd/N` of `pinned`, its git dir held open).
pub(super) fn import(
    git_dir: &Path,
    pinned: BorrowedFd<'_>,
    own: BorrowedFd<'_>,
    imported: &mut Imported,
) -> Outcome {
    let mut out = Vec::new();
    let loose = new_loose(own, &imported.done);
    if !loose.is_empty() {
        let took = import_loose(git_dir, pinned, own, &loose, &mut imported.done);
        for (id, r) in &took {
            if r.is_err() {
                imported.refused(id);
            }
        }
        out.extend(took);
    }
    let done = &mut imported.done;
    for pack in new_packs(own, done) {
        let rel = Path::new("pack").join(&pack);
        let r = import_pack(git_dir, own, &rel);
        // Halted at the command's end: taken up again after the end's look.
        if halted(&r) {
            continue;
        }
        done.insert(rel.clone().into_os_string());
        out.push((rel, r));
    }
    out
}

/// Whether an import stopped (or did not start) because imports are
/// halted: nothing is said of it, and it is not done.
fn halted(r: &Result<(), String>) -> bool {
    r.as_ref().err().is_some_and(|e| e == crate::git_receive::HALTED)
}

fn is_hex(s: &[u8], n: usize) -> bool {
    s.len() == n && s.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// Loose objects not yet imported, as `xx/rest`.
fn new_loose(own: BorrowedFd<'_>, done: &HashSet<OsString>) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for d in names(own, Path::new("")) {
        if !is_hex(d.as_bytes(), 2) {
            continue;
        }
        for n in names(own, Path::new(&d)) {
            let rel = Path::new(&d).join(&n);
            let b = n.as_bytes();
            if (is_hex(b, 38) || is_hex(b, 62)) && !done.contains(rel.as_os_str()) {
                v.push(rel);
            }
        }
    }
    v.sort();
    v
}

/// Packs whose index is written (git writes the index last).
fn new_packs(own: BorrowedFd<'_>, done: &HashSet<OsString>) -> Vec<OsString> {
    let all = names(own, Path::new("pack"));
    let mut v: Vec<OsString> = all
        .iter()
        .filter_map(|n| n.as_bytes().strip_suffix(b".idx"))
        .filter(|stem| stem.starts_with(b"pack-"))
        .map(|stem| {
            let mut p = stem.to_vec();
            p.extend_from_slice(b".pack");
            OsString::from_vec(p)
        })
        .filter(|p| all.contains(p) && !done.contains(Path::new("pack").join(p).as_os_str()))
        .collect();
    v.sort();
    v
}

/// A regular file of the sandbox's, opened without following a link and
/// without blocking on a FIFO.
fn open_regular(own: BorrowedFd<'_>, rel: &Path) -> Result<OwnedFd, String> {
    let dir = open_dir(own, rel.parent().unwrap_or(Path::new(""))).map_err(|e| e.to_string())?;
    let name = rel.file_name().unwrap_or_default();
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = k::openat(&dir, name, flags, Mode::empty())
        .map_err(|e| format!("made inside as a link, FIFO or device ({e})"))?;
    let st = k::fstat(&fd).map_err(|e| e.to_string())?;
    if !rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() {
        return Err("made inside as a FIFO or device".into());
    }
    Ok(fd)
}

/// A pack, read by git as a pushed one would be.
fn import_pack(git_dir: &Path, own: BorrowedFd<'_>, rel: &Path) -> Result<(), String> {
    let fd = open_regular(own, rel)?;
    crate::git_receive::index_pack(git_dir, Stdio::from(fd))
}

/// Loose objects: copied (regular files only) into a private quarantine,
/// packed from there and unpacked (or indexed) strictly into the host's
/// repository. A batch git refuses is tried again object by object, so
/// that one bad object does not hold back the rest.
fn import_loose(
    git_dir: &Path,
    pinned: BorrowedFd<'_>,
    own: BorrowedFd<'_>,
    loose: &[PathBuf],
    done: &mut HashSet<OsString>,
) -> Outcome {
    let q = match Quarantine::new(pinned, git_dir) {
        Ok(q) => q,
        Err(e) => return loose.iter().map(|l| (l.clone(), Err(e.clone()))).collect(),
    };
    let mut out = Vec::new();
    let mut ids = Vec::new();
    for l in loose {
        done.insert(l.clone().into_os_string());
        match q.take(own, l) {
            Ok(()) => ids.push(l.clone()),
            Err(e) => out.push((l.clone(), Err(e))),
        }
    }
    let all = if ids.is_empty() {
        Ok(())
    } else {
        transfer(git_dir, &q.path, &ids)
    };
    if halted(&all) {
        not_done(done, &ids);
        return out;
    }
    if all.is_ok() {
        out.extend(ids.into_iter().map(|i| (i, Ok(()))));
        return out;
    }
    // One at a time, in passes, so that a commit follows the tree it needs;
    // at most SINGLES of them (a chain of 10,000 tags, each pass taking a
    // few links, had held the warden at a CPU for minutes): the rest wait
    // for the next import.
    let mut left = ids;
    let mut budget = SINGLES;
    loop {
        let before = left.len();
        let mut still = Vec::new();
        for (n, id) in left.iter().enumerate() {
            if budget == 0 {
                still.extend(left[n..].iter().map(|i| {
                    (
                        i.clone(),
                        "not looked at alone: too many refused together".to_string(),
                    )
                }));
                break;
            }
            budget -= 1;
            match transfer(git_dir, &q.path, std::slice::from_ref(id)) {
                Ok(()) => out.push((id.clone(), Ok(()))),
                Err(e) if e == crate::git_receive::HALTED => {
                    not_done(done, &left[n..]);
                    not_done(done, &still.into_iter().map(|(i, _)| i).collect::<Vec<_>>());
                    return out;
                }
                Err(e) => still.push((id.clone(), e)),
            }
        }
        if still.len() == before || still.is_empty() || budget == 0 {
            out.extend(still.into_iter().map(|(i, e)| (i, Err(e))));
            return out;
        }
        left = still.into_iter().map(|(i, _)| i).collect();
    }
}

/// Loose objects to be looked at again (an import halted).
fn not_done(done: &mut HashSet<OsString>, ids: &[PathBuf]) {
    for id in ids {
        done.remove(id.as_os_str());
    }
}

/// The quarantine's objects `ids` (`ab/cdef…`) through host git's
/// receiving path.
fn transfer(git_dir: &Path, q: &Path, ids: &[PathBuf]) -> Result<(), String> {
    let ids: Vec<String> = ids
        .iter()
        .map(|id| id.to_string_lossy().replace('/', ""))
        .collect();
    crate::git_receive::transfer(git_dir, q, &ids)
}

/// A directory of the warden's own beside the host's objects (as
/// receive-pack's `incoming-*`), made and removed through the git dir held
/// open (never through a path), with everything in it.
struct Quarantine {
    /// As host git is given it: below `/proc/self/fd/N`.
    path: PathBuf,
    objects: OwnedFd,
    name: OsString,
    fd: OwnedFd,
}

impl Quarantine {
    fn new(pinned: BorrowedFd<'_>, git_dir: &Path) -> Result<Quarantine, String> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let name = OsString::from(format!("incoming-qwrap-loose-{}-{n}", std::process::id()));
        let path = git_dir.join("objects").join(&name);
        let said = |e: rustix::io::Errno| format!("{}: {e}", path.display());
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let objects = crate::sys::kernel::openat(pinned, "objects", flags, Mode::empty()).map_err(said)?;
        crate::sys::kernel::mkdirat(&objects, name.as_os_str(), Mode::from_raw_mode(0o700)).map_err(said)?;
        let fd = crate::sys::kernel::openat(
            &objects,
            name.as_os_str(),
            super::git_files::dir_flags(),
            Mode::empty(),
        )
        .map_err(said)?;
        Ok(Quarantine {
            path,
            objects,
            name,
            fd,
        })
    }

    /// Copies one loose object in, in a fixed buffer, as long as it was
    /// when opened (grown meanwhile, holes and all, it would have become
    /// gigabytes beside the host's objects); one with holes stays out (git
    /// writes none).
    fn take(&self, own: BorrowedFd<'_>, rel: &Path) -> Result<(), String> {
        let from = open_regular(own, rel)?;
        let st = k::fstat(&from).map_err(|e| e.to_string())?;
        let len = st.st_size as u64;
        if (st.st_blocks as u64) * 512 + 4096 < len {
            return Err("a file with holes (git writes none)".into());
        }
        let dir = super::git_files::make_dirs(self.fd.as_fd(), rel.parent().unwrap_or(Path::new("")))
            .map_err(|e| e.to_string())?;
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let name = rel.file_name().unwrap_or_default();
        let to = k::openat(&dir, name, flags, Mode::from_raw_mode(0o400)).map_err(|e| e.to_string())?;
        copy_stream(&from, &to, len).map_err(|e| e.to_string())
    }
}

impl Drop for Quarantine {
    fn drop(&mut self) {
        let _ = super::git_files::remove(self.objects.as_fd(), Path::new(&self.name), true);
    }
}

/// Copies the first `len` bytes of a file to another in a fixed 64 KiB
/// buffer.
pub(super) fn copy_stream(from: &OwnedFd, to: &OwnedFd, len: u64) -> Result<(), rustix::io::Errno> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = len;
    loop {
        let most = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = match k::read(from, &mut buf[..most]) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                left -= n as u64;
                n
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e),
        };
        crate::sys::write_all(to, &buf[..n])?;
    }
}

/// The first of `oids` the host's repository lacks: loose ones looked for
/// without running git, the rest asked of one `git cat-file --batch-check`.
pub(super) fn missing_on_host(git_dir: &Path, host_dir: BorrowedFd<'_>, oids: &[&str]) -> Option<String> {
    let rest: Vec<&str> = oids
        .iter()
        .copied()
        .filter(|oid| {
            let rel = Path::new("objects")
                .join(oid.get(..2).unwrap_or(""))
                .join(oid.get(2..).unwrap_or(""));
            k::statat(host_dir, &rel, AtFlags::SYMLINK_NOFOLLOW).is_err()
        })
        .collect();
    if rest.is_empty() {
        return None;
    }
    let rest: Vec<String> = rest.iter().map(|o| o.to_string()).collect();
    crate::git_receive::first_missing(git_dir, &rest)
}

/// Whether the host's repository has the ref `name` (`git rev-parse
/// --verify`, which reads loose and packed refs and a worktree's common
/// dir).
pub(super) fn ref_on_host(git_dir: &Path, name: &str) -> bool {
    git(git_dir)
        .args(["rev-parse", "-q", "--verify", name])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::Quarantine;
    use crate::sys::fake::{self, Scripted};
    use std::path::{Path, PathBuf};

    /// One loose object taken into a quarantine, answered by the fake.
    fn taken(stat: Scripted) -> (Result<(), String>, Vec<String>) {
        fake::start();
        // Looked at as it is opened, then for its length.
        fake::script(stat.clone());
        fake::script(stat);
        let q = Quarantine {
            path: PathBuf::from("/proc/self/fd/9/q"),
            objects: fake::fd(),
            name: "q".into(),
            fd: fake::fd(),
        };
        let own = fake::fd();
        let r = q.take(std::os::fd::AsFd::as_fd(&own), Path::new("ab/cdef"));
        drop(q);
        (r, fake::finish())
    }

    fn made(c: &[String]) -> bool {
        c.iter().any(|c| c.contains("CREATE"))
    }

    /// A commit found before the tree and blob it names (in directories
    /// listed after it was read): refused then, taken once they are there,
    /// and so is the commit after it.
    #[test]
    fn a_commit_read_before_its_tree_is_taken_once_the_tree_is_there() {
        use rustix::fd::AsFd;
        let d = tempfile::tempdir().unwrap();
        let sh = |script: &str| {
            let o = std::process::Command::new("sh")
                .args(["-c", script])
                .current_dir(d.path())
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8_lossy(&o.stdout).trim().to_string()
        };
        let g = "git -c user.name=t -c user.email=t@t";
        sh(&format!(
            "git init -q --bare host.git && git init -q w && cd w && echo a > a && git add a && {g} commit -qm one && echo b > a && {g} commit -qam two"
        ));
        let objects = d.path().join("w/.git/objects");
        let id = |what: &str| {
            let o = sh(&format!("cd w && git rev-parse {what}"));
            PathBuf::from(&o[..2]).join(&o[2..])
        };
        let (first, second) = (id("HEAD~"), id("HEAD"));
        let own = d.path().join("own");
        let put = |rel: &Path| {
            std::fs::create_dir_all(own.join(rel.parent().unwrap())).unwrap();
            std::fs::copy(objects.join(rel), own.join(rel)).unwrap();
        };
        put(&first);
        let open = |p: &Path| {
            rustix::fs::open(p, super::super::git_files::dir_flags(), rustix::fs::Mode::empty()).unwrap()
        };
        let (host, own_fd) = (d.path().join("host.git"), open(&own));
        let pinned = open(&host);
        let mut imported = super::Imported::default();
        let r = super::import(&host, pinned.as_fd(), own_fd.as_fd(), &mut imported);
        assert!(r.iter().all(|(_, r)| r.is_err()), "{r:?}");
        // Everything else written now, the second commit too.
        for e in walk(&objects).iter().filter(|e| **e != first) {
            put(e);
        }
        let r = super::import(&host, pinned.as_fd(), own_fd.as_fd(), &mut imported);
        assert!(r.iter().all(|(_, r)| r.is_ok()), "{r:?}");
        assert!(
            r.iter().any(|(p, _)| *p == first) && r.iter().any(|(p, _)| *p == second),
            "{r:?}"
        );
        sh("git --git-dir=host.git fsck --no-dangling --connectivity-only $(git -C w rev-parse HEAD)");
    }

    /// The loose objects below `objects`, as `xx/rest`.
    fn walk(objects: &Path) -> Vec<PathBuf> {
        let mut v = Vec::new();
        for d in std::fs::read_dir(objects).unwrap().flatten() {
            let n = d.file_name();
            if n.len() != 2 {
                continue;
            }
            for f in std::fs::read_dir(d.path()).unwrap().flatten() {
                v.push(Path::new(&n).join(f.file_name()));
            }
        }
        v
    }

    #[test]
    fn a_fifo_or_device_made_inside_is_never_copied() {
        let (r, c) = taken(Scripted::Mode(0o10644));
        assert!(matches!(r, Err(ref e) if e.contains("FIFO")), "{r:?}");
        assert!(!made(&c), "{c:?}");
    }

    #[test]
    fn a_loose_object_of_holes_stays_out() {
        let (r, c) = taken(Scripted::Stat {
            mode: 0o100444,
            size: 1 << 32,
            blocks: 8,
        });
        assert!(matches!(r, Err(ref e) if e.contains("holes")), "{r:?}");
        assert!(!made(&c), "{c:?}");
    }

    #[test]
    fn a_loose_object_is_made_anew_read_only_and_copied_no_longer_than_it_was() {
        // The file grew to 20 bytes since it was looked at: 10 are copied.
        fake::script(Scripted::Read(vec![b'x'; 20]));
        let (r, c) = taken(Scripted::Stat {
            mode: 0o100444,
            size: 10,
            blocks: 8,
        });
        assert_eq!(r, Ok(()), "{c:?}");
        let create = c.iter().find(|c| c.contains("CREATE")).unwrap();
        assert!(create.contains("EXCL") && create.contains("NOFOLLOW"), "{c:?}");
        let writes: Vec<&String> = c.iter().filter(|c| c.starts_with("write(")).collect();
        assert_eq!(writes, [&format!("write(fd, {:?})", "x".repeat(10))], "{c:?}");
    }
}
