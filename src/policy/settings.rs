//! Settings and where each came from. The command line wins over the
//! environment (`QWRAP_*`), which wins over the user's config, then the
//! system config, then a chosen profile, then the default. Lists (`include`,
//! `read_only`, `profile`, `hide`, `show`, `keep_env`) gather from every
//! source. Nothing is read from the
//! workspace.

use super::profile::{self, ProfileDef};
pub(super) use super::sourced::err;
use super::sourced::scalar;
pub use super::sourced::{SettingsError, Sourced};
use super::{CacheMode, HomeMode, LandlockMode, NetworkMode, PidMode, TmpMode, ViewMode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

/// A path as given: literally (command line) or as a template with `~` and
/// `$VAR` (environment, config files, profiles).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum PathSpec {
    Literal(#[serde(serialize_with = "crate::lossy::path")] PathBuf),
    Template(String),
}

/// What the command line said.
#[derive(Debug, Clone, Default)]
pub struct CliSettings {
    pub network: Option<String>,
    pub pid: Option<String>,
    pub tmp: Option<String>,
    pub landlock: Option<String>,
    pub no_die_with_parent: bool,
    pub new_session: bool,
    pub allow_git_config: bool,
    pub allow_socket: Vec<PathBuf>,
    pub include: Vec<PathBuf>,
    pub read_only: Vec<PathBuf>,
    pub profile: Vec<String>,
    pub hide: Vec<PathBuf>,
    pub show: Vec<PathBuf>,
    pub keep_env: Vec<String>,
    pub view: Option<String>,
    pub cache: Option<String>,
    pub home: Option<String>,
    pub no_detect: bool,
    pub allow_domain: Vec<String>,
    pub egress_log: Option<PathBuf>,
    pub expose: Vec<PathBuf>,
    pub share_ipc: bool,
    pub share_keyring: bool,
    pub keep_background: bool,
    pub accept_degraded: Vec<String>,
}

pub use super::config_files::{ConfigText, config_paths, read_configs};

/// The config file's keys.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    network: Option<String>,
    pid: Option<String>,
    tmp: Option<String>,
    landlock: Option<String>,
    die_with_parent: Option<bool>,
    new_session: Option<bool>,
    allow_git_config: Option<bool>,
    share_ipc: Option<bool>,
    share_keyring: Option<bool>,
    keep_background: Option<bool>,
    #[serde(default)]
    allow_socket: Vec<String>,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    read_only: Vec<String>,
    #[serde(default)]
    profile: Vec<String>,
    #[serde(default)]
    hide: Vec<String>,
    #[serde(default)]
    show: Vec<String>,
    #[serde(default)]
    keep_env: Vec<String>,
    view: Option<String>,
    cache: Option<String>,
    home: Option<String>,
    detect: Option<bool>,
    #[serde(default)]
    allow_domains: Vec<String>,
    egress_log: Option<String>,
    #[serde(default)]
    expose: Vec<String>,
    #[serde(default)]
    accept_degraded: Vec<String>,
    #[serde(default)]
    profiles: BTreeMap<String, ProfileDef>,
}

/// Every setting, resolved, with its source.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    pub network: Sourced<NetworkMode>,
    /// The host's PID namespace or a private one.
    pub pid: Sourced<PidMode>,
    pub tmp: Sourced<TmpMode>,
    pub landlock: Sourced<LandlockMode>,
    pub die_with_parent: Sourced<bool>,
    pub new_session: Sourced<bool>,
    pub allow_git_config: Sourced<bool>,
    /// The host's SysV IPC instead of a private IPC namespace.
    pub share_ipc: Sourced<bool>,
    /// The caller's session keyring instead of a fresh one.
    pub share_keyring: Sourced<bool>,
    /// Leave what the command leaves behind running after it exits.
    pub keep_background: Sourced<bool>,
    pub allow_socket: Vec<Sourced<PathSpec>>,
    pub include: Vec<Sourced<PathSpec>>,
    pub read_only: Vec<Sourced<PathSpec>>,
    pub profiles: Vec<Sourced<String>>,
    /// Paths made unreadable besides the default hidden set.
    pub hide: Vec<Sourced<PathSpec>>,
    /// Paths taken out of the default hidden set.
    pub show: Vec<Sourced<PathSpec>>,
    /// Secret-looking variables kept (names, or `*` for all).
    pub keep_env: Vec<Sourced<String>>,
    pub view: Sourced<ViewMode>,
    /// What writes to cache directories outside the workspace do.
    pub cache: Sourced<CacheMode>,
    /// The home directory read-only, or overlaid.
    pub home: Sourced<HomeMode>,
    /// Apply the toolchain profiles whose marker files the workspace holds.
    pub detect: Sourced<bool>,
    /// `--network proxied`: the destinations the proxy connects to.
    pub allow_domains: Vec<Sourced<crate::egress::Rule>>,
    /// Where the proxy logs each connection (JSON lines).
    pub egress_log: Option<Sourced<PathSpec>>,
    /// Host paths shown read-only in the minimal view.
    pub expose: Vec<Sourced<PathSpec>>,
    /// verify checks whose failure the administrator accepts (a named,
    /// recorded exception: it holds the rollout no longer).
    pub accept_degraded: Vec<Sourced<String>>,
    #[serde(skip)]
    pub profile_defs: BTreeMap<String, Sourced<ProfileDef>>,
    /// Config files read, in order of increasing priority.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub config_files: Vec<PathBuf>,
}

/// The environment variables qwrap reads its settings from.
pub const ENV_NETWORK: &str = "QWRAP_NETWORK";
pub const ENV_TMP: &str = "QWRAP_TMP";
pub const ENV_VIEW: &str = "QWRAP_VIEW";
pub const ENV_PID: &str = "QWRAP_PID";
pub const ENV_CACHE: &str = "QWRAP_CACHE";
pub const ENV_HOME: &str = "QWRAP_HOME";
pub const ENV_INCLUDE: &str = "QWRAP_INCLUDE";
pub const ENV_PROFILE: &str = "QWRAP_PROFILE";
pub const ENV_LANDLOCK: &str = "QWRAP_LANDLOCK";
pub const ENV_ALLOW_SOCKET: &str = "QWRAP_ALLOW_SOCKET";
/// Overrides the system config path (for tests and packaging).
pub const ENV_SYSTEM_CONFIG: &str = "QWRAP_SYSTEM_CONFIG";
pub const SYSTEM_CONFIG: &str = "/etc/qwrap/config.toml";

impl Settings {
    /// Merges the sources. `configs` is lowest priority first.
    pub fn load(
        cli: &CliSettings,
        env: &dyn Fn(&str) -> Option<OsString>,
        configs: &[ConfigText],
    ) -> Result<Settings, SettingsError> {
        let mut parsed = Vec::new();
        for c in configs {
            let name = c.path.display().to_string();
            let file: ConfigFile =
                toml::from_str(&c.text).map_err(|e| err(&name, e.message().to_string()))?;
            parsed.push((name, file));
        }
        let env_str = |k: &str| -> Result<Option<String>, SettingsError> {
            match env(k) {
                None => Ok(None),
                Some(v) if v.is_empty() => Ok(None),
                Some(v) => v
                    .into_string()
                    .map(Some)
                    .map_err(|_| err(&format!("${k}"), "not valid UTF-8")),
            }
        };

        // Profiles: shipped, then config files may add or replace. The
        // shipped ones are parsed only when some profile is asked for
        // (detection parses them when a marker file is there).
        let detect = if cli.no_detect {
            Sourced::new(false, "--no-detect")
        } else {
            parsed
                .iter()
                .rev()
                .find_map(|(n, f)| f.detect.map(|d| Sourced::new(d, n.clone())))
                .unwrap_or_else(|| Sourced::new(true, "default"))
        };
        let wants_profiles = !cli.profile.is_empty()
            || env_str(ENV_PROFILE)?.is_some()
            || parsed.iter().any(|(_, f)| !f.profile.is_empty());
        let mut profile_defs: BTreeMap<String, Sourced<ProfileDef>> = if wants_profiles {
            profile::shipped()
                .into_iter()
                .map(|(k, v)| (k, Sourced::new(v, "shipped")))
                .collect()
        } else {
            BTreeMap::new()
        };
        for (name, f) in &parsed {
            for (k, v) in &f.profiles {
                profile_defs.insert(k.clone(), Sourced::new(v.clone(), name.clone()));
            }
        }

        // Lists gather from every source, lowest priority first.
        let mut include = Vec::new();
        let mut read_only = Vec::new();
        let mut profiles = Vec::new();
        let mut allow_socket = Vec::new();
        let (mut hide, mut show, mut keep_env, mut expose) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut accept = Vec::new();
        for (name, f) in &parsed {
            allow_socket.extend(
                f.allow_socket
                    .iter()
                    .map(|i| Sourced::new(PathSpec::Template(i.clone()), name.clone())),
            );
            include.extend(
                f.include
                    .iter()
                    .map(|i| Sourced::new(PathSpec::Template(i.clone()), name.clone())),
            );
            read_only.extend(
                f.read_only
                    .iter()
                    .map(|i| Sourced::new(PathSpec::Template(i.clone()), name.clone())),
            );
            profiles.extend(f.profile.iter().map(|p| Sourced::new(p.clone(), name.clone())));
            hide.extend(
                f.hide
                    .iter()
                    .map(|i| Sourced::new(PathSpec::Template(i.clone()), name.clone())),
            );
            show.extend(
                f.show
                    .iter()
                    .map(|i| Sourced::new(PathSpec::Template(i.clone()), name.clone())),
            );
            keep_env.extend(f.keep_env.iter().map(|k| Sourced::new(k.clone(), name.clone())));
            expose.extend(
                f.expose
                    .iter()
                    .map(|i| Sourced::new(PathSpec::Template(i.clone()), name.clone())),
            );
            accept.extend(
                f.accept_degraded
                    .iter()
                    .map(|a| Sourced::new(a.clone(), name.clone())),
            );
        }
        if let Some(v) = env_str(ENV_INCLUDE)? {
            include.extend(
                v.split(':')
                    .filter(|s| !s.is_empty())
                    .map(|s| Sourced::new(PathSpec::Template(s.to_string()), format!("${ENV_INCLUDE}"))),
            );
        }
        if let Some(v) = env_str(ENV_PROFILE)? {
            profiles.extend(
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| Sourced::new(s.to_string(), format!("${ENV_PROFILE}"))),
            );
        }
        if let Some(v) = env_str(ENV_ALLOW_SOCKET)? {
            allow_socket.extend(
                v.split(':')
                    .filter(|s| !s.is_empty())
                    .map(|s| Sourced::new(PathSpec::Template(s.to_string()), format!("${ENV_ALLOW_SOCKET}"))),
            );
        }
        allow_socket.extend(
            cli.allow_socket
                .iter()
                .map(|p| Sourced::new(PathSpec::Literal(p.clone()), "--allow-socket")),
        );
        include.extend(
            cli.include
                .iter()
                .map(|p| Sourced::new(PathSpec::Literal(p.clone()), "--include")),
        );
        read_only.extend(
            cli.read_only
                .iter()
                .map(|p| Sourced::new(PathSpec::Literal(p.clone()), "--ro")),
        );
        profiles.extend(cli.profile.iter().map(|p| Sourced::new(p.clone(), "--profile")));
        hide.extend(
            cli.hide
                .iter()
                .map(|p| Sourced::new(PathSpec::Literal(p.clone()), "--hide")),
        );
        show.extend(
            cli.show
                .iter()
                .map(|p| Sourced::new(PathSpec::Literal(p.clone()), "--show")),
        );
        keep_env.extend(cli.keep_env.iter().map(|k| Sourced::new(k.clone(), "--keep-env")));
        expose.extend(
            cli.expose
                .iter()
                .map(|p| Sourced::new(PathSpec::Literal(p.clone()), "--expose")),
        );
        accept.extend(
            cli.accept_degraded
                .iter()
                .map(|a| Sourced::new(a.clone(), "--accept-degraded")),
        );
        let mut seen = std::collections::BTreeSet::new();
        profiles.retain(|p| seen.insert(p.value.clone()));
        for p in &profiles {
            if !profile_defs.contains_key(&p.value) {
                let known: Vec<&str> = profile_defs.keys().map(String::as_str).collect();
                return Err(err(
                    &p.source,
                    format!("unknown profile {:?} (known: {})", p.value, known.join(", ")),
                ));
            }
        }

        // Scalars: the highest-priority source that sets one wins. A setting
        // whose flag, variable and config key share its name, with no
        // profile's default:
        macro_rules! setting {
            ($field:ident, $flag:literal, $env:expr, $default:expr) => {
                scalar(
                    cli.$field.as_deref(),
                    $flag,
                    env_str($env)?,
                    $env,
                    parsed.iter().map(|(n, f)| (n, f.$field.as_deref())),
                    None,
                    $default,
                )?
            };
        }
        let network = setting!(network, "--network", ENV_NETWORK, NetworkMode::Open);
        let profile_tmp = profiles.iter().find_map(|p| {
            let def = &profile_defs[&p.value];
            def.value
                .tmp
                .as_deref()
                .map(|t| (t.to_string(), format!("profile {}", p.value)))
        });
        let tmp = scalar(
            cli.tmp.as_deref(),
            "--tmp",
            env_str(ENV_TMP)?,
            ENV_TMP,
            parsed.iter().map(|(n, f)| (n, f.tmp.as_deref())),
            profile_tmp,
            TmpMode::Private,
        )?;
        let landlock = setting!(landlock, "--landlock", ENV_LANDLOCK, LandlockMode::BestEffort);
        let view = setting!(view, "--view", ENV_VIEW, ViewMode::Host);
        let pid = setting!(pid, "--pid", ENV_PID, PidMode::Shared);
        let cache = setting!(cache, "--cache", ENV_CACHE, CacheMode::Overlay);
        let home = setting!(home, "--home", ENV_HOME, HomeMode::ReadOnly);
        let flag = |get: fn(&ConfigFile) -> Option<bool>, cli_set: Option<(bool, &str)>, default: bool| {
            let mut v = Sourced::new(default, "default");
            for (name, f) in &parsed {
                if let Some(x) = get(f) {
                    v = Sourced::new(x, name.clone());
                }
            }
            if let Some((x, src)) = cli_set {
                v = Sourced::new(x, src);
            }
            v
        };
        let die_with_parent = flag(
            |f| f.die_with_parent,
            cli.no_die_with_parent.then_some((false, "--no-die-with-parent")),
            true,
        );
        let new_session = flag(
            |f| f.new_session,
            cli.new_session.then_some((true, "--new-session")),
            false,
        );
        let allow_git_config = flag(
            |f| f.allow_git_config,
            cli.allow_git_config.then_some((true, "--allow-git-config")),
            false,
        );

        let share_ipc = flag(
            |f| f.share_ipc,
            cli.share_ipc.then_some((true, "--share-ipc")),
            false,
        );
        let share_keyring = flag(
            |f| f.share_keyring,
            cli.share_keyring.then_some((true, "--share-keyring")),
            false,
        );
        let keep_background = flag(
            |f| f.keep_background,
            cli.keep_background.then_some((true, "--keep-background")),
            false,
        );

        let allow_domains = super::sourced::rules(
            parsed
                .iter()
                .flat_map(|(n, f)| f.allow_domains.iter().map(move |d| (d.as_str(), n.as_str())))
                .chain(cli.allow_domain.iter().map(|d| (d.as_str(), "--allow-domain"))),
        )?;
        let egress_log = match &cli.egress_log {
            Some(p) => Some(Sourced::new(PathSpec::Literal(p.clone()), "--egress-log")),
            None => parsed.iter().rev().find_map(|(n, f)| {
                f.egress_log
                    .clone()
                    .map(|t| Sourced::new(PathSpec::Template(t), n.clone()))
            }),
        };
        Ok(Settings {
            network,
            pid,
            tmp,
            landlock,
            die_with_parent,
            new_session,
            allow_git_config,
            share_ipc,
            share_keyring,
            keep_background,
            allow_socket,
            include,
            read_only,
            profiles,
            hide,
            show,
            keep_env,
            view,
            cache,
            home,
            detect,
            allow_domains,
            egress_log,
            expose,
            accept_degraded: accept,
            profile_defs,
            config_files: configs.iter().map(|c| c.path.clone()).collect(),
        })
    }
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
