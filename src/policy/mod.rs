//! Policy: what the user asked for, resolved and validated. Pure data.
//!
//! Resolution reads the filesystem only to canonicalise paths; it never reads
//! anything from the workspace, which the confined process can write.

mod env;
pub mod git;
mod git_guard;
mod modes;
mod passwd;
pub mod profile;
mod roots;
pub mod secrets;
pub mod settings;
pub mod view;

pub use env::EnvRules;
pub use git::{Checkout, GitInfo};
pub use modes::{LandlockMode, NetworkMode, TmpMode, ViewMode};
pub use roots::{RootReason, WritableRoot};
pub use settings::{CliSettings, PathSpec, Settings, Sourced};

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

/// Facts about the caller that resolution depends on.
#[derive(Debug, Clone)]
pub struct Caller {
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    /// Where `home` came from: `$HOME` or `/etc/passwd`.
    pub home_source: &'static str,
    /// The calling uid's home in /etc/passwd. The home rules hold for it
    /// as well as for `home`: `HOME=/elsewhere` must not make the real home
    /// writable.
    pub account_home: Option<PathBuf>,
    /// The caller's environment, for `$TMPDIR`, `$XDG_CACHE_HOME` and profile
    /// templates.
    pub env: BTreeMap<OsString, OsString>,
}

impl Caller {
    /// The calling process's working directory, home and environment. With
    /// no (or a relative) `$HOME`, the account's home from /etc/passwd.
    pub fn from_process() -> std::io::Result<Self> {
        let env: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
        let account_home = passwd::home_from_system(rustix::process::getuid().as_raw());
        let (home, home_source) = match env.get(std::ffi::OsStr::new("HOME")).map(PathBuf::from) {
            Some(h) if h.is_absolute() => (Some(h), "$HOME"),
            _ => (account_home.clone(), "/etc/passwd"),
        };
        Ok(Self {
            cwd: std::env::current_dir()?,
            home,
            home_source,
            account_home,
            env,
        })
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
    pub network: NetworkMode,
    pub tmp: TmpMode,
    pub landlock: LandlockMode,
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
    /// Host sockets left reachable.
    #[serde(serialize_with = "crate::lossy::sourced_paths")]
    pub allowed_sockets: Vec<Sourced<PathBuf>>,
    pub env: EnvRules,
    /// Inherited descriptors kept whatever they are (`--keep-fd`).
    pub keep_fds: Vec<i32>,
    /// Paths unreadable inside: the default credential stores that exist
    /// (less `--show`), and `--hide`.
    pub hidden: Vec<HiddenPath>,
    /// Default entries taken out with `--show`.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub shown: Vec<PathBuf>,
    pub view: ViewMode,
    /// In the minimal view, the host paths shown (read-only).
    pub view_entries: Vec<view::ViewEntry>,
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
}

/// Variables that name a host socket by path; unset inside when it is masked.
pub const SOCKET_VARIABLES: [&str; 1] = ["SSH_AUTH_SOCK"];

impl Policy {
    /// Whether `p` exists inside: everything in the host view; in the
    /// minimal view only what lies in a writable root or a shown entry.
    pub fn shows(&self, p: &Path) -> bool {
        self.view == ViewMode::Host || view::shows(&self.writable_roots, &self.view_entries, p)
    }
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
    if req.command.is_empty() {
        return Err(PolicyError::NoCommand);
    }
    let s = &req.settings;
    let home = caller.home.as_deref().map(canonical_or_self);
    let env = |k: &str| caller.var(k);
    let mut homes: Vec<PathBuf> = home.iter().cloned().collect();
    if let Some(account) = caller.account_home.as_deref().map(canonical_or_self)
        && !homes.contains(&account)
    {
        homes.push(account);
    }
    let mut resolver = roots::Resolver::new(&homes);
    let mut dropped_templates = Vec::new();

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

    if s.tmp.value == TmpMode::Host {
        let (tmp, src) = match caller.var("TMPDIR") {
            Some(t) => (PathBuf::from(t), "$TMPDIR"),
            None => (PathBuf::from("/tmp"), "/tmp"),
        };
        let tmp = absolutize(&tmp, &caller.cwd);
        // The host's temp dir inside home would make part of home writable
        // on the word of an environment variable.
        if let Ok(real) = std::fs::canonicalize(&tmp)
            && let Some(h) = homes.iter().find(|h| real.starts_with(h) && real != **h)
        {
            return Err(PolicyError::InsideHome {
                path: real,
                source_name: format!("{src} with --tmp host"),
                home: h.to_path_buf(),
            });
        }
        resolver.add_builtin_if_exists(
            &tmp,
            RootReason::Temp,
            &format!("{src} (tmp = host from {})", s.tmp.source),
        )?;
    }

    let default_cache = home.as_ref().map(|h| h.join(".cache"));
    match caller
        .var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        Some(c) => {
            resolver.add_from_variable(&c, default_cache.as_deref(), RootReason::Cache, "$XDG_CACHE_HOME")?
        }
        None => {
            if let Some(cache) = &default_cache {
                resolver.add_builtin_if_exists(cache, RootReason::Cache, "~/.cache")?;
            }
        }
    }

    let mut git = git::discover(&workspace);
    // A repository at or above the home directory (a dotfiles repository
    // in ~/.git) would make every checkout-less directory in home part of a
    // writable git dir: its roots are withheld unless named with --include.
    if let Some(top) = &git.top
        && let Some(h) = homes.iter().find(|h| h.starts_with(top))
    {
        resolver.withhold_git(&git.roots);
        git.note = Some(format!(
            "the checkout's top {} is the home directory {} or above it: its git dir stays read-only (name it with --include to make it writable)",
            top.display(),
            h.display()
        ));
    } else {
        for root in &git.roots {
            resolver.add_builtin_if_exists(root, RootReason::Git, &format!("git ({})", git.checkout))?;
        }
    }

    // Profiles: shipped ones are built-in roots; a user's own obey the
    // include rules.
    let mut ro_specs: Vec<Sourced<PathSpec>> = Vec::new();
    let mut socket_specs: Vec<Sourced<PathSpec>> = Vec::new();
    let mut user_includes: Vec<(PathBuf, String)> = Vec::new();
    for p in &s.profiles {
        let def = &s.profile_defs[&p.value];
        let src = format!("profile {}", p.value);
        for t in &def.value.include {
            match profile::expand(t, home.as_deref(), &env) {
                Ok(path) if def.source == "shipped" => {
                    // Where a variable chose the path, the include rules
                    // judge it; the template's own default is built in.
                    match profile::expand(t, home.as_deref(), &|_| None) {
                        Ok(default) if default == path => {
                            resolver.add_builtin_if_exists(&path, RootReason::Profile, &src)?
                        }
                        default => resolver.add_from_variable(
                            &path,
                            default.ok().as_deref(),
                            RootReason::Profile,
                            &format!("{src} ({t})"),
                        )?,
                    }
                }
                Ok(path) => user_includes.push((path, src.clone())),
                Err(why) => dropped_templates.push(Dropped {
                    path: PathBuf::from(t),
                    why: format!("{src}: {why}"),
                }),
            }
        }
        ro_specs.extend(
            def.value
                .read_only
                .iter()
                .map(|t| Sourced::new(PathSpec::Template(t.clone()), src.clone())),
        );
    }

    for inc in &s.include {
        match spec_path(&inc.value, home.as_deref(), &env, &caller.cwd) {
            Ok(path) => user_includes.push((path, inc.source.clone())),
            Err(why) => dropped_templates.push(Dropped {
                path: spec_display(&inc.value),
                why: format!("{}: {why}", inc.source),
            }),
        }
    }
    for (path, src) in &user_includes {
        resolver.add_include(path, src)?;
    }

    let (writable_roots, mut dropped) = resolver.finish();
    dropped.extend(dropped_templates);

    ro_specs.extend(s.read_only.iter().cloned());
    let guard = if s.allow_git_config.value || git.roots.is_empty() {
        git_guard::Guard::default()
    } else {
        git_guard::guard(&git)
    };
    if let Some(n) = &guard.note {
        git.note.get_or_insert_with(|| n.clone());
    }
    let in_roots = |p: &Path| writable_roots.iter().any(|r| p.starts_with(&r.path));
    let protected: Vec<PathBuf> = guard.protect.into_iter().filter(|p| in_roots(p)).collect();
    let create_before: Vec<PathBuf> = guard.create.into_iter().filter(|p| in_roots(p)).collect();
    // Pins that are roots themselves are mount points already.
    let pinned: Vec<PathBuf> = guard
        .pins
        .into_iter()
        .filter(|p| in_roots(p) && !writable_roots.iter().any(|r| r.path == *p))
        .collect();
    ro_specs.extend(
        protected
            .iter()
            .map(|p| Sourced::new(PathSpec::Literal(p.clone()), "protected git path")),
    );
    let mut read_only: Vec<ReadOnlyPath> = Vec::new();
    for spec in &ro_specs {
        let abs = match spec_path(&spec.value, home.as_deref(), &env, &caller.cwd) {
            Ok(p) => p,
            Err(why) => {
                dropped.push(Dropped {
                    path: spec_display(&spec.value),
                    why: format!("{}: {why}", spec.source),
                });
                continue;
            }
        };
        let real = match std::fs::canonicalize(&abs) {
            Ok(r) => Some(r),
            // A protected directory created just before the sandbox starts.
            Err(_) if create_before.contains(&abs) => Some(abs.clone()),
            Err(_) => None,
        };
        let Some(real) = real else {
            dropped.push(Dropped {
                path: abs,
                why: format!("{}: read-only path does not exist", spec.source),
            });
            continue;
        };
        match writable_roots.iter().find(|r| real.starts_with(&r.path)) {
            Some(root) => {
                if !read_only.iter().any(|r| r.path == real) {
                    read_only.push(ReadOnlyPath {
                        path: real,
                        within: root.path.clone(),
                        source: spec.source.clone(),
                    });
                }
            }
            None => dropped.push(Dropped {
                path: real,
                why: format!("{}: outside every writable root (already read-only)", spec.source),
            }),
        }
    }
    read_only.sort_by(|a, b| a.path.cmp(&b.path));

    socket_specs.extend(s.allow_socket.iter().cloned());
    let mut allowed_sockets: Vec<Sourced<PathBuf>> = Vec::new();
    for spec in &socket_specs {
        match spec_path(&spec.value, home.as_deref(), &env, &caller.cwd) {
            Ok(p) => {
                let p = canonical_or_self(&p);
                if !allowed_sockets.iter().any(|a| a.value == p) {
                    allowed_sockets.push(Sourced::new(p, spec.source.clone()));
                }
            }
            Err(why) => dropped.push(Dropped {
                path: spec_display(&spec.value),
                why: format!("{}: {why}", spec.source),
            }),
        }
    }

    let (hidden, shown) = secrets::hidden_paths(s, &homes, &writable_roots, &env, &caller.cwd, &mut dropped);
    let view_entries = match s.view.value {
        ViewMode::Host => Vec::new(),
        ViewMode::Minimal => {
            let profile_exposes =
                s.profiles.iter().flat_map(|p| {
                    s.profile_defs[&p.value].value.expose.iter().map(move |t| {
                        Sourced::new(PathSpec::Template(t.clone()), format!("profile {}", p.value))
                    })
                });
            let mut exposed = Vec::new();
            for e in s.expose.iter().cloned().chain(profile_exposes) {
                match spec_path(&e.value, home.as_deref(), &env, &caller.cwd) {
                    Ok(p) if std::fs::symlink_metadata(&p).is_ok() => exposed.push((p, e.source.clone())),
                    Ok(p) => dropped.push(Dropped {
                        path: p,
                        why: format!("{}: exposed path does not exist", e.source),
                    }),
                    Err(why) => dropped.push(Dropped {
                        path: spec_display(&e.value),
                        why: format!("{}: {why}", e.source),
                    }),
                }
            }
            // A socket the user keeps must exist inside to be reached.
            exposed.extend(
                allowed_sockets
                    .iter()
                    .map(|a| (a.value.clone(), a.source.clone())),
            );
            view::minimal(&exposed)
        }
    };
    // In the minimal view, what is not shown does not exist: nothing to hide.
    let hidden: Vec<HiddenPath> = match s.view.value {
        ViewMode::Host => hidden,
        ViewMode::Minimal => hidden
            .into_iter()
            .filter(|h| view::shows(&writable_roots, &view_entries, &h.path))
            .collect(),
    };
    let keep_env: Vec<String> = s
        .keep_env
        .iter()
        .map(|k| k.value.clone())
        .chain(
            s.profiles
                .iter()
                .flat_map(|p| s.profile_defs[&p.value].value.keep_env.clone()),
        )
        .collect();
    let removed_variables = secrets::removed_variables(caller.env.keys(), &keep_env, &req.setenv);
    let mut env_rules = EnvRules::build(s.tmp.value, &req.setenv, &req.unsetenv);
    env_rules.unset.extend(removed_variables.iter().cloned());

    Ok(Policy {
        workspace,
        writable_roots,
        read_only,
        dropped,
        git,
        network: s.network.value,
        tmp: s.tmp.value,
        landlock: s.landlock.value,
        die_with_parent: s.die_with_parent.value,
        new_session: s.new_session.value,
        protected,
        create_before,
        pinned,
        allowed_sockets,
        env: env_rules,
        keep_fds: req.keep_fds.clone(),
        hidden,
        shown,
        view: s.view.value,
        view_entries,
        removed_variables,
        socket_vars: SOCKET_VARIABLES
            .iter()
            .filter_map(|v| {
                Some((
                    v.to_string(),
                    canonical_or_self(&absolutize(Path::new(&caller.var(v)?), &caller.cwd)),
                ))
            })
            .collect(),
        settings: s.clone(),
        home,
        command: req.command.clone(),
    })
}

/// Why settings or policy could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// An invalid setting: a usage error.
    #[error(transparent)]
    Settings(#[from] settings::SettingsError),
    /// A policy that cannot be granted.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// What the command line asked for, before settings are merged.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    pub cli: CliSettings,
    pub workspace: Option<PathBuf>,
    pub setenv: Vec<(OsString, OsString)>,
    pub unsetenv: Vec<OsString>,
    pub keep_fds: Vec<i32>,
    pub command: Vec<OsString>,
}

/// Reads the config files, merges the settings and resolves the policy. A
/// config file that lies inside a writable root (where the confined process
/// could rewrite it) is ignored, and said so in the returned notes.
pub fn load(inv: &Invocation, caller: &Caller) -> Result<(Policy, Vec<String>), LoadError> {
    let env = |k: &str| caller.var(k);
    let paths = settings::config_paths(caller.home.as_deref(), &env);
    let (mut configs, mut notes) = settings::read_configs(&paths)?;
    let ws = inv.workspace.as_deref().map(|w| absolutize(w, &caller.cwd));
    let ws = canonical_or_self(ws.as_deref().unwrap_or(&caller.cwd));
    let mut ignore = |configs: &mut Vec<settings::ConfigText>, exposed: &dyn Fn(&Path) -> bool| {
        configs.retain(|c| {
            let keep = !exposed(&canonical_or_self(&c.path));
            if !keep {
                notes.push(format!(
                    "ignored {}: it lies inside a writable root, where the confined process could change it",
                    c.path.display()
                ));
            }
            keep
        });
    };
    ignore(&mut configs, &|p| p.starts_with(&ws));
    loop {
        let settings = Settings::load(&inv.cli, &env, &configs)?;
        let request = Request {
            workspace: inv.workspace.clone(),
            settings,
            setenv: inv.setenv.clone(),
            unsetenv: inv.unsetenv.clone(),
            keep_fds: inv.keep_fds.clone(),
            command: inv.command.clone(),
        };
        let policy = resolve(&request, caller)?;
        let before = configs.len();
        ignore(&mut configs, &|p| {
            policy.writable_roots.iter().any(|r| p.starts_with(&r.path))
        });
        if configs.len() == before {
            return Ok((policy, notes));
        }
    }
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
        Some(code) => crate::sys::errno_text(code),
        None => e.to_string(),
    }
}

#[cfg(test)]
mod tests;
