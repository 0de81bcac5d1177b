// qwrap's command line as clap definitions, and nothing else: main.rs parses
// with it, and build.rs includes this file with `#[path]` to generate the man
// pages and shell completions, so it may use only clap and std.

use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// A mode's names as the choices clap offers (declared once, with the
/// mode, in src/policy/modes.rs).
fn choices(names: &'static [&'static str]) -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(names.iter().copied())
}

pub const RUN_ABOUT: &str = "Run CMD in a sandbox: the host read-only, the writable roots writable";

/// Shown under every command's help.
pub const ENVIRONMENT: &str = "\
Environment:
  QWRAP_NETWORK, QWRAP_TMP, QWRAP_LANDLOCK   default --network, --tmp, --landlock
  QWRAP_VIEW, QWRAP_CACHE, QWRAP_PID         default --view, --cache, --pid
  QWRAP_HOME, QWRAP_ISOLATION               default --home, --isolation
  QWRAP_TMPFS_SIZE, QWRAP_MEMORY             default --tmpfs-size, --memory
  QWRAP_MAX_PROCESSES, QWRAP_CPUS            default --max-processes, --cpus
  QWRAP_TIME_LIMIT                           default --time-limit
  QWRAP_REVIEW=1                             default --review
  QWRAP_INCLUDE, QWRAP_ALLOW_SOCKET          extra roots and sockets, ':'-separated
  QWRAP_PROFILE                              profiles, ','-separated
  QWRAP_EXPLAIN=1                            --explain
  QWRAP_SYSTEM_CONFIG                        the system config (default /etc/qwrap/config.toml)
  QWRAP_MOUNT_API=legacy                     use mount(2) instead of the new mount API
  QWRAP_TRACE=1 | time                       print each setup step, or its time
Config: ~/.config/qwrap/config.toml, /etc/qwrap/config.toml (man 5 qwrap.toml).";

const AFTER_HELP: &str = "\
As bwrap: `qwrap bwrap ARGS...`, or qwrap installed under the name `bwrap`, takes
bubblewrap's command line (man qwrap-bwrap).

Examples (cd into your project first: the workspace is the current directory):
  qwrap run -- sh                     a shell in a sandbox of the current directory
  qwrap run --network closed -- make  no network but loopback
  qwrap plan -- true                  the setup steps, one syscall per line
  qwrap run --review -- sh            changes kept in a layer: qwrap review diff, apply
  qwrap verify                        prove the boundary from inside";

#[derive(Parser)]
#[command(
    name = "qwrap",
    version,
    about = "Run a command behind a read-only view of the host",
    after_help = AFTER_HELP,
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    #[command(about = RUN_ABOUT, after_help = ENVIRONMENT)]
    Run(SandboxArgs),
    /// Print the setup steps `run` would execute, one syscall per line.
    #[command(after_help = ENVIRONMENT)]
    Plan {
        #[command(flatten)]
        sandbox: SandboxArgs,
        /// Print the plan as JSON (docs: plan-json.md).
        #[arg(long)]
        json: bool,
    },
    /// Report the sandbox's boundary (alias: sandbox); Enforcement is full
    /// only when a probe sandbox with this exact policy started.
    #[command(alias = "sandbox", after_help = ENVIRONMENT)]
    Inspect {
        #[command(flatten)]
        policy: PolicyArgs,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Run the verify battery instead (as `qwrap verify`).
        #[arg(long)]
        verify: bool,
    },
    /// Prove the boundary from inside a real sandbox with this policy.
    #[command(after_help = ENVIRONMENT)]
    Verify {
        #[command(flatten)]
        policy: PolicyArgs,
        /// Print the checks as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the filled-in rollout receipt (runs inspect and verify).
    #[command(after_help = ENVIRONMENT)]
    Receipt {
        #[command(flatten)]
        policy: PolicyArgs,
        /// Print the receipt as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List or remove the cache layers: what sandboxes wrote to overlaid
    /// caches, kept per workspace.
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// The layers `run --review` kept: list them, show one as a diff, apply
    /// it to the workspace or discard it.
    Review {
        #[command(subcommand)]
        action: ReviewAction,
    },
    /// Take bubblewrap's command line (as when installed under the name
    /// bwrap).
    #[command(disable_help_flag = true)]
    Bwrap {
        /// bubblewrap's options and the command.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<OsString>,
    },
}

/// What the sandbox is: the options run, plan, inspect, verify and receipt
/// share.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct PolicyArgs {
    /// The writable workspace (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Another writable root (repeatable); refused inside $HOME unless a
    /// built-in root covers it.
    #[arg(long, alias = "bind", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// A path inside a writable root made read-only again (repeatable).
    #[arg(long, value_name = "PATH")]
    pub ro: Vec<PathBuf>,
    /// A named set of extra roots (repeatable): e.g. qwen.
    #[arg(long, value_name = "NAME")]
    pub profile: Vec<String>,
    /// open: the host's network; closed: a private network with only lo;
    /// proxied: only lo and a proxy to the --allow-domain destinations
    /// [default: open].
    #[arg(long, value_name = "MODE", value_parser = choices(crate::qwrap::policy::NetworkMode::NAMES))]
    pub network: Option<String>,
    /// shared: the host's PID namespace; private: a new one with its own
    /// /proc (host processes invisible; nested sandboxes such as bwrap,
    /// Chromium's and qwrap work inside) [default: shared].
    #[arg(long, value_name = "MODE", value_parser = choices(crate::qwrap::policy::PidMode::NAMES))]
    pub pid: Option<String>,
    /// private: a fresh tmpfs on /tmp; host: the host's $TMPDIR is writable
    /// [default: private].
    #[arg(long, value_name = "MODE", value_parser = choices(crate::qwrap::policy::TmpMode::NAMES))]
    pub tmp: Option<String>,
    /// The size of the private /tmp and /dev/shm, each: a size (512M, 4G)
    /// or a share of the host's memory [default: 20%].
    #[arg(long, value_name = "SIZE")]
    pub tmpfs_size: Option<String>,
    /// The memory of the command's whole tree, swap included: a size
    /// (512M, 4G) or a share of the host's memory; at the limit every
    /// process is killed together (exit 137). A cgroup: refused (exit 125)
    /// where none can be made [default: none].
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// The tasks (processes and threads) the command's tree may hold at
    /// once; past it fork fails with EAGAIN. A cgroup: refused where none
    /// can be made [default: none].
    #[arg(long, value_name = "N")]
    pub max_processes: Option<String>,
    /// The CPU time of the command's tree, in CPUs (1, 0.5, 2.5). A cgroup:
    /// refused where none can be made [default: none].
    #[arg(long, value_name = "N")]
    pub cpus: Option<String>,
    /// The sandbox's wall-clock time (90s, 10m, 2h): then every process of
    /// it gets SIGTERM, and SIGKILL 2 s later [default: none].
    #[arg(long, value_name = "DURATION")]
    pub time_limit: Option<String>,
    /// require: fail unless every Landlock layer applies; best-effort: apply
    /// what the kernel offers; off [default: best-effort].
    #[arg(long, value_name = "MODE", value_parser = choices(crate::qwrap::policy::LandlockMode::NAMES))]
    pub landlock: Option<String>,
    /// Leave git hooks, config and pointer files in writable roots writable.
    #[arg(long)]
    pub allow_git_config: bool,
    /// Keep every change to the workspace, its git dir included, in a layer
    /// of its own (an overlay whose upper layer lies in qwrap's state
    /// directory) until `qwrap review apply`; the host's workspace stays as
    /// it was.
    #[arg(long)]
    pub review: bool,
    /// Leave the agent and editor files at the workspace's top writable
    /// (.vscode/, .idea/, .envrc, .mcp.json, .claude/settings*.json, …:
    /// read-only by default where they exist at the start).
    #[arg(long)]
    pub allow_agent_files: bool,
    /// Leave this host Unix socket reachable (repeatable), wherever it lies
    /// (under the private /tmp it is shown at its own path).
    #[arg(long, value_name = "PATH")]
    pub allow_socket: Vec<PathBuf>,
    /// Pass the user's ssh agent: `--allow-socket "$SSH_AUTH_SOCK"`, and
    /// SSH_AUTH_SOCK kept.
    #[arg(long)]
    pub ssh_agent: bool,
    /// Make this path unreadable inside, besides the default hidden set of
    /// credential stores (repeatable).
    #[arg(long, value_name = "PATH")]
    pub hide: Vec<PathBuf>,
    /// Take this path out of the default hidden set (repeatable).
    #[arg(long, value_name = "PATH")]
    pub show: Vec<PathBuf>,
    /// host: the whole host read-only; minimal: only system directories,
    /// the writable roots and exposed paths exist [default: host].
    #[arg(long, value_name = "VIEW", value_parser = choices(crate::qwrap::policy::ViewMode::NAMES))]
    pub view: Option<String>,
    /// overlay: caches outside the workspace are overlaid, writes stay in
    /// the workspace's own layer; private: a fresh tmpfs per run; shared:
    /// written through to the host [default: overlay].
    #[arg(long, value_name = "MODE", value_parser = choices(crate::qwrap::policy::CacheMode::NAMES))]
    pub cache: Option<String>,
    /// listed: only the home's entries that tools need and that hold no
    /// credentials (see qwrap(1)), the redacted start-up files and the
    /// writable roots; everything else in it is absent; readonly: the
    /// whole home, the host's, read-only (its hidden set unreadable);
    /// overlay: an overlay of the whole home whose writes stay in the
    /// workspace's layer (tools' state under ~/.config, ~/.local; never
    /// the host's) [default: listed].
    #[arg(long, value_name = "MODE", value_parser = choices(crate::qwrap::policy::HomeMode::NAMES))]
    pub home: Option<String>,
    /// namespaces: user, mount, IPC and network namespaces with Landlock
    /// and seccomp; landlock: Landlock and seccomp only, where namespaces
    /// are refused (containers; see qwrap(1) for what it gives up); auto:
    /// namespaces where they work, else landlock [default: namespaces].
    #[arg(long, value_name = "MODE", value_parser = choices(crate::qwrap::policy::IsolationMode::NAMES))]
    pub isolation: Option<String>,
    /// Do not apply the toolchain profiles (rust, node, python, go) that
    /// the workspace's files call for.
    #[arg(long)]
    pub no_detect: bool,
    /// With --network proxied, a destination the proxy connects to:
    /// `example.com`, `*.example.com`, `1.2.3.4`, each with an optional
    /// `:PORT` (repeatable).
    #[arg(long, value_name = "DOMAIN")]
    pub allow_domain: Vec<String>,
    /// With --network proxied, append one JSON line per connection to FILE
    /// (time, destination, verdict, bytes).
    #[arg(long, value_name = "FILE")]
    pub egress_log: Option<PathBuf>,
    /// Use the host's SysV IPC (shared memory, queues, semaphores) instead
    /// of a private IPC namespace.
    #[arg(long)]
    pub share_ipc: bool,
    /// Let the command reach the caller's keyrings (keyctl, add_key and
    /// request_key allowed) instead of refusing every keyring call.
    #[arg(long)]
    pub share_keyring: bool,
    /// Give the command the caller's terminal itself instead of a pty of
    /// qwrap's own: the command can then signal the caller's other jobs
    /// through it and leave it changed (exclusive, another line discipline).
    #[arg(long)]
    pub share_terminal: bool,
    /// In the minimal view, show this host path read-only (repeatable).
    #[arg(long, value_name = "PATH")]
    pub expose: Vec<PathBuf>,
    /// Accept the failure of this verify check (e.g. abstract-socket on a
    /// kernel without Landlock scopes): recorded on the receipt, it no
    /// longer holds the rollout (repeatable).
    #[arg(long, value_name = "CHECK")]
    pub accept_degraded: Vec<String>,
    /// Keep this secret-looking variable (e.g. OPENAI_API_KEY; `*` for all)
    /// in the command's environment (repeatable).
    #[arg(long, value_name = "NAME")]
    pub keep_env: Vec<String>,
}

/// How the command runs: only where a command runs (run, plan).
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct ExecArgs {
    /// Detach CMD from the controlling terminal.
    #[arg(long)]
    pub new_session: bool,
    /// Let CMD outlive the process that started qwrap.
    #[arg(long)]
    pub no_die_with_parent: bool,
    /// Leave the processes CMD leaves behind running when it exits (by
    /// default every process left in the sandbox is killed). qwrap says
    /// nothing once CMD exits; repositories made inside are held aside
    /// when the last of them ends.
    #[arg(long)]
    pub keep_background: bool,
    /// Set an environment variable inside (repeatable).
    #[arg(long, num_args = 2, value_names = ["KEY", "VALUE"])]
    pub setenv: Vec<OsString>,
    /// Remove an environment variable inside (repeatable).
    #[arg(long, value_name = "KEY")]
    pub unsetenv: Vec<OsString>,
    /// No line on stderr when a layer is degraded.
    #[arg(long)]
    pub quiet: bool,
    /// At exit, say on stderr each distinct refusal (a write outside the
    /// roots, a hidden or absent path, a masked socket, a call the filter
    /// refuses, an egress refusal, a resource limit reached) and the option
    /// that would allow it.
    #[arg(long)]
    pub explain: bool,
    /// Write one JSON object per refusal to FILE (time, pid, command,
    /// operation, path or target, errno, reason, option); with --explain
    /// or alone.
    #[arg(long, value_name = "FILE")]
    pub denials: Option<PathBuf>,
    /// Pass inherited descriptor N (3 and up) to CMD whatever it is
    /// (repeatable); by default only pipes and connected sockets pass.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(3..))]
    pub keep_fd: Vec<i32>,
}

#[derive(Subcommand)]
pub enum CacheAction {
    /// Each workspace's layers, their size and whether a sandbox uses them.
    List,
    /// Remove the layers of the workspace (the current directory, or
    /// --workspace), or of every workspace with --all; layers a running
    /// sandbox uses are kept.
    Clean {
        #[arg(long, value_name = "DIR", conflicts_with = "all")]
        workspace: Option<PathBuf>,
        #[arg(long)]
        all: bool,
    },
}

#[derive(Subcommand)]
pub enum ReviewAction {
    /// The pending layers of every workspace: id, start, command, changes,
    /// and whether a sandbox still runs in it.
    List,
    /// A layer's changes: a unified diff for text, a summary for binaries,
    /// deletions, mode changes, symlinks, new commits and moved refs; the
    /// files that choose code a host tool runs later named first.
    Diff {
        /// The layer (default: the workspace's only pending one).
        id: Option<String>,
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Only the summary, no diff.
        #[arg(long)]
        stat: bool,
    },
    /// Apply a layer's changes to the workspace, never following a link the
    /// command made, refusing (and naming) a file the host changed since
    /// the run started; the layer is removed once applied.
    Apply {
        id: Option<String>,
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Apply without asking, where files that choose code a host tool
        /// runs later changed (without it apply asks on the terminal, and
        /// refuses when stdin is not one).
        #[arg(long)]
        yes: bool,
    },
    /// Remove a layer, its changes unapplied.
    Discard {
        id: Option<String>,
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
}

#[derive(Args, Debug, PartialEq)]
pub struct SandboxArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// `qwrap __probe`, the in-sandbox probe verify re-executes: parsed before
/// the public command line, so that no help, man page or completion shows
/// it. The probe's arguments (one definition, shared with the library) and
/// its one-shot attempts.
#[derive(clap::Parser)]
#[command(name = "qwrap __probe")]
pub struct ProbeCli {
    #[arg(long)]
    pub noop: bool,
    #[command(flatten)]
    pub args: crate::qwrap::verify::probe::ProbeArgs,
    #[arg(long)]
    pub nested_remount: bool,
    #[arg(long)]
    pub tiocsti: bool,
    #[arg(long)]
    pub terminal_route: bool,
    /// The caller's terminal only as the controlling one: `qwrap run` with
    /// these options (`--` ends them) whose command opens /dev/tty.
    #[arg(long, num_args = 0.., allow_hyphen_values = true)]
    pub controlling_terminal_route: Option<Vec<String>>,
    /// Inside: open /dev/tty and change it (exclusive mode, a window size).
    #[arg(long)]
    pub open_tty: bool,
}

/// clap's parser for `run` alone.
pub fn run_command() -> clap::Command {
    use clap::Args as _;
    SandboxArgs::augment_args(clap::Command::new("run").bin_name("qwrap run"))
        .about(RUN_ABOUT)
        .after_help(ENVIRONMENT)
}
