//! The calling user's credential stores stay unreadable inside, by every
//! route the sandbox has, and credential-looking variables stay out of the
//! command's environment. As root and unprivileged, on both mount APIs.

mod common;

use common::*;
use std::process::Stdio;

/// Every default entry, made in the test home.
const FILES: [&str; 13] = [
    ".ssh/id_ed25519",
    ".ssh/id_rsa",
    ".gnupg/secring.gpg",
    ".aws/credentials",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
];
const DIRS: [&str; 9] = [
    ".gnupg/private-keys-v1.d",
    ".aws/sso/cache",
    ".config/gcloud",
    ".azure",
    ".password-store",
    ".local/share/keyrings",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
];
const READABLE: [&str; 3] = [".ssh/id_ed25519.pub", ".ssh/known_hosts", ".ssh/config"];

fn home_with_secrets(f: &Fixture) {
    for d in [
        ".ssh",
        ".gnupg",
        ".aws",
        ".kube",
        ".docker",
        ".config/gh",
        ".cargo",
    ] {
        f.mkdir(&format!("home/{d}"));
    }
    for d in DIRS {
        f.mkdir(&format!("home/{d}"));
        f.write(&format!("home/{d}/secret"), "SECRET\n", 0o600);
    }
    for p in FILES {
        f.write(&format!("home/{p}"), "SECRET\n", 0o600);
    }
    for p in READABLE {
        f.write(&format!("home/{p}"), "public\n", 0o644);
    }
}

#[test]
fn default_credential_stores_are_unreadable() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            home_with_secrets(&f);
            let mut script = String::new();
            for p in FILES {
                script += &format!("cat ~/{p} 2>&1; ");
            }
            for d in DIRS {
                script += &format!("ls ~/{d} 2>&1; cat ~/{d}/secret 2>&1; ");
            }
            for p in READABLE {
                script += &format!("cat ~/{p}; ");
            }
            // The whole home: the hidden set is unreadable.
            let out = ok(&f.run_sh(api, &["--home", "readonly"], &script));
            assert!(!out.contains("SECRET"), "{who:?} {api}: {out}");
            assert_eq!(
                out.matches("Permission denied").count(),
                FILES.len() + 2 * DIRS.len(),
                "{who:?} {api}: {out}"
            );
            assert_eq!(
                out.matches("public").count(),
                READABLE.len(),
                "{who:?} {api}: {out}"
            );
            // The listed home (the default): none of it exists, but ssh's
            // settings (not the public key: nothing lists it).
            let out = stdout(&f.run_sh(api, &[], &script));
            assert!(!out.contains("SECRET"), "{who:?} {api}: {out}");
            assert_eq!(
                out.matches("No such file or directory").count(),
                FILES.len() + 2 * DIRS.len(),
                "{who:?} {api}: {out}"
            );
            assert_eq!(out.matches("public").count(), 2, "{who:?} {api}: {out}");
        }
    }
}

#[test]
fn hide_and_show() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            home_with_secrets(&f);
            f.write("home/notes.txt", "SECRET\n", 0o644);
            let notes = f.home().join("notes.txt");
            let key = f.home().join(".ssh/id_ed25519");
            let script = format!("cat {} {} 2>&1; true", notes.display(), key.display());
            let out = ok(&f.run_sh(
                api,
                &["--home", "readonly", "--hide", notes.to_str().unwrap()],
                &script,
            ));
            assert_eq!(
                out.matches("Permission denied").count(),
                2,
                "{who:?} {api}: {out}"
            );
            let out = ok(&f.run_sh(
                api,
                &["--home", "readonly", "--show", key.to_str().unwrap()],
                &script,
            ));
            assert_eq!(out.matches("SECRET").count(), 2, "{who:?} {api}: {out}");
            // The listed home shows what --show names, and nothing else.
            let out = ok(&f.run_sh(api, &["--show", key.to_str().unwrap()], &script));
            assert_eq!(out.matches("SECRET").count(), 1, "{who:?} {api}: {out}");
            assert!(out.contains("notes.txt: No such file"), "{who:?} {api}: {out}");
            let o = f
                .qwrap(&["inspect", "--show", key.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(
                ok(&o).contains("[shown: taken out with --show]"),
                "{}",
                stdout(&o)
            );
        }
    }
}

/// The other routes: a hard link or a rename made inside, /proc/PID/root
/// and /proc/PID/cwd of a host process, an fd on the home directory.
#[test]
fn no_other_route_reaches_a_hidden_key() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            home_with_secrets(&f);
            let mut holder = f
                .command("sleep")
                .arg("30")
                .current_dir(f.home().join(".ssh"))
                .stdin(Stdio::null())
                .spawn()
                .unwrap();
            let pid = holder.id();
            let script = format!(
                "ln ~/.ssh/id_ed25519 ./k 2>/dev/null && cat ./k; mv ~/.ssh ./s 2>/dev/null && cat ./s/id_ed25519; \
                 cat /proc/{pid}/root{home}/.ssh/id_ed25519 2>/dev/null; cat /proc/{pid}/cwd/id_ed25519 2>/dev/null; \
                 cat /proc/self/fd/3/.ssh/id_ed25519 2>/dev/null; echo done",
                home = f.home().display()
            );
            let home = std::fs::File::open(f.home()).unwrap();
            let mut c = f.qwrap(&["run", "--", "sh", "-c", &script]);
            c.env("QWRAP_MOUNT_API", api).stdin(Stdio::from(home));
            // SAFETY: dup2 in the child before exec, async-signal-safe.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut c, || match libc::dup2(0, 3) {
                    -1 => Err(std::io::Error::last_os_error()),
                    _ => Ok(()),
                });
            }
            let o = c.output().unwrap();
            holder.kill().ok();
            holder.wait().ok();
            let out = stdout(&o);
            assert!(out.contains("done"), "{who:?} {api}: {}", stderr(&o));
            assert!(!out.contains("SECRET"), "{who:?} {api}: {out}");
            assert!(f.home().join(".ssh/id_ed25519").exists());
        }
    }
}

#[test]
fn secret_variables_are_removed_unless_kept() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let run = |extra: &[&str]| {
            let o = f
                .qwrap(&["run"])
                .args(extra)
                .args(["--", "sh", "-c", "echo \"${GITHUB_TOKEN-gone} ${OPENAI_API_KEY-gone} ${AWS_SECRET_ACCESS_KEY-gone} ${LANG_X-gone}\""])
                .env("GITHUB_TOKEN", "ghp")
                .env("OPENAI_API_KEY", "sk")
                .env("AWS_SECRET_ACCESS_KEY", "aws")
                .env("LANG_X", "kept")
                .output()
                .unwrap();
            ok(&o).trim().to_string()
        };
        assert_eq!(run(&[]), "gone gone gone kept", "{who:?}");
        assert_eq!(
            run(&["--keep-env", "OPENAI_API_KEY"]),
            "gone sk gone kept",
            "{who:?}"
        );
        assert_eq!(run(&["--keep-env", "*"]), "ghp sk aws kept", "{who:?}");
        // Qwen Code re-executes itself inside and needs its key.
        assert_eq!(run(&["--profile", "qwen"]), "ghp sk aws kept", "{who:?}");
        // inspect names them, never their values.
        let o = f
            .qwrap(&["inspect"])
            .env("GITHUB_TOKEN", "ghp-value")
            .output()
            .unwrap();
        let text = ok(&o);
        assert!(text.contains("Removed variables: GITHUB_TOKEN"), "{text}");
        assert!(!text.contains("ghp-value"), "{text}");
    }
}

/// `--view minimal`: only the system directories, the roots, the exposed
/// paths, /dev, /proc, /sys and /tmp exist; everyday tools still run.
#[test]
fn minimal_view() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            home_with_secrets(&f);
            f.write("home/tool.conf", "exposed\n", 0o644);
            f.write("outside.txt", "host data\n", 0o644);
            let o = f
                .command("sh")
                .args([
                    "-c",
                    "git init -q && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m a",
                ])
                .output()
                .unwrap();
            ok(&o);
            let script = format!(
                "ls /; echo ---; ls -A {home}; echo ---; ls -A {base}; echo ---; \
                 cat {home}/tool.conf; test -e {base}/outside.txt || echo outside-absent; \
                 test -e /root || echo root-absent; touch /x 2>&1 | grep -c 'Read-only'; \
                 python3 -c 'print(6*7)'; ls /usr/bin/env >/dev/null && echo dyn-ok; \
                 echo y > f && git add f && git -c user.name=t -c user.email=t@t commit -qm c && echo committed",
                home = f.home().display(),
                base = f.path().display(),
            );
            let o = f
                .qwrap(&["run", "--view", "minimal", "--expose"])
                .arg(f.home().join("tool.conf"))
                .args(["--", "sh", "-c", &script])
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            let out = ok(&o);
            let parts: Vec<&str> = out.split("---\n").collect();
            let top: Vec<&str> = parts[0].lines().collect();
            for must in ["dev", "etc", "proc", "sys", "tmp", "usr", "var"] {
                assert!(top.contains(&must), "{who:?} {api}: / lacks {must}: {top:?}");
            }
            for never in ["home", "root", "srv", "mnt", "media", "boot"] {
                assert!(!top.contains(&never), "{who:?} {api}: / shows {never}: {top:?}");
            }
            // The home directory holds only what is exposed and the cache.
            assert_eq!(parts[1].trim(), ".cache\ntool.conf", "{who:?} {api}");
            // The fixture's base holds only the home and the workspace.
            assert_eq!(
                parts[2].lines().collect::<Vec<_>>(),
                ["home", "ws"],
                "{who:?} {api}"
            );
            for want in [
                "exposed",
                "outside-absent",
                "root-absent",
                "1\n",
                "42",
                "dyn-ok",
                "committed",
            ] {
                assert!(
                    parts[3].contains(want),
                    "{who:?} {api}: {want} missing: {}",
                    parts[3]
                );
            }
        }
    }
}

/// `bash -ic` inside reads ~/.bashrc: its credential assignments are gone
/// (the file sourced from it too), the rest works, `--show` shows the
/// original, and inspect names what was removed.
#[test]
fn shell_startup_files_lose_their_credentials() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.write(
            "home/.bashrc",
            "export OPENAI_API_KEY=sk-0123456789abcdefghijklmnop\nalias qwll='echo aliased'\nsource ~/.env-secrets\n",
            0o644,
        );
        f.write(
            "home/.env-secrets",
            "export DATABASE_URL=postgres://app:hunter2@db/app\n",
            0o600,
        );
        let script = "echo \"key=$OPENAI_API_KEY db=$DATABASE_URL\"; qwll; grep -c hunter2 ~/.env-secrets";
        for api in APIS {
            let o = f
                .qwrap(&["run", "--", "bash", "-ic", script])
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            let out = stdout(&o);
            assert!(
                out.contains("key= db=\naliased\n0\n"),
                "{who:?} {api}: {out}{}",
                stderr(&o)
            );
        }
        let bashrc = f.home().join(".bashrc");
        let o = f
            .qwrap(&["run", "--show"])
            .arg(&bashrc)
            .args(["--", "bash", "-ic", "echo key=$OPENAI_API_KEY"])
            .output()
            .unwrap();
        assert!(
            stdout(&o).contains("key=sk-0123456789abcdefghijklmnop"),
            "{who:?}: {}",
            stdout(&o)
        );
        let text = ok(&f.qwrap(&["inspect"]).output().unwrap());
        assert!(text.contains(": OPENAI_API_KEY  [--show"), "{who:?}: {text}");
        assert!(text.contains(": DATABASE_URL  [--show"), "{who:?}: {text}");
        assert!(!text.contains("hunter2") && !text.contains("sk-0123"), "{who:?}");
    }
}

/// A command that dies of a signal under `--pid private`: qwrap, outside,
/// dies of it too, and must leave no core of its own (it holds the caller's
/// environment) where the next sandbox reads it.
#[test]
fn no_core_of_qwrap_holds_the_callers_environment() {
    if std::fs::read_to_string("/proc/sys/kernel/core_pattern").is_ok_and(|p| p.starts_with('|')) {
        println!("SKIP: cores go to a program here, not to a file in the workspace");
        return;
    }
    for who in Who::all() {
        let f = Fixture::new(who);
        let script = format!(
            "ulimit -c unlimited; exec {} run --pid private -- sh -c 'kill -SEGV $$'",
            qwrap().display()
        );
        let o = f
            .command("sh")
            .args(["-c", &script])
            .env("OPENAI_API_KEY", "sk-canary0123456789abcdefghijkl")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), None, "{who:?}: {}", stderr(&o));
        for e in std::fs::read_dir(f.ws()).unwrap().flatten() {
            let data = std::fs::read(e.path()).unwrap_or_default();
            let found = data.windows(9).any(|w| w == b"sk-canary");
            assert!(!found, "{who:?}: {} holds the caller's key", e.path().display());
        }
    }
}

/// A dotfiles checkout as the workspace, the home's start-up files a link
/// (`~/.bashrc -> dotfiles/bashrc`) or a second name (a hard link) of a
/// file in it, ssh's config likewise, and `~/.bashrc.d` a link to a
/// directory in it (sourced by a glob): the command wrote the user's
/// next shell. Each is read-only inside, in both isolation modes; the
/// host's files keep their text.
#[test]
fn start_up_files_linked_into_the_workspace_are_read_only() {
    for (who, landlock) in Who::all().into_iter().flat_map(|w| [(w, false), (w, true)]) {
        let f = Fixture::new(who);
        f.mkdir("ws/dot");
        f.mkdir("home/.ssh");
        f.write("ws/dot/bashrc", "echo hi\n", 0o644);
        f.write("ws/dot/profile", "echo hi\n", 0o644);
        // ssh follows its `Include`s: a glob over a directory, a file not
        // made yet.
        let ws = f.ws().display().to_string();
        let ssh = format!("Host x\n  Include \"{ws}/dot/ssh.d/*.conf\" {ws}/dot/later.conf\n");
        f.write("ws/dot/ssh_config", &ssh, 0o644);
        f.mkdir("ws/dot/ssh.d");
        f.write("ws/dot/ssh.d/a.conf", "Host y\n", 0o644);
        f.mkdir("ws/dot/bashrc.d");
        f.write("ws/dot/bashrc.d/00.sh", "echo hi\n", 0o644);
        // What a start-up file takes by a glob.
        f.mkdir("ws/dot/glob.d");
        let zsh = format!("for f in {ws}/dot/glob.d/*.sh; do . \"$f\"; done\n");
        // A directory sourced through a variable, a program git's config
        // names, a link deeper in the home, a link leading nowhere yet.
        let zsh = format!("{zsh}DOT={ws}/dot; for f in \"$DOT\"/bash.d/*.sh; do . \"$f\"; done\n");
        f.write("home/.zshrc", &zsh, 0o644);
        f.write(
            "home/.gitconfig",
            &format!("[core]\n\tfsmonitor = {ws}/dot/fsmon\n"),
            0o644,
        );
        let link = format!(
            "ln -s '{ws}/dot/bashrc' '{h}/.bashrc' && ln '{ws}/dot/profile' '{h}/.profile' && ln -s '{ws}/dot/ssh_config' '{h}/.ssh/config' && ln -s '{ws}/dot/bashrc.d' '{h}/.bashrc.d'",
            ws = f.ws().display(),
            h = f.home().display()
        );
        ok(&f.command("sh").args(["-c", &link]).output().unwrap());
        let script = "for x in bashrc profile ssh_config bashrc.d/00.sh ssh.d/a.conf ssh.d/b.conf later.conf glob.d/new.sh; do echo 'touch /tmp/pwned' >> dot/$x; done; echo done";
        let o = if landlock {
            run_landlock(&f, &[], script)
        } else {
            f.run_sh("new", &[], script)
        };
        let what = format!("{who:?} landlock={landlock}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        for x in [
            "bashrc",
            "profile",
            "ssh_config",
            "bashrc.d/00.sh",
            "ssh.d/a.conf",
        ] {
            let text = std::fs::read_to_string(f.ws().join("dot").join(x)).unwrap();
            assert!(!text.contains("pwned"), "{what}: {x} written: {text}");
        }
        for x in ["ssh.d/b.conf", "later.conf", "glob.d/new.sh"] {
            assert!(!f.ws().join("dot").join(x).exists(), "{what}: {x} made");
        }
    }
}

/// A dotfiles checkout as the workspace, read by host tools however the
/// home names it: start-up files sourcing by other spellings (`builtin
/// source`, `\.`, quotes, `<(cat F)`) or putting one of its directories on
/// `PATH`, links in `~/.config` and `~/.local` (GNU stow's layout), and
/// Mercurial's user config with what it `%include`s (`~` and `$HOME`
/// expanded). Each is read-only inside, in both isolation modes.
#[test]
fn what_the_home_names_in_a_dotfiles_workspace_is_read_only() {
    for (who, landlock) in Who::all().into_iter().flat_map(|w| [(w, false), (w, true)]) {
        let f = Fixture::new(who);
        for d in [
            "ws/dot/sh",
            "ws/dot/bin",
            "ws/dot/direnv",
            "ws/dot/hg",
            "ws/dot/bash.d",
            "home/.config",
            "home/.local",
            "home/.local/bin",
            "home/.vim",
            "home/.vim/plugin",
        ] {
            f.mkdir(d);
        }
        let files = [
            "sh/s6",
            "sh/s21",
            "sh/s9",
            "sh/s23",
            "direnv/direnvrc",
            "hg/a.rc",
            "hg/b.rc",
            "tool",
            "bash.d/a.sh",
            "fsmon",
            "plug.vim",
        ];
        for x in files {
            f.write(&format!("ws/dot/{x}"), "true\n", 0o644);
        }
        let ws = f.ws().display().to_string();
        let zsh = format!(
            "builtin source {ws}/dot/sh/s6\n\\. \"{ws}/dot/sh/s21\"\nsource <(cat {ws}/dot/sh/s9)\ncommand . -- {ws}/\"dot/sh/s23\"\nexport PATH={ws}/dot/bin:$PATH\n"
        );
        // A directory sourced through a variable, a program git's config
        // names, a link deeper in the home, a link leading nowhere yet.
        let zsh = format!("{zsh}DOT={ws}/dot; for f in \"$DOT\"/bash.d/*.sh; do . \"$f\"; done\n");
        f.write("home/.zshrc", &zsh, 0o644);
        f.write(
            "home/.gitconfig",
            &format!("[core]\n\tfsmonitor = {ws}/dot/fsmon\n"),
            0o644,
        );
        f.write(
            "home/.hgrc",
            "%include ~/../ws/dot/hg/a.rc\n%include $HOME/../ws/dot/hg/b.rc\n",
            0o644,
        );
        let link = format!(
            "ln -s '{ws}/dot/direnv' '{h}/.config/direnv' && ln -s '{ws}/dot/tool' '{h}/.local/bin/tool' && ln -s '{ws}/dot/plug.vim' '{h}/.vim/plugin/x.vim' && ln -s '{ws}/dot/bash_login' '{h}/.bash_login'",
            h = f.home().display()
        );
        ok(&f.command("sh").args(["-c", &link]).output().unwrap());
        // The environment's config directory within the workspace.
        f.mkdir("ws/dot/xdg");
        f.mkdir("ws/dot/xdg/tmux");
        f.write("ws/dot/xdg/tmux/tmux.conf", "true\n", 0o644);
        let script = "for x in sh/s6 sh/s21 sh/s9 sh/s23 direnv/direnvrc hg/a.rc hg/b.rc tool bin/ls bash.d/a.sh bash.d/new.sh fsmon plug.vim bash_login xdg/tmux/tmux.conf xdg/new.conf; do echo 'touch /tmp/pwned' >> dot/$x; done; echo done";
        let mut c = match landlock {
            true => f.qwrap(&["run", "--isolation", "landlock"]),
            false => f.qwrap(&["run"]),
        };
        c.env("XDG_CONFIG_HOME", f.ws().join("dot/xdg"))
            .env("QWRAP_MOUNT_API", "new")
            .env_remove("QWRAP_PID")
            .args(["--", "sh", "-c", script]);
        let o = c.output().unwrap();
        let what = format!("{who:?} landlock={landlock}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        for x in files {
            let text = std::fs::read_to_string(f.ws().join("dot").join(x)).unwrap();
            assert!(!text.contains("pwned"), "{what}: {x} written: {text}");
        }
        let text = std::fs::read_to_string(f.ws().join("dot/xdg/tmux/tmux.conf")).unwrap();
        assert!(!text.contains("pwned"), "{what}: the config directory written");
        for made in ["bin/ls", "bash.d/new.sh", "bash_login", "xdg/new.conf"] {
            assert!(!f.ws().join("dot").join(made).exists(), "{what}: {made} made");
        }
    }
}
