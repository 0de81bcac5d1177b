//! `qwrap run` as a process: the network modes, the exit status and
//! signals passing through, refusal without user namespaces, and death with
//! the parent. As root and as an unprivileged uid.

mod common;

use common::*;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn interfaces(dev: &str) -> Vec<String> {
    let mut v: Vec<String> = dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(|s| s.trim().to_string())
        .collect();
    v.sort();
    v
}

const LOOPBACK_ECHO: &str = "/usr/bin/python3 -c '
import socket
s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(1)
c = socket.create_connection(s.getsockname()); a, _ = s.accept()
c.sendall(b\"ping\"); print(a.recv(4).decode())'";

#[test]
fn closed_network_has_only_loopback_up() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let out = ok(&f.run_sh(
                api,
                &["--network", "closed"],
                &format!("cat /proc/net/dev; echo ---; {LOOPBACK_ECHO}"),
            ));
            let (dev, echo) = out.split_once("---\n").unwrap();
            assert_eq!(interfaces(dev), vec!["lo"], "{who:?} {api}");
            assert_eq!(echo.trim(), "ping");
        }
    }
}

#[test]
fn open_network_shows_host_interfaces() {
    let host = interfaces(&std::fs::read_to_string("/proc/net/dev").unwrap());
    for who in Who::all() {
        let f = Fixture::new(who);
        let out = ok(&f.run_sh("new", &["--network", "open"], "cat /proc/net/dev"));
        assert_eq!(interfaces(&out), host, "{who:?}");
    }
}

#[test]
fn network_mode_from_environment_and_invalid_values() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let out = f
            .qwrap(&["run", "--", "cat", "/proc/net/dev"])
            .env("QWRAP_NETWORK", "closed")
            .output()
            .unwrap();
        assert_eq!(interfaces(&ok(&out)), vec!["lo"]);
        let bad = f
            .qwrap(&["run", "--", "true"])
            .env("QWRAP_NETWORK", "bogus")
            .output()
            .unwrap();
        assert_eq!(bad.status.code(), Some(2));
        assert!(stderr(&bad).contains("$QWRAP_NETWORK"), "{}", stderr(&bad));
        let bad = f
            .qwrap(&["run", "--network", "nope", "--", "true"])
            .output()
            .unwrap();
        assert_eq!(bad.status.code(), Some(2));
        assert!(stderr(&bad).contains("--network"), "{}", stderr(&bad));
    }
}

#[test]
fn exit_status_passes_through() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for code in [0, 1, 42] {
            let o = f.run_sh("new", &[], &format!("exit {code}"));
            assert_eq!(o.status.code(), Some(code), "{who:?}");
        }
        let o = f.run_sh("new", &[], "kill -TERM $$");
        assert_eq!(o.status.signal(), Some(libc::SIGTERM), "{who:?}");
        f.write("ws/plain", "not a program\n", 0o644);
        let o = f.qwrap(&["run", "--", "./plain"]).output().unwrap();
        assert_eq!(o.status.code(), Some(126), "{}", stderr(&o));
        let o = f.qwrap(&["run", "--", "/usr"]).output().unwrap();
        assert_eq!(o.status.code(), Some(126), "{}", stderr(&o));
        let o = f.qwrap(&["run", "--", "qwrap-no-such-command"]).output().unwrap();
        assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
        assert!(stderr(&o).contains("No such file or directory (ENOENT)"));
    }
}

#[test]
fn signal_to_qwrap_pid_reaches_command() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let mut child = f
            .qwrap(&[
                "run",
                "--",
                "sh",
                "-c",
                "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        rustix::process::kill_process(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::TERM,
        )
        .unwrap();
        assert_eq!(lines.next().unwrap().unwrap(), "got-term");
        assert_eq!(child.wait().unwrap().code(), Some(7), "{who:?}");
    }
}

#[test]
fn user_namespaces_forbidden_fails_closed() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let marker = f.ws().join("marker");
        let script = format!(
            "echo 0 > /proc/sys/user/max_user_namespaces && exec '{}' run -- touch '{}'",
            qwrap().display(),
            marker.display()
        );
        let o = f
            .command("unshare")
            .args(["-U", "-r", "sh", "-c", &script])
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(125), "{who:?}: {err}");
        let step = if private_pid() {
            "qwrap: create the sandbox's namespaces: pipe2(O_CLOEXEC) for how the command ended"
        } else {
            "qwrap: create user and mount namespaces: unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWIPC)"
        };
        assert!(err.contains(step), "{err}");
        assert!(
            err.contains("hint: ") && err.contains("user.max_user_namespaces is 0"),
            "{err}"
        );
        assert!(!marker.exists(), "the command ran");
    }
}

/// State letter of a process, or None once it is gone.
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next())
}

fn wait_dead(pid: u32, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        match proc_state(pid) {
            None | Some('Z') | Some('X') => return true,
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

/// Starts `sh` which starts qwrap in the background; returns sh and qwrap's pid.
fn spawn_under_shell(f: &Fixture, opts: &str) -> (std::process::Child, u32) {
    let script = format!("'{}' run {opts} -- sleep 30 & echo $!; wait", qwrap().display());
    let mut sh = f
        .command("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(sh.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let qwrap_pid: u32 = line.trim().parse().unwrap();
    // Wait until the command is sleep, so the parent-death signals are
    // armed: qwrap itself, or (--pid private) the grandchild of qwrap,
    // which stays outside, under its PID 1.
    let start = Instant::now();
    let command = loop {
        let pid = if private_pid() {
            grandchild(qwrap_pid)
        } else {
            Some(qwrap_pid)
        };
        if let Some(pid) = pid.filter(|p| comm(*p).as_deref() == Some("sleep")) {
            break Some(pid);
        }
        if start.elapsed() > Duration::from_secs(5) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let Some(pid) = command else {
        sh.kill().ok();
        sh.wait().ok();
        panic!("qwrap did not exec");
    };
    (sh, pid)
}

fn comm(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|c| c.trim().to_string())
}

fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split_whitespace().nth(1)?.parse().ok()
}

/// A process whose parent's parent is `pid`.
fn grandchild(pid: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|&p| parent(p).and_then(parent) == Some(pid))
}

#[test]
fn command_dies_with_parent() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let (mut sh, pid) = spawn_under_shell(&f, "");
        sh.kill().unwrap();
        sh.wait().unwrap();
        assert!(
            wait_dead(pid, Duration::from_secs(5)),
            "{who:?}: command outlived its parent"
        );

        let (mut sh, pid) = spawn_under_shell(&f, "--no-die-with-parent");
        sh.kill().unwrap();
        sh.wait().unwrap();
        assert!(
            !wait_dead(pid, Duration::from_millis(300)),
            "{who:?}: --no-die-with-parent killed it"
        );
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).unwrap(),
            rustix::process::Signal::KILL,
        )
        .unwrap();
    }
}

/// Signals the caller ignores stay ignored for the command (`nohup`, a
/// background job's SIGINT), in each PID mode: sent by the command to
/// itself, and sent to qwrap's pid from outside (which `--pid private`'s
/// stand-in would otherwise pass on); the command writes its marker.
#[test]
fn ignored_signals_stay_ignored() {
    for who in Who::all() {
        for pid in ["shared", "private"] {
            let f = Fixture::new(who);
            let inner = "kill -HUP $$; kill -INT $$; sleep 1; echo alive > marker";
            let mut c = f.command("sh");
            c.args(["-c", "trap '' HUP INT; exec \"$@\"", "sh"])
                .arg(qwrap())
                .args(["run", "--pid", pid, "--", "sh", "-c", inner]);
            let child = c.spawn().unwrap();
            std::thread::sleep(Duration::from_millis(400));
            for sig in ["HUP", "INT"] {
                let _ = std::process::Command::new("kill")
                    .args([&format!("-{sig}"), &child.id().to_string()])
                    .status();
            }
            let o = child.wait_with_output().unwrap();
            ok(&o);
            let marker = std::fs::read_to_string(f.ws().join("marker")).unwrap_or_default();
            assert_eq!(marker.trim(), "alive", "{who:?} --pid {pid}: {:?}", o.status);
        }
    }
}

/// The caller's wait sees the command's CPU time, as a parent's would.
#[test]
fn the_commands_cpu_time_reaches_the_caller() {
    let measure = r#"
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True)
print(round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime, 2))
"#;
    let busy = "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done";
    for who in Who::all() {
        for pid in ["shared", "private"] {
            let f = Fixture::new(who);
            let o = f
                .command("python3")
                .args(["-c", measure])
                .arg(qwrap())
                .args(["run", "--pid", pid, "--", "sh", "-c", busy])
                .output()
                .unwrap();
            let seconds: f64 = ok(&o).trim().parse().unwrap();
            assert!(seconds >= 0.05, "{who:?} --pid {pid}: {seconds} s of CPU");
        }
    }
}
