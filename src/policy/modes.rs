//! The modes a setting chooses between, with their parsers and names.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// Network view inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMode {
    /// The host's network namespace.
    Open,
    /// A fresh network namespace with only `lo`, up.
    Closed,
    /// A fresh network namespace whose only way out is the warden's proxy,
    /// to the destinations of the allow-list.
    Proxied,
}

impl FromStr for NetworkMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "open" => Ok(Self::Open),
            "closed" => Ok(Self::Closed),
            "proxied" => Ok(Self::Proxied),
            other => Err(format!(
                "invalid network mode {other:?}: expected \"open\", \"closed\" or \"proxied\""
            )),
        }
    }
}

impl NetworkMode {
    /// Whether the sandbox has a network namespace of its own.
    pub fn private(self) -> bool {
        self != NetworkMode::Open
    }
}

impl fmt::Display for NetworkMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Open => "open",
            Self::Closed => "closed",
            Self::Proxied => "proxied",
        })
    }
}

/// Whether Landlock must, may or must not be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockMode {
    /// Fail closed unless every Landlock layer can be applied.
    Require,
    /// Apply what the kernel offers and report the rest as degraded.
    BestEffort,
    Off,
}

impl FromStr for LandlockMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "require" => Ok(Self::Require),
            "best-effort" => Ok(Self::BestEffort),
            "off" => Ok(Self::Off),
            other => Err(format!(
                "invalid landlock mode {other:?}: expected \"require\", \"best-effort\" or \"off\""
            )),
        }
    }
}

impl fmt::Display for LandlockMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Require => "require",
            Self::BestEffort => "best-effort",
            Self::Off => "off",
        })
    }
}

/// What /tmp is inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TmpMode {
    /// A fresh tmpfs on /tmp, `TMPDIR=/tmp`.
    Private,
    /// The host's `$TMPDIR` (or /tmp) is a writable root.
    Host,
}

impl FromStr for TmpMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "private" => Ok(Self::Private),
            "host" => Ok(Self::Host),
            other => Err(format!(
                "invalid tmp mode {other:?}: expected \"private\" or \"host\""
            )),
        }
    }
}

impl fmt::Display for TmpMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Private => "private",
            Self::Host => "host",
        })
    }
}

/// What of the host the sandbox sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ViewMode {
    /// The whole host, read-only (less the hidden paths).
    Host,
    /// Only the system directories, the writable roots, the exposed paths,
    /// /dev, /proc, /sys and /tmp: everything else does not exist.
    Minimal,
}

impl FromStr for ViewMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "host" => Ok(Self::Host),
            "minimal" => Ok(Self::Minimal),
            other => Err(format!(
                "invalid view {other:?}: expected \"host\" or \"minimal\""
            )),
        }
    }
}

impl fmt::Display for ViewMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Host => "host",
            Self::Minimal => "minimal",
        })
    }
}

/// Whose PID namespace the command runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PidMode {
    /// The host's: the caller's tools see and wait for the command as
    /// usual; the warden keeps the command's hands off host processes.
    Shared,
    /// A new one, with its own /proc: host processes cannot be seen or
    /// named, and user namespaces made inside can be given their maps
    /// (nested sandboxes work).
    Private,
}

impl FromStr for PidMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "shared" => Ok(Self::Shared),
            "private" => Ok(Self::Private),
            other => Err(format!(
                "invalid pid mode {other:?}: expected \"shared\" or \"private\""
            )),
        }
    }
}

impl fmt::Display for PidMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Shared => "shared",
            Self::Private => "private",
        })
    }
}

/// What the home directory is inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HomeMode {
    /// An allow-list (the default): only the entries tools need and that
    /// hold no credentials, the redacted start-up files and the writable
    /// roots exist; every other name of the home is absent, and the rest
    /// of it read-only (EROFS).
    Listed,
    /// The whole home, the host's, read-only (the writable roots and
    /// caches aside, the hidden set unreadable): Qwen Code's model.
    ReadOnly,
    /// An overlay of the host's whose writes stay in the workspace's layer:
    /// tools that keep state under ~/.config or ~/.local work; nothing
    /// reaches the host's home.
    Overlay,
}

impl FromStr for HomeMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "listed" => Ok(Self::Listed),
            "readonly" => Ok(Self::ReadOnly),
            "overlay" => Ok(Self::Overlay),
            other => Err(format!(
                "invalid home mode {other:?}: expected \"listed\", \"readonly\" or \"overlay\""
            )),
        }
    }
}

impl fmt::Display for HomeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Listed => "listed",
            Self::ReadOnly => "readonly",
            Self::Overlay => "overlay",
        })
    }
}

/// How the command is isolated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IsolationMode {
    /// User, mount, IPC (and network) namespaces, Landlock and seccomp.
    Namespaces,
    /// Landlock and seccomp only, for hosts and containers that refuse
    /// user namespaces or mounts (docs/security.md says what it gives up).
    Landlock,
    /// Namespaces where they are allowed, else Landlock only, said on one
    /// `qwrap: degraded:` line.
    Auto,
}

impl FromStr for IsolationMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "namespaces" => Ok(Self::Namespaces),
            "landlock" => Ok(Self::Landlock),
            "auto" => Ok(Self::Auto),
            other => Err(format!(
                "invalid isolation {other:?}: expected \"namespaces\", \"landlock\" or \"auto\""
            )),
        }
    }
}

impl fmt::Display for IsolationMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Namespaces => "namespaces",
            Self::Landlock => "landlock",
            Self::Auto => "auto",
        })
    }
}

/// What a write to a cache directory outside the workspace does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// The host's cache is the read-only lower layer of an overlay whose
    /// upper layer belongs to the workspace: host tools never read it.
    Overlay,
    /// A fresh tmpfs per run: nothing is kept, nothing reaches the host.
    Private,
    /// Written through to the host's cache (a later host tool reads it).
    Shared,
}

impl FromStr for CacheMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "overlay" => Ok(Self::Overlay),
            "private" => Ok(Self::Private),
            "shared" => Ok(Self::Shared),
            other => Err(format!(
                "invalid cache mode {other:?}: expected \"overlay\", \"private\" or \"shared\""
            )),
        }
    }
}

impl fmt::Display for CacheMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Overlay => "overlay",
            Self::Private => "private",
            Self::Shared => "shared",
        })
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
