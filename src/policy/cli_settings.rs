// The command line's part of the declared settings (settings_list.rs): the
// clap structs `run`, `plan`, `inspect`, `verify` and `receipt` flatten,
// and their parser of the plain shapes tools write. The build script
// compiles this file too (for the man pages), so it may use only clap,
// std and the modes.

use super::{CacheMode, HomeMode, IsolationMode, LandlockMode, NetworkMode, PidMode, TmpMode, ViewMode};
use std::ffi::OsString;
use std::path::PathBuf;

include!("settings_list.rs");

macro_rules! cli_structs {
    (
        modes { $( $(#[$md:meta])* $m:ident : $mt:ident = $mdef:expr, $mflag:literal $mvn:literal, $menv:ident; )* }
        values { $( $(#[$vd:meta])* $v:ident : $vt:ty = $vdef:expr, $vflag:literal $vvn:literal, $venv:ident; )* }
        switches { $( $(#[$sd:meta])* $s:ident = $sdef:literal, $sflag:literal => $scli:ident $(, $senv:ident)?; )* }
        run_switches { $( $(#[$rd:meta])* $r:ident = $rdef:literal, $rflag:literal => $rcli:ident $(, $renv:ident)?; )* }
        paths { $( $(#[$pd:meta])* $p:ident, $pflag:literal $(| $palias:literal)? $pvn:literal $(, $penv:ident)?; )* }
        words { $( $(#[$wd:meta])* $w:ident / $wkey:ident, $wflag:literal $wvn:literal $(, $wenv:ident)?; )* }
    ) => {
        /// What the command line said of the sandbox (the options run,
        /// plan, inspect, verify and receipt share).
        #[derive(clap::Args, Clone, Debug, Default, PartialEq)]
        pub struct CliSettings {
            $( $(#[$md])* #[arg(long = $mflag, value_name = $mvn)] pub $m: Option<$mt>, )*
            /// private: a fresh tmpfs on /tmp; host: the host's $TMPDIR is
            /// writable [default: private].
            #[arg(long = "tmp", value_name = "MODE")]
            pub tmp: Option<TmpMode>,
            $( $(#[$vd])* #[arg(long = $vflag, value_name = $vvn)] pub $v: Option<String>, )*
            $( $(#[$pd])* #[arg(long = $pflag, $(alias = $palias,)? value_name = $pvn)] pub $p: Vec<PathBuf>, )*
            $( $(#[$wd])* #[arg(long = $wflag, value_name = $wvn)] pub $wkey: Vec<String>, )*
            $( $(#[$sd])* #[arg(long = $sflag)] pub $scli: bool, )*
            /// Do not apply the toolchain profiles (rust, node, python, go)
            /// that the workspace's files call for.
            #[arg(long = "no-detect")]
            pub no_detect: bool,
            /// With --network proxied, a destination the proxy connects to:
            /// `example.com`, `*.example.com`, `1.2.3.4`, each with an
            /// optional `:PORT` (repeatable).
            #[arg(long = "allow-domain", value_name = "DOMAIN")]
            pub allow_domain: Vec<String>,
            /// With --network proxied, append one JSON line per connection
            /// to FILE (time, destination, verdict, bytes).
            #[arg(long = "egress-log", value_name = "FILE")]
            pub egress_log: Option<PathBuf>,
            /// The switches only a command that runs takes (`run`, `plan`:
            /// their own clap struct).
            #[arg(skip)]
            pub run: RunSwitches,
        }

        /// What the command line said of how the command runs (run, plan).
        #[derive(clap::Args, Clone, Debug, Default, PartialEq)]
        pub struct RunSwitches {
            $( $(#[$rd])* #[arg(long = $rflag)] pub $rcli: bool, )*
        }

        impl CliSettings {
            /// Takes option `name` (with `--`) in the plain shapes tools
            /// write (see `fast_value`): true where it is one of these,
            /// false where not; None leaves the whole line to clap (a
            /// single-valued option again, a value that is not one, a
            /// switch given `=VALUE`).
            pub fn take_plain(
                &mut self,
                name: &str,
                inline: bool,
                value: &mut dyn FnMut() -> Option<OsString>,
            ) -> Option<bool> {
                let text = |v: OsString| v.into_string().ok();
                match name.strip_prefix("--").unwrap_or("") {
                    $( $mflag if self.$m.is_none() => self.$m = Some(text(value()?)?.parse().ok()?), )*
                    "tmp" if self.tmp.is_none() => self.tmp = Some(text(value()?)?.parse().ok()?),
                    $( $vflag if self.$v.is_none() => self.$v = Some(text(value()?)?), )*
                    $( $pflag $(| $palias)? => self.$p.push(value()?.into()), )*
                    $( $wflag => self.$wkey.push(text(value()?)?), )*
                    $( $sflag if !inline && !self.$scli => self.$scli = true, )*
                    "no-detect" if !inline && !self.no_detect => self.no_detect = true,
                    "allow-domain" => self.allow_domain.push(text(value()?)?),
                    "egress-log" if self.egress_log.is_none() => self.egress_log = Some(value()?.into()),
                    $( $mflag )|* | "tmp" $( | $vflag )* $( | $sflag )* | "no-detect" | "egress-log" => return None,
                    _ => return Some(false),
                }
                Some(true)
            }
        }

        impl RunSwitches {
            /// As `CliSettings::take_plain`, for the run's switches.
            pub fn take_plain(&mut self, name: &str, inline: bool) -> Option<bool> {
                match name.strip_prefix("--").unwrap_or("") {
                    $( $rflag if !inline && !self.$rcli => self.$rcli = true, )*
                    $( $rflag )|* => return None,
                    _ => return Some(false),
                }
                Some(true)
            }
        }
    };
}

settings_list!(cli_structs);
