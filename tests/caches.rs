//! Caches outside the workspace: writable inside, and nothing written there
//! reaches the host. Each test looks at the host's files afterwards, as
//! root and as an unprivileged uid, on both mount APIs.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Every file under `dir` with its content and mode, to compare before and
/// after a sandbox ran.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let mode = meta.permissions().mode();
            if meta.is_dir() {
                stack.push(p.clone());
                out.insert(p, (Vec::new(), mode));
            } else {
                out.insert(p.clone(), (std::fs::read(&p).unwrap_or_default(), mode));
            }
        }
    }
    out
}

/// A home whose caches already hold what a host build trusts: a crate's
/// source, a wheel in pip's cache, npm's cache index.
fn planted_caches(f: &Fixture) -> Vec<PathBuf> {
    for d in [
        "home/.cargo",
        "home/.cargo/registry",
        "home/.cargo/registry/src",
        "home/.cargo/registry/src/index",
        "home/.cargo/registry/src/index/dep-1.0.0",
        "home/.cache",
        "home/.cache/pip",
        "home/.npm",
        "home/.npm/_cacache",
    ] {
        f.mkdir(d);
    }
    vec![
        f.write(
            "home/.cargo/registry/src/index/dep-1.0.0/build.rs",
            "fn main() {}\n",
            0o644,
        ),
        f.write("home/.cache/pip/six.whl", "wheel\n", 0o644),
        f.write("home/.npm/_cacache/index", "index\n", 0o644),
    ]
}

#[test]
fn a_sandbox_cannot_poison_the_hosts_caches() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            f.write("ws/Cargo.toml", "[package]\nname = \"t\"\n", 0o644);
            f.write("ws/package.json", "{}\n", 0o644);
            let files = planted_caches(&f);
            let home = f.home();
            let before = snapshot(&home);
            let script = "for f in ~/.cargo/registry/src/index/dep-1.0.0/build.rs ~/.cache/pip/six.whl ~/.npm/_cacache/index; do \
                 echo 'std::process::Command::new(\"evil\")' > $f || exit 1; chmod 755 $f || exit 1; done; \
                 mkdir ~/.cache/new && echo x > ~/.cache/new/f && touch ~/.npm/_logs && \
                 rm ~/.cargo/registry/src/index/dep-1.0.0/build.rs && echo evil > ~/.cargo/registry/src/index/dep-1.0.0/build.rs && \
                 cat ~/.cache/pip/six.whl";
            let out = ok(&f.run_sh(api, &[], script));
            assert!(
                out.contains("Command::new"),
                "{who:?} {api}: the write is seen inside: {out}"
            );
            let after = snapshot(&home);
            // Only the layer set under ~/.local/state and the missing
            // cache directories (empty) are new on the host.
            let changed: Vec<&PathBuf> = after
                .iter()
                .filter(|(p, v)| !p.starts_with(home.join(".local")) && before.get(*p) != Some(v))
                .filter(|(p, _)| !(!before.contains_key(*p) && p.is_dir() && listing(p).is_empty()))
                .map(|(p, _)| p)
                .collect();
            assert!(
                changed.is_empty(),
                "{who:?} {api}: host caches changed: {changed:?}"
            );
            for p in &files {
                assert!(!std::fs::read_to_string(p).unwrap().contains("evil"));
            }
            // The next sandbox of the workspace finds its own writes again.
            let out = ok(&f.run_sh(api, &[], "cat ~/.cache/new/f ~/.cache/pip/six.whl"));
            assert!(
                out.starts_with("x\n") && out.contains("Command::new"),
                "{who:?} {api}: {out}"
            );
        }
    }
}

/// The listed home (the default): a missing cache is made in its layer and
/// mounted in the home's tmpfs; the host's home gets no new directory,
/// whatever the toolchains' profiles call for.
#[test]
fn a_missing_cache_makes_nothing_in_the_hosts_home() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            f.write("ws/Cargo.toml", "[package]\nname = \"t\"\n", 0o644);
            f.write("ws/package.json", "{}\n", 0o644);
            f.write("ws/go.mod", "module t\n", 0o644);
            let before = listing(&f.home());
            let script =
                "mkdir -p ~/.cache/tool ~/.npm/x ~/.cargo/registry/x ~/go/pkg/mod/x && echo 1 > ~/.npm/x/f";
            ok(&f.run_sh(api, &[], script));
            let out = ok(&f.run_sh(api, &[], "cat ~/.npm/x/f"));
            assert_eq!(out, "1\n", "{who:?} {api}: the layer keeps it");
            let mut after = listing(&f.home());
            after.remove(".local");
            assert_eq!(after, before, "{who:?} {api}: new in the host's home");
            assert!(!f.home().join(".npm").exists() && !f.home().join(".cache").exists());
        }
    }
}

#[test]
fn a_missing_cache_is_created_empty_and_stays_empty() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let cache = f.home().join(".cache");
            assert!(!cache.exists());
            ok(&f.run_sh(
                api,
                &["--home", "readonly"],
                "mkdir -p ~/.cache/tool && echo 1 > ~/.cache/tool/f",
            ));
            assert!(cache.is_dir());
            assert_eq!(
                std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777,
                0o700
            );
            assert!(listing(&cache).is_empty(), "{who:?} {api}: {:?}", listing(&cache));
        }
    }
}

#[test]
fn shared_writes_through_and_private_keeps_nothing() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            f.mkdir("home/.cache");
            ok(&f.run_sh(api, &["--cache", "shared"], "echo s > ~/.cache/shared"));
            assert_eq!(
                std::fs::read_to_string(f.home().join(".cache/shared")).unwrap(),
                "s\n"
            );
            // An empty tmpfs: the host's cache is not seen either.
            ok(&f.run_sh(
                api,
                &["--cache", "private"],
                "echo p > ~/.cache/private && ! cat ~/.cache/shared",
            ));
            assert!(!f.home().join(".cache/private").exists());
            let o = f.run_sh(api, &["--cache", "private"], "cat ~/.cache/private");
            assert!(
                !o.status.success(),
                "{who:?} {api}: a private cache keeps nothing"
            );
            // Nor does the overlay's layer see what the private run wrote.
            let o = f.run_sh(api, &[], "cat ~/.cache/private");
            assert!(!o.status.success());
        }
    }
    let f = Fixture::new(Who::User);
    let text = ok(&f.qwrap(&["inspect", "--cache", "shared"]).output().unwrap());
    assert!(
        text.contains("caches: off (--cache shared: 1 cache written through to the host"),
        "{text}"
    );
    assert!(text.contains("shared: written through to the host"), "{text}");
}

/// A variable or a user's setting cannot turn a cache into a way to write
/// the home directory through.
#[test]
fn shared_caches_keep_the_include_rules() {
    let f = Fixture::new(Who::User);
    f.mkdir("home/.ssh");
    let key = f.write("home/.ssh/authorized_keys", "key\n", 0o600);
    let o = f
        .qwrap(&[
            "run",
            "--cache",
            "shared",
            "--",
            "sh",
            "-c",
            "echo evil >> ~/.ssh/authorized_keys",
        ])
        .env("XDG_CACHE_HOME", f.home().join(".ssh"))
        .output()
        .unwrap();
    // Absent from the listed home, read-only in the whole one.
    let e = stderr(&o);
    assert!(
        e.contains("Read-only file system") || e.contains("nonexistent"),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&key).unwrap(), "key\n");
}

#[test]
fn concurrent_sandboxes_of_one_workspace_use_separate_layers() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let mut first = f.qwrap(&[
            "run",
            "--",
            "sh",
            "-c",
            "echo one > ~/.cache/f && touch started && sleep 3",
        ]);
        let mut first = first.spawn().unwrap();
        // The first holds slot 0 once its command runs.
        let t0 = std::time::Instant::now();
        while !f.ws().join("started").exists() && t0.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let plan = ok(&f.qwrap(&["plan", "--", "true"]).output().unwrap());
        assert!(
            plan.contains("/1/%home/upper"),
            "{who:?}: slot 1 while slot 0 is held: {plan}"
        );
        let o = f.run_sh("new", &[], "cat ~/.cache/f");
        assert!(
            !o.status.success(),
            "{who:?}: another slot's write is not seen: {}",
            stdout(&o)
        );
        assert!(first.wait().unwrap().success());
        let out = ok(&f.run_sh("new", &[], "cat ~/.cache/f"));
        assert_eq!(out, "one\n");
    }
}

#[test]
fn cache_clean_removes_the_workspaces_layers() {
    let f = Fixture::new(Who::User);
    // Read-only directories, as go's module cache leaves them.
    ok(&f.run_sh(
        "new",
        &[],
        "mkdir -p ~/.cache/m/d && echo 1 > ~/.cache/m/d/f && chmod 555 ~/.cache/m/d ~/.cache/m",
    ));
    let list = ok(&f.qwrap(&["cache", "list"]).output().unwrap());
    assert!(list.starts_with("ws-"), "{list}");
    assert!(list.contains(" 1 KiB"), "{list}");
    let said = ok(&f.qwrap(&["cache", "clean"]).output().unwrap());
    assert!(said.contains("removed"), "{said}");
    let list = ok(&f.qwrap(&["cache", "list"]).output().unwrap());
    assert!(list.starts_with("no cache layers"), "{list}");
    let o = f.run_sh("new", &[], "cat ~/.cache/m/d/f");
    assert!(!o.status.success());
}

#[test]
fn inspect_and_the_receipt_name_the_caches() {
    let f = Fixture::new(Who::User);
    f.write("ws/Cargo.toml", "[package]\nname = \"t\"\n", 0o644);
    let text = ok(&f.qwrap(&["inspect"]).output().unwrap());
    assert!(
        text.contains("profile = rust  [from detected Cargo.toml]"),
        "{text}"
    );
    assert!(
        text.contains(
            "/.cargo/registry  [cache, from profile rust; overlay (the host's is empty: its layer alone), writes kept in"
        ),
        "{text}"
    );
    // The listed home: a missing cache is made in its layer, not on the host.
    assert!(!text.contains("created empty on the host"), "{text}");
    assert!(!f.home().join(".cargo").exists());
    assert!(text.contains("caches: applied (3 overlaid"), "{text}");
    let text = ok(&f.qwrap(&["inspect", "--no-detect"]).output().unwrap());
    assert!(!text.contains(".cargo"), "{text}");
    // verify writes into each cache from inside and looks on the host.
    let text = ok(&f.qwrap(&["verify"]).output().unwrap());
    assert!(
        text.contains("PASS a write to a cache stays off the host"),
        "{text}"
    );
    assert!(listing(&f.home().join(".cache")).is_empty());
    let v: serde_json::Value =
        serde_json::from_str(&ok(&f.qwrap(&["receipt", "--json"]).output().unwrap())).unwrap();
    assert_eq!(v["cache_mode"], "overlay");
    assert!(
        v["caches"].to_string().contains(".cargo/registry: overlay"),
        "{v}"
    );
}

/// A cache whose host directory is empty gets its layer bound bare (no
/// overlay to pay for); once the host's has content it is overlaid, the
/// layer's files still there, and it stays overlaid.
#[test]
fn an_empty_cache_is_its_layer_until_the_host_fills_it() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let plan = |f: &Fixture| {
                ok(&f
                    .qwrap(&["plan", "--", "true"])
                    .env("QWRAP_MOUNT_API", api)
                    .output()
                    .unwrap())
            };
            let p = plan(&f);
            assert!(!p.contains("fsopen(\"overlay\")"), "{who:?} {api}: {p}");
            ok(&f.run_sh(api, &[], "echo layer > ~/.cache/from-layer"));
            assert!(listing(&f.home().join(".cache")).is_empty());
            f.mkdir("home/.cache");
            f.write("home/.cache/from-host", "host\n", 0o644);
            assert!(plan(&f).contains("fsopen(\"overlay\")"), "{who:?} {api}");
            let out = ok(&f.run_sh(api, &[], "cat ~/.cache/from-layer ~/.cache/from-host"));
            assert_eq!(out, "layer\nhost\n", "{who:?} {api}");
            assert_eq!(
                listing(&f.home().join(".cache")),
                ["from-host".to_string()].into()
            );
            // Overlaid once, never bare again (the layer may hold whiteouts).
            ok(&f.run_sh(api, &[], "rm ~/.cache/from-host"));
            std::fs::remove_file(f.home().join(".cache/from-host")).unwrap();
            assert!(plan(&f).contains("fsopen(\"overlay\")"), "{who:?} {api}");
            let o = f.run_sh(api, &[], "ls -A ~/.cache");
            assert_eq!(ok(&o), "from-layer\n", "{who:?} {api}");
        }
    }
}

/// Back-to-back runs share one layer, even when the first leaves a process
/// behind for its warden to kill: the slot is let go as soon as that is
/// done, and the next run waits for it a moment.
#[test]
fn back_to_back_runs_share_a_layer() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("home/.cache");
        f.write("home/.cache/held", "x\n", 0o644);
        for i in 0..5 {
            ok(&f.run_sh(
                "new",
                &[],
                &format!("echo {i} > ~/.cache/n; setsid sleep 30 </dev/null >/dev/null 2>&1 &"),
            ));
            let out = ok(&f.run_sh("new", &[], "cat ~/.cache/n"));
            assert_eq!(out, format!("{i}\n"), "{who:?} run {i}");
        }
        assert_eq!(listing(&f.home().join(".cache")), ["held".to_string()].into());
    }
}

#[test]
fn reports_leave_no_cache_layer_behind() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for cmd in ["verify", "receipt", "inspect"] {
            let o = f.qwrap(&[cmd]).output().unwrap();
            assert!(o.status.code().is_some(), "{who:?} {cmd}");
            let list = ok(&f.qwrap(&["cache", "list"]).output().unwrap());
            assert!(list.starts_with("no cache layers"), "{who:?} {cmd} left: {list}");
        }
        // A run's layer stays, and a report after it leaves it as it was.
        ok(&f.run_sh("new", &[], "mkdir -p ~/.cache/k && echo 1 > ~/.cache/k/f"));
        ok(&f.qwrap(&["verify"]).output().unwrap());
        let out = ok(&f.run_sh("new", &[], "cat ~/.cache/k/f"));
        assert_eq!(out, "1\n", "{who:?}");
    }
}
