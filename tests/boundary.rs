//! Routes past the boundary that a hostile review found, each watched from
//! the host: a mode that must not change, a file that must not appear.
//! As root and unprivileged, on both mount APIs.

mod common;

use common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// An inherited directory fd outside every root: no chmod, utimes, chown or
/// socket reach through it; the fd is simply not there.
#[test]
fn an_inherited_directory_fd_changes_nothing() {
    let script = "import os\nfor f in (lambda: os.chmod('victim', 0o666, dir_fd=3), lambda: os.fchmod(3, 0o777), lambda: os.utime('victim', (1, 1), dir_fd=3)):\n    try:\n        f(); print('changed')\n    except OSError as e:\n        print('refused', e.errno)\n";
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let dir = f.mkdir("outside");
            let victim = f.write("outside/victim", "x", 0o600);
            let mtime = std::fs::metadata(&victim).unwrap().mtime();
            for keep in [false, true] {
                let dirfd = std::fs::File::open(&dir).unwrap();
                let mut c = f.qwrap(&["run"]);
                if keep {
                    c.args(["--keep-fd", "3", "--landlock", "off"]);
                }
                c.args(["--", "python3", "-c", script])
                    .env("QWRAP_MOUNT_API", api)
                    .stdin(Stdio::from(dirfd));
                // SAFETY: dup2 in the child before exec, async-signal-safe.
                unsafe {
                    c.pre_exec(|| match libc::dup2(0, 3) {
                        -1 => Err(std::io::Error::last_os_error()),
                        _ => Ok(()),
                    });
                }
                let o = c.output().unwrap();
                let out = stdout(&o);
                if keep {
                    // Kept on purpose and without Landlock, the fd is
                    // opened again through a read-only bind of its name.
                    assert_eq!(
                        out.matches("refused 30").count(),
                        3,
                        "{who:?} {api} kept: {out} {}",
                        stderr(&o)
                    );
                } else {
                    assert_eq!(
                        out.matches("refused 9").count(),
                        3,
                        "{who:?} {api}: {out} {}",
                        stderr(&o)
                    );
                }
                assert_eq!(mode(&victim), 0o600, "{who:?} {api} {keep}");
                assert_eq!(mode(&dir), 0o755, "{who:?} {api} {keep}");
                assert_eq!(std::fs::metadata(&victim).unwrap().mtime(), mtime);
            }
            // Control: outside a sandbox the same fd changes the host file.
            // (Python will not start with a directory on stdin.)
            let dirfd = std::fs::File::open(&dir).unwrap();
            let raw = std::os::fd::AsRawFd::as_raw_fd(&dirfd);
            let mut c = f.command("python3");
            c.args(["-c", script]);
            // SAFETY: dup2 in the child before exec, async-signal-safe.
            unsafe {
                // dup2 onto itself keeps close-on-exec: clear it too.
                c.pre_exec(
                    move || match (libc::dup2(raw, 3), libc::fcntl(3, libc::F_SETFD, 0)) {
                        (-1, _) | (_, -1) => Err(std::io::Error::last_os_error()),
                        _ => Ok(()),
                    },
                );
            }
            let out = stdout(&c.output().unwrap());
            assert!(out.contains("changed"), "{who:?} {api} control: {out}");
        }
    }
}

/// A terminal on fds 0-2 works, but its mode cannot change.
#[test]
fn the_callers_terminal_keeps_its_mode() {
    // The pty's slave is fds 0-2 of qwrap; the host-side mode of its node
    // is read before and after.
    let py = "import os,subprocess,sys\nm,s=os.openpty()\nname=os.ttyname(s)\nbefore=oct(os.stat(name).st_mode&0o7777)\np=subprocess.Popen(sys.argv[1:],stdin=s,stdout=s,stderr=s)\nos.close(s)\nout=b''\nwhile True:\n    try:\n        d=os.read(m,4096)\n    except OSError:\n        break\n    if not d: break\n    out+=d\np.wait()\nprint(out.decode(errors='replace'))\nprint('host', before, oct(os.stat(name).st_mode&0o7777))\n";
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let inner = "chmod 666 /proc/self/fd/0 2>/dev/null; chmod 666 /dev/stdin 2>/dev/null; chmod 600 /proc/self/fd/1 2>/dev/null; test -t 0 && echo works";
            let o = f
                .command("python3")
                .args(["-c", py])
                .arg(qwrap())
                .args(["run", "--", "sh", "-c", inner])
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            let out = stdout(&o);
            assert!(out.contains("works"), "{who:?} {api}: {out} {}", stderr(&o));
            let host = out.lines().find(|l| l.starts_with("host ")).unwrap_or_default();
            let v: Vec<&str> = host.split_whitespace().collect();
            assert!(v.len() == 3 && v[1] == v[2], "{who:?} {api}: {out}");
        }
    }
}

/// Device nodes: usable, but their mode and times cannot change (root's
/// case: the clones were writable mounts). No setuid or setgid bit can be
/// set on any file.
#[test]
fn devices_and_set_id_bits() {
    let script = "chmod 600 /dev/full 2>/dev/null && echo chmod-dev; touch -d @1 /dev/null 2>/dev/null && echo touch-dev
                  echo ok > /dev/null && head -c1 /dev/zero | wc -c
                  cp /bin/sh ./rootsh && chmod 4755 ./rootsh 2>/dev/null && echo setuid
                  chmod g+s ./rootsh 2>/dev/null && echo setgid
                  python3 -c 'import os; os.open(\"x\", os.O_CREAT|os.O_WRONLY, 0o4755)' 2>/dev/null && echo creat-setuid
                  chmod 755 ./rootsh && echo plain-chmod";
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let (full, null) = (Path::new("/dev/full"), Path::new("/dev/null"));
            let (m_full, t_null) = (mode(full), std::fs::metadata(null).unwrap().mtime());
            let o = f.run_sh(api, &[], script);
            let out = stdout(&o);
            assert_eq!(
                out.trim(),
                "1\nplain-chmod",
                "{who:?} {api}: {out} {}",
                stderr(&o)
            );
            assert_eq!(mode(full), m_full);
            assert!(std::fs::metadata(null).unwrap().mtime() >= t_null);
            assert_eq!(mode(&f.ws().join("rootsh")) & 0o6000, 0);
            assert!(!f.ws().join("x").exists() || mode(&f.ws().join("x")) & 0o6000 == 0);
        }
    }
}

/// Variables cannot grant a root the include rules would refuse.
#[test]
fn variables_cannot_make_home_paths_writable() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let ssh = f.mkdir("home/.ssh");
            let key = f.write("home/.ssh/authorized_keys", "key\n", 0o600);
            for var in ["XDG_CACHE_HOME", "QWEN_HOME", "QWEN_RUNTIME_DIR"] {
                let o = f
                    .qwrap(&["run", "--profile", "qwen", "--", "sh", "-c"])
                    .arg(format!(
                        "echo evil >> {}; touch {}/new",
                        key.display(),
                        ssh.display()
                    ))
                    .env(var, &ssh)
                    .env("QWRAP_MOUNT_API", api)
                    .output()
                    .unwrap();
                // The listed home shows no ~/.ssh/authorized_keys: the
                // shell cannot even find the directory to write in.
                let e = stderr(&o);
                assert!(
                    e.contains("Read-only file system") || e.contains("nonexistent"),
                    "{who:?} {api} {var}: {e}"
                );
                assert_eq!(std::fs::read_to_string(&key).unwrap(), "key\n");
                assert!(!ssh.join("new").exists());
            }
        }
    }
}

/// The home rules hold for the account's home in /etc/passwd too, whatever
/// $HOME says (root's home exists on every host).
#[test]
fn home_from_passwd_stays_protected() {
    if !rustix::process::getuid().is_root() {
        eprintln!("SKIP the account's home from /etc/passwd: needs root (root's home)");
        return;
    }
    let f = Fixture::new(Who::Root);
    let inside = tempfile::Builder::new()
        .prefix(".qwrap-test-")
        .tempdir_in("/root")
        .unwrap();
    let inside = inside.path().to_str().unwrap().to_string();
    for args in [
        &["run", "--workspace", "/root", "--", "true"][..],
        &["run", "--include", &inside, "--", "true"][..],
    ] {
        let o = f.qwrap(args).env("HOME", f.home()).output().unwrap();
        assert_eq!(o.status.code(), Some(125), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("home directory"), "{}", stderr(&o));
    }
}

/// A workspace deep under /tmp (private) or /var/tmp: a write beside it
/// fails with EROFS instead of vanishing, and a checkout whose top lies
/// above the workspace still commits.
#[test]
fn no_write_vanishes_beside_a_workspace_under_tmp() {
    for who in Who::all() {
        for base in ["/tmp", "/var/tmp"] {
            for api in APIS {
                let top = tempfile::Builder::new()
                    .prefix("qwrap-bt-")
                    .tempdir_in(base)
                    .unwrap();
                let proj = top.path().join("proj");
                std::fs::create_dir_all(proj.join("sub")).unwrap();
                if rustix::process::getuid().is_root() {
                    let (u, g) = who.ids();
                    for p in [top.path(), &proj, &proj.join("sub")] {
                        std::os::unix::fs::chown(p, Some(u), Some(g)).unwrap();
                    }
                }
                let f = Fixture::new(who);
                let git = "git -c user.name=t -c user.email=t@t";
                let o = f
                    .command("sh")
                    .current_dir(&proj)
                    .args([
                        "-c",
                        &format!("{git} init -q && {git} commit -q --allow-empty -m a"),
                    ])
                    .output()
                    .unwrap();
                ok(&o);
                let script = format!(
                    "echo x > {p}/beside 2>&1; echo y > f && {git} add f && {git} commit -qm c && echo committed",
                    p = proj.display()
                );
                let o = f
                    .qwrap(&["run", "--workspace"])
                    .arg(proj.join("sub"))
                    .args(["--", "sh", "-c", &script])
                    .current_dir(proj.join("sub"))
                    .env("QWRAP_MOUNT_API", api)
                    .output()
                    .unwrap();
                let out = stdout(&o) + &stderr(&o);
                assert!(
                    out.contains("Read-only file system"),
                    "{who:?} {base} {api}: {out}"
                );
                assert!(
                    out.contains("committed"),
                    "{who:?} {base} {api}: {out} {}",
                    stderr(&o)
                );
                assert!(!proj.join("beside").exists());
                assert!(proj.join("sub/f").exists());
            }
        }
    }
}

/// Host sockets whatever their name looked like when bound: relative (from
/// a directory deeper than sun_path can name), with a space, with a
/// newline. Each one is masked: connecting from inside is refused, while
/// the control (allowed by path) connects.
#[test]
fn sockets_are_masked_whatever_their_bound_name() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let socks = sockets::AwkwardSockets::new(&f);
            let children = socks.serve(&f, ".");
            let o = socks.connect_inside(&f, api);
            sockets::stop(children);
            let out = stdout(&o);
            assert_eq!(
                out.lines().collect::<Vec<_>>(),
                ["Connection refused"; 4],
                "{who:?} {api}: {out} {}",
                stderr(&o)
            );
        }
    }
}

/// A device on fds 0-2 that the caller may not open by its path (a terminal
/// `su` kept, owned by root) cannot be opened again read-only: it stays as
/// it is, the command runs and writes to it, and the node's mode holds.
#[test]
fn a_device_the_caller_may_not_open_stays_usable() {
    if !rustix::process::getuid().is_root() {
        eprintln!("SKIP a device the caller may not open: needs root to make one");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("console");
    // A root-only node of the device /dev/null is (1, 3).
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &node,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o600),
        rustix::fs::makedev(1, 3),
    )
    .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for api in APIS {
        let f = Fixture::new(Who::User);
        let out = std::fs::OpenOptions::new().write(true).open(&node).unwrap();
        let o = f
            .command(qwrap())
            .args(["run", "--", "sh", "-c", "echo fine >&2; echo to-the-device"])
            .env("QWRAP_MOUNT_API", api)
            .stdout(Stdio::from(out))
            .output()
            .unwrap();
        assert!(
            o.status.success() && stderr(&o).contains("fine"),
            "{api}: {}",
            stderr(&o)
        );
        assert_eq!(mode(&node), 0o600);
    }
}
