//! Git metadata written inside cannot plant code that a later, unconfined
//! host `git` runs: the attack of each kind is tried inside, then host git
//! runs and the marker its planted hook or fsmonitor would create must not
//! appear. Everyday git keeps working inside. As root and unprivileged, on
//! both mount APIs, in a normal checkout, a linked worktree and a
//! superproject with a submodule.

mod common;

use common::git::{HostPoll, plant_script, pointers};
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
    planting_routes();
}

/// Planted while host git runs every 50 ms in each checkout, as an
/// editor's status view would: `commondir`, `gitdir`, `config.worktree`
/// with `extensions.worktreeConfig` on, a hook, `objects/info/alternates`,
/// a FIFO named `ORIG_HEAD`, a symlink named `packed-refs`, in the
/// checkout's git dir, the linked worktree's and the submodule's. No
/// marker, no host git that hangs, nothing left behind.
#[test]
fn nothing_planted_reaches_a_host_git_while_it_runs() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repos(&f);
            let marker = f.path().join("PWNED");
            f.write("ws/plant.sh", &plant_script(&marker), 0o755);
            let wt = f.path().join("wt");
            let lib = f.ws().join("lib");
            let host_dirs = [
                f.ws().join(".git"),
                f.ws().join(".git/worktrees/wt"),
                f.ws().join(".git/modules/lib"),
            ];
            let before: Vec<_> = host_dirs.iter().map(|d| pointers(d)).collect();
            for (checkout, ws) in [
                ("normal", f.ws()),
                ("worktree", wt.clone()),
                ("submodule", lib.clone()),
            ] {
                let poll = HostPoll::start(&f, &[f.ws(), wt.clone(), lib.clone()]);
                let o = f
                    .qwrap(&["run", "--workspace"])
                    .arg(&ws)
                    .args(["--", "sh"])
                    .arg(f.ws().join("plant.sh"))
                    .current_dir(&ws)
                    .env("QWRAP_MOUNT_API", api)
                    .output()
                    .unwrap();
                let (polls, hung) = poll.stop();
                let what = format!("{who:?} {api} {checkout}");
                assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
                assert!(polls > 6, "{what}: host git did not run");
                assert_eq!(hung, 0, "{what}: a host git hung");
                assert!(!marker.exists(), "{what}: planted code ran on the host");
                for (d, b) in host_dirs.iter().zip(&before) {
                    assert_eq!(&pointers(d), b, "{what}: {d:?} changed");
                    for n in ["ORIG_HEAD", "packed-refs"] {
                        let m = std::fs::symlink_metadata(d.join(n));
                        assert!(m.as_ref().map_or(true, |m| m.is_file()), "{what}: {d:?}/{n}");
                    }
                    assert!(
                        !d.join("objects/info/alternates").exists(),
                        "{what}: {d:?} alternates"
                    );
                }
                host_git(&f, &[f.ws(), wt.clone(), lib.clone()]);
                assert!(!marker.exists(), "{what}: planted code ran on the host later");
            }
        }
    }
}

fn planting_routes() {
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
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{who:?} {api} {checkout}: {}", stderr(&o));
                let after = [
                    ino(&f.ws().join(".git")),
                    ino(&wt.join(".git")),
                    ino(&lib.join(".git")),
                ];
                assert_eq!(before, after, "{who:?} {api} {checkout}: a .git was replaced");
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
            // Absent from the listed home; read-only in the whole one.
            assert!(
                stdout(&o).contains("No such file or directory"),
                "{who:?} {api}: {}",
                stdout(&o)
            );
            let o = f
                .qwrap(&["run", "--home", "readonly", "--workspace"])
                .arg(f.home().join("proj"))
                .args(["--", "sh", "-c", "touch ~/.git/hooks/post-commit 2>&1; echo done"])
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

/// What git does inside reaches the host within a second while the
/// sandbox still runs (an editor shows it), and survives the command being
/// killed with SIGKILL: commits, a branch, a tag, a switch, the index. In
/// each kind of checkout, as root and unprivileged, on both mount APIs.
#[test]
fn git_results_reach_the_host_while_it_runs_and_survive_sigkill() {
    let ops = format!(
        "set -e
         {GIT} commit -q --allow-empty -m inside-1
         {GIT} tag inside-tag-$1 && {GIT} branch inside-branch-$1
         {GIT} switch -q -c inside-switch-$1
         echo staged > staged-file && {GIT} add staged-file
         echo ready; sleep 30"
    );
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repos(&f);
            for (n, ws) in [f.ws(), f.path().join("wt"), f.ws().join("lib")]
                .into_iter()
                .enumerate()
            {
                let what = format!("{who:?} {api} {ws:?}");
                let mut child = f
                    .qwrap(&["run", "--workspace"])
                    .arg(&ws)
                    .args(["--", "sh", "-c", &ops, "sh", &n.to_string()])
                    .current_dir(&ws)
                    .env("QWRAP_MOUNT_API", api)
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                let mut line = String::new();
                std::io::BufRead::read_line(
                    &mut std::io::BufReader::new(child.stdout.take().unwrap()),
                    &mut line,
                )
                .unwrap();
                assert_eq!(line.trim(), "ready", "{what}");
                let host = |args: &[&str]| {
                    let o = f.command("git").args(args).current_dir(&ws).output().unwrap();
                    stdout(&o).trim().to_string()
                };
                let t0 = std::time::Instant::now();
                while host(&["branch", "--show-current"]) != format!("inside-switch-{n}")
                    && t0.elapsed().as_secs() < 1
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                assert_eq!(
                    host(&["branch", "--show-current"]),
                    format!("inside-switch-{n}"),
                    "{what}: not within a second"
                );
                assert_eq!(host(&["log", "-1", "--format=%s"]), "inside-1", "{what}");
                assert_eq!(
                    host(&["tag", "-l", &format!("inside-tag-{n}")]),
                    format!("inside-tag-{n}"),
                    "{what}"
                );
                assert!(
                    host(&["branch", "-l", &format!("inside-branch-{n}")]).contains("inside-branch"),
                    "{what}"
                );
                assert!(
                    host(&["diff", "--cached", "--name-only"]).contains("staged-file"),
                    "{what}"
                );
                // SIGKILL: the warden still ends the sandbox and keeps it all.
                child.kill().unwrap();
                child.wait().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(300));
                assert_eq!(
                    host(&["log", "-1", "--format=%s"]),
                    "inside-1",
                    "{what}: after SIGKILL"
                );
                assert!(
                    host(&["diff", "--cached", "--name-only"]).contains("staged-file"),
                    "{what}: after SIGKILL"
                );
                let o = f
                    .command("git")
                    .args(["fsck", "--no-dangling"])
                    .current_dir(&ws)
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{what}: fsck: {}", stderr(&o));
                // Back to the start for the next checkout.
                f.command("git")
                    .args(["reset", "-q"])
                    .current_dir(&ws)
                    .output()
                    .unwrap();
                f.command("git")
                    .args(["switch", "-q", "-"])
                    .current_dir(&ws)
                    .output()
                    .unwrap();
                let _ = std::fs::remove_file(ws.join("staged-file"));
            }
        }
    }
}

/// A rebase stopped on a conflict inside is continued on the host
/// afterwards, and a worktree added inside works inside.
#[test]
fn a_rebase_stopped_inside_continues_on_the_host() {
    let inside = format!(
        "set -e
         {GIT} switch -q -c one && echo one > c && {GIT} add c && {GIT} commit -qm one
         {GIT} switch -q -c two HEAD~1 && echo two > c && {GIT} add c && {GIT} commit -qm two
         {GIT} rebase -q one >/dev/null 2>&1 && exit 9 || true
         test -d \"$({GIT} rev-parse --git-path rebase-merge)\"
         {GIT} worktree add -q wt-inside -b wt-inside && {GIT} -C wt-inside commit -q --allow-empty -m in-wt
         echo stopped"
    );
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repos(&f);
            let o = f
                .qwrap(&["run", "--", "sh", "-c", &inside])
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            assert!(
                stdout(&o).contains("stopped"),
                "{who:?} {api}: {}\n{}",
                stdout(&o),
                stderr(&o)
            );
            let script = format!(
                "set -e; echo both > c; {GIT} add c; GIT_EDITOR=true {GIT} rebase --continue >/dev/null; {GIT} log --format=%s -2 | tr '\\n' ' '"
            );
            let o = f.command("sh").args(["-c", &script]).output().unwrap();
            assert_eq!(ok(&o).trim(), "two one", "{who:?} {api}");
        }
    }
}

/// git-lfs inside (when installed): its store is the host's, made first
/// where the repository uses lfs and has none yet.
#[test]
fn git_lfs_objects_reach_the_host() {
    if !std::path::Path::new("/usr/bin/git-lfs").exists() {
        eprintln!("SKIP git-lfs: not installed");
        return;
    }
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let setup = format!(
                "set -e; {GIT} init -q -b main; {GIT} commit -q --allow-empty -m x
                 printf '*.bin filter=lfs diff=lfs merge=lfs -text\\n' > .gitattributes
                 {GIT} add .gitattributes; {GIT} commit -qm attrs"
            );
            ok(&f.command("sh").args(["-c", &setup]).output().unwrap());
            let inside = format!(
                "set -e; git lfs install --local >/dev/null; head -c 2000 /dev/urandom > big.bin
                 {GIT} add big.bin; {GIT} commit -qm big; echo lfs-ok"
            );
            let o = f.run_sh(api, &[], &inside);
            assert!(stdout(&o).contains("lfs-ok"), "{who:?} {api}: {}", stderr(&o));
            let listed = ok(&f.command("git").args(["lfs", "ls-files"]).output().unwrap());
            assert!(listed.contains("big.bin"), "{who:?} {api}: {listed}");
            let o = f.command("git").args(["lfs", "fsck"]).output().unwrap();
            assert!(o.status.success(), "{who:?} {api}: {}{}", stdout(&o), stderr(&o));
        }
    }
}
