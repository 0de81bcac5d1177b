// The probe's arguments, described once: the library writes them
// (`ProbeArgs::to_args`) and the hidden `qwrap __probe` subcommand parses
// them with this clap definition (src/cli.rs flattens it; the build script,
// which cannot link the library, includes this file under the same path).
// Only std and clap here.

use std::path::PathBuf;

/// What the probe needs to know about the host, passed on its command line.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct ProbeArgs {
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// A path outside every writable root whose directory exists.
    #[arg(long, default_value = "/")]
    pub outside: PathBuf,
    /// The home directory (None: not known).
    #[arg(long)]
    pub home: Option<PathBuf>,
    /// The host's `readlink /proc/self/ns/pid`.
    #[arg(long, default_value = "")]
    pub host_pidns: String,
    #[arg(long)]
    pub closed_network: bool,
    /// Whether the host has a non-loopback interface.
    #[arg(long)]
    pub host_has_nonlo: bool,
    /// A host process of ours to try to signal.
    #[arg(long)]
    pub host_pid: Option<u32>,
    /// A host abstract socket name (without the leading NUL) that listens.
    #[arg(long = "abstract")]
    pub abstract_name: Option<String>,
    /// A listening host pathname socket that must be masked.
    #[arg(long)]
    pub masked_socket: Option<PathBuf>,
    /// Git paths that must be read-only.
    #[arg(long)]
    pub protected: Vec<PathBuf>,
    /// Git dirs that must not be renamed (mount points).
    #[arg(long = "git-dir")]
    pub git_dirs: Vec<PathBuf>,
    /// Paths that must be unreadable.
    #[arg(long)]
    pub hidden: Vec<PathBuf>,
    /// A host path outside the minimal view that must not exist inside.
    #[arg(long)]
    pub absent: Option<PathBuf>,
    /// A canary file verify planted in the listed home, under a name no
    /// list shows, after the view was decided: it must not be read.
    #[arg(long)]
    pub canary: Option<PathBuf>,
    /// A home file verify replaces by rename while the probe waits: it
    /// must not be read.
    #[arg(long)]
    pub replaced: Option<PathBuf>,
    /// The canary at each second path the host's mounts give the home:
    /// none may be read.
    #[arg(long = "second-path")]
    pub second_paths: Vec<PathBuf>,
    /// Whether Landlock scopes signals and abstract sockets.
    #[arg(long)]
    pub scoped: bool,
    /// `--pid private`: the sandbox has a PID namespace of its own.
    #[arg(long)]
    pub private_pid: bool,
    /// `--home overlay`: writes to the home land in the workspace's layer.
    #[arg(long)]
    pub home_overlaid: bool,
    /// Caches to write a file into (`cache-isolated`), and its name.
    #[arg(long = "cache")]
    pub caches: Vec<PathBuf>,
    #[arg(long)]
    pub cache_tag: Option<String>,
    /// `--review`: a file to write at the workspace's top, which must not
    /// reach the host (`review-held`).
    #[arg(long)]
    pub review_tag: Option<String>,
    /// The name (comm) the leftover check's processes carry.
    #[arg(long)]
    pub leftover_tag: Option<String>,
    /// `--network proxied`: check the proxy.
    #[arg(long)]
    pub proxied: bool,
    /// A listed destination (`127.0.0.1:PORT`) that greets.
    #[arg(long)]
    pub proxy_target: Option<String>,
    /// `--isolation landlock`: no mount; Landlock refuses (EACCES) what a
    /// read-only mount would (EROFS).
    #[arg(long)]
    pub landlock_only: bool,
    /// Where the workspace write is tried, when not at its top (Landlock
    /// grants no new name at the top of a tree that holds a git dir).
    #[arg(long)]
    pub write_at: Option<PathBuf>,
}
