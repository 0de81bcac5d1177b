//! Git metadata written inside cannot plant code that a later, unconfined
//! host `git` runs: the attack of each kind is tried inside, then host git
//! runs and the marker its planted hook or fsmonitor would create must not
//! appear. Everyday git keeps working inside. As root and unprivileged, on
//! both mount APIs, in a normal checkout, a linked worktree and a
//! superproject with a submodule.

mod common;

use common::*;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

const GIT: &str = "git -c user.name=t -c user.email=t@t -c protocol.file.allow=always";

/// A repository `repo` (the workspace) with one commit, a local remote
/// `remote`, a linked worktree `wt` and a submodule `lib`.
fn repos(f: &Fixture) {
    let script = format!(
        "set -e
         cd '{base}'
         {GIT} init -q -b main remote && cd remote && echo r > r && {GIT} add r && {GIT} commit -qm r && cd ..
         {GIT} init -q -b main libsrc && cd libsrc && echo l > l && {GIT} add l && {GIT} commit -qm l && cd ..
         cd ws && {GIT} init -q -b main && echo a > a && {GIT} add a && {GIT} commit -qm a
         {GIT} remote add origin ../remote
         {GIT} submodule -q add ../libsrc lib && {GIT} commit -qm sub
         {GIT} submodule -q update --init
         {GIT} worktree add -q ../wt -b side",
        base = f.path().display()
    );
    let o = f.command("sh").args(["-c", &script]).output().unwrap();
    ok(&o);
}

/// Every planting route, tried inside; errors are expected and ignored.
fn attack(marker: &Path) -> String {
    let hook = format!("#!/bin/sh\\ntouch {}\\n", marker.display());
    format!(
        "m='{m}'
         common=$(git rev-parse --git-common-dir); own=$(git rev-parse --git-dir)
         plant() {{ mkdir -p \"$1/hooks\"; for h in post-commit pre-commit post-checkout; do printf '{hook}' > \"$1/hooks/$h\"; chmod +x \"$1/hooks/$h\"; done; printf '[core]\\n\\tfsmonitor = touch %s\\n\\thooksPath = /tmp\\n' \"$m\" >> \"$1/config\"; }}
         cp -a \"$common\" /tmp/evil 2>/dev/null; plant /tmp/evil
         cp -a /tmp/evil ./evil-git 2>/dev/null
         mv .git .git-orig && cp -a ./evil-git .git
         rm -rf \"$own/hooks\"; plant \"$own\"; plant \"$common\"
         [ -n \"$QWRAP_TEST_COMMONDIR\" ] && echo \"$PWD/evil-git\" > \"$own/commondir\"
         for d in \"$common\"/modules/* \"$common\"/worktrees/*; do plant \"$d\"; {{ [ -e \"$d/commondir\" ] || [ -n \"$QWRAP_TEST_COMMONDIR\" ]; }} && echo \"$PWD/evil-git\" > \"$d/commondir\"; echo /tmp > \"$d/gitdir\"; mv \"$d\" \"$d.x\"; done
         mv \"$common/modules\" \"$common/m2\"; mv \"$common/worktrees\" \"$common/w2\"
         [ -f .git ] && echo \"gitdir: $PWD/evil-git\" > .git
         [ -f lib/.git ] && echo \"gitdir: $PWD/evil-git\" > lib/.git
         [ -d lib ] && mv lib lib2
         echo \"$PWD/evil-git/objects\" > \"$common/objects/info/alternates\"
         true",
        m = marker.display()
    )
}

/// Host git, unconfined, in each checkout: what a user runs afterwards.
fn host_git(f: &Fixture, dirs: &[PathBuf]) {
    for d in dirs {
        let script = format!(
            "{GIT} status >/dev/null 2>&1; {GIT} commit -q --allow-empty -m host >/dev/null 2>&1; true"
        );
        f.command("sh")
            .current_dir(d)
            .args(["-c", &script])
            .output()
            .unwrap();
    }
}

fn ino(p: &Path) -> u64 {
    std::fs::symlink_metadata(p).map(|m| m.ino()).unwrap_or(0)
}

#[test]
fn planted_git_metadata_never_runs_on_the_host() {
    planting_routes(false);
}

/// A `commondir` file created where none exists (a normal checkout's git
/// dir, a submodule's) would redirect host git to a common dir of the
/// attacker's. Mounts cannot guard a name that does not exist yet: the
/// warden moves such a file aside when the command exits (the window while
/// the command runs stays open: docs/security.md, residual risks).
#[test]
fn an_absent_commondir_created_inside_is_moved_aside() {
    planting_routes(true);
}

/// Waits until the warden has moved aside the pointer files planted where
/// none were, and returns what it moved them to.
fn moved_aside(f: &Fixture) -> Vec<PathBuf> {
    let planted = [
        f.ws().join(".git/commondir"),
        f.ws().join(".git/modules/lib/commondir"),
    ];
    for _ in 0..300 {
        if planted.iter().all(|p| std::fs::symlink_metadata(p).is_err()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    planted
        .iter()
        .map(|p| PathBuf::from(format!("{}.qwrap-quarantined", p.display())))
        .filter(|p| p.exists())
        .collect()
}

fn planting_routes(absent_commondir: bool) {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repos(&f);
            let marker = f.path().join("PWNED");
            let wt = f.path().join("wt");
            let lib = f.ws().join("lib");
            for (checkout, ws) in [
                ("normal", f.ws()),
                ("worktree", wt.clone()),
                ("submodule", lib.clone()),
            ] {
                let before = [
                    ino(&f.ws().join(".git")),
                    ino(&wt.join(".git")),
                    ino(&lib.join(".git")),
                ];
                let o = f
                    .qwrap(&["run", "--workspace"])
                    .arg(&ws)
                    .args(["--", "sh", "-c", &attack(&marker)])
                    .current_dir(&ws)
                    .env("QWRAP_MOUNT_API", api)
                    .env("QWRAP_TEST_COMMONDIR", if absent_commondir { "1" } else { "" })
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{who:?} {api} {checkout}: {}", stderr(&o));
                let after = [
                    ino(&f.ws().join(".git")),
                    ino(&wt.join(".git")),
                    ino(&lib.join(".git")),
                ];
                assert_eq!(before, after, "{who:?} {api} {checkout}: a .git was replaced");
                if absent_commondir {
                    let moved = moved_aside(&f);
                    assert!(!moved.is_empty(), "{who:?} {api} {checkout}: nothing was planted");
                    // The warden says so on qwrap's stderr, before it closes.
                    assert!(
                        stderr(&o).contains(
                            "was created inside the sandbox, where a host git would follow it: moved aside to"
                        ),
                        "{who:?} {api} {checkout}: {}",
                        stderr(&o)
                    );
                    for m in moved {
                        std::fs::remove_file(m).unwrap();
                    }
                }
                host_git(&f, &[f.ws(), wt.clone(), lib.clone()]);
                assert!(
                    !marker.exists(),
                    "{who:?} {api} {checkout}: planted code ran on the host"
                );
                for gone in ["ws/.git-orig", "ws/lib2", "ws/.git/m2", "ws/.git/w2"] {
                    assert!(!f.path().join(gone).exists(), "{who:?} {api} {checkout}: {gone}");
                }
            }
        }
    }
}

/// Everyday git, inside, in each kind of checkout, and `git submodule
/// update` (which rewrites a submodule's `core.worktree` where it is set:
/// the sandbox sees the config without it, and the host's stays as it is).
#[test]
fn everyday_git_works_inside() {
    let ops = format!(
        "set -e
         {GIT} commit -q --allow-empty -m one && {GIT} commit -q --amend --allow-empty -m one-amended
         {GIT} branch b1 && {GIT} tag t1
         {GIT} checkout -q -b topic && echo t > t && {GIT} add t && {GIT} commit -qm t && {GIT} checkout -q -
         {GIT} merge -q --no-edit topic
         {GIT} checkout -q -b rb HEAD~1 && {GIT} commit -q --allow-empty -m rb && {GIT} rebase -q topic && {GIT} checkout -q -
         {GIT} cherry-pick --allow-empty rb >/dev/null
         echo s >> a 2>/dev/null || echo s > a; {GIT} stash -q && {GIT} stash pop -q && {GIT} checkout -q -- . 
         {GIT} fetch -q \"$1\" main
         {GIT} gc -q
         echo everyday-ok"
    );
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repos(&f);
            let remote = f.path().join("remote");
            for ws in [f.ws(), f.path().join("wt"), f.ws().join("lib")] {
                let o = f
                    .qwrap(&["run", "--workspace"])
                    .arg(&ws)
                    .args(["--", "sh", "-c", &ops, "sh"])
                    .arg(&remote)
                    .current_dir(&ws)
                    .env("QWRAP_MOUNT_API", api)
                    .output()
                    .unwrap();
                assert!(
                    stdout(&o).contains("everyday-ok"),
                    "{who:?} {api} {ws:?}: {}",
                    stderr(&o)
                );
            }
            let o = f
                .qwrap(&["run", "--"])
                .args(["sh", "-c", &format!("{GIT} -C lib checkout -q --detach && {GIT} -C lib commit -q --allow-empty -m in-sub && {GIT} add lib && {GIT} commit -qm bump && echo sub-ok")])
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            assert!(stdout(&o).contains("sub-ok"), "{who:?} {api}: {}", stderr(&o));
            let config = f.ws().join(".git/modules/lib/config");
            let before = std::fs::read(&config).unwrap();
            let head = |f: &Fixture| {
                ok(&f
                    .command("git")
                    .args(["-C", "lib", "rev-parse", "HEAD"])
                    .output()
                    .unwrap())
            };
            let recorded = head(&f);
            ok(&f
                .command("git")
                .args(["-C", "lib", "checkout", "-q", "--detach", "HEAD~1"])
                .output()
                .unwrap());
            let o = f
                .qwrap(&["run", "--"])
                .args(["sh", "-c", &format!("{GIT} submodule update && echo update-ok")])
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            assert!(stdout(&o).contains("update-ok"), "{who:?} {api}: {}", stderr(&o));
            assert_eq!(
                head(&f),
                recorded,
                "{who:?} {api}: the submodule is back at its recorded commit"
            );
            assert_eq!(
                std::fs::read(&config).unwrap(),
                before,
                "{who:?} {api}: the host's config is unchanged"
            );
        }
    }
}

/// A dotfiles repository at ~/.git: a workspace inside home does not get it
/// as a writable git root.
#[test]
fn a_git_dir_at_home_stays_read_only() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let o = f
            .command("sh")
            .current_dir(f.home())
            .args(["-c", &format!("{GIT} init -q && mkdir -p proj")])
            .output()
            .unwrap();
        ok(&o);
        let hooks = f.home().join(".git/hooks");
        let before = listing(&hooks);
        for api in APIS {
            let o = f
                .qwrap(&["run", "--workspace"])
                .arg(f.home().join("proj"))
                .args([
                    "--",
                    "sh",
                    "-c",
                    "touch ~/.git/hooks/post-commit ~/.git/commondir 2>&1; echo done",
                ])
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            assert!(
                stdout(&o).contains("Read-only file system"),
                "{who:?} {api}: {}",
                stdout(&o)
            );
        }
        assert_eq!(listing(&hooks), before);
        assert!(!f.home().join(".git/commondir").exists());
    }
}
