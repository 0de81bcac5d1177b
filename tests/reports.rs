//! Reports say what the kernel gives, on an old Landlock ABI too (the test
//! build's QWRAP_TEST_LANDLOCK_ABI), and an administrator's accepted
//! exceptions are named and recorded. As root and unprivileged.

mod common;

use common::*;

#[test]
fn an_old_kernel_is_reported_as_it_is() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let old = |args: &[&str]| {
            f.qwrap(args)
                .env("QWRAP_TEST_LANDLOCK_ABI", "5")
                .output()
                .unwrap()
        };
        // run: one line on stderr, silenced by --quiet.
        let o = old(&["run", "--", "true"]);
        assert!(
            stderr(&o).contains("qwrap: degraded: landlock scopes"),
            "{who:?}: {}",
            stderr(&o)
        );
        let o = old(&["run", "--quiet", "--", "true"]);
        assert_eq!(stderr(&o), "", "{who:?}");
        // verify measures the exposure: a FAIL that says why.
        let o = old(&["verify"]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{who:?}: {out}");
        assert!(
            out.contains("FAIL a host abstract socket cannot be reached"),
            "{out}"
        );
        assert!(out.contains("no Landlock scope"), "{out}");
        assert!(out.contains("PASS a host process cannot be signalled"), "{out}");
        // --landlock require fails closed, as run does.
        let o = old(&["verify", "--landlock", "require"]);
        assert_eq!(o.status.code(), Some(125), "{who:?}: {}", stdout(&o));
        assert!(stdout(&o).is_empty());
        // Accepted by name: verified, and the receipt records it.
        let o = old(&["verify", "--accept-degraded", "abstract-socket"]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{who:?}: {out}");
        assert!(
            out.contains("ACCEPTED a host abstract socket cannot be reached"),
            "{out}"
        );
        assert!(out.contains("with accepted exceptions: abstract-socket"), "{out}");
        let o = old(&["receipt", "--accept-degraded", "abstract-socket"]);
        let out = stdout(&o);
        for line in [
            "landlock_abi: 5\n",
            "accepted_degradations: abstract-socket\n",
            "result: promote\n",
        ] {
            assert!(out.contains(line), "{who:?}: {line:?} missing:\n{out}");
        }
        assert!(
            out.contains("degraded_layers: landlock scopes: Landlock ABI 5"),
            "{out}"
        );
        assert!(
            out.lines()
                .any(|l| l.starts_with("skipped_checks: ") && l.contains("worktree-commit")),
            "{out}"
        );
    }
}

#[test]
fn a_checkout_promotes_and_a_failure_can_be_accepted_by_name() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let git = |args: &[&str]| {
            ok(&f
                .command("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .output()
                .unwrap())
        };
        git(&["init", "-q"]);
        f.write("ws/a", "a\n", 0o644);
        git(&["add", "a"]);
        git(&["commit", "-qm", "a"]);
        let o = f.qwrap(&["receipt"]).output().unwrap();
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{who:?}: {out}");
        assert!(out.contains("builtin_verify: pass\n"), "{out}");
        assert!(out.contains("result: promote\n"), "{out}");
        // A failure (abstract sockets with Landlock off and the network
        // open) holds the rollout until it is accepted by name.
        let o = f.qwrap(&["receipt", "--landlock", "off"]).output().unwrap();
        assert!(stdout(&o).contains("result: hold\n"), "{}", stdout(&o));
        let o = f
            .qwrap(&[
                "receipt",
                "--landlock",
                "off",
                "--accept-degraded",
                "abstract-socket",
            ])
            .output()
            .unwrap();
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{who:?}: {out}\n{}", stderr(&o));
        assert!(out.contains("accepted_degradations: abstract-socket\n"), "{out}");
        assert!(out.contains("result: promote\n"), "{out}");
    }
}

/// bwrap mode: `QWRAP_LANDLOCK=require` turns qwrap's layers on and fails
/// closed (the command never runs) where the kernel cannot give them;
/// best-effort layers say what they lack.
#[test]
fn bwrap_mode_holds_landlock_require() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let ws = f.ws();
        let ws = ws.to_str().unwrap();
        let bwrap = |abi: &str, env: (&str, &str)| {
            f.qwrap(&[
                "bwrap",
                "--ro-bind",
                "/",
                "/",
                "--bind",
                ws,
                ws,
                "--",
                "sh",
                "-c",
                "touch ran",
            ])
            .env("QWRAP_TEST_LANDLOCK_ABI", abi)
            .env(env.0, env.1)
            .output()
            .unwrap()
        };
        let o = bwrap("5", ("QWRAP_LANDLOCK", "require"));
        assert_eq!(o.status.code(), Some(1), "{who:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("bwrap: QWRAP_LANDLOCK=require: Landlock scopes"),
            "{who:?}: {}",
            stderr(&o)
        );
        assert!(!f.ws().join("ran").exists(), "{who:?}: the command ran");
        let o = bwrap("5", ("QWRAP_BWRAP_LAYERS", "1"));
        assert!(o.status.success(), "{who:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("qwrap: degraded: Landlock scopes"),
            "{who:?}: {}",
            stderr(&o)
        );
        std::fs::remove_file(f.ws().join("ran")).unwrap();
        // On this kernel require holds: the layers are on, nothing degraded.
        let o = f
            .qwrap(&["bwrap", "--ro-bind", "/", "/", "--bind", ws, ws, "--", "true"])
            .env("QWRAP_LANDLOCK", "require")
            .env("QWRAP_TRACE", "1")
            .output()
            .unwrap();
        assert!(o.status.success(), "{who:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("landlock_restrict_self()"),
            "{who:?}: {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("degraded"), "{who:?}: {}", stderr(&o));
    }
}

/// With user namespaces disabled (the limit set to 0 in a user namespace
/// of the test's own), `run` and bwrap mode fail naming the cause.
#[test]
fn disabled_user_namespaces_are_named_by_both_front_ends() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for args in [
            &["run", "--", "true"][..],
            &["bwrap", "--unshare-user", "--ro-bind", "/", "/", "true"],
        ] {
            let o = f.qwrap_without_userns(args).output().unwrap();
            let err = stderr(&o);
            assert!(!o.status.success(), "{who:?} {args:?}");
            assert!(err.contains("(ENOSPC)"), "{who:?} {args:?}: {err}");
            assert!(
                err.contains("hint: user namespaces are disabled: the sysctl user.max_user_namespaces is 0"),
                "{who:?} {args:?}: {err}"
            );
        }
    }
}
