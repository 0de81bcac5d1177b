//! The live mode's agent and editor files (policy/agent_files.rs): those
//! at the workspace's top when the sandbox starts are read-only inside, as
//! git hooks are, and each one the command makes is named on qwrap's
//! stderr when it exits; `--allow-agent-files` leaves them be. A profile's
//! settings file in its state directory too. As root and unprivileged, on
//! both mount APIs.

mod common;

use common::*;

/// The live mode: the agent and editor files there at the start are
/// read-only, each one the command makes is named at exit; with
/// --allow-agent-files neither. A profile's settings file too.
#[test]
fn agent_files_are_read_only_and_new_ones_named() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            f.mkdir("ws/.vscode");
            f.mkdir("ws/.claude");
            f.mkdir("ws/.claude/hooks");
            f.mkdir("ws/.qwen");
            f.write("ws/.vscode/settings.json", "{}\n", 0o644);
            f.write("ws/.claude/settings.json", "{}\n", 0o644);
            f.write("ws/.claude/hooks/pre.sh", "#!/bin/sh\n", 0o755);
            f.write("ws/.qwen/settings.json", "{}\n", 0o644);
            f.write("ws/.envrc", "export A=1\n", 0o644);
            let before = tree(&f.ws(), &[]);
            // The files, the hook script a setting names, a new settings
            // file beside them, and the directory renamed away and made
            // again (a hostile review's route).
            let script = "for p in .vscode/settings.json .vscode/tasks.json .claude/settings.json .claude/hooks/pre.sh \
                 .claude/settings.local.json .qwen/extensions .envrc; do \
                 echo evil > $p 2>/dev/null && echo WROTE $p; done; rm -rf .vscode 2>/dev/null; \
                 mv .envrc x 2>/dev/null && echo MOVED; \
                 for d in .claude .qwen; do mv $d $d.x 2>/dev/null && echo MOVED $d; mkdir -p $d 2>/dev/null; \
                 echo evil > $d/settings.json 2>/dev/null; done; \
                 echo '{}' > .mcp.json; mkdir .idea; echo ok";
            let o = f.run_sh(api, &[], script);
            assert_eq!(ok(&o), "ok\n", "{who:?} {api}");
            let mut after = tree(&f.ws(), &[]);
            for new in [".mcp.json", ".idea"] {
                assert!(after.remove(new).is_some(), "{new}");
                let line = format!(
                    "qwrap: {}: made inside during the run",
                    f.ws().join(new).display()
                );
                assert!(stderr(&o).contains(&line), "{who:?} {api}: {}", stderr(&o));
            }
            assert_eq!(after, before, "{who:?} {api}");
            let o = f.run_sh(
                api,
                &["--allow-agent-files"],
                "echo x > .vscode/tasks.json && echo '{}' > .cursor",
            );
            ok(&o);
            assert!(!stderr(&o).contains("made inside"), "{}", stderr(&o));
            assert!(f.ws().join(".vscode/tasks.json").exists());
        }
        // --profile qwen: Qwen Code's settings in its state directory.
        let f = Fixture::new(who);
        f.mkdir("home/.qwen");
        f.write("home/.qwen/settings.json", "{\"sandbox\": true}\n", 0o644);
        let o = f.run_sh(
            "new",
            &["--profile", "qwen"],
            "echo '{}' > ~/.qwen/settings.json; echo s > ~/.qwen/state; echo x > ~/.qwen/.env",
        );
        assert!(
            stderr(&o).contains("Read-only file system"),
            "{who:?}: {}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read_to_string(f.home().join(".qwen/settings.json")).unwrap(),
            "{\"sandbox\": true}\n"
        );
        assert!(
            f.home().join(".qwen/state").exists(),
            "the profile's root stays writable"
        );
        let line = format!(
            "qwrap: {}: made inside during the run",
            f.home().join(".qwen/.env").display()
        );
        assert!(stderr(&o).contains(&line), "{who:?}: {}", stderr(&o));
    }
}

/// What an allowed `.envrc` loads by name (`source_env`, `dotenv`,
/// `source`): direnv asks again only when `.envrc` itself changes, so an
/// edit there ran on the user's next `cd` unasked. Those there at the start
/// are read-only; one made inside is named at exit. In both isolation
/// modes.
#[test]
fn what_an_envrc_loads_is_guarded_as_it_is() {
    let modes = ["new", "legacy", "landlock"];
    for (who, mode) in Who::all().into_iter().flat_map(|w| modes.map(|m| (w, m))) {
        let f = Fixture::new(who);
        f.mkdir("ws/env");
        f.write(
            "ws/.envrc",
            "source_env_if_exists .envrc.local\nsource_env env/dev.sh\ndotenv_if_exists\n",
            0o644,
        );
        // Other spellings, and the `.envrc` of a directory above (direnv
        // reads it where the workspace has none, or by `source_up`).
        let odd = "builtin source env/e2\n\\. env/e4\nsource -- env/e5\nsource_env \"$PWD/env/e9\"\nsource ./d/../env/e12\neval \"$(cat env/e14)\"\n";
        let envrc = std::fs::read_to_string(f.ws().join(".envrc")).unwrap() + odd;
        f.write("ws/.envrc", &envrc, 0o644);
        f.write(".envrc", "source_env ws/env/up.sh\n", 0o644);
        let named = ["dev.sh", "e2", "e4", "e5", "e9", "e12", "e14", "up.sh"];
        for x in named {
            f.write(&format!("ws/env/{x}"), "export A=1\n", 0o644);
        }
        let script = "echo 'touch m1' > .envrc.local; for x in dev.sh e2 e4 e5 e9 e12 e14 up.sh; do echo 'touch m2' >> env/$x; done; echo PATH=evil > .env; echo ok";
        let o = match mode {
            "landlock" => run_landlock(&f, &[], script),
            api => f.run_sh(api, &[], script),
        };
        assert!(stdout(&o).contains("ok"), "{who:?} {mode}: {}", stderr(&o));
        for x in named {
            let text = std::fs::read_to_string(f.ws().join("env").join(x)).unwrap();
            assert_eq!(text, "export A=1\n", "{who:?} {mode}: {x}");
        }
        for new in [".envrc.local", ".env"] {
            if f.ws().join(new).exists() {
                let line = format!(
                    "qwrap: {}: made inside during the run",
                    f.ws().join(new).display()
                );
                assert!(
                    stderr(&o).contains(&line),
                    "{who:?} {mode}: {new}: {}",
                    stderr(&o)
                );
            }
        }
    }
}
