//! The listed home (the default): a realistic developer home of more than a
//! hundred credential files, each holding a canary, reads none of them
//! inside, in every mode, as root and unprivileged; files the host replaces
//! during the run stay out; tools that keep their settings in the home
//! still find them.

mod common;

use common::*;
use std::path::Path;

/// Credential files of a developer's home, by the tools that write them.
const CREDENTIALS: &[&str] = &[
    ".ssh/id_rsa",
    ".ssh/id_ed25519",
    ".ssh/work.pem",
    ".ssh/deploy_key",
    "keys/id_rsa",
    ".gnupg/private-keys-v1.d/k.key",
    ".gnupg/secring.gpg",
    ".git-credentials",
    ".config/git/credentials",
    ".netrc",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".nuget/NuGet/NuGet.Config",
    ".config/composer/auth.json",
    ".composer/auth.json",
    ".bundle/config",
    ".config/pypoetry/auth.toml",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".docker/config.json",
    ".docker/key.pem",
    ".config/containers/auth.json",
    ".kube/config",
    ".kube/prod.yaml",
    ".minikube/profiles/minikube/client.key",
    ".config/hub",
    ".config/glab-cli/config.yml",
    ".config/gh/hosts.yml",
    ".config/gh-work/hosts.yml",
    ".aws/credentials",
    ".aws/config",
    ".aws/cli/cache/sts.json",
    ".aws/sso/cache/token.json",
    ".config/gcloud/credentials.db",
    ".config/gcloud/application_default_credentials.json",
    ".azure/msal_token_cache.json",
    ".oci/config",
    ".oci/oci_api_key.pem",
    ".config/doctl/config.yaml",
    ".config/hcloud/cli.toml",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".pulumi/credentials.json",
    ".password-store/email.gpg",
    ".local/share/keyrings/login.keyring",
    ".config/op/config",
    ".config/Bitwarden CLI/data.json",
    ".claude/.credentials.json",
    ".claude.json",
    ".codex/auth.json",
    ".qwen/oauth_creds.json",
    ".gemini/oauth_creds.json",
    ".config/github-copilot/hosts.json",
    ".aider.conf.yml",
    ".cache/huggingface/token",
    ".huggingface/token",
    ".kaggle/kaggle.json",
    ".databrickscfg",
    ".snowsql/config",
    ".config/configstore/firebase-tools.json",
    ".local/share/com.vercel.cli/auth.json",
    ".config/stripe/config.toml",
    ".cloudflared/cert.pem",
    ".config/ngrok/ngrok.yml",
    ".ngrok2/ngrok.yml",
    ".fly/config.yml",
    ".env",
    ".env.local",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".lesshst",
    ".pgpass",
    ".my.cnf",
    ".config/rclone/rclone.conf",
    ".s3cfg",
    ".boto",
    ".wgetrc",
    ".curlrc",
    ".mozilla/firefox/p/logins.json",
    ".mozilla/firefox/p/cookies.sqlite",
    ".config/google-chrome/Default/Login Data",
    ".config/google-chrome/Default/Cookies",
    ".config/chromium/Default/Cookies",
    ".config/BraveSoftware/Brave-Browser/Default/Cookies",
    ".thunderbird/p/logins.json",
    ".credentials.bak",
    ".aws/credentials.bak",
    "Documents/passwords.kdbx",
    ".config/fish/fish_variables",
    ".config/environment.d/secrets.conf",
    ".pam_environment",
    // Stores moved by variables (set below).
    "cfg/gh/hosts.yml",
    "gpg-home/private-keys-v1.d/k.key",
    "cargo-home/credentials.toml",
    "docker-cfg/config.json",
    "kubeconfigs/dev.yaml",
    "aws-creds",
    "pass-store/bank.gpg",
    "gh-cfg/hosts.yml",
    "gcloud-cfg/credentials.db",
    "azure-cfg/msal_token_cache.json",
    "codex-home/auth.json",
    "claude-cfg/.credentials.json",
    "hf-home/token",
    "netrc-file",
];

/// What a tool reads that holds no credential: shown.
const SETTINGS: &[&str] = &[
    ".gitconfig",
    ".ssh/known_hosts",
    ".ssh/config",
    ".vimrc",
    ".inputrc",
];

/// The variables that move stores elsewhere in the home.
fn moved(home: &Path) -> Vec<(&'static str, String)> {
    let h = |p: &str| home.join(p).display().to_string();
    vec![
        ("XDG_CONFIG_HOME", h("cfg")),
        ("GNUPGHOME", h("gpg-home")),
        ("CARGO_HOME", h("cargo-home")),
        ("DOCKER_CONFIG", h("docker-cfg")),
        ("KUBECONFIG", h("kubeconfigs/dev.yaml")),
        ("AWS_SHARED_CREDENTIALS_FILE", h("aws-creds")),
        ("PASSWORD_STORE_DIR", h("pass-store")),
        ("GH_CONFIG_DIR", h("gh-cfg")),
        ("CLOUDSDK_CONFIG", h("gcloud-cfg")),
        ("AZURE_CONFIG_DIR", h("azure-cfg")),
        ("CODEX_HOME", h("codex-home")),
        ("CLAUDE_CONFIG_DIR", h("claude-cfg")),
        ("HF_HOME", h("hf-home")),
        ("NETRC", h("netrc-file")),
    ]
}

fn plant(f: &Fixture) {
    for (n, p) in CREDENTIALS.iter().enumerate() {
        if let Some(dir) = Path::new(p).parent().filter(|d| !d.as_os_str().is_empty()) {
            let mut acc = String::from("home");
            for c in dir.components() {
                acc.push('/');
                acc.push_str(&c.as_os_str().to_string_lossy());
                f.mkdir(&acc);
            }
        }
        f.write(&format!("home/{p}"), &format!("CANARY-{n}\n"), 0o600);
    }
    for s in SETTINGS {
        f.write(&format!("home/{s}"), "setting\n", 0o644);
    }
}

/// Every canary the command can find: a recursive grep of the home and a
/// read of each file by name.
fn hunt(f: &Fixture) -> String {
    let mut s = String::from("grep -rah CANARY ~ 2>/dev/null; ");
    for p in CREDENTIALS {
        s += &format!("cat \"$HOME/{p}\" 2>/dev/null; ");
    }
    s += "for v in ";
    for (v, _) in moved(&f.home()) {
        s += &format!("\"${v}\" ");
    }
    s += "; do cat \"$v\" 2>/dev/null; grep -rah CANARY \"$v\" 2>/dev/null; done; true";
    s
}

const MODES: &[&[&str]] = &[
    &[],
    &["--home", "readonly"],
    &["--home", "overlay"],
    &["--landlock", "off"],
    &["--pid", "private"],
    &["--network", "closed"],
    &["--isolation", "landlock"],
];

#[test]
fn a_home_of_credentials_reads_none_in_every_mode() {
    assert!(CREDENTIALS.len() >= 100, "{}", CREDENTIALS.len());
    for who in Who::all() {
        let f = Fixture::new(who);
        plant(&f);
        let script = hunt(&f);
        for opts in MODES {
            let mut c = f.qwrap(&["run"]);
            c.args(*opts).args(["--", "sh", "-c", &script]);
            c.envs(moved(&f.home()));
            let o = c.output().unwrap();
            let out = ok(&o);
            let mut read: std::collections::BTreeSet<&str> =
                out.lines().filter(|l| l.starts_with("CANARY")).collect();
            // The whole home hides the classes its list names: not a key
            // or a second gh config in a place of the user's own choosing.
            if opts.contains(&"--home") {
                for unlisted in [
                    "keys/id_rsa",
                    ".config/gh-work/hosts.yml",
                    "Documents/passwords.kdbx",
                ] {
                    let n = CREDENTIALS.iter().position(|p| *p == unlisted).unwrap();
                    read.remove(format!("CANARY-{n}").as_str());
                }
            }
            assert!(
                read.is_empty(),
                "{who:?} {opts:?}: read {} credential files: {read:?}",
                read.len()
            );
        }
        // The control: the same hunt outside finds every one.
        let mut c = f.command("sh");
        c.args(["-c", &script]).envs(moved(&f.home()));
        let out = ok(&c.output().unwrap());
        let read: std::collections::BTreeSet<&str> =
            out.lines().filter(|l| l.starts_with("CANARY")).collect();
        assert_eq!(read.len(), CREDENTIALS.len(), "{who:?}: the control");
    }
}

#[test]
fn settings_stay_readable_and_the_home_read_only() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            plant(&f);
            let script = "cat ~/.gitconfig ~/.ssh/known_hosts ~/.ssh/config ~/.vimrc ~/.inputrc; \
                          touch ~/new 2>&1; mkdir ~/.aws/x 2>&1; true";
            let out = ok(&f.run_sh(api, &[], script));
            assert_eq!(
                out.matches("setting").count(),
                SETTINGS.len(),
                "{who:?} {api}: {out}"
            );
            assert!(
                out.contains("touch: cannot touch") && out.contains("Read-only file system"),
                "{who:?} {api}: {out}"
            );
            assert!(out.contains("No such file or directory"), "{who:?} {api}: {out}");
            assert!(!f.home().join("new").exists());
            // --expose shows a path, read-only.
            let exposed = f.home().join("Documents");
            let out = ok(&f.run_sh(
                api,
                &["--expose", exposed.to_str().unwrap()],
                "cat ~/Documents/passwords.kdbx; touch ~/Documents/new 2>&1; true",
            ));
            assert!(out.starts_with("CANARY-"), "{who:?} {api}: {out}");
            assert!(out.contains("Read-only file system"), "{who:?} {api}: {out}");
        }
    }
}

/// A credential file the host writes or replaces (by rename, as git's
/// credential store and editors do) while the command runs stays out.
#[test]
fn files_the_host_replaces_during_the_run_stay_out() {
    for who in Who::all() {
        // The whole home shows a new name, and its hidden set is a mount
        // on the file that the rename detaches: residuals docs/security.md
        // names.
        for opts in MODES.iter().filter(|o| !o.contains(&"--home")) {
            let f = Fixture::new(who);
            plant(&f);
            let script = "sleep 1; cat ~/.git-credentials ~/.aws/credentials ~/.new-token 2>/dev/null; true";
            let mut c = f.qwrap(&["run"]);
            c.args(*opts)
                .args(["--", "sh", "-c", script])
                .stdout(std::process::Stdio::piped());
            let child = c.spawn().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(400));
            for (p, tmp) in [
                (".git-credentials", ".git-credentials.tmp"),
                (".aws/credentials", ".aws/credentials.tmp"),
                (".new-token", ".new-token.tmp"),
            ] {
                f.write(&format!("home/{tmp}"), "CANARY-replaced\n", 0o600);
                std::fs::rename(f.home().join(tmp), f.home().join(p)).unwrap();
            }
            let out = ok(&child.wait_with_output().unwrap());
            assert!(!out.contains("CANARY"), "{who:?} {opts:?}: {out}");
        }
    }
}

/// Other users' homes under /home are absent; the caller's own is there.
#[test]
fn other_users_homes_are_absent() {
    let other = Path::new("/home/qwrap-test-other");
    if !rustix::process::geteuid().is_root() || !Path::new("/home").is_dir() {
        println!("SKIP: planting a home under /home needs root");
        return;
    }
    std::fs::create_dir_all(other).unwrap();
    std::fs::write(other.join("secret"), "CANARY-other\n").unwrap();
    for who in Who::all() {
        let f = Fixture::new(who);
        let out = ok(&f.run_sh(
            "new",
            &[],
            "ls /home; cat /home/qwrap-test-other/secret 2>&1; true",
        ));
        assert!(!out.contains("CANARY"), "{who:?}: {out}");
        assert!(!out.contains("qwrap-test-other\n"), "{who:?}: {out}");
        let out = ok(&f.run_sh(
            "new",
            &["--home", "readonly"],
            "cat /home/qwrap-test-other/secret; true",
        ));
        assert!(out.contains("CANARY-other"), "{who:?}: the control: {out}");
    }
    std::fs::remove_dir_all(other).unwrap();
}

/// verify plants a canary in the home under a name nothing lists and
/// proves from inside that it cannot be read; it leaves nothing behind.
#[test]
fn verify_proves_an_unlisted_file_unreadable() {
    for who in Who::all() {
        for iso in ["namespaces", "landlock"] {
            let f = Fixture::new(who);
            plant(&f);
            let before = listing(&f.home());
            let out = ok(&f.qwrap(&["verify", "--isolation", iso]).output().unwrap());
            for line in [
                "PASS an unlisted file of the home",
                "PASS a home file the host replaces during the run cannot be read",
                "SKIP the home's files cannot be read through a second path to the home: no host mount",
            ] {
                assert!(out.contains(line), "{who:?} {iso}: {line}: {out}");
            }
            assert_eq!(listing(&f.home()), before, "{who:?} {iso}");
        }
        // The whole home: the overlay's mask holds against the rename; the
        // read-only view's does not, and verify says that row is given up
        // (it did read the file).
        let f = Fixture::new(who);
        let out = ok(&f.qwrap(&["verify", "--home", "overlay"]).output().unwrap());
        assert!(
            out.contains("PASS a home file the host replaces during the run cannot be read"),
            "{who:?} overlay: {out}"
        );
        let out = ok(&f.qwrap(&["verify", "--home", "readonly"]).output().unwrap());
        assert!(
            out.contains("N/A  a home file the host replaces during the run cannot be read: not provided by this mode: --home readonly")
                && out.contains("-replaced was read)"),
            "{who:?} readonly: {out}"
        );
    }
}

/// A host mount shows the home at a second path (a bind mount of it
/// elsewhere, and one of a directory in it): the credential files are not
/// read there, in any mode.
#[test]
fn a_second_path_to_the_home_shows_nothing() {
    if !rustix::process::geteuid().is_root() {
        println!("SKIP: a bind mount on the host needs root");
        return;
    }
    struct Unmount(Vec<std::path::PathBuf>);
    impl Drop for Unmount {
        fn drop(&mut self) {
            for p in self.0.iter().rev() {
                let _ = std::process::Command::new("umount").arg("-l").arg(p).status();
            }
        }
    }
    for who in Who::all() {
        let f = Fixture::new(who);
        plant(&f);
        let mirror = f.mkdir("mirror");
        let aws = f.mkdir("aws-elsewhere");
        let mut held = Unmount(Vec::new());
        for (src, dst) in [(f.home(), &mirror), (f.home().join(".aws"), &aws)] {
            let st = std::process::Command::new("mount")
                .arg("--bind")
                .arg(&src)
                .arg(dst)
                .status()
                .unwrap();
            assert!(st.success());
            held.0.push(dst.clone());
        }
        let script = format!(
            "grep -rah CANARY {m} {a} 2>/dev/null; cat {m}/.aws/credentials {a}/credentials 2>/dev/null; true",
            m = mirror.display(),
            a = aws.display()
        );
        // The control: the host sees the canaries there.
        let control = f.command("sh").args(["-c", &script]).output().unwrap();
        assert!(stdout(&control).contains("CANARY"), "{who:?}: the control");
        for opts in MODES {
            let mut c = f.qwrap(&["run"]);
            c.args(*opts).args(["--", "sh", "-c", &script]);
            let out = ok(&c.output().unwrap());
            assert!(
                !out.contains("CANARY"),
                "{who:?} {opts:?}: read through a second path:\n{out}"
            );
        }
        // verify proves it too, through each of the two.
        for opts in [&[][..], &["--home", "readonly"], &["--isolation", "landlock"]] {
            let out = ok(&f.qwrap(&["verify"]).args(opts).output().unwrap());
            let line = out
                .lines()
                .find(|l| l.contains("through a second path to the home"))
                .unwrap_or_default();
            assert!(
                line.starts_with("PASS")
                    && line.contains(&format!("{}/.qwrap-verify-", mirror.display()))
                    && !line.contains(&aws.display().to_string()),
                "{who:?} {opts:?}: {out}"
            );
        }
    }
}

/// HOME names another directory than the account's (an agent harness's
/// own): the account's home is not shown either.
#[test]
fn the_accounts_home_stays_out_when_home_names_another() {
    if !rustix::process::geteuid().is_root() {
        println!("SKIP: planting in the account's home needs root's");
        return;
    }
    let canary = Path::new("/root/.qwrap-test-account-canary");
    std::fs::write(canary, "CANARY-account\n").unwrap();
    let f = Fixture::new(Who::Root);
    let o = f.run_sh("new", &[], "cat /root/.qwrap-test-account-canary 2>&1; true");
    std::fs::remove_file(canary).unwrap();
    let out = ok(&o);
    assert!(!out.contains("CANARY"), "{out}");
}

/// A credential file with a second name (a hard link outside the home)
/// is readable through that name in the host view: inspect names it and
/// verify says the row is not provided; without one, verify passes it.
#[test]
fn a_hard_linked_credential_file_is_named() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("home/.ssh");
        let key = f.write("home/.ssh/id_ed25519", "CANARY-key\n", 0o600);
        let out = ok(&f.qwrap(&["verify"]).output().unwrap());
        assert!(
            out.contains("PASS the home's credential files have no other name"),
            "{who:?}: {out}"
        );
        let copy = f.path().join("ws-sibling-key");
        std::fs::hard_link(&key, &copy).unwrap();
        // The attack it names: the other name is read inside.
        let inside = ok(&f.run_sh("new", &[], &format!("cat '{}'", copy.display())));
        assert!(inside.contains("CANARY-key"), "{who:?}: the control: {inside}");
        let out = ok(&f.qwrap(&["inspect"]).output().unwrap());
        assert!(
            out.contains(&format!("  {}  [1 other name(s)", key.display())),
            "{who:?}: {out}"
        );
        let out = ok(&f.qwrap(&["verify"]).output().unwrap());
        assert!(
            out.contains(&format!(
                "N/A  the home's credential files have no other name (a hard link): not provided by this mode: {} (1 other)",
                key.display()
            )),
            "{who:?}: {out}"
        );
    }
}
