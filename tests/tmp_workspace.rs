//! A workspace under /tmp (where agents often clone): the private /tmp
//! replaces the host's, but the workspace in it is the host's directory
//! bound in, so a hidden path or a live socket there must be hidden or
//! masked like anywhere else — with namespaces and without.

mod common;
use common::*;
use std::os::unix::fs::{PermissionsExt, chown};
use std::path::Path;

/// A workspace under /tmp owned by the identity under test, with a secret
/// and a listening socket in it.
struct TmpWorkspace {
    dir: tempfile::TempDir,
    listener: std::os::unix::net::UnixListener,
}

impl TmpWorkspace {
    fn new(who: Who) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("qwrap-tmp-ws-")
            .tempdir_in("/tmp")
            .unwrap();
        let (uid, gid) = who.ids();
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "TMP-WORKSPACE-SECRET").unwrap();
        let sock = dir.path().join("agent.sock");
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        listener.set_nonblocking(true).unwrap();
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).unwrap();
        for p in [dir.path(), secret.as_path(), sock.as_path()] {
            if rustix::process::getuid().is_root() {
                chown(p, Some(uid), Some(gid)).unwrap();
            }
        }
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        TmpWorkspace { dir, listener }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn run(f: &Fixture, ws: &TmpWorkspace, isolation: &str) -> std::process::Output {
    let secret = ws.path().join("secret.txt");
    let py = format!(
        "import socket\ntry:\n    c = socket.socket(socket.AF_UNIX); c.connect({:?}); print('connected')\nexcept OSError as e:\n    print('refused', e.errno)\n",
        ws.path().join("agent.sock").to_str().unwrap()
    );
    let mut c = f.qwrap(&["run", "--isolation", isolation, "--hide"]);
    c.arg(&secret)
        .args(["--", "sh", "-c", "cat secret.txt; python3 -c \"$PY\""])
        .current_dir(ws.path())
        .env("PY", py)
        .env_remove("QWRAP_PID");
    c.output().unwrap()
}

#[test]
fn a_hidden_file_and_a_socket_in_a_workspace_under_tmp_stay_out_of_reach() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let ws = TmpWorkspace::new(who);
        for isolation in ["namespaces", "landlock"] {
            let o = run(&f, &ws, isolation);
            let out = stdout(&o);
            assert!(
                !out.contains("TMP-WORKSPACE-SECRET"),
                "{who:?} {isolation}: {out}"
            );
            assert!(
                stderr(&o).contains("Permission denied"),
                "{who:?} {isolation}: {}",
                stderr(&o)
            );
            assert!(out.contains("refused"), "{who:?} {isolation}: {out}");
            assert!(
                ws.listener.accept().is_err(),
                "{who:?} {isolation}: the socket heard a connection"
            );
        }
        // The control: outside the sandbox both are there.
        let o = f
            .command("cat")
            .arg(ws.path().join("secret.txt"))
            .output()
            .unwrap();
        assert_eq!(ok(&o), "TMP-WORKSPACE-SECRET");
    }
}

/// A home under /tmp beside a workspace deeper in the same top directory
/// (a CI job's scratch tree): the top is the host's, shown read-only, and
/// the home's credential files stay hidden in every home view.
#[test]
fn a_home_beside_the_workspace_under_tmp_keeps_its_secrets() {
    for who in Who::all() {
        let top = tempfile::Builder::new()
            .prefix("qwrap-tmp-top-")
            .tempdir_in("/tmp")
            .unwrap();
        let (uid, gid) = who.ids();
        let home = top.path().join("home");
        let ws = top.path().join("ws");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "TMP-HOME-SECRET").unwrap();
        for p in [
            top.path(),
            &home,
            &home.join(".ssh"),
            &home.join(".ssh/id_rsa"),
            &ws,
        ] {
            if rustix::process::getuid().is_root() {
                chown(p, Some(uid), Some(gid)).unwrap();
            }
            let mode = if p.is_dir() { 0o755 } else { 0o600 };
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let f = Fixture::new(who);
        for view in ["listed", "readonly"] {
            let o = f
                .qwrap(&["run", "--home", view, "--", "sh", "-c", "cat ~/.ssh/id_rsa; true"])
                .current_dir(&ws)
                .env("HOME", &home)
                .env_remove("QWRAP_PID")
                .output()
                .unwrap();
            let out = ok(&o);
            assert!(!out.contains("SECRET"), "{who:?} {view}: {out}");
        }
    }
}
