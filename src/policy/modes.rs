//! The modes a setting chooses between, with their parsers and names:
//! each declared once (`modes!`), its names shared by the parser, the
//! printed form, the JSON and the command line's choices.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// A mode: its variants and their names, the parser (its error names
/// `what` and every name), `Display` and `Serialize` by name, `NAMES` in
/// the order declared, and clap's `ValueEnum` (the command line's choices).
macro_rules! modes {
    ($(#[$meta:meta])* $name:ident ($what:literal) {
        $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every name, in the order declared.
            pub const NAMES: &'static [&'static str] = &[$($text),+];
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    other => Err(format!("invalid {} {other:?}: expected {}", $what, one_of(Self::NAMES))),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self {
                    $(Self::$variant => $text,)+
                })
            }
        }

        impl clap::ValueEnum for $name {
            fn value_variants<'a>() -> &'a [Self] {
                &[$(Self::$variant),+]
            }
            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(clap::builder::PossibleValue::new(match self {
                    $(Self::$variant => $text,)+
                }))
            }
        }
    };
}

/// `"a", "b" or "c"`.
fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

modes! {
    /// Network view inside the sandbox.
    NetworkMode ("network mode") {
        /// The host's network namespace.
        Open = "open",
        /// A fresh network namespace with only `lo`, up.
        Closed = "closed",
        /// A fresh network namespace whose only way out is the warden's proxy,
        /// to the destinations of the allow-list.
        Proxied = "proxied",
    }
}

impl NetworkMode {
    /// Whether the sandbox has a network namespace of its own.
    pub fn private(self) -> bool {
        self != NetworkMode::Open
    }
}

modes! {
    /// Whether Landlock must, may or must not be applied.
    LandlockMode ("landlock mode") {
        /// Fail closed unless every Landlock layer can be applied.
        Require = "require",
        /// Apply what the kernel offers and report the rest as degraded.
        BestEffort = "best-effort",
        Off = "off",
    }
}

modes! {
    /// What /tmp is inside the sandbox.
    TmpMode ("tmp mode") {
        /// A fresh tmpfs on /tmp, `TMPDIR=/tmp`.
        Private = "private",
        /// The host's `$TMPDIR` (or /tmp) is a writable root.
        Host = "host",
    }
}

modes! {
    /// What of the host the sandbox sees.
    ViewMode ("view") {
        /// The whole host, read-only (less the hidden paths).
        Host = "host",
        /// Only the system directories, the writable roots, the exposed paths,
        /// /dev, /proc, /sys and /tmp: everything else does not exist.
        Minimal = "minimal",
    }
}

modes! {
    /// Whose PID namespace the command runs in.
    PidMode ("pid mode") {
        /// The host's: the caller's tools see and wait for the command as
        /// usual; the warden keeps the command's hands off host processes.
        Shared = "shared",
        /// A new one, with its own /proc: host processes cannot be seen or
        /// named, and user namespaces made inside can be given their maps
        /// (nested sandboxes work).
        Private = "private",
    }
}

modes! {
    /// What the home directory is inside.
    HomeMode ("home mode") {
        /// An allow-list (the default): only the entries tools need and that
        /// hold no credentials, the redacted start-up files and the writable
        /// roots exist; every other name of the home is absent, and the rest
        /// of it read-only (EROFS).
        Listed = "listed",
        /// The whole home, the host's, read-only (the writable roots and
        /// caches aside, the hidden set unreadable): Qwen Code's model.
        ReadOnly = "readonly",
        /// An overlay of the host's whose writes stay in the workspace's layer:
        /// tools that keep state under ~/.config or ~/.local work; nothing
        /// reaches the host's home.
        Overlay = "overlay",
    }
}

modes! {
    /// How the command is isolated.
    IsolationMode ("isolation") {
        /// User, mount, IPC (and network) namespaces, Landlock and seccomp.
        Namespaces = "namespaces",
        /// Landlock and seccomp only, for hosts and containers that refuse
        /// user namespaces or mounts (docs/security.md says what it gives up).
        Landlock = "landlock",
        /// Namespaces where they are allowed, else Landlock only, said on one
        /// `qwrap: degraded:` line.
        Auto = "auto",
    }
}

modes! {
    /// What a write to a cache directory outside the workspace does.
    CacheMode ("cache mode") {
        /// The host's cache is the read-only lower layer of an overlay whose
        /// upper layer belongs to the workspace: host tools never read it.
        Overlay = "overlay",
        /// A fresh tmpfs per run: nothing is kept, nothing reaches the host.
        Private = "private",
        /// Written through to the host's cache (a later host tool reads it).
        Shared = "shared",
    }
}

/// The size of the sandbox's own tmpfs (/tmp, /dev/shm): bytes, or a share
/// of the host's memory. The kernel's default, half of it for each, lets
/// a test that fills /tmp push the host into the OOM killer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TmpfsSize {
    Bytes(u64),
    Percent(u8),
}

impl TmpfsSize {
    /// A fifth of the host's memory each.
    pub const DEFAULT: TmpfsSize = TmpfsSize::Percent(20);

    /// In bytes, on a host with `mem_total` bytes of memory (0: unknown,
    /// when a share leaves the kernel's default).
    pub fn bytes(self, mem_total: u64) -> Option<u64> {
        match self {
            TmpfsSize::Bytes(b) => Some(b),
            TmpfsSize::Percent(_) if mem_total == 0 => None,
            TmpfsSize::Percent(p) => Some(mem_total / 100 * u64::from(p)),
        }
    }
}

impl FromStr for TmpfsSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad =
            || format!("invalid tmpfs size {s:?}: expected a size (512M, 4G) or a share of the memory (20%)");
        let t = s.trim();
        if let Some(p) = t.strip_suffix('%') {
            return match p.parse::<u8>() {
                Ok(p) if (1..=100).contains(&p) => Ok(TmpfsSize::Percent(p)),
                _ => Err(bad()),
            };
        }
        let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
            Some(i) => t.split_at(i),
            None => (t, ""),
        };
        let shift = match unit {
            "" => 0,
            "K" | "k" => 10,
            "M" | "m" => 20,
            "G" | "g" => 30,
            "T" | "t" => 40,
            _ => return Err(bad()),
        };
        match digits.parse::<u64>().ok().and_then(|n| n.checked_mul(1 << shift)) {
            Some(n) if n >= 4096 => Ok(TmpfsSize::Bytes(n)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for TmpfsSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TmpfsSize::Percent(p) => write!(f, "{p}%"),
            TmpfsSize::Bytes(b) => write!(f, "{b}"),
        }
    }
}

impl Serialize for TmpfsSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
