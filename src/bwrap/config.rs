//! What bubblewrap's command line says, parsed (args.rs parses it).

use crate::plan::OverlayUpper;
use std::ffi::OsString;
use std::path::PathBuf;

/// One filesystem operation on the new root, in argument order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsOp {
    /// `--bind`, `--ro-bind`, `--dev-bind` and their `-try` forms.
    Bind {
        src: PathBuf,
        dest: PathBuf,
        readonly: bool,
        devices: bool,
        optional: bool,
    },
    /// `--bind-fd`, `--ro-bind-fd`: an open fd's file or directory.
    BindFd {
        fd: i32,
        dest: PathBuf,
        readonly: bool,
    },
    RemountRo(PathBuf),
    Proc(PathBuf),
    Dev(PathBuf),
    Tmpfs {
        dest: PathBuf,
        perms: Option<u32>,
        size: Option<u64>,
    },
    Mqueue(PathBuf),
    Dir {
        dest: PathBuf,
        perms: Option<u32>,
    },
    Symlink {
        target: PathBuf,
        link: PathBuf,
    },
    /// `--file FD DEST`: the fd's contents copied to a new file.
    File {
        fd: i32,
        dest: PathBuf,
        perms: Option<u32>,
    },
    /// `--bind-data`, `--ro-bind-data`: the fd's contents in a file outside
    /// the new root, bound on DEST.
    BindData {
        fd: i32,
        dest: PathBuf,
        readonly: bool,
        perms: Option<u32>,
    },
    Chmod {
        perms: u32,
        path: PathBuf,
    },
    /// `--overlay`, `--tmp-overlay`, `--ro-overlay` with the `--overlay-src`
    /// directories before it, lowest first.
    Overlay {
        sources: Vec<PathBuf>,
        upper: OverlayUpper,
        dest: PathBuf,
    },
}

/// An environment change, in argument order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvOp {
    Set(OsString, OsString),
    Unset(OsString),
    Clear,
}

/// Everything bubblewrap's options say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub ops: Vec<FsOp>,
    pub env: Vec<EnvOp>,
    pub unshare_user: bool,
    pub unshare_user_try: bool,
    pub unshare_pid: bool,
    pub unshare_net: bool,
    pub unshare_ipc: bool,
    pub unshare_uts: bool,
    pub unshare_cgroup: bool,
    pub unshare_cgroup_try: bool,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub hostname: Option<OsString>,
    pub chdir: Option<PathBuf>,
    pub argv0: Option<OsString>,
    pub new_session: bool,
    pub die_with_parent: bool,
    pub as_pid_1: bool,
    pub info_fd: Option<i32>,
    pub json_status_fd: Option<i32>,
    pub sync_fd: Option<i32>,
    pub block_fd: Option<i32>,
    /// The caller writes the id maps, then writes to this fd.
    pub userns_block_fd: Option<i32>,
    pub seccomp_programs: Vec<Vec<u8>>,
    pub lock_files: Vec<PathBuf>,
    pub disable_userns: bool,
    pub assert_userns_disabled: bool,
    /// `--userns FD`: join this user namespace instead of making one.
    pub userns_fd: Option<i32>,
    /// `--userns2 FD`: switch to this user namespace after setup.
    pub userns2_fd: Option<i32>,
    /// `--pidns FD`: join (or nest a new one under) this PID namespace.
    pub pidns_fd: Option<i32>,
    /// `--cap-add` (true) and `--cap-drop` (false) in the order given, each
    /// with a capability name, upper-case, or `ALL`.
    pub cap_ops: Vec<(bool, String)>,
    pub level_prefix: bool,
    /// What bubblewrap warns about on stderr, worded as it does.
    pub warnings: Vec<String>,
    pub command: Vec<OsString>,
}

/// What the command line asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Run(Box<Config>),
    Help,
    Version,
}

/// A command-line error, worded as bubblewrap words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArgError(pub String);

pub(super) fn err(msg: impl Into<String>) -> ArgError {
    ArgError(msg.into())
}
