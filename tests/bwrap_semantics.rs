//! bwrap mode's semantics where bubblewrap's own suite found qwrap wrong:
//! capabilities, --args, --json-status-fd, --disable-userns and PWD against
//! Debian's bubblewrap where it has the feature; --disable-userns against a
//! command that raises the limit again, --json-status-fd after a failure,
//! --args with empty words, overlays (observed on the host's directories),
//! the caller's seccomp programs as the last thing before execve, PWD and
//! the modes of what is created on the host. As root and unprivileged.

mod common;

use common::bwrap_diff::*;
use common::*;
use std::os::unix::fs::PermissionsExt;

fn bwrap(f: &Fixture, args: &[&str]) -> std::process::Command {
    let mut c = f.command(qwrap_bwrap());
    c.args(args);
    c
}

#[test]
fn capabilities_are_bubblewraps() {
    for args in [
        &[
            "--ro-bind",
            "/",
            "/",
            "--unshare-user",
            "--uid",
            "0",
            "--cap-add",
            "ALL",
        ][..],
        &[
            "--ro-bind",
            "/",
            "/",
            "--unshare-user",
            "--uid",
            "0",
            "--cap-add",
            "CAP_CHOWN",
        ],
        &[
            "--ro-bind",
            "/",
            "/",
            "--unshare-user",
            "--uid",
            "0",
            "--cap-add",
            "ALL",
            "--cap-drop",
            "CAP_CHOWN",
        ],
        &[
            "--ro-bind",
            "/",
            "/",
            "--unshare-user",
            "--uid",
            "0",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_CHOWN",
        ],
        &["--ro-bind", "/", "/", "--unshare-user", "--uid", "0"],
        &[
            "--ro-bind",
            "/",
            "/",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_CHOWN",
        ],
    ] {
        compare(&args.join(" "), args);
    }
}

#[test]
fn disabled_user_namespaces_stay_disabled_when_the_command_raises_the_limit() {
    // With every capability inside, the command writes the sysctl it can
    // reach; the limit that binds it is one level up.
    let script = "echo 100 > /proc/sys/user/max_user_namespaces 2>/dev/null; \
                  if unshare -U true 2>/dev/null; then echo made; else echo refused; fi";
    for who in Who::all() {
        let f = Fixture::new(who);
        for caps in [&[][..], &["--uid", "0", "--cap-add", "ALL"]] {
            let mut args = vec!["--unshare-user", "--disable-userns", "--bind", "/", "/"];
            args.extend_from_slice(caps);
            args.extend_from_slice(&["--", "sh", "-c", script]);
            let o = bwrap(&f, &args).output().unwrap();
            assert_eq!(ok(&o).trim(), "refused", "{who:?} {caps:?}");
        }
        let o = bwrap(
            &f,
            &[
                "--unshare-user",
                "--bind",
                "/",
                "/",
                "--assert-userns-disabled",
                "true",
            ],
        )
        .output()
        .unwrap();
        assert_eq!(o.status.code(), Some(1), "{who:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("not disabled as requested"), "{}", stderr(&o));
    }
}

#[test]
fn json_status_reports_an_exit_code_only_for_a_command_that_ran() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let status = f.path().join("status.json");
        for (args, ran) in [
            (&["--chdir", "/nonexistent", "true"][..], false),
            (&["--chdir", "/nonexistent", "true"][..], false),
            (&["--chdir", "/nonexistent", "true"][..], false),
            (&["--chdir", "/nonexistent", "true"][..], false),
            (&["/"][..], false),
            (&["sh", "-c", "exit 7"][..], true),
        ] {
            let script = format!(
                "exec '{}' --bind / / --json-status-fd 3 \"$@\" 3>'{}'",
                qwrap_bwrap().display(),
                status.display()
            );
            let o = f
                .command("sh")
                .args(["-c", &script, "sh"])
                .args(args)
                .output()
                .unwrap();
            let text = std::fs::read_to_string(&status).unwrap();
            assert!(text.contains("\"child-pid\""), "{who:?} {args:?}: {text}");
            // The ids are read before the child may go on, even to fail.
            assert!(text.contains("\"mnt-namespace\""), "{who:?} {args:?}: {text}");
            assert_eq!(text.contains("\"exit-code\""), ran, "{who:?} {args:?}: {text}");
            if ran {
                assert!(text.contains("\"exit-code\": 7"), "{text}");
                assert_eq!(o.status.code(), Some(7));
            }
        }
    }
}

#[test]
fn args_files_keep_empty_values_and_may_repeat() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.write("a1", "--setenv\0X\0\0--setenv\0Y\0y\0", 0o644);
        f.write("a2", "--setenv\0Z\0z\0", 0o644);
        let script = format!(
            "exec '{}' --bind / / --args 3 --args 4 sh -c 'echo \"${{X-unset}}|$Y|$Z\"' 3<'{}' 4<'{}'",
            qwrap_bwrap().display(),
            f.path().join("a1").display(),
            f.path().join("a2").display()
        );
        let o = f.command("sh").args(["-c", &script]).output().unwrap();
        assert_eq!(ok(&o).trim(), "|y|z", "{who:?}");
    }
}

#[test]
fn overlays_write_where_they_say_and_nowhere_else() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for d in ["lower1", "lower2", "upper", "work", "lower :,\\"] {
            f.mkdir(d);
        }
        f.write("lower1/a", "1", 0o644);
        f.write("lower2/a", "2", 0o644);
        f.write("lower :,\\/b", "b", 0o644);
        let p = |d: &str| f.path().join(d).display().to_string();
        let (l1, l2, up, wk, odd) = (p("lower1"), p("lower2"), p("upper"), p("work"), p("lower :,\\"));
        // --overlay: the upper layer on the host takes the write; the top
        // lower layer is the last --overlay-src.
        let o = bwrap(
            &f,
            &[
                "--bind",
                "/",
                "/",
                "--overlay-src",
                &l1,
                "--overlay-src",
                &l2,
                "--overlay",
                &up,
                &wk,
                "/mnt",
                "sh",
                "-c",
                "cat /mnt/a; echo 5 > /mnt/a",
            ],
        )
        .output()
        .unwrap();
        assert_eq!(ok(&o).trim(), "2", "{who:?}");
        assert_eq!(std::fs::read_to_string(f.path().join("upper/a")).unwrap(), "5\n");
        assert_eq!(std::fs::read_to_string(f.path().join("lower2/a")).unwrap(), "2");
        // --tmp-overlay: writes vanish with the sandbox; a path overlayfs
        // would split on is escaped.
        let o = bwrap(
            &f,
            &[
                "--bind",
                "/",
                "/",
                "--overlay-src",
                &odd,
                "--tmp-overlay",
                "/mnt",
                "sh",
                "-c",
                "echo x > /mnt/b; cat /mnt/b",
            ],
        )
        .output()
        .unwrap();
        assert_eq!(ok(&o).trim(), "x", "{who:?}");
        assert_eq!(
            std::fs::read_to_string(f.path().join("lower :,\\/b")).unwrap(),
            "b"
        );
        // --ro-overlay: no write at all.
        let o = bwrap(
            &f,
            &[
                "--bind",
                "/",
                "/",
                "--overlay-src",
                &l1,
                "--overlay-src",
                &l2,
                "--ro-overlay",
                "/mnt",
                "sh",
                "-c",
                "echo 9 > /mnt/a",
            ],
        )
        .output()
        .unwrap();
        assert!(!o.status.success(), "{who:?}");
        assert_eq!(std::fs::read_to_string(f.path().join("lower2/a")).unwrap(), "2");
        let o = bwrap(&f, &["--bind", "/", "/", "--ro-overlay", "/mnt", "true"])
            .output()
            .unwrap();
        assert!(stderr(&o).contains("--ro-overlay requires at least two --overlay-src"));
    }
}

/// `ret ERRNO(EPERM)` for rt_sigaction, `ret ALLOW` for everything else
/// (x86-64 numbering; the architecture is checked first).
fn deny_rt_sigaction() -> Vec<u8> {
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    let ins = |code: u16, jt: u8, jf: u8, k: u32| {
        let mut v = code.to_ne_bytes().to_vec();
        v.extend([jt, jf]);
        v.extend(k.to_ne_bytes());
        v
    };
    [
        ins(0x20, 0, 0, 4),                 // ld arch
        ins(0x15, 1, 0, AUDIT_ARCH_X86_64), // jeq x86-64 → next check
        ins(0x06, 0, 0, 0x7fff_0000),       // other arch: allow
        ins(0x20, 0, 0, 0),                 // ld nr
        ins(0x15, 0, 1, 13),                // jeq rt_sigaction
        ins(0x06, 0, 0, 0x0005_0000 | 1),   // ERRNO(EPERM)
        ins(0x06, 0, 0, 0x7fff_0000),       // allow
    ]
    .concat()
}

#[test]
fn the_callers_seccomp_program_is_the_last_thing_before_execve() {
    if std::env::consts::ARCH != "x86_64" {
        eprintln!("SKIP the caller's seccomp program: its BPF is written for x86_64");
        return;
    }
    for who in Who::all() {
        let f = Fixture::new(who);
        let prog = f.path().join("prog.bpf");
        std::fs::write(&prog, deny_rt_sigaction()).unwrap();
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o644)).unwrap();
        // The command starts although rt_sigaction is refused (nothing
        // after the filter needs it), and the filter binds the command.
        let script = format!(
            "exec '{}' --bind / / --add-seccomp-fd 3 sh -c 'grep ^Seccomp: /proc/self/status' 3<'{}'",
            qwrap_bwrap().display(),
            prog.display()
        );
        let o = f.command("sh").args(["-c", &script]).output().unwrap();
        assert_eq!(
            ok(&o).split_whitespace().collect::<Vec<_>>(),
            ["Seccomp:", "2"],
            "{who:?}"
        );
        let o = f
            .command("sh")
            .args([
                "-c",
                &format!(
                    "exec '{}' --bind / / --add-seccomp-fd 3 true 3</dev/null",
                    qwrap_bwrap().display()
                ),
            ])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(1),
            "an empty program is refused: {}",
            stderr(&o)
        );
    }
}

#[test]
fn pwd_is_the_directory_entered_and_created_mount_points_take_bubblewraps_modes() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let o = bwrap(&f, &["--bind", "/", "/", "--clearenv", "--chdir", "/tmp", "env"])
            .output()
            .unwrap();
        assert_eq!(ok(&o), "PWD=/tmp\n", "{who:?}");
        // Made on the host through the bind of /: a file mount point 0444,
        // missing parents from the --perms given.
        let file = f.write("some-file", "x", 0o644);
        let point = f.path().join("new/file-point");
        let deep = f.path().join("p640/dir");
        let o = bwrap(
            &f,
            &[
                "--bind",
                "/",
                "/",
                "--bind",
                file.to_str().unwrap(),
                point.to_str().unwrap(),
                "--perms",
                "0640",
                "--dir",
                deep.to_str().unwrap(),
                "true",
            ],
        )
        .output()
        .unwrap();
        ok(&o);
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&point), 0o444, "{who:?}");
        assert_eq!(mode(&f.path().join("p640")), 0o750, "{who:?}");
        assert_eq!(mode(&deep), 0o640, "{who:?}");
    }
}

#[test]
fn destinations_resolve_inside_the_new_root_never_on_the_host() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.write("home/.bashrc", "orig\n", 0o644);
        std::os::unix::fs::symlink(f.home(), f.ws().join("lnk")).unwrap();
        let ws = f.ws().display().to_string();
        let lnk = |name: &str| format!("{ws}/lnk/{name}");
        let data = f.write("data", "planted\n", 0o644);
        for (root, ops) in [
            ("ro", vec!["--dir".to_string(), lnk("x")]),
            ("ro", vec!["--chmod".into(), "0777".into(), lnk(".bashrc")]),
            ("ro", vec!["--symlink".into(), "/etc/passwd".into(), lnk("sl")]),
            ("ro", vec!["--ro-bind".into(), "/dev/null".into(), lnk("newfile")]),
            ("ro", vec!["--file".into(), "3".into(), lnk(".bash_profile")]),
            ("ro", vec!["--tmpfs".into(), lnk("t")]),
            ("none", vec!["--dir".to_string(), lnk("x")]),
            ("none", vec!["--file".into(), "3".into(), lnk(".bash_profile")]),
        ] {
            let mut args: Vec<String> = match root {
                "ro" => vec!["--ro-bind".into(), "/".into(), "/".into()],
                _ => ["/usr", "/bin", "/lib", "/lib64"]
                    .iter()
                    .flat_map(|p| ["--ro-bind".to_string(), p.to_string(), p.to_string()])
                    .collect(),
            };
            args.extend(["--bind".into(), ws.clone(), ws.clone()]);
            args.extend(ops.iter().cloned());
            args.push("true".into());
            let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
            let script = format!(
                "exec '{}' {} 3<'{}'",
                qwrap_bwrap().display(),
                quoted.join(" "),
                data.display()
            );
            let _ = f.command("sh").args(["-c", &script]).output().unwrap();
            let names: Vec<String> = std::fs::read_dir(f.home())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(
                names,
                [".bashrc"],
                "{who:?} {root} {ops:?}: the host home changed"
            );
            let mode = std::fs::metadata(f.home().join(".bashrc"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o7777, 0o644, "{who:?} {ops:?}");
        }
    }
}

/// Runs `sh -c SCRIPT` with `BWRAP` naming Debian's bubblewrap, then qwrap
/// as bwrap, as the identity under test; the two outputs.
fn both(f: &Fixture, script: &str) -> (String, String) {
    let run = |prog: &std::path::Path| {
        let o = f
            .command("sh")
            .args(["-c", script])
            .env("BWRAP", prog)
            .output()
            .unwrap();
        format!(
            "{}{}",
            stdout(&o),
            o.status.code().map_or(String::new(), |c| format!("rc={c}\n"))
        )
    };
    (run(std::path::Path::new("/usr/bin/bwrap")), run(qwrap_bwrap()))
}

#[test]
fn agrees_with_debian_bubblewrap_where_it_has_the_feature() {
    assert!(have_bwrap(), "bubblewrap is not installed (.ci/run installs it)");
    for who in Who::all() {
        let f = Fixture::new(who);
        let args = f.write("args", "--setenv\0X\0\0--setenv\0Y\0y\0", 0o644);
        let status = f.path().join("status.json");
        for (expect, script) in [
            // Empty words in an --args file are values.
            (
                "|y\n",
                format!(
                    "\"$BWRAP\" --bind / / --args 3 sh -c 'echo \"${{X-unset}}|$Y\"' 3<'{}'",
                    args.display()
                ),
            ),
            // No exit code after a setup failure; the child pid all the same.
            (
                "\"child-pid\"",
                format!(
                    "\"$BWRAP\" --bind / / --json-status-fd 3 --chdir /nonexistent true 3>'{0}' 2>/dev/null; \
                 sed 's/[0-9][0-9]*/N/g' '{0}'",
                    status.display()
                ),
            ),
            // A nested user namespace stays refused.
            (
                "refused\n",
                "\"$BWRAP\" --unshare-user --disable-userns --bind / / -- sh -c \
             'unshare -U true 2>&- && echo made || echo refused'"
                    .to_string(),
            ),
            // PWD names the directory entered.
            (
                "PWD=/tmp\n",
                "\"$BWRAP\" --bind / / --clearenv --chdir /tmp env".to_string(),
            ),
        ] {
            let (real, ours) = both(&f, &script);
            assert!(real.contains(expect), "{who:?}: bubblewrap itself: {real}");
            assert_eq!(real, ours, "{who:?}: {script}");
        }
    }
}
