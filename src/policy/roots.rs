//! The writable-root rules: the home directory and its ancestors are never
//! writable, paths inside home need a built-in root that covers them, missing
//! roots are dropped and reported, nested roots are merged.

use super::{CacheMode, Dropped, PolicyError};
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
    /// A cache or state directory outside the workspace: how writes to it
    /// are kept from the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheRoot>,
}

/// How a cache root is mounted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheRoot {
    pub mode: CacheMode,
    /// The name of its layer in the workspace's layer set (the path,
    /// escaped).
    pub layer: String,
    /// Missing on the host: created empty (mode 0700) before the sandbox
    /// starts, so that there is something to mount on.
    pub missing: bool,
}

/// A cache's path (relative to the home directory, when inside it) as one
/// directory name: `%` and `/` escaped, so that no two paths share one.
pub fn layer_name(path: &Path) -> String {
    path.to_string_lossy().replace('%', "%25").replace('/', "%2F")
}

pub(super) struct Resolver<'a> {
    /// `$HOME` and the account's home from /etc/passwd (canonical).
    homes: &'a [PathBuf],
    roots: Vec<WritableRoot>,
    dropped: Vec<Dropped>,
    /// Git dirs found but not granted (at or above home): an explicit
    /// `--include` of one of them is accepted.
    withheld_git: Vec<PathBuf>,
    /// Built-in roots that do not exist yet and are made before the
    /// sandbox starts (a tool's own state directory, on its first run).
    pub(super) create: Vec<PathBuf>,
}

impl<'a> Resolver<'a> {
    pub(super) fn new(homes: &'a [PathBuf]) -> Self {
        Self {
            homes,
            roots: Vec::new(),
            create: Vec::new(),
            dropped: Vec::new(),
            withheld_git: Vec::new(),
        }
    }

    pub(super) fn withhold_git(&mut self, roots: &[PathBuf]) {
        self.withheld_git.extend(roots.iter().cloned());
    }

    /// A root named by an environment variable: it may only be what the
    /// include rules would accept, or lie within the default it replaces
    /// (`~/.cache` for `$XDG_CACHE_HOME`). Anything else is dropped and
    /// reported, never granted.
    pub(super) fn add_from_variable(
        &mut self,
        path: &Path,
        default: Option<&Path>,
        reason: RootReason,
        source: &str,
    ) -> Result<(), PolicyError> {
        let Some(real) = self.canonical_dir(path, source)? else {
            return Ok(());
        };
        self.check_home(&real, source)?;
        let default = default.map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf()));
        let within_default = default.as_deref().is_some_and(|d| real.starts_with(d));
        if let Some(home) = self.home_holding(&real)
            && !within_default
            && !self.covered(&real)
        {
            self.dropped.push(Dropped {
                path: real,
                why: format!(
                    "{source}: inside the home directory {} and no built-in root covers it; a variable cannot make it writable",
                    home.display()
                ),
            });
            return Ok(());
        }
        self.roots.push(WritableRoot {
            path: real,
            reason,
            source: source.to_string(),
            cache: None,
        });
        Ok(())
    }

    /// A cache directory: writable inside (overlaid unless `mode` is
    /// shared). It may lie inside the home directory, never be it or above
    /// it; a missing one is created before the sandbox starts when the home
    /// directory holding it exists and is writable. `default`: set when a
    /// variable chose the path, the path its template names without one; a
    /// variable may only name what an include could, or lie within that
    /// default. Written through (shared), a cache from a user's profile
    /// obeys the include rules too.
    pub(super) fn add_cache(
        &mut self,
        path: &Path,
        mode: CacheMode,
        default: Option<Option<&Path>>,
        trusted: bool,
        source: &str,
    ) -> Result<(), PolicyError> {
        let (real, missing) = match std::fs::canonicalize(path) {
            Ok(real) if real.is_dir() => (real, false),
            Ok(real) => {
                self.dropped.push(Dropped {
                    path: real,
                    why: format!("{source}: not a directory"),
                });
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match creatable_in_home(path, self.homes) {
                Ok(p) => (p, true),
                Err(why) => {
                    self.dropped.push(Dropped {
                        path: path.to_path_buf(),
                        why: format!("{source}: does not exist ({why})"),
                    });
                    return Ok(());
                }
            },
            // A home this user cannot read (HOME as `sudo` without -H
            // leaves it): no cache can be made or seen there, and the
            // sandbox goes on without it.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                self.dropped.push(Dropped {
                    path: path.to_path_buf(),
                    why: format!(
                        "{source}: cannot be reached ({}): no cache there (is HOME a directory this user cannot read, as `sudo` without -H leaves it?)",
                        super::io_text(&e)
                    ),
                });
                return Ok(());
            }
            Err(e) => {
                return Err(PolicyError::BadPath {
                    path: path.to_path_buf(),
                    source_name: source.to_string(),
                    why: super::io_text(&e),
                });
            }
        };
        self.push_cache(real, missing, mode, default, trusted, source)
    }

    /// `add_cache` once the path is resolved (`real`, canonical, or where
    /// it is made when `missing`).
    fn push_cache(
        &mut self,
        real: PathBuf,
        missing: bool,
        mode: CacheMode,
        default: Option<Option<&Path>>,
        trusted: bool,
        source: &str,
    ) -> Result<(), PolicyError> {
        self.check_home(&real, source)?;
        let in_home = self.home_holding(&real).is_some() && !self.covered(&real);
        if let Some(default) = default {
            let default = default.map(super::toolchains::canonical_prefix);
            if in_home && !default.is_some_and(|d| real.starts_with(d)) {
                self.dropped.push(Dropped {
                    path: real,
                    why: format!(
                        "{source}: inside the home directory and no built-in root covers it; a variable cannot make it writable"
                    ),
                });
                return Ok(());
            }
        }
        if mode == CacheMode::Shared && !trusted && in_home {
            self.dropped.push(Dropped {
                path: real,
                why: format!(
                    "{source}: inside the home directory, and --cache shared would write it through: use --cache overlay"
                ),
            });
            return Ok(());
        }
        let layer = layer_name(
            self.homes
                .iter()
                .find_map(|h| real.strip_prefix(h).ok())
                .unwrap_or(&real),
        );
        self.roots.push(WritableRoot {
            path: real,
            reason: RootReason::Cache,
            source: source.to_string(),
            cache: Some(CacheRoot { mode, layer, missing }),
        });
        Ok(())
    }

    /// A known tool's cache, when it exists as a directory and no root
    /// covers it already (its profile applied, or a root holds it). Not
    /// asked for: one that cannot be had is left out silently.
    pub(super) fn add_known_cache(&mut self, path: &Path, mode: CacheMode, default: Option<Option<&Path>>) {
        let Ok(real) = std::fs::canonicalize(path) else {
            return;
        };
        let covered = self
            .roots
            .iter()
            .any(|r| real.starts_with(&r.path) || r.path.starts_with(&real));
        if covered || !real.is_dir() {
            return;
        }
        let dropped = self.dropped.len();
        let _ = self.push_cache(real, false, mode, default, true, "known tool cache");
        self.dropped.truncate(dropped);
    }

    fn home_holding(&self, real: &Path) -> Option<&'a Path> {
        self.homes
            .iter()
            .find(|h| real.starts_with(h) && real != h.as_path())
            .map(PathBuf::as_path)
    }

    fn covered(&self, real: &Path) -> bool {
        self.roots.iter().any(|r| real.starts_with(&r.path))
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
            cache: None,
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

    /// A built-in root a shipped profile names (a tool's own state
    /// directory): made before the sandbox when it does not exist yet and
    /// can be made inside an existing home (the tool's first run), instead
    /// of being dropped.
    pub(super) fn add_builtin_or_create(
        &mut self,
        path: &Path,
        reason: RootReason,
        source: &str,
    ) -> Result<(), PolicyError> {
        if std::fs::symlink_metadata(path).is_err()
            && let Ok(p) = creatable_in_home(path, self.homes)
        {
            self.check_home(&p, source)?;
            self.create.push(p.clone());
            self.roots.push(WritableRoot {
                path: p,
                reason,
                source: format!("{source} (made now: it did not exist)"),
                cache: None,
            });
            return Ok(());
        }
        self.add_builtin_if_exists(path, reason, source)
    }

    /// A user-requested root: refused inside home unless a built-in covers it.
    pub(super) fn add_include(&mut self, path: &Path, source: &str) -> Result<(), PolicyError> {
        let Some(real) = self.canonical_dir(path, source)? else {
            return Ok(());
        };
        self.check_home(&real, source)?;
        if let Some(home) = self.home_holding(&real)
            && !self.covered(&real)
            && !self.withheld_git.iter().any(|g| real.starts_with(g))
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
            cache: None,
        });
        Ok(())
    }

    /// Merges nested roots (the outer one wins) and sorts by path. A root
    /// written through inside an overlaid cache stays a root of its own
    /// (mounted over the cache), so that its writes reach the host; a cache
    /// inside a root written through is that root.
    pub(super) fn finish(self) -> (Vec<WritableRoot>, Vec<Dropped>, Vec<PathBuf>) {
        let mut roots = self.roots;
        // Stable: of two identical paths the first (built-in) keeps its reason.
        roots.sort_by(|a, b| a.path.cmp(&b.path));
        let through = |r: &WritableRoot| r.cache.as_ref().is_none_or(|c| c.mode == CacheMode::Shared);
        let mut merged: Vec<WritableRoot> = Vec::with_capacity(roots.len());
        for root in roots {
            let absorbed = merged
                .iter()
                .filter(|m| root.path.starts_with(&m.path))
                .any(|m| through(m) || !through(&root) || m.path == root.path);
            if !absorbed {
                merged.push(root);
            }
        }
        (merged, self.dropped, self.create)
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

    pub(super) fn check_home(&self, real: &Path, source: &str) -> Result<(), PolicyError> {
        if real == Path::new("/") {
            return Err(PolicyError::HomeOrAncestor {
                path: real.to_path_buf(),
                source_name: source.to_string(),
                relation: "the root directory",
            });
        }
        for home in self.homes {
            let relation = if real == home {
                "the home directory"
            } else if home.starts_with(real) {
                "an ancestor of the home directory"
            } else {
                continue;
            };
            return Err(PolicyError::HomeOrAncestor {
                path: real.to_path_buf(),
                source_name: source.to_string(),
                relation,
            });
        }
        Ok(())
    }
}

/// A missing cache path that can be made: inside a home directory that
/// exists, below an existing directory the caller may write.
fn creatable_in_home(path: &Path, homes: &[PathBuf]) -> Result<PathBuf, &'static str> {
    let full = super::toolchains::canonical_prefix(path);
    let home = homes
        .iter()
        .find(|h| full.starts_with(h) && full != **h && h.is_dir())
        .ok_or("only a cache inside an existing home directory is created")?;
    let mut parent = full.as_path();
    while !parent.exists() {
        parent = parent.parent().unwrap_or(home);
    }
    rustix::fs::access(parent, rustix::fs::Access::WRITE_OK)
        .map(|()| full.clone())
        .map_err(|_| "its parent is not writable")
}
