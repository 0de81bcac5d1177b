//! How a Step reads: the syscalls `qwrap plan` prints for it, one line
//! each (tests/plan_calls.rs holds them to a trace, exec/fake_tests.rs to
//! the executor's code).

use super::filter_text;
use super::step::{Ambient, IdMap, Role, Step};
use super::step_args::{DETACHED_END, DETACHED_LIGHT, ONE_THREAD, join_flags, q};
use std::fmt;

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::ListenEgress { port } => write!(
                f,
                "socket(AF_INET, SOCK_STREAM); setsockopt(SO_REUSEADDR); bind(127.0.0.1:{port}); listen(); sendmsg(<warden>, SCM_RIGHTS): the warden serves it from outside"
            ),
            Step::WriteHostFile { .. }
            | Step::CreateHostDir { .. }
            | Step::PrepareCaches { .. }
            | Step::PrepareReview { .. }
            | Step::MakeCgroup { .. }
            | Step::JoinCgroup { .. }
            | Step::StartWarden { .. } => super::step_text_host::write(self, f),
            Step::Unshare { ns } => write!(f, "unshare({})", ns.names()),
            Step::RefuseKeyrings => write!(
                f,
                "prctl(PR_SET_NO_NEW_PRIVS, 1); seccomp(SECCOMP_SET_MODE_FILTER, {{{} = EPERM, otherwise allow}})",
                super::filter_landlock::KEYRING_CALLS.join("/")
            ),
            Step::SeccompNotify {
                signals,
                root,
                landlock_only,
                explain,
            } => {
                write!(
                    f,
                    "seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, {}",
                    filter_text::described(true, *signals, *root, *landlock_only)
                )?;
                if *explain {
                    write!(f, "{}", filter_text::explained(*landlock_only, !*signals))?;
                }
                write!(f, "); sendmsg(warden, SCM_RIGHTS listener)")
            }
            Step::SeccompToMonitor { layers } => super::step_text_process::to_monitor(f, *layers),
            Step::DenySetgroups => write!(f, "openat(\"/proc/self/setgroups\", O_WRONLY); write(\"deny\")"),
            Step::WriteIdMap { map, inside, outside } => {
                let file = if *map == IdMap::Uid { "uid_map" } else { "gid_map" };
                write!(
                    f,
                    "openat(\"/proc/self/{file}\", O_WRONLY); write(\"{inside} {outside} 1\")"
                )
            }
            Step::LoopbackUp => write!(
                f,
                "ioctl(socket(AF_INET, SOCK_DGRAM), SIOCSIFFLAGS, {{\"lo\", IFF_UP}})"
            ),
            Step::MakeMountsSlave => write!(f, "mount(NULL, \"/\", NULL, MS_REC|MS_SLAVE, NULL)"),
            Step::CloneTree {
                tree,
                source,
                recursive,
                ..
            } => write!(
                f,
                "open_tree(AT_FDCWD, {}, OPEN_TREE_CLONE|OPEN_TREE_CLOEXEC{}) = tree{tree}",
                q(source),
                if *recursive { "|AT_RECURSIVE" } else { "" }
            ),
            Step::SetTreeAttr { tree, set, private } => {
                let mut attr = Vec::new();
                let set = set.names("MOUNT_ATTR_");
                if !set.is_empty() {
                    attr.push(format!("attr_set={}", set.join("|")));
                }
                if *private {
                    attr.push("propagation=MS_PRIVATE".into());
                }
                write!(
                    f,
                    "mount_setattr(tree{tree}, \"\", AT_EMPTY_PATH|AT_RECURSIVE, {{{}}})",
                    attr.join(", ")
                )
            }
            Step::MountTmpfs {
                target,
                flags,
                mode,
                size,
            } => write!(
                f,
                "mount(\"tmpfs\", {}, \"tmpfs\", {}, \"mode={mode:04o}{}\")",
                q(target),
                join_flags(flags.names("MS_")),
                size.map(|s| format!(",size={s}")).unwrap_or_default()
            ),
            Step::AttachTree { tree, target, role } => write!(
                f,
                "move_mount(tree{tree}, \"\", AT_FDCWD, {}, MOVE_MOUNT_F_EMPTY_PATH{})",
                q(target),
                if *role == Role::Bind {
                    "|MOVE_MOUNT_T_SYMLINKS"
                } else {
                    ""
                }
            ),
            Step::MakeMountPoint {
                path,
                dir,
                mode,
                if_missing: false,
            } => match dir {
                true => write!(f, "mkdir({}, {mode:04o})", q(path)),
                false => write!(f, "mknod({}, S_IFREG|{mode:04o})", q(path)),
            },
            Step::Symlink { target, link } => write!(f, "symlink({}, {})", q(target), q(link)),
            Step::ClaimPty { target, index } => write!(
                f,
                "open({}, O_RDWR|O_NOCTTY|O_CLOEXEC) and ioctl(TIOCGPTN) until it answers {index} (the ptys below it closed again); sendmsg(warden, SCM_RIGHTS the pty at {index}), which holds it",
                q(&target.with_file_name("ptmx"))
            ),
            Step::MountDevpts { target } => write!(
                f,
                "mount(\"devpts\", {}, \"devpts\", MS_NOSUID|MS_NOEXEC, \"newinstance,ptmxmode=0666,mode=620\")",
                q(target)
            ),
            Step::SetPathAttr {
                target,
                recursive,
                set,
                private,
            } => {
                let mut attr = Vec::new();
                let names = set.names("MOUNT_ATTR_");
                if !names.is_empty() {
                    attr.push(format!("attr_set={}", names.join("|")));
                }
                if *private {
                    attr.push("propagation=MS_PRIVATE".into());
                }
                write!(
                    f,
                    "mount_setattr(AT_FDCWD, {}, {}, {{{}}})",
                    q(target),
                    if *recursive { "AT_RECURSIVE" } else { "0" },
                    attr.join(", ")
                )
            }
            Step::BindMount {
                source,
                target,
                recursive,
                ..
            } => write!(
                f,
                "mount({}, {}, NULL, MS_BIND{}, NULL)",
                q(source),
                q(target),
                if *recursive { "|MS_REC" } else { "" }
            ),
            Step::MakeTreePrivate { target } => {
                write!(f, "mount(NULL, {}, NULL, MS_REC|MS_PRIVATE, NULL)", q(target))
            }
            Step::RemountTree {
                target,
                source,
                table,
                set,
                recursive,
            } => {
                let set = join_flags(set.names("MS_"));
                write!(
                    f,
                    "statfs({0}); mount(NULL, {0}, NULL, MS_REMOUNT|MS_BIND|{set}|<its own flags>, NULL)",
                    q(target)
                )?;
                if *recursive {
                    write!(
                        f,
                        "; for each mount M under {} in {} (openat, statx and read once): \
                         mount(NULL, M under {}, NULL, MS_REMOUNT|MS_BIND|{set}|<M's flags>, NULL)",
                        q(source),
                        q(table),
                        q(target)
                    )?;
                }
                Ok(())
            }
            Step::Remount { target, flags } => {
                let mut names = vec!["MS_REMOUNT".to_string(), "MS_BIND".to_string()];
                names.extend(flags.names("MS_"));
                write!(f, "mount(NULL, {}, NULL, {}, NULL)", q(target), names.join("|"))
            }
            Step::PivotRoot { new_root, put_old } => write!(
                f,
                "pivot_root({0}, {1}); chdir(\"/\") (on an initramfs root: mount(\"/\", {1}, MS_BIND|MS_REC); chdir({0}); mount(\".\", \"/\", MS_MOVE); chroot(\".\"))",
                q(new_root),
                q(put_old)
            ),
            Step::EnterRoot { new_root } => write!(
                f,
                "chdir({}); pivot_root(\".\", \".\"); umount2(\".\", MNT_DETACH); chdir(\"/\") (on an initramfs root: mount(\".\", \"/\", MS_MOVE); chroot(\".\"))",
                q(new_root)
            ),
            Step::Chdir { candidates } if candidates.len() == 1 => write!(f, "chdir({})", q(&candidates[0])),
            Step::DropCapabilities {
                keep,
                bounding,
                ambient,
            } => {
                let but = if keep.is_empty() {
                    String::new()
                } else {
                    format!(" but {keep:?}")
                };
                if *bounding {
                    write!(f, "prctl(PR_CAPBSET_DROP, every cap{but}); ")?;
                }
                if keep.is_empty() {
                    write!(
                        f,
                        "prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL); capset(effective=0, permitted=0, inheritable=0)"
                    )
                } else {
                    write!(
                        f,
                        "prctl(PR_CAP_AMBIENT_LOWER, every cap{but}); capget(); capset(only {keep:?}{}) (skipped when nothing changes)",
                        if *ambient == Ambient::Raise {
                            ", inheritable = permitted"
                        } else {
                            ""
                        }
                    )?;
                    match ambient {
                        Ambient::Lower => Ok(()),
                        Ambient::Raise => write!(f, "; prctl(PR_CAP_AMBIENT_RAISE, each kept)"),
                        Ambient::Offer => write!(
                            f,
                            "; prctl(PR_CAP_AMBIENT_RAISE, each kept), refusals ignored (the inheritable set decides, as in bubblewrap)"
                        ),
                    }
                }
            }
            Step::NoNewPrivs => write!(f, "prctl(PR_SET_NO_NEW_PRIVS, 1)"),
            Step::Landlock {
                abi,
                paths,
                fifo,
                scoped,
            } => landlock_text(*abi, paths, fifo, *scoped, f),
            Step::HandGitDirs { dirs } => {
                let names: Vec<String> = dirs.iter().map(|d| q(d)).collect();
                write!(
                    f,
                    "open(each of {}, O_RDONLY|O_DIRECTORY); sendmsg(warden, SCM_RIGHTS each); read(warden) = the warden has copied in the host's files (it then keeps git's allow-listed files in step both ways, under git's locks, with inotify)",
                    names.join(", ")
                )
            }
            Step::StartReaper => write!(
                f,
                "getpid() = the command; landlock_create_ruleset(handled=REFER, scoped=SIGNAL); open(\"/\", O_PATH); fstat; landlock_add_rule(PATH_BENEATH, REFER, \"/\"); prctl(PR_SET_NO_NEW_PRIVS, 1); landlock_restrict_self(); pidfd_open(the command); {ONE_THREAD}mmap(64 KiB stack for the reaper, never unmapped); {DETACHED_LIGHT}the reaper on that stack, sharing the command's memory until its exec (in it, raw system calls only: a session of its own, open of the null device onto 0-2, close_range of all but the pidfd, poll of the command's pidfd, then, if the warden (the caller's, outside) is out of its reach, kill(-1, SIGKILL)){DETACHED_END}; sendmsg(warden, SCM_RIGHTS pidfd)"
            ),
            Step::Seccomp => write!(
                f,
                "prctl(PR_SET_NO_NEW_PRIVS, 1); seccomp(SECCOMP_SET_MODE_FILTER, {})",
                filter_text::described(false, false, false, false)
            ),
            Step::MakeHiddenSource { tree } => write!(
                f,
                "fsopen(\"tmpfs\"); fsconfig(mode=0000, size=4096, nr_inodes=4); fsmount() = tree{tree}; mkdirat(tree{tree}, \"d\", 0000); openat(tree{tree}, \"f\", O_CREAT, 0000); mount_setattr(tree{tree}, \"\", AT_EMPTY_PATH, {{attr_set=MOUNT_ATTR_RDONLY}})"
            ),
            Step::AttachHidden { source, dir, target } => write!(
                f,
                "open_tree(tree{source}, \"{}\", OPEN_TREE_CLONE); move_mount(…, AT_FDCWD, {}, MOVE_MOUNT_F_EMPTY_PATH); born read-only (before Linux 5.12: mount(NULL, {}, NULL, MS_REMOUNT|MS_BIND|MS_RDONLY|MS_NOSUID|MS_NODEV|MS_NOEXEC, NULL))",
                if *dir { "d" } else { "f" },
                q(target),
                q(target)
            ),
            Step::ReopenFd { fd, path } => write!(
                f,
                "fcntl({fd}, F_GETFL); open({}, that access mode|O_NOCTTY); fstat both: the same device; dup2 onto fd {fd}",
                q(path)
            ),
            Step::SealFds { keep, closed } => {
                let closed: Vec<String> = closed.iter().map(|(fd, what)| format!("{fd} ({what})")).collect();
                write!(
                    f,
                    "close_range(3, ~0U, CLOSE_RANGE_CLOEXEC); fcntl(F_SETFD, 0) on kept fds {keep:?}; closed at exec: [{}]",
                    closed.join(", ")
                )
            }
            Step::MakeMountPoint {
                path,
                dir,
                mode,
                if_missing: true,
            } => write!(
                f,
                "open({}, O_PATH) (where missing: each missing parent made by mkdir(…, bubblewrap's parent mode), then {}({0}, {mode:04o}))",
                q(path),
                if *dir {
                    "mkdir"
                } else {
                    "open(O_CREAT|O_EXCL|O_NOFOLLOW)"
                },
            ),
            Step::MountProc { target } => write!(
                f,
                "mount(\"proc\", {}, \"proc\", MS_NOSUID|MS_NOEXEC|MS_NODEV, NULL)",
                q(target)
            ),
            Step::MountMqueue { target } => {
                write!(f, "mount(\"mqueue\", {}, \"mqueue\", 0, NULL)", q(target))
            }
            Step::ReadOnlyInPlace {
                path,
                legacy: false,
                bubblewrap,
            } => write!(
                f,
                "{1}; open_tree({0}, OPEN_TREE_CLONE|AT_RECURSIVE); mount_setattr(RDONLY, AT_RECURSIVE); move_mount(onto {0})",
                q(path),
                unless_read_only(path, *bubblewrap)
            ),
            Step::ReadOnlyInPlace {
                path,
                legacy: true,
                bubblewrap,
            } => write!(
                f,
                "{1}; mount({0}, {0}, NULL, MS_BIND|MS_REC, NULL); statfs({0}); mount(NULL, {0}, NULL, MS_REMOUNT|MS_BIND|MS_RDONLY|<its own flags>, NULL)",
                q(path),
                unless_read_only(path, *bubblewrap)
            ),
            Step::CopyFdToFile { fd, path, mode } => write!(
                f,
                "read fd {fd} to its end (statx, lseek, read); open({}, O_CREAT|O_WRONLY|O_TRUNC|O_NOFOLLOW, {mode:04o}); write; fchmod",
                q(path)
            ),
            Step::Chmod { path, mode } => write!(f, "chmod({}, {mode:04o})", q(path)),
            Step::MakeOverlay {
                tree,
                lower,
                upper,
                userxattr,
            } => {
                if *upper == crate::plan::OverlayUpper::Tmpfs {
                    write!(
                        f,
                        "fsopen(\"tmpfs\"); fsconfig(mode=0755); fsmount() = <tmpfs>; mkdirat(<tmpfs>, \"upper\"), mkdirat(<tmpfs>, \"work\"); "
                    )?;
                }
                write!(
                    f,
                    "fsopen(\"overlay\"); fsconfig(\"{}\"); fsmount() -> tree {tree}",
                    crate::plan::overlay_options(lower, upper, *userxattr, "<tmpfs>")
                )
            }
            Step::HomeCaches {
                home,
                upper,
                work,
                userxattr,
                parts,
            } => {
                let dirs = crate::plan::OverlayUpper::Dirs {
                    upper: upper.clone(),
                    work: work.clone(),
                };
                write!(
                    f,
                    "fsopen(\"overlay\"); fsconfig(\"{}\"); fsmount() = <home overlay>",
                    crate::plan::overlay_options(std::slice::from_ref(home), &dirs, *userxattr, "")
                )?;
                for p in parts {
                    let rel = p.path.strip_prefix(home).unwrap_or(&p.path);
                    write!(
                        f,
                        "; open_tree(<home overlay>, {}, OPEN_TREE_CLONE|OPEN_TREE_CLOEXEC) -> tree {}",
                        q(rel),
                        p.tree
                    )?;
                }
                write!(
                    f,
                    " (before Linux 6.15, EINVAL from a detached mount: move_mount(<home overlay>, \"\", AT_FDCWD, {0}, MOVE_MOUNT_F_EMPTY_PATH), open_tree(AT_FDCWD, each path, OPEN_TREE_CLONE|OPEN_TREE_CLOEXEC), umount2({0}, MNT_DETACH)) \
                     (EINVAL from fsconfig, a host mount beneath the home: per cache, mkdir(UPPER/its path), mkdir(LAYER/work-N), fsopen(\"overlay\"), fsconfig(lowerdir=its path, upperdir=UPPER/its path, workdir=LAYER/work-N), fsmount() -> its tree; one the host lacks: open_tree(AT_FDCWD, UPPER/its path, OPEN_TREE_CLONE) -> its tree)",
                    q(home)
                )
            }
            Step::Chdir { candidates } => {
                let c: Vec<String> = candidates.iter().map(|p| q(p)).collect();
                write!(f, "chdir(the first of {})", c.join(", "))
            }
            Step::DieWithParent
            | Step::NewSession
            | Step::StayInit
            | Step::DetachTerminal
            | Step::CloneMonitor { .. }
            | Step::JoinNamespace { .. }
            | Step::ForkIntoPidNamespace { .. }
            | Step::NotifyMonitor
            | Step::AssertUsernsDisabled
            | Step::SetHostname { .. }
            | Step::CallerSeccomp { .. }
            | Step::PidOneInit { .. }
            | Step::HandInit
            | Step::SeccompPrivatePid { .. }
            | Step::LandlockScopes { .. }
            | Step::BlockOnFd { .. }
            | Step::LockFile { .. }
            | Step::DisableUserns
            | Step::NestUserNamespace { .. } => super::step_text_process::write(self, f),
            Step::MakePrivateDir { .. }
            | Step::LandlockAllowList { .. }
            | Step::LandlockOnlyFilter { .. } => super::step_text_landlock::write(self, f),
            Step::Exec { argv, env, .. } => {
                let args: Vec<String> = argv.iter().map(|a| format!("{a:?}")).collect();
                let mut changes: Vec<String> = env
                    .unset
                    .iter()
                    .map(|k| format!("-{}", k.to_string_lossy()))
                    .collect();
                changes.extend(
                    env.set
                        .iter()
                        .map(|(k, v)| format!("+{}={}", k.to_string_lossy(), v.to_string_lossy())),
                );
                write!(
                    f,
                    "execvp({}, [{}]) with environment {}",
                    args.first().map(String::as_str).unwrap_or("\"\""),
                    args.join(", "),
                    changes.join(" ")
                )
            }
        }
    }
}

/// ReadOnlyInPlace's first call: what leaves the path alone.
fn unless_read_only(path: &std::path::Path, bubblewrap: bool) -> String {
    if bubblewrap {
        format!("access({}, W_OK) (left alone if not writable)", q(path))
    } else {
        format!("statfs({}) (left alone if read-only already)", q(path))
    }
}

/// `Step::Landlock`'s calls.
fn landlock_text(
    abi: u32,
    paths: &[std::path::PathBuf],
    fifo: &[std::path::PathBuf],
    scoped: bool,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let beneath: Vec<String> = paths.iter().map(|p| q(p)).collect();
    let fifos: Vec<String> = fifo.iter().map(|p| q(p)).collect();
    write!(
        f,
        "landlock_create_ruleset(ABI {abi}, handled=write-type{}); openat(each path, O_PATH) and landlock_add_rule(PATH_BENEATH, write-type but MAKE_FIFO, {} and the terminals on fds 0-2, found by fcntl(F_GETFL), readlink and fstat); landlock_add_rule(PATH_BENEATH, MAKE_FIFO, {}); prctl(PR_SET_NO_NEW_PRIVS, 1); landlock_restrict_self()",
        if scoped {
            ", scoped=SIGNAL|ABSTRACT_UNIX_SOCKET"
        } else {
            ""
        },
        beneath.join(", "),
        fifos.join(", ")
    )
}
