//! The sandbox is an untrusted remote to host git: what git on the host
//! will read of its own repository arrives as a remote's data would. Each
//! route is tried inside, then host git runs unconfined, and the test
//! looks only at host-side effects: a marker a planted hook or strategy
//! would write, a host file a link named, a host git that hangs, what host
//! `git status` shows. As root and unprivileged, on both mount APIs.

mod common;

use common::*;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

const GIT: &str = "git -c user.name=t -c user.email=t@t";

/// The workspace: a repository with a Makefile, a file `f` and a branch
/// `side` whose first commit conflicts with `main`.
fn repo(f: &Fixture) {
    let script = format!(
        "set -e
         {GIT} init -q -b main && printf 'all:\\n\\ttrue\\n' > Makefile && echo 1 > f && {GIT} add . && {GIT} commit -qm base
         {GIT} checkout -q -b side && echo 2 > f && {GIT} commit -qam c1 && echo x > g && {GIT} add g && {GIT} commit -qm c2
         {GIT} checkout -q main && echo 3 > f && {GIT} commit -qam c3"
    );
    ok(&f.command("sh").args(["-c", &script]).output().unwrap());
}

/// Every entry below `dir` that is neither a regular file nor a directory.
/// Whether any file below `dir` holds `text`.
fn store_holds(dir: &Path, text: &str) -> bool {
    std::fs::read_dir(dir).into_iter().flatten().flatten().any(|e| {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            store_holds(&p, text)
        } else {
            std::fs::read(&p).is_ok_and(|d| String::from_utf8_lossy(&d).contains(text))
        }
    })
}

fn odd_entries(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            out.extend(odd_entries(&e.path()));
        } else if !t.is_file() {
            out.push(format!("{} ({t:?})", e.path().display()));
        }
    }
    out
}

/// How many objects of the workspace's repository, on the host, are at
/// least `bytes` large.
fn objects_of_at_least(f: &Fixture, bytes: u64) -> usize {
    let sizes = f
        .command("git")
        .args(["cat-file", "--batch-all-objects", "--batch-check=%(objectsize)"])
        .output()
        .unwrap();
    stdout(&sizes)
        .lines()
        .filter(|l| l.parse::<u64>().is_ok_and(|n| n >= bytes))
        .count()
}

/// Host git, unconfined and bounded: what a user runs after the sandbox.
fn host(f: &Fixture, script: &str) -> std::process::Output {
    f.command("timeout")
        .args(["20", "sh", "-c", script])
        .output()
        .unwrap()
}

/// A link or FIFO made in `logs/` or `refs/` never exists in the host's
/// git dir: a host commit does not append its reflog line through a link
/// into a start-up file, and a ref naming /dev/zero does not make host git
/// grow until it is killed.
#[test]
fn links_in_refs_and_logs_never_reach_the_host() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repo(&f);
            let rc = f.write("rc", "# rc\n", 0o644);
            let dir = f.mkdir("somedir");
            let script = format!(
                "g=$(git rev-parse --git-dir)
                 ln -sfn '{rc}' $g/logs/HEAD; ln -sfn '{rc}' $g/logs/refs/heads/main
                 mkdir -p $g/logs/refs/heads/sub; ln -sfn '{dir}' $g/logs/refs/heads/sub/x
                 ln -sfn /dev/zero $g/refs/heads/zero; ln -sfn /dev/zero $g/refs/heads/main
                 mkfifo $g/refs/heads/fifo; ln -sfn '{rc}' $g/refs/heads/rc
                 ln -sfn /dev/zero $g/logs/refs/heads/new-branch
                 sleep 0.5; echo planted",
                rc = rc.display(),
                dir = dir.display()
            );
            let o = f.run_sh(api, &[], &script);
            let what = format!("{who:?} {api}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            let git = f.ws().join(".git");
            assert_eq!(
                odd_entries(&git),
                Vec::<String>::new(),
                "{what}: links reached the host"
            );
            let h = host(
                &f,
                &format!(
                    "{GIT} rev-parse HEAD && {GIT} commit -q --allow-empty -m '$(touch pwned)' && {GIT} checkout -q -b new-branch && {GIT} stash list && echo host-ok"
                ),
            );
            assert!(stdout(&h).contains("host-ok"), "{what}: host git: {}", stderr(&h));
            assert_eq!(
                std::fs::read_to_string(&rc).unwrap(),
                "# rc\n",
                "{what}: rc written"
            );
            assert_eq!(listing(&dir).len(), 0, "{what}: files made in {dir:?}");
        }
    }
}

/// An index planted inside whose entries name `.git/hooks/post-commit`
/// and `../outside`: a host `git checkout -- .` writes neither, and no
/// hook runs on the next host commit.
#[test]
fn a_forged_index_never_writes_outside_the_work_tree() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repo(&f);
            let marker = f.path().join("PWNED");
            let script = format!(
                "set -e; g=$(git rev-parse --git-dir)
                 blob=$(printf '#!/bin/sh\\ntouch {m}\\n' | git hash-object -w --stdin)
                 git update-index --add --cacheinfo 100755,$blob,-git/hooks/post-commit
                 git update-index --add --cacheinfo 100755,$blob,-./outside
                 perl -pi -e 's{{-git/hooks/post-commit}}{{.git/hooks/post-commit}}; s{{-\\./outside}}{{../outside}}' $g/index
                 sleep 0.5; echo planted",
                m = marker.display()
            );
            let o = f.run_sh(api, &[], &script);
            let what = format!("{who:?} {api}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            host(
                &f,
                &format!("{GIT} checkout -- . ; {GIT} restore . ; {GIT} commit -q --allow-empty -m h; true"),
            );
            assert!(!marker.exists(), "{what}: a hook from the index ran on the host");
            assert!(
                !f.ws().join(".git/hooks/post-commit").exists(),
                "{what}: hook written"
            );
            assert!(!f.path().join("outside").exists(), "{what}: ../outside written");
            let h = host(&f, &format!("{GIT} status --porcelain && echo host-ok"));
            assert!(
                stdout(&h).contains("host-ok"),
                "{what}: host index: {}",
                stderr(&h)
            );
        }
    }
}

/// An index written inside whose entries git would not hold: a path twice
/// (host `git commit -a` wrote a tree naming `f` twice, `git show` one
/// content and a checkout the other), out of order, a file with an entry
/// below it, a file whose object is a tree (the user's next commit no
/// clone could check out) or that the host lacks. Watched on the host: its index is not that one, the user's
/// next commit passes `git fsck`, and a clone of it checks out what `git
/// show` says.
#[test]
fn an_index_git_would_not_hold_stays_inside() {
    // A version 2 index of the entries on stdin (`MODE OID PATH`), zero
    // stat data, its trailer made.
    let write = "import hashlib,sys\nd=b'DIRC'+(2).to_bytes(4,'big')\nes=[l.split() for l in sys.stdin.read().splitlines()]\nd+=len(es).to_bytes(4,'big')\nfor m,o,n in es:\n  e=bytes(24)+int(m,8).to_bytes(4,'big')+bytes(12)+bytes.fromhex(o)+len(n).to_bytes(2,'big')+n.encode()\n  d+=e+bytes(8-len(e)%8)\nopen('.git/index.new','wb').write(d+hashlib.sha1(d).digest())\n";
    let cases = [
        ("twice", "100644 $old f\n100644 $evil f"),
        ("out of order", "100644 $old f\n100644 $evil Makefile"),
        ("a file and below it", "100644 $old f\n100644 $evil f/x"),
        ("a tree as a file", "100644 $tree f"),
        (
            "an object nobody has",
            "100644 1234567890123456789012345678901234567890 f",
        ),
    ];
    for who in Who::all() {
        for (what, entries) in cases {
            let f = Fixture::new(who);
            repo(&f);
            let before = std::fs::read(f.ws().join(".git/index")).unwrap();
            let script = format!(
                "set -e; old=$(git rev-parse HEAD:f); evil=$(echo EVIL | git hash-object -w --stdin); tree=$(git rev-parse HEAD^{{tree}})
                 printf '{entries}\\n' | sed \"s/\\$old/$old/; s/\\$evil/$evil/; s/\\$tree/$tree/\" | python3 -c \"$W\"
                 mv .git/index.new .git/index; sleep 0.5; echo planted"
            );
            let o = f
                .qwrap(&["run", "--"])
                .args(["sh", "-c", &script])
                .env("W", write)
                .current_dir(f.ws())
                .output()
                .unwrap();
            let what = format!("{who:?} {what}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            assert!(
                std::fs::read(f.ws().join(".git/index")).unwrap() == before,
                "{what}: the index reached the host: {}",
                stderr(&o)
            );
            let h = host(
                &f,
                &format!(
                    "echo mine >> Makefile && {GIT} commit -qam user && {GIT} fsck --no-dangling && echo fsck-ok
                     git clone -q . ../clone && cat ../clone/f"
                ),
            );
            assert!(stdout(&h).contains("fsck-ok"), "{what}: {}", stderr(&h));
            assert!(
                !stdout(&h).contains("EVIL"),
                "{what}: a clone checks out the command's file"
            );
        }
    }
}

/// A reflog line host git pays for at the square of its length (it reads
/// a reflog backwards a block at a time: one of 128 MB held `git status`
/// on a detached HEAD past two minutes): the line stays inside. And a
/// `shallow` naming the user's own commit (host `git log` stopped there)
/// in a shallow clone.
#[test]
fn a_reflog_line_too_long_and_a_new_shallow_root_stay_inside() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let script = format!(
            "set -e; git checkout -q --detach; h=$(git rev-parse HEAD)
             printf '%s %s U <u@h> 1 +0000\\tcheckout: %s\\n' $h $h $(head -c 100000 /dev/zero | tr '\\0' x) >> .git/logs/HEAD
             {GIT} commit -q --allow-empty -m after; sleep 0.5; echo planted"
        );
        let o = f.run_sh("new", &[], &script);
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        let log = std::fs::read(f.ws().join(".git/logs/HEAD")).unwrap();
        assert!(
            log.split(|c| *c == b'\n').all(|l| l.len() < 65536),
            "{what}: the line reached the host"
        );
        assert!(
            stderr(&o).contains("logs/HEAD: not copied"),
            "{what}: not said: {}",
            stderr(&o)
        );
        // A shallow clone with a commit of the user's own.
        let f = Fixture::new(who);
        repo(&f);
        let sh = format!(
            "set -e; git clone -q --depth 1 file://$PWD ../shallow && cd ../shallow && echo mine > m && {GIT} add m && {GIT} commit -qm mine"
        );
        ok(&f.command("sh").args(["-c", &sh]).output().unwrap());
        let clone = f.path().join("shallow");
        let o = f
            .qwrap(&["run", "--workspace"])
            .arg(&clone)
            .args([
                "--",
                "sh",
                "-c",
                "git rev-parse HEAD >> .git/shallow; sleep 0.5; echo planted",
            ])
            .current_dir(&clone)
            .output()
            .unwrap();
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        let l = f
            .command("git")
            .args(["log", "--format=%s"])
            .current_dir(&clone)
            .output()
            .unwrap();
        assert_eq!(
            stdout(&l),
            "mine\nc3\n",
            "{what}: the user's history cut: {}",
            stderr(&o)
        );
    }
}

/// A version 4 index names the part of a path shared with the entry
/// before once, and host git expands every path: 17,000 paths of 4 KB,
/// made inside with git's own commands, stay there (9,000 of 62 KB in an
/// index of 600 KB had held host `git status` at 2.2 GB); so do 70,000
/// subdirectories of one directory (2 million, long names first, had held
/// host `git commit` and `git stash` past two minutes).
#[test]
fn an_index_whose_paths_expand_hugely_stays_inside() {
    // 17,000 paths of 4 KB in a version 4 index; 70,000 subdirectories of
    // one directory, which host git's cache-tree sorts at the square of
    // their number when they come long names first.
    let cases = [
        (
            "python3 -c \"import sys; d='d123456789/'*370; sys.stdout.write(''.join('100644 $blob\\t%sf%06d\\n' % (d, i) for i in range(17000)))\" | git update-index --index-info
             git update-index --index-version 4",
            "MiB qwrap carries",
        ),
        (
            "python3 -c \"import sys; sys.stdout.write(''.join('100644 $blob\\td%05d/f\\n' % i for i in range(70000)))\" | git update-index --index-info",
            "so many subdirectories",
        ),
    ];
    for who in Who::all() {
        for (make, said) in cases {
            let f = Fixture::new(who);
            repo(&f);
            let before = std::fs::read(f.ws().join(".git/index")).unwrap();
            let script = format!(
                "set -e; blob=$(echo x | git hash-object -w --stdin)
                 {make}; sleep 0.5; echo planted"
            );
            let o = f
                .qwrap(&["run", "--", "sh", "-c", &script])
                .current_dir(f.ws())
                .output()
                .unwrap();
            let what = format!("{who:?} {said}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            assert!(
                std::fs::read(f.ws().join(".git/index")).unwrap() == before,
                "{what}: the index reached the host: {}",
                stderr(&o)
            );
            assert!(stderr(&o).contains(said), "{what}: not said: {}", stderr(&o));
        }
    }
}

/// assume-unchanged set inside on an edited Makefile: host `git status`
/// still shows the edit.
#[test]
fn hidden_changes_show_on_the_host() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repo(&f);
            let script = "set -e; printf 'all:\\n\\ttouch evil\\n' > Makefile
                 git update-index --assume-unchanged Makefile
                 git update-index --skip-worktree f; echo 9 > f
                 git status --porcelain; sleep 0.5; echo planted";
            let o = f.run_sh(api, &[], script);
            let what = format!("{who:?} {api}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            let h = host(&f, &format!("{GIT} status --porcelain && {GIT} ls-files -v"));
            let out = stdout(&h);
            assert!(out.contains(" M Makefile"), "{what}: the edit is hidden: {out}");
            assert!(out.contains(" M f"), "{what}: the edit of f is hidden: {out}");
            assert!(out.contains("H Makefile"), "{what}: a bit carried: {out}");
            // The rewritten index is whole: git's own check of its trailer.
            let h = host(&f, &format!("{GIT} fsck --no-dangling && echo fsck-ok"));
            assert!(stdout(&h).contains("fsck-ok"), "{what}: {}", stderr(&h));
        }
    }
}

/// A replace ref made inside (the tip replaced by a commit whose tree
/// holds an edit of the work tree, loose and packed): host `git status`
/// still shows the edit, and no replace ref reaches the host.
#[test]
fn a_replace_ref_made_inside_hides_nothing() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repo(&f);
            let script = format!(
                "set -e; echo EVIL >> f; git add f; t=$(git write-tree)
                 c=$(git log -1 --format=%B | {GIT} commit-tree $t -p HEAD~1)
                 git replace HEAD $c; git reset -q; git status --porcelain; sleep 0.5
                 git pack-refs --all; sleep 0.5; echo planted"
            );
            let o = f.run_sh(api, &[], &script);
            let what = format!("{who:?} {api}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            assert_eq!(
                stdout(&o).lines().next(),
                Some("planted"),
                "{what}: inside, the change hides"
            );
            let h = host(
                &f,
                &format!("{GIT} status --porcelain; {GIT} replace -l; echo host-ok"),
            );
            let out = stdout(&h);
            // Staged (the index inside was reset to the replacing tree) or
            // not, the edit shows.
            assert!(
                out.lines()
                    .any(|l| l.len() > 3 && l[..2].contains('M') && &l[3..] == "f"),
                "{what}: the edit is hidden: {out}"
            );
            assert_eq!(out.trim_end().lines().last(), Some("host-ok"), "{what}: {out}");
            assert!(
                !out.contains("refs/replace") && out.lines().count() == 2,
                "{what}: {out}"
            );
        }
    }
}

/// A cherry-pick stopped inside with a strategy added to its options: a
/// host `git cherry-pick --continue` does not run the program it names.
#[test]
fn sequencer_state_names_no_program_on_the_host() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repo(&f);
            let marker = f.path().join("PWNED");
            let script = format!(
                "g=$(git rev-parse --git-dir)
                 {GIT} cherry-pick side~1 side >/dev/null 2>&1
                 test -f $g/sequencer/opts || printf '[options]\\n' > $g/sequencer/opts
                 printf '\\tstrategy = x/run\\n' >> $g/sequencer/opts
                 mkdir -p git-merge-x; printf '#!/bin/sh\\ntouch {m}\\nexit 0\\n' > git-merge-x/run; chmod +x git-merge-x/run
                 ls $g/sequencer; sleep 0.5; echo planted",
                m = marker.display()
            );
            let o = f.run_sh(api, &[], &script);
            let what = format!("{who:?} {api}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            assert!(
                stdout(&o).contains("todo"),
                "{what}: no stopped cherry-pick: {}",
                stdout(&o)
            );
            host(
                &f,
                &format!("echo 2 > f; {GIT} add f; GIT_EDITOR=true {GIT} cherry-pick --continue; true"),
            );
            assert!(!marker.exists(), "{what}: the planted strategy ran on the host");
        }
    }
}

/// A FIFO or device is never where host git reads: the ref named in
/// HEAD made a FIFO, `packed-refs` a link to /dev/zero. (Host git stays
/// bounded: every host command above ran under `timeout`.)
#[test]
fn no_fifo_or_device_where_host_git_looks() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let script = "g=$(git rev-parse --git-dir)
             mkdir -p $g/rebase-merge; mkfifo $g/rebase-merge/head-name
             ln -sfn /dev/zero $g/packed-refs; sleep 0.5; echo planted";
        let o = f.run_sh("new", &[], script);
        assert!(stdout(&o).contains("planted"), "{who:?}: {}", stderr(&o));
        let git = f.ws().join(".git");
        for e in odd_entries(&git) {
            let t = std::fs::symlink_metadata(&e).map(|m| m.file_type());
            assert!(t.is_ok_and(|t| !t.is_fifo()), "{who:?}: {e}");
        }
        assert_eq!(odd_entries(&git), Vec::<String>::new(), "{who:?}");
    }
}

/// Links and FIFOs made in `objects/` (a loose object, a pack's index)
/// never exist in the host's: host git that counts, packs or checks its
/// objects does not hang or read /dev/zero. A tree naming `.git`, written
/// inside and put on a branch, is refused as a push would refuse it, and
/// the branch is not moved on the host; a commit made inside arrives whole.
#[test]
fn objects_arrive_as_a_push_would() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repo(&f);
            let script = format!(
                "g=$(git rev-parse --git-dir); z=0000000000000000000000000000000000000000
                 mkdir -p $g/objects/ab; ln -s /dev/zero $g/objects/ab/cdefcdefcdefcdefcdefcdefcdefcdefcdefcd
                 mkfifo $g/objects/ab/cdefcdefcdefcdefcdefcdefcdefcdefcdefce
                 mkfifo $g/objects/pack/pack-$z.idx; ln -s /dev/zero $g/objects/pack/pack-$z.pack
                 blob=$(echo evil | git hash-object -w --stdin)
                 perl -e 'print \"100644 .git\\0\", pack(\"H*\", $ARGV[0])' $blob > /tmp/t
                 tree=$(git hash-object -t tree -w --literally /tmp/t)
                 c=$(echo evil | {GIT} commit-tree $tree -p HEAD)
                 git update-ref refs/heads/evil $c
                 echo ok > ok.txt; {GIT} add ok.txt; {GIT} commit -qm inside
                 sleep 1; echo planted $c"
            );
            let o = f.run_sh(api, &[], &script);
            let what = format!("{who:?} {api}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            let git = f.ws().join(".git");
            assert_eq!(
                odd_entries(&git),
                Vec::<String>::new(),
                "{what}: links reached the host"
            );
            let h = host(
                &f,
                &format!(
                    "{GIT} count-objects -v >/dev/null && {GIT} fsck --no-dangling && {GIT} log --format=%s -1 && echo host-ok"
                ),
            );
            assert!(stdout(&h).contains("host-ok"), "{what}: host git: {}", stderr(&h));
            assert!(
                stdout(&h).contains("inside"),
                "{what}: the commit made inside: {}",
                stdout(&h)
            );
            let evil = host(&f, &format!("{GIT} rev-parse -q --verify refs/heads/evil"));
            assert!(
                !evil.status.success(),
                "{what}: the branch with a .git tree reached the host"
            );
        }
    }
}

/// Repositories the workspace holds (it is no checkout itself) and one in
/// an included root: their hooks and config stay the host's, their refs
/// and objects arrive vetted, their commits reach the host.
#[test]
fn repositories_below_the_workspace_are_guarded_alike() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let marker = f.path().join("PWNED");
            f.mkdir("ws/app");
            f.mkdir("ws/libs/deep/one");
            f.mkdir("other/tool");
            for d in ["ws/app", "ws/libs/deep/one", "other/tool"] {
                let o = f
                    .command("sh")
                    .current_dir(f.path().join(d))
                    .args([
                        "-c",
                        &format!("{GIT} init -q -b main && {GIT} commit -q --allow-empty -m base"),
                    ])
                    .output()
                    .unwrap();
                ok(&o);
            }
            let script = format!(
                "for g in app/.git libs/deep/one/.git {other}/.git; do
                   printf '#!/bin/sh\\ntouch {m}\\n' > $g/hooks/post-commit; chmod +x $g/hooks/post-commit
                   printf '[core]\\n\\tfsmonitor = \"touch {m}; false\"\\n' >> $g/config
                   ln -sfn /dev/zero $g/refs/heads/zero
                 done
                 cd app && {GIT} commit -q --allow-empty -m inside; cd ..
                 sleep 0.5; echo planted",
                m = marker.display(),
                other = f.path().join("other/tool").display()
            );
            let other = f.path().join("other/tool");
            let o = f.run_sh(api, &["--include", other.to_str().unwrap()], &script);
            let what = format!("{who:?} {api}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            for d in [f.ws().join("app"), f.ws().join("libs/deep/one"), other.clone()] {
                assert_eq!(odd_entries(&d.join(".git")), Vec::<String>::new(), "{what}");
                let h = f
                    .command("timeout")
                    .args(["20", "sh", "-c", &format!("{GIT} status >/dev/null; {GIT} commit -q --allow-empty -m host; {GIT} log --format=%s")])
                    .current_dir(&d)
                    .output()
                    .unwrap();
                assert!(stdout(&h).contains("host"), "{what} {d:?}: {}", stderr(&h));
                if d.ends_with("app") {
                    assert!(stdout(&h).contains("inside"), "{what}: the commit made inside");
                }
            }
            assert!(!marker.exists(), "{what}: planted code ran on the host");
        }
    }
}

/// Repositories planted inside (a `.git` directory with an fsmonitor and a
/// hook, a `.git` pointer file, a bare one) are named when the sandbox ends,
/// with what in them host git would run, and moved aside: a host git there
/// afterwards runs nothing (its marker is never made). A plain one stays,
/// and one there from the start is not named.
#[test]
fn repositories_made_inside_are_named_at_exit() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repo(&f);
            // A repository there from the start, which the command replaces.
            ok(&f
                .command("git")
                .args(["init", "-q", "known"])
                .current_dir(f.ws())
                .output()
                .unwrap());
            // A bare one there from the start: guarded as a `.git` is.
            ok(&f
                .command("git")
                .args(["init", "-q", "--bare", "E.git"])
                .current_dir(f.ws())
                .output()
                .unwrap());
            let hit = f.ws().parent().unwrap().join("fsmonitor-ran");
            let script = format!(
                "mkdir -p sub/deep plain ptr && cd sub/deep && git init -q && git config core.fsmonitor 'touch {hit}'
                 printf '#!/bin/sh\\n' > .git/hooks/post-checkout; cd ../..
                 (cd plain && git init -q); printf 'gitdir: ../.evil\\n' > ptr/.git
                 git init -q --bare emb && git -C emb config core.fsmonitor 'touch {hit}'
                 mkdir sym && git init -q --bare sym/gd && git -C sym/gd config core.bare false && git -C sym/gd config core.fsmonitor 'touch {hit}' && ln -s gd sym/.git
                 mkdir bad && git -C bad init -q && printf '# \\377\\n[core] fsmonitor = touch {hit}\\n' >> bad/.git/config
                 mv known k.old && git init -q known && git -C known config core.fsmonitor 'touch {hit}'
                 mkdir -p A/refs/heads A/objs && ln -s objs A/objects && echo 'ref: refs/heads/main' > A/HEAD
                 printf '[core]\\n\\tbare = false\\n\\tworktree = %s/A\\n\\tfsmonitor = touch {hit}\\n' \"$PWD\" > A/config
                 mkdir -p Bc/objects Bc/refs B && echo 'ref: refs/heads/main' > B/HEAD && echo ../Bc > B/commondir
                 printf '[core]\\n\\tfsmonitor = touch {hit}\\n' > Bc/config
                 git init -q C2 && mkdir C2/.hk && rm -r C2/.git/hooks && ln -s /proc/self/cwd/.hk C2/.git/hooks
                 git init -q D && mkdir -p D/.git/modules/s
                 git -C E.git config core.bare false && git -C E.git config core.worktree \"$PWD\" && git -C E.git config core.fsmonitor 'touch {hit}'
                 git init -q hz && git -C hz symbolic-ref HEAD refs/heads/zz && ln -s /dev/zero hz/.git/refs/heads/zz
                 {GIT} status >/dev/null; echo planted",
                hit = hit.display()
            );
            let o = f.run_sh(api, &[], &script);
            let what = format!("{who:?} {api}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            let err = stderr(&o);
            let line = |p: &str| {
                err.lines()
                    .find(|l| l.contains(&format!("{}/.git:", f.ws().join(p).display())))
                    .map(str::to_string)
            };
            let deep = line("sub/deep").unwrap_or_else(|| panic!("{what}: sub/deep not named: {err}"));
            assert!(
                deep.contains("core.fsmonitor") && deep.contains("hook post-checkout"),
                "{what}: {deep}"
            );
            assert!(line("plain").is_some(), "{what}: plain not named: {err}");
            assert!(
                line("ptr").is_some_and(|l| l.contains("pointer")),
                "{what}: ptr not named: {err}"
            );
            // A bare one (or one whose core.worktree names a work tree).
            let emb = format!("{}:", f.ws().join("emb").display());
            assert!(
                err.lines()
                    .any(|l| l.contains(&emb) && l.contains("core.fsmonitor")),
                "{what}: emb not named: {err}"
            );
            assert!(
                !err.contains(&format!("{}/.git:", f.ws().display())),
                "{what}: the workspace's own repository named: {err}"
            );
            // The warden's last word has come (stderr's end): those holding
            // a program are aside, the plain one in place.
            for (p, held) in [
                ("sub/deep/.git", "sub/deep/.git.qwrap-held"),
                ("ptr/.git", "ptr/.git.qwrap-held"),
                ("emb/HEAD", "emb/HEAD.qwrap-held"),
                ("sym/.git", "sym/.git.qwrap-held"),
                ("bad/.git", "bad/.git.qwrap-held"),
                ("known/.git", "known/.git.qwrap-held"),
                ("A/HEAD", "A/HEAD.qwrap-held"),
                ("B/HEAD", "B/HEAD.qwrap-held"),
                ("C2/.git", "C2/.git.qwrap-held"),
                ("D/.git", "D/.git.qwrap-held"),
                // A ref linked to a device, which host git would read without end.
                ("hz/.git", "hz/.git.qwrap-held"),
            ] {
                assert!(!f.ws().join(p).exists(), "{what}: {p} left in place: {err}");
                assert!(f.ws().join(held).exists(), "{what}: {held} missing: {err}");
            }
            assert!(f.ws().join("plain/.git").is_dir(), "{what}: plain moved");
            // The bare one there from the start kept its HEAD and its config.
            assert!(f.ws().join("E.git/HEAD").is_file(), "{what}: E.git held: {err}");
            let config = std::fs::read_to_string(f.ws().join("E.git/config")).unwrap();
            assert!(
                !config.contains("fsmonitor"),
                "{what}: E.git's config changed: {config}"
            );
            // The repository the command moved is still the user's.
            assert!(f.ws().join("k.old/.git").is_dir(), "{what}: k.old moved");
            assert!(!err.contains("k.old/.git:"), "{what}: k.old named: {err}");
            // Host git in and above them runs nothing planted.
            for d in [
                "sub/deep", "emb", "sym", "bad", "known", "A", "B", "C2", "D", "E.git", "hz", "",
            ] {
                let dir = f.ws().join(d);
                let _ = f.command("git").arg("-C").arg(&dir).arg("status").output();
            }
            assert!(!hit.exists(), "{what}: a host git ran the planted fsmonitor");
        }
    }
}

/// Host git that brings the command's objects in is held to the
/// sandbox's memory: a pack of 4.7 MB whose deltas make `index-pack` hold
/// 2 GiB is refused under `--memory 256M`, and none of its 1 GiB blobs
/// reaches the host's repository.
#[test]
fn importing_objects_made_inside_keeps_the_memory_limit() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let bomb = f.write("bomb.py", include_str!("helpers/delta_bomb_pack.py"), 0o644);
        let script = format!(
            "mkdir -p .git/objects/pack; p=.git/objects/pack/pack-1111111111111111111111111111111111111111; python3 '{}' $p.pack && : > $p.idx; sleep 2; echo made",
            bomb.display()
        );
        let o = f.run_sh("new", &["--memory", "256M"], &script);
        let what = format!("{who:?}");
        if o.status.code() == Some(125) && stderr(&o).contains("cannot be enforced here") {
            println!("SKIP {what}: no memory limit here: {}", stderr(&o));
            continue;
        }
        assert!(stdout(&o).contains("made"), "{what}: {}", stderr(&o));
        assert_eq!(
            objects_of_at_least(&f, 1 << 30),
            0,
            "{what}: blobs of 1 GiB reached the host: {}",
            stderr(&o)
        );
    }
}

/// An import still running two seconds after the command exits is
/// stopped, so that a repository made inside is held then, not once host
/// git is done with a pack of deltas; then it is taken up again, and its
/// objects reach the host all the same.
#[test]
fn an_import_running_at_the_end_does_not_hold_back_the_look() {
    let large = |f: &Fixture| objects_of_at_least(f, 512 << 20);
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let bomb = f.write("bomb.py", include_str!("helpers/delta_bomb_pack.py"), 0o644);
        let hit = f.path().join("fsmonitor-ran");
        let script = format!(
            "git init -q sub && git -C sub config core.fsmonitor 'touch {}'
             mkdir -p .git/objects/pack; p=.git/objects/pack/pack-2222222222222222222222222222222222222222
             python3 '{}' $p.pack 512 && : > $p.idx; sleep 1; echo made",
            hit.display(),
            bomb.display()
        );
        let mut c = f.qwrap(&["run"]);
        c.args(["--", "sh", "-c", &script])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut child = c.spawn().unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
        let what = format!("{who:?}");
        assert!(out.contains("made"), "{what}: {out}");
        let held = f.ws().join("sub/.git.qwrap-held");
        let until = std::time::Instant::now() + Duration::from_secs(120);
        while !held.exists() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(held.exists(), "{what}: the planted repository was not held");
        assert_eq!(
            large(&f),
            0,
            "{what}: the planted repository was held only once the import was done"
        );
        let _ = child.wait();
        while large(&f) < 4 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(large(&f), 4, "{what}: the import was not taken up again");
        assert!(!hit.exists(), "{what}: the planted fsmonitor ran");
    }
}

/// `rm -rf .git/refs` inside: without `refs/` a git dir is none to host
/// git, which went on to the repository around the workspace (the user's
/// next `git commit` landed there), and a repository below the workspace
/// lost that way was removed whole by a host `git clean -fdx`. `refs/`
/// stays, and so do the branch the host's HEAD names (git deletes no
/// branch checked out, nor does a push), loose or packed, its reflog and
/// HEAD's; other branches go, as a push's.
#[test]
fn the_refs_directory_and_the_checked_out_branch_stay_on_the_host() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let around = format!(
            "cd '{}' && git init -q -b around && {GIT} commit -q --allow-empty -m around",
            f.path().display()
        );
        ok(&f.command("sh").args(["-c", &around]).output().unwrap());
        repo(&f);
        let o = f.run_sh("new", &[], "rm -rf .git/refs; sleep 1; echo done");
        assert!(stdout(&o).contains("done"), "{who:?}: {}", stderr(&o));
        let top = stdout(&host(&f, "git rev-parse --show-toplevel"));
        assert_eq!(
            top.trim(),
            f.ws().canonicalize().unwrap().to_str().unwrap(),
            "{who:?}: host git took another repository for the workspace's: {}",
            stderr(&o)
        );
        assert!(
            host(&f, "git rev-parse -q --verify refs/heads/main")
                .status
                .success(),
            "{who:?}: the branch checked out went: {}",
            stderr(&o)
        );
        assert!(
            !host(&f, "git rev-parse -q --verify refs/heads/side")
                .status
                .success(),
            "{who:?}: another branch removed inside stays: {}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains("removed inside"),
            "{who:?}: named: {}",
            stderr(&o)
        );
        // Packed on the host, deleted inside, its reflogs with it: the
        // history stays.
        ok(&host(&f, "git pack-refs --all"));
        let packed = "git update-ref -d refs/heads/main && rm -rf .git/logs; sleep 1; echo done";
        let o = f.run_sh("new", &[], packed);
        assert!(stdout(&o).contains("done"), "{who:?}: {}", stderr(&o));
        assert!(
            host(&f, "git rev-parse -q --verify refs/heads/main")
                .status
                .success(),
            "{who:?}: the branch checked out went through packed-refs: {}",
            stderr(&o)
        );
        assert!(
            f.ws().join(".git/logs/HEAD").is_file(),
            "{who:?}: HEAD's reflog went: {}",
            stderr(&o)
        );
        // `packed-refs` removed whole; the reflogs emptied.
        ok(&host(&f, "git pack-refs --all"));
        let reflog = std::fs::read(f.ws().join(".git/logs/HEAD")).unwrap();
        let o = f.run_sh(
            "new",
            &[],
            "rm -f .git/packed-refs; : > .git/logs/HEAD; sleep 1; echo done",
        );
        assert!(stdout(&o).contains("done"), "{who:?}: {}", stderr(&o));
        assert!(
            host(&f, "git rev-parse -q --verify refs/heads/main")
                .status
                .success(),
            "{who:?}: the branch checked out went with packed-refs: {}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read(f.ws().join(".git/logs/HEAD")).unwrap(),
            reflog,
            "{who:?}: HEAD's reflog was emptied"
        );
    }
}

/// A hook or `info/exclude` the user hard-linked to a tracked file (one
/// file, two names): the command rewrote the tracked name, and the host's
/// next commit ran its hook, or `git status` hid its new file. Every name
/// below the roots of a file host git trusts is read-only, in both
/// isolation modes.
#[test]
fn a_hook_hard_linked_into_the_work_tree_is_read_only() {
    for (who, landlock) in Who::all().into_iter().flat_map(|w| [(w, false), (w, true)]) {
        let f = Fixture::new(who);
        repo(&f);
        let marker = f.path().join("PWNED");
        let setup = "set -e
             mkdir tools && printf '#!/bin/sh\\ntrue\\n' > tools/pre-commit && chmod +x tools/pre-commit
             ln tools/pre-commit .git/hooks/pre-commit
             : > .exclude-shared && rm .git/info/exclude && ln .exclude-shared .git/info/exclude
             mkdir src && echo s > src/s
             git add tools src .exclude-shared && git -c user.name=t -c user.email=t@t commit -qm tools";
        ok(&f.command("sh").args(["-c", setup]).output().unwrap());
        std::thread::sleep(Duration::from_millis(200));
        let script = format!(
            "printf '#!/bin/sh\\ntouch {}\\n' > tools/pre-commit; echo '*' >> .exclude-shared; echo x > src/evil.sh; echo done",
            marker.display()
        );
        let o = if landlock {
            run_landlock(&f, &[], &script)
        } else {
            f.run_sh("new", &[], &script)
        };
        let what = format!("{who:?} landlock={landlock}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        let status = stdout(&host(&f, "git status --porcelain"));
        assert!(
            status.contains("evil.sh"),
            "{what}: host git status hides the new file: {status}"
        );
        let _ = host(
            &f,
            "echo 4 > f && git -c user.name=t -c user.email=t@t commit -qam next",
        );
        assert!(
            !marker.exists(),
            "{what}: the host's commit ran the command's hook"
        );
    }
}

/// A repository made inside that stays: host git takes its index's stat
/// data and its commit-graph on trust. An index whose entry names the old
/// content while its stat data are the edited file's hid the edit from
/// host `git status`; its stat data are dropped at the end (git hashes the
/// file again), and its commit-graph removed.
#[test]
fn a_repository_made_inside_keeps_no_stat_data_or_commit_graph() {
    // The entry's object id put back to HEAD's blob, the trailer made again.
    let forge = r#"import hashlib, subprocess
old = bytes.fromhex(subprocess.check_output(['git', 'rev-parse', 'HEAD:a']).decode().strip())
d = bytearray(open('.git/index', 'rb').read())
d[12 + 40:12 + 60] = old
d = d[:-20] + hashlib.sha1(bytes(d[:-20])).digest()
open('.git/index', 'wb').write(bytes(d))
"#;
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        f.write("forge.py", forge, 0o644);
        let script = format!(
            "set -e; git init -q r && cd r && echo hi > a && git add a && {GIT} commit -qm a
             git commit-graph write --reachable
             echo PAYLOAD > a; sleep 1.1; git add a && python3 '{}'
             test -z \"$(git status --porcelain)\" && echo hidden",
            f.path().join("forge.py").display()
        );
        let o = f.run_sh("new", &[], &script);
        let what = format!("{who:?}");
        assert!(
            stdout(&o).contains("hidden"),
            "{what}: the forgery did not hide the edit: {}",
            stderr(&o)
        );
        let status = stdout(&host(&f, "cd r && git status --porcelain"));
        assert!(
            status.contains(" M a"),
            "{what}: the edit is hidden on the host: {status:?}: {}",
            stderr(&o)
        );
        assert!(
            !f.ws().join("r/.git/objects/info/commit-graph").exists(),
            "{what}: the commit-graph stays"
        );
    }
}

/// Thousands of tags made as the command ends: each is looked at before
/// it reaches the host (its object looked up there), and that had kept a
/// repository planted beside them live 13 s after qwrap returned. The
/// planted one is held aside first; the tags all follow.
#[test]
fn refs_made_at_the_end_do_not_hold_back_the_look() {
    const TAGS: usize = 4000;
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let hit = f.path().join("fsmonitor-ran");
        let script = format!(
            "git init -q sub && git -C sub config core.fsmonitor 'touch {}'
             base=$(git rev-parse HEAD)
             i=1; while [ $i -le {TAGS} ]; do
               printf 'tag t%d\\nfrom %s\\ntagger t <t@t> 1700000000 +0000\\ndata 2\\nt\\n\\n' $i $base; i=$((i+1))
             done | git fast-import --quiet && echo made",
            hit.display()
        );
        // Its stdout alone: the warden holds stderr until its last word.
        let mut c = f.qwrap(&["run"]);
        c.args(["--", "sh", "-c", &script])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut child = c.spawn().unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
        let what = format!("{who:?}");
        assert!(out.contains("made"), "{what}: {out}");
        let held = f.ws().join("sub/.git.qwrap-held");
        let tags = f.ws().join(".git/refs/tags");
        let count = || std::fs::read_dir(&tags).map_or(0, |d| d.count());
        let until = std::time::Instant::now() + Duration::from_secs(120);
        while !held.exists() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let at_held = count();
        assert!(held.exists(), "{what}: the planted repository was not held");
        assert!(
            at_held < TAGS,
            "{what}: the planted repository was held only once every tag had reached the host"
        );
        while count() < TAGS && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(
            count(),
            TAGS,
            "{what}: the tags did not all reach the host (held at {at_held})"
        );
        assert!(!hit.exists(), "{what}: the planted fsmonitor ran");
        let _ = child.wait();
    }
}

/// A repository made inside whose HEAD commit lies at the end of a chain
/// of 40,000 deltas (a pack of a few megabytes, each object's size
/// harmless) with a gitlink to it in the top's index: host `git status` at
/// the top read it for a minute. Host git must read a repository's HEAD
/// commit and tree within the time given, or it is held aside.
#[test]
fn a_head_at_the_end_of_a_delta_chain_is_held_aside() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let chain = f.write("chain.py", include_str!("helpers/delta_chain_pack.py"), 0o644);
        let script = format!(
            "set -e; mkdir lib && cd lib && git init -q && id=$(python3 '{}' .git 40000 4000000)
             echo $id > .git/refs/heads/master && cd .. && git update-index --add --cacheinfo 160000,$id,lib && echo made",
            chain.display()
        );
        let o = f.qwrap(&["run", "--", "sh", "-c", &script]).output().unwrap();
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("made"), "{what}: {}", stderr(&o));
        assert!(
            f.ws().join("lib/.git.qwrap-held").exists() && !f.ws().join("lib/.git").exists(),
            "{what}: the repository stayed live: {}",
            stderr(&o)
        );
        // Host git at the top finds no repository at the gitlink's path.
        let status = f
            .command("timeout")
            .args(["20", "git", "status", "--porcelain"])
            .current_dir(f.ws())
            .output()
            .unwrap();
        assert!(
            status.status.success(),
            "{what}: host git status: {}",
            stderr(&status)
        );
    }
}

/// A pack of 3.5 MB whose trees are cheap to send and dear to read: a
/// chain of 20 trees of 50 MB (each under the bound on one) and 40 small
/// trees, each a delta on a link of it. Reading every tree once rebuilds
/// about 30 GB; the reviewer's version held every host `git status` for
/// minutes. It never reaches the host's objects, said.
#[test]
fn trees_dear_to_read_through_their_deltas_stay_inside() {
    let small = "import hashlib; e = b'100644 s00000000\\0' + bytes.fromhex('e69de29bb2d1d6434b8b29ae775ad8c2e48c5391'); print(hashlib.sha1(b'tree %d\\0' % len(e) + e).hexdigest())";
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let maker = f.write("chain.py", include_str!("helpers/tree_chain_pack.py"), 0o644);
        let id = stdout(&f.command("python3").args(["-c", small]).output().unwrap())
            .trim()
            .to_string();
        let script = format!(
            "set -e; mkdir -p .git/objects/pack; p=.git/objects/pack/pack-3333333333333333333333333333333333333333
             python3 '{}' $p.tmp 50 20 40 && mv $p.tmp $p.pack && : > $p.idx; sleep 1; echo made",
            maker.display()
        );
        let o = f.qwrap(&["run", "--", "sh", "-c", &script]).output().unwrap();
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("made"), "{what}: {}", stderr(&o));
        let there = f
            .command("git")
            .args(["cat-file", "-e", &id])
            .current_dir(f.ws())
            .output()
            .unwrap();
        assert!(
            !there.status.success(),
            "{what}: the trees reached the host's objects: {}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains("through their deltas"),
            "{what}: not said: {}",
            stderr(&o)
        );
    }
}

/// The commits brought to the host in one run are bounded in all: 20
/// commits of 15 MB each (each under the bound on one) would make every
/// host `git status` that counts them read and keep 300 MB (2,001 of 4
/// MB held one for a minute at 8 GB). The branch stays the host's, said.
#[test]
fn the_commits_brought_over_in_a_run_are_bounded_in_all() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let script = format!(
            "set -e; head -c 15000000 /dev/zero | tr '\\0' x > /tmp/msg
             for i in $(seq 20); do {GIT} commit -q --allow-empty -F /tmp/msg; done; sleep 2; echo made"
        );
        let o = f.qwrap(&["run", "--", "sh", "-c", &script]).output().unwrap();
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("made"), "{what}: {}", stderr(&o));
        let count = f
            .command("git")
            .args(["rev-list", "--count", "HEAD"])
            .current_dir(f.ws())
            .output()
            .unwrap();
        // Two of the fixture's, then as many as the bound allows.
        assert!(
            stdout(&count).trim().parse::<u64>().unwrap() < 22,
            "{what}: all {} commits of 15 MB reached the host's branch: {}",
            stdout(&count).trim(),
            stderr(&o)
        );
        assert!(
            stderr(&o).contains("in all"),
            "{what}: the refusal was not said: {}",
            stderr(&o)
        );
    }
}

/// A link made inside leads host git to a repository the command made
/// where it writes outside the roots, in this run or an earlier one: a
/// `--cache shared` cache, the `--cache overlay` layer kept on the host,
/// the `$XDG_CACHE_HOME` of `--isolation landlock`; through a link where
/// the first leads, from a directory below the repository's top, through
/// /proc/self/cwd, past the places qwrap follows; and a link into such a
/// place (a plain repository, nothing yet, another workspace's cache
/// layer), which a later run can fill. Each such link is removed, and
/// host git through every path runs nothing planted. The user's own
/// repository outside the roots, with a hook, linked from the start, stays
/// linked and untouched.
#[test]
fn links_to_repositories_made_outside_the_roots_are_removed() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let hit = f.path().join("fsmonitor-ran");
        let mine = f.mkdir("home/mine");
        ok(&f.command("git").args(["init", "-q"]).arg(&mine).output().unwrap());
        std::fs::write(mine.join(".git/hooks/post-checkout"), "#!/bin/sh\n").unwrap();
        std::os::unix::fs::symlink(&mine, f.ws().join("mine")).unwrap();
        // `--isolation landlock` makes no new name at a repository's top.
        f.mkdir("ws/e");
        std::thread::sleep(Duration::from_millis(200));
        let plant = |dir: &str| {
            format!(
                "git init -q {dir} && git -C {dir} config core.fsmonitor 'touch {}'",
                hit.display()
            )
        };
        let what = format!("{who:?}");
        // A shared cache: a link to the repository, a link to a place that
        // holds a link to one, a link below one's top, a way through
        // /proc/self/cwd that leads there from the home only, a name too
        // long to rename, one among more places than qwrap follows; a new
        // link to the user's own; a plain repository and a link to it, and
        // one to be put in its place in the next run.
        let script = format!(
            "set -e; {}; {}; {}; {}
             ln -s $HOME/.cache/evil1 sub; mkdir -p $HOME/.cache/x; ln -s $HOME/.cache/evil2 $HOME/.cache/x/b
             ln -s $HOME/.cache/x a; mkdir -p $HOME/.cache/evil3/deep/dir; ln -s $HOME/.cache/evil3/deep/dir c
             mkdir -p ~/.cache/only-at-home; ln -s \"/proc/self/cwd/.cache/only-at-home/$(printf '../%.0s' $(seq 40))$HOME/.cache/evil1\" pc
             ln -s $HOME/.cache/evil1 $(printf 'n%.0s' $(seq 250))
             for i in $(seq 1 70); do mkdir -p $HOME/.cache/m$i; ln -s $HOME/.cache/m$i l$i; done; ln -s $HOME/.cache/evil1 zz
             git init -q $HOME/.cache/plain; ln -s $HOME/.cache/plain g
             ln -s $HOME/.cache/not-yet dang; ln -s $HOME/.local/state/qwrap/caches/ws-0123456789abcdef/0/%home/upper/.cache/q lay
             ln -s {} mine2; echo planted",
            plant("$HOME/.cache/evil1"),
            plant("$HOME/.cache/evil2"),
            plant("$HOME/.cache/evil3"),
            plant("$HOME/.cache/evil6"),
            mine.display()
        );
        let o = f.run_sh("new", &["--cache", "shared"], &script);
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        // The next run puts the planted one where the link there leads.
        let o = f.run_sh(
            "new",
            &["--cache", "shared"],
            "mv $HOME/.cache/plain $HOME/.cache/plain.old && mv $HOME/.cache/evil6 $HOME/.cache/plain; echo planted",
        );
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        // The overlay's layer: the repository made in one run, the link in
        // the next, to where the layer lies on the host.
        let o = f.run_sh(
            "new",
            &[],
            &format!("{}; echo planted", plant("$HOME/.cache/evil4")),
        );
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        let layer = std::fs::read_dir(f.home().join(".local/state/qwrap/caches"))
            .unwrap()
            .flatten()
            .map(|e| e.path().join("0/%home/upper/.cache/evil4"))
            .find(|p| p.join(".git").is_dir())
            .unwrap_or_else(|| panic!("{what}: no layer holds evil4"));
        let o = f.run_sh("new", &[], &format!("ln -s {} d; echo planted", layer.display()));
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        // `--isolation landlock`'s own cache directory.
        let o = run_landlock(
            &f,
            &[],
            &format!(
                "{}; ln -s $XDG_CACHE_HOME/evil5 e/l; echo planted",
                plant("$XDG_CACHE_HOME/evil5")
            ),
        );
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        let long = "n".repeat(250);
        for link in [
            "sub", "a", "c", "d", "mine2", "e/l", "pc", "zz", "g", "dang", "lay", &long,
        ] {
            let p = f.ws().join(link);
            assert!(
                std::fs::symlink_metadata(&p).is_err(),
                "{what}: {link} left in place: {}",
                stderr(&o)
            );
        }
        // Host git through each way the links led (from the home, where
        // /proc/self/cwd leads on), and in the user's own.
        for d in [
            "sub", "a/b", "c", "d", "mine2", "e/l", "pc", "zz", "g", &long, "mine",
        ] {
            let script = format!(
                "cd {} && cd {}/{d} && git status",
                f.home().display(),
                f.ws().display()
            );
            let _ = f.command("sh").args(["-c", &script]).output();
        }
        assert!(!hit.exists(), "{what}: a host git ran the planted fsmonitor");
        assert!(
            f.ws().join("mine").is_symlink(),
            "{what}: the user's own link moved"
        );
        assert!(
            mine.join(".git/hooks/post-checkout").is_file(),
            "{what}: the user's repository changed"
        );
    }
}

/// Repositories made where the walk at the start does not look (in
/// `node_modules`, five levels down) are held aside at exit all the same;
/// the user's own there, with a hook of its own and untouched by the
/// command, stays in place.
#[test]
fn repositories_made_deep_or_in_dependency_trees_are_held_too() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let own = f.ws().join("node_modules/dep");
        ok(&f.command("git").args(["init", "-q"]).arg(&own).output().unwrap());
        std::fs::write(own.join(".git/hooks/post-checkout"), "#!/bin/sh\n").unwrap();
        // The start's time is taken to the kernel's coarse tick.
        std::thread::sleep(Duration::from_millis(200));
        let hit = f.path().join("fsmonitor-ran");
        // Also: a bare one whose refs is an executable file (git's test is
        // access(X_OK)), and one in a directory its owner made unreadable
        // (mode 0311: a path through it still leads host git there).
        let script = format!(
            "for p in node_modules/pkg a/b/c/d/e target/x/y hid/in/r; do git init -q $p && git -C $p config core.fsmonitor 'touch {hit}'; done
             git init -q --bare ev && git -C ev config core.bare false && git -C ev config core.worktree .. && git -C ev config core.fsmonitor 'touch {hit}'
             rm -rf ev/refs && : > ev/refs && chmod +x ev/refs; chmod 311 hid
             git init -q z/p000/sub && git -C z/p000/sub config core.fsmonitor 'touch {hit}' && chmod 000 z/p000
             git init -q nest && git -C nest config core.fsmonitor 'touch {hit}' && git init -q --bare nest/.git/modules/x
             git -C nest/.git/modules/x config core.bare false && git -C nest/.git/modules/x config core.worktree ../../..
             git -C nest/.git/modules/x config core.fsmonitor 'touch {hit}'
             for i in '' -2 -3 -4 -5 -6 -7 -8 -9; do : > nest/.git/HEAD.qwrap-held$i; done
             git init -q inner && git init -q inner/.git/objects && git -C inner/.git/objects config core.fsmonitor 'touch {hit}'
             git init -q ro && git -C ro config core.fsmonitor 'touch {hit}' && chmod 555 ro/.git ro
             git clone -q inner/.git/objects cl 2>/dev/null || git init -q cl; echo planted",
            hit = hit.display()
        );
        let o = f.run_sh("new", &[], &script);
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        for p in ["node_modules/pkg", "a/b/c/d/e", "target/x/y", "hid/in/r"] {
            let d = f.ws().join(p);
            assert!(
                !d.join(".git").exists(),
                "{what}: {p}/.git left in place: {}",
                stderr(&o)
            );
            assert!(
                d.join(".git.qwrap-held").exists(),
                "{what}: {p} not held: {}",
                stderr(&o)
            );
            let _ = f.command("git").arg("-C").arg(&d).arg("status").output();
            // Inside the held one too: git looks at the directory it is in first.
            let _ = f
                .command("git")
                .arg("-C")
                .arg(d.join(".git.qwrap-held"))
                .arg("status")
                .output();
        }
        // The owner opens what it made unreadable, and git runs there.
        let p000 = f.ws().join("z/p000");
        let mode = std::fs::metadata(&p000).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0, "{what}: the directory's mode was not given back");
        ok(&f.command("chmod").arg("755").arg(&p000).output().unwrap());
        for d in [p000.join("sub"), p000.join("sub/.git.qwrap-held")] {
            let _ = f.command("git").arg("-C").arg(&d).arg("status").output();
        }
        // A git dir inside a plain one; one its owner made unwritable; a
        // plain clone stays where it is.
        for d in [
            "inner",
            "inner/.git.qwrap-held/objects",
            "ro",
            "ro/.git.qwrap-held",
        ] {
            let _ = f
                .command("git")
                .arg("-C")
                .arg(f.ws().join(d))
                .arg("status")
                .output();
        }
        assert!(
            f.ws().join("ro/.git.qwrap-held").exists(),
            "{what}: ro: {}",
            stderr(&o)
        );
        assert!(
            f.ws().join("cl/.git/HEAD").exists(),
            "{what}: a clone was held: {}",
            stderr(&o)
        );
        // A git dir inside a held one, and names taken in advance.
        let nest = f.ws().join("nest/.git.qwrap-held");
        assert!(
            nest.is_dir() && !nest.join("HEAD").exists(),
            "{what}: nest: {}",
            stderr(&o)
        );
        for d in [nest.clone(), nest.join("modules/x"), nest.join("modules")] {
            let _ = f.command("git").arg("-C").arg(&d).arg("status").output();
        }
        let ev = f.ws().join("ev");
        assert!(
            !ev.join("HEAD").exists() && ev.join("HEAD.qwrap-held").exists(),
            "{what}: ev: {}",
            stderr(&o)
        );
        let _ = f.command("git").arg("-C").arg(&ev).arg("status").output();
        let mode = std::fs::metadata(f.ws().join("hid"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(mode, 0o311, "{what}: the directory's mode was not given back");
        assert!(!hit.exists(), "{what}: a host git ran the planted fsmonitor");
        assert!(
            own.join(".git/hooks/post-checkout").exists(),
            "{what}: the user's own repository was moved"
        );
    }
}

/// A repository made inside whose index names a path outside its work
/// tree (or in the top repository's `.git`), or that stopped a rebase
/// half-way with an `exec` line to come, is held aside: host `git
/// restore .` writes nothing, `--continue` runs nothing. So is one 300
/// levels deep, and one whose `.git` its owner made unlistable (0311:
/// git still opens a HEAD there). As root and as a user.
#[test]
fn repositories_made_inside_with_a_forged_index_or_state_are_held() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let hit = f.path().join("ran");
        let deep = "d/".repeat(300);
        // Index entries renamed in place, then its checksum made again,
        // as a forger would: `xx/-git/...` is `../.git/...`.
        let script = format!(
            "set -e
             git init -q V && cd V && echo a > a && git add a && {GIT} commit -qm a
             h=$(printf '#!/bin/sh\\ntouch {hit}\\n' | git hash-object -w --stdin)
             git update-index --add --cacheinfo 100755,$h,xx/-git/hooks/pre-commit
             git update-index --add --cacheinfo 100644,$h,xx/xx/outside-x
             perl -pi -e 's{{xx/-git/}}{{../.git/}}; s{{xx/xx/outside-x}}{{../../outside-x}}' .git/index
             python3 -c 'import hashlib; p=\".git/index\"; d=open(p,\"rb\").read()[:-20]; open(p,\"wb\").write(d+hashlib.sha1(d).digest())'
             cd .. && git init -q S && cd S && echo 1 > f && git add f && {GIT} commit -qm 1 && echo 2 > f && {GIT} commit -qam 2
             printf '#!/bin/sh\\nprintf \"break\\\\nexec touch {hit}\\\\n\" > \"$1\"\\n' > ../ed.sh && chmod +x ../ed.sh
             GIT_SEQUENCE_EDITOR=../ed.sh {GIT} rebase -q -i HEAD~1 2>/dev/null || true
             test -d .git/rebase-merge
             cd .. && mkdir -p {deep} && git init -q {deep}deep && git -C {deep}deep config core.fsmonitor 'touch {hit}'
             git init -q P && git -C P config core.worktree .. && git -C P config core.fsmonitor 'touch {hit}' && chmod 311 P/.git
             echo planted",
            hit = hit.display()
        );
        let o = f.run_sh("new", &[], &script);
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        for d in ["V", "S", "P", &format!("{deep}deep")] {
            assert!(
                f.ws().join(d).join(".git.qwrap-held").exists(),
                "{what}: {} not held: {}",
                &d[..d.len().min(20)],
                stderr(&o)
            );
        }
        host(
            &f,
            &format!(
                "cd V; {GIT} restore . ; {GIT} checkout -- . ; cd ../S; {GIT} rebase --continue; cd ..; {GIT} commit -q --allow-empty -m h; true"
            ),
        );
        host(
            &f,
            &format!("git -C {deep}deep status; git -C P/.git.qwrap-held status; true"),
        );
        assert!(!hit.exists(), "{what}: a host git ran what the command planted");
        assert!(
            !f.ws().join(".git/hooks/pre-commit").exists(),
            "{what}: a hook was written"
        );
        assert!(
            !f.path().join("outside-x").exists(),
            "{what}: a file outside was written"
        );
        let mode = std::fs::metadata(f.ws().join("P/.git.qwrap-held"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(mode, 0o311, "{what}: the git dir's mode was not given back");
        assert!(!stderr(&o).contains("failed"), "{what}: {}", stderr(&o));
    }
}

/// A repository made inside whose HEAD commit inflates to 300 MiB from a
/// few hundred kB, reached through a gitlink in the top index: held
/// aside, so a host `git status` at the top stays within 250 MB. And the
/// line names the HEAD's held name where the usual one was taken.
#[test]
fn a_repository_made_inside_whose_objects_inflate_hugely_is_held() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let script = String::from(
            "set -e; git init -q n && cd n && t=$(git write-tree)
             { printf 'tree %s\\nauthor a <a@a> 0 +0000\\ncommitter a <a@a> 0 +0000\\n\\n' $t; head -c 314572800 /dev/zero | tr '\\0' A; } > /tmp/c
             git update-ref HEAD $(git hash-object -t commit -w /tmp/c) && rm /tmp/c
             cd .. && git add n
             git init -q d && git -C d config core.fsmonitor true && : > d/.git/HEAD.qwrap-held
             echo planted"
        );
        let o = f.run_sh("new", &[], &script);
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        let h = host(
            &f,
            "ulimit -v 250000; git status --porcelain >/dev/null && echo status-ok",
        );
        assert!(stdout(&h).contains("status-ok"), "{what}: {}", stderr(&h));
        assert!(
            f.ws().join("n/.git.qwrap-held").exists(),
            "{what}: not held: {}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains("its HEAD renamed HEAD.qwrap-held-2 in it"),
            "{what}: {}",
            stderr(&o)
        );
    }
}

/// A stopped `git am` whose `apply-opt` gives `git apply`
/// `--build-fake-ancestor=FILE`: a host `git am --continue` wrote FILE
/// (any file the user can write, outside the work tree). The option file
/// does not reach the host; nothing is written outside.
#[test]
fn an_am_session_stopped_inside_writes_nothing_outside() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let target = f.write("clobbered", "precious\n", 0o644);
        // The second patch rewritten to apply to the staged resolution.
        let am = format!(
            r#"set -e; export GIT_AUTHOR_NAME=x GIT_AUTHOR_EMAIL=x@y GIT_COMMITTER_NAME=x GIT_COMMITTER_EMAIL=x@y
echo base > f; git commit -qam base; B=$(git rev-parse HEAD)
echo theirs > f; git commit -qam theirs; git format-patch -1 --stdout > /tmp/p1
echo two > f; git commit -qam two; git format-patch -1 --stdout > /tmp/p2
git reset -q --hard $B; echo ours > f; git commit -qam ours
git am /tmp/p1 /tmp/p2 >/dev/null 2>&1 || true
echo resolved > f; git add f; OLD=$(git hash-object f | cut -c1-7)
printf 'From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nFrom: x <x@y>\nDate: Sat, 5 Dec 2026 15:54:27 +0000\nSubject: [PATCH] follow-up\n\n---\ndiff --git a/f b/f\nindex %s..0000000 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-resolved\n+after\n-- \n2.47.3\n' $OLD > .git/rebase-apply/0002
printf "'%s'" '--build-fake-ancestor={t}' > .git/rebase-apply/apply-opt
sleep 0.5; echo planted
"#,
            t = target.display()
        );
        std::fs::write(f.path().join("am.sh"), am).unwrap();
        let script = format!("sh {}", f.path().join("am.sh").display());
        let o = f.run_sh("new", &[], &script);
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        host(&f, &format!("{GIT} am --continue; {GIT} am --skip; true"));
        assert_eq!(
            std::fs::read(&target).unwrap(),
            b"precious\n",
            "{what}: a file outside was written: {}",
            stderr(&o)
        );
    }
}

/// State files whose content host git passes on as a revision: a
/// `:/regex` with back-references in `BISECT_START` and in a rebase's
/// `autostash` kept a host `git bisect reset` and `git rebase --abort`
/// at full CPU without end, and an escape sequence there was printed by
/// host `git status`. None reaches the host: both end at once.
#[test]
fn revisions_in_state_files_are_object_ids_or_branches() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let script = format!(
            "set -e; {GIT} commit -q --allow-empty -m \"$(printf 'a%.0s' $(seq 60))\"
             {GIT} bisect start HEAD HEAD~1 >/dev/null
             printf ':/(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)\\\\1\\\\2\\\\3\\\\4\\\\5\\\\6\\\\7\\\\8Z\\n' > .git/BISECT_START
             printf 'bisect \\033[8mhidden\\n' > .git/BISECT_LOG
             sleep 0.5; echo planted"
        );
        let o = f.run_sh("new", &[], &script);
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        let started = std::time::Instant::now();
        let h = host(
            &f,
            "git status; git bisect log; git bisect reset; echo reset-done",
        );
        assert!(
            started.elapsed() < Duration::from_secs(10) && stdout(&h).contains("reset-done"),
            "{what}: host git took {:?}: {}",
            started.elapsed(),
            stderr(&h)
        );
        assert!(
            !stdout(&h).contains('\u{1b}'),
            "{what}: an escape reached the terminal"
        );
        // A rebase stopped on a conflict, its autostash a regex.
        let script = format!(
            "set -e; echo dirty >> Makefile; {GIT} checkout -q side 2>/dev/null || {GIT} checkout -q -f side
             echo x >> Makefile; {GIT} rebase --autostash main >/dev/null 2>&1 || true
             test -d .git/rebase-merge
             printf ':/(.*)(.*)(.*)(.*)(.*)(.*)(.*)(.*)\\\\1\\\\2\\\\3\\\\4\\\\5\\\\6\\\\7\\\\8Z\\n' > .git/rebase-merge/autostash
             sleep 0.5; echo planted"
        );
        let o = f.run_sh("new", &[], &script);
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        let started = std::time::Instant::now();
        host(&f, &format!("{GIT} rebase --abort; true"));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{what}: host git rebase --abort took {:?}",
            started.elapsed()
        );
        // A line of `done` that host `git status` resolves, and a reflog
        // message with an escape sequence.
        let script = format!(
            "set -e; {GIT} checkout -q main; g=.git; H=$(git rev-parse HEAD); P=$(git rev-parse HEAD~1)
             mkdir -p $g/rebase-merge; echo refs/heads/main > $g/rebase-merge/head-name
             echo $P > $g/rebase-merge/onto; echo $H > $g/rebase-merge/orig-head; : > $g/rebase-merge/interactive
             printf 'pick %s\\n' $H > $g/rebase-merge/git-rebase-todo
             printf 'pick %s\\n' ':/(a*)*(a*)*(a*)*(a*)*\\\\4\\\\3\\\\2\\\\1x' > $g/rebase-merge/done
             printf '%s %s a <a@b> 1 +0000\\tcommit: \\033[2J\\n' $H $H >> $g/logs/HEAD
             sleep 0.5; echo planted"
        );
        let o = f.run_sh("new", &[], &script);
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        let started = std::time::Instant::now();
        let h = host(&f, "git status; git --no-pager reflog; echo status-done");
        assert!(
            started.elapsed() < Duration::from_secs(10) && stdout(&h).contains("status-done"),
            "{what}: host git status took {:?}",
            started.elapsed()
        );
        assert!(
            !stdout(&h).contains('\u{1b}'),
            "{what}: an escape reached the terminal"
        );
        // A branch whose name holds a C1 control (CSI, in UTF-8).
        let o = f.run_sh(
            "new",
            &[],
            "git checkout -q -b \"$(printf 'main\\302\\2331A')\" && sleep 0.5 && echo planted",
        );
        assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
        let h = host(&f, "git branch; git status");
        assert!(
            !stdout(&h).contains('\u{9b}'),
            "{what}: a C1 control reached the terminal"
        );
    }
}

/// With `--keep-background`, a repository a leftover makes after the
/// command's exit is held aside when the last process has ended.
#[test]
fn a_repository_a_leftover_makes_is_held_too() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let hit = f.path().join("ran");
        let script = format!(
            "(setsid sh -c 'sleep 1; git init -q late && git -C late config core.fsmonitor \"touch {hit}\"' >/dev/null 2>&1 &); echo started",
            hit = hit.display()
        );
        let o = f.run_sh("new", &["--keep-background"], &script);
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("started"), "{what}: {}", stderr(&o));
        let held = f.ws().join("late/.git.qwrap-held");
        // The warden's end waits for the last process to be reaped, by a
        // PID 1 that may take its time on a loaded machine.
        let until = std::time::Instant::now() + Duration::from_secs(60);
        while !held.exists() && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = host(&f, "git -C late status; true");
        assert!(held.exists(), "{what}: the leftover's repository was not held");
        assert!(!hit.exists(), "{what}: a host git ran the leftover's fsmonitor");
    }
}

/// A commit whose message inflates to 20 MiB from a few kB, loose or in a
/// pack, never reaches the host's objects, and the ref naming it neither:
/// host git would read it whole at every `git status`.
#[test]
fn an_object_too_large_to_read_whole_stays_inside() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let script = format!(
            "set -e; t=$(git write-tree)
             for m in A B; do {{ printf 'tree %s\\nauthor a <a@a> 0 +0000\\ncommitter a <a@a> 0 +0000\\n\\n' $t; head -c 20971520 /dev/zero | tr '\\0' $m; }} > /tmp/c$m; done
             a=$(git hash-object -t commit -w /tmp/cA); git update-ref refs/heads/bombA $a
             mkdir -p .git/objects/pack .git/objects/o; b=$(GIT_OBJECT_DIRECTORY=$PWD/.git/objects/o git hash-object -t commit -w /tmp/cB)
             echo $b | GIT_OBJECT_DIRECTORY=$PWD/.git/objects/o GIT_ALTERNATE_OBJECT_DIRECTORIES=$PWD/.git/objects git pack-objects -q .git/objects/pack/pack >/dev/null
             git update-ref refs/heads/bombB $b
             {GIT} commit -q --allow-empty -m fine
             sleep 1; echo $a $b"
        );
        let o = f.run_sh("new", &[], &script);
        let what = format!("{who:?}");
        let ids = stdout(&o);
        let ids: Vec<&str> = ids.split_whitespace().collect();
        assert_eq!(ids.len(), 2, "{what}: {}", stderr(&o));
        for id in ids {
            let h = host(&f, &format!("git cat-file -e {id} && echo present"));
            assert!(!stdout(&h).contains("present"), "{what}: {id} reached the host");
        }
        let h = host(
            &f,
            "git for-each-ref --format='%(refname)' refs/heads; git log -1 --format=%s main",
        );
        assert!(!stdout(&h).contains("bomb"), "{what}: {}", stdout(&h));
        assert!(
            stdout(&h).contains("fine"),
            "{what}: the next commit did not arrive: {}",
            stderr(&o)
        );
    }
}

/// A 400 MiB `COMMIT_EDITMSG` written inside reaches the host whole,
/// copied through a fixed buffer: the warden's peak memory stays far below
/// it. (A file host git shows or passes on, such as `MERGE_MSG`, is read
/// whole to be vetted, up to 256 MiB.)
#[test]
fn a_large_file_copies_in_a_fixed_buffer() {
    let f = Fixture::new(Who::User);
    repo(&f);
    let script = "head -c 400000000 /dev/zero | tr '\\0' x > $(git rev-parse --git-dir)/COMMIT_EDITMSG
         sleep 2; for p in $(pgrep -x qwrap); do grep VmHWM /proc/$p/status; done; echo planted";
    let o = f.run_sh("new", &[], script);
    assert!(stdout(&o).contains("planted"), "{}", stderr(&o));
    let size = std::fs::metadata(f.ws().join(".git/COMMIT_EDITMSG"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert_eq!(size, 400_000_000, "the copy reached the host whole");
    // The warden (outside) is found from the host: its high-water mark.
    let peak: u64 = stdout(&o)
        .lines()
        .filter_map(|l| l.strip_prefix("VmHWM:"))
        .filter_map(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .max()
        .unwrap_or(0);
    assert!(peak > 0, "no qwrap process's peak read: {}", stdout(&o));
    assert!(peak < 64 * 1024, "a qwrap process peaked at {peak} kB");
}

/// The same routes through a linked worktree's and a submodule's git dirs:
/// links in their `logs/` and `refs/` (and the common dir's), and an index
/// whose entry names the main repository's hooks from there.
#[test]
fn a_worktree_and_a_submodule_are_remotes_too() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repo(&f);
            let setup = format!(
                "set -e; cd ..; {GIT} init -q -b main libsrc && cd libsrc && {GIT} commit -q --allow-empty -m l && cd ../ws
                 {GIT} -c protocol.file.allow=always submodule -q add ../libsrc lib && {GIT} commit -qm sub
                 {GIT} worktree add -q ../wt -b wtb"
            );
            ok(&f.command("sh").args(["-c", &setup]).output().unwrap());
            let marker = f.path().join("PWNED");
            let rc = f.write("rc", "# rc\n", 0o644);
            for (name, dir, forged) in [
                ("worktree", f.path().join("wt"), "../ws/.git/hooks/post-commit"),
                ("submodule", f.ws().join("lib"), "../.git/hooks/post-commit"),
            ] {
                let fake = forged.replace("..", "-.").replace(".git", "-git");
                let script = format!(
                    "g=$(git rev-parse --git-dir); c=$(git rev-parse --git-common-dir)
                     for d in $g $c; do ln -sfn '{rc}' $d/logs/HEAD; ln -sfn /dev/zero $d/refs/heads/zero; done
                     blob=$(printf '#!/bin/sh\\ntouch {m}\\n' | git hash-object -w --stdin)
                     git update-index --add --cacheinfo 100755,$blob,{fake}
                     perl -pi -e 's{{\\Q{fake}\\E}}{{{forged}}}' $g/index
                     sleep 0.5; echo planted",
                    rc = rc.display(),
                    m = marker.display()
                );
                let o = f
                    .qwrap(&["run", "--workspace"])
                    .arg(&dir)
                    .args(["--", "sh", "-c", &script])
                    .current_dir(&dir)
                    .env("QWRAP_MOUNT_API", api)
                    .output()
                    .unwrap();
                let what = format!("{who:?} {api} {name}");
                assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
                assert_eq!(odd_entries(&f.ws().join(".git")), Vec::<String>::new(), "{what}");
                let h = f
                    .command("timeout")
                    .args(["20", "sh", "-c", &format!("{GIT} checkout -- . ; {GIT} commit -q --allow-empty -m h; {GIT} log -1 --format=%s")])
                    .current_dir(&dir)
                    .output()
                    .unwrap();
                assert!(stdout(&h).contains('h'), "{what}: host git: {}", stderr(&h));
                assert!(!marker.exists(), "{what}: a hook from the index ran on the host");
                assert!(
                    !f.ws().join(".git/hooks/post-commit").exists(),
                    "{what}: hook written"
                );
                assert_eq!(
                    std::fs::read_to_string(&rc).unwrap(),
                    "# rc\n",
                    "{what}: rc written"
                );
            }
        }
    }
}

/// rerere's record naming files outside the work tree (a host commit
/// would copy a secret into `rr-cache/`, or write a recorded "resolution"
/// over a start-up file), a todo's `exec` line after a tab, and a merge
/// strategy on the `[options]` line itself: none reaches the host.
#[test]
fn state_files_reaching_outside_never_reach_the_host() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let secret = f.write("secret.txt", "SECRET-CANARY\n", 0o644);
        let target = f.write("target-rc", "# rc\n", 0o644);
        let marker = f.path().join("PWNED");
        let script = format!(
            "g=$(git rev-parse --git-dir)
             H=0123456789abcdef0123456789abcdef01234567; mkdir -p $g/rr-cache/$H
             H2=89abcdef0123456789abcdef0123456789abcdef; D=$g/rr-cache/$H2; mkdir -p $D
             cp '{target}' $D/preimage; {{ cat '{target}'; echo 'touch {m}'; }} > $D/postimage
             printf '%s\\t%s\\0%s.-1\\t%s\\0' $H '{secret}' $H2 '{target}' > $g/MERGE_RR
             sleep 0.5; echo planted",
            secret = secret.display(),
            target = target.display(),
            m = marker.display()
        );
        let o = f.run_sh("new", &[], &script);
        assert!(stdout(&o).contains("planted"), "{who:?}: {}", stderr(&o));
        host(&f, &format!("echo x >> f; {GIT} commit -qam x; true"));
        let o = f
            .command("grep")
            .args(["-r", "SECRET-CANARY"])
            .arg(f.ws().join(".git"))
            .output()
            .unwrap();
        assert!(
            stdout(&o).is_empty(),
            "{who:?}: the secret was copied in: {}",
            stdout(&o)
        );
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "# rc\n",
            "{who:?}: written outside"
        );
        // A todo's exec line after a tab; a strategy on the [options] line.
        let script = format!(
            "g=$(git rev-parse --git-dir)
             GIT_SEQUENCE_EDITOR='sed -i 1ibreak' {GIT} rebase -qi HEAD~1 >/dev/null 2>&1
             printf 'x\\ttouch {m}\\n' >> $g/rebase-merge/git-rebase-todo; sleep 0.5; echo planted",
            m = marker.display()
        );
        let o = f.run_sh("new", &[], &script);
        assert!(stdout(&o).contains("planted"), "{who:?}: {}", stderr(&o));
        host(
            &f,
            &format!("{GIT} rebase --continue; {GIT} rebase --abort; true"),
        );
        assert!(
            !marker.exists(),
            "{who:?}: an exec line after a tab ran on the host"
        );
        let script = format!(
            "g=$(git rev-parse --git-dir)
             {GIT} cherry-pick side~1 side >/dev/null 2>&1; printf '[options] strategy = x/run\\n' >> $g/sequencer/opts
             mkdir -p git-merge-x; printf '#!/bin/sh\\ntouch {m}\\n' > git-merge-x/run; chmod +x git-merge-x/run
             sleep 0.5; echo planted",
            m = marker.display()
        );
        let o = f.run_sh("new", &[], &script);
        assert!(stdout(&o).contains("planted"), "{who:?}: {}", stderr(&o));
        host(
            &f,
            &format!("echo 2 > f; {GIT} add f; GIT_EDITOR=true {GIT} cherry-pick --continue; true"),
        );
        assert!(
            !marker.exists(),
            "{who:?}: the strategy on the [options] line ran on the host"
        );
    }
}

/// A submodule the checkout has not initialised (its directory empty):
/// a repository planted there would be one host `git status` recurses
/// into. Its directory is read-only inside.
#[test]
fn an_uninitialised_submodule_takes_no_planted_repository() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let setup = format!(
            "set -e; {GIT} init -q -b main libsrc && cd libsrc && {GIT} commit -q --allow-empty -m l && cd ..
             {GIT} init -q -b main sup && cd sup && {GIT} commit -q --allow-empty -m a
             {GIT} -c protocol.file.allow=always submodule -q add ../libsrc lib && {GIT} commit -qm sub && cd ..
             rm -rf ws && {GIT} clone -q sup ws"
        );
        ok(&f
            .command("sh")
            .current_dir(f.path())
            .args(["-c", &setup])
            .output()
            .unwrap());
        let marker = f.path().join("PWNED");
        let script = format!(
            "cd lib && git init -q 2>&1; git config core.fsmonitor 'touch {m}; false' 2>&1; echo planted",
            m = marker.display()
        );
        let o = f.run_sh("new", &[], &script);
        assert!(stdout(&o).contains("planted"), "{who:?}: {}", stderr(&o));
        assert!(
            !f.ws().join("lib/.git").exists(),
            "{who:?}: a repository was planted"
        );
        host(&f, &format!("{GIT} status >/dev/null; true"));
        assert!(!marker.exists(), "{who:?}: the planted fsmonitor ran on the host");
    }
}

/// A FIFO named `.gitignore` in the work tree would make host git wait:
/// Landlock lets FIFOs be made only where nothing of the host's reads
/// later (the private /tmp, /dev). As root and unprivileged, both mount
/// APIs; the host's `git status` finishes.
#[test]
fn no_fifo_in_the_work_tree() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            repo(&f);
            let script = "mkdir -p docs; mkfifo docs/.gitignore 2>&1; mkfifo .gitattributes 2>&1; \
                 mkfifo /tmp/ok && echo tmp-fifo-ok; echo planted";
            let o = f.run_sh(api, &[], script);
            let what = format!("{who:?} {api}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            assert!(
                stdout(&o).contains("tmp-fifo-ok"),
                "{what}: FIFOs in /tmp: {}",
                stdout(&o)
            );
            assert_eq!(
                odd_entries(&f.ws()),
                Vec::<String>::new(),
                "{what}: a FIFO in the work tree"
            );
            let h = host(&f, &format!("{GIT} status --porcelain && echo host-ok"));
            assert!(stdout(&h).contains("host-ok"), "{what}: host git: {}", stderr(&h));
        }
    }
}

/// No FIFO in the workspace in the modes where a rule granting FIFOs
/// could hold above it: `--isolation landlock` (its write grant), a
/// workspace in /tmp (the private /tmp's grant holds beneath it) and one in
/// the home with `--home overlay`. FIFOs stay where nothing of the host's
/// reads them: the command's own temporary directory.
#[test]
fn no_fifo_in_a_workspace_below_a_fifo_grant() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let in_tmp = tempfile::Builder::new()
            .prefix("qwrap-fifo-")
            .tempdir_in("/tmp")
            .unwrap();
        let in_home = f.home().join("src/app");
        std::fs::create_dir_all(&in_home).unwrap();
        for d in [in_tmp.path(), &in_home] {
            if who == Who::User {
                rustix::fs::chown(
                    d,
                    Some(rustix::fs::Uid::from_raw(USER_UID)),
                    Some(rustix::fs::Gid::from_raw(USER_GID)),
                )
                .unwrap();
            }
        }
        let ws = f.ws();
        let script =
            "mkfifo .gitignore 2>/dev/null; mkfifo \"${TMPDIR:-/tmp}/ok\" && echo tmp-fifo-ok; echo ran";
        for (dir, opts) in [
            (ws.as_path(), &["--isolation", "landlock"][..]),
            (in_tmp.path(), &[][..]),
            (in_home.as_path(), &["--home", "overlay"][..]),
        ] {
            let mut c = f.qwrap(&["run"]);
            c.args(opts)
                .args(["--", "sh", "-c", script])
                .current_dir(dir)
                .env_remove("QWRAP_PID");
            let o = c.output().unwrap();
            let what = format!("{who:?} {opts:?} {}", dir.display());
            assert!(stdout(&o).contains("ran"), "{what}: {}", stderr(&o));
            assert_eq!(
                odd_entries(dir),
                Vec::<String>::new(),
                "{what}: a FIFO in the workspace"
            );
            if opts.contains(&"landlock") {
                assert!(
                    stdout(&o).contains("tmp-fifo-ok"),
                    "{what}: its TMPDIR: {}",
                    stdout(&o)
                );
            }
        }
    }
}

/// An index whose entry for an edited file keeps the file's new stat
/// data beside the old object id: host git would trust the stat data and
/// show nothing. The stat data the command chose is zeroed on the way, and
/// host `git status` compares the content.
#[test]
fn stat_data_chosen_inside_hides_nothing() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let script = "set -e; g=$(git rev-parse --git-dir); OLD=$(git rev-parse HEAD:Makefile)
             printf 'all:\\n\\ttouch evil\\n' > Makefile; sleep 1.2; git add Makefile; NEW=$(git rev-parse :Makefile)
             perl -0777 -pi -e 'BEGIN { $n = pack(\"H*\", shift); $o = pack(\"H*\", shift) } s/\\Q$n\\E/$o/' $NEW $OLD $g/index
             git status --porcelain; sleep 0.5; echo planted";
        let o = f.run_sh("new", &[], script);
        assert!(stdout(&o).contains("planted"), "{who:?}: {}", stderr(&o));
        assert!(
            !stdout(&o).contains("Makefile"),
            "{who:?}: the forgery did not hide the edit inside: {}",
            stdout(&o)
        );
        let h = host(&f, &format!("{GIT} status --porcelain"));
        assert!(
            stdout(&h).contains("M Makefile"),
            "{who:?}: the edit is hidden: {}",
            stdout(&h)
        );
    }
}

/// An index whose cache-tree names a planted tree for a directory (its
/// entries and stat data the host's own, so `git status` shows nothing):
/// the user's next host commit does not carry the planted file.
#[test]
fn a_forged_cache_tree_never_reaches_a_host_commit() {
    const FORGE: &str = include_str!("helpers/forge_cache_tree.py");
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let forge = f.write("forge.py", FORGE, 0o644);
        ok(&host(
            &f,
            &format!("mkdir sub && echo s > sub/s && {GIT} add sub && {GIT} commit -qm sub"),
        ));
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let script = format!(
            "set -e; b=$(printf 'planted\\n' | git hash-object -w --stdin)
             st=$(printf '100644 blob %s\\ts\\n' $b | git mktree)
             r=$(git ls-tree HEAD | awk -v st=$st -F '\\t' '{{ if ($2 == \"sub\") print \"040000 tree \" st \"\\t\" $2; else print }}' | git mktree)
             GIT_INDEX_FILE=/tmp/donor git read-tree $r
             python3 {forge} .git/index /tmp/donor
             git status --porcelain; sleep 0.5; echo planted",
            forge = forge.display()
        );
        let o = f.run_sh("new", &[], &script);
        assert!(stdout(&o).contains("planted"), "{who:?}: {}", stderr(&o));
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let h = host(
            &f,
            &format!("echo edit >> f && {GIT} commit -qam edit && {GIT} show HEAD:sub/s"),
        );
        assert_eq!(
            stdout(&h),
            "s\n",
            "{who:?}: the user's commit carries a planted file: {}",
            stderr(&h)
        );
    }
}

/// A link made in git-lfs's store (the host's, bound in) is gone when the
/// sandbox ends, and named: host git-lfs would copy the file it names into
/// the work tree at the next checkout.
/// While the command runs: a link, a FIFO (made where Landlock's file
/// rules are off) and a link in a directory made and then moved, in the
/// sandbox's lfs store, are never in the host's, looked at from the host
/// while the command still sleeps (a host git-lfs run then would read
/// through the link), on both mount APIs.
#[test]
fn a_link_in_the_lfs_store_never_reaches_the_host() {
    if !Path::new("/usr/bin/git-lfs").exists() {
        eprintln!("SKIP git-lfs: not installed");
        return;
    }
    let modes: [(&str, &[&str]); 3] = [("new", &[]), ("legacy", &[]), ("new", &["--landlock", "off"])];
    for who in Who::all() {
        for (api, opts) in modes {
            let f = Fixture::new(who);
            repo(&f);
            ok(&host(&f, "git lfs install --local >/dev/null"));
            let secret = f.write("secret", "CANARY-lfs\n", 0o600);
            let oid = "cd".repeat(32);
            let script = format!(
                "set -e; d=.git/lfs/objects/cd/cd; mkdir -p $d; ln -s {s} $d/{oid}; mkfifo .git/lfs/fifo 2>/dev/null || true; \
                 mkdir -p .git/lfs/tmp/a; mv .git/lfs/tmp/a .git/lfs/tmp/b; ln -s {s} .git/lfs/tmp/b/x; \
                 echo planted; sleep 3",
                s = secret.display()
            );
            let mut c = f.qwrap(&["run"]);
            c.args(opts).args(["--", "sh", "-c", &script]);
            c.env("QWRAP_MOUNT_API", api)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            let child = c.spawn().unwrap();
            let store = f.ws().join(".git/lfs");
            let t0 = std::time::Instant::now();
            let _ = t0;
            std::thread::sleep(Duration::from_millis(1200));
            let live = odd_entries(&store);
            let o = child.wait_with_output().unwrap();
            let what = format!("{who:?} {api} {opts:?}");
            assert!(stdout(&o).contains("planted"), "{what}: {}", stderr(&o));
            assert!(
                live.is_empty(),
                "{what}: in the host's lfs store while it ran: {live:?}"
            );
            assert_eq!(odd_entries(&store), Vec::<String>::new(), "{what}: after");
        }
    }
}

/// When the sandbox ends: links (one 22 levels down) and an object whose
/// content is not what its name says (a host secret under a made-up id)
/// are in the host's lfs store neither as links nor as content; the forged
/// object is named.
#[test]
fn a_link_or_a_forged_object_in_the_lfs_store_stays_inside() {
    if !Path::new("/usr/bin/git-lfs").exists() {
        eprintln!("SKIP git-lfs: not installed");
        return;
    }
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        ok(&host(
            &f,
            &format!(
                "git lfs install --local >/dev/null && printf '*.bin filter=lfs diff=lfs merge=lfs -text\\n' > .gitattributes \
                 && {GIT} add .gitattributes && {GIT} commit -qm lfs"
            ),
        ));
        let secret = f.write("secret", "CANARY-lfs\n", 0o600);
        let oid = "ab".repeat(32);
        let forged = "ef".repeat(32);
        let script = format!(
            "set -e; d=.git/lfs/objects/ab/ab; mkdir -p $d; ln -s {s} $d/{oid}; ln -s {s} .git/lfs/planted; \
             deep=.git/lfs/tmp/$(printf 'd/%.0s' $(seq 1 20)); mkdir -p $deep; ln -s {s} $deep/L; \
             e=.git/lfs/objects/ef/ef; mkdir -p $e; cp {s} $e/{forged}; git add -A >/dev/null 2>&1 || true; echo planted",
            s = secret.display()
        );
        let o = f.run_sh("new", &[], &script);
        assert!(stdout(&o).contains("planted"), "{who:?}: {}", stderr(&o));
        let odd = odd_entries(&f.ws().join(".git/lfs"));
        assert!(odd.is_empty(), "{who:?}: left in the host's lfs store: {odd:?}");
        // An object whose content is not what its name says stays inside,
        // named.
        assert!(
            stderr(&o).contains("does not hash to its name"),
            "{who:?}: {}",
            stderr(&o)
        );
        assert!(!store_holds(&f.ws().join(".git/lfs"), "CANARY"), "{who:?}");
    }
}

/// The modes a git attack is tried in: each gives the git dirs' guard its
/// own way.
const MODES_OF_GIT: [&[&str]; 3] = [&[], &["--isolation", "landlock"], &["--pid", "private"]];

/// Bare repositories there at the start (a local remote in an included
/// root, fixtures in the workspace) are guarded as a `.git` is: a hook and
/// an fsmonitor written inside never reach them, not even while the
/// command runs (a host push during the run runs no planted hook), and at
/// the end they are neither called made inside nor held aside. A push made
/// inside arrives, as a remote's would.
#[test]
fn bare_repositories_there_at_the_start_are_guarded_alike() {
    for (who, mode) in Who::all()
        .into_iter()
        .flat_map(|w| MODES_OF_GIT.iter().map(move |m| (w, *m)))
    {
        let f = Fixture::new(who);
        repo(&f);
        let marker = f.path().join("PWNED");
        let remote = f.path().join("remotes/proj.git");
        let fixture = f.ws().join("fixtures/b.git");
        for b in [&remote, &fixture] {
            let o = f
                .command("git")
                .args(["init", "-q", "--bare", "-b", "main"])
                .arg(b)
                .output()
                .unwrap();
            ok(&o);
        }
        let push = format!(
            "{GIT} push -q {} main && {GIT} push -q {} main",
            remote.display(),
            fixture.display()
        );
        ok(&f
            .command("sh")
            .current_dir(f.ws())
            .args(["-c", &push])
            .output()
            .unwrap());
        let script = format!(
            "for b in {r} fixtures/b.git; do
               printf '#!/bin/sh\\ntouch {m}\\n' > $b/hooks/post-receive; chmod +x $b/hooks/post-receive
               printf '[core]\\n\\tfsmonitor = \"touch {m}; false\"\\n' >> $b/config
             done
             {GIT} commit -q --allow-empty -m inside && {GIT} push -q {r} main
             touch planted; n=0; while [ ! -e host-done ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done; echo done",
            r = remote.display(),
            m = marker.display()
        );
        let mut c = f.qwrap(&["run", "--include", f.path().join("remotes").to_str().unwrap()]);
        c.args(mode).args(["--", "sh", "-c", &script]);
        if mode.contains(&"--isolation") {
            c.env_remove("QWRAP_PID");
        }
        let child = c
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let planted = f.ws().join("planted");
        let start = std::time::Instant::now();
        while !planted.exists() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(50));
        }
        // While the command runs, the user pushes to the remote.
        let during = format!(
            "cd {ws} && {GIT} checkout -q -b from-host && {GIT} commit -q --allow-empty -m host && {GIT} push -q {r} from-host",
            ws = f.ws().display(),
            r = remote.display()
        );
        let h = host(&f, &during);
        let _ = std::fs::write(f.ws().join("host-done"), "");
        let o = child.wait_with_output().unwrap();
        let what = format!("{who:?} {mode:?}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        ok(&h);
        assert!(
            !marker.exists(),
            "{what}: a hook planted inside ran on a host push during the run"
        );
        for b in [&remote, &fixture] {
            assert!(
                b.join("HEAD").is_file(),
                "{what}: {b:?} lost its HEAD: {}",
                stderr(&o)
            );
            let h = host(
                &f,
                &format!(
                    "cd {} && {GIT} log --format=%s main && {GIT} status 2>&1; true",
                    b.display()
                ),
            );
            // Without namespaces git dirs are read-only inside: no push lands.
            if b == &remote && !mode.contains(&"--isolation") {
                assert!(
                    stdout(&h).contains("inside"),
                    "{what}: the push made inside: {}",
                    stderr(&h)
                );
            }
            assert!(
                !b.join("hooks/post-receive").exists(),
                "{what}: {b:?}: the hook reached the host"
            );
        }
        assert!(!stderr(&o).contains("made inside"), "{what}: {}", stderr(&o));
        assert!(!marker.exists(), "{what}: planted code ran on the host");
    }
}

/// An ignore file made or changed inside is named at the end: new files it
/// matches (itself too) never show in host `git status`, which says the
/// work tree is clean; one the command left alone is not named.
#[test]
fn an_ignore_file_made_inside_is_named() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        f.mkdir("ws/kept");
        f.write("ws/kept/.gitignore", "*.o\n", 0o644);
        ok(&host(
            &f,
            &format!("cd {} && git add kept && {GIT} commit -qm kept", f.ws().display()),
        ));
        // File times run on a coarse clock: the fixture a tick before the run.
        std::thread::sleep(Duration::from_millis(200));
        let o = f.run_sh(
            "new",
            &[],
            "mkdir -p src tools && printf 'sitecustomize.py\\n.gitignore\\n' > src/.gitignore && echo 'import os' > src/sitecustomize.py
             echo '*' > tools/.gitignore && echo evil > tools/run.sh
             touch tools/\"$(printf 'u\\302\\233x')\" tools/\"$(printf 'rlo\\342\\200\\256txt.exe')\" && echo ran",
        );
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("ran"), "{what}: {}", stderr(&o));
        let h = host(&f, &format!("cd {} && git status --porcelain", f.ws().display()));
        assert_eq!(
            stdout(&h),
            "",
            "{what}: the attack's premise: host git status shows nothing"
        );
        for named in ["src/.gitignore", "tools/.gitignore"] {
            assert!(
                stderr(&o).contains(&format!(
                    "{}: an ignore file made or changed inside",
                    f.ws().join(named).display()
                )),
                "{what}: {named}: {}",
                stderr(&o)
            );
        }
        assert!(!stderr(&o).contains("kept/.gitignore"), "{what}: {}", stderr(&o));
        // Names a terminal acts on, which host git prints as they are where
        // core.quotePath is off: named, escaped.
        for name in ["tools/u\\u{9b}x", "tools/rlo\\u{202e}txt.exe"] {
            assert!(
                stderr(&o).contains(&format!(
                    "{}: a name made inside with characters",
                    f.ws().join(name).display()
                )),
                "{what}: {name}: {}",
                stderr(&o)
            );
        }
    }
}

/// What host git takes config and hooks from outside the git dir, in the
/// work tree: a hook linked to a tracked script, a config that includes a
/// tracked `.gitconfig`, a `core.hooksPath` written with a comment (and
/// missing, so that the command could make it). Inside each is read-only;
/// the host's next `git status` and `git commit` run nothing planted.
#[test]
fn config_and_hooks_host_git_reads_from_the_work_tree_are_read_only() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let marker = f.path().join("PWNED");
        let setup = format!(
            "set -e
             mkdir -p tools/hooks && printf '#!/bin/sh\\ntrue\\n' > tools/hooks/pre-commit && chmod +x tools/hooks/pre-commit
             ln -s ../../tools/hooks/pre-commit .git/hooks/pre-commit
             printf '[user]\\n\\tname = t\\n' > .gitconfig && git config include.path ../.gitconfig
             printf '[core]\\n\\thooksPath = .githooks # managed by the team\\n' > .git/config.worktree
             git config extensions.worktreeConfig true
             git config --add include.path ../.gitconfig.local && git config core.excludesFile \"$PWD/.localignore\"
             {GIT} add tools .gitconfig && {GIT} commit -qm tools"
        );
        ok(&f.command("sh").args(["-c", &setup]).output().unwrap());
        std::thread::sleep(Duration::from_millis(200));
        let m = marker.display();
        let script = format!(
            "printf '#!/bin/sh\\ntouch {m}\\n' > tools/hooks/pre-commit
             printf '[core]\\n\\tfsmonitor = \"touch {m}; false\"\\n' >> .gitconfig
             mkdir -p .githooks && printf '#!/bin/sh\\ntouch {m}\\n' > .githooks/pre-commit && chmod +x .githooks/pre-commit
             printf '[core]\\n\\tfsmonitor = \"touch {m}; false\"\\n' > .gitconfig.local
             printf 'secret*\\n.localignore\\n' > .localignore && echo evil > secret.sh
             echo done"
        );
        for mode in MODES_OF_GIT {
            let mut c = f.qwrap(&["run"]);
            c.args(mode).args(["--", "sh", "-c", &script]);
            if mode.contains(&"--isolation") {
                c.env_remove("QWRAP_PID");
            }
            let o = c.output().unwrap();
            let what = format!("{who:?} {mode:?}");
            assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
            let h = host(
                &f,
                &format!(
                    "cd {} && {GIT} status --porcelain; echo x >> f; {GIT} commit -qam host; true",
                    f.ws().display()
                ),
            );
            // The ignore file made inside hides nothing: it went aside.
            if !mode.contains(&"--isolation") {
                assert!(
                    stdout(&h).contains("secret.sh"),
                    "{what}: {}\n{}",
                    stdout(&h),
                    stderr(&o)
                );
            }
            let _ = std::fs::remove_file(f.ws().join("secret.sh"));
            assert!(
                !marker.exists(),
                "{what}: planted code ran on the host: {}",
                stderr(&o)
            );
        }
    }
}

/// A `.gitmodules` made inside as a link (host git reads it through one:
/// `/dev/tty` or `/dev/stdin` there held `git status` up) is moved aside at
/// the end, and one changed inside is named (its `ignore = all` hides a
/// submodule's changes from `git status`).
#[test]
fn a_gitmodules_link_made_inside_goes_aside() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        f.mkdir("ws/inner");
        ok(&f.command("git").args(["init", "-q", "inner"]).output().unwrap());
        std::thread::sleep(Duration::from_millis(200));
        let o = f.run_sh(
            "new",
            &[],
            "git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),vendor/lib && ln -s /dev/stdin .gitmodules
             printf '[submodule \"x\"]\\n\\tpath = x\\n\\tignore = all\\n' > inner/.gitmodules; echo done",
        );
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        let link = f.ws().join(".gitmodules");
        assert!(
            std::fs::symlink_metadata(&link).is_err(),
            "{what}: the link stayed: {}",
            stderr(&o)
        );
        assert!(
            std::fs::symlink_metadata(f.ws().join(".gitmodules.qwrap-held"))
                .is_ok_and(|m| m.file_type().is_symlink()),
            "{what}: {}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains(&format!(
                "{}: submodules' settings made or changed inside",
                f.ws().join("inner/.gitmodules").display()
            )),
            "{what}: {}",
            stderr(&o)
        );
    }
}

/// What host git reads as config made again under the same name (its
/// parent renamed), reached through a link the command made on the way,
/// or named by the caller's environment (`XDG_CONFIG_HOME` in the
/// workspace, `GIT_CONFIG_COUNT`): each goes aside at the end, and the
/// host's next `git status`, in the same environment, runs nothing.
#[test]
fn config_made_again_elsewhere_or_named_by_the_environment_goes_aside() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let marker = f.path().join("PWNED");
        let ws = f.ws();
        let env = [
            ("XDG_CONFIG_HOME", ws.join(".xdg").display().to_string()),
            ("GIT_CONFIG_COUNT", "1".to_string()),
            ("GIT_CONFIG_KEY_0", "include.path".to_string()),
            (
                "GIT_CONFIG_VALUE_0",
                ws.join(".env.gitconfig").display().to_string(),
            ),
            ("GIT_TEMPLATE_DIR", ws.join("tmpl").display().to_string()),
        ];
        // A path to the workspace through a link of the user's.
        std::os::unix::fs::symlink(&ws, f.path().join("ln")).unwrap();
        let setup = format!(
            "set -e
             mkdir conf && printf '[user]\\n\\tname = t\\n' > conf/local.gitconfig
             git config include.path ../conf/local.gitconfig && git config --add include.path ../sub/x.gitconfig
             git config --add include.path {ln}/viasym.inc && mkdir -p tmpl/hooks
             mkdir -p ../shared-tools/hooks && ln -s ../shared-tools tools && git config core.hooksPath tools/hooks
             {GIT} add conf tools && {GIT} commit -qm conf",
            ln = f.path().join("ln").display()
        );
        ok(&f.command("sh").args(["-c", &setup]).output().unwrap());
        std::thread::sleep(Duration::from_millis(200));
        let fsmonitor = format!(
            "[core]\\n\\tfsmonitor = \\\"touch {}; false\\\"\\n",
            marker.display()
        );
        let script = format!(
            "mv conf conf.old && mkdir conf && printf '{fsmonitor}' > conf/local.gitconfig
             mkdir -p o && printf '{fsmonitor}' > o/x.gitconfig && ln -s o sub
             mkdir -p .xdg/git && printf '{fsmonitor}' > .xdg/git/config
             printf '{fsmonitor}' > .env.gitconfig; printf '{fsmonitor}' > viasym.inc
             printf '#!/bin/sh\\ntouch {m}\\n' > tmpl/hooks/post-checkout
             rm tools && mkdir -p t2/hooks && ln -s t2 tools && printf '#!/bin/sh\\ntouch {m}\\n' > t2/hooks/pre-commit && chmod +x t2/hooks/pre-commit
             echo done",
            m = marker.display()
        );
        let mut c = f.qwrap(&["run", "--", "sh", "-c", &script]);
        c.envs(env.iter().map(|(k, v)| (k, v)));
        let o = c.output().unwrap();
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        let mut h = f.command("timeout");
        h.args([
            "20",
            "sh",
            "-c",
            &format!("git status; {GIT} commit -q --allow-empty -m host"),
        ])
        .envs(env.iter().map(|(k, v)| (k, v)));
        let _ = h.output().unwrap();
        assert!(
            !marker.exists(),
            "{what}: planted config ran on the host: {}",
            stderr(&o)
        );
        assert!(
            !ws.join("tmpl/hooks/post-checkout").exists(),
            "{what}: a template hook reached the host"
        );
        assert!(
            !ws.join("viasym.inc").exists(),
            "{what}: an include through a link stayed: {}",
            stderr(&o)
        );
        for p in ["conf", "sub", ".xdg/git/config", ".env.gitconfig"] {
            assert!(
                stderr(&o).contains(&format!("{}", ws.join(p).display())),
                "{what}: {p} not named: {}",
                stderr(&o)
            );
        }
    }
}

/// A repository made inside whose refs or reflogs hold what a terminal
/// acts on (a branch named with a bidi mark, an escape sequence in a
/// reflog line) is held aside at the end, by the rules that refuse the same
/// from a guarded one; a plain one with a commit stays.
#[test]
fn a_repository_made_inside_with_escapes_in_its_state_is_held() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let o = f.run_sh(
            "new",
            &[],
            &format!(
                "git init -q sub && cd sub && {GIT} commit -q --allow-empty -m x && b=$(printf 'evil\\342\\200\\256branch') && git branch \"$b\"
                 printf '0000000000000000000000000000000000000000 %s a <a@b> 1 +0000\\tcommit: \\033]2;pwned\\007\\n' $(git rev-parse HEAD) >> .git/logs/HEAD
                 cd .. && git init -q plain && {GIT} -C plain commit -q --allow-empty -m y && echo done"
            ),
        );
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        assert!(
            !f.ws().join("sub/.git").exists(),
            "{what}: sub/.git left in place: {}",
            stderr(&o)
        );
        assert!(
            f.ws().join("sub/.git.qwrap-held").exists(),
            "{what}: {}",
            stderr(&o)
        );
        assert!(
            f.ws().join("plain/.git").is_dir(),
            "{what}: plain moved: {}",
            stderr(&o)
        );
    }
}

/// A repository made inside whose HEAD or a ref is a file of a terabyte of
/// holes (host git reads each whole: one `git status` grew past 7 GB) is
/// held aside, a gitlink to it beside; a `COMMIT_EDITMSG` of holes reaches
/// the host as holes, not as hundreds of megabytes of zeros on its disk.
#[test]
fn a_repository_made_inside_with_a_huge_ref_is_held() {
    for who in Who::all() {
        for opts in MODES_OF_GIT {
            let f = Fixture::new(who);
            repo(&f);
            // Without namespaces a new name is made only below the top.
            f.mkdir("ws/w");
            let o = f.run_sh(
                "new",
                opts,
                &format!(
                    "git init -q w/sub && {GIT} -C w/sub commit -q --allow-empty -m x && c=$(git -C w/sub rev-parse HEAD)
                     git update-index --add --cacheinfo 160000,$c,w/sub 2>/dev/null
                     truncate -s 1T w/sub/.git/HEAD
                     git init -q -b main w/s2 && {GIT} -C w/s2 commit -q --allow-empty -m y && truncate -s 30G w/s2/.git/refs/heads/main
                     truncate -s 300M .git/COMMIT_EDITMSG 2>/dev/null; sleep 1; echo done"
                ),
            );
            let what = format!("{who:?} {opts:?}");
            assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
            for r in ["w/sub", "w/s2"] {
                assert!(
                    !f.ws().join(r).join(".git").exists() && f.ws().join(r).join(".git.qwrap-held").exists(),
                    "{what}: {r} not held: {}",
                    stderr(&o)
                );
            }
            let st = host(&f, "git status --porcelain >/dev/null && echo fine");
            assert!(stdout(&st).contains("fine"), "{what}: host git status: {st:?}");
            // Carried as it is, its holes left holes on the host's disk.
            if opts.is_empty() {
                use std::os::unix::fs::MetadataExt;
                let m = std::fs::metadata(f.ws().join(".git/COMMIT_EDITMSG")).unwrap();
                assert_eq!(m.len(), 300 << 20, "{what}: {}", stderr(&o));
                assert!(
                    m.blocks() * 512 < 1 << 20,
                    "{what}: {} bytes of zeros written",
                    m.blocks() * 512
                );
            }
        }
    }
}

/// A repository the walk at the start does not reach (five levels down,
/// or in `node_modules`) is no guarded one: what host git takes from it
/// and changed inside (its submodule's config, an included file, the hooks
/// `core.hooksPath` names, an index whose assume-unchanged bit hides an
/// edit) makes it the command's, held aside; host git runs nothing of it.
#[test]
fn a_repository_beyond_the_walk_at_the_start_takes_nothing_from_the_command() {
    for who in Who::all() {
        for opts in MODES_OF_GIT {
            let f = Fixture::new(who);
            repo(&f);
            let hit = f.path().join("hit");
            let setup = format!(
                "set -e
                 git init -q {src} && {GIT} -C {src} commit -q --allow-empty -m s
                 for r in a/b/c/d/e/inc a/b/c/d/e/hp a/b/c/d/e/sm a/b/c/d/e/au node_modules/x/inc; do
                   git init -q $r && echo 1 > $r/f && {GIT} -C $r add f && {GIT} -C $r commit -qm one
                 done
                 for r in a/b/c/d/e/inc node_modules/x/inc; do : > $r/.gitconfig && git -C $r config include.path ../.gitconfig; done
                 mkdir a/b/c/d/e/hp/.githooks && printf '#!/bin/sh\\n' > a/b/c/d/e/hp/.githooks/pre-commit
                 chmod +x a/b/c/d/e/hp/.githooks/pre-commit && git -C a/b/c/d/e/hp config core.hooksPath .githooks
                 {GIT} -C a/b/c/d/e/sm -c protocol.file.allow=always submodule -q add {src} s
                 {GIT} -C a/b/c/d/e/sm commit -qm sub",
                src = f.path().join("src").display()
            );
            ok(&f.command("sh").args(["-c", &setup]).output().unwrap());
            std::thread::sleep(Duration::from_millis(200));
            let fsmonitor = format!("[core]\\n\\tfsmonitor = \\\"touch {}\\\"\\n", hit.display());
            let script = format!(
                "printf '{fsmonitor}' >> a/b/c/d/e/inc/.gitconfig
                 printf '{fsmonitor}' >> node_modules/x/inc/.gitconfig
                 printf '#!/bin/sh\\ntouch {hit}\\n' > a/b/c/d/e/hp/.githooks/pre-commit
                 printf '{fsmonitor}' >> a/b/c/d/e/sm/.git/modules/s/config
                 cd a/b/c/d/e/au && echo evil > f && git update-index --assume-unchanged f; echo done",
                hit = hit.display()
            );
            let o = f.run_sh("new", opts, &script);
            let what = format!("{who:?} {opts:?}");
            assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
            for r in [
                "a/b/c/d/e/inc",
                "node_modules/x/inc",
                "a/b/c/d/e/hp",
                "a/b/c/d/e/sm",
                "a/b/c/d/e/au",
            ] {
                let d = f.ws().join(r);
                assert!(
                    !d.join(".git").exists() && d.join(".git.qwrap-held").exists(),
                    "{what}: {r} left as a repository: {}",
                    stderr(&o)
                );
                let h = host(
                    &f,
                    &format!(
                        "cd {r} && git status >/dev/null 2>&1; cd s 2>/dev/null && git status >/dev/null 2>&1; true"
                    ),
                );
                assert!(h.status.success(), "{what}: {r}: {h:?}");
            }
            let c = host(
                &f,
                &format!("cd a/b/c/d/e/hp && {GIT} commit -q --allow-empty -m h >/dev/null 2>&1; true"),
            );
            assert!(c.status.success(), "{what}: {c:?}");
            assert!(
                !hit.exists(),
                "{what}: host git ran the command's code: {}",
                stderr(&o)
            );
        }
    }
}

/// Objects made inside are brought into the host repository the guard
/// held at the start, however the command renames its path and puts a
/// link in its place: none lands outside the writable roots.
#[test]
fn objects_imported_reach_the_repository_held_at_the_start() {
    for who in Who::all() {
        for opts in [&[][..], &["--pid", "private"]] {
            let f = Fixture::new(who);
            repo(&f);
            ok(&f
                .command("sh")
                .args([
                    "-c",
                    &format!("git init -q lib && {GIT} -C lib commit -q --allow-empty -m l"),
                ])
                .output()
                .unwrap());
            let victim = f.mkdir("victim");
            let o = f.run_sh(
                "new",
                opts,
                &format!(
                    "mv lib lib2 && mkdir -p evil/.git/refs && echo 'ref: refs/heads/master' > evil/.git/HEAD
                     ln -s {victim} evil/.git/objects && ln -s evil lib
                     cd lib2 && echo \"$PWD/.git/qwrap-host/objects\" > .git/objects/info/alternates
                     echo payload > n && git add n && {GIT} commit -qm o && git rev-parse HEAD && sleep 2",
                    victim = victim.display()
                ),
            );
            let what = format!("{who:?} {opts:?}");
            let id = stdout(&o).trim().to_string();
            assert_eq!(id.len(), 40, "{what}: {}", stderr(&o));
            let left: Vec<_> = std::fs::read_dir(&victim)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            assert!(
                left.is_empty(),
                "{what}: objects landed outside the roots: {left:?}"
            );
            let t = host(&f, &format!("git -C lib2 cat-file -t {id}"));
            assert_eq!(stdout(&t).trim(), "commit", "{what}: {t:?} {}", stderr(&o));
        }
    }
}

/// Where the walk at the start stops early (more directories than it
/// looks at), a repository of the user's it did not find, and that
/// nothing changed, stays as it is: a submodule's `.git` file is no
/// repository made inside.
#[test]
fn a_repository_the_walk_at_the_start_missed_stays_when_unchanged() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let setup = format!(
            "set -e; mkdir pkgs; cd pkgs; for i in $(seq 1 4200); do mkdir d$i; done; cd ..
             git init -q --separate-git-dir=$PWD/pkgs/d4200/gd pkgs/d4200/lib && {GIT} -C pkgs/d4200/lib commit -q --allow-empty -m l"
        );
        ok(&f.command("sh").args(["-c", &setup]).output().unwrap());
        std::thread::sleep(Duration::from_millis(200));
        let o = f.run_sh("new", &[], "echo done");
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        assert!(
            f.ws().join("pkgs/d4200/lib/.git").is_file(),
            "{what}: the user's .git file moved: {}",
            stderr(&o)
        );
    }
}

/// A repository the walk at the start does not reach is live while the
/// command runs: anything made or changed in its git dir makes it the
/// command's, vetted as one made inside. A ref linked to /dev/zero, a
/// reflog linked to a file outside, `objects/pack` linked to a directory
/// outside, an exclude file that hides every new file: each held aside,
/// and host git writes nothing outside through it.
#[test]
fn a_repository_beyond_the_walk_at_the_start_links_nothing_outside() {
    for who in Who::all() {
        for opts in MODES_OF_GIT {
            let f = Fixture::new(who);
            repo(&f);
            let outside = f.mkdir("outside");
            let victim = f.write("outside/victim", "orig\n", 0o644);
            let packs = f.mkdir("outside/packs");
            let setup = format!(
                "set -e; for r in dz logslink objpack ex; do
                   git init -q -b main node_modules/$r && echo 1 > node_modules/$r/f
                   {GIT} -C node_modules/$r add f && {GIT} -C node_modules/$r commit -qm one
                 done"
            );
            ok(&f.command("sh").args(["-c", &setup]).output().unwrap());
            std::thread::sleep(Duration::from_millis(200));
            let script = format!(
                "cd node_modules && ln -sf /dev/zero dz/.git/refs/heads/main
                 rm logslink/.git/logs/refs/heads/main && ln -s {victim} logslink/.git/logs/refs/heads/main
                 rm -rf objpack/.git/objects/pack && ln -s {packs} objpack/.git/objects/pack
                 echo '*' > ex/.git/info/exclude && echo new > ex/new; echo done",
                victim = victim.display(),
                packs = packs.display()
            );
            let o = f.run_sh("new", opts, &script);
            let what = format!("{who:?} {opts:?}");
            assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
            for r in ["dz", "logslink", "objpack", "ex"] {
                let d = f.ws().join("node_modules").join(r);
                assert!(
                    !d.join(".git").exists() && d.join(".git.qwrap-held").exists(),
                    "{what}: {r} left as a repository: {}",
                    stderr(&o)
                );
            }
            let h = host(
                &f,
                &format!(
                    "cd node_modules/logslink && echo 2 > f && {GIT} commit -qam two >/dev/null 2>&1
                     cd ../objpack && git gc -q >/dev/null 2>&1; cd ../dz && git status >/dev/null 2>&1; true"
                ),
            );
            assert!(h.status.success(), "{what}: host git: {h:?}");
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "orig\n", "{what}");
            let written: Vec<_> = std::fs::read_dir(&packs)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            assert!(written.is_empty(), "{what}: packs written outside: {written:?}");
            let _ = outside;
        }
    }
}

/// A notes merge's state never reaches the host: a host `git notes merge
/// --commit` writes whatever ref `NOTES_MERGE_REF` names (a replace ref
/// there hid an edit from `git status`).
#[test]
fn a_notes_merge_state_made_inside_stays_there() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let o = f.run_sh(
            "new",
            &[],
            "c=$(git rev-parse HEAD) && printf 'ref: refs/replace/%s\\n' $c > .git/NOTES_MERGE_REF
             echo $c > .git/NOTES_MERGE_PARTIAL 2>/dev/null; mkdir -p .git/NOTES_MERGE_WORKTREE; sleep 1; echo done",
        );
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        for n in ["NOTES_MERGE_REF", "NOTES_MERGE_PARTIAL", "NOTES_MERGE_WORKTREE"] {
            assert!(
                !f.ws().join(".git").join(n).exists(),
                "{what}: {n} reached the host: {}",
                stderr(&o)
            );
        }
        let h = host(
            &f,
            &format!("{GIT} notes merge --commit >/dev/null 2>&1; git for-each-ref refs/replace"),
        );
        assert!(stdout(&h).trim().is_empty(), "{what}: {h:?}");
    }
}

/// The host's cache-tree record stands for the host's entries only: an
/// index whose entry beneath it names another object (the record's bytes
/// kept) reaches the host without it, so host `git status` shows the edit
/// and a later `git commit -a` does not take it unasked.
#[test]
fn a_cache_tree_record_over_a_changed_entry_is_not_kept() {
    for who in Who::all() {
        for opts in [&[][..], &["--pid", "private"]] {
            let f = Fixture::new(who);
            repo(&f);
            ok(&f
                .command("sh")
                .args([
                    "-c",
                    &format!(
                        "mkdir D && echo good > D/a && echo b > D/b && {GIT} add D && {GIT} commit -qm d"
                    ),
                ])
                .output()
                .unwrap());
            let forge = "import hashlib,sys\nd=bytearray(open('.git/index','rb').read())\nold=bytes.fromhex(sys.argv[1]);new=bytes.fromhex(sys.argv[2])\ni=d.find(old);d[i:i+20]=new\nd[-20:]=hashlib.sha1(bytes(d[:-20])).digest()\nopen('.git/index','wb').write(d)\n";
            // The forger reaches the sandbox in its environment.
            let mut c = f.qwrap(&["run"]);
            c.args(opts)
                .args(["--setenv", "FORGE", forge, "--", "sh", "-c"])
                .arg(
                    "echo evil > D/a && new=$(git hash-object -w D/a) && old=$(git ls-files -s D/a | cut -d' ' -f2)
                     python3 -c \"$FORGE\" $old $new && sleep 1 && echo done",
                )
                .env("QWRAP_MOUNT_API", "new");
            let o = c.output().unwrap();
            let what = format!("{who:?} {opts:?}");
            assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
            let st = host(&f, "git status --porcelain");
            assert!(
                stdout(&st).contains("D/a"),
                "{what}: host git status hides the edit: {st:?} {}",
                stderr(&o)
            );
        }
    }
}

/// HEAD and the index removed inside stay on the host: without HEAD host
/// git takes a parent directory's repository for this one.
#[test]
fn head_and_index_removed_inside_stay_on_the_host() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let o = f.run_sh("new", &[], "rm -f .git/HEAD .git/index; sleep 1; echo done");
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        for n in ["HEAD", "index"] {
            assert!(
                f.ws().join(".git").join(n).is_file(),
                "{what}: {n} gone: {}",
                stderr(&o)
            );
        }
        let top = host(&f, "git rev-parse --show-toplevel");
        assert_eq!(
            Path::new(stdout(&top).trim()),
            f.ws().canonicalize().unwrap(),
            "{what}: {top:?}"
        );
    }
}

/// A relative `core.hooksPath` in the user's own config names a directory
/// in each repository's work tree: in a repository made inside, what the
/// command put there is a hook host git would run, so it is held aside.
#[test]
fn a_repository_made_inside_with_hooks_where_the_users_config_looks_is_held() {
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        f.write("home/.gitconfig", "[core]\n\thooksPath = .githooks\n", 0o644);
        let hit = f.path().join("hit");
        let o = f.run_sh(
            "new",
            &[],
            &format!(
                "git init -q sub && mkdir sub/.githooks && printf '#!/bin/sh\\ntouch {}\\n' > sub/.githooks/post-checkout
                 chmod +x sub/.githooks/post-checkout && echo done",
                hit.display()
            ),
        );
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        assert!(
            !f.ws().join("sub/.git").exists() && f.ws().join("sub/.git.qwrap-held").exists(),
            "{what}: sub left as a repository: {}",
            stderr(&o)
        );
        let h = host(
            &f,
            &format!("cd sub && {GIT} checkout -q -b z >/dev/null 2>&1; true"),
        );
        assert!(h.status.success(), "{what}: {h:?}");
        assert!(!hit.exists(), "{what}: host git ran the command's hook");
    }
}

/// A symbolic ref made inside to the branch a checkout outside the roots
/// has checked out (the workspace's own HEAD, or another branch made one)
/// made the user's next commit in the workspace move that branch there;
/// and the stash, every checkout's, replaced inside, was popped into a
/// linked worktree outside. Watched on the host: the user's commit in the
/// workspace leaves the outside checkout's branch, and the outside
/// worktree's stash is still the user's.
#[test]
fn symbolic_refs_and_the_stash_of_checkouts_outside_stay_the_hosts() {
    let sh = |f: &Fixture, dir: &str, script: &str| {
        let o = f
            .command("sh")
            .arg("-c")
            .arg(script)
            .current_dir(f.path().join(dir))
            .output()
            .unwrap();
        (o.status.success(), stdout(&o))
    };
    for who in Who::all() {
        for inside in [
            "echo 'ref: refs/heads/main' > \"$(git rev-parse --git-dir)/HEAD\"",
            "git symbolic-ref refs/heads/feature refs/heads/main",
        ] {
            let f = Fixture::new(who);
            sh(
                &f,
                ".",
                &format!(
                    "set -e; git init -q -b main m && cd m && echo a > a && {GIT} add a && {GIT} commit -qm one
                     git branch feature && git worktree add -q ../wt feature"
                ),
            );
            let main = sh(&f, "m", "git rev-parse main").1;
            let o = f
                .qwrap(&["run", "--workspace"])
                .arg(f.path().join("wt"))
                .args(["--", "sh", "-c"])
                .arg(format!(
                    "{inside}; echo evil > Makefile; git add Makefile; sleep 1; echo done"
                ))
                .current_dir(f.path().join("wt"))
                .output()
                .unwrap();
            let what = format!("{who:?} {inside}");
            assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
            // The user's next commit in the workspace.
            sh(&f, "wt", &format!("{GIT} commit -qam mine"));
            assert_eq!(
                sh(&f, "m", "git rev-parse main").1,
                main,
                "{what}: the user's commit moved the branch checked out outside: {}",
                stderr(&o)
            );
        }
        // The main checkout the workspace; the user's stash made in a
        // linked worktree outside.
        let f = Fixture::new(who);
        sh(
            &f,
            ".",
            &format!(
                "set -e; git init -q -b main m && cd m && echo a > a && {GIT} add a && {GIT} commit -qm one
                 git branch feature && git worktree add -q ../wt feature && cd ../wt && echo mine >> a && {GIT} stash push -q -m WIP"
            ),
        );
        let stash = sh(&f, "wt", "git rev-parse refs/stash").1;
        let o = f
            .qwrap(&["run", "--workspace"])
            .arg(f.path().join("m"))
            .args(["--", "sh", "-c"])
            .arg(format!(
                "git stash drop -q; echo evil > build.sh; git add build.sh; {GIT} stash push -q -m WIP; sleep 1; echo done"
            ))
            .current_dir(f.path().join("m"))
            .output()
            .unwrap();
        let what = format!("{who:?} the stash");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        assert_eq!(
            sh(&f, "wt", "git rev-parse refs/stash").1,
            stash,
            "{what}: {}",
            stderr(&o)
        );
        sh(&f, "wt", "git stash pop -q");
        assert!(
            !f.path().join("wt/build.sh").exists(),
            "{what}: the command's stash was popped outside"
        );
    }
}

/// The branch a checkout outside goes back to with `git checkout -` (the
/// last move in its HEAD's reflog, commits made since): moved inside, the
/// user's `git checkout -` there took the command's tree. Watched on the
/// host: the branch is where it was, and going back brings no file of the
/// command's.
#[test]
fn the_branch_a_checkout_outside_goes_back_to_stays_the_hosts() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let setup = format!(
            "set -e; git init -q -b main m && cd m && echo a > a && {GIT} add a && {GIT} commit -qm one
             git branch prev && git checkout -q prev && git checkout -q main
             echo b > b && {GIT} add b && {GIT} commit -qm two
             git worktree add -q ../wt -b w"
        );
        ok(&f
            .command("sh")
            .args(["-c", &setup])
            .current_dir(f.path())
            .output()
            .unwrap());
        let rev = |dir: &str, what: &str| {
            let o = f
                .command("git")
                .args(["rev-parse", what])
                .current_dir(f.path().join(dir))
                .output()
                .unwrap();
            stdout(&o)
        };
        let prev = rev("m", "prev");
        let o = f
            .qwrap(&["run", "--workspace"])
            .arg(f.path().join("wt"))
            .args(["--", "sh", "-c"])
            .arg(format!(
                "echo evil > Makefile && git add Makefile && {GIT} commit -qm evil && git branch -f prev HEAD; sleep 1; echo done"
            ))
            .current_dir(f.path().join("wt"))
            .output()
            .unwrap();
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        assert_eq!(rev("m", "prev"), prev, "{what}: {}", stderr(&o));
        ok(&f
            .command("git")
            .args(["checkout", "-q", "-"])
            .current_dir(f.path().join("m"))
            .output()
            .unwrap());
        assert!(
            !f.path().join("m/Makefile").exists(),
            "{what}: going back brought the command's file"
        );
    }
}

/// Everyday git in a linked worktree: an interactive rebase stopped inside
/// is continued on the host. Its git dir's stopped operation is the
/// user's, no repository made inside (its HEAD had been moved aside).
#[test]
fn a_rebase_stopped_in_a_linked_worktree_is_continued_on_the_host() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let setup = format!(
            "set -e; git init -q -b main m && cd m && for i in 1 2 3; do echo $i > f$i; {GIT} add f$i; {GIT} commit -qm c$i; done
             git worktree add -q ../wt -b w"
        );
        ok(&f
            .command("sh")
            .args(["-c", &setup])
            .current_dir(f.path())
            .output()
            .unwrap());
        let o = f
            .qwrap(&["run", "--workspace"])
            .arg(f.path().join("wt"))
            .args(["--", "sh", "-c"])
            .arg(format!(
                "GIT_SEQUENCE_EDITOR='sed -i 1ibreak' {GIT} rebase -i HEAD~2 >/dev/null 2>&1; git status | head -1"
            ))
            .current_dir(f.path().join("wt"))
            .output()
            .unwrap();
        let what = format!("{who:?}");
        assert!(
            stdout(&o).contains("rebase in progress"),
            "{what}: {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("moved aside"), "{what}: {}", stderr(&o));
        let c = f
            .command("sh")
            .args([
                "-c",
                &format!("{GIT} rebase --continue >/dev/null 2>&1 && git log --format=%s"),
            ])
            .current_dir(f.path().join("wt"))
            .output()
            .unwrap();
        assert_eq!(stdout(&c), "c3\nc2\nc1\n", "{what}: {}", stderr(&c));
    }
}

/// The workspace's own bisect or rebase state naming the branch a linked
/// worktree outside has checked out: a host `git bisect reset` checked it
/// out in the workspace, and a host `git rebase --continue` moved it (its
/// `head-name`, an `update-ref` order). Watched on the host: after those
/// and a commit in the workspace, the outside worktree's branch is where
/// it was.
#[test]
fn the_workspace_s_state_never_names_a_branch_checked_out_outside() {
    let sh = |f: &Fixture, dir: &str, script: &str| {
        let o = f
            .command("sh")
            .arg("-c")
            .arg(script)
            .current_dir(f.path().join(dir))
            .output()
            .unwrap();
        stdout(&o)
    };
    let stop = "GIT_SEQUENCE_EDITOR='sed -i 1ibreak' git rebase -i HEAD~1 >/dev/null 2>&1";
    let cases = [
        (
            "git bisect start HEAD HEAD~1 >/dev/null 2>&1; echo feat > .git/BISECT_START".to_string(),
            "git bisect reset >/dev/null 2>&1",
        ),
        (
            format!("{stop}; echo refs/heads/feat > .git/rebase-merge/head-name"),
            "git rebase --continue >/dev/null 2>&1",
        ),
        (
            format!("{stop}; echo 'update-ref refs/heads/feat' >> .git/rebase-merge/git-rebase-todo"),
            "git rebase --continue >/dev/null 2>&1",
        ),
    ];
    for who in Who::all() {
        for (inside, host) in &cases {
            let f = Fixture::new(who);
            sh(
                &f,
                ".",
                &format!(
                    "set -e; git init -q -b main m && cd m && for i in 1 2 3; do echo $i > f$i; {GIT} add f$i; {GIT} commit -qm c$i; done
                     git worktree add -q ../wt -b feat HEAD~1"
                ),
            );
            let feat = sh(&f, "m", "git rev-parse feat");
            let o = f
                .qwrap(&["run", "--workspace"])
                .arg(f.path().join("m"))
                .args(["--", "sh", "-c"])
                .arg(format!(
                    "export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t; {inside}; sleep 1; echo done"
                ))
                .current_dir(f.path().join("m"))
                .output()
                .unwrap();
            let what = format!("{who:?} {inside}");
            assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
            sh(
                &f,
                "m",
                &format!("{host}; echo x > g; {GIT} add g; {GIT} commit -qm mine; true"),
            );
            assert_eq!(
                sh(&f, "m", "git rev-parse feat"),
                feat,
                "{what}: the branch checked out outside moved: {}",
                stderr(&o)
            );
        }
    }
}

/// A checkout outside the roots mid-bisect or mid-rebase: what it comes
/// back to stays the host's. Its per-checkout refs (`refs/bisect`,
/// `refs/rewritten`, `refs/worktree`: the main checkout's lie among the
/// shared refs) and the branch its `BISECT_START` names (HEAD names none
/// then) moved inside made a host `git bisect good`, `git bisect reset` or
/// `git rebase --continue` write the command's files into it. Watched on
/// the host: no file of the command's in the outside checkout afterwards.
#[test]
fn checkouts_outside_mid_bisect_keep_what_they_come_back_to() {
    let sh = |f: &Fixture, script: &str| {
        let o = f
            .command("sh")
            .arg("-c")
            .arg(script)
            .current_dir(f.path())
            .output()
            .unwrap();
        ok(&o);
        stdout(&o)
    };
    let evil = "for i in 1 2 3 4 5 6 7 8; do echo e > EVIL-$i; git add EVIL-$i; GIT_EDITOR=true git -c user.name=t -c user.email=t@t commit -qm e$i; done";
    for who in Who::all() {
        let f = Fixture::new(who);
        // The main checkout outside, mid-bisect; a linked worktree the workspace.
        sh(
            &f,
            &format!(
                "set -e; git init -q -b main m; for i in 1 2 3 4 5 6; do echo $i > m/f; {GIT} -C m commit -qam c$i 2>/dev/null || {{ {GIT} -C m add f; {GIT} -C m commit -qm c$i; }}; done
                 git -C m worktree add -q ../wt -b w HEAD~5
                 cd m && git bisect start -q 2>/dev/null || git bisect start >/dev/null; git bisect bad >/dev/null; git bisect good HEAD~5 >/dev/null"
            ),
        );
        let refs_before = sh(&f, "git -C m for-each-ref --format='%(refname) %(objectname)'");
        let o = f
            .qwrap(&["run", "--workspace"])
            .arg(f.path().join("wt"))
            .args(["--", "sh", "-c"])
            .arg(format!(
                "{evil}; for r in main-worktree/refs/bisect/bad refs/rewritten/onto refs/worktree/x refs/heads/main; do git update-ref $r HEAD; done
                 for g in $(git for-each-ref --format='%(refname)' refs/bisect); do git update-ref $g HEAD; done; sleep 1; echo done"
            ))
            .current_dir(f.path().join("wt"))
            .output()
            .unwrap();
        let what = format!("{who:?} the main checkout outside, mid-bisect");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        let refs_after = sh(
            &f,
            "git -C m for-each-ref --format='%(refname) %(objectname)' | grep -v ' refs/heads/w$' | grep -v '^refs/heads/w '",
        );
        let kept: Vec<&str> = refs_before
            .lines()
            .filter(|l| !l.starts_with("refs/heads/w "))
            .collect();
        assert_eq!(
            refs_after.lines().collect::<Vec<_>>(),
            kept,
            "{what}: {}",
            stderr(&o)
        );
        sh(
            &f,
            "cd m && git bisect good >/dev/null 2>&1; git bisect reset -q 2>/dev/null || git bisect reset >/dev/null 2>&1; true",
        );
        let planted: Vec<_> = std::fs::read_dir(f.path().join("m"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("EVIL"))
            .collect();
        assert!(
            planted.is_empty(),
            "{what}: the command's files reached the checkout outside: {planted:?}"
        );

        // The main checkout the workspace; a linked worktree outside, mid-bisect.
        sh(
            &f,
            "set -e; git -C m worktree add -q ../wt2 -b feat main; cd wt2
             git bisect start >/dev/null; git bisect bad >/dev/null; git bisect good HEAD~3 >/dev/null",
        );
        let feat = sh(&f, "git -C m rev-parse feat");
        let o = f
            .qwrap(&["run", "--workspace"])
            .arg(f.path().join("m"))
            .args(["--", "sh", "-c"])
            .arg(format!(
                "{evil}; git update-ref refs/heads/feat HEAD; sleep 1; echo done"
            ))
            .current_dir(f.path().join("m"))
            .output()
            .unwrap();
        let what = format!("{who:?} a linked worktree outside, mid-bisect");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        assert_eq!(
            sh(&f, "git -C m rev-parse feat"),
            feat,
            "{what}: the branch its bisect returns to moved"
        );
        sh(&f, "cd wt2 && git bisect reset >/dev/null 2>&1; true");
        assert!(
            !f.path().join("wt2/EVIL-1").exists(),
            "{what}: the command's files reached the checkout outside"
        );
    }
}

/// What host git keeps for a checkout outside the writable roots stays
/// the host's: the branch each such checkout has checked out (and the
/// names git would take its short name for first: `refs/NAME`, a tag), the stash
/// (with the main checkout outside), and a linked worktree's own HEAD and
/// index. Moved, deleted or rewritten inside (loose or in `packed-refs`),
/// each is refused, while the branch of the checkout inside still reaches
/// the host. With a linked worktree as the workspace, and with the main
/// checkout as it.
#[test]
fn checkouts_outside_the_roots_keep_their_branches_and_state() {
    let rev = |f: &Fixture, dir: &str, what: &str| {
        let o = f
            .command("git")
            .args(["-C", dir, "rev-parse", "-q", "--verify", what])
            .current_dir(f.path())
            .output()
            .unwrap();
        stdout(&o).trim().to_string()
    };
    for who in Who::all() {
        let f = Fixture::new(who);
        let setup = format!(
            "set -e; git init -q -b main m && echo 1 > m/f && {GIT} -C m add f && {GIT} -C m commit -qm one
             echo 9 > m/f && {GIT} -C m stash -q
             git -C m worktree add -q ../wt -b w && git -C m worktree add -q ../wt2 -b w2
             echo s > wt2/staged && git -C wt2 add staged && git -C m pack-refs --all"
        );
        ok(&f
            .command("sh")
            .arg("-c")
            .arg(&setup)
            .current_dir(f.path())
            .output()
            .unwrap());
        let main = rev(&f, "m", "main");
        let stash = rev(&f, "m", "refs/stash");
        let w2 = rev(&f, "m", "w2");
        let wt2_head = std::fs::read(f.path().join("m/.git/worktrees/wt2/HEAD")).unwrap();
        let wt2_index = std::fs::read(f.path().join("m/.git/worktrees/wt2/index")).unwrap();
        let mut c = f.qwrap(&["run", "--workspace"]);
        c.arg(f.path().join("wt"))
            .args(["--", "sh", "-c"])
            .arg(format!(
                "c=$(git rev-parse --git-common-dir) && echo 2 > f && {GIT} commit -qam two
                 sed -i \"s|^$(git rev-parse main) refs/heads/main|$(git rev-parse HEAD) refs/heads/main|\" $c/packed-refs
                 git update-ref refs/heads/main HEAD; git update-ref -d refs/stash; git update-ref -d refs/heads/w2
                 git update-ref refs/main HEAD; git tag main HEAD; git tag w2 HEAD
                 printf 'ref: refs/heads/w\\n' > $c/worktrees/wt2/HEAD; cp $c/worktrees/wt/index $c/worktrees/wt2/index
                 sleep 1; echo done"
            ))
            .current_dir(f.path().join("wt"))
            .env("QWRAP_MOUNT_API", "new");
        let o = c.output().unwrap();
        let what = format!("{who:?} a linked worktree inside");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        assert_eq!(
            rev(&f, "m", "main"),
            main,
            "{what}: the main checkout's branch moved: {}",
            stderr(&o)
        );
        assert_eq!(
            rev(&f, "m", "refs/stash"),
            stash,
            "{what}: the stash changed: {}",
            stderr(&o)
        );
        assert_eq!(
            rev(&f, "m", "w2"),
            w2,
            "{what}: another worktree's branch changed: {}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read(f.path().join("m/.git/worktrees/wt2/HEAD")).unwrap(),
            wt2_head,
            "{what}: another worktree's HEAD changed"
        );
        assert_eq!(
            std::fs::read(f.path().join("m/.git/worktrees/wt2/index")).unwrap(),
            wt2_index,
            "{what}: another worktree's index changed"
        );
        // Lines added out of order, or a name twice: git's binary search
        // would take them (a branch moved, or gone).
        let o = f
            .qwrap(&["run", "--workspace"])
            .arg(f.path().join("wt"))
            .args(["--", "sh", "-c"])
            .arg(
                "c=$(git rev-parse --git-common-dir); o=$(git rev-parse HEAD)
                 for r in refs/heads/main refs/heads/w2 refs/stash refs/heads/a1; do echo \"$o $r\" >> $c/packed-refs; done
                 sleep 1; echo done",
            )
            .current_dir(f.path().join("wt"))
            .output()
            .unwrap();
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        assert_eq!(
            rev(&f, "m", "main"),
            main,
            "{what}: a line twice moved the main checkout's branch"
        );
        assert_eq!(
            rev(&f, "m", "refs/stash"),
            stash,
            "{what}: a line twice moved the stash"
        );
        assert_eq!(
            rev(&f, "m", "w2"),
            w2,
            "{what}: a line twice moved a worktree's branch"
        );
        let log = f
            .command("git")
            .args(["-C", "m", "log", "-1", "--format=%s", "w"])
            .current_dir(f.path())
            .output()
            .unwrap();
        assert_eq!(
            stdout(&log).trim(),
            "two",
            "{what}: the branch inside did not reach the host: {}",
            stderr(&o)
        );

        // The main checkout as the workspace: the linked worktrees outside.
        let wt_head = std::fs::read(f.path().join("m/.git/worktrees/wt2/HEAD")).unwrap();
        let mut c = f.qwrap(&["run", "--workspace"]);
        c.arg(f.path().join("m"))
            .args(["--", "sh", "-c"])
            .arg(format!(
                "echo 3 > f && {GIT} commit -qam three && git update-ref refs/heads/w2 HEAD
                 printf 'ref: refs/heads/main\\n' > .git/worktrees/wt2/HEAD; cp .git/index .git/worktrees/wt2/index
                 sleep 1; echo done"
            ))
            .current_dir(f.path().join("m"))
            .env("QWRAP_MOUNT_API", "new");
        let o = c.output().unwrap();
        let what = format!("{who:?} the main checkout inside");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        assert_eq!(
            rev(&f, "m", "w2"),
            w2,
            "{what}: a worktree's branch moved: {}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read(f.path().join("m/.git/worktrees/wt2/HEAD")).unwrap(),
            wt_head,
            "{what}: a worktree's HEAD changed: {}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read(f.path().join("m/.git/worktrees/wt2/index")).unwrap(),
            wt2_index,
            "{what}: a worktree's index changed"
        );
        let log = f
            .command("git")
            .args(["-C", "m", "log", "-1", "--format=%s", "main"])
            .current_dir(f.path())
            .output()
            .unwrap();
        assert_eq!(
            stdout(&log).trim(),
            "three",
            "{what}: the commit inside did not reach the host: {}",
            stderr(&o)
        );
    }
}

/// A linked worktree as the workspace, its main checkout outside the
/// writable roots: the common dir's own HEAD and index are the main
/// checkout's, and stay the host's; a branch committed inside still
/// reaches the shared refs.
#[test]
fn a_linked_worktree_leaves_its_main_checkouts_head_and_index_alone() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let setup = format!(
            "set -e; git init -q -b main m && echo 1 > m/f && {GIT} -C m add f && {GIT} -C m commit -qm one
             git -C m worktree add -q ../wt -b w"
        );
        ok(&f
            .command("sh")
            .arg("-c")
            .arg(&setup)
            .current_dir(f.path())
            .output()
            .unwrap());
        let head = std::fs::read(f.path().join("m/.git/HEAD")).unwrap();
        let index = std::fs::read(f.path().join("m/.git/index")).unwrap();
        let mut c = f.qwrap(&["run", "--workspace"]);
        c.arg(f.path().join("wt"))
            .args(["--", "sh", "-c"])
            .arg(format!(
                "c=$(git rev-parse --git-common-dir) && echo 2 > f && {GIT} commit -qam two
                 printf 'ref: refs/heads/w\\n' > $c/HEAD; rm -f $c/index; sleep 1; echo done"
            ))
            .current_dir(f.path().join("wt"))
            .env("QWRAP_MOUNT_API", "new");
        let o = c.output().unwrap();
        let what = format!("{who:?}");
        assert!(stdout(&o).contains("done"), "{what}: {}", stderr(&o));
        assert_eq!(
            std::fs::read(f.path().join("m/.git/HEAD")).unwrap(),
            head,
            "{what}: {}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read(f.path().join("m/.git/index")).unwrap(),
            index,
            "{what}"
        );
        let log = f
            .command("git")
            .args(["-C", "m", "log", "-1", "--format=%s", "w"])
            .current_dir(f.path())
            .output()
            .unwrap();
        assert_eq!(
            stdout(&log).trim(),
            "two",
            "{what}: the branch did not reach the shared refs: {}",
            stderr(&o)
        );
    }
}

/// A merge of thousands of commits at once (`MERGE_HEAD` with a line
/// each): host git compares each with each to conclude it, and 30,000
/// held `git commit` for minutes. Such a `MERGE_HEAD` stays inside; the
/// host is never left "still merging".
#[test]
fn a_merge_of_thousands_of_heads_stays_inside() {
    let inside = "base=$(git rev-parse HEAD); i=0
        while [ $i -lt 1500 ]; do
          printf 'commit refs/qwtmp/s\\nmark :%d\\ncommitter t <t@t> %d +0000\\ndata 2\\nc\\nfrom %s\\n\\n' $((i+1)) $((1700000000+i)) $base
          i=$((i+1))
        done | git fast-import --quiet --export-marks=.git/marks.tmp
        git update-ref -d refs/qwtmp/s
        cut -d' ' -f2 .git/marks.tmp > .git/MERGE_HEAD
        echo Merge > .git/MERGE_MSG
        sleep 1; echo done";
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let o = f.run_sh("new", &[], inside);
        assert!(stdout(&o).contains("done"), "{who:?}: {}", stderr(&o));
        assert!(
            !f.ws().join(".git/MERGE_HEAD").exists(),
            "{who:?}: the host is left merging 1,500 heads: {}",
            stderr(&o)
        );
        assert!(!stdout(&host(&f, "git status")).contains("merging"), "{who:?}");
        assert!(
            stderr(&o).contains("MERGE_HEAD"),
            "{who:?}: the refusal is named: {}",
            stderr(&o)
        );
    }
}

/// A history that keeps thousands of lines open at once, each commit
/// small: one commit of 40,000 parents (git walks them newest first and,
/// for `git status`, looks over every one waiting at each step: 150,000
/// held it past two minutes). It stays inside; the host's branch does not
/// move to it.
#[test]
fn a_history_too_wide_to_walk_stays_inside() {
    let inside = "base=$(git rev-parse HEAD); n=40000
        { i=1; while [ $i -le $n ]; do
            printf 'commit refs/qwtmp/p\\nmark :%d\\ncommitter t <t@t> %d +0000\\ndata 2\\np\\nfrom %s\\n\\n' $i $((1800000000-i)) $base
            i=$((i+1)); done
          printf 'commit refs/heads/main\\ncommitter t <t@t> 1900000000 +0000\\ndata 4\\noct\\nfrom %s\\n' $base
          i=1; while [ $i -le $n ]; do printf 'merge :%d\\n' $i; i=$((i+1)); done
          printf '\\n'; } | git fast-import --quiet --force
        git update-ref -d refs/qwtmp/p; git reset -q --hard main
        sleep 2; echo done";
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let host_main = || stdout(&host(&f, "git rev-parse main"));
        let before = host_main();
        let o = f.run_sh("new", &[], inside);
        assert!(stdout(&o).contains("done"), "{who:?}: {}", stderr(&o));
        assert_eq!(
            host_main(),
            before,
            "{who:?}: the host's branch moved to the wide history: {}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains("lines open at once"),
            "{who:?}: the refusal is named: {}",
            stderr(&o)
        );
    }
}

/// `git pack-refs --all` inside a linked worktree whose main checkout lies
/// outside the roots: the new `packed-refs` moves the main checkout's
/// branch too, so it stays the host's; the loose refs it replaced stay on
/// the host as well (before, they were removed, and the worktree's branch
/// was gone: the user's next commit there started a new history).
#[test]
fn refs_packed_inside_are_never_lost_on_the_host() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let sh = |dir: &str, script: &str| {
            let o = f
                .command("sh")
                .arg("-c")
                .arg(script)
                .current_dir(f.path().join(dir))
                .output()
                .unwrap();
            stdout(&o)
        };
        sh(
            ".",
            &format!(
                "set -e; git init -q -b main m && cd m && for i in 1 2; do echo $i > f$i; {GIT} add f$i; {GIT} commit -qm c$i; done
                 git worktree add -q ../wt -b feat"
            ),
        );
        let feat = sh("wt", "git rev-parse feat");
        let o = f
            .qwrap(&["run", "--workspace"])
            .arg(f.path().join("wt"))
            .args(["--", "sh", "-c", "git pack-refs --all; sleep 1; echo done"])
            .current_dir(f.path().join("wt"))
            .output()
            .unwrap();
        assert!(stdout(&o).contains("done"), "{who:?}: {}", stderr(&o));
        assert_eq!(
            sh("wt", "git rev-parse -q --verify feat"),
            feat,
            "{who:?}: the worktree's branch is gone: {}",
            stderr(&o)
        );
        assert_eq!(sh("wt", "git rev-parse -q --verify HEAD"), feat, "{who:?}");
    }
}

/// A chain of tags (each tags the one before, each with a ref): host git
/// names every link below each ref (`git log --decorate`, `git show`,
/// `git describe`), the square of the chain: 10,000 held them at 2.35 GB.
/// No tag deeper than 16 reaches the host, in one run or built on the
/// host's own chain in the next; a tag of a tag does.
#[test]
fn a_chain_of_tags_too_deep_stays_inside() {
    let chain = |from: u32, to: u32| {
        format!(
            "i={from}; while [ $i -le {to} ]; do
               if [ $i -eq 1 ]; then on=HEAD; else on=t$((i-1)); fi
               {GIT} -c advice.nestedTag=false tag -a -m t$i t$i $on || exit 1; i=$((i+1))
             done; sleep 1; echo done"
        )
    };
    let tag_on_host = |f: &Fixture, n: u32| {
        host(f, &format!("git rev-parse -q --verify refs/tags/t{n}"))
            .status
            .success()
    };
    for who in Who::all() {
        let f = Fixture::new(who);
        repo(&f);
        let o = f.run_sh("new", &[], &chain(1, 16));
        assert!(stdout(&o).contains("done"), "{who:?}: {}", stderr(&o));
        assert!(
            tag_on_host(&f, 2),
            "{who:?}: a tag of a tag is carried: {}",
            stderr(&o)
        );
        assert!(tag_on_host(&f, 16), "{who:?}: 16 deep is carried: {}", stderr(&o));
        let o = f.run_sh("new", &[], &chain(17, 40));
        assert!(stdout(&o).contains("done"), "{who:?}: {}", stderr(&o));
        let deeper: Vec<u32> = (17..=40).filter(|n| tag_on_host(&f, *n)).collect();
        assert!(
            deeper.is_empty(),
            "{who:?}: tags deeper than 16 on the host: {deeper:?}: {}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains("tag of a tag"),
            "{who:?}: the refusal is named: {}",
            stderr(&o)
        );
    }
}
