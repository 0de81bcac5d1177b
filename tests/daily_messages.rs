//! Refusals that say why, and settings the user names that win: the egress
//! proxy says each refusal on qwrap's stderr once (not with --quiet);
//! --setenv and --unsetenv win over the proxy's variables; a missing
//! --include and an --allow-domain without a proxied network are said; a
//! failed verify check names the option that accepts it; git config and
//! hooks changed inside are said to be not kept. As root and unprivileged.

mod common;

use common::*;

#[test]
fn egress_refusals_are_said_once_and_user_variables_win() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let script = "curl -s -o /dev/null -x http://127.0.0.1:3128 http://example.org/a; curl -s -o /dev/null -x http://127.0.0.1:3128 http://example.org/b; echo \"NO_PROXY=${NO_PROXY-unset}\"";
        if !std::path::Path::new("/usr/bin/curl").exists() {
            eprintln!("SKIP egress refusals: no curl");
            return;
        }
        let o = f
            .qwrap(&[
                "run",
                "--network",
                "proxied",
                "--allow-domain",
                "localhost",
                "--setenv",
                "NO_PROXY",
                "mine",
                "--",
                "sh",
                "-c",
                script,
            ])
            .output()
            .unwrap();
        assert_eq!(ok(&o).trim(), "NO_PROXY=mine", "{who:?}");
        let err = stderr(&o);
        assert_eq!(
            err.matches("qwrap: egress refused: example.org:80: ").count(),
            1,
            "{who:?}: {err}"
        );
        let o = f
            .qwrap(&[
                "run",
                "--quiet",
                "--network",
                "proxied",
                "--unsetenv",
                "NO_PROXY",
                "--",
                "sh",
                "-c",
                script,
            ])
            .output()
            .unwrap();
        assert_eq!(ok(&o).trim(), "NO_PROXY=unset", "{who:?}");
        assert!(!stderr(&o).contains("egress refused"), "{who:?}: {}", stderr(&o));
    }
}

#[test]
fn settings_that_do_nothing_are_said() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let missing = f.path().join("missing");
        let o = f
            .qwrap(&["run", "--include"])
            .arg(&missing)
            .args(["--allow-domain", "example.org", "--", "true"])
            .output()
            .unwrap();
        ok(&o);
        let err = stderr(&o);
        assert!(
            err.contains(&format!(
                "{}: --include: does not exist (left out)",
                missing.display()
            )),
            "{who:?}: {err}"
        );
        assert!(
            err.contains(
                "--allow-domain example.org (from --allow-domain) applies to --network proxied only"
            ),
            "{who:?}: {err}"
        );
        // The receipt lists no allowed domains for an open network.
        let o = f
            .qwrap(&["receipt", "--allow-domain", "example.org"])
            .output()
            .unwrap();
        assert!(!stdout(&o).contains("example.org"), "{who:?}: {}", stdout(&o));
        // A failed check names the option that accepts it.
        let o = f.qwrap(&["verify", "--landlock", "off"]).output().unwrap();
        assert!(
            stdout(&o).contains("to accept it for a rollout: --accept-degraded abstract-socket"),
            "{who:?}: {}",
            stdout(&o)
        );
    }
}

#[test]
fn git_config_and_hooks_changed_inside_are_said_not_kept() {
    for who in Who::all() {
        let f = Fixture::new(who);
        ok(&f
            .command("git")
            .args(["init", "-q", "-b", "main"])
            .output()
            .unwrap());
        let o = f.run_sh(
            "new",
            &[],
            "git remote add origin /x && echo '#!/bin/sh' > .git/hooks/pre-commit && echo done",
        );
        assert_eq!(ok(&o).trim(), "done");
        let err = stderr(&o);
        assert!(
            err.contains("/.git/config: changed inside and not kept"),
            "{who:?}: {err}"
        );
        assert!(
            err.contains("/.git/hooks/pre-commit: written inside and not kept"),
            "{who:?}: {err}"
        );
        let remotes = ok(&f.command("git").arg("remote").output().unwrap());
        assert!(remotes.trim().is_empty(), "{who:?}: {remotes}");
    }
}

/// A tool's own state directory a profile names is made on its first run
/// (qwen -p in a fresh home wrote to ~/.qwen and failed before).
#[test]
fn a_profiles_missing_state_dir_is_made() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let o = f.run_sh(
            "new",
            &["--profile", "qwen"],
            "mkdir -p ~/.qwen/extension-store && echo ok > ~/.qwen/extension-store/f && echo wrote",
        );
        assert_eq!(ok(&o).trim(), "wrote", "{who:?}: {}", stderr(&o));
        assert!(f.home().join(".qwen/extension-store/f").exists(), "{who:?}");
    }
}
