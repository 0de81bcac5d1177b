//! The environment the command receives: the caller's, less the display
//! sockets, plus `SANDBOX=qwrap` and the user's own changes.

use super::TmpMode;
use serde::Serialize;
use std::ffi::OsString;

/// Variables removed by default: they point at display servers outside.
pub const REMOVED_BY_DEFAULT: [&str; 3] = ["DISPLAY", "WAYLAND_DISPLAY", "MIR_SOCKET"];

/// Changes applied to the caller's environment, in order: unset, then set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvRules {
    /// Start from an empty environment (bubblewrap's `--clearenv`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub clear: bool,
    #[serde(serialize_with = "ser_os_list")]
    pub unset: Vec<OsString>,
    #[serde(serialize_with = "ser_os_pairs")]
    pub set: Vec<(OsString, OsString)>,
}

impl EnvRules {
    pub fn build(tmp: TmpMode, setenv: &[(OsString, OsString)], unsetenv: &[OsString]) -> Self {
        let mut unset: Vec<OsString> = REMOVED_BY_DEFAULT.iter().map(OsString::from).collect();
        for key in unsetenv {
            if !unset.contains(key) {
                unset.push(key.clone());
            }
        }
        let mut set: Vec<(OsString, OsString)> = Vec::new();
        let mut put = |k: OsString, v: OsString| {
            set.retain(|(old, _)| *old != k);
            set.push((k, v));
        };
        if tmp == TmpMode::Private {
            put("TMPDIR".into(), "/tmp".into());
            // Chromium keeps even its headless profile under its config
            // home (~/.config/chromium-headless), read-only here: its own
            // variable points it at the private /tmp instead.
            put("CHROME_CONFIG_HOME".into(), "/tmp/.chrome-config".into());
        }
        for (k, v) in setenv {
            put(k.clone(), v.clone());
        }
        // Last, so that nothing can hide that the command is confined.
        put("SANDBOX".into(), "qwrap".into());
        // A variable both unset and set ends up set.
        unset.retain(|k| !set.iter().any(|(s, _)| s == k));
        Self {
            clear: false,
            unset,
            set,
        }
    }

    /// Applies the rules to an environment.
    pub fn apply(&self, env: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = env
            .into_iter()
            .filter(|(k, _)| !self.clear && !self.unset.contains(k) && !self.set.iter().any(|(s, _)| s == k))
            .collect();
        out.extend(self.set.iter().cloned());
        out
    }
}

fn ser_os_list<S: serde::Serializer>(v: &[OsString], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|k| k.to_string_lossy()))
}

fn ser_os_pairs<S: serde::Serializer>(v: &[(OsString, OsString)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(v.iter().map(|(k, v)| (k.to_string_lossy(), v.to_string_lossy())))
}
