//! The command's terminal is a pty of qwrap's own: nothing it does to it
//! reaches the caller's terminal or a job of the caller's session, in every
//! mode, and the terminal still works as one (^C, job control, the window
//! size, a full-screen program, exit codes). Each test drives a terminal
//! of its own holding a host job, and reads the host side once qwrap has
//! ended. As root and unprivileged.

mod common;

use common::*;
use std::collections::BTreeMap;

const USER: &str = include_str!("helpers/terminal_user.py");
const ATTACK: &str = include_str!("helpers/terminal_attack.py");

/// A shell's wait for a job that may stop: prints `stopped`/`ended`, the
/// terminal's modes at that moment, then continues it (`fg`) and prints
/// its exit code.
const STOPPED_JOB: &str = r#"
import fcntl, os, signal, sys, termios
m, s = os.openpty()
pid = os.fork()
if pid == 0:
    os.close(m); os.setsid(); fcntl.ioctl(s, termios.TIOCSCTTY, 0)
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    before = termios.tcgetattr(s)
    q = os.fork()
    if q == 0:
        os.setpgid(0, 0); os.tcsetpgrp(s, os.getpid()); signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        for fd in (0, 1, 2): os.dup2(s, fd)
        os.execvp(sys.argv[1], sys.argv[1:])
    try:
        os.setpgid(q, q); os.tcsetpgrp(s, q)
    except OSError:
        pass
    if os.environ.get("TSTP"):
        import time
        time.sleep(0.5)
        os.kill(q, signal.SIGTSTP)
    _, st = os.waitpid(q, os.WUNTRACED)
    os.tcsetpgrp(s, os.getpgrp())
    print("stopped" if os.WIFSTOPPED(st) else "ended", "modes", "same" if termios.tcgetattr(s) == before else "raw", file=sys.stderr)
    os.tcsetpgrp(s, q); os.killpg(q, signal.SIGCONT)
    _, st = os.waitpid(q, 0)
    print("then", os.waitstatus_to_exitcode(st), file=sys.stderr)
    os._exit(0)
os.close(s)
while True:
    try:
        if not os.read(m, 4096): break
    except OSError:
        break
os.waitpid(pid, 0)
"#;

/// qwrap run OPTS -- ARGS on a terminal of the test's own (TYPED: what to
/// type when), and what the host saw: `key: value` lines, and the rest.
fn on_terminal(f: &Fixture, opts: &[&str], args: &[&str], typed: &str) -> (BTreeMap<String, String>, String) {
    on_terminal_with(f, opts, args, typed, "tty")
}

/// `on_terminal`, with fds 0-2 the terminal (`stdio` "tty") or /dev/null
/// ("null": the terminal is only the controlling one).
fn on_terminal_with(
    f: &Fixture,
    opts: &[&str],
    args: &[&str],
    typed: &str,
    stdio: &str,
) -> (BTreeMap<String, String>, String) {
    let user = f.write("user.py", USER, 0o644);
    let ws = f.ws();
    let mut c = f.command("timeout");
    c.args(["-s", "KILL", "60", "python3"])
        .arg(&user)
        .arg(&ws)
        .arg(qwrap())
        .arg("run");
    c.args(opts)
        .arg("--")
        .args(args)
        .env("TYPED", typed)
        .env("STDIO", stdio)
        .env("TERM", "xterm");
    let out = c.output().unwrap();
    let text = stdout(&out);
    let host = text
        .lines()
        .filter_map(|l| l.split_once(": "))
        .filter(|(k, _)| {
            [
                "job-signals",
                "job-state",
                "exclusive",
                "ldisc",
                "modes",
                "status",
            ]
            .contains(k)
        })
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect::<BTreeMap<_, _>>();
    assert!(
        host.contains_key("status"),
        "the driver failed: {text}\n{}",
        stderr(&out)
    );
    (host, text)
}

fn attack(f: &Fixture, opts: &[&str]) -> (BTreeMap<String, String>, String) {
    attack_with(f, opts, "tty")
}

fn attack_with(f: &Fixture, opts: &[&str], stdio: &str) -> (BTreeMap<String, String>, String) {
    let attack = f.write("ws/attack.py", ATTACK, 0o644);
    let ws = f.ws();
    let (host, _) = on_terminal_with(
        f,
        opts,
        &["python3", attack.to_str().unwrap(), ws.to_str().unwrap()],
        "[]",
        stdio,
    );
    let inside = std::fs::read_to_string(ws.join("inside")).unwrap_or_default();
    for name in ["signals", "inside", "job"] {
        let _ = std::fs::remove_file(ws.join(name));
    }
    (host, inside)
}

const MODES: [&[&str]; 5] = [
    &[],
    &["--landlock", "off"],
    &["--pid", "private"],
    &["--isolation", "landlock"],
    &["--new-session"],
];

#[test]
fn nothing_done_to_the_terminal_reaches_the_callers_terminal_or_a_host_job() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for opts in MODES {
            let (host, inside) = attack(&f, opts);
            let want = [
                ("exclusive", "0"),
                ("job-signals", "-"),
                ("job-state", "S"),
                ("ldisc", "0"),
                ("modes", "same"),
                ("status", "0"),
            ];
            for (k, v) in want {
                assert_eq!(
                    host[k], v,
                    "{who:?} {opts:?}: {k} on the host\n{host:?}\ninside:\n{inside}"
                );
            }
            // The calls ran (on the pty): the test would see them.
            assert!(
                inside.contains("exclusive0 done") && inside.contains("ldisc0 done"),
                "{who:?} {opts:?}: {inside}"
            );
        }
    }
}

/// No terminal on fds 0-2 (an agent's pipes), the caller's terminal its
/// controlling one: `/dev/tty` opens nothing inside, in every mode, and the
/// host's terminal and job are as they were.
#[test]
fn without_a_terminal_on_fds_0_to_2_the_controlling_one_is_out_of_reach() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for opts in MODES {
            let (host, inside) = attack_with(&f, opts, "null");
            for (k, v) in [
                ("exclusive", "0"),
                ("job-signals", "-"),
                ("job-state", "S"),
                ("ldisc", "0"),
                ("modes", "same"),
                ("status", "0"),
            ] {
                assert_eq!(
                    host[k], v,
                    "{who:?} {opts:?}: {k} on the host\n{host:?}\ninside:\n{inside}"
                );
            }
            assert!(inside.contains("dev-tty refused 6"), "{who:?} {opts:?}: {inside}");
        }
    }
}

#[test]
fn with_the_callers_terminal_shared_the_same_calls_reach_the_host() {
    // The control: --share-terminal gives the row up, and the test sees it.
    for who in Who::all() {
        let f = Fixture::new(who);
        let (host, inside) = attack(&f, &["--share-terminal"]);
        assert_eq!(host["exclusive"], "1", "{who:?}: {host:?}\n{inside}");
        assert_eq!(host["ldisc"], "27", "{who:?}: {host:?}\n{inside}");
        let signals = &host["job-signals"];
        assert!(
            signals.contains("SIGTTIN") && signals.contains("SIGWINCH"),
            "{who:?}: {host:?}\n{inside}"
        );
    }
}

#[test]
fn where_no_pty_can_be_had_the_layer_says_degraded() {
    // A console without devpts: /dev/pts covered by an empty tmpfs, in a
    // mount namespace of the test's own (root only: `unshare -m`).
    if !rustix::process::getuid().is_root() {
        eprintln!("SKIP: needs root for unshare -m");
        return;
    }
    let f = Fixture::new(Who::Root);
    let inner = format!(
        "mount -t tmpfs none /dev/pts && {} run -- sh -c 'echo ran'",
        qwrap().display()
    );
    let o = f
        .command("script")
        .args(["-qc", &format!("unshare -m sh -c \"{inner}\""), "/dev/null"])
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(out.contains("ran"), "{out}");
    assert!(
        out.contains("degraded: terminal: no pty can be had here (open(/dev/ptmx)"),
        "{out}"
    );
}

#[test]
fn the_terminal_works_as_one() {
    for who in Who::all() {
        let f = Fixture::new(who);
        // ^C reaches the foreground job; its exit code passes through.
        let ctrl_c = "trap 'echo got-int; exit 7' INT; echo ready; while :; do sleep 0.1; done";
        let (host, text) = on_terminal(&f, &[], &["sh", "-c", ctrl_c], r#"[["ready", "type", "\u0003"]]"#);
        assert!(
            text.contains("got-int") && host["status"] == "7",
            "{who:?}: {text}"
        );
        assert_eq!(host["modes"], "same", "{who:?}: {text}");
        // The name, the window size and a resize while it runs.
        let size = "tty; stty size; echo ready; read x; stty size";
        let typed = r#"[["ready", "resize", [40, 120]], ["ready", "type", "go\r"]]"#;
        let (_, text) = on_terminal(&f, &[], &["sh", "-c", size], typed);
        assert!(text.contains("/dev/pts/"), "{who:?}: {text}");
        assert!(
            text.contains("33 101") && text.contains("40 120"),
            "{who:?}: {text}"
        );
        // Job control inside.
        let jobs = "sleep 0.2 & fg %1 >/dev/null; echo fg-rc=$?";
        let (_, text) = on_terminal(&f, &[], &["bash", "--norc", "-ic", jobs], "[]");
        assert!(text.contains("fg-rc=0"), "{who:?}: {text}");
        // A full-screen program, quit with a key.
        f.write("ws/page", "first line of the page\n", 0o644);
        let (host, text) = on_terminal(&f, &[], &["less", "page"], r#"[["first line", "type", "q"]]"#);
        assert_eq!(
            (host["status"].as_str(), host["modes"].as_str()),
            ("0", "same"),
            "{who:?}: {text}"
        );
        // A command killed by a signal: qwrap ends the same way.
        let (host, _) = on_terminal(&f, &[], &["sh", "-c", "kill -TERM $$"], "[]");
        assert_eq!(host["status"], "-15", "{who:?}");
    }
}

#[test]
fn a_stopped_command_gives_the_caller_back_a_sane_terminal() {
    // The command stops itself, or qwrap is stopped from outside: the
    // shell's job stops with the terminal in its own modes, and `fg` goes on.
    for who in Who::all() {
        let f = Fixture::new(who);
        let script = f.write("stop.py", STOPPED_JOB, 0o644);
        for (cmd, tstp) in [("kill -STOP $$; exit 4", ""), ("sleep 1; exit 4", "1")] {
            let o = f
                .command("timeout")
                .env("TSTP", tstp)
                .args(["-s", "KILL", "30", "python3"])
                .arg(&script)
                .arg(qwrap())
                .args(["run", "--", "sh", "-c", cmd])
                .output()
                .unwrap();
            let err = stderr(&o);
            assert!(
                err.contains("stopped modes same") && err.contains("then 4"),
                "{who:?} {cmd}: {err}"
            );
        }
    }
}

#[test]
fn pid_one_cannot_be_traced_or_its_descriptors_taken() {
    // PID 1 holds the cache lock (a host file outside the roots, opened
    // read-write), the warden's socket and the pipe to the monitor.
    let attack = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("ptrace", libc.ptrace(16, 1, 0, 0))
for n in os.listdir("/proc/1/fd") if os.access("/proc/1/fd", os.R_OK) else []:
    try:
        fd = os.open(f"/proc/1/fd/{n}", os.O_RDWR)
        os.pwrite(fd, b"PWNED-BY-SANDBOX", 0)
        print("wrote", n)
    except OSError as e:
        print("refused", n, e.errno)
"#;
    for who in Who::all() {
        let f = Fixture::new(who);
        let o = f
            .qwrap(&["run", "--pid", "private", "--", "python3", "-c", attack])
            .output()
            .unwrap();
        let out = ok(&o);
        assert!(
            out.contains("ptrace -1") && !out.contains("wrote"),
            "{who:?}: {out}"
        );
        // The host side: no file of the fixture's home holds the marker.
        let found = std::process::Command::new("grep")
            .args(["-rl", "PWNED-BY-SANDBOX"])
            .arg(f.path())
            .output()
            .unwrap();
        assert!(
            found.stdout.is_empty(),
            "{who:?}: {}",
            String::from_utf8_lossy(&found.stdout)
        );
    }
}

/// ^C typed on the caller's terminal stops a command that does not hold
/// it (fds 0-2 not a terminal), in every mode: with `--pid private`, PID 1
/// is in a session of its own, and the stand-in passes the terminal's
/// SIGINT on.
#[test]
fn ctrl_c_stops_a_command_without_the_terminal() {
    const DRIVER: &str = r#"
import fcntl, os, sys, termios, time
master, slave = os.openpty()
pid = os.fork()
if pid == 0:
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.execv(sys.argv[1], sys.argv[1:])
os.close(slave)
time.sleep(1.5)
start = time.time()
os.write(master, b"\x03")
while time.time() - start < 15:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print(f"ended {time.time() - start:.1f} {os.waitstatus_to_exitcode(status)}")
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    print("still running")
"#;
    for who in Who::all() {
        let f = Fixture::new(who);
        let q = qwrap().display().to_string();
        for opts in [
            &[][..],
            &["--pid", "private"],
            &["--pid", "private", "--landlock", "off"],
            &["--isolation", "landlock"],
        ] {
            let mut c = f.command("python3");
            c.args(["-c", DRIVER, &q, "run"])
                .args(opts)
                .args(["--", "sleep", "20"]);
            let o = c.output().unwrap();
            let out = stdout(&o);
            let ended: Option<f64> = out
                .strip_prefix("ended ")
                .and_then(|r| r.split_whitespace().next()?.parse().ok());
            assert!(
                ended.is_some_and(|t| t < 5.0),
                "{who:?} {opts:?}: {out}{}",
                stderr(&o)
            );
        }
    }
}
