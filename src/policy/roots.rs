//! The writable-root rules: the home directory and its ancestors are never
//! writable, paths inside home need a built-in root that covers them, missing
//! roots are dropped and reported, nested roots are merged.

use super::{Dropped, PolicyError};
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a writable root exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RootReason {
    Workspace,
    Temp,
    Cache,
    Git,
    Profile,
    Include,
}

impl fmt::Display for RootReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Workspace => "workspace",
            Self::Temp => "temp",
            Self::Cache => "cache",
            Self::Git => "git",
            Self::Profile => "profile",
            Self::Include => "include",
        })
    }
}

/// A directory the confined process may write beneath.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WritableRoot {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    pub reason: RootReason,
    /// The setting it came from (`workspace`, `--bind`, …).
    pub source: String,
}

pub(super) struct Resolver<'a> {
    home: Option<&'a Path>,
    roots: Vec<WritableRoot>,
    dropped: Vec<Dropped>,
}

impl<'a> Resolver<'a> {
    pub(super) fn new(home: Option<&'a Path>) -> Self {
        Self {
            home,
            roots: Vec::new(),
            dropped: Vec::new(),
        }
    }

    /// A built-in root whose path is already canonical and known to exist.
    pub(super) fn add_builtin(
        &mut self,
        real: &Path,
        reason: RootReason,
        source: &str,
    ) -> Result<(), PolicyError> {
        self.check_home(real, source)?;
        self.roots.push(WritableRoot {
            path: real.to_path_buf(),
            reason,
            source: source.to_string(),
        });
        Ok(())
    }

    /// A built-in root that is dropped (and reported) when missing.
    pub(super) fn add_builtin_if_exists(
        &mut self,
        path: &Path,
        reason: RootReason,
        source: &str,
    ) -> Result<(), PolicyError> {
        match self.canonical_dir(path, source) {
            Ok(Some(real)) => self.add_builtin(&real, reason, source),
            Ok(None) => Ok(()),
            // A built-in root the caller cannot reach (e.g. `$HOME` belongs
            // to another account) is left out, not fatal.
            Err(PolicyError::BadPath { why, .. }) if why.contains("EACCES") => {
                self.dropped.push(Dropped {
                    path: path.to_path_buf(),
                    why: format!("{source}: {why}"),
                });
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// A user-requested root: refused inside home unless a built-in covers it.
    pub(super) fn add_include(&mut self, path: &Path, source: &str) -> Result<(), PolicyError> {
        let Some(real) = self.canonical_dir(path, source)? else {
            return Ok(());
        };
        self.check_home(&real, source)?;
        if let Some(home) = self.home
            && real.starts_with(home)
            && !self.roots.iter().any(|r| real.starts_with(&r.path))
        {
            return Err(PolicyError::InsideHome {
                path: real,
                source_name: source.to_string(),
                home: home.to_path_buf(),
            });
        }
        self.roots.push(WritableRoot {
            path: real,
            reason: RootReason::Include,
            source: source.to_string(),
        });
        Ok(())
    }

    /// Merges nested roots (the outer one wins) and sorts by path.
    pub(super) fn finish(self) -> (Vec<WritableRoot>, Vec<Dropped>) {
        let mut roots = self.roots;
        // Stable: of two identical paths the first (built-in) keeps its reason.
        roots.sort_by(|a, b| a.path.cmp(&b.path));
        let mut merged: Vec<WritableRoot> = Vec::with_capacity(roots.len());
        for root in roots {
            if !merged.iter().any(|m| root.path.starts_with(&m.path)) {
                merged.push(root);
            }
        }
        (merged, self.dropped)
    }

    fn canonical_dir(&mut self, path: &Path, source: &str) -> Result<Option<PathBuf>, PolicyError> {
        match std::fs::canonicalize(path) {
            Ok(real) if real.is_dir() => Ok(Some(real)),
            Ok(real) => Err(PolicyError::BadPath {
                path: real,
                source_name: source.to_string(),
                why: "not a directory".into(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.dropped.push(Dropped {
                    path: path.to_path_buf(),
                    why: format!("{source}: does not exist"),
                });
                Ok(None)
            }
            Err(e) => Err(PolicyError::BadPath {
                path: path.to_path_buf(),
                source_name: source.to_string(),
                why: super::io_text(&e),
            }),
        }
    }

    fn check_home(&self, real: &Path, source: &str) -> Result<(), PolicyError> {
        let Some(home) = self.home else {
            return if real == Path::new("/") {
                Err(PolicyError::HomeOrAncestor {
                    path: real.to_path_buf(),
                    source_name: source.to_string(),
                    relation: "the root directory",
                })
            } else {
                Ok(())
            };
        };
        let relation = if real == home {
            "the home directory"
        } else if home.starts_with(real) {
            "an ancestor of the home directory"
        } else {
            return Ok(());
        };
        Err(PolicyError::HomeOrAncestor {
            path: real.to_path_buf(),
            source_name: source.to_string(),
            relation,
        })
    }
}
