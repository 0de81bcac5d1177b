//! `qwrap run` against the real kernel, as root and as an unprivileged uid,
//! on both mount API paths: observations from inside the sandbox.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;

/// `touch` on each path; prints "PATH ok" or "PATH <strerror>".
fn write_probe(paths: &[&str]) -> String {
    let mut s = String::new();
    for p in paths {
        s.push_str(&format!(
            "if out=$(touch '{p}' 2>&1); then echo '{p} ok'; rm -f '{p}'; else echo \"{p} ${{out##*: }}\"; fi\n"
        ));
    }
    s
}

#[test]
fn workspace_writable_host_read_only() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let ws = f.ws().join("probe");
            let home = f.home().join("probe");
            let paths = [
                ws.to_str().unwrap(),
                "/usr/qwrap-probe",
                "/etc/qwrap-probe",
                home.to_str().unwrap(),
                "/var/tmp/qwrap-probe",
            ];
            let out = ok(&f.run_sh(api, &[], &write_probe(&paths)));
            let want: Vec<String> = std::iter::once(format!("{} ok", paths[0]))
                .chain(paths[1..].iter().map(|p| format!("{p} Read-only file system")))
                .collect();
            assert_eq!(out.lines().collect::<Vec<_>>(), want, "{who:?} {api}");
        }
    }
}

#[test]
fn host_submount_is_read_only() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let sub = f.mkdir("sub");
            let probe = sub.join("probe");
            // A mount the host has and qwrap has never seen: made in a private
            // mount namespace (with a user namespace when unprivileged).
            let unshare: &[&str] = match who {
                Who::Root => &["-m", "--propagation", "private"],
                Who::User => &["-U", "-r", "-m"],
            };
            let script = format!(
                "mount -t tmpfs qwrap-test '{}' && exec '{}' run -- sh -c '{}'",
                sub.display(),
                qwrap().display(),
                write_probe(&[probe.to_str().unwrap()]).replace('\'', "'\\''")
            );
            let out = f
                .command("unshare")
                .args(unshare)
                .args(["sh", "-c", &script])
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            assert_eq!(
                ok(&out).trim(),
                format!("{} Read-only file system", probe.display()),
                "{who:?} {api}"
            );
        }
    }
}

#[test]
fn dev_is_minimal_and_works() {
    let script = "ls -A /dev | tr '\\n' ' '; echo
        echo discard > /dev/null && echo null-ok
        head -c 4 /dev/zero | od -An -tx1 | tr -d ' \\n'; echo
        head -c 16 /dev/urandom | wc -c
        echo shm > /dev/shm/qwrap-marker && echo shm-ok
        ls /dev/shm | tr '\\n' ' '; echo
        readlink /dev/ptmx /dev/fd /dev/stdin";
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            // The host's /dev/shm must be invisible inside, and untouched.
            let host_marker = tempfile::NamedTempFile::new_in("/dev/shm").unwrap();
            let out = ok(&f.run_sh(api, &[], script));
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(
                lines[0].trim(),
                "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero",
                "{who:?} {api}"
            );
            assert_eq!(lines[1], "null-ok");
            assert_eq!(lines[2], "00000000");
            assert_eq!(lines[3].trim(), "16");
            assert_eq!(lines[4], "shm-ok");
            assert_eq!(lines[5].trim(), "qwrap-marker", "host /dev/shm leaked in");
            assert_eq!(&lines[6..9], ["pts/ptmx", "/proc/self/fd", "/proc/self/fd/0"]);
            assert!(!std::path::Path::new("/dev/shm/qwrap-marker").exists());
            assert!(host_marker.path().exists());
        }
    }
}

fn status_field<'a>(status: &'a str, key: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key).map(str::trim))
        .unwrap_or_else(|| panic!("{key} missing in\n{status}"))
}

#[test]
fn no_capabilities_no_new_privs_same_ids() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let status = ok(&f.run_sh(api, &[], "cat /proc/self/status"));
            for cap in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
                assert_eq!(
                    status_field(&status, cap),
                    "0000000000000000",
                    "{who:?} {api} {cap}"
                );
            }
            assert_eq!(status_field(&status, "NoNewPrivs:"), "1");
            let (uid, gid) = who.ids();
            let ids = |k| {
                status_field(&status, k)
                    .split_whitespace()
                    .map(|x| x.parse::<u32>().unwrap())
                    .collect::<Vec<_>>()
            };
            assert_eq!(ids("Uid:"), vec![uid; 4]);
            assert_eq!(ids("Gid:"), vec![gid; 4]);
        }
    }
}

#[test]
fn setuid_root_binary_gains_nothing() {
    if !rustix::process::getuid().is_root() {
        eprintln!("SKIP a setuid-root binary: only root can make the fixture");
        return;
    }
    let f = Fixture::new(Who::User);
    let id = f.path().join("suid-id");
    // By another process: see common::qwrap (ETXTBSY).
    assert!(
        std::process::Command::new("cp")
            .arg("/usr/bin/id")
            .arg(&id)
            .status()
            .unwrap()
            .success()
    );
    std::fs::set_permissions(&id, std::fs::Permissions::from_mode(0o4755)).unwrap();
    // Outside, the fixture really does make the user root: the test can fail.
    let outside = f.command(&id).arg("-u").output().unwrap();
    assert_eq!(ok(&outside).trim(), "0");
    for api in APIS {
        let out = ok(&f.run_sh(api, &[], &format!("'{}' -u", id.display())));
        assert_eq!(out.trim(), USER_UID.to_string(), "{api}");
    }
}

#[test]
fn environment_rules() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let o = f
            .qwrap(&[
                "run",
                "--setenv",
                "QWRAP_T1",
                "one",
                "--unsetenv",
                "QWRAP_T2",
                "--",
                "sh",
                "-c",
                "echo \"$SANDBOX|${DISPLAY-unset}|${WAYLAND_DISPLAY-unset}|$QWRAP_T1|${QWRAP_T2-unset}|$TMPDIR|$QWRAP_KEEP\"",
            ])
            .env("DISPLAY", ":0")
            .env("WAYLAND_DISPLAY", "wayland-0")
            .env("QWRAP_T2", "two")
            .env("QWRAP_KEEP", "kept")
            .output()
            .unwrap();
        assert_eq!(ok(&o).trim(), "qwrap|unset|unset|one|unset|/tmp|kept", "{who:?}");
    }
}

#[test]
fn private_tmp_and_read_only_override() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            f.mkdir("ws/locked");
            let host_tmp = tempfile::NamedTempFile::new().unwrap();
            let script = format!(
                "ls -A /tmp | wc -l; touch /tmp/x && echo tmp-ok; {}",
                write_probe(&["locked/probe", "free"])
            );
            let o = f.run_sh(api, &["--ro", "locked"], &script);
            let out = ok(&o);
            assert_eq!(
                out.lines().collect::<Vec<_>>(),
                ["0", "tmp-ok", "locked/probe Read-only file system", "free ok"],
                "{who:?} {api}"
            );
            assert!(host_tmp.path().exists());
        }
    }
}

#[test]
fn workspace_under_private_tmp_and_binds() {
    for who in Who::all() {
        for api in APIS {
            // A workspace in the host's /tmp sits under the private /tmp: its
            // mount point is created on the fresh tmpfs.
            let tmpws = tempfile::Builder::new()
                .prefix("qwrap-ws-")
                .tempdir_in("/tmp")
                .unwrap();
            let f = Fixture::new(who);
            let extra = f.mkdir("extra");
            if rustix::process::getuid().is_root() {
                let (u, g) = who.ids();
                std::os::unix::fs::chown(tmpws.path(), Some(u), Some(g)).unwrap();
            }
            let script = write_probe(&[
                &format!("{}/a", tmpws.path().display()),
                &format!("{}/b", extra.display()),
            ]);
            let o = f.run_sh(
                api,
                &[
                    "--workspace",
                    tmpws.path().to_str().unwrap(),
                    "--bind",
                    extra.to_str().unwrap(),
                ],
                &format!("pwd; {script}"),
            );
            let out = ok(&o);
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines[0], tmpws.path().to_str().unwrap(), "{who:?} {api}");
            assert!(
                lines[1].ends_with("/a ok") && lines[2].ends_with("/b ok"),
                "{out}"
            );
        }
    }
}

#[test]
fn home_is_never_writable_root() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let marker = f.ws().join("marker");
        for args in [
            vec!["--workspace".to_string(), f.home().display().to_string()],
            vec!["--bind".to_string(), "/".to_string()],
            vec!["--bind".to_string(), f.path().display().to_string()],
        ] {
            let mut c = f.qwrap(&["run"]);
            c.args(&args).args(["--", "touch", marker.to_str().unwrap()]);
            let o = c.output().unwrap();
            assert_eq!(o.status.code(), Some(125), "{args:?}: {}", stderr(&o));
            assert!(stderr(&o).contains("must stay read-only"), "{}", stderr(&o));
            assert!(!marker.exists());
        }
        f.mkdir("home/.ssh");
        let o = f
            .qwrap(&[
                "run",
                "--bind",
                f.home().join(".ssh").to_str().unwrap(),
                "--",
                "true",
            ])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(125));
        assert!(stderr(&o).contains("inside the home directory"), "{}", stderr(&o));
    }
}

#[test]
fn host_mount_table_unchanged() {
    let before = host_mounts();
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            ok(&f.run_sh(api, &["--network", "closed"], "true"));
        }
    }
    assert_eq!(before, host_mounts());
}

/// In a PID namespace whose session and process-group leaders lie outside
/// it (a container's shell, `unshare --pid --fork`), the kernel gives the
/// caller's session and group as 0: qwrap runs the command all the same,
/// in every mode. There qwrap is PID 1, whose end kills every process in
/// the namespace: it stays until the warden has done its last work (seen
/// from the host: the planted repository named, the command's own TMPDIR
/// removed), and exits as the command did.
#[test]
fn runs_as_pid_one_of_its_namespace_and_ends_last() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let unshare: &[&str] = match who {
            Who::Root => &["-p", "-f", "--mount-proc"],
            Who::User => &["-U", "-r", "-p", "-f", "--mount-proc"],
        };
        let modes: [&[&str]; 5] = [
            &[],
            &["--pid", "private"],
            &["--isolation", "landlock"],
            &["--landlock", "off"],
            &["--new-session"],
        ];
        for mode in modes {
            let _ = std::fs::remove_dir_all(f.ws().join("planted"));
            let out = f
                .command("unshare")
                .args(unshare)
                .args(["sh", "-c", "echo session $(ps -o sid= $$); exec \"$@\"", "sh"])
                .arg(qwrap())
                .arg("run")
                .args(mode)
                .args([
                    "--",
                    "sh",
                    "-c",
                    "echo pid $$; echo \"$TMPDIR\"; git init -q planted; exit 3",
                ])
                .env_remove("QWRAP_PID")
                .output()
                .unwrap();
            let text = stdout(&out);
            let ctx = format!("{who:?} {mode:?}: {text}{}", stderr(&out));
            assert_eq!(out.status.code(), Some(3), "{ctx}");
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines[0], "session 0", "{ctx}");
            // The command is not PID 1 (qwrap is; with --pid private, the
            // sandbox's own PID 1 is qwrap's too).
            assert_ne!(lines[1], "pid 1", "{ctx}");
            assert!(
                lines[2] == "/tmp" || !std::path::Path::new(lines[2]).exists(),
                "{ctx}: the command's TMPDIR was left behind"
            );
            assert!(
                stderr(&out).contains("planted/.git: a repository made inside"),
                "{ctx}: the warden's last word is missing"
            );
        }
    }
}

/// qwrap as PID 1 of its namespace: a SIGTERM sent as soon as it runs
/// (before its plan's first step) is held and passed on to the command,
/// not dropped by the kernel as a signal to an init without a handler.
#[test]
fn as_pid_one_an_early_sigterm_reaches_the_command() {
    for who in Who::all() {
        let f = Fixture::new(who);
        // A workspace whose walk (for repositories) takes a while: the
        // plan's first step comes late.
        for i in 0..3000 {
            f.mkdir(&format!("ws/d{}/e{i}", i / 100));
        }
        let unshare: &[&str] = match who {
            Who::Root => &["-p", "-f", "--mount-proc"],
            Who::User => &["-U", "-r", "-p", "-f", "--mount-proc"],
        };
        let started = std::time::Instant::now();
        let mut child = f
            .command("unshare")
            .args(unshare)
            .args(["sh", "-c", "exec \"$@\"", "sh"])
            .arg(qwrap())
            .args(["run", "--", "sleep", "10"])
            .env_remove("QWRAP_PID")
            .spawn()
            .unwrap();
        // qwrap: unshare's child once it has exec'd (its exe is qwrap's).
        let children = format!("/proc/{0}/task/{0}/children", child.id());
        let pid = loop {
            let kid = std::fs::read_to_string(&children).unwrap_or_default();
            let kid = kid.split_whitespace().next().map(str::to_string);
            if let Some(k) =
                kid.filter(|k| std::fs::read_link(format!("/proc/{k}/exe")).is_ok_and(|e| e == qwrap()))
            {
                break k.parse::<i32>().unwrap();
            }
            assert!(started.elapsed().as_secs() < 5, "{who:?}: qwrap never started");
            std::thread::yield_now();
        };
        // Between the execve and qwrap's first instructions no handler can
        // be there yet: the kernel's window, not qwrap's.
        std::thread::sleep(std::time::Duration::from_millis(5));
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(143), "{who:?}");
        assert!(
            started.elapsed().as_secs() < 8,
            "{who:?}: the command ran its course"
        );
    }
}
