//! Loading a policy: the config files read (those inside a writable root
//! ignored), the settings merged, the request resolved.

use super::{
    Caller, CliSettings, Policy, PolicyError, Request, Settings, absolutize, canonical_or_self, resolve,
    settings,
};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

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
    /// `--quiet`: no notes on stderr while the command runs (the egress
    /// proxy's refusals).
    pub quiet: bool,
    /// `--denials FILE`: one JSON object per refusal.
    pub denials: Option<PathBuf>,
}

/// Reads the config files, merges the settings and resolves the policy. A
/// config file that lies inside a writable root (where the confined process
/// could rewrite it) is ignored, and said so in the returned notes.
pub fn load(inv: &Invocation, caller: &Caller) -> Result<(Policy, Vec<String>), LoadError> {
    let env = |k: &str| caller.var(k);
    let paths = settings::config_paths(caller.home.as_deref(), &env);
    let (mut configs, mut notes) = settings::read_configs(&paths)?;
    let cwd = caller.cwd().map_err(LoadError::Policy)?;
    let ws = inv.workspace.as_deref().map(|w| absolutize(w, cwd));
    let ws = canonical_or_self(ws.as_deref().unwrap_or(cwd));
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
        let mut policy = resolve(&request, caller)?;
        policy.quiet = inv.quiet;
        policy.denials = inv.denials.as_deref().map(|d| absolutize(d, cwd));
        let before = configs.len();
        ignore(&mut configs, &|p| {
            policy.writable_roots.iter().any(|r| p.starts_with(&r.path))
        });
        if configs.len() == before {
            return Ok((policy, notes));
        }
    }
}
