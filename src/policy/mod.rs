//! Policy: what the user asked for, resolved and validated. Pure data.
//!
//! Resolution reads the filesystem to canonicalise paths, and the workspace
//! (which the confined process can write) only for what it must know of it:
//! which toolchain marker files exist (profile detection) and where its git
//! dirs are (pointer files, each checked against the filesystem). No
//! setting and no path to grant is taken from the workspace's contents.

pub mod agent_files;
mod cli_settings;
mod config_files;
mod env;
pub mod git;
mod git_guard;
pub mod hg;
pub mod hidden_set;
mod home_config;
pub mod home_view;
pub mod limits;
mod link_way;
mod load;
mod modes;
mod passwd;
pub mod profile;
pub mod rc_files;
mod resolve;
mod review;
mod roots;
pub mod secrets;
pub mod settings;
mod settings_decl;
pub use settings_decl::ENV_EXPLAIN;
mod sourced;
mod ssh_config;
mod toolchains;
pub mod view;

pub use env::EnvRules;
pub use git::{Checkout, GitInfo};
pub use git_guard::{
    Found, GitLayout, HOST_OBJECTS, Reach, UserGit, config_reads, looked_at_start, repositories_below,
    scanned,
};
pub use limits::{CpuLimit, MemoryLimit, ProcessLimit, TimeLimit};
pub use link_way::{Way, discovered, follow};
pub use load::{Invocation, LoadError, load};
pub use modes::{
    CacheMode, HomeMode, IsolationMode, LandlockMode, NetworkMode, PidMode, TmpMode, TmpfsSize, ViewMode,
};
pub use resolve::resolve;
pub use review::ReviewPolicy;
pub use roots::{CacheRoot, RootReason, WritableRoot};
pub use settings::{CliSettings, PathSpec, RunSwitches, Settings, Sourced};
pub use toolchains::{set_name as layer_set_name, state_dir};

use serde::Serialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The raw request: the settings with their sources, the workspace and the
/// command.
#[derive(Debug, Clone)]
pub struct Request {
    pub workspace: Option<PathBuf>,
    pub settings: Settings,
    pub setenv: Vec<(OsString, OsString)>,
    pub unsetenv: Vec<OsString>,
    /// Inherited descriptors (3 and up) the caller passes on on purpose.
    pub keep_fds: Vec<i32>,
    pub command: Vec<OsString>,
}

impl Request {
    /// A request with default settings (for tests and embedders).
    pub fn with_defaults(command: Vec<OsString>) -> Self {
        let settings = Settings::load(&CliSettings::default(), &|_| None, &[]).expect("defaults are valid");
        Request {
            workspace: None,
            settings,
            setenv: Vec::new(),
            unsetenv: Vec::new(),
            keep_fds: Vec::new(),
            command,
        }
    }
}

/// The calling process, read once, for both front ends: who it is, where it
/// stands, its home and its environment.
#[derive(Debug, Clone)]
pub struct Caller {
    pub uid: u32,
    pub gid: u32,
    /// The working directory, or why it cannot be read: bwrap mode runs
    /// without one, as bubblewrap does; `run` needs it (`Caller::cwd`).
    pub cwd: Result<PathBuf, rustix::io::Errno>,
    pub home: Option<PathBuf>,
    /// Where `home` came from: `$HOME` or `/etc/passwd`.
    pub home_source: &'static str,
    /// The calling uid's home in /etc/passwd, read when first asked for
    /// (bwrap mode never asks). The home rules hold for it as well as for
    /// `home`: `HOME=/elsewhere` must not make the real home writable.
    account_home: std::cell::OnceCell<Option<PathBuf>>,
    /// The caller's environment, for `$TMPDIR`, `$XDG_CACHE_HOME` and profile
    /// templates.
    pub env: BTreeMap<OsString, OsString>,
}

/// Whether `$HOME` names a home: absolute, and not the root under any
/// spelling (`/..`, a link to it), whose listing or hiding would be the
/// whole host's (a boot's first process has `HOME=/`).
fn is_a_home(h: &Path) -> bool {
    h.is_absolute() && canonical_or_self(h) != Path::new("/") && !h.ends_with("..")
}

impl Caller {
    /// The calling process's ids, working directory, home and environment.
    /// With no, a relative or a `/` `$HOME`, the account's home from
    /// /etc/passwd (none where that is `/` too).
    pub fn from_process() -> Self {
        let env: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
        let uid = rustix::process::getuid().as_raw();
        let account_home = std::cell::OnceCell::new();
        let (home, home_source) = match env.get(std::ffi::OsStr::new("HOME")).map(PathBuf::from) {
            Some(h) if is_a_home(&h) => (Some(h), "$HOME"),
            _ => (
                account_home
                    .get_or_init(|| passwd::home_from_system(uid))
                    .clone()
                    .filter(|h| is_a_home(h)),
                "/etc/passwd",
            ),
        };
        Self {
            uid,
            gid: rustix::process::getgid().as_raw(),
            cwd: std::env::current_dir()
                .map_err(|e| rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::IO)),
            home,
            home_source,
            account_home,
            env,
        }
    }

    /// A caller described rather than read (tests, fuzzing): `$HOME` as
    /// given, no account home in /etc/passwd.
    pub fn described(
        (uid, gid): (u32, u32),
        cwd: PathBuf,
        home: Option<PathBuf>,
        env: BTreeMap<OsString, OsString>,
    ) -> Self {
        Self {
            uid,
            gid,
            cwd: Ok(cwd),
            home,
            home_source: "$HOME",
            account_home: std::cell::OnceCell::from(None),
            env,
        }
    }

    /// The working directory, which policy resolution needs.
    pub fn cwd(&self) -> Result<&Path, PolicyError> {
        self.cwd.as_deref().map_err(|e| PolicyError::WorkingDirectory(*e))
    }

    /// The calling uid's home in /etc/passwd.
    pub fn account_home(&self) -> Option<&Path> {
        self.account_home
            .get_or_init(|| passwd::home_from_system(self.uid))
            .as_deref()
    }

    /// A non-empty environment variable.
    pub fn var(&self, name: &str) -> Option<OsString> {
        self.env
            .get(std::ffi::OsStr::new(name))
            .filter(|v| !v.is_empty())
            .cloned()
    }
}

/// A read-only path inside a writable root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadOnlyPath {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    /// The writable root it sits in.
    #[serde(serialize_with = "crate::lossy::path")]
    pub within: PathBuf,
    pub source: String,
}

/// A path made unreadable inside, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HiddenPath {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    /// A directory (an empty mode-0000 directory goes over it) or not (an
    /// empty mode-0000 file).
    pub dir: bool,
    /// The reason of a default entry, or the setting that asked.
    pub why: String,
}

/// A requested path that was left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    pub why: String,
}

/// The resolved policy: everything the planner needs, nothing it must guess.
#[derive(Debug, Clone, Serialize)]
pub struct Policy {
    #[serde(serialize_with = "crate::lossy::path")]
    pub workspace: PathBuf,
    pub writable_roots: Vec<WritableRoot>,
    pub read_only: Vec<ReadOnlyPath>,
    pub dropped: Vec<Dropped>,
    pub git: GitInfo,
    pub die_with_parent: bool,
    pub new_session: bool,
    /// Git hooks and config made read-only (off with allow_git_config).
    #[serde(serialize_with = "crate::lossy::paths")]
    pub protected: Vec<PathBuf>,
    /// Protected directories that do not exist yet: created (empty) on the
    /// host before the sandbox starts, so that they can be made read-only.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub create_before: Vec<PathBuf>,
    /// Git dirs and submodule checkouts inside writable roots, bound over
    /// themselves so that they cannot be renamed, replaced or removed.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub pinned: Vec<PathBuf>,
    /// The git dirs whose top level is the sandbox's own, kept in step
    /// with the host's by the warden (off with allow_git_config).
    pub git_layouts: Vec<GitLayout>,
    /// Every `.git` below the writable roots when the sandbox starts: a
    /// new one at exit is a repository the command made, named then.
    #[serde(skip)]
    pub repos: git_guard::Found,
    /// Shell start-up files shown with their credential assignments removed.
    pub redacted_rc: Vec<rc_files::Redacted>,
    /// Host sockets left reachable.
    #[serde(serialize_with = "sourced::lossy_paths")]
    pub allowed_sockets: Vec<Sourced<PathBuf>>,
    /// The allowed sockets under the private /tmp that exist: shown there
    /// at their own path.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub tmp_sockets: Vec<PathBuf>,
    pub env: EnvRules,
    /// The variables the user named with --setenv or --unsetenv: theirs,
    /// whatever qwrap would set.
    pub user_env_names: Vec<String>,
    /// `--quiet`.
    pub quiet: bool,
    /// `--denials FILE`: one JSON object per refusal (time, pid, command,
    /// operation, path or target, errno, reason, option).
    #[serde(serialize_with = "crate::lossy::opt_path")]
    pub denials: Option<PathBuf>,
    /// Inherited descriptors kept whatever they are (`--keep-fd`).
    pub keep_fds: Vec<i32>,
    /// Paths unreadable inside: the default credential stores that exist
    /// (less `--show`), and `--hide`.
    pub hidden: Vec<HiddenPath>,
    /// Default entries taken out with `--show`.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub shown: Vec<PathBuf>,
    /// In the minimal view, the host paths shown (read-only).
    pub view_entries: Vec<view::ViewEntry>,
    /// `--home listed` (the default): what of the home is shown; None
    /// where the home is shown whole or not at all (the minimal view).
    pub home_listing: Option<home_view::Listing>,
    /// Where this workspace's cache layers are kept (overlaid caches):
    /// `$XDG_STATE_HOME/qwrap/caches/NAME-HASH`.
    #[serde(serialize_with = "crate::lossy::opt_path")]
    pub cache_set: Option<PathBuf>,
    /// The profiles in force: named ones, then those the workspace's files
    /// called for (source `detected FILE`).
    pub profiles: Vec<Sourced<String>>,
    /// `--network proxied`: the destinations the proxy connects to.
    pub allowed_domains: Vec<Sourced<crate::egress::Rule>>,
    /// Where the proxy logs each connection.
    #[serde(serialize_with = "crate::lossy::opt_path")]
    pub egress_log: Option<PathBuf>,
    /// The caller's secret-looking variables removed from the command's
    /// environment (names only).
    #[serde(serialize_with = "crate::lossy::os_strings")]
    pub removed_variables: Vec<OsString>,
    /// Variables of the caller's that name a host socket (`SSH_AUTH_SOCK`):
    /// where the socket is masked, the variable is unset inside.
    #[serde(skip)]
    pub socket_vars: Vec<(String, PathBuf)>,
    pub settings: Settings,
    #[serde(serialize_with = "crate::lossy::opt_path")]
    pub home: Option<PathBuf>,
    #[serde(skip)]
    pub command: Vec<OsString>,
    /// `--review`: the layer the workspace's changes are kept in (None: the
    /// live mode, where they reach the host as they happen).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewPolicy>,
    /// Agent and editor files (and a profile's read-only files) missing at
    /// the start: each one the command makes is named when it exits.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub watched: Vec<PathBuf>,
}

/// Variables that name a host socket by path; unset inside when it is masked.
pub const SOCKET_VARIABLES: [&str; 1] = ["SSH_AUTH_SOCK"];

impl Policy {
    /// Whether `p` exists inside: everything in the host view; in the
    /// minimal view only what lies in a writable root or a shown entry.
    pub fn shows(&self, p: &Path) -> bool {
        match (&self.settings.view.value, &self.home_listing) {
            (ViewMode::Host, None) => true,
            (ViewMode::Host, Some(l)) => l.shows(&self.writable_roots, p),
            (ViewMode::Minimal, _) => view::shows(&self.writable_roots, &self.view_entries, p),
        }
    }

    /// Whether the sandbox sees something other than the host's at `p`: its
    /// own /dev, or its private /tmp — but not a writable root beneath
    /// /tmp, which is the host's directory bound in (a hidden path or a
    /// socket there must be hidden or masked like any other).
    pub fn replaced_inside(&self, p: &Path) -> bool {
        // A root deeper under the private /tmp keeps its top directory
        // there, the host's, shown read-only (layout.rs): a path in that
        // top is the host's too.
        let host_top = |r: &WritableRoot| {
            let rel = r.path.strip_prefix("/tmp").ok()?;
            let first = rel.components().next()?;
            (rel.components().count() >= 2).then(|| Path::new("/tmp").join(first))
        };
        p.starts_with("/dev")
            || (self.settings.tmp.value == TmpMode::Private
                && p.starts_with("/tmp")
                && !self.writable_roots.iter().any(|r| p.starts_with(&r.path))
                && !self
                    .writable_roots
                    .iter()
                    .filter_map(host_top)
                    .any(|t| p.starts_with(t)))
    }

    /// What the host is asked about the caches to overlay.
    pub fn cache_request(&self) -> crate::host::caches::CacheRequest<'_> {
        crate::host::caches::CacheRequest {
            set: self.cache_set.as_deref(),
            caches: self
                .writable_roots
                .iter()
                .filter_map(|r| {
                    let c = r.cache.as_ref().filter(|c| c.mode == CacheMode::Overlay)?;
                    Some((r.path.clone(), c.layer.clone()))
                })
                .collect(),
            home: self.home.as_deref(),
            whole_home: self.settings.home.value == HomeMode::Overlay,
        }
    }
}

/// Why a request cannot become a policy.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    #[error("cannot read the current directory: {}", crate::errno::errno_text(.0.raw_os_error()))]
    WorkingDirectory(rustix::io::Errno),
    #[error("workspace {path}: {why}")]
    Workspace { path: PathBuf, why: String },
    #[error(
        "writable root {path} (from {source_name}) is {relation}: the home directory and its ancestors must stay read-only"
    )]
    HomeOrAncestor {
        path: PathBuf,
        source_name: String,
        relation: &'static str,
    },
    #[error(
        "writable root {path} (from {source_name}) is inside the home directory {home} and no built-in root covers it\nhint: inside the home directory only the workspace and qwrap's built-in roots (caches, a profile's state dirs) are writable: run qwrap with --workspace {path} (or from there) to work in it, or move what must be shared out of the home directory"
    )]
    InsideHome {
        path: PathBuf,
        source_name: String,
        home: PathBuf,
    },
    #[error("{path} (from {source_name}): {why}")]
    BadPath {
        path: PathBuf,
        source_name: String,
        why: String,
    },
    #[error("{source_name}: {why}")]
    BadDomain { source_name: String, why: String },
    #[error("no command given")]
    NoCommand,
    #[error("{0}")]
    Conflict(String),
}

fn spec_path(
    spec: &PathSpec,
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<OsString>,
    cwd: &Path,
) -> Result<PathBuf, String> {
    match spec {
        PathSpec::Literal(p) => Ok(absolutize(p, cwd)),
        PathSpec::Template(t) => profile::expand(t, home, env),
    }
}

fn spec_display(spec: &PathSpec) -> PathBuf {
    match spec {
        PathSpec::Literal(p) => p.clone(),
        PathSpec::Template(t) => PathBuf::from(t),
    }
}

fn absolutize(p: &Path, cwd: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

fn canonical_or_self(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn io_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => crate::errno::errno_text(code),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests;

/// The last `max` bytes of a regular file (from a line's start where
/// cut), or None: opened without blocking, judged by the descriptor.
pub(crate) fn read_tail(p: &std::path::Path, max: u64) -> Option<Vec<u8>> {
    use rustix::fs::{Mode, OFlags};
    use std::io::{Read, Seek, SeekFrom};
    let fd = rustix::fs::open(
        p,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let mut f = std::fs::File::from(fd);
    let m = f.metadata().ok()?;
    if !m.is_file() {
        return None;
    }
    let start = m.len().saturating_sub(max);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut v = Vec::new();
    f.take(max).read_to_end(&mut v).ok()?;
    Some(whole_lines(v, start > 0))
}

/// A file's tail without its first line where that was `cut`.
pub(crate) fn whole_lines(mut v: Vec<u8>, cut: bool) -> Vec<u8> {
    let from = match cut {
        true => v.iter().position(|b| *b == b'\n').map_or(v.len(), |i| i + 1),
        false => 0,
    };
    v.split_off(from)
}

/// `a/b/../c` as `a/c`, without looking at the file system: a `..` is
/// taken as the parent of what is joined before it, as git, hg and the
/// shell join a relative name to the directory of the file naming it.
pub(crate) fn lexical(p: &std::path::Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A small text file's content (up to 1 MiB), or None: opened without
/// blocking and judged by the descriptor opened, so that a FIFO or device
/// in its place (one a command made inside) is never waited on or read.
pub(crate) fn read_small(p: &std::path::Path) -> Option<String> {
    use rustix::fs::{Mode, OFlags};
    use std::io::Read;
    let fd = rustix::fs::open(
        p,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let f = std::fs::File::from(fd);
    let m = f.metadata().ok()?;
    if !m.is_file() || m.len() > 1 << 20 {
        return None;
    }
    let mut s = String::new();
    f.take(1 << 20).read_to_string(&mut s).ok()?;
    Some(s)
}
