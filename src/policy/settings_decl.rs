//! Every setting of the regular kinds declared once — its name, type,
//! default, flag, variable and config key — and the command line's,
//! config file's and resolved structs and the merge derived from that one
//! declaration (settings.rs adds the few that merge their own way: `tmp`'s
//! profile default, `detect`, the allow-list, the egress log).
//!
//! - a **mode** is one value: the command line, then `$QWRAP_*`, then the
//!   config files (later first), then the default;
//! - a **switch** is a boolean a config key sets and a flag turns to the
//!   other value;
//! - a **path list** or **word list** gathers from every source, lowest
//!   priority first: config files, the variable (`:`-separated paths,
//!   `,`-separated words), the flags.

use super::profile::ProfileDef;
use super::sourced::{SettingsError, Sourced, scalar};
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
        modes { $( $(#[$md:meta])* $m:ident : $mt:ty = $mdef:expr, $mflag:literal, $menv:ident; )* }
        switches { $( $(#[$sd:meta])* $s:ident = $sdef:literal, $sflag:literal => $scli:ident $(, $senv:ident)?; )* }
        paths { $( $(#[$pd:meta])* $p:ident, $pflag:literal $(, $penv:ident)?; )* }
        words { $( $(#[$wd:meta])* $w:ident / $wkey:ident, $wflag:literal $(, $wenv:ident)?; )* }
    ) => {
        /// What the command line said.
        #[derive(Debug, Clone, Default)]
        pub struct CliSettings {
            $( pub $m: Option<String>, )*
            $( pub $scli: bool, )*
            $( pub $p: Vec<PathBuf>, )*
            $( pub $wkey: Vec<String>, )*
            pub tmp: Option<String>,
            pub no_detect: bool,
            pub allow_domain: Vec<String>,
            pub egress_log: Option<PathBuf>,
        }

        /// The config file's keys.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(super) struct ConfigFile {
            $( pub(super) $m: Option<String>, )*
            $( pub(super) $s: Option<bool>, )*
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
            $( $(#[$sd])* pub $s: Sourced<bool>, )*
            $( $(#[$pd])* pub $p: Vec<Sourced<PathSpec>>, )*
            $( $(#[$wd])* pub $w: Vec<Sourced<String>>, )*
        }

        /// Every declared setting's key, flag and variable.
        pub const DECLARED: &[Declared] = &[
            $( Declared { key: stringify!($m), flag: $mflag, env: Some($menv) }, )*
            $( Declared { key: stringify!($s), flag: $sflag, env: declare_settings!(@env $($senv)?) }, )*
            $( Declared { key: stringify!($p), flag: $pflag, env: declare_settings!(@env $($penv)?) }, )*
            $( Declared { key: stringify!($wkey), flag: $wflag, env: declare_settings!(@env $($wenv)?) }, )*
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
                    cli.$m.as_deref(),
                    $mflag,
                    env($menv)?,
                    $menv,
                    parsed.iter().map(|(n, f)| (n, f.$m.as_deref())),
                    None,
                    $mdef,
                )?, )*
                $( $s: {
                    let mut v = Sourced::new($sdef, "default");
                    for (name, f) in parsed {
                        if let Some(x) = f.$s {
                            v = Sourced::new(x, name.clone());
                        }
                    }
                    $( if let Some(x) = env($senv)? {
                        v = Sourced::new(super::sourced::switch(&x, $senv)?, format!("${}", $senv));
                    } )?
                    if cli.$scli {
                        v = Sourced::new(!$sdef, $sflag);
                    }
                    v
                }, )*
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
                    all.extend(cli.$p.iter().map(|p| Sourced::new(PathSpec::Literal(p.clone()), $pflag)));
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
                    all.extend(cli.$wkey.iter().map(|w| Sourced::new(w.clone(), $wflag)));
                    all
                }, )*
            })
        }
    };
    (@env $e:ident) => { Some($e) };
    (@env) => { None };
}

declare_settings! {
    modes {
        network: NetworkMode = NetworkMode::Open, "--network", ENV_NETWORK;
        /// The host's PID namespace or a private one.
        pid: PidMode = PidMode::Shared, "--pid", ENV_PID;
        landlock: LandlockMode = LandlockMode::BestEffort, "--landlock", ENV_LANDLOCK;
        view: ViewMode = ViewMode::Host, "--view", ENV_VIEW;
        /// What writes to cache directories outside the workspace do.
        cache: CacheMode = CacheMode::Overlay, "--cache", ENV_CACHE;
        /// The home directory read-only, or overlaid.
        home: HomeMode = HomeMode::Listed, "--home", ENV_HOME;
        /// Namespaces, Landlock and seccomp only, or the first that holds.
        isolation: IsolationMode = IsolationMode::Namespaces, "--isolation", ENV_ISOLATION;
        /// The size of the private /tmp and /dev/shm, each.
        tmpfs_size: TmpfsSize = TmpfsSize::DEFAULT, "--tmpfs-size", ENV_TMPFS_SIZE;
        /// The memory of the command's whole tree, swap included (a cgroup).
        memory: MemoryLimit = MemoryLimit(None), "--memory", ENV_MEMORY;
        /// The tasks (processes and threads) of the command's tree (a cgroup).
        max_processes: ProcessLimit = ProcessLimit(None), "--max-processes", ENV_MAX_PROCESSES;
        /// The CPU time of the command's tree, in CPUs (a cgroup).
        cpus: CpuLimit = CpuLimit(None), "--cpus", ENV_CPUS;
        /// The wall-clock time of the sandbox (the warden ends it).
        time_limit: TimeLimit = TimeLimit(None), "--time-limit", ENV_TIME_LIMIT;
    }
    switches {
        die_with_parent = true, "--no-die-with-parent" => no_die_with_parent;
        new_session = false, "--new-session" => new_session;
        allow_git_config = false, "--allow-git-config" => allow_git_config;
        /// The host's SysV IPC instead of a private IPC namespace.
        share_ipc = false, "--share-ipc" => share_ipc;
        /// The caller's keyrings reachable instead of every keyring call refused.
        share_keyring = false, "--share-keyring" => share_keyring;
        /// The caller's terminal on the command's descriptors instead of a
        /// pty of qwrap's own between them.
        share_terminal = false, "--share-terminal" => share_terminal;
        /// Leave what the command leaves behind running after it exits.
        keep_background = false, "--keep-background" => keep_background;
        /// Every change to the workspace (its git dir included) kept in a
        /// layer of its own until `qwrap review apply`.
        review = false, "--review" => review, ENV_REVIEW;
        /// The agent and editor files at the workspace's top writable (by
        /// default those there at the start are read-only).
        allow_agent_files = false, "--allow-agent-files" => allow_agent_files;
        /// Say at exit what was refused and the option that would allow it.
        explain = false, "--explain" => explain, ENV_EXPLAIN;
    }
    paths {
        allow_socket, "--allow-socket", ENV_ALLOW_SOCKET;
        include, "--include", ENV_INCLUDE;
        read_only, "--ro";
        /// Paths made unreadable besides the default hidden set.
        hide, "--hide";
        /// Paths taken out of the default hidden set.
        show, "--show";
        /// Host paths shown read-only in the minimal view.
        expose, "--expose";
    }
    words {
        profiles / profile, "--profile", ENV_PROFILE;
        /// Secret-looking variables kept (names, or `*` for all).
        keep_env / keep_env, "--keep-env";
        /// verify checks whose failure the administrator accepts (a named,
        /// recorded exception: it holds the rollout no longer).
        accept_degraded / accept_degraded, "--accept-degraded";
    }
}
