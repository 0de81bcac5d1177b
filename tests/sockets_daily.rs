//! Sockets in daily use: a tmux server whose socket lies in a writable root
//! (the host's /tmp with `--tmp host`) takes no command from inside; the
//! ssh agent passes with `--ssh-agent` (its socket under the private /tmp
//! shown at its own path) and is unset inside without it, with a note;
//! another user's socket that the caller cannot reach anyway stops
//! nothing and warns of nothing. With real tmux and ssh-agent, as root and
//! unprivileged.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;

fn have(bin: &str) -> bool {
    Path::new("/usr/bin").join(bin).exists()
}

/// Kills a tmux server when dropped, a failed assertion included (a server
/// left behind with its socket's directory gone would stop every later
/// sandbox of its user: a socket that cannot be found).
struct TmuxServer<'a>(&'a Fixture, std::path::PathBuf);

impl Drop for TmuxServer<'_> {
    fn drop(&mut self) {
        let _ = self
            .0
            .command("tmux")
            .arg("-S")
            .arg(&self.1)
            .arg("kill-server")
            .output();
    }
}

#[test]
fn tmux_in_a_writable_root_takes_no_command() {
    if !have("tmux") {
        eprintln!("SKIP tmux: not installed");
        return;
    }
    for who in Who::all() {
        let f = Fixture::new(who);
        let sock = f.ws().join("tmux.sock");
        let marker = f.ws().join("ESCAPED");
        let start = f
            .command("tmux")
            .arg("-S")
            .arg(&sock)
            .args(["new-session", "-d", "-s", "main", "sh"])
            .env("TERM", "xterm")
            .output()
            .unwrap();
        ok(&start);
        let _server = TmuxServer(&f, sock.clone());
        let script = format!(
            "tmux -S '{}' send-keys -t main 'touch {}' Enter 2>&1; echo tried",
            sock.display(),
            marker.display()
        );
        for api in APIS {
            let o = f.run_sh(api, &[], &script);
            assert!(stdout(&o).contains("tried"), "{who:?} {api}: {}", stderr(&o));
        }
        // --tmp host makes /tmp a writable root: its sockets are masked too.
        let o = f.run_sh("new", &["--tmp", "host"], &script);
        assert!(stdout(&o).contains("tried"), "{who:?}: {}", stderr(&o));
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(
            !marker.exists(),
            "{who:?}: a command typed through tmux ran on the host"
        );
    }
}

#[test]
fn the_ssh_agent_passes_with_ssh_agent() {
    if !have("ssh-agent") {
        eprintln!("SKIP ssh-agent: not installed");
        return;
    }
    for who in Who::all() {
        let f = Fixture::new(who);
        let dir = tempfile::Builder::new()
            .prefix("qwrap-test-agent-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let sock = dir.path().join("agent.sock");
        let mut agent = f
            .command("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&sock)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if sock.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // ssh-add -l: 1 = an agent with no identities, 2 = no agent.
        let probe = "ssh-add -l >/dev/null 2>&1; echo \"rc=$? sock=$SSH_AUTH_SOCK\"";
        for api in APIS {
            let o = f
                .qwrap(&["run", "--ssh-agent", "--", "sh", "-c", probe])
                .env("SSH_AUTH_SOCK", &sock)
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            assert!(
                stdout(&o).starts_with("rc=1 sock=/tmp/"),
                "{who:?} {api}: {}{}",
                stdout(&o),
                stderr(&o)
            );
            let o = f
                .qwrap(&["run", "--", "sh", "-c", probe])
                .env("SSH_AUTH_SOCK", &sock)
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            assert_eq!(stdout(&o).trim(), "rc=2 sock=", "{who:?} {api}");
            assert!(
                stderr(&o).contains("--ssh-agent"),
                "{who:?} {api}: {}",
                stderr(&o)
            );
        }
        let _ = agent.kill();
        let _ = agent.wait();
    }
}

/// Another user's socket in a directory the caller cannot search: the
/// sandbox starts, and says nothing of it.
#[test]
fn another_users_unreachable_socket_stops_nothing() {
    if !rustix::process::getuid().is_root() || !have("setpriv") {
        eprintln!("SKIP another user's socket: needs root and setpriv to make one");
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("qwrap-test-other-")
        .tempdir_in("/tmp")
        .unwrap();
    std::os::unix::fs::chown(dir.path(), Some(4242), Some(4242)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let sock = dir.path().join("s");
    let listen = format!(
        "import socket, time\ns = socket.socket(socket.AF_UNIX)\ns.bind('{}')\ns.listen()\nprint('up', flush=True)\ntime.sleep(30)",
        sock.display()
    );
    let mut other = std::process::Command::new("setpriv")
        .args([
            "--reuid",
            "4242",
            "--regid",
            "4242",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            &listen,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(other.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "up");
    // As an unprivileged caller, and as root (who could reach it, but not
    // from the sandbox, which has no capabilities), with /tmp private and
    // the host's.
    let mut outs = Vec::new();
    for who in Who::all() {
        let f = Fixture::new(who);
        for tmp in ["private", "host"] {
            outs.push((who, tmp, f.run_sh("new", &["--tmp", tmp], "echo ran")));
        }
    }
    let _ = other.kill();
    let _ = other.wait();
    for (who, tmp, o) in outs {
        assert_eq!(ok(&o).trim(), "ran", "{who:?} {tmp}");
        assert!(
            !stderr(&o).contains("not masked"),
            "{who:?} {tmp}: {}",
            stderr(&o)
        );
        assert!(
            !stderr(&o).contains("degraded: host socket"),
            "{who:?} {tmp}: {}",
            stderr(&o)
        );
    }
}

/// A socket whose file its program removed after binding (still listening)
/// has no path left: root's sandbox starts (nothing to mask). An
/// unprivileged caller cannot ask the kernel where such a file is, and
/// fails closed instead (tests/sockets_unresolved.rs).
#[test]
fn a_listening_socket_whose_file_is_gone_stops_nothing() {
    if !rustix::process::getuid().is_root() {
        eprintln!("SKIP a removed socket: the kernel answers where it is only to root");
        return;
    }
    let f = Fixture::new(Who::Root);
    let sock = f.path().join("gone.sock");
    let l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    std::fs::remove_file(&sock).unwrap();
    let o = f.run_sh("new", &[], "echo ran");
    drop(l);
    assert_eq!(ok(&o).trim(), "ran", "{}", stderr(&o));
}
