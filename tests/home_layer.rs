//! The home's one overlay: every cache inside the home served by a single
//! overlay mount, every known tool's cache writable without its profile,
//! and `--home overlay`. Each test looks at the host's files afterwards, as
//! root and as an unprivileged uid, on both mount APIs.

mod common;

use common::*;
use std::collections::BTreeSet;

const APIS: [&str; 2] = ["new", "legacy"];

/// A home holding three tools' caches, each with a file in it, and a
/// workspace that calls for the rust and node profiles.
fn busy_home(f: &Fixture) {
    for d in ["home/.cache", "home/.cargo", "home/.cargo/registry", "home/.npm"] {
        f.mkdir(d);
    }
    f.write("home/.cache/held", "c\n", 0o644);
    f.write("home/.cargo/registry/held", "r\n", 0o644);
    f.write("home/.npm/held", "n\n", 0o644);
    f.write("ws/Cargo.toml", "[package]\nname = \"t\"\n", 0o644);
    f.write("ws/package.json", "{}\n", 0o644);
}

/// The distinct overlay filesystems mounted inside (by device number) and
/// the overlay mounts, from the sandbox's mountinfo.
const OVERLAYS: &str =
    "awk '$(NF-2) == \"overlay\" { d[$3] = 1; n++ } END { print length(d), n }' /proc/self/mountinfo";

#[test]
fn the_caches_in_the_home_share_one_overlay() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            busy_home(&f);
            let script = format!(
                "{OVERLAYS}; for c in .cache .cargo/registry .npm .cargo/git; do echo new > ~/$c/new || exit 1; done"
            );
            let out = ok(&f.run_sh(api, &[], &script));
            // One filesystem, one mount per cache (~/.cargo/git is made).
            assert_eq!(out, "1 4\n", "{who:?} {api}");
            for c in [".cache", ".cargo/registry", ".npm"] {
                assert_eq!(
                    listing(&f.home().join(c)),
                    BTreeSet::from(["held".to_string()]),
                    "{who:?} {api}: {c} on the host"
                );
            }
            assert!(listing(&f.home().join(".cargo/git")).is_empty());
            // The next run sees what this one wrote, and the host's files.
            let out = ok(&f.run_sh(api, &[], "cat ~/.cache/new ~/.npm/new ~/.npm/held"));
            assert_eq!(out, "new\nnew\nn\n", "{who:?} {api}");
            // The rest of the home stays read-only.
            let o = f.run_sh(api, &[], "echo x > ~/.profile");
            assert!(
                stderr(&o).contains("Read-only file system"),
                "{who:?} {api}: {}",
                stderr(&o)
            );
            assert!(!f.home().join(".profile").exists());
        }
    }
}

/// Before Linux 6.15 a detached mount cannot be cloned from: the overlay is
/// attached over the home for the moment the clones take, and detached
/// again. Taken here on any kernel by a test switch: the same caches, and
/// no overlay left over the home.
#[test]
fn before_linux_6_15_the_overlay_is_attached_and_detached_again() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            busy_home(&f);
            let home = f.home().display().to_string();
            let script = format!(
                "{OVERLAYS}; awk '$5 == \"{home}\" && / - overlay /' /proc/self/mountinfo; echo new > ~/.npm/new && cat ~/.cache/held ~/.npm/new"
            );
            let o = f
                .qwrap(&["run", "--", "sh", "-c", &script])
                .env("QWRAP_MOUNT_API", api)
                .env("QWRAP_TEST_NO_DETACHED_CLONE", "1")
                .output()
                .unwrap();
            assert_eq!(ok(&o), "1 4\nc\nnew\n", "{who:?} {api}");
            assert_eq!(
                listing(&f.home().join(".npm")),
                BTreeSet::from(["held".to_string()])
            );
        }
    }
}

/// npm's cache is writable where no package.json calls for the node
/// profile (`npx` in a fresh directory), because it exists on the host; it
/// stays off the host. `--no-detect` leaves it read-only, and a missing
/// tool cache is never made for a profile that does not apply.
#[test]
fn a_known_tool_cache_is_writable_without_its_profile() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("home/.npm");
        f.write("home/.npm/held", "n\n", 0o644);
        let out = ok(&f.run_sh(
            "new",
            &[],
            "mkdir -p ~/.npm/_cacache && echo x > ~/.npm/_cacache/i && cat ~/.npm/_cacache/i",
        ));
        assert_eq!(out, "x\n", "{who:?}");
        assert_eq!(
            listing(&f.home().join(".npm")),
            BTreeSet::from(["held".to_string()])
        );
        assert!(
            !f.home().join(".cargo").exists(),
            "{who:?}: a cache made for no profile"
        );
        // Absent from the listed home; read-only in the whole one.
        let o = f.run_sh("new", &["--no-detect"], "mkdir ~/.npm/other");
        assert!(
            stderr(&o).contains("No such file or directory"),
            "{who:?}: {}",
            stderr(&o)
        );
        let o = f.run_sh(
            "new",
            &["--no-detect", "--home", "readonly"],
            "mkdir ~/.npm/other",
        );
        assert!(
            stderr(&o).contains("Read-only file system"),
            "{who:?}: {}",
            stderr(&o)
        );
        let text = ok(&f.qwrap(&["inspect"]).output().unwrap());
        assert!(text.contains("/.npm  [cache, from known tool cache;"), "{text}");
    }
}

/// `--home overlay`: writes anywhere in the home land in the workspace's
/// layer and are there for the next run; the host's home is unchanged; the
/// hidden set stays unreadable; the workspace still writes through.
#[test]
fn an_overlaid_home_takes_writes_and_keeps_them_off_the_host() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            busy_home(&f);
            f.mkdir("home/.ssh");
            f.write("home/.ssh/id_ed25519", "secret\n", 0o600);
            f.write("home/.profile", "PATH=$PATH\n", 0o644);
            f.mkdir("home/.config");
            let mut before = listing(&f.home());
            // The layer set is made there on the first run.
            before.insert(".local".into());
            let script = "echo a >> ~/.profile && mkdir -p ~/.config/tool ~/.local/share/tool && \
                 echo s > ~/.config/tool/state && echo n > ~/new && echo c > ~/.cache/new && \
                 rm ~/.npm/held && echo w > ws-file && \
                 { cat ~/.ssh/id_ed25519 2>/dev/null && echo READ; true; }";
            let out = ok(&f.run_sh(api, &["--home", "overlay"], script));
            assert!(!out.contains("READ"), "{who:?} {api}: a hidden file was read");
            assert_eq!(
                listing(&f.home()),
                before,
                "{who:?} {api}: the host's home changed"
            );
            assert_eq!(
                std::fs::read_to_string(f.home().join(".profile")).unwrap(),
                "PATH=$PATH\n"
            );
            assert!(listing(&f.home().join(".config")).is_empty());
            assert!(f.home().join(".npm/held").exists(), "{who:?} {api}");
            assert_eq!(std::fs::read_to_string(f.ws().join("ws-file")).unwrap(), "w\n");
            let out = ok(&f.run_sh(
                api,
                &["--home", "overlay"],
                "cat ~/new ~/.config/tool/state ~/.cache/new; tail -1 ~/.profile; ls ~/.npm",
            ));
            assert_eq!(out, "n\ns\nc\na\n", "{who:?} {api}");
            // Without the setting the home is the host's again.
            let o = f.run_sh(api, &[], "cat ~/new");
            assert!(!o.status.success(), "{who:?} {api}");
        }
    }
}

/// The layer's own directory cannot be reached through the overlaid home
/// (overlayfs refuses a lookup into its upper layer from its lower), nor
/// another slot's layer written.
#[test]
fn the_layer_cannot_be_reached_through_the_overlaid_home() {
    for who in Who::all() {
        let f = Fixture::new(who);
        busy_home(&f);
        let script = "for d in ~/.local/state/qwrap/caches/*/0/*/upper; do echo x > \"$d/planted\" && echo WROTE $d; done; \
             mkdir -p ~/.local/state/qwrap/caches/other 2>/dev/null; true";
        let out = ok(&f.run_sh("new", &["--home", "overlay"], script));
        assert!(!out.contains("WROTE"), "{who:?}: {out}");
        let sets = f.home().join(".local/state/qwrap/caches");
        let planted = std::process::Command::new("find")
            .arg(&sets)
            .args(["-name", "planted"])
            .output()
            .unwrap();
        assert!(stdout(&planted).is_empty(), "{who:?}: {}", stdout(&planted));
        assert!(!sets.join("other").exists(), "{who:?}");
    }
}

/// A host mount beneath the home (a data disk, a FUSE mount): overlayfs
/// in a user namespace refuses a lower layer it would hide. The caches get
/// an overlay each over the same layer (what the first run wrote is still
/// there), and `--home overlay` leaves the home read-only, saying why.
#[test]
fn a_mount_beneath_the_home_keeps_caches_overlaid_and_the_home_read_only() {
    if !rustix::process::geteuid().is_root() {
        println!("SKIP: mounting on the host needs root");
        return;
    }
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            busy_home(&f);
            ok(&f.run_sh(api, &[], "echo before > ~/.cache/new"));
            let data = f.mkdir("home/data");
            let mounted = std::process::Command::new("mount")
                .args([
                    "-t",
                    "tmpfs",
                    "-o",
                    "mode=0777",
                    "qwrap-test",
                    data.to_str().unwrap(),
                ])
                .status()
                .unwrap();
            assert!(mounted.success());
            std::fs::write(data.join("f"), "on the mount\n").unwrap();
            // The listed home shows the mount where it is exposed.
            let caches = f.run_sh(
                api,
                &["--expose", data.to_str().unwrap()],
                "cat ~/.cache/new; echo after > ~/.npm/new; cat ~/data/f",
            );
            let home = f.run_sh(api, &["--home", "overlay"], "echo x > ~/new");
            let text = f.qwrap(&["inspect", "--home", "overlay"]).output().unwrap();
            let unmounted = std::process::Command::new("umount").arg(&data).status().unwrap();
            assert!(unmounted.success());
            assert_eq!(ok(&caches), "before\non the mount\n", "{who:?} {api}");
            assert_eq!(
                listing(&f.home().join(".npm")),
                BTreeSet::from(["held".to_string()])
            );
            assert!(
                stderr(&home).contains("Read-only file system"),
                "{who:?} {api}: {}",
                stderr(&home)
            );
            assert!(!f.home().join("new").exists());
            let text = stdout(&text);
            assert!(
                text.contains("home: degraded (--home overlay (from --home) cannot be had: the host has mounts beneath the home ("),
                "{text}"
            );
        }
    }
}

/// The reports: inspect shows the home layer, verify checks the home's
/// writes stay off the host, the receipt records the mode; the minimal view
/// and an overlaid home refuse each other.
#[test]
fn the_reports_name_the_overlaid_home() {
    let f = Fixture::new(Who::User);
    busy_home(&f);
    let text = ok(&f.qwrap(&["inspect", "--home", "overlay"]).output().unwrap());
    assert!(
        text.contains("  home: applied (overlay (--home overlay from --home)"),
        "{text}"
    );
    assert!(text.contains("home = overlay  [from --home]"), "{text}");
    let text = ok(&f.qwrap(&["verify", "--home", "overlay"]).output().unwrap());
    assert!(
        text.contains("PASS a write to a cache stays off the host"),
        "{text}"
    );
    assert!(text.contains("SKIP home write: --home overlay"), "{text}");
    assert_eq!(
        listing(&f.home()),
        BTreeSet::from([".cache", ".cargo", ".local", ".npm"].map(String::from)),
        "verify left a file in the host's home"
    );
    let v: serde_json::Value = serde_json::from_str(&ok(&f
        .qwrap(&["receipt", "--json", "--home", "overlay"])
        .output()
        .unwrap()))
    .unwrap();
    assert_eq!(v["home"], "overlay");
    let o = f
        .qwrap(&["run", "--home", "overlay", "--view", "minimal", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("--view minimal"), "{}", stderr(&o));
}

/// The home's overlay has the whole home as its lower layer, credentials
/// included; a cache is only a subtree of it. overlayfs's own xattrs in the
/// upper layer could lead a directory elsewhere in that lower layer (a
/// redirect to `/.ssh`) or hide its lower content (opaque): setting them
/// through the overlay is refused, and no later run sees anything of the
/// home outside the cache through it.
#[test]
fn overlay_xattrs_cannot_lead_a_cache_elsewhere_in_the_home() {
    for who in Who::all() {
        for home_mode in [&[][..], &["--home", "overlay"][..]] {
            let f = Fixture::new(who);
            busy_home(&f);
            f.mkdir("home/.ssh");
            f.write("home/.ssh/config", "Host secret-host\n", 0o600);
            let script = r#"
import os
for d in ("~/.cache/x", "~/.npm/y"):
    d = os.path.expanduser(d)
    os.makedirs(d, exist_ok=True)
    for name, value in (("user.overlay.redirect", b"/.ssh"), ("user.overlay.opaque", b"y"),
                        ("trusted.overlay.redirect", b"/.ssh"), ("user.overlay.origin", b"x")):
        try:
            os.setxattr(d, name, value)
            print("SET", name, d)
        except OSError:
            pass
"#;
            let o = f
                .command(qwrap())
                .args(["run"])
                .args(home_mode)
                .args(["--", "python3", "-c", script])
                .output()
                .unwrap();
            assert!(o.status.success(), "{who:?} {home_mode:?}: {}", stderr(&o));
            let out = ok(&f.run_sh(
                "new",
                home_mode,
                "find ~/.cache/x ~/.npm/y -mindepth 1 | wc -l; cat ~/.cache/x/config ~/.npm/y/config 2>/dev/null; true",
            ));
            assert_eq!(
                out.trim(),
                "0",
                "{who:?} {home_mode:?}: ~/.ssh seen through a cache"
            );
            assert_eq!(
                listing(&f.home().join(".cache")),
                BTreeSet::from(["held".to_string()])
            );
            // On the host, in the layer: what was set through the overlay is
            // stored escaped (`user.overlay.overlay.*`, Linux 6.7), never as
            // the overlay's own xattr.
            let upper = std::process::Command::new("find")
                .arg(f.home().join(".local/state/qwrap/caches"))
                .args(["-path", "*/upper/.cache/x"])
                .output()
                .unwrap();
            for dir in stdout(&upper).lines() {
                let names = std::process::Command::new("python3")
                    .args([
                        "-c",
                        "import os, sys; print('\\n'.join(os.listxattr(sys.argv[1])))",
                        dir,
                    ])
                    .output()
                    .unwrap();
                let names = stdout(&names);
                assert!(
                    !names
                        .lines()
                        .any(|l| l == "user.overlay.redirect" || l == "user.overlay.opaque"),
                    "{who:?} {home_mode:?}: {names}"
                );
            }
        }
    }
}
