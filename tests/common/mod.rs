//! Helpers for the integration tests: every namespace test runs once as root
//! and once as an unprivileged uid, against the real kernel.
#![allow(dead_code)]

pub mod bwrap_diff;
pub mod cgroups;
pub mod git;
pub mod sockets;

use std::ffi::OsStr;
use std::os::unix::fs::{PermissionsExt, chown};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The unprivileged identity the tests also run as (Debian's nobody/nogroup).
pub const USER_UID: u32 = 65534;
pub const USER_GID: u32 = 65534;

/// Who runs qwrap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    Root,
    User,
}

impl Who {
    /// Both identities when the tests run as root; only the caller's otherwise.
    pub fn all() -> Vec<Who> {
        if rustix::process::getuid().is_root() {
            vec![Who::Root, Who::User]
        } else {
            vec![Who::User]
        }
    }

    pub fn ids(self) -> (u32, u32) {
        match self {
            Who::Root => (0, 0),
            Who::User if rustix::process::getuid().is_root() => (USER_UID, USER_GID),
            Who::User => (
                rustix::process::getuid().as_raw(),
                rustix::process::getgid().as_raw(),
            ),
        }
    }
}

/// Whether the suite runs in the private PID mode (`make test-private-pid`).
pub fn private_pid() -> bool {
    std::env::var_os("QWRAP_PID").is_some_and(|v| v == "private")
}

/// Both mount API paths.
pub const APIS: [&str; 2] = ["new", "legacy"];

/// A copy of the qwrap binary that any uid can execute (the build tree may
/// sit in a directory only root can enter).
pub fn qwrap() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let base = Path::new("/var/tmp").join("qwrap-test-bin");
        std::fs::create_dir_all(&base).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o1777)).ok();
        // Each run holds a lock in its copy's directory while it lives;
        // a directory whose lock can be taken is a gone run's (in any PID
        // namespace: a pid would not say, another namespace's is not in
        // this /proc).
        if let Ok(entries) = std::fs::read_dir(&base) {
            for e in entries.flatten() {
                let gone = std::fs::File::open(e.path().join("lock")).is_ok_and(|f| {
                    rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok()
                });
                // A copy named by its pid alone, a day old.
                let legacy = e
                    .file_name()
                    .to_string_lossy()
                    .parse::<u32>()
                    .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
                    && e.metadata()
                        .and_then(|m| m.modified())
                        .is_ok_and(|t| t.elapsed().is_ok_and(|a| a.as_secs() > 86_400));
                if gone || legacy {
                    std::fs::remove_dir_all(e.path()).ok();
                }
            }
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = base.join(format!("{}-{nanos:x}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Locked before it has the name the sweep looks for; held until
        // this process ends.
        let lock = std::fs::File::create(dir.join("lock.new")).unwrap();
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
        std::fs::rename(dir.join("lock.new"), dir.join("lock")).unwrap();
        std::mem::forget(lock);
        let bin = dir.join("qwrap");
        // Copied by another process: a write fd held here would leak into
        // any child another test thread forks meanwhile, and exec of the
        // copy would fail with ETXTBSY until that child execs.
        let status = Command::new("cp")
            .arg(env!("CARGO_BIN_EXE_qwrap"))
            .arg(&bin)
            .status()
            .unwrap();
        assert!(status.success(), "cp qwrap: {status}");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    })
}

/// A scratch tree outside /tmp (which is private inside the sandbox), owned
/// by the identity under test: `ws/` is the workspace, `home/` the home.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub who: Who,
}

impl Fixture {
    pub fn new(who: Who) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("qwrap-test-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let f = Fixture { dir, who };
        f.mkdir("");
        f.mkdir("ws");
        f.mkdir("home");
        f
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn ws(&self) -> PathBuf {
        self.path().join("ws")
    }

    pub fn home(&self) -> PathBuf {
        self.path().join("home")
    }

    /// Creates a directory owned by the identity under test.
    pub fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.path().join(rel);
        std::fs::create_dir_all(&p).unwrap();
        self.own(&p);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    /// Writes a file owned by the identity under test.
    pub fn write(&self, rel: &str, content: &str, mode: u32) -> PathBuf {
        let p = self.path().join(rel);
        std::fs::write(&p, content).unwrap();
        self.own(&p);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    fn own(&self, p: &Path) {
        if rustix::process::getuid().is_root() {
            let (u, g) = self.who.ids();
            chown(p, Some(u), Some(g)).unwrap();
        }
    }

    /// A command run as the identity under test, in the workspace, with a
    /// small fixed environment.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new(program);
        c.current_dir(self.ws())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
            .env("HOME", self.home())
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        // `make test-private-pid` runs the boundary suites again in the
        // private PID mode.
        if let Some(pid) = std::env::var_os("QWRAP_PID") {
            c.env("QWRAP_PID", pid);
        }
        if rustix::process::getuid().is_root() && self.who == Who::User {
            c.uid(USER_UID).gid(USER_GID);
        }
        c
    }

    /// `qwrap ARGS…` as the identity under test.
    pub fn qwrap(&self, args: &[&str]) -> Command {
        let mut c = self.command(qwrap());
        c.args(args);
        c
    }

    /// `qwrap ARGS…` where user namespaces are disabled: in a user
    /// namespace of the test's own whose limit on them is 0.
    pub fn qwrap_without_userns(&self, args: &[&str]) -> Command {
        let mut c = self.command("unshare");
        c.args([
            "-U",
            "-r",
            "sh",
            "-c",
            "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"",
            "sh",
        ])
        .arg(qwrap())
        .args(args)
        .env_remove("QWRAP_PID");
        c
    }

    /// `qwrap run [OPTS] -- sh -c SCRIPT` on the given mount API.
    pub fn run_sh(&self, api: &str, opts: &[&str], script: &str) -> Output {
        let mut c = self.qwrap(&["run"]);
        c.args(opts).args(["--", "sh", "-c", script]);
        c.env("QWRAP_MOUNT_API", api);
        c.output().unwrap()
    }
}

/// `qwrap run --isolation landlock [args] -- sh -c script` (never in the
/// private PID mode, which this mode refuses).
pub fn run_landlock(f: &Fixture, args: &[&str], script: &str) -> Output {
    let mut c = f.qwrap(&["run", "--isolation", "landlock"]);
    c.args(args)
        .args(["--", "sh", "-c", script])
        .env_remove("QWRAP_PID");
    c.output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts success and returns stdout, showing stderr on failure.
#[track_caller]
pub fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        stdout(o),
        stderr(o)
    );
    stdout(o)
}

/// This process's view of the host mount table, without the per-test noise.
pub fn host_mounts() -> String {
    std::fs::read_to_string("/proc/self/mountinfo").unwrap()
}

/// The names in a directory.
pub fn listing(dir: &Path) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// What qwrap could leave in the host's /tmp (other programs on the machine
/// may come and go there).
pub fn qwrap_tmp() -> std::collections::BTreeSet<String> {
    listing(Path::new("/tmp"))
        .into_iter()
        .filter(|n| n.contains("qwrap"))
        .collect()
}

/// Every entry beneath `dir`: a file by its mode and a hash of its bytes, a
/// link by its target, a directory by its mode; `skip`: names left out.
pub fn tree(dir: &Path, skip: &[&str]) -> std::collections::BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, skip: &[&str], out: &mut std::collections::BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if skip.contains(&rel.as_str()) {
                continue;
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode() & 0o7777;
            let v = if m.file_type().is_symlink() {
                format!("link {}", std::fs::read_link(&p).unwrap().display())
            } else if m.is_dir() {
                walk(root, &p, skip, out);
                format!("dir {mode:o}")
            } else if !m.is_file() {
                format!("special {mode:o}")
            } else {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::hash::Hash::hash(&std::fs::read(&p).unwrap(), &mut h);
                format!("file {mode:o} {:016x}", std::hash::Hasher::finish(&h))
            };
            out.insert(rel, v);
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, skip, &mut out);
    out
}
