//! The printed calls of the mount steps: the tree, its attributes, the
//! filesystems of the sandbox's own.

use super::step::{Role, Step};
use super::step_args::{join_flags, q};
use std::fmt;

/// The mount tree's steps: trees cloned, attached and given attributes,
/// mount points, the root switched.
pub(super) fn tree(step: &Step, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match step {
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
        Step::SetTreeAttr { tree, set, private } => write!(
            f,
            "mount_setattr(tree{tree}, \"\", AT_EMPTY_PATH|AT_RECURSIVE, {{{}}})",
            mount_attr(set, *private)
        ),
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
        _ => Ok(()),
    }
}

/// Mounts made read-only, nosuid or private after they are in place.
pub(super) fn attributes(step: &Step, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match step {
        Step::SetPathAttr {
            target,
            recursive,
            set,
            private,
        } => {
            let attr = mount_attr(set, *private);
            write!(
                f,
                "mount_setattr(AT_FDCWD, {}, {}, {{{}}})",
                q(target),
                if *recursive { "AT_RECURSIVE" } else { "0" },
                attr
            )
        }
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
        _ => Ok(()),
    }
}

/// Filesystems of the sandbox's own (devpts, proc, mqueue, the hidden
/// tmpfs, overlays) and paths changed in place.
pub(super) fn filesystems(step: &Step, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match step {
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
        _ => Ok(()),
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

/// A `struct mount_attr` as printed: the attributes set, the propagation.
fn mount_attr(set: &super::step::Flags, private: bool) -> String {
    let mut attr = Vec::new();
    let names = set.names("MOUNT_ATTR_");
    if !names.is_empty() {
        attr.push(format!("attr_set={}", names.join("|")));
    }
    if private {
        attr.push("propagation=MS_PRIVATE".into());
    }
    attr.join(", ")
}
