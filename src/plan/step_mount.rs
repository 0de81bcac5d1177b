//! The mounts' steps: the new root, its trees, their attributes, /dev,
//! /proc, hidden paths, overlays. Their types, the calls `qwrap plan`
//! prints for each, and what each is for.

use super::step_args::{Flags, OverlayPart, OverlayUpper, Role, TreeId, join_flags, q};
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CloneTree {
    pub tree: TreeId,
    pub role: Role,
    #[serde(serialize_with = "crate::lossy::path")]
    pub source: PathBuf,
    pub recursive: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetTreeAttr {
    pub tree: TreeId,
    pub set: Flags,
    pub private: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountTmpfs {
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
    pub flags: Flags,
    pub mode: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttachTree {
    pub tree: TreeId,
    pub role: Role,
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
}

/// A directory or an empty file to mount on. On a filesystem the plan
/// made (a fresh tmpfs), one `mkdir`/`mknod` that fails if anything is
/// there; with `if_missing` (bwrap mode's destinations), left alone when
/// it exists and made with its missing parents otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MakeMountPoint {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    pub dir: bool,
    pub mode: u32,
    pub if_missing: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Symlink {
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub link: PathBuf,
}

/// Opens `ptmx` beside `target` in the sandbox's own devpts until its
/// pty number `index` exists, so that the caller's terminal can be
/// bound over that name (ttyname(3) inside then names the terminal as
/// outside); the ptys below it are closed again, the one at `index`
/// handed to the warden, which holds it (its name would vanish with
/// the last descriptor of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimPty {
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
    pub index: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountDevpts {
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetPathAttr {
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
    pub recursive: bool,
    pub set: Flags,
    pub private: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BindMount {
    pub role: Role,
    #[serde(serialize_with = "crate::lossy::path")]
    pub source: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
    pub recursive: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MakeTreePrivate {
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
}

/// Legacy path: adds `set` to the mount at `target`, keeping its own
/// flags (the kernel refuses to clear a flag locked in a user
/// namespace), and with `recursive` to each mount the table lists under
/// `source`, at the same place under `target` (a bind copies them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemountTree {
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub source: PathBuf,
    /// The mount table to read (the host's /proc, wherever it is now).
    #[serde(serialize_with = "crate::lossy::path")]
    pub table: PathBuf,
    pub set: Flags,
    pub recursive: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Remount {
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
    pub flags: Flags,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PivotRoot {
    #[serde(serialize_with = "crate::lossy::path")]
    pub new_root: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub put_old: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnterRoot {
    #[serde(serialize_with = "crate::lossy::path")]
    pub new_root: PathBuf,
}

/// A detached tmpfs (mode 0000) holding an empty directory `d` and an
/// empty file `f`, both mode 0000: what hidden paths are covered with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MakeHiddenSource {
    pub tree: TreeId,
}

/// A clone of the hidden source's `d` or `f` over `target`, read-only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttachHidden {
    pub source: TreeId,
    pub dir: bool,
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountProc {
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountMqueue {
    #[serde(serialize_with = "crate::lossy::path")]
    pub target: PathBuf,
}

/// Makes an existing subtree read-only where it is, left alone where
/// its mount is read-only already (`bubblewrap`: where access(W_OK)
/// refuses, as bubblewrap asks): clone, set, attach; `legacy`: bound
/// onto itself and remounted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadOnlyInPlace {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    pub legacy: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bubblewrap: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CopyFdToFile {
    pub fd: i32,
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    pub mode: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chmod {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    pub mode: u32,
}

/// A detached overlay mount of host directories (resolved now, before
/// anything covers them), attached later as a cloned tree is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MakeOverlay {
    pub tree: TreeId,
    /// Lowest layer first, as `--overlay-src` gives them.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub lower: Vec<PathBuf>,
    pub upper: OverlayUpper,
    /// In a user namespace: trusted xattrs are out of reach.
    pub userxattr: bool,
}

/// The caches inside the home from one overlay of it (upper layer
/// `upper`): each cache's subtree cloned from it into its tree. Where
/// the kernel refuses that overlay (EINVAL: a host mount beneath the
/// home, which an overlay in a user namespace may not hide), one
/// overlay per cache over the same upper directories instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HomeCaches {
    #[serde(serialize_with = "crate::lossy::path")]
    pub home: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub upper: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub work: PathBuf,
    pub userxattr: bool,
    pub parts: Vec<OverlayPart>,
}

/// A mount step, by reference: what its text and purpose match on.
#[derive(Debug, Clone, Copy)]
pub enum MountStep<'a> {
    MakeMountsSlave,
    CloneTree(&'a CloneTree),
    SetTreeAttr(&'a SetTreeAttr),
    MountTmpfs(&'a MountTmpfs),
    AttachTree(&'a AttachTree),
    MakeMountPoint(&'a MakeMountPoint),
    Symlink(&'a Symlink),
    MountDevpts(&'a MountDevpts),
    ClaimPty(&'a ClaimPty),
    SetPathAttr(&'a SetPathAttr),
    BindMount(&'a BindMount),
    MakeTreePrivate(&'a MakeTreePrivate),
    RemountTree(&'a RemountTree),
    Remount(&'a Remount),
    PivotRoot(&'a PivotRoot),
    EnterRoot(&'a EnterRoot),
    MakeHiddenSource(&'a MakeHiddenSource),
    AttachHidden(&'a AttachHidden),
    MountProc(&'a MountProc),
    MountMqueue(&'a MountMqueue),
    ReadOnlyInPlace(&'a ReadOnlyInPlace),
    CopyFdToFile(&'a CopyFdToFile),
    Chmod(&'a Chmod),
    MakeOverlay(&'a MakeOverlay),
    HomeCaches(&'a HomeCaches),
}

impl fmt::Display for MountStep<'_> {
    /// The step's calls, as `qwrap plan` prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MountStep::CloneTree(s) => s.fmt(f),
            MountStep::SetTreeAttr(s) => s.fmt(f),
            MountStep::MountTmpfs(s) => s.fmt(f),
            MountStep::AttachTree(s) => s.fmt(f),
            MountStep::MakeMountPoint(s) => s.fmt(f),
            MountStep::Symlink(s) => s.fmt(f),
            MountStep::BindMount(s) => s.fmt(f),
            MountStep::PivotRoot(s) => s.fmt(f),
            MountStep::EnterRoot(s) => s.fmt(f),
            MountStep::SetPathAttr(s) => s.fmt(f),
            MountStep::MakeTreePrivate(s) => s.fmt(f),
            MountStep::RemountTree(s) => s.fmt(f),
            MountStep::Remount(s) => s.fmt(f),
            MountStep::ClaimPty(s) => s.fmt(f),
            MountStep::MountDevpts(s) => s.fmt(f),
            MountStep::MakeHiddenSource(s) => s.fmt(f),
            MountStep::AttachHidden(s) => s.fmt(f),
            MountStep::MountProc(s) => s.fmt(f),
            MountStep::MountMqueue(s) => s.fmt(f),
            MountStep::ReadOnlyInPlace(s) => s.fmt(f),
            MountStep::CopyFdToFile(s) => s.fmt(f),
            MountStep::Chmod(s) => s.fmt(f),
            MountStep::MakeOverlay(s) => s.fmt(f),
            MountStep::HomeCaches(s) => s.fmt(f),
            MountStep::MakeMountsSlave => write!(f, "mount(NULL, \"/\", NULL, MS_REC|MS_SLAVE, NULL)"),
        }
    }
}

impl MountStep<'_> {
    /// A short phrase naming what the step is for, used in error messages.
    pub fn purpose(&self) -> String {
        match *self {
            MountStep::MakeMountsSlave => "keep the sandbox's mounts from propagating to the host".into(),
            MountStep::MakeHiddenSource(MakeHiddenSource { .. }) => {
                "make the empty tmpfs that hides paths".into()
            }
            MountStep::AttachHidden(AttachHidden { target, .. }) => format!("hide {}", target.display()),
            MountStep::MountProc(MountProc { target }) => format!("mount proc on {}", target.display()),
            MountStep::MountMqueue(MountMqueue { target }) => format!("mount mqueue on {}", target.display()),
            MountStep::ReadOnlyInPlace(ReadOnlyInPlace { path, .. }) => {
                format!("make {} read-only", path.display())
            }
            MountStep::CopyFdToFile(CopyFdToFile { path, .. }) => format!("write {}", path.display()),
            MountStep::Chmod(Chmod { path, .. }) => format!("change the mode of {}", path.display()),
            MountStep::HomeCaches(HomeCaches { home, parts, .. }) => format!(
                "make one overlay of {2} for its {0} cache{1}",
                parts.len(),
                if parts.len() == 1 { "" } else { "s" },
                home.display()
            ),
            MountStep::MakeOverlay(MakeOverlay { lower, .. }) => format!(
                "make an overlay of {}",
                lower
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            MountStep::CloneTree(CloneTree { role, source, .. }) => match role {
                Role::HostRoot => "clone the host tree".into(),
                _ => format!("clone {} {}", role.noun(), source.display()),
            },
            MountStep::SetTreeAttr(SetTreeAttr { set, .. }) if set.rdonly => {
                "make the cloned tree read-only".into()
            }
            MountStep::SetTreeAttr(SetTreeAttr { .. }) => "make the cloned tree private".into(),
            MountStep::MountTmpfs(MountTmpfs { target, .. }) => {
                format!("mount a tmpfs on {}", target.display())
            }
            MountStep::AttachTree(AttachTree { role, target, .. })
            | MountStep::BindMount(BindMount { role, target, .. }) => match role {
                Role::HostRoot => format!("attach the read-only host tree at {}", target.display()),
                _ => format!("attach {} at {}", role.noun(), target.display()),
            },
            MountStep::MakeMountPoint(MakeMountPoint { path, dir: true, .. }) => {
                format!("create directory {}", path.display())
            }
            MountStep::MakeMountPoint(MakeMountPoint { path, .. }) => {
                format!("create mount point {}", path.display())
            }
            MountStep::Symlink(Symlink { link, .. }) => format!("create symlink {}", link.display()),
            MountStep::ClaimPty(ClaimPty { target, .. }) => {
                format!("claim {} in the sandbox's devpts", target.display())
            }
            MountStep::MountDevpts(MountDevpts { target }) => format!("mount devpts on {}", target.display()),
            MountStep::SetPathAttr(SetPathAttr {
                target,
                recursive: true,
                ..
            }) if target.as_os_str() == "/" => "make the host tree read-only".into(),
            MountStep::SetPathAttr(SetPathAttr { target, .. })
            | MountStep::Remount(Remount { target, .. }) => {
                format!("make {} read-only", target.display())
            }
            MountStep::MakeTreePrivate(MakeTreePrivate { target }) => {
                format!("make mounts under {} private", target.display())
            }
            MountStep::RemountTree(RemountTree {
                target,
                set,
                recursive,
                ..
            }) => format!(
                "remount {}{} {}",
                if *recursive { "every mount under " } else { "" },
                target.display(),
                if set.rdonly { "read-only" } else { "nosuid" }
            ),
            MountStep::PivotRoot(PivotRoot { new_root, .. }) => {
                format!("switch to the staging root {}", new_root.display())
            }
            MountStep::EnterRoot(EnterRoot { .. }) => "switch to the sandbox root".into(),
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

/// A `struct mount_attr` as printed: the attributes set, the propagation.
fn mount_attr(set: &Flags, private: bool) -> String {
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

impl fmt::Display for CloneTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CloneTree {
            tree,
            source,
            recursive,
            ..
        } = self;
        write!(
            f,
            "open_tree(AT_FDCWD, {}, OPEN_TREE_CLONE|OPEN_TREE_CLOEXEC{}) = tree{tree}",
            q(source),
            if *recursive { "|AT_RECURSIVE" } else { "" }
        )
    }
}

impl fmt::Display for SetTreeAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let SetTreeAttr { tree, set, private } = self;
        write!(
            f,
            "mount_setattr(tree{tree}, \"\", AT_EMPTY_PATH|AT_RECURSIVE, {{{}}})",
            mount_attr(set, *private)
        )
    }
}

impl fmt::Display for MountTmpfs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let MountTmpfs {
            target,
            flags,
            mode,
            size,
        } = self;
        write!(
            f,
            "mount(\"tmpfs\", {}, \"tmpfs\", {}, \"mode={mode:04o}{}\")",
            q(target),
            join_flags(flags.names("MS_")),
            size.map(|s| format!(",size={s}")).unwrap_or_default()
        )
    }
}

impl fmt::Display for AttachTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let AttachTree { tree, target, role } = self;
        write!(
            f,
            "move_mount(tree{tree}, \"\", AT_FDCWD, {}, MOVE_MOUNT_F_EMPTY_PATH{})",
            q(target),
            if *role == Role::Bind {
                "|MOVE_MOUNT_T_SYMLINKS"
            } else {
                ""
            }
        )
    }
}

impl fmt::Display for MakeMountPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MakeMountPoint {
                path,
                dir,
                mode,
                if_missing: false,
            } => match dir {
                true => write!(f, "mkdir({}, {mode:04o})", q(path)),
                false => write!(f, "mknod({}, S_IFREG|{mode:04o})", q(path)),
            },
            MakeMountPoint {
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
        }
    }
}

impl fmt::Display for Symlink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Symlink { target, link } = self;
        write!(f, "symlink({}, {})", q(target), q(link))
    }
}

impl fmt::Display for BindMount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let BindMount {
            source,
            target,
            recursive,
            ..
        } = self;
        write!(
            f,
            "mount({}, {}, NULL, MS_BIND{}, NULL)",
            q(source),
            q(target),
            if *recursive { "|MS_REC" } else { "" }
        )
    }
}

impl fmt::Display for PivotRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let PivotRoot { new_root, put_old } = self;
        write!(
            f,
            "pivot_root({0}, {1}); chdir(\"/\") (on an initramfs root: mount(\"/\", {1}, MS_BIND|MS_REC); chdir({0}); mount(\".\", \"/\", MS_MOVE); chroot(\".\"))",
            q(new_root),
            q(put_old)
        )
    }
}

impl fmt::Display for EnterRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let EnterRoot { new_root } = self;
        write!(
            f,
            "chdir({}); pivot_root(\".\", \".\"); umount2(\".\", MNT_DETACH); chdir(\"/\") (on an initramfs root: mount(\".\", \"/\", MS_MOVE); chroot(\".\"))",
            q(new_root)
        )
    }
}

impl fmt::Display for SetPathAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let SetPathAttr {
            target,
            recursive,
            set,
            private,
        } = self;
        let attr = mount_attr(set, *private);
        write!(
            f,
            "mount_setattr(AT_FDCWD, {}, {}, {{{}}})",
            q(target),
            if *recursive { "AT_RECURSIVE" } else { "0" },
            attr
        )
    }
}

impl fmt::Display for MakeTreePrivate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let MakeTreePrivate { target } = self;
        write!(f, "mount(NULL, {}, NULL, MS_REC|MS_PRIVATE, NULL)", q(target))
    }
}

impl fmt::Display for RemountTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let RemountTree {
            target,
            source,
            table,
            set,
            recursive,
        } = self;
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
}

impl fmt::Display for Remount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Remount { target, flags } = self;
        let mut names = vec!["MS_REMOUNT".to_string(), "MS_BIND".to_string()];
        names.extend(flags.names("MS_"));
        write!(f, "mount(NULL, {}, NULL, {}, NULL)", q(target), names.join("|"))
    }
}

impl fmt::Display for ClaimPty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ClaimPty { target, index } = self;
        write!(
            f,
            "open({}, O_RDWR|O_NOCTTY|O_CLOEXEC) and ioctl(TIOCGPTN) until it answers {index} (the ptys below it closed again); sendmsg(warden, SCM_RIGHTS the pty at {index}), which holds it",
            q(&target.with_file_name("ptmx"))
        )
    }
}

impl fmt::Display for MountDevpts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let MountDevpts { target } = self;
        write!(
            f,
            "mount(\"devpts\", {}, \"devpts\", MS_NOSUID|MS_NOEXEC, \"newinstance,ptmxmode=0666,mode=620\")",
            q(target)
        )
    }
}

impl fmt::Display for MakeHiddenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let MakeHiddenSource { tree } = self;
        write!(
            f,
            "fsopen(\"tmpfs\"); fsconfig(mode=0000, size=4096, nr_inodes=4); fsmount() = tree{tree}; mkdirat(tree{tree}, \"d\", 0000); openat(tree{tree}, \"f\", O_CREAT, 0000); mount_setattr(tree{tree}, \"\", AT_EMPTY_PATH, {{attr_set=MOUNT_ATTR_RDONLY}})"
        )
    }
}

impl fmt::Display for AttachHidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let AttachHidden { source, dir, target } = self;
        write!(
            f,
            "open_tree(tree{source}, \"{}\", OPEN_TREE_CLONE); move_mount(…, AT_FDCWD, {}, MOVE_MOUNT_F_EMPTY_PATH); born read-only (before Linux 5.12: mount(NULL, {}, NULL, MS_REMOUNT|MS_BIND|MS_RDONLY|MS_NOSUID|MS_NODEV|MS_NOEXEC, NULL))",
            if *dir { "d" } else { "f" },
            q(target),
            q(target)
        )
    }
}

impl fmt::Display for MountProc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let MountProc { target } = self;
        write!(
            f,
            "mount(\"proc\", {}, \"proc\", MS_NOSUID|MS_NOEXEC|MS_NODEV, NULL)",
            q(target)
        )
    }
}

impl fmt::Display for MountMqueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let MountMqueue { target } = self;
        write!(f, "mount(\"mqueue\", {}, \"mqueue\", 0, NULL)", q(target))
    }
}

impl fmt::Display for ReadOnlyInPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadOnlyInPlace {
                path,
                legacy: false,
                bubblewrap,
            } => write!(
                f,
                "{1}; open_tree({0}, OPEN_TREE_CLONE|AT_RECURSIVE); mount_setattr(RDONLY, AT_RECURSIVE); move_mount(onto {0})",
                q(path),
                unless_read_only(path, *bubblewrap)
            ),
            ReadOnlyInPlace {
                path,
                legacy: true,
                bubblewrap,
            } => write!(
                f,
                "{1}; mount({0}, {0}, NULL, MS_BIND|MS_REC, NULL); statfs({0}); mount(NULL, {0}, NULL, MS_REMOUNT|MS_BIND|MS_RDONLY|<its own flags>, NULL)",
                q(path),
                unless_read_only(path, *bubblewrap)
            ),
        }
    }
}

impl fmt::Display for CopyFdToFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CopyFdToFile { fd, path, mode } = self;
        write!(
            f,
            "read fd {fd} to its end (statx, lseek, read); open({}, O_CREAT|O_WRONLY|O_TRUNC|O_NOFOLLOW, {mode:04o}); write; fchmod",
            q(path)
        )
    }
}

impl fmt::Display for Chmod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Chmod { path, mode } = self;
        write!(f, "chmod({}, {mode:04o})", q(path))
    }
}

impl fmt::Display for MakeOverlay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let MakeOverlay {
            tree,
            lower,
            upper,
            userxattr,
        } = self;
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
}

impl fmt::Display for HomeCaches {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let HomeCaches {
            home,
            upper,
            work,
            userxattr,
            parts,
        } = self;
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
}
