// qwrap's command line as clap definitions, and nothing else: main.rs parses
// with it, and build.rs includes this file with `#[path]` to generate the man
// pages and shell completions, so it may use only clap and std.

use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

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
/// share (the settings declared once, src/policy/settings_list.rs).
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct PolicyArgs {
    /// The writable workspace (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    #[command(flatten)]
    pub settings: crate::qwrap::policy::CliSettings,
    /// Pass the user's ssh agent: `--allow-socket "$SSH_AUTH_SOCK"`, and
    /// SSH_AUTH_SOCK kept.
    #[arg(long)]
    pub ssh_agent: bool,
}

/// How the command runs: only where a command runs (run, plan).
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct ExecArgs {
    #[command(flatten)]
    pub switches: crate::qwrap::policy::RunSwitches,
    /// Set an environment variable inside (repeatable).
    #[arg(long, num_args = 2, value_names = ["KEY", "VALUE"])]
    pub setenv: Vec<OsString>,
    /// Remove an environment variable inside (repeatable).
    #[arg(long, value_name = "KEY")]
    pub unsetenv: Vec<OsString>,
    /// No line on stderr when a layer is degraded.
    #[arg(long)]
    pub quiet: bool,
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
