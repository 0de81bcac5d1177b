//! The config file's keys, the resolved settings and the merge, derived
//! from the one declaration of every setting of the regular kinds
//! (settings_list.rs, which gives the command line's structs too:
//! cli_settings.rs); settings.rs adds the few that merge their own way
//! (`tmp`'s profile default, `detect`, the allow-list, the egress log).
//!
//! - a **mode** is one value: the command line, then `$QWRAP_*`, then the
//!   config files (later first), then the default;
//! - a **switch** is a boolean a config key sets and a flag turns to the
//!   other value;
//! - a **path list** or **word list** gathers from every source, lowest
//!   priority first: config files, the variable (`:`-separated paths,
//!   `,`-separated words), the flags.

pub use super::cli_settings::{CliSettings, RunSwitches};
use super::profile::ProfileDef;
use super::sourced::{SettingsError, Sourced, scalar, switched};
use super::{
    CacheMode, CpuLimit, HomeMode, IsolationMode, LandlockMode, MemoryLimit, NetworkMode, PidMode,
    ProcessLimit, TimeLimit, TmpfsSize, ViewMode,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A path as given: literally (command line) or as a template with `~` and
/// `$VAR` (environment, config files, profiles).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum PathSpec {
    Literal(#[serde(serialize_with = "crate::lossy::path")] PathBuf),
    Template(String),
}

/// The environment variables qwrap reads its settings from.
pub const ENV_NETWORK: &str = "QWRAP_NETWORK";
pub const ENV_TMP: &str = "QWRAP_TMP";
pub const ENV_VIEW: &str = "QWRAP_VIEW";
pub const ENV_PID: &str = "QWRAP_PID";
pub const ENV_CACHE: &str = "QWRAP_CACHE";
pub const ENV_HOME: &str = "QWRAP_HOME";
pub const ENV_ISOLATION: &str = "QWRAP_ISOLATION";
pub const ENV_INCLUDE: &str = "QWRAP_INCLUDE";
pub const ENV_PROFILE: &str = "QWRAP_PROFILE";
pub const ENV_LANDLOCK: &str = "QWRAP_LANDLOCK";
pub const ENV_ALLOW_SOCKET: &str = "QWRAP_ALLOW_SOCKET";
pub const ENV_TMPFS_SIZE: &str = "QWRAP_TMPFS_SIZE";
pub const ENV_REVIEW: &str = "QWRAP_REVIEW";
pub const ENV_EXPLAIN: &str = "QWRAP_EXPLAIN";
pub const ENV_MEMORY: &str = "QWRAP_MEMORY";
pub const ENV_MAX_PROCESSES: &str = "QWRAP_MAX_PROCESSES";
pub const ENV_CPUS: &str = "QWRAP_CPUS";
pub const ENV_TIME_LIMIT: &str = "QWRAP_TIME_LIMIT";
/// Overrides the system config path (for tests and packaging).
pub const ENV_SYSTEM_CONFIG: &str = "QWRAP_SYSTEM_CONFIG";
/// How a declared setting is given, for the docs' checks and the reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Declared {
    /// The config file's key (also the command line struct's field).
    pub key: &'static str,
    pub flag: &'static str,
    pub env: Option<&'static str>,
}

macro_rules! declare_settings {
    (
        modes { $( $(#[$md:meta])* $m:ident : $mt:ty = $mdef:expr, $mflag:literal $mvn:literal, $menv:ident; )* }
        values { $( $(#[$vd:meta])* $v:ident : $vt:ty = $vdef:expr, $vflag:literal $vvn:literal, $venv:ident; )* }
        switches { $( $(#[$sd:meta])* $s:ident = $sdef:literal, $sflag:literal => $scli:ident $(, $senv:ident)?; )* }
        run_switches { $( $(#[$rd:meta])* $r:ident = $rdef:literal, $rflag:literal => $rcli:ident $(, $renv:ident)?; )* }
        paths { $( $(#[$pd:meta])* $p:ident, $pflag:literal $(| $palias:literal)? $pvn:literal $(, $penv:ident)?; )* }
        words { $( $(#[$wd:meta])* $w:ident / $wkey:ident, $wflag:literal $wvn:literal $(, $wenv:ident)?; )* }
    ) => {
        /// The config file's keys.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct ConfigFile {
            $( pub(super) $m: Option<String>, )*
            $( pub(super) $v: Option<String>, )*
            $( pub(super) $s: Option<bool>, )*
            $( pub(super) $r: Option<bool>, )*
            $( #[serde(default)] pub(super) $p: Vec<String>, )*
            $( #[serde(default)] pub(super) $wkey: Vec<String>, )*
            pub(super) tmp: Option<String>,
            pub(super) detect: Option<bool>,
            #[serde(default)]
            pub(super) allow_domains: Vec<String>,
            pub(super) egress_log: Option<String>,
            #[serde(default)]
            pub(super) profiles: BTreeMap<String, ProfileDef>,
        }

        /// The declared settings, resolved, each with its source.
        #[derive(Debug, Clone, Serialize)]
        pub struct Regular {
            $( $(#[$md])* pub $m: Sourced<$mt>, )*
            $( $(#[$vd])* pub $v: Sourced<$vt>, )*
            $( $(#[$sd])* pub $s: Sourced<bool>, )*
            $( $(#[$rd])* pub $r: Sourced<bool>, )*
            $( $(#[$pd])* pub $p: Vec<Sourced<PathSpec>>, )*
            $( $(#[$wd])* pub $w: Vec<Sourced<String>>, )*
        }

        /// Every declared setting's key, flag and variable.
        pub const DECLARED: &[Declared] = &[
            $( Declared { key: stringify!($m), flag: concat!("--", $mflag), env: Some($menv) }, )*
            $( Declared { key: stringify!($v), flag: concat!("--", $vflag), env: Some($venv) }, )*
            $( Declared { key: stringify!($s), flag: concat!("--", $sflag), env: declare_settings!(@env $($senv)?) }, )*
            $( Declared { key: stringify!($r), flag: concat!("--", $rflag), env: declare_settings!(@env $($renv)?) }, )*
            $( Declared { key: stringify!($p), flag: concat!("--", $pflag), env: declare_settings!(@env $($penv)?) }, )*
            $( Declared { key: stringify!($wkey), flag: concat!("--", $wflag), env: declare_settings!(@env $($wenv)?) }, )*
        ];

        /// Merges the declared settings: the command line, the variables
        /// (`env`), the config files (`parsed`, lowest priority first).
        pub(super) fn merge(
            cli: &CliSettings,
            env: &dyn Fn(&str) -> Result<Option<String>, SettingsError>,
            parsed: &[(String, ConfigFile)],
        ) -> Result<Regular, SettingsError> {
            Ok(Regular {
                $( $m: scalar(
                    cli.$m.map(Ok),
                    concat!("--", $mflag),
                    env($menv)?,
                    $menv,
                    parsed.iter().map(|(n, f)| (n, f.$m.as_deref())),
                    None,
                    $mdef,
                )?, )*
                $( $v: scalar(
                    cli.$v.as_deref().map(str::parse),
                    concat!("--", $vflag),
                    env($venv)?,
                    $venv,
                    parsed.iter().map(|(n, f)| (n, f.$v.as_deref())),
                    None,
                    $vdef,
                )?, )*
                $( $s: switched(
                    $sdef,
                    cli.$scli.then_some(concat!("--", $sflag)),
                    declare_settings!(@var env $($senv)?),
                    parsed.iter().map(|(n, f)| (n, f.$s)),
                )?, )*
                $( $r: switched(
                    $rdef,
                    cli.run.$rcli.then_some(concat!("--", $rflag)),
                    declare_settings!(@var env $($renv)?),
                    parsed.iter().map(|(n, f)| (n, f.$r)),
                )?, )*
                $( $p: {
                    let mut all: Vec<Sourced<PathSpec>> = parsed
                        .iter()
                        .flat_map(|(n, f)| f.$p.iter().map(|t| Sourced::new(PathSpec::Template(t.clone()), n.clone())))
                        .collect();
                    $( if let Some(v) = env($penv)? {
                        all.extend(v.split(':').filter(|s| !s.is_empty()).map(|s| {
                            Sourced::new(PathSpec::Template(s.to_string()), format!("${}", $penv))
                        }));
                    } )?
                    all.extend(cli.$p.iter().map(|p| Sourced::new(PathSpec::Literal(p.clone()), concat!("--", $pflag))));
                    all
                }, )*
                $( $w: {
                    let mut all: Vec<Sourced<String>> = parsed
                        .iter()
                        .flat_map(|(n, f)| f.$wkey.iter().map(|t| Sourced::new(t.clone(), n.clone())))
                        .collect();
                    $( if let Some(v) = env($wenv)? {
                        all.extend(v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| {
                            Sourced::new(s.to_string(), format!("${}", $wenv))
                        }));
                    } )?
                    all.extend(cli.$wkey.iter().map(|w| Sourced::new(w.clone(), concat!("--", $wflag))));
                    all
                }, )*
            })
        }
    };
    (@env $e:ident) => { Some($e) };
    (@env) => { None };
    (@var $env:ident $e:ident) => { Some(($e, $env($e)?)) };
    (@var $env:ident) => { None };
}

include!("settings_list.rs");
settings_list!(declare_settings);
