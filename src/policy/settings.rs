//! Settings and where each came from. The command line wins over the
//! environment (`QWRAP_*`), which wins over the user's config, then the
//! system config, then a chosen profile, then the default. Lists (`include`,
//! `read_only`, `profile`, `hide`, `show`, `keep_env`) gather from every
//! source. Nothing is read from the
//! workspace.

use super::TmpMode;
use super::profile::{self, ProfileDef};
pub use super::settings_decl::{CliSettings, DECLARED, Declared, PathSpec, Regular, RunSwitches};
use super::settings_decl::{ConfigFile, merge};
pub(super) use super::sourced::err;
use super::sourced::scalar;
pub use super::sourced::{SettingsError, Sourced};
use serde::Serialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

pub use super::config_files::{ConfigText, config_paths, read_configs};

/// Every setting, resolved, with its source: the declared ones
/// (settings_decl.rs, reached through `Deref`) and those that merge their
/// own way.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    #[serde(flatten)]
    pub regular: Regular,
    /// A private /tmp or the host's (a profile may set its default).
    pub tmp: Sourced<TmpMode>,
    /// Apply the toolchain profiles whose marker files the workspace holds.
    pub detect: Sourced<bool>,
    /// `--network proxied`: the destinations the proxy connects to.
    pub allow_domains: Vec<Sourced<crate::egress::Rule>>,
    /// Where the proxy logs each connection (JSON lines).
    pub egress_log: Option<Sourced<PathSpec>>,
    #[serde(skip)]
    pub profile_defs: BTreeMap<String, Sourced<ProfileDef>>,
    /// Config files read, in order of increasing priority.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub config_files: Vec<PathBuf>,
}

impl std::ops::Deref for Settings {
    type Target = Regular;
    fn deref(&self) -> &Regular {
        &self.regular
    }
}

impl std::ops::DerefMut for Settings {
    fn deref_mut(&mut self) -> &mut Regular {
        &mut self.regular
    }
}

pub use super::settings_decl::{
    ENV_ALLOW_SOCKET, ENV_CACHE, ENV_HOME, ENV_INCLUDE, ENV_ISOLATION, ENV_LANDLOCK, ENV_NETWORK, ENV_PID,
    ENV_PROFILE, ENV_SYSTEM_CONFIG, ENV_TMP, ENV_VIEW,
};
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

        let mut regular = merge(cli, &env_str, &parsed)?;
        let mut seen = std::collections::BTreeSet::new();
        regular.profiles.retain(|p| seen.insert(p.value.clone()));
        for p in &regular.profiles {
            if !profile_defs.contains_key(&p.value) {
                let known: Vec<&str> = profile_defs.keys().map(String::as_str).collect();
                return Err(err(
                    &p.source,
                    format!("unknown profile {:?} (known: {})", p.value, known.join(", ")),
                ));
            }
        }
        // /tmp: as a mode, but a chosen profile's default comes before the
        // built-in one.
        let profile_tmp = regular.profiles.iter().find_map(|p| {
            let def = &profile_defs[&p.value];
            def.value
                .tmp
                .as_deref()
                .map(|t| (t.to_string(), format!("profile {}", p.value)))
        });
        let tmp = scalar(
            cli.tmp.map(Ok),
            "--tmp",
            env_str(ENV_TMP)?,
            ENV_TMP,
            parsed.iter().map(|(n, f)| (n, f.tmp.as_deref())),
            profile_tmp,
            TmpMode::Private,
        )?;
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
            regular,
            tmp,
            detect,
            allow_domains,
            egress_log,
            profile_defs,
            config_files: configs.iter().map(|c| c.path.clone()).collect(),
        })
    }
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
