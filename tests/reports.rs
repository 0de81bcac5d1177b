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
fn the_git_gap_can_be_accepted_by_name() {
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
        let o = f
            .qwrap(&["receipt", "--accept-degraded", "git-pointers"])
            .output()
            .unwrap();
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{who:?}: {out}");
        assert!(out.contains("accepted_degradations: git-pointers\n"), "{out}");
        assert!(out.contains("result: promote\n"), "{out}");
    }
}
