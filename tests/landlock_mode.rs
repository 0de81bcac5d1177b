//! `--isolation landlock`: no namespace, no mount; Landlock and seccomp
//! alone over the host's own view. Each attack is checked by its effect
//! on the host (the file that must not change, the process that must
//! survive, the listener that must hear nothing), as root and as an
//! unprivileged uid, with a control run that shows the same attempt works
//! where the mode does not stand in the way.

mod common;
use common::*;
use std::os::unix::fs::PermissionsExt;

fn mode_of(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode()
}

#[test]
fn writes_land_only_in_the_workspace() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let outside = f.write("outside.txt", "host", 0o644);
        let rc = f.write("home/.profile", "# host profile\n", 0o644);
        let o = run_landlock(
            &f,
            &[],
            &format!(
                "echo inside > made.txt; chmod 700 made.txt; touch -d 2001-01-01 made.txt; echo x > {o}; echo x >> {rc}; chmod 777 {o} || echo chmod-refused; touch -d 2001-01-01 {o} || echo touch-refused; chown $(id -u) {o} || echo chown-refused; python3 -c \"import os; os.setxattr('{o}', 'user.x', b'1')\" 2>/dev/null || echo xattr-refused; touch $HOME/new 2>&1; echo done",
                o = outside.display(),
                rc = rc.display()
            ),
        );
        let mtime = |p: &std::path::Path| {
            std::fs::metadata(p)
                .unwrap()
                .modified()
                .unwrap()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
        };
        let out = ok(&o);
        assert!(
            out.contains("chmod-refused\ntouch-refused\nchown-refused\nxattr-refused\n"),
            "{who:?}: {out}"
        );
        // The mode bits and times of a file outside the roots stay; inside,
        // the warden changes them on the command's behalf.
        assert_eq!(
            mode_of(&outside) & 0o777,
            0o644,
            "{who:?}: chmod outside the roots"
        );
        assert!(
            mtime(&outside) > 1_000_000_000 + 365 * 86400 * 20,
            "{who:?}: times outside the roots"
        );
        assert!(
            mtime(&f.ws().join("made.txt")) < 1_000_000_000 + 365 * 86400 * 2,
            "{who:?}: times inside"
        );
        assert!(out.ends_with("done\n"), "{who:?}: {out}");
        assert_eq!(
            std::fs::read_to_string(f.ws().join("made.txt")).unwrap(),
            "inside\n"
        );
        assert_eq!(mode_of(&f.ws().join("made.txt")) & 0o777, 0o700, "{who:?}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "host", "{who:?}");
        assert_eq!(
            std::fs::read_to_string(&rc).unwrap(),
            "# host profile\n",
            "{who:?}"
        );
        assert!(!f.home().join("new").exists(), "{who:?}");
        // The control: outside the sandbox the same identity can set it.
        let py = format!(
            "import os; os.setxattr({:?}, 'user.x', b'1')",
            outside.to_str().unwrap()
        );
        ok(&f.command("python3").args(["-c", &py]).output().unwrap());
    }
}

/// A file's inode flags (`chattr`: sync, no-dump, append-only; fs-verity)
/// are changed by an ioctl on a descriptor opened only for reading, and
/// Landlock has no right for them: outside the roots they stay, with
/// `--explain` too (its filter folds the second one in). Control: the same
/// identity sets one outside the sandbox.
#[test]
fn inode_flags_outside_the_roots_stay() {
    let flags = |p: &std::path::Path| {
        let o = std::process::Command::new("lsattr")
            .arg("-d")
            .arg(p)
            .output()
            .unwrap();
        stdout(&o).split_whitespace().next().unwrap_or("").to_string()
    };
    for who in Who::all() {
        for explain in [&[][..], &["--explain"][..]] {
            let f = Fixture::new(who);
            let outside = f.write("outside.txt", "host", 0o644);
            let dir = f.mkdir("outside-dir");
            let before = (flags(&outside), flags(&dir));
            let o = run_landlock(
                &f,
                explain,
                &format!(
                    "chattr +S {o} 2>/dev/null || echo file-refused; chattr +dS {d} 2>/dev/null || echo dir-refused; chattr +d made 2>/dev/null; echo done",
                    o = outside.display(),
                    d = dir.display()
                ),
            );
            let out = stdout(&o);
            assert!(out.contains("done"), "{who:?} {explain:?}: {}", stderr(&o));
            assert_eq!(
                (flags(&outside), flags(&dir)),
                before,
                "{who:?} {explain:?}: inode flags changed outside the roots: {out}"
            );
            assert!(
                out.contains("file-refused\ndir-refused"),
                "{who:?} {explain:?}: {out}"
            );
            // The control.
            let c = f.command("chattr").arg("+d").arg(&outside).output().unwrap();
            ok(&c);
            assert_ne!(flags(&outside), before.0, "{who:?}: the control set nothing");
        }
    }
}

#[test]
fn hidden_files_and_the_hosts_tmp_are_unreadable() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("home/.ssh");
        f.write("home/.ssh/id_ed25519", "SECRET-KEY-BYTES", 0o600);
        f.write(
            "home/.bashrc",
            "export GITHUB_TOKEN=ghp_SECRETTOKENVALUE12345\n",
            0o644,
        );
        std::os::unix::fs::symlink(f.home().join(".ssh/id_ed25519"), f.ws().join("key")).unwrap();
        let tmp = tempfile::Builder::new()
            .prefix("qwrap-host-tmp-")
            .tempfile_in("/tmp")
            .unwrap();
        std::fs::write(tmp.path(), "HOST-TMP-SECRET").unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let shm = tempfile::Builder::new()
            .prefix("qwrap-host-shm-")
            .tempfile_in("/dev/shm")
            .unwrap();
        std::fs::write(shm.path(), "HOST-SHM-SECRET").unwrap();
        std::fs::set_permissions(shm.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let o = run_landlock(
            &f,
            &[],
            &format!(
                "cat $HOME/.ssh/id_ed25519 key $HOME/.bashrc {t} {m}; ls $HOME/.ssh; echo x > $TMPDIR/own && cat $TMPDIR/own",
                t = tmp.path().display(),
                m = shm.path().display()
            ),
        );
        let out = stdout(&o);
        let err = stderr(&o);
        for secret in [
            "SECRET-KEY-BYTES",
            "ghp_SECRET",
            "HOST-TMP-SECRET",
            "HOST-SHM-SECRET",
        ] {
            assert!(!out.contains(secret), "{who:?}: {secret} read: {out}");
        }
        assert_eq!(err.matches("Permission denied").count(), 5, "{who:?}: {err}");
        // Names stay listable (Landlock lists what it may not read); the
        // command's own TMPDIR is writable and readable.
        assert!(out.contains("id_ed25519\nx\n"), "{who:?}: {out}");
        // The control: the same files are readable outside the sandbox.
        let plain = f.command("cat").arg(f.ws().join("key")).output().unwrap();
        assert_eq!(ok(&plain), "SECRET-KEY-BYTES", "{who:?}");
    }
}

#[test]
fn the_commands_tmpdir_is_its_own_and_removed_after() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let o = run_landlock(
            &f,
            &[],
            "echo $TMPDIR > tmpdir.txt; echo x > $TMPDIR/f && echo wrote",
        );
        assert!(ok(&o).contains("wrote"), "{who:?}");
        let dir = std::fs::read_to_string(f.ws().join("tmpdir.txt")).unwrap();
        let dir = std::path::PathBuf::from(dir.trim());
        assert!(dir.to_str().unwrap().starts_with("/tmp/qwrap-"), "{dir:?}");
        // The warden removes it once the sandbox is gone.
        let gone = (0..250).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            !dir.exists()
        });
        assert!(gone, "{who:?}: {dir:?} left behind");
    }
}

#[test]
fn host_processes_cannot_be_signalled_or_reniced() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let mut host = f.command("sleep").arg("60").spawn().unwrap();
        let pid = host.id();
        let nice_before = nice(pid);
        let o = run_landlock(
            &f,
            &[],
            &format!("kill -9 {pid}; echo kill=$?; renice -n 7 -p {pid} >/dev/null 2>&1; echo renice=$?"),
        );
        let out = ok(&o);
        assert!(out.contains("kill=1") || out.contains("kill=2"), "{who:?}: {out}");
        assert!(!out.contains("renice=0"), "{who:?}: {out}");
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            host.try_wait().unwrap().is_none(),
            "{who:?}: the host process died"
        );
        assert_eq!(nice(pid), nice_before, "{who:?}: reniced");
        host.kill().unwrap();
        host.wait().unwrap();
        // The control: without the sandbox, the same identity can.
        let mut host = f.command("sleep").arg("60").spawn().unwrap();
        let o = f
            .command("kill")
            .arg("-9")
            .arg(host.id().to_string())
            .output()
            .unwrap();
        ok(&o);
        assert!(host.wait().unwrap().code().is_none());
    }
}

/// A process's nice value (/proc/PID/stat, field 19).
fn nice(pid: u32) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split_whitespace().nth(16).unwrap().parse().unwrap()
}

#[test]
fn the_git_dir_stays_the_hosts_unless_allowed() {
    for who in Who::all() {
        let f = Fixture::new(who);
        ok(&f.command("git").args(["init", "-q", "."]).output().unwrap());
        f.mkdir("ws/src");
        let config = std::fs::read(f.ws().join(".git/config")).unwrap();
        let o = run_landlock(
            &f,
            &[],
            "echo '[core] fsmonitor = touch /tmp/pwned' >> .git/config; echo 'touch /tmp/pwned' > .git/hooks/post-checkout; chmod 755 .git/hooks/pre-commit.sample .git/config; echo fine > src/a.rs && echo src-ok",
        );
        assert!(ok(&o).contains("src-ok"), "{who:?}");
        assert_eq!(mode_of(&f.ws().join(".git/config")) & 0o777, 0o644, "{who:?}");
        assert_eq!(
            std::fs::read(f.ws().join(".git/config")).unwrap(),
            config,
            "{who:?}"
        );
        assert!(!f.ws().join(".git/hooks/post-checkout").exists(), "{who:?}");
        // A new name at the top of a tree that holds a git dir cannot be
        // made (docs/security.md); with --allow-git-config it can, and the
        // git dir is the command's to change.
        let o = run_landlock(&f, &[], "echo x > top.txt");
        assert!(!o.status.success() && !f.ws().join("top.txt").exists(), "{who:?}");
        let o = run_landlock(
            &f,
            &["--allow-git-config"],
            "echo x > top.txt && echo '# ok' >> .git/config",
        );
        ok(&o);
        assert!(f.ws().join("top.txt").exists(), "{who:?}");
        assert_ne!(std::fs::read(f.ws().join(".git/config")).unwrap(), config);
    }
}

#[test]
fn what_the_command_leaves_behind_is_gone() {
    if !kernel_scopes() {
        eprintln!("SKIP leftovers in the Landlock-only mode: no Landlock signal scope (Linux < 6.12)");
        return;
    }
    for who in Who::all() {
        let f = Fixture::new(who);
        let o = run_landlock(
            &f,
            &[],
            "setsid sh -c 'echo $$ > bg.pid; exec sleep 300' & sleep 0.3",
        );
        ok(&o);
        let pid = std::fs::read_to_string(f.ws().join("bg.pid")).unwrap();
        let proc = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
        let gone = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            !proc.exists()
        });
        assert!(gone, "{who:?}: {} survived the command", pid.trim());
    }
}

fn kernel_scopes() -> bool {
    let o = std::process::Command::new(qwrap())
        .args(["inspect", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["layers"]["landlock_abi"].as_u64().unwrap_or(0) >= 6
}

#[test]
fn auto_confines_where_user_namespaces_are_refused() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let disabled = |args: &[&str]| f.qwrap_without_userns(args).output().unwrap();
        let o = disabled(&[
            "run",
            "--isolation",
            "auto",
            "--",
            "sh",
            "-c",
            "echo in > auto.txt; echo x > ../outside",
        ]);
        let err = stderr(&o);
        assert!(
            err.contains("qwrap: degraded: isolation: Landlock and seccomp only"),
            "{who:?}: {err}"
        );
        assert!(f.ws().join("auto.txt").exists(), "{who:?}: {err}");
        assert!(!f.path().join("outside").exists(), "{who:?}");
        // The default fails closed, and says which mode would run.
        let o = disabled(&["run", "--", "true"]);
        assert!(!o.status.success(), "{who:?}");
        assert!(
            stderr(&o).contains("--isolation landlock"),
            "{who:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn what_this_mode_cannot_give_is_refused() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for args in [
            &["--network", "proxied"][..],
            &["--pid", "private"],
            &["--view", "minimal"],
            &["--home", "overlay"],
            &["--landlock", "off"],
        ] {
            let o = run_landlock(&f, args, "touch ran");
            assert_eq!(o.status.code(), Some(125), "{who:?} {args:?}");
            assert!(!f.ws().join("ran").exists(), "{who:?} {args:?}");
            assert!(
                stderr(&o).contains("--isolation landlock"),
                "{who:?} {args:?}: {}",
                stderr(&o)
            );
        }
    }
}

#[test]
fn the_reports_say_the_mode_and_verify_passes_what_it_claims() {
    for who in Who::all() {
        let f = Fixture::new(who);
        ok(&f.command("git").args(["init", "-q", "."]).output().unwrap());
        f.mkdir("ws/src");
        f.write(
            "home/.bashrc",
            "export GITHUB_TOKEN=ghp_SECRETTOKENVALUE12345\n",
            0o644,
        );
        let report = |args: &[&str]| {
            let mut c = f.qwrap(args);
            c.args(["--isolation", "landlock"]).env_remove("QWRAP_PID");
            c.output().unwrap()
        };
        let o = report(&["verify"]);
        let out = ok(&o);
        assert!(
            out.contains("N/A  /dev is minimal: not provided by this mode"),
            "{who:?}: {out}"
        );
        assert!(out.contains("PASS git dirs cannot be swapped"), "{who:?}: {out}");
        assert!(out.contains("PASS workspace write"), "{who:?}: {out}");
        assert!(
            out.contains("Isolation: Landlock and seccomp only"),
            "{who:?}: {out}"
        );
        assert!(out.contains("Confinement verified"), "{who:?}: {out}");
        let o = report(&["inspect"]);
        let out = ok(&o);
        assert!(
            out.contains("  isolation: applied (Landlock and seccomp only"),
            "{who:?}: {out}"
        );
        assert!(
            out.contains("Boundary: no namespaces: Landlock and seccomp alone"),
            "{who:?}: {out}"
        );
        // No redacted copy can be shown without a mount: it says hidden.
        assert!(out.contains("Shell start-up files hidden"), "{who:?}: {out}");
        let o = report(&["receipt", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["isolation"], "landlock", "{who:?}");
    }
}
