//! Hostile and broken input: each case gets a clear message and the right
//! exit status (125 qwrap's own failure, 2 usage, 126/127 the command), and
//! nothing runs unconfined. As root and as an unprivileged uid.

mod common;

use common::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

#[track_caller]
fn expect(o: &std::process::Output, code: i32, text: &str) {
    let err = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(code),
        "stderr: {err}\nstdout: {}",
        stdout(o)
    );
    assert!(err.contains(text), "{text:?} not in: {err}");
}

#[test]
fn bad_workspaces() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let marker = f.ws().join("marker");
        let touch = ["--", "touch", marker.to_str().unwrap()];
        let run = |ws: &Path| {
            let mut c = f.qwrap(&["run", "--workspace"]);
            c.arg(ws).args(touch);
            c.output().unwrap()
        };
        expect(
            &run(&f.path().join("missing")),
            125,
            "No such file or directory (ENOENT)",
        );
        let file = f.write("file", "", 0o644);
        expect(&run(&file), 125, "not a directory");
        std::os::unix::fs::symlink(f.path().join("loop"), f.path().join("loop")).unwrap();
        expect(
            &run(&f.path().join("loop")),
            125,
            "Too many levels of symbolic links (ELOOP)",
        );
        expect(&run(Path::new("/")), 125, "must stay read-only");
        expect(&run(&f.home()), 125, "is the home directory");
        expect(&run(f.path()), 125, "an ancestor of the home directory");
        assert!(!marker.exists());
    }
}

#[test]
fn awkward_path_names_work() {
    for who in Who::all() {
        let f = Fixture::new(who);
        // Spaces, a newline, bytes that are not UTF-8, and a path near PATH_MAX.
        let mut long = String::new();
        while f.path().to_str().unwrap().len() + long.len() < 3900 {
            long.push_str("d123456789012345678901234567890123456789012345678901234567890123456789/");
        }
        let names: Vec<Vec<u8>> = vec![
            b"with space".to_vec(),
            b"new\nline".to_vec(),
            b"bad\xff\xfebytes".to_vec(),
            long.trim_end_matches('/').as_bytes().to_vec(),
        ];
        for name in names {
            let rel = OsStr::from_bytes(&name);
            let dir = f.path().join(rel);
            std::fs::create_dir_all(&dir).unwrap();
            if rustix::process::getuid().is_root() {
                let (u, g) = who.ids();
                let mut p = dir.as_path();
                while p != f.path() {
                    std::os::unix::fs::chown(p, Some(u), Some(g)).unwrap();
                    p = p.parent().unwrap();
                }
            }
            let ctx = format!(
                "{who:?} {:?}",
                String::from_utf8_lossy(&name[..name.len().min(20)])
            );
            let o = f
                .qwrap(&["run", "--workspace"])
                .arg(&dir)
                .args(["--", "sh", "-c", "touch probe && rm probe && pwd"])
                .output()
                .unwrap();
            assert_eq!(
                o.stdout,
                [dir.as_os_str().as_bytes(), b"\n"].concat(),
                "{ctx}: {}",
                stderr(&o)
            );
            for args in [&["plan", "--json", "--", "true"][..], &["inspect", "--json"][..]] {
                let o = f
                    .qwrap(&[args[0], "--workspace"])
                    .arg(&dir)
                    .args(&args[1..])
                    .output()
                    .unwrap();
                let v: serde_json::Value =
                    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert!(v.is_object(), "{ctx}");
            }
        }
    }
}

#[test]
fn roots_that_lead_into_home_are_refused() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("home/.ssh");
        std::os::unix::fs::symlink(f.home().join(".ssh"), f.path().join("innocent")).unwrap();
        let o = f
            .qwrap(&["run", "--include"])
            .arg(f.path().join("innocent"))
            .args(["--", "true"])
            .output()
            .unwrap();
        expect(&o, 125, "is inside the home directory");
        // The host temp dir as a root: refused at / and inside home.
        for tmpdir in [Path::new("/").to_path_buf(), f.home().join(".ssh")] {
            let o = f
                .qwrap(&["run", "--tmp", "host", "--", "true"])
                .env("TMPDIR", &tmpdir)
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(125), "{tmpdir:?}: {}", stderr(&o));
            assert!(stderr(&o).contains("home directory"), "{}", stderr(&o));
        }
    }
}

#[test]
fn usage_errors_exit_2() {
    for who in Who::all() {
        let f = Fixture::new(who);
        expect(
            &f.qwrap(&["run", "--network", "bogus", "--", "true"])
                .output()
                .unwrap(),
            2,
            "--network",
        );
        expect(&f.qwrap(&["run", "--"]).output().unwrap(), 2, "required");
        expect(
            &f.qwrap(&["run", "--bogus", "--", "true"]).output().unwrap(),
            2,
            "--bogus",
        );
        expect(
            &f.qwrap(&["run", "--landlock", "maybe", "--", "true"])
                .output()
                .unwrap(),
            2,
            "--landlock",
        );
        expect(
            &f.qwrap(&["run", "--profile", "nope", "--", "true"])
                .output()
                .unwrap(),
            2,
            "unknown profile",
        );
        let o = f
            .qwrap(&["run", "--", "true"])
            .env("QWRAP_TMP", "shared")
            .output()
            .unwrap();
        expect(&o, 2, "$QWRAP_TMP");
    }
}

#[test]
fn home_unset_relative_or_root_uses_the_account() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for home in [None, Some("relative/home"), Some("/"), Some("/usr/..")] {
            let mut c = f.qwrap(&["inspect", "--json"]);
            match home {
                None => c.env_remove("HOME"),
                Some(h) => c.env("HOME", h),
            };
            let v: serde_json::Value = serde_json::from_str(&ok(&c.output().unwrap())).unwrap();
            assert_eq!(v["enforcement"]["level"], "full");
            // nobody's home is /nonexistent; root's is /root: the cache
            // root under it is either granted or reported missing.
            let account_home = if who == Who::Root { "/root" } else { "/nonexistent" };
            let cache = format!("{account_home}/.cache");
            let seen = v["dropped"].to_string() + &v["writable_roots"].to_string();
            assert!(seen.contains(&cache), "{who:?} {home:?}: {v}");
            // The command's HOME is the home the policy used, where one was
            // set; an unset one stays unset.
            let mut c = f.qwrap(&["run", "--", "sh", "-c", "echo \"${HOME-unset}\""]);
            match home {
                None => c.env_remove("HOME"),
                Some(h) => c.env("HOME", h),
            };
            let want = if home.is_some() { account_home } else { "unset" };
            assert_eq!(ok(&c.output().unwrap()).trim(), want, "{who:?} {home:?}");
        }
    }
}

#[test]
fn closed_standard_streams() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let q = qwrap().display().to_string();
        let o = f
            .command("sh")
            .args([
                "-c",
                &format!("'{q}' run -- sh -c 'exit 3' <&- >&- 2>&-; echo \"rc=$?\""),
            ])
            .output()
            .unwrap();
        assert_eq!(ok(&o).trim(), "rc=3", "{who:?}");
        let o = f
            .command("sh")
            .args([
                "-c",
                &format!("'{q}' run --workspace /nonexistent -- true <&- >&- 2>&-; echo \"rc=$?\""),
            ])
            .output()
            .unwrap();
        assert_eq!(ok(&o).trim(), "rc=125");
        // Closed fds are filled with /dev/null before qwrap opens anything,
        // so no setup fd lands there and the command finds /dev/null.
        let o = f
            .command("sh")
            .args([
                "-c",
                &format!("'{q}' run -- readlink /proc/self/fd/0 /proc/self/fd/2 <&- 2>&-"),
            ])
            .output()
            .unwrap();
        assert_eq!(ok(&o), "/dev/null\n/dev/null\n", "{who:?}");
    }
}

#[test]
fn proc_not_mounted_fails_closed() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let marker = f.ws().join("marker");
        let ns: &[&str] = match who {
            Who::Root => &["-m", "--propagation", "private"],
            Who::User => &["-U", "-r", "-m"],
        };
        let script = format!(
            "mount -t tmpfs none /proc && exec '{}' run -- touch '{}'",
            qwrap().display(),
            marker.display()
        );
        let o = f
            .command("unshare")
            .args(ns)
            .args(["sh", "-c", &script])
            .output()
            .unwrap();
        expect(&o, 125, "/proc is not mounted");
        assert!(!marker.exists());
    }
}

#[test]
fn read_only_and_noexec_workspaces() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.write("ws/script.sh", "#!/bin/sh\necho ran\n", 0o755);
        let ns: &[&str] = match who {
            Who::Root => &["-m", "--propagation", "private"],
            Who::User => &["-U", "-r", "-m"],
        };
        let q = qwrap().display().to_string();
        let ws = f.ws().display().to_string();
        // Read-only: the command runs; its writes fail with EROFS.
        let script = format!(
            "mount --bind '{ws}' '{ws}' && mount -o remount,bind,ro '{ws}' && cd '{ws}' && \
             '{q}' run -- sh -c 'touch x 2>&1; exit 4'; echo \"rc=$?\""
        );
        let o = f
            .command("unshare")
            .args(ns)
            .args(["sh", "-c", &script])
            .output()
            .unwrap();
        let out = ok(&o);
        assert!(
            out.contains("Read-only file system") && out.contains("rc=4"),
            "{who:?}: {out}"
        );
        // noexec: the script cannot be executed (126).
        let script = format!(
            "mount --bind '{ws}' '{ws}' && mount -o remount,bind,noexec '{ws}' && cd '{ws}' && \
             '{q}' run -- ./script.sh; echo \"rc=$?\""
        );
        let o = f
            .command("unshare")
            .args(ns)
            .args(["sh", "-c", &script])
            .output()
            .unwrap();
        let out = ok(&o);
        assert!(
            out.contains("rc=126") && !out.contains("ran"),
            "{who:?}: {out} {}",
            stderr(&o)
        );
    }
}

#[test]
fn broken_worktree_pointers_grant_nothing_and_still_run() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("home/.ssh");
        for pointer in [
            "gitdir: /nonexistent/repo/.git/worktrees/x\n".to_string(),
            format!("gitdir: {}\n", f.path().join("ws").display()),
            format!("gitdir: {}\n", f.home().join(".ssh").display()),
            "not a pointer\n".to_string(),
        ] {
            f.write("ws/.git", &pointer, 0o644);
            let o = f.qwrap(&["inspect"]).output().unwrap();
            let out = ok(&o);
            assert!(out.contains("Git metadata: none"), "{pointer:?}: {out}");
            assert!(!out.contains(".ssh  ["), "{out}");
            ok(&f.qwrap(&["run", "--", "true"]).output().unwrap());
        }
    }
}

/// HOME pointing at a directory the user cannot read (as `sudo` without
/// -H leaves it): the sandbox still starts, says the cache cannot be
/// reached, and the command runs.
#[test]
fn an_unreadable_home_leaves_the_cache_out_and_runs() {
    // Root reads any home; the unprivileged caller is the case.
    for who in Who::all().into_iter().filter(|w| *w == Who::User) {
        let f = Fixture::new(who);
        let locked = f.mkdir("locked");
        f.mkdir("locked/inner");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let o = f
            .qwrap(&["run", "--", "sh", "-c", "echo ran"])
            .env("HOME", locked.join("inner"))
            .output()
            .unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(ok(&o).trim(), "ran", "{who:?}");
        assert!(
            stderr(&o).contains("cannot be reached"),
            "{who:?}: {}",
            stderr(&o)
        );
    }
}
