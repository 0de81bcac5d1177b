//! The layers beyond the mount view, through real kernel behaviour, as root
//! and unprivileged: a real host process to signal, real abstract and
//! pathname sockets, a real pty, a real inherited file descriptor.

mod common;

use common::*;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};

/// A host process owned by the identity under test.
fn host_sleeper(f: &Fixture) -> Child {
    f.command("sleep")
        .arg("60")
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

#[test]
fn host_processes_cannot_be_signalled() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let sleeper = Killed(host_sleeper(&f));
        let script = format!("kill -0 {} 2>&1 && echo signalled", sleeper.0.id());
        // In a PID namespace of its own the host's number names nothing.
        let refused = if private_pid() {
            "No such process"
        } else {
            "Operation not permitted"
        };
        let out = ok(&f.run_sh("new", &[], &format!("{script}; true")));
        assert!(out.contains(refused), "{who:?}: {out}");
        // Without Landlock the warden refuses it.
        let out = ok(&f.run_sh("new", &["--landlock", "off"], &format!("{script}; true")));
        assert!(out.contains(refused), "{who:?}: {out}");
        // Outside a sandbox the same signal goes through: the test can fail.
        let out = ok(&f.command("sh").args(["-c", &script]).output().unwrap());
        assert_eq!(out.trim(), "signalled", "{who:?}");
    }
}

const CONNECT_ABSTRACT: &str = "/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(\"\\0\" + sys.argv[1]); print(\"connected\")
except OSError as e:
    print(e.strerror)' ";

#[test]
fn host_abstract_sockets_are_unreachable() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let name = format!("qwrap-test-{}-{:?}", std::process::id(), who);
        // The listener runs as the identity under test, on the host.
        let mut child = f
            .command("/usr/bin/python3")
            .args([
                "-c",
                "import socket,sys,time\ns=socket.socket(socket.AF_UNIX)\ns.bind('\\0'+sys.argv[1])\ns.listen(5)\nprint('ready',flush=True)\ntime.sleep(60)",
                &name,
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let _listener = Killed(child);
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        let out = ok(&f.run_sh(
            "new",
            &["--network", "open"],
            &format!("{CONNECT_ABSTRACT} {name}"),
        ));
        assert_eq!(out.trim(), "Operation not permitted", "{who:?}");
        let out = ok(&f.run_sh(
            "new",
            &["--network", "open", "--landlock", "off"],
            &format!("{CONNECT_ABSTRACT} {name}"),
        ));
        assert_eq!(out.trim(), "connected", "{who:?}: the control must reach it");
    }
}

fn connect_script(path: &std::path::Path) -> String {
    format!(
        "/usr/bin/python3 -c '
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(\"{}\"); print(\"connected\")
except OSError as e:
    print(e.strerror)'",
        path.display()
    )
}

#[test]
fn host_sockets_are_masked_in_roots_too() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let dir = f.mkdir("sockets");
            let outside = dir.join("host.sock");
            let inside = f.ws().join("ws.sock");
            // Bind as the identity under test so that ownership is realistic.
            let bind = |p: &std::path::Path| {
                let l = UnixListener::bind(p).unwrap();
                if rustix::process::getuid().is_root() {
                    let (u, g) = who.ids();
                    std::os::unix::fs::chown(p, Some(u), Some(g)).unwrap();
                }
                l
            };
            let _l1 = bind(&outside);
            let _l2 = bind(&inside);
            let script = format!("{}; {}", connect_script(&outside), connect_script(&inside));
            let out = ok(&f.run_sh(api, &[], &script));
            assert_eq!(
                out.lines().collect::<Vec<_>>(),
                ["Connection refused", "Connection refused"],
                "{who:?} {api}"
            );
            let allowed = f.run_sh(
                api,
                &[
                    "--allow-socket",
                    outside.to_str().unwrap(),
                    "--allow-socket",
                    inside.to_str().unwrap(),
                ],
                &script,
            );
            assert_eq!(
                ok(&allowed).lines().collect::<Vec<_>>(),
                ["connected", "connected"],
                "{who:?} {api}"
            );
            // inspect lists both, and the receipt names the allowed one.
            let o = f
                .qwrap(&["inspect", "--allow-socket", outside.to_str().unwrap()])
                .output()
                .unwrap();
            let text = ok(&o);
            assert!(
                text.contains(&format!("{}  [reachable]", outside.display())),
                "{text}"
            );
            let o = f.qwrap(&["inspect"]).output().unwrap();
            assert!(ok(&o).contains(&format!("{}  [masked]", outside.display())));
        }
    }
}

#[test]
fn inherited_descriptors_cannot_be_reopened_for_writing() {
    // An fd to a host file outside every root, opened read-only by the
    // caller: through /proc/self/fd the host's writable mount is reachable.
    // Landlock stops the reopen; where its file rules do not hold, a
    // read-only bind of the file's name.
    for who in Who::all() {
        let f = Fixture::new(who);
        let secret = f.write("outside.txt", "host data\n", 0o644);
        let run = |extra: &[&str]| {
            let file = std::fs::File::open(&secret).unwrap();
            let mut c = f.qwrap(&["run"]);
            c.args(extra)
                .args(["--", "sh", "-c", "echo tampered >> /proc/self/fd/3 && echo wrote"])
                .stdin(Stdio::from(file));
            // fd 3: dup of stdin, set up in the child before exec.
            unsafe {
                c.pre_exec(|| {
                    if libc::dup2(0, 3) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            c.output().unwrap()
        };
        // By default fd 3 (a file outside every root) does not reach the
        // command at all.
        let o = run(&[]);
        assert!(!stdout(&o).contains("wrote"), "{who:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("Directory nonexistent"), "{}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "host data\n");
        // Kept on purpose, it still cannot be reopened for writing.
        let o = run(&["--keep-fd", "3"]);
        assert!(!stdout(&o).contains("wrote"), "{who:?}: {}", stderr(&o));
        // Landlock's refusal; in a private PID namespace the read-only bind's.
        let denied = if private_pid() {
            "Read-only file system"
        } else {
            "Permission denied"
        };
        assert!(stderr(&o).contains(denied), "{}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "host data\n");
        // Without Landlock's file rules the kept file is opened again
        // through a read-only bind of its name instead.
        let o = run(&["--keep-fd", "3", "--landlock", "off"]);
        assert!(!stdout(&o).contains("wrote"), "{who:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("Read-only file system"),
            "{who:?}: {}",
            stderr(&o)
        );
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "host data\n");
        // Control: outside a sandbox the reopen writes the host file.
        let file = std::fs::File::open(&secret).unwrap();
        let o = f
            .command("sh")
            .args(["-c", "echo tampered >> /proc/self/fd/0 && echo wrote"])
            .stdin(Stdio::from(file))
            .output()
            .unwrap();
        assert!(stdout(&o).contains("wrote"), "{who:?}: control: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "host data\ntampered\n");
        f.write("outside.txt", "host data\n", 0o644);
    }
}

/// Runs `qwrap ARGS` under a real pty via python's pty module; returns what
/// the terminal showed.
fn under_pty(f: &Fixture, args: &[&str]) -> String {
    let mut c = f.command("/usr/bin/python3");
    c.arg("-c")
        .arg(
            "import pty, sys, os\n\
             out = []\n\
             def rd(fd):\n    d = os.read(fd, 4096); out.append(d); return d\n\
             pty.spawn(sys.argv[1:], rd)\n\
             sys.stdout.write(b''.join(out).decode(errors='replace'))",
        )
        .arg(qwrap())
        .args(args);
    ok(&c.output().unwrap())
}

const TIOCSTI_SCRIPT: &str = "import fcntl, termios, sys
try:
    fcntl.ioctl(0, termios.TIOCSTI, b'x'); print('injected')
except OSError as e:
    print('refused', e.strerror)";

#[test]
fn tiocsti_is_refused_and_the_terminal_still_works() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let out = under_pty(
            &f,
            &[
                "run",
                "--",
                "sh",
                "-c",
                &format!(
                    "/usr/bin/python3 -c \"{TIOCSTI_SCRIPT}\"; stty size; stty raw -echo; stty sane; echo tty-ok > /dev/tty; echo out-ok > /dev/stdout"
                ),
            ],
        );
        assert!(out.contains("refused Operation not permitted"), "{who:?}: {out}");
        assert!(!out.contains("injected"));
        assert!(out.contains("tty-ok") && out.contains("out-ok"), "{out}");
        // The size line: two numbers.
        assert!(
            out.lines().any(|l| {
                let n: Vec<&str> = l.split_whitespace().collect();
                n.len() == 2 && n.iter().all(|x| x.parse::<u32>().is_ok())
            }),
            "{out}"
        );
    }
    // The control: where the kernel still allows TIOCSTI, the same script
    // injects outside qwrap.
    if std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").is_ok_and(|v| v.trim() == "1") {
        let f = Fixture::new(Who::all()[0]);
        let mut c = f.command("/usr/bin/python3");
        c.arg("-c")
            .arg("import pty, sys, os\nout=[]\ndef rd(fd):\n    d=os.read(fd,4096); out.append(d); return d\npty.spawn(sys.argv[1:], rd)\nsys.stdout.write(b''.join(out).decode(errors='replace'))")
            .args(["/usr/bin/python3", "-c", TIOCSTI_SCRIPT]);
        assert!(ok(&c.output().unwrap()).contains("injected"));
    }
}

#[test]
fn new_session_leaves_the_terminal() {
    let f = Fixture::new(Who::all()[0]);
    let out = under_pty(
        &f,
        &[
            "run",
            "--new-session",
            "--",
            "sh",
            "-c",
            "echo x > /dev/tty 2>&1 || echo no-tty",
        ],
    );
    assert!(out.contains("no-tty"), "{out}");
}

/// Hooks, config and any new name written into the git dir inside stay
/// inside (its top level is the sandbox's own); `--allow-git-config` writes
/// them through.
#[test]
fn git_hooks_and_config_written_inside_stay_inside() {
    for who in Who::all() {
        let f = Fixture::new(who);
        ok(&f
            .command("git")
            .arg("-C")
            .arg(f.ws())
            .args(["init", "-q", "-b", "main"])
            .output()
            .unwrap());
        let config = std::fs::read(f.ws().join(".git/config")).unwrap();
        for api in APIS {
            let script = "touch .git/hooks/pre-commit && echo '[x]' >> .git/config && touch .git/other && git config user.email in@side && echo inside-ok";
            let out = ok(&f.run_sh(api, &[], script));
            assert_eq!(out.trim(), "inside-ok", "{who:?} {api}");
            assert!(!f.ws().join(".git/hooks/pre-commit").exists(), "{who:?} {api}");
            assert!(!f.ws().join(".git/other").exists(), "{who:?} {api}");
            assert_eq!(
                std::fs::read(f.ws().join(".git/config")).unwrap(),
                config,
                "{who:?} {api}"
            );
        }
        let out = ok(&f.run_sh(
            "legacy",
            &["--allow-git-config"],
            "touch .git/hooks/pre-commit && echo hook-ok",
        ));
        assert_eq!(out.trim(), "hook-ok");
        assert!(f.ws().join(".git/hooks/pre-commit").exists());
    }
}

#[test]
fn landlock_modes_are_reported_and_require_fails_closed() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let out = ok(&f.qwrap(&["inspect", "--landlock", "off"]).output().unwrap());
        assert!(out.contains("landlock filesystem: off (--landlock off)"), "{out}");
        if private_pid() {
            assert!(out.contains("host processes invisible"), "{out}");
            // Landlock's file rules would forbid the nested sandboxes' mounts.
            let o = f.run_sh("new", &["--landlock", "require"], "true");
            assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
            assert!(stderr(&o).contains("--pid private"), "{}", stderr(&o));
            continue;
        }
        assert!(out.contains("host processes visible but not signalable"), "{out}");
        let out = ok(&f.qwrap(&["inspect", "--landlock", "require"]).output().unwrap());
        assert!(out.contains("landlock scopes: applied"), "{out}");
        ok(&f.run_sh("new", &["--landlock", "require"], "true"));
        // A kernel without Landlock scopes, pretended by the test switch.
        let marker = f.ws().join("marker");
        let o = f
            .qwrap(&[
                "run",
                "--landlock",
                "require",
                "--",
                "touch",
                marker.to_str().unwrap(),
            ])
            .env("QWRAP_TEST_LANDLOCK_ABI", "5")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
        assert!(stderr(&o).contains("Landlock scopes degraded"), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("QWRAP_TEST_LANDLOCK_ABI"),
            "the switch must say so: {}",
            stderr(&o)
        );
        assert!(!marker.exists());
        let o = f
            .qwrap(&["inspect"])
            .env("QWRAP_TEST_LANDLOCK_ABI", "5")
            .output()
            .unwrap();
        let out = ok(&o);
        assert!(out.contains("landlock scopes: degraded (Landlock ABI 5"), "{out}");
        assert!(out.contains("capped by the test switch"), "{out}");
        let o = f
            .qwrap(&["inspect", "--landlock", "require"])
            .env("QWRAP_TEST_LANDLOCK_ABI", "0")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125));
        assert!(
            stdout(&o).contains("Enforcement: none (--landlock require"),
            "{}",
            stdout(&o)
        );
        // best-effort on an old ABI still runs, without the scopes: the
        // warden refuses the signal instead.
        let sleeper = Killed(host_sleeper(&f));
        let o = f
            .qwrap(&[
                "run",
                "--",
                "sh",
                "-c",
                &format!(
                    "kill -0 {} 2>/dev/null && echo signalled || echo refused",
                    sleeper.0.id()
                ),
            ])
            .env("QWRAP_TEST_LANDLOCK_ABI", "5")
            .output()
            .unwrap();
        assert_eq!(ok(&o).trim(), "refused");
    }
}

#[test]
fn verify_proves_every_layer() {
    for who in Who::all() {
        let f = Fixture::new(who);
        ok(&f
            .command("git")
            .arg("-C")
            .arg(f.ws())
            .args(["init", "-q"])
            .output()
            .unwrap());
        let o = f.qwrap(&["verify"]).output().unwrap();
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{out}");
        assert!(!out.contains("FAIL"), "{out}");
        for name in [
            "PASS git dirs cannot be swapped; nothing planted in them reaches the host's",
            "PASS nothing outlives the command",
            "PASS a host process cannot be signalled",
            "PASS /proc/<host pid>/root and /environ unreachable",
            "PASS a host abstract socket cannot be reached",
            "PASS a masked host socket refuses connections",
            "PASS a nested namespace cannot remount / read-write",
            "PASS TIOCSTI refused on a real pty",
        ] {
            assert!(out.contains(name), "{who:?}: {name} missing:\n{out}");
        }
        // Layers that are off are not claimed: their checks are skipped, or
        // fail where the exposure is real (abstract sockets, accepted here
        // by name). Signals are measured whatever the layer: the warden
        // refuses them.
        let out = ok(&f
            .qwrap(&[
                "verify",
                "--landlock",
                "off",
                "--allow-git-config",
                "--accept-degraded",
                "abstract-socket",
            ])
            .output()
            .unwrap());
        assert!(
            out.contains("ACCEPTED a host abstract socket cannot be reached"),
            "{out}"
        );
        assert!(out.contains("PASS a host process cannot be signalled"), "{out}");
        assert!(out.contains("SKIP git hooks and config read-only"), "{out}");
    }
}
