//! inspect, verify and receipt against the real kernel, as root and as an
//! unprivileged uid: plain directories, normal checkouts and linked worktrees.

mod common;

use common::*;
use std::path::Path;
use std::process::Output;

/// git as the identity under test, with a fixed author.
fn git(f: &Fixture, dir: &Path, args: &[&str]) -> String {
    let o = f
        .command("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    ok(&o)
}

#[derive(Clone, Copy, Debug)]
enum Layout {
    Plain,
    Normal,
    Linked,
}

/// Makes the fixture's workspace of the given kind; returns the workspace.
fn layout(f: &Fixture, kind: Layout) -> std::path::PathBuf {
    match kind {
        Layout::Plain => f.ws(),
        Layout::Normal | Layout::Linked => {
            let repo = f.ws();
            git(f, &repo, &["init", "-q", "-b", "main"]);
            f.write("ws/tracked.txt", "one\n", 0o644);
            git(f, &repo, &["add", "tracked.txt"]);
            git(f, &repo, &["commit", "-q", "-m", "init"]);
            if let Layout::Linked = kind {
                let wt = f.path().join("linked");
                git(f, &repo, &["worktree", "add", "-q", wt.to_str().unwrap()]);
                wt
            } else {
                repo
            }
        }
    }
}

/// verify in a git checkout: exit 1, and the only failing check is the
/// absent-pointer gap (docs/security.md, residual risks).
#[track_caller]
/// In a checkout every check passes, the git guard's included (what the
/// probe plants is looked for on the host while it runs).
fn assert_verified_in_a_checkout(o: &Output, ctx: &str) {
    let out = stdout(o);
    assert_eq!(o.status.code(), Some(0), "{ctx}");
    assert!(!out.contains("FAIL"), "{ctx}");
    assert!(
        out.contains("PASS git dirs cannot be swapped; nothing planted in them reaches the host's"),
        "{ctx}"
    );
    assert!(out.contains("PASS worktree commit canary"), "{ctx}");
    assert!(out.contains("\nConfinement verified ("), "{ctx}");
}

fn qwrap_in(f: &Fixture, dir: &Path, args: &[&str]) -> Output {
    f.qwrap(args).current_dir(dir).output().unwrap()
}

#[test]
fn verify_passes_in_every_layout_network_and_tmp() {
    for who in Who::all() {
        for kind in [Layout::Plain, Layout::Normal, Layout::Linked] {
            let f = Fixture::new(who);
            let ws = layout(&f, kind);
            for net in ["open", "closed"] {
                for tmp in ["private", "host"] {
                    let o = qwrap_in(&f, &ws, &["verify", "--network", net, "--tmp", tmp]);
                    let out = stdout(&o);
                    let ctx = format!("{who:?} {kind:?} {net} {tmp}\n{out}{}", stderr(&o));
                    match kind {
                        Layout::Plain => {
                            assert_eq!(o.status.code(), Some(0), "{ctx}");
                            assert!(out.contains("\nConfinement verified ("), "{ctx}");
                            assert!(!out.contains("FAIL"), "{ctx}");
                        }
                        _ => assert_verified_in_a_checkout(&o, &ctx),
                    }
                    for name in [
                        "PASS workspace write",
                        "PASS outside write",
                        "PASS home write",
                        if private_pid() {
                            "PASS PID namespace of its own"
                        } else {
                            "PASS PID namespace shared"
                        },
                        "PASS network",
                        "PASS /dev is minimal",
                        "PASS no capabilities",
                        "PASS no_new_privs",
                    ] {
                        assert!(out.contains(name), "{name} missing: {ctx}");
                    }
                    match kind {
                        Layout::Plain => assert!(
                            out.contains("SKIP worktree commit canary: the workspace is not a git checkout"),
                            "{ctx}"
                        ),
                        _ => assert!(out.contains("PASS worktree commit canary"), "{ctx}"),
                    }
                }
            }
            // The canary leaves no worktree behind.
            if !matches!(kind, Layout::Plain) {
                let list = git(&f, &ws, &["worktree", "list", "--porcelain"]);
                assert!(!list.contains("qwrap-canary"), "{list}");
            }
        }
    }
}

#[test]
fn verify_can_fail() {
    for who in Who::all() {
        let f = Fixture::new(who);
        // The workspace made read-only again: the workspace-write check must fail.
        let o = f.qwrap(&["verify", "--ro", "."]).output().unwrap();
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
        assert!(out.contains("FAIL workspace write"), "{out}");
        assert!(
            out.contains("  expected: create and remove a file\n  got: Read-only file system (EROFS)"),
            "{out}"
        );
        assert!(out.contains("Confinement NOT verified: 1 of "), "{out}");
        let json: serde_json::Value = serde_json::from_str(&stdout(
            &f.qwrap(&["verify", "--ro", ".", "--json"]).output().unwrap(),
        ))
        .unwrap();
        assert_eq!(json["verified"], false);
        assert_eq!(json["failed"], 1);
    }
}

#[test]
fn git_commit_in_linked_worktree_under_run() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let wt = layout(&f, Layout::Linked);
        let o = f
            .qwrap(&[
                "run",
                "--",
                "sh",
                "-c",
                "echo two >> tracked.txt && git -c user.name=t -c user.email=t@e.invalid commit -qam inside",
            ])
            .current_dir(&wt)
            .output()
            .unwrap();
        ok(&o);
        assert_eq!(
            git(&f, &wt, &["log", "-1", "--format=%s"]).trim(),
            "inside",
            "{who:?}"
        );
    }
}

#[test]
fn inspect_reports_the_boundary() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let wt = layout(&f, Layout::Linked);
        let o = qwrap_in(&f, &wt, &["inspect"]);
        let out = ok(&o);
        for line in [
            "Backend: qwrap ",
            "Enforcement: full\n",
            "Boundary: ",
            "Network: open\n",
            &format!("Target dir: {}\n", wt.display()),
            "Writable roots:\n",
            "Read-only inside a writable root:\n",
            "Git metadata: linked-worktree (",
            "Temp: private",
            "Mount API: new",
            "Kernel: Linux ",
        ] {
            assert!(out.contains(line), "{line:?} missing in\n{out}");
        }
        let json: serde_json::Value =
            serde_json::from_str(&ok(&qwrap_in(&f, &wt, &["sandbox", "--json"]))).unwrap();
        assert_eq!(json["enforcement"]["level"], "full");
        assert_eq!(json["git"]["checkout"], "linked-worktree");
        let reasons: Vec<&str> = json["writable_roots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["reason"].as_str().unwrap())
            .collect();
        assert!(
            reasons.contains(&"workspace") && reasons.contains(&"git"),
            "{reasons:?}"
        );
        // `sandbox --verify` is verify.
        let o = qwrap_in(&f, &wt, &["sandbox", "--verify"]);
        assert_verified_in_a_checkout(&o, "sandbox --verify");
    }
}

#[test]
fn inspect_and_verify_without_user_namespaces_fail_closed() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for (cmd, want) in [("inspect", "Enforcement: none ("), ("verify", "")] {
            let script = format!(
                "echo 0 > /proc/sys/user/max_user_namespaces && exec '{}' {cmd}",
                qwrap().display()
            );
            let o = f
                .command("unshare")
                .args(["-U", "-r", "sh", "-c", &script])
                .output()
                .unwrap();
            assert_eq!(
                o.status.code(),
                Some(125),
                "{who:?} {cmd}: {}{}",
                stdout(&o),
                stderr(&o)
            );
            assert!(stdout(&o).contains(want), "{}", stdout(&o));
            assert!(!stdout(&o).contains("PASS"), "{}", stdout(&o));
            let all = format!("{}{}", stdout(&o), stderr(&o));
            assert!(all.contains("user.max_user_namespaces"), "{all}");
        }
    }
}

fn network_of(f: &Fixture, extra_env: &[(&str, &str)], args: &[&str]) -> (String, String) {
    let mut c = f.qwrap(&["inspect", "--json"]);
    c.args(args);
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let v: serde_json::Value = serde_json::from_str(&ok(&c.output().unwrap())).unwrap();
    let setting = v["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "network")
        .unwrap()
        .clone();
    (
        v["network"].as_str().unwrap().to_string(),
        setting["source"].as_str().unwrap().to_string(),
    )
}

#[test]
fn settings_precedence_and_sources() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("home/.config/qwrap");
        f.mkdir("etc");
        let user = f.write("home/.config/qwrap/config.toml", "network = \"closed\"\n", 0o644);
        let system = f.write("etc/config.toml", "network = \"open\"\ntmp = \"host\"\n", 0o644);
        let sys = system.to_str().unwrap();
        let (net, src) = network_of(&f, &[("QWRAP_SYSTEM_CONFIG", sys)], &[]);
        assert_eq!((net.as_str(), src.as_str()), ("closed", user.to_str().unwrap()));
        let (net, src) = network_of(
            &f,
            &[("QWRAP_SYSTEM_CONFIG", sys), ("QWRAP_NETWORK", "open")],
            &[],
        );
        assert_eq!((net.as_str(), src.as_str()), ("open", "$QWRAP_NETWORK"));
        let (net, src) = network_of(
            &f,
            &[("QWRAP_SYSTEM_CONFIG", sys), ("QWRAP_NETWORK", "open")],
            &["--network", "closed"],
        );
        assert_eq!((net.as_str(), src.as_str()), ("closed", "--network"));
        // An invalid value names its file and is a usage error.
        f.write("home/.config/qwrap/config.toml", "network = \"bogus\"\n", 0o644);
        let o = f.qwrap(&["inspect"]).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(user.to_str().unwrap()), "{}", stderr(&o));
    }
}

#[test]
fn config_planted_in_the_workspace_changes_nothing() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("ws/.config/qwrap");
        for p in ["ws/.qwrap.toml", "ws/qwrap.toml", "ws/.config/qwrap/config.toml"] {
            f.write(p, "network = \"closed\"\ninclude = [\"/var/tmp\"]\n", 0o644);
        }
        let (net, src) = network_of(&f, &[], &[]);
        assert_eq!((net.as_str(), src.as_str()), ("open", "default"));
        // Even when the user's config directory points into the workspace,
        // the file there is ignored, and said so.
        let ws_cfg = f.ws().join(".config");
        let o = f
            .qwrap(&["inspect"])
            .env("XDG_CONFIG_HOME", &ws_cfg)
            .output()
            .unwrap();
        let out = ok(&o);
        assert!(out.contains("Network: open\n"), "{out}");
        assert!(out.contains("Note: ignored "), "{out}");
        assert!(!out.contains("/var/tmp  ["), "{out}");
    }
}

#[test]
fn receipt_is_filled_in() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let wt = layout(&f, Layout::Linked);
        let o = qwrap_in(&f, &wt, &["receipt"]);
        let out = stdout(&o);
        let keys: Vec<&str> = out.lines().map(|l| l.split_once(':').unwrap().0).collect();
        assert_eq!(
            keys,
            [
                "date",
                "host",
                "qwrap_version",
                "qwrap_executable",
                "release_commit",
                "linux_distribution",
                "kernel",
                "checkout",
                "backend_reported",
                "enforcement_reported",
                "network_mode",
                "allowed_domains",
                "writable_roots",
                "builtin_verify",
                "worktree_commit_canary",
                "outside_write_erofs",
                "required_host_sockets",
                "device_or_gui_exceptions",
                "landlock_abi",
                "degraded_layers",
                "skipped_checks",
                "accepted_degradations",
                "pid_namespace",
                "isolation",
                "view",
                "home",
                "workspace_mode",
                "cache_mode",
                "caches",
                "limits",
                "hidden_paths",
                "removed_variables",
                "result",
                "owner"
            ]
        );
        for line in [
            "checkout: linked-worktree\n",
            "enforcement_reported: full\n",
            "builtin_verify: pass\n",
            "worktree_commit_canary: pass\n",
            "outside_write_erofs: pass\n",
            "result: promote\n",
            "owner: (to fill in: who approves this rollout)\n",
        ] {
            assert!(out.contains(line), "{line:?} missing:\n{out}");
        }
        let v: serde_json::Value =
            serde_json::from_str(&stdout(&qwrap_in(&f, &wt, &["receipt", "--json"]))).unwrap();
        assert_eq!(v["result"], "promote");
        assert!(v["writable_roots"].as_array().unwrap().len() >= 2);
        // A failing check holds the rollout.
        let o = qwrap_in(&f, &wt, &["receipt", "--ro", "."]);
        assert_eq!(o.status.code(), Some(1));
        assert!(stdout(&o).contains("result: hold\n"), "{}", stdout(&o));
        assert!(stdout(&o).contains("builtin_verify: fail\n"));
    }
}

/// verify passes in a repository without a commit or a tracked file and in
/// a submodule's checkout, as in a checkout and a linked worktree.
#[test]
fn verify_passes_in_an_empty_repository_and_a_submodule() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let script = "set -e
            git -c user.name=t -c user.email=t@t init -q -b main lib && cd lib && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m l && cd ..
            git init -q -b main super && cd super && git -c user.name=t -c user.email=t@t -c protocol.file.allow=always submodule -q add ../lib lib
            git -c user.name=t -c user.email=t@t commit -qm sub && cd .. && git init -q -b main empty";
        ok(&f.command("sh").args(["-c", script]).output().unwrap());
        for dir in ["empty", "super/lib", "super"] {
            let o = qwrap_in(&f, &f.ws().join(dir), &["verify"]);
            let out = stdout(&o);
            assert_eq!(o.status.code(), Some(0), "{who:?} {dir}: {out}{}", stderr(&o));
            assert!(!out.contains("FAIL"), "{who:?} {dir}: {out}");
        }
    }
}

#[test]
fn nested_run_is_refused_clearly() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let marker = f.ws().join("marker");
        let inner = format!("'{}' run -- touch '{}'", qwrap().display(), marker.display());
        // In the private PID mode nesting works (tests/nested.rs).
        if !private_pid() {
            let o = f.run_sh("new", &[], &inner);
            assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
            assert!(stderr(&o).contains("nested"), "{}", stderr(&o));
            assert!(!marker.exists());
        }
        // Inside a sandbox qwrap did not make, the hint says so.
        if std::path::Path::new("/usr/bin/bwrap").exists() {
            let ws = f.ws();
            let ws = ws.to_str().unwrap();
            let o = f
                .command("bwrap")
                .args(["--ro-bind", "/", "/", "--dev", "/dev", "--bind", ws, ws, "--"])
                .arg(qwrap())
                .args(["run", "--", "touch"])
                .arg(&marker)
                .output()
                .unwrap();
            if !stderr(&o).contains("setting up uid map") && !stderr(&o).contains("bwrap:") {
                assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
                assert!(stderr(&o).contains("inside another sandbox"), "{}", stderr(&o));
                assert!(!marker.exists());
            }
        }
    }
}
