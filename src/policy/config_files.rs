//! Where config files are and reading them: the system's, then the user's.

use super::settings::{ENV_SYSTEM_CONFIG, SYSTEM_CONFIG, SettingsError, err};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A config file's text and where it was read from.
#[derive(Debug, Clone)]
pub struct ConfigText {
    pub path: PathBuf,
    pub text: String,
}

/// The config files to read, lowest priority first: the system's, then the
/// user's (`$XDG_CONFIG_HOME` or `~/.config`). Missing files are skipped.
pub fn config_paths(home: Option<&Path>, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let system = env(ENV_SYSTEM_CONFIG)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(SYSTEM_CONFIG));
    let user_base = env("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| h.join(".config")));
    let mut v = vec![system];
    v.extend(user_base.map(|b| b.join("qwrap/config.toml")));
    v
}

/// Reads the config files that exist. The system config must be readable
/// when it exists; a user config that cannot be read (say, `$HOME` belongs to
/// another account) is skipped, and the returned notes say so.
pub fn read_configs(paths: &[PathBuf]) -> Result<(Vec<ConfigText>, Vec<String>), SettingsError> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        match std::fs::read_to_string(p) {
            Ok(text) => out.push(ConfigText {
                path: p.clone(),
                text,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) if i > 0 && e.kind() == std::io::ErrorKind::PermissionDenied => {
                notes.push(format!(
                    "ignored {}: {}",
                    p.display(),
                    crate::errno::errno_text(libc::EACCES)
                ));
            }
            Err(e) => {
                return Err(err(
                    &p.display().to_string(),
                    crate::errno::errno_text(e.raw_os_error().unwrap_or(libc::EIO)),
                ));
            }
        }
    }
    Ok((out, notes))
}
