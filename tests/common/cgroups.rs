//! The host's cgroups as the limits tests see them, read independently of
//! qwrap: where a process's group of a controller lies, which groups of a
//! name exist, and whether an identity can have a group with a controller
//! at all (the tests expect the limit to hold there, the refusal elsewhere);
//! and what the limits tests share besides.

use super::{Fixture, USER_UID, Who, stderr};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// A cgroup filesystem's mount.
pub struct Mount {
    pub v2: bool,
    pub root: PathBuf,
    pub point: PathBuf,
    pub options: Vec<String>,
}

/// The cgroup and cgroup2 mounts (mount points without escapes only).
pub fn mounts() -> Vec<Mount> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let sep = f.iter().position(|x| *x == "-")?;
            let v2 = match *f.get(sep + 1)? {
                "cgroup2" => true,
                "cgroup" => false,
                _ => return None,
            };
            Some(Mount {
                v2,
                root: f[3].into(),
                point: f[4].into(),
                options: f
                    .get(sep + 3)?
                    .split(',')
                    .chain(f[5].split(','))
                    .map(str::to_string)
                    .collect(),
            })
        })
        .collect()
}

fn under(m: &Mount, path: &str) -> Option<PathBuf> {
    let rel = Path::new(path).strip_prefix(&m.root).ok()?;
    Some(m.point.join(rel))
}

/// The directory of `pid`'s group that holds `controller`: its v1
/// hierarchy's, else its v2 group's.
pub fn group_of(pid: u32, controller: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let ms = mounts();
    for line in text.lines() {
        let mut p = line.splitn(3, ':');
        let (_, names, path) = (p.next()?, p.next()?, p.next()?);
        if names.split(',').any(|n| n == controller)
            && let Some(m) = ms
                .iter()
                .find(|m| !m.v2 && m.options.iter().any(|o| o == controller))
        {
            return under(m, path);
        }
    }
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    under(ms.iter().find(|m| m.v2)?, path)
}

/// Every group whose name starts with `prefix` beneath the cgroup mounts
/// (a sandbox's are `qwrap-PID-RANDOM`).
pub fn named(prefix: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, name: &str, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if e.file_name().as_encoded_bytes().starts_with(name.as_bytes()) {
                out.push(e.path());
            } else if depth > 0 {
                walk(&e.path(), name, depth - 1, out);
            }
        }
    }
    let mut out = Vec::new();
    for m in mounts() {
        walk(&m.point, prefix, 8, &mut out);
    }
    out
}

/// Whether `who` can have a group of its own with `controller` here; if
/// not, why (the reason a test prints when it checks the refusal instead).
pub fn offered(who: Who, controller: &str) -> Result<(), String> {
    let me = std::process::id();
    let ms = mounts();
    let mine = |d: &Path| match who {
        Who::Root => ms
            .iter()
            .any(|m| d.starts_with(&m.point) && m.options.iter().any(|o| o == "rw")),
        Who::User => std::fs::metadata(d).is_ok_and(|m| m.uid() == USER_UID),
    };
    // v1: the group of ours in the controller's hierarchy.
    let text = std::fs::read_to_string(format!("/proc/{me}/cgroup")).unwrap_or_default();
    for line in text.lines() {
        let mut p = line.splitn(3, ':');
        let (Some(_), Some(names), Some(path)) = (p.next(), p.next(), p.next()) else {
            continue;
        };
        if names.split(',').any(|n| n == controller)
            && let Some(m) = ms
                .iter()
                .find(|m| !m.v2 && m.options.iter().any(|o| o == controller))
            && let Some(d) = under(m, path)
        {
            return if mine(&d) {
                Ok(())
            } else {
                Err(format!(
                    "the v1 {controller} group {} is not {who:?}'s",
                    d.display()
                ))
            };
        }
    }
    // v2: a group from ours up that delegates the controller and is ours.
    let Some(m) = ms.iter().find(|m| m.v2) else {
        return Err(format!(
            "no v1 hierarchy binds {controller}, and no cgroup2 is mounted"
        ));
    };
    let own = text.lines().find_map(|l| l.strip_prefix("0::")).unwrap_or("/");
    let mut dir = under(m, own).unwrap_or_else(|| m.point.clone());
    loop {
        let subtree = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
        if subtree.split_whitespace().any(|c| c == controller) && mine(&dir) {
            return Ok(());
        }
        if dir == m.point || !dir.pop() {
            return Err(format!(
                "no v1 hierarchy binds {controller}, and no cgroup v2 group from ours up delegates it to {who:?}"
            ));
        }
    }
}

// What the limits tests share: the refusal's check, the group's end,
// the trees of processes, the scripts run inside.

/// The refusal of a limit no group can hold: exit 125, the reason and the
/// fix, and the command never ran.
#[track_caller]
pub fn refused(o: &Output, f: &Fixture) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert!(
        err.contains("cannot be enforced here") && err.contains("Fix:"),
        "{err}"
    );
    assert!(!f.ws().join("ran").exists(), "the command ran");
}

/// Whether the sandbox of qwrap `pid` left no group behind.
pub fn no_group_left(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !named(&format!("qwrap-{pid}-")).is_empty() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// `pid` is gone, or a zombie (dead, its parent not yet told), within two
/// seconds (an exit under way).
pub fn dead(pid: &str) -> bool {
    // A process closes its files before it becomes a zombie: the pipe a
    // caller waited on can end a moment before the exit does.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        if stat
            .rsplit_once(") ")
            .is_none_or(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X'))
        {
            return true;
        }
        if std::time::Instant::now() > until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

pub const BOMB: &str = r#"
import errno, os, time
kids, failed = [], 0
for _ in range(400):
    try:
        pid = os.fork()
    except OSError as e:
        if e.errno != errno.EAGAIN:
            raise
        failed += 1
        continue
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
print(len(kids), failed, flush=True)
time.sleep(2)
"#;

/// Every process whose parents lead to `root`, and `root`.
pub fn tree(root: u32) -> Vec<u32> {
    let parent = |p: u32| -> Option<u32> {
        let s = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        s.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()
    };
    let all: Vec<u32> = super::listing(Path::new("/proc"))
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    all.into_iter()
        .filter(|&p| {
            let mut q = p;
            for _ in 0..64 {
                if q == root {
                    return true;
                }
                match parent(q) {
                    Some(n) if n > 1 => q = n,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

/// With `--pid private` the command may make namespaces of its own, a
/// cgroup namespace and a mount of the cgroup filesystem included: its view
/// of the hierarchy is rooted at its own group, beneath the one that holds
/// the limits, so that writing "max" there lifts nothing.
pub const LIFT: &str = r#"
import ctypes, errno, os, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000 | 0x20000 | 0x02000000) != 0:
    print("cgroup namespace refused:", os.strerror(ctypes.get_errno()), flush=True)
else:
    os.makedirs("/tmp/cg", exist_ok=True)
    for fs, opts in ((b"cgroup", b"pids"), (b"cgroup2", None)):
        if libc.mount(b"none", b"/tmp/cg", fs, 0, opts) == 0:
            break
    else:
        raise SystemExit("mount: " + os.strerror(ctypes.get_errno()))
    with open("/tmp/cg/pids.max", "w") as f:
        f.write("max")
    print("root of the view:", open("/tmp/cg/pids.max").read().strip(), flush=True)
kids, failed = 0, 0
for _ in range(100):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        kids += 1
    except OSError as e:
        assert e.errno == errno.EAGAIN
        failed += 1
print(kids, failed, flush=True)
"#;
