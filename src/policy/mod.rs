//! Policy: what the user asked for, resolved and validated. Pure data.
//!
//! Resolution reads the filesystem only to canonicalise paths; it never reads
//! anything from the workspace, which the confined process can write.

mod env;
mod roots;

pub use env::EnvRules;
pub use roots::{RootReason, WritableRoot};

use serde::Serialize;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Network view inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMode {
    /// The host's network namespace.
    Open,
    /// A fresh network namespace with only `lo`, up.
    Closed,
}

impl FromStr for NetworkMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "open" => Ok(Self::Open),
            "closed" => Ok(Self::Closed),
            other => Err(format!(
                "invalid network mode {other:?}: expected \"open\" or \"closed\""
            )),
        }
    }
}

impl fmt::Display for NetworkMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Open => "open",
            Self::Closed => "closed",
        })
    }
}

/// What /tmp is inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TmpMode {
    /// A fresh tmpfs on /tmp, `TMPDIR=/tmp`.
    Private,
    /// The host's `$TMPDIR` (or /tmp) is a writable root.
    Host,
}

impl FromStr for TmpMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "private" => Ok(Self::Private),
            "host" => Ok(Self::Host),
            other => Err(format!(
                "invalid tmp mode {other:?}: expected \"private\" or \"host\""
            )),
        }
    }
}

impl fmt::Display for TmpMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Private => "private",
            Self::Host => "host",
        })
    }
}

/// The raw request, as parsed from the command line and environment.
#[derive(Debug, Clone)]
pub struct Request {
    pub workspace: Option<PathBuf>,
    pub binds: Vec<PathBuf>,
    pub read_only: Vec<PathBuf>,
    pub network: NetworkMode,
    pub tmp: TmpMode,
    pub die_with_parent: bool,
    pub setenv: Vec<(OsString, OsString)>,
    pub unsetenv: Vec<OsString>,
    pub command: Vec<OsString>,
}

impl Default for Request {
    fn default() -> Self {
        Self {
            workspace: None,
            binds: Vec::new(),
            read_only: Vec::new(),
            network: NetworkMode::Open,
            tmp: TmpMode::Private,
            die_with_parent: true,
            setenv: Vec::new(),
            unsetenv: Vec::new(),
            command: Vec::new(),
        }
    }
}

/// Facts about the caller that resolution depends on.
#[derive(Debug, Clone)]
pub struct Caller {
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    pub tmpdir: Option<PathBuf>,
}

impl Caller {
    /// The calling process's working directory, `$HOME` and `$TMPDIR`.
    pub fn from_process() -> std::io::Result<Self> {
        let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        Ok(Self {
            cwd: std::env::current_dir()?,
            home: nonempty("HOME"),
            tmpdir: nonempty("TMPDIR"),
        })
    }
}

/// A read-only path inside a writable root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadOnlyPath {
    pub path: PathBuf,
    /// The writable root it sits in.
    pub within: PathBuf,
}

/// A requested path that does not exist and was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    pub path: PathBuf,
    pub why: String,
}

/// The resolved policy: everything the planner needs, nothing it must guess.
#[derive(Debug, Clone, Serialize)]
pub struct Policy {
    pub workspace: PathBuf,
    pub writable_roots: Vec<WritableRoot>,
    pub read_only: Vec<ReadOnlyPath>,
    pub dropped: Vec<Dropped>,
    pub network: NetworkMode,
    pub tmp: TmpMode,
    pub die_with_parent: bool,
    pub env: EnvRules,
    #[serde(skip)]
    pub command: Vec<OsString>,
}

/// Why a request cannot become a policy.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
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
        "writable root {path} (from {source_name}) is inside the home directory {home} and no built-in root covers it"
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
    #[error("no command given")]
    NoCommand,
}

/// Resolves a request against the caller's facts.
pub fn resolve(req: &Request, caller: &Caller) -> Result<Policy, PolicyError> {
    let home = caller.home.as_deref().map(canonical_or_self);
    let mut resolver = roots::Resolver::new(home.as_deref());

    let ws_raw = req.workspace.clone().unwrap_or_else(|| caller.cwd.clone());
    let ws_abs = absolutize(&ws_raw, &caller.cwd);
    let workspace = std::fs::canonicalize(&ws_abs).map_err(|e| PolicyError::Workspace {
        path: ws_abs.clone(),
        why: io_text(&e),
    })?;
    if !workspace.is_dir() {
        return Err(PolicyError::Workspace {
            path: workspace,
            why: "not a directory".into(),
        });
    }
    resolver.add_builtin(&workspace, RootReason::Workspace, "workspace")?;

    if req.tmp == TmpMode::Host {
        let tmp = caller.tmpdir.clone().unwrap_or_else(|| PathBuf::from("/tmp"));
        let tmp = absolutize(&tmp, &caller.cwd);
        resolver.add_builtin_if_exists(&tmp, RootReason::Temp, "--tmp host")?;
    }

    for bind in &req.binds {
        let abs = absolutize(bind, &caller.cwd);
        resolver.add_include(&abs, "--bind")?;
    }

    let (writable_roots, mut dropped) = resolver.finish();

    let mut read_only = Vec::new();
    for ro in &req.read_only {
        let abs = absolutize(ro, &caller.cwd);
        let Ok(real) = std::fs::canonicalize(&abs) else {
            dropped.push(Dropped {
                path: abs,
                why: "--ro path does not exist".into(),
            });
            continue;
        };
        match writable_roots.iter().find(|r| real.starts_with(&r.path)) {
            Some(root) => {
                if !read_only.iter().any(|r: &ReadOnlyPath| r.path == real) {
                    read_only.push(ReadOnlyPath {
                        path: real,
                        within: root.path.clone(),
                    });
                }
            }
            None => dropped.push(Dropped {
                path: real,
                why: "--ro path is outside every writable root (already read-only)".into(),
            }),
        }
    }
    read_only.sort_by(|a, b| a.path.cmp(&b.path));

    if req.command.is_empty() {
        return Err(PolicyError::NoCommand);
    }

    Ok(Policy {
        workspace,
        writable_roots,
        read_only,
        dropped,
        network: req.network,
        tmp: req.tmp,
        die_with_parent: req.die_with_parent,
        env: EnvRules::build(req.tmp, &req.setenv, &req.unsetenv),
        command: req.command.clone(),
    })
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
        Some(code) => crate::sys::errno_text(code),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests;
