use super::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;

/// A host git dir with git's files and pointers, and an empty own side.
fn pair(kind: Kind) -> (tempfile::TempDir, PathBuf, PathBuf, Pair) {
    let d = tempfile::tempdir().unwrap();
    let host = d.path().join("host");
    let own = d.path().join("own");
    fs::create_dir_all(host.join("hooks")).unwrap();
    fs::create_dir_all(&own).unwrap();
    fs::write(host.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    // The branches HEAD is moved to: on the host already, so HEAD need not
    // wait for them.
    fs::create_dir_all(host.join("refs/heads")).unwrap();
    for b in ["main", "topic", "inside", "again"] {
        fs::write(host.join("refs/heads").join(b), OID).unwrap();
    }
    fs::write(host.join("index"), "DIRC…").unwrap();
    fs::write(host.join("config"), "[core]\n").unwrap();
    fs::write(host.join("hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(host.join("hooks/pre-commit"), fs::Permissions::from_mode(0o755)).unwrap();
    let fd = rustix::fs::open(&own, dir_flags(), Mode::empty()).unwrap();
    let p = Pair::new(host.clone(), fd, kind).unwrap();
    (d, host, own, p)
}

fn sync(p: &mut Pair) -> Vec<(PathBuf, Done)> {
    let mut all = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(r) = todo.pop() {
        let (below, done) = p.reconcile(&r);
        todo.extend(below);
        all.extend(done);
    }
    all
}

#[test]
fn git_data_goes_both_ways_and_nothing_else_reaches_the_host() {
    let (_d, host, own, mut p) = pair(Kind::Top);
    p.populate();
    sync(&mut p);
    assert_eq!(
        fs::read_to_string(own.join("HEAD")).unwrap(),
        "ref: refs/heads/main\n"
    );
    assert_eq!(fs::read_to_string(own.join("config")).unwrap(), "[core]\n");
    let mode = fs::metadata(own.join("hooks/pre-commit"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    // Inside: git's data, and what must never leave.
    fs::write(own.join("ORIG_HEAD"), OID).unwrap();
    fs::write(own.join("HEAD"), "ref: refs/heads/topic\n").unwrap();
    fs::create_dir_all(own.join("rebase-merge/sub")).unwrap();
    fs::write(own.join("rebase-merge/sub/done"), "pick 1\n").unwrap();
    for n in [
        "commondir",
        "gitdir",
        "config.worktree",
        "qwrap-new-name",
        "index.lock",
    ] {
        fs::write(own.join(n), "/evil\n").unwrap();
    }
    fs::write(own.join("config"), "[core]\n\tfsmonitor = touch /x\n").unwrap();
    fs::write(own.join("hooks/post-commit"), "evil").unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        own.join("FETCH_HEAD"),
        rustix::fs::FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    std::os::unix::fs::symlink("/etc/passwd", own.join("packed-refs")).unwrap();
    let done = sync(&mut p);
    assert_eq!(fs::read_to_string(host.join("ORIG_HEAD")).unwrap(), OID);
    assert_eq!(
        fs::read_to_string(host.join("HEAD")).unwrap(),
        "ref: refs/heads/topic\n"
    );
    assert_eq!(
        fs::read_to_string(host.join("rebase-merge/sub/done")).unwrap(),
        "pick 1\n"
    );
    for n in [
        "commondir",
        "gitdir",
        "config.worktree",
        "qwrap-new-name",
        "index.lock",
        "FETCH_HEAD",
        "packed-refs",
        "hooks/post-commit",
    ] {
        assert!(
            fs::symlink_metadata(host.join(n)).is_err(),
            "{n} reached the host"
        );
    }
    assert_eq!(fs::read_to_string(host.join("config")).unwrap(), "[core]\n");
    assert!(
        done.iter()
            .any(|(n, d)| n == Path::new("FETCH_HEAD") && matches!(d, Done::Refused(_))),
        "{done:?}"
    );
    // The host's changes come in (once the sandbox's own lock on the
    // index is gone); a removal goes out.
    fs::write(host.join("index"), "DIRC2").unwrap();
    let done = sync(&mut p);
    assert!(
        done.iter()
            .any(|(n, d)| n == Path::new("index") && *d == Done::Deferred),
        "{done:?}"
    );
    fs::remove_file(own.join("index.lock")).unwrap();
    fs::remove_file(own.join("ORIG_HEAD")).unwrap();
    fs::remove_dir_all(own.join("rebase-merge")).unwrap();
    sync(&mut p);
    assert_eq!(fs::read_to_string(own.join("index")).unwrap(), "DIRC2");
    assert!(!host.join("ORIG_HEAD").exists());
    assert!(!host.join("rebase-merge").exists());
}

const OID: &str = "0123456789abcdef0123456789abcdef01234567\n";

#[test]
fn a_lock_held_defers_and_both_changed_keeps_the_hosts() {
    let (_d, host, own, mut p) = pair(Kind::Top);
    sync(&mut p);
    fs::write(own.join("HEAD"), "ref: refs/heads/inside\n").unwrap();
    fs::write(host.join("HEAD.lock"), "").unwrap();
    let done = sync(&mut p);
    assert!(done.iter().any(|(_, d)| *d == Done::Deferred), "{done:?}");
    assert_eq!(
        fs::read_to_string(host.join("HEAD")).unwrap(),
        "ref: refs/heads/main\n"
    );
    fs::remove_file(host.join("HEAD.lock")).unwrap();
    sync(&mut p);
    assert_eq!(
        fs::read_to_string(host.join("HEAD")).unwrap(),
        "ref: refs/heads/inside\n"
    );
    // Both change: the host's wins on both sides.
    fs::write(own.join("HEAD"), "ref: refs/heads/again\n").unwrap();
    fs::write(host.join("HEAD"), "host\n").unwrap();
    let done = sync(&mut p);
    assert!(done.iter().any(|(_, d)| *d == Done::Conflict), "{done:?}");
    assert_eq!(fs::read_to_string(own.join("HEAD")).unwrap(), "host\n");
}

/// The sandbox's objects start with alternates naming the host's (seen
/// read-only at the git dir's top) and the host's own, made absolute; an
/// alternates file written inside stays inside.
#[test]
fn objects_name_the_hosts_and_keep_alternates_inside() {
    let d = tempfile::tempdir().unwrap();
    let git = d.path().join("repo/.git");
    let own = d.path().join("own");
    fs::create_dir_all(git.join("objects/info")).unwrap();
    fs::create_dir_all(&own).unwrap();
    fs::write(
        git.join("objects/info/alternates"),
        "../../other/.git/objects\n/abs/objects\n",
    )
    .unwrap();
    let fd = rustix::fs::open(&own, dir_flags(), Mode::empty()).unwrap();
    let mut p = Pair::new(git.join("objects"), fd, Kind::Objects).unwrap();
    p.populate();
    let want = format!(
        "{}\n{}\n/abs/objects\n",
        git.join(crate::policy::HOST_OBJECTS).display(),
        git.join("objects/../../other/.git/objects").display()
    );
    assert_eq!(fs::read_to_string(own.join("info/alternates")).unwrap(), want);
    fs::write(own.join("info/alternates"), "/evil/objects\n").unwrap();
    sync(&mut p);
    assert_eq!(
        fs::read_to_string(git.join("objects/info/alternates")).unwrap(),
        "../../other/.git/objects\n/abs/objects\n"
    );
}

#[test]
fn the_allow_list() {
    let yes = [
        "index",
        "HEAD",
        "ORIG_HEAD",
        "CHERRY_PICK_HEAD",
        "packed-refs",
        "BISECT_LOG",
        "sharedindex.0a1b",
        "rebase-merge",
        "rebase-merge/x/y",
    ];
    for n in yes {
        assert!(synced(Kind::Top, Path::new(n)).is_some(), "{n}");
    }
    let no = [
        "config",
        "commondir",
        "gitdir",
        "config.worktree",
        "hooks",
        "info",
        "index.lock",
        "evil_HEAD",
        "sharedindex.zz",
        "objects",
        "x",
    ];
    for n in no {
        assert!(synced(Kind::Top, Path::new(n)).is_none(), "{n}");
    }
    assert!(synced(Kind::Objects, Path::new("info/alternates")).is_none());
}

/// The job's decisions through the recording fake: which calls each makes,
/// with no file system behind them.
mod through_the_fake {
    use super::*;
    use crate::sys::fake::{self, Scripted};

    const REG: u32 = 0o100644;
    const MSG: &str = "\"COMMIT_EDITMSG\"";

    /// A top-level pair both of whose sides the fake answers, recording.
    fn faked_pair() -> Pair {
        fake::start();
        let p = Pair::new(PathBuf::from("/repo/.git"), fake::fd(), Kind::Top).unwrap();
        fake::take_calls();
        p
    }

    /// One side's file as the fake says it: its type twice (the look and
    /// the descriptor opened), then its bytes and the end.
    fn file(data: &[u8]) {
        fake::script(Scripted::Mode(REG));
        fake::script(Scripted::Mode(REG));
        fake::script(Scripted::Read(data.to_vec()));
        fake::script(Scripted::Read(Vec::new()));
    }

    fn one(p: &mut Pair, rel: &str) -> (Done, Vec<String>) {
        let d = p.one(Path::new(rel), Shape::File, &mut Vec::new());
        (d, fake::finish())
    }

    fn at(calls: &[String], start: &str) -> Option<usize> {
        calls.iter().position(|c| c.starts_with(start))
    }

    fn writes(calls: &[String]) -> Vec<&String> {
        let w = ["write", "pwrite64", "renameat", "unlinkat", "mkdirat", "fchmod"];
        calls
            .iter()
            .filter(|c| w.iter().any(|n| c.starts_with(n)))
            .collect()
    }

    #[test]
    fn a_link_fifo_or_device_made_inside_is_never_opened_nor_copied() {
        for mode in [0o120777, 0o010644, 0o020666, 0o140755] {
            let mut p = faked_pair();
            fake::script(Scripted::FailOn("newfstatat", MSG, Errno::NOENT));
            fake::script(Scripted::Mode(mode));
            let (d, calls) = one(&mut p, "COMMIT_EDITMSG");
            assert_eq!(d, Done::Refused(LINK.into()), "{mode:o}");
            assert_eq!(at(&calls, &format!("openat(dirfd, {MSG}")), None, "{calls:?}");
            assert!(writes(&calls).is_empty(), "{calls:?}");
        }
    }

    #[test]
    fn a_file_swapped_for_a_fifo_between_the_look_and_the_open_is_not_read() {
        let mut p = faked_pair();
        fake::script(Scripted::FailOn("newfstatat", MSG, Errno::NOENT));
        fake::script(Scripted::Mode(REG));
        fake::script(Scripted::Mode(0o010644));
        fake::script(Scripted::Read(b"planted".to_vec()));
        let (d, calls) = one(&mut p, "COMMIT_EDITMSG");
        assert_eq!(d, Done::Refused(LINK.into()));
        let opened = at(&calls, &format!("openat(dirfd, {MSG}")).expect("opened");
        assert!(calls[opened].contains("NOFOLLOW") && calls[opened].contains("NONBLOCK"));
        assert!(!calls.iter().any(|c| c.starts_with("read")), "{calls:?}");
        assert!(writes(&calls).is_empty(), "{calls:?}");
    }

    #[test]
    fn a_copy_to_the_host_is_written_under_gits_lock_and_renamed_into_place() {
        let mut p = faked_pair();
        fake::script(Scripted::FailOn("newfstatat", MSG, Errno::NOENT));
        file(b"msg\n");
        let (d, calls) = one(&mut p, "COMMIT_EDITMSG");
        assert_eq!(d, Done::Copied);
        let lock = at(&calls, "openat(dirfd, \"COMMIT_EDITMSG.lock\"").expect("the lock");
        assert!(
            calls[lock].contains("CREATE")
                && calls[lock].contains("EXCL")
                && calls[lock].contains("NOFOLLOW")
        );
        let write = at(&calls, "write(fd, \"msg\\n\")").expect("written");
        let rename = at(
            &calls,
            "renameat(dirfd, \"COMMIT_EDITMSG.lock\", dirfd, \"COMMIT_EDITMSG\")",
        )
        .expect("renamed");
        assert!(lock < write && write < rename, "{calls:?}");
    }

    #[test]
    fn a_lock_held_on_the_host_defers_the_write() {
        let mut p = faked_pair();
        fake::script(Scripted::FailOn("newfstatat", MSG, Errno::NOENT));
        file(b"msg\n");
        fake::script(Scripted::FailOn("openat", "COMMIT_EDITMSG.lock", Errno::EXIST));
        let (d, calls) = one(&mut p, "COMMIT_EDITMSG");
        assert_eq!(d, Done::Deferred);
        assert!(
            !calls
                .iter()
                .any(|c| c.starts_with("write") || c.starts_with("renameat")),
            "{calls:?}"
        );
    }

    #[test]
    fn both_sides_changed_the_host_keeps_its_own() {
        let mut p = faked_pair();
        file(b"the host's\n");
        file(b"the command's\n");
        let (d, calls) = one(&mut p, "COMMIT_EDITMSG");
        assert_eq!(d, Done::Conflict);
        // Written is the host's, to the sandbox's side.
        assert!(at(&calls, "write(fd, \"the host's\\n\")").is_some(), "{calls:?}");
        assert!(at(&calls, "write(fd, \"the command's").is_none(), "{calls:?}");
    }

    #[test]
    fn head_removed_inside_stays_on_the_host() {
        let head = b"ref: refs/heads/main\n";
        let mut p = faked_pair();
        p.base.insert(PathBuf::from("HEAD"), git_files::hash(head));
        fake::script(Scripted::PassOn("newfstatat", "\"HEAD\""));
        fake::script(Scripted::FailOn("newfstatat", "\"HEAD\"", Errno::NOENT));
        file(head);
        let (d, calls) = one(&mut p, "HEAD");
        assert!(
            matches!(d, Done::Refused(ref why) if why.contains("git never removes it")),
            "{d:?}"
        );
        assert!(writes(&calls).is_empty(), "{calls:?}");
    }

    /// A job watching one pair, its start-up calls taken.
    fn faked_job() -> (GitSync, Vec<String>) {
        let p = faked_pair();
        let job = GitSync::new(vec![p], None).unwrap();
        (
            job,
            fake::take_calls()
                .into_iter()
                .map(|c| format!("{}({})", c.name, c.args))
                .collect(),
        )
    }

    #[test]
    fn every_directory_is_watched_without_following_a_link() {
        let (_job, calls) = faked_job();
        fake::stop();
        let watches: Vec<&String> = calls
            .iter()
            .filter(|c| c.starts_with("inotify_add_watch"))
            .collect();
        // The top level, on both sides.
        assert!(watches.len() >= 2, "{calls:?}");
        for w in watches {
            assert!(w.contains("DONT_FOLLOW") && w.contains("ONLYDIR"), "{w}");
        }
    }

    #[test]
    fn an_overflowed_queue_looks_at_everything_and_a_strange_watch_at_nothing() {
        let (mut job, _) = faked_job();
        fake::script(Scripted::Events(vec![(
            99,
            rustix::fs::inotify::ReadFlags::CLOSE_WRITE.bits(),
        )]));
        job.on_events();
        let calls = fake::take_calls();
        assert!(!calls.iter().any(|c| c.name == "getdents64"), "{calls:?}");
        let overflow = rustix::fs::inotify::ReadFlags::QUEUE_OVERFLOW.bits();
        fake::script(Scripted::Events(vec![(-1, overflow)]));
        fake::script(Scripted::Entries(vec![(
            "HEAD".into(),
            rustix::fs::FileType::RegularFile,
        )]));
        job.on_events();
        let calls = fake::finish();
        // Both sides' top level listed again, and the name found looked at.
        assert!(
            calls.iter().filter(|c| c.starts_with("getdents64")).count() >= 2,
            "{calls:?}"
        );
        assert!(at(&calls, "newfstatat(dirfd, \"HEAD\"").is_some(), "{calls:?}");
    }
}
