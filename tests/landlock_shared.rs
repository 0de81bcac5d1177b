//! `--isolation landlock`: what the host shares without namespaces, held
//! by Landlock and the second seccomp filter: its Unix sockets (stream and
//! datagram), the closed network, its /dev (the user's other terminals,
//! the disks), keyrings and SysV IPC. Each checked on the host's side (the
//! listener that hears nothing, the line left unread), as root and as an
//! unprivileged uid, with a control run outside.

mod common;
use common::*;
use std::os::unix::fs::PermissionsExt;

/// Opens a terminal of the caller's own (a pty, as another login's would
/// be), writes a line into it, prints the slave's path and waits.
const OTHER_TERMINAL: &str = "import os, sys, time\nm, s = os.openpty()\nos.write(m, b'typed elsewhere\\n')\nprint(os.ttyname(s), flush=True)\ntime.sleep(30)\n";

#[test]
fn host_unix_sockets_and_the_closed_network_are_out_of_reach() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let sock = f.path().join("agent.sock");
        let unix = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).unwrap();
        unix.set_nonblocking(true).unwrap();
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        let port = tcp.local_addr().unwrap().port();
        let py = format!(
            "import socket\nfor fam, addr in ((socket.AF_UNIX, {s:?}), (socket.AF_INET, ('127.0.0.1', {port}))):\n    try:\n        c = socket.socket(fam); c.connect(addr); print('connected', fam)\n    except OSError as e:\n        print('refused', e.errno)\n",
            s = sock.to_str().unwrap()
        );
        std::fs::write(f.ws().join("c.py"), &py).unwrap();
        let o = run_landlock(&f, &["--network", "closed"], "python3 c.py");
        let out = ok(&o);
        assert_eq!(out.matches("refused 1").count(), 2, "{who:?}: {out}");
        assert!(
            unix.accept().is_err(),
            "{who:?}: the host's Unix socket heard a connection"
        );
        assert!(
            tcp.accept().is_err(),
            "{who:?}: the host's TCP port heard a connection"
        );
        // Open network: TCP reaches the host's loopback, a Unix socket
        // still cannot be made.
        let o = run_landlock(&f, &[], "python3 c.py");
        let out = ok(&o);
        assert!(
            out.contains("refused 1") && out.contains("connected"),
            "{who:?}: {out}"
        );
        assert!(unix.accept().is_err(), "{who:?}");
        // The control: the same program reaches both outside.
        let o = f.command("python3").arg("c.py").output().unwrap();
        assert_eq!(ok(&o).matches("connected").count(), 2, "{who:?}");
    }
}

/// A datagram pair's `sendto` names any host pathname socket (journald's,
/// syslog's, a service manager's notify socket): the host's datagram
/// socket hears nothing, with the network open and closed; stream and
/// seqpacket pairs (which cannot address another socket) still work.
#[test]
fn host_datagram_sockets_hear_nothing() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let sock = f.path().join("log.sock");
        let host = std::os::unix::net::UnixDatagram::bind(&sock).unwrap();
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).unwrap();
        host.set_nonblocking(true).unwrap();
        let py = format!(
            "import socket\nfor t in (socket.SOCK_DGRAM, socket.SOCK_STREAM, socket.SOCK_SEQPACKET):\n    try:\n        a, b = socket.socketpair(socket.AF_UNIX, t)\n    except OSError as e:\n        print('pair refused', t, e.errno); continue\n    try:\n        a.sendto(b'hello', {s:?}); print('sent', t)\n    except OSError as e:\n        print('not sent', t, e.errno)\n",
            s = sock.to_str().unwrap()
        );
        std::fs::write(f.ws().join("d.py"), &py).unwrap();
        for args in [&[][..], &["--network", "closed"]] {
            let out = ok(&run_landlock(&f, args, "python3 d.py"));
            let mut buf = [0u8; 64];
            assert!(
                host.recv(&mut buf).is_err(),
                "{who:?} {args:?}: the host's socket heard: {out}"
            );
            assert!(out.contains("pair refused 2 1"), "{who:?} {args:?}: {out}");
            assert!(
                !out.contains("pair refused 1") && !out.contains("pair refused 5"),
                "{who:?} {args:?}: {out}"
            );
        }
        // The control: outside, the datagram arrives.
        ok(&f.command("python3").arg("d.py").output().unwrap());
        let mut buf = [0u8; 64];
        assert!(host.recv(&mut buf).is_ok(), "{who:?}: control");
    }
}

/// /dev is what the namespaces mode shows: the user's other terminals
/// cannot be opened (a line typed there stays unread), nor a block device
/// (root would read a disk raw); null, zero and urandom still can. (A pty
/// of the command's own cannot be made in this mode: its slave is one of
/// the host's /dev/pts, beside the user's other terminals.)
#[test]
fn dev_holds_only_what_the_namespaces_mode_shows() {
    use std::io::BufRead;
    let py = "import os, sys\nfor p in sys.argv[1:]:\n    try:\n        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK); os.close(fd); print('opened', p)\n    except OSError as e:\n        print('refused', p, e.errno)\nprint('urandom', len(open('/dev/urandom', 'rb').read(4)))\n";
    let block = std::fs::read_dir("/dev")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            std::fs::metadata(p)
                .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()))
        });
    for who in Who::all() {
        let f = Fixture::new(who);
        std::fs::write(f.ws().join("dev.py"), py).unwrap();
        let mut other = f
            .command("python3")
            .args(["-c", OTHER_TERMINAL])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(other.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let pts = line.trim().to_string();
        let mut args: Vec<String> = vec![pts.clone(), "/dev/null".into(), "/dev/zero".into()];
        if who == Who::Root {
            args.extend(block.iter().map(|b| b.display().to_string()));
        }
        let script = format!("python3 dev.py {}", args.join(" "));
        let out = ok(&run_landlock(&f, &[], &script));
        let _ = other.kill();
        let _ = other.wait();
        assert!(
            out.contains(&format!("refused {pts} 13")),
            "{who:?}: another terminal: {out}"
        );
        if let (Who::Root, Some(b)) = (who, &block) {
            assert!(
                out.contains(&format!("refused {} 13", b.display())),
                "{who:?}: a block device: {out}"
            );
        }
        for open in ["opened /dev/null", "opened /dev/zero", "urandom 4"] {
            assert!(out.contains(open), "{who:?}: {open}: {out}");
        }
    }
}

#[test]
fn keyrings_and_sysv_ipc_are_refused() {
    let py = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.syscall(250, 0, -3, 0)\nprint('keyctl', r, ctypes.get_errno())\nr = libc.shmget(0, 4096, 0o1600)\nprint('shmget', r, ctypes.get_errno())\n";
    for who in Who::all() {
        let f = Fixture::new(who);
        std::fs::write(f.ws().join("k.py"), py).unwrap();
        let o = run_landlock(&f, &[], "python3 k.py");
        let out = ok(&o);
        assert!(
            out.contains("keyctl -1 1\n") && out.contains("shmget -1 1\n"),
            "{who:?}: {out}"
        );
        // The control: in the namespaces mode both calls work (the
        // keyring calls with --share-keyring, a private IPC namespace).
        let mut c = f.qwrap(&["run", "--share-keyring", "--", "python3", "k.py"]);
        let o = c.env_remove("QWRAP_PID").output().unwrap();
        let out = ok(&o);
        assert!(!out.contains("-1 1\n"), "{who:?}: {out}");
    }
}
