//! Host processes stay out of reach with the PID namespace shared: their
//! limits, priority, affinity and signals (also without Landlock's signal
//! scope, through the warden), their SysV IPC objects and the caller's
//! keys (every keyring call refused); and the sandbox ends when the command does. Each test
//! watches the host side. As root and unprivileged.

mod common;

use common::*;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a host process looks like from the host: its limits, nice value
/// and allowed CPUs.
fn host_view(pid: u32) -> String {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let nice = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .nth(16)
        .unwrap()
        .to_string();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let cpus = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list"))
        .unwrap()
        .to_string();
    format!("{limits}\nnice {nice}\n{cpus}")
}

const ATTACK: &str = r#"
import os, sys, resource, ctypes
hp = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
def t(name, f):
    try:
        f(); print(name, "done")
    except OSError as e:
        print(name, "refused")
t("prlimit-cpu", lambda: resource.prlimit(hp, resource.RLIMIT_CPU, (1, 1)))
t("prlimit-nofile", lambda: resource.prlimit(hp, resource.RLIMIT_NOFILE, (3, 3)))
t("setpriority", lambda: os.setpriority(os.PRIO_PROCESS, hp, 19))
t("setpriority-user", lambda: os.setpriority(os.PRIO_USER, os.getuid(), 19))
t("affinity", lambda: os.sched_setaffinity(hp, {0}))
t("scheduler", lambda: os.sched_setscheduler(hp, os.SCHED_IDLE, os.sched_param(0)))
def ioprio():
    if libc.syscall(251, 1, hp, (3 << 13)) != 0:
        raise OSError(ctypes.get_errno(), "ioprio_set")
t("ioprio", ioprio)
t("kill", lambda: os.kill(hp, 15))
t("pidfd-signal", lambda: os.pidfd_send_signal(os.pidfd_open(hp), 15) if hasattr(os, "pidfd_send_signal") else (_ for _ in ()).throw(OSError(1, "x")))
"#;

/// A host process that made itself non-dumpable (as ssh-agent and
/// gpg-agent do): its /proc entries refuse the warden's reads, which must
/// count as outside.
const NON_DUMPABLE: &str = "import ctypes, time; ctypes.CDLL(None).prctl(4, 0); time.sleep(60)";

#[test]
fn host_processes_cannot_be_touched() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for (landlock, dumpable) in [
            ("best-effort", true),
            ("off", true),
            ("best-effort", false),
            ("off", false),
        ] {
            let sleeper = if dumpable {
                Killed(f.command("sleep").arg("60").spawn().unwrap())
            } else {
                Killed(f.command("python3").args(["-c", NON_DUMPABLE]).spawn().unwrap())
            };
            let pid = sleeper.0.id();
            std::thread::sleep(Duration::from_millis(50));
            let before = host_view(pid);
            let o = f
                .qwrap(&["run", "--landlock", landlock, "--", "python3", "-c", ATTACK])
                .arg(pid.to_string())
                .output()
                .unwrap();
            let out = ok(&o);
            // In a PID namespace of its own, PRIO_USER reaches only the
            // processes there (the host's is checked unchanged below).
            let out = if private_pid() {
                out.replace("setpriority-user done", "setpriority-user refused")
            } else {
                out
            };
            assert!(
                !out.contains("done"),
                "{who:?} {landlock} dumpable {dumpable}: {out}"
            );
            assert_eq!(out.matches("refused").count(), 9, "{who:?} {landlock}: {out}");
            // The host process is alive and unchanged.
            std::thread::sleep(Duration::from_millis(100));
            assert!(
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap()
                    .contains(") S")
            );
            assert_eq!(host_view(pid), before, "{who:?} {landlock} dumpable {dumpable}");
        }
    }
}

#[test]
fn the_commands_own_processes_and_threads_still_can() {
    let script = r#"
import os, threading
c = os.fork()
if c == 0:
    import time; time.sleep(5); os._exit(0)
os.setpriority(os.PRIO_PROCESS, c, 5)
print("child nice", os.getpriority(os.PRIO_PROCESS, c))
def pin():
    os.sched_setaffinity(threading.get_native_id(), {0})
    print("thread pinned", sorted(os.sched_getaffinity(threading.get_native_id())))
t = threading.Thread(target=pin); t.start(); t.join()
os.kill(c, 9); os.wait()
"#;
    for who in Who::all() {
        let f = Fixture::new(who);
        for landlock in ["best-effort", "off"] {
            let o = f
                .qwrap(&["run", "--landlock", landlock, "--", "python3", "-c", script])
                .output()
                .unwrap();
            assert_eq!(ok(&o), "child nice 5\nthread pinned [0]\n", "{who:?} {landlock}");
        }
    }
}

#[test]
fn sysv_ipc_is_private() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let key = format!("0x{:08x}", 0x5157_0000 + std::process::id() % 0xffff);
        let o = f
            .command("python3")
            .args([
                "-c",
                "import ctypes,sys\nlibc=ctypes.CDLL(None)\nprint(libc.shmget(int(sys.argv[1],16), 4096, 0o1600))",
                &key,
            ])
            .output()
            .unwrap();
        let id = ok(&o).trim().to_string();
        assert!(!id.starts_with('-'), "shmget failed");
        let list = "grep -c . /proc/sysvipc/shm; cat /proc/sysvipc/shm";
        let inside = ok(&f.qwrap(&["run", "--", "sh", "-c", list]).output().unwrap());
        let shared = ok(&f
            .qwrap(&["run", "--share-ipc", "--", "sh", "-c", list])
            .output()
            .unwrap());
        let _ = f.command("ipcrm").args(["-m", &id]).output();
        let dec = u32::from_str_radix(key.trim_start_matches("0x"), 16)
            .unwrap()
            .to_string();
        let has = |t: &str| {
            t.lines()
                .any(|l| l.split_whitespace().next() == Some(dec.as_str()))
        };
        assert!(!has(&inside), "{who:?}: {inside}");
        assert!(has(&shared), "{who:?} control: {shared}");
    }
}

#[test]
fn the_callers_keys_are_out_of_reach() {
    // A session keyring of its own holding a key, then qwrap from inside it.
    let wrapper = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ring = libc.syscall(250, 1, b"qwrap-test-ring")
key = libc.syscall(248, b"user", b"qwrap-test-key", b"secret-value", 12, -3)
print(key, flush=True)
os.execv(sys.argv[1], sys.argv[1:] + [str(key)])
"#;
    let reader = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
buf = ctypes.create_string_buffer(64)
n = libc.syscall(250, 11, int(sys.argv[1]), buf, 64)
print("read", buf.raw[:n].decode() if n > 0 else "refused")
"#;
    for who in Who::all() {
        let f = Fixture::new(who);
        for (opt, want) in [
            (None, "read refused"),
            (Some("--share-keyring"), "read secret-value"),
        ] {
            let mut c = f.command("python3");
            c.args(["-c", wrapper]).arg(qwrap()).arg("run");
            c.args(opt);
            c.args(["--", "python3", "-c", reader]);
            let out = ok(&c.output().unwrap());
            assert!(out.contains(want), "{who:?} {opt:?}: {out}");
        }
    }
}

#[test]
fn the_sandbox_ends_with_the_command() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let tag = format!("qwrap-left-{}-{who:?}", std::process::id());
        // The background process's command line carries the tag (and one
        // pkill ends it, with nothing left: a shell's sleep would stay).
        let script = format!(
            "setsid sh -c 'python3 -c \"import time; time.sleep(120)\" {tag} &' </dev/null >/dev/null 2>&1; sleep 0.2; echo started"
        );
        let alive = || {
            std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&tag))
            })
        };
        let o = f
            .qwrap(&["run", "--", "sh", "-c", &script])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(ok(&o).trim(), "started");
        let t0 = Instant::now();
        while alive() && t0.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(), "{who:?}: a process outlived the command");
        // --keep-background leaves it.
        let o = f
            .qwrap(&["run", "--keep-background", "--", "sh", "-c", &script])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(ok(&o).trim(), "started");
        std::thread::sleep(Duration::from_millis(300));
        assert!(alive(), "{who:?}: --keep-background");
        let _ = std::process::Command::new("pkill").args(["-f", &tag]).status();
    }
}

/// A host process that records every signal it gets.
const TARGET: &str = r#"
import signal, sys, time
def h(s, f):
    with open(sys.argv[1], "a") as m:
        m.write(f"got {s}\n")
for s in (signal.SIGIO, signal.SIGURG, signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM):
    signal.signal(s, h)
print("ready", flush=True)
time.sleep(60)
"#;

/// Every route the review found to a signal, tried against the host
/// process: the kill family, a pidfd, and a file's SIGIO owner set by
/// fcntl (F_SETOWN, F_SETOWN_EX, then O_ASYNC) or by ioctl (FIOSETOWN,
/// SIOCSPGRP, then FIOASYNC), each fired by a write.
const ROUTES: &str = r#"
import os, sys, socket, fcntl, struct, signal
hp = int(sys.argv[1])
def t(name, f):
    try:
        f(); print(name, "called")
    except OSError as e:
        print(name, "refused", e.errno)
def fire(setup):
    a, b = socket.socketpair()
    setup(a)
    fcntl.ioctl(a, 0x5452, struct.pack("i", 1))  # FIOASYNC
    b.send(b"x")
t("kill", lambda: os.kill(hp, signal.SIGUSR1))
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def tgkill():
    if libc.syscall(234, hp, hp, int(signal.SIGUSR2)) != 0:
        raise OSError(ctypes.get_errno(), "tgkill")
t("tgkill", tgkill)
t("pidfd", lambda: signal.pidfd_send_signal(os.pidfd_open(hp), signal.SIGUSR1))
t("F_SETOWN", lambda: fire(lambda a: fcntl.fcntl(a, fcntl.F_SETOWN, hp)))
t("F_SETOWN_EX", lambda: fire(lambda a: fcntl.fcntl(a, 15, struct.pack("ii", 1, hp))))
t("FIOSETOWN", lambda: fire(lambda a: fcntl.ioctl(a, 0x8901, struct.pack("i", hp))))
t("SIOCSPGRP", lambda: fire(lambda a: fcntl.ioctl(a, 0x8902, struct.pack("i", hp))))
def o_async(a):
    fcntl.ioctl(a, 0x8901, struct.pack("i", hp))
    fcntl.fcntl(a, fcntl.F_SETFL, os.O_ASYNC)
t("O_ASYNC", lambda: fire(o_async))
"#;

#[test]
fn no_route_signals_a_host_process() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.write("ws/target.py", TARGET, 0o644);
        for api in APIS {
            for landlock in ["best-effort", "off"] {
                let marker = f.path().join(format!("got-{api}-{landlock}"));
                let mut target = f
                    .command("python3")
                    .arg(f.ws().join("target.py"))
                    .arg(&marker)
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap();
                let mut line = String::new();
                std::io::BufRead::read_line(
                    &mut std::io::BufReader::new(target.stdout.take().unwrap()),
                    &mut line,
                )
                .unwrap();
                let target = Killed(target);
                let pid = target.0.id();
                let o = f
                    .qwrap(&["run", "--landlock", landlock, "--", "python3", "-c", ROUTES])
                    .arg(pid.to_string())
                    .env("QWRAP_MOUNT_API", api)
                    .output()
                    .unwrap();
                let out = ok(&o);
                assert_eq!(out.lines().count(), 8, "{who:?} {api} {landlock}: {out}");
                std::thread::sleep(Duration::from_millis(200));
                let got = std::fs::read_to_string(&marker).unwrap_or_default();
                assert!(
                    got.is_empty(),
                    "{who:?} {api} {landlock}: the host process got {got}\n{out}"
                );
                assert!(
                    std::fs::read_to_string(format!("/proc/{pid}/stat"))
                        .unwrap()
                        .contains(") S"),
                    "{who:?} {api} {landlock}"
                );
            }
        }
    }
}

/// A call aimed at a process that is gone gets ESRCH, as the kernel would
/// answer (never EPERM, which would tell a `kill -0` loop it still lives),
/// in both signal paths.
#[test]
fn a_gone_process_is_reported_gone() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let mut gone = f.command("true").spawn().unwrap();
        let pid = gone.id();
        gone.wait().unwrap();
        for landlock in ["best-effort", "off"] {
            let script = format!(
                "import os\ntry:\n    os.kill({pid}, 0); print('alive')\nexcept ProcessLookupError:\n    print('gone')\nexcept PermissionError:\n    print('refused')"
            );
            let o = f
                .qwrap(&["run", "--landlock", landlock, "--", "python3", "-c", &script])
                .output()
                .unwrap();
            assert_eq!(ok(&o).trim(), "gone", "{who:?} {landlock}");
        }
    }
}

/// A cgroup of the host's, with a host process in it: mounted for the
/// test below the test's own cgroup (a cgroup namespace made inside is
/// rooted there), handed to the unprivileged caller as a session's
/// delegated cgroup would be.
struct HostCgroup {
    mnt: std::path::PathBuf,
    dir: std::path::PathBuf,
    name: String,
    sleeper: Option<Killed>,
}

impl HostCgroup {
    fn new(f: &Fixture, who: Who) -> Option<HostCgroup> {
        let mnt = std::env::temp_dir().join(format!("qwrap-cg-{}-{who:?}", std::process::id()));
        std::fs::create_dir_all(&mnt).unwrap();
        let m = std::process::Command::new("mount")
            .args(["-t", "cgroup2", "none"])
            .arg(&mnt)
            .status()
            .unwrap();
        if !m.success() {
            std::fs::remove_dir(&mnt).ok();
            return None;
        }
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let own = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .unwrap()
            .to_string();
        let name = format!("qwrap-test-{}-{who:?}", std::process::id());
        let dir = mnt.join(own.trim_start_matches('/')).join(&name);
        std::fs::create_dir(&dir).unwrap();
        let (uid, gid) = who.ids();
        for p in [
            &dir,
            &dir.join("cgroup.procs"),
            &dir.join("cgroup.freeze"),
            &dir.join("cgroup.kill"),
        ] {
            std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
        }
        let sleeper = Killed(f.command("sleep").arg("60").spawn().unwrap());
        std::fs::write(dir.join("cgroup.procs"), sleeper.0.id().to_string()).unwrap();
        Some(HostCgroup {
            mnt,
            dir,
            name,
            sleeper: Some(sleeper),
        })
    }

    /// From the host: the process alive, not frozen, still in the group.
    fn intact(&self) -> Result<(), String> {
        let pid = self.sleeper.as_ref().unwrap().0.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| format!("gone: {e}"))?;
        if !stat.contains(") S") {
            return Err(format!("not sleeping: {stat}"));
        }
        let events = std::fs::read_to_string(self.dir.join("cgroup.events")).unwrap();
        if events.contains("frozen 1") {
            return Err(format!("frozen: {events}"));
        }
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap();
        if procs.trim() != pid.to_string() {
            return Err(format!("group holds {procs:?}"));
        }
        Ok(())
    }
}

impl Drop for HostCgroup {
    fn drop(&mut self) {
        std::fs::write(self.dir.join("cgroup.freeze"), "0").ok();
        drop(self.sleeper.take());
        std::thread::sleep(Duration::from_millis(50));
        std::fs::remove_dir(&self.dir).ok();
        std::process::Command::new("umount").arg(&self.mnt).status().ok();
        std::fs::remove_dir(&self.mnt).ok();
    }
}

/// A cgroup namespace made inside and a cgroup filesystem mounted in it
/// (where Landlock's file rules, which refuse the mount, are off): the
/// host's groups below the sandbox's must stay out of reach, their
/// processes neither frozen nor killed. Straight, and from a user
/// namespace of the command's own.
#[test]
fn host_cgroups_cannot_be_frozen_or_killed() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let Some(cg) = HostCgroup::new(&f, who) else {
            eprintln!("SKIP: cgroup2 cannot be mounted here");
            return;
        };
        let attack = format!(
            "m=$(mktemp -d); for u in '' -Ur; do unshare $u -m -C sh -c \
             'mount -t cgroup2 none \"$1\" && {{ echo 1 > \"$1/{n}/cgroup.freeze\"; echo 1 > \"$1/{n}/cgroup.kill\"; echo REACHED; }}' \
             sh \"$m\" 2>/dev/null; done; true",
            n = cg.name
        );
        for (name, args) in [
            ("default", vec!["run"]),
            ("landlock off", vec!["run", "--landlock", "off"]),
            ("pid private", vec!["run", "--pid", "private"]),
            (
                "pid private, landlock off",
                vec!["run", "--pid", "private", "--landlock", "off"],
            ),
            ("isolation landlock", vec!["run", "--isolation", "landlock"]),
        ] {
            let mut c = f.qwrap(&args);
            // Each mode as named (the suite's private-PID run sets one).
            c.args(["--", "sh", "-c", &attack]).env_remove("QWRAP_PID");
            let o = c.output().unwrap();
            std::thread::sleep(Duration::from_millis(100));
            if let Err(e) = cg.intact() {
                panic!(
                    "{who:?} {name}: a host cgroup was reached: {e}\n{}{}",
                    stdout(&o),
                    stderr(&o)
                );
            }
            assert!(!stdout(&o).contains("REACHED"), "{who:?} {name}: {}", stdout(&o));
            assert_ne!(o.status.code(), Some(125), "{who:?} {name}: {}", stderr(&o));
        }
    }
}

/// With `--pid private`, a host process in qwrap's own process group (an
/// agent's shell job) is out of reach of the calls that name the group or
/// the session: kill(0), PRIO_PGRP, the session's autogroup.
#[test]
fn the_callers_process_group_and_session_are_out_of_reach() {
    use std::os::unix::process::CommandExt;
    let attack = r#"
import os, signal
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
for f in (lambda: os.kill(0, signal.SIGUSR1), lambda: os.setpriority(os.PRIO_PGRP, 0, 13),
          lambda: open('/proc/self/autogroup', 'w').write('19')):
    try:
        f()
    except OSError:
        pass
print('tried')
"#;
    for who in Who::all() {
        let f = Fixture::new(who);
        for opts in [
            &["--pid", "private"][..],
            &["--pid", "private", "--landlock", "off"],
            &[],
            &["--landlock", "off"],
        ] {
            let mut c = f.command("sh");
            let q = qwrap().display().to_string();
            c.args([
                "-c",
                &format!(
                    "sleep 30 & echo $! > {ws}/victim; sleep 0.2; {q} run {o} -- python3 -c \"$0\"; sleep 0.3; \
                     cat /proc/$(cat {ws}/victim)/stat /proc/$(cat {ws}/victim)/autogroup; kill $(cat {ws}/victim)",
                    ws = f.ws().display(),
                    o = opts.join(" ")
                ),
                attack,
            ])
            .current_dir(f.ws())
            .process_group(0);
            let o = c.output().unwrap();
            let out = stdout(&o);
            assert!(out.contains("tried"), "{who:?} {opts:?}: {out}{}", stderr(&o));
            // The victim lived (SIGUSR1 ends a sleep), at nice 0, its
            // session's autogroup at nice 0.
            let stat = out
                .lines()
                .find(|l| l.contains("(sleep)"))
                .unwrap_or_else(|| panic!("{who:?} {opts:?}: the victim died: {out}"));
            let nice = stat
                .rsplit_once(')')
                .unwrap()
                .1
                .split_whitespace()
                .nth(16)
                .unwrap();
            assert_eq!(nice, "0", "{who:?} {opts:?}: {stat}");
            // The kernel shows a task's autogroup only while the task sits
            // in the root cpu cgroup; a container's cgroup hides it.
            if out.contains("/autogroup-") {
                assert!(out.contains(" nice 0"), "{who:?} {opts:?}: autogroup: {out}");
            } else {
                eprintln!(
                    "SKIP {who:?} {opts:?}: autogroup: the victim is in no autogroup here (a cpu cgroup holds it)"
                );
            }
        }
    }
}
