//! The command line: parse, dispatch, print.

use clap::{Args, Parser, Subcommand};
use qwrap::exec::{self, EXIT_SETUP};
use qwrap::policy::{self, Caller, NetworkMode, Request, TmpMode};
use qwrap::{host, plan};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status for usage errors (as clap uses).
const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "qwrap",
    version,
    about = "Run a command behind a read-only view of the host"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run CMD in a sandbox: the host read-only, the workspace writable.
    Run(SandboxArgs),
    /// Print the setup steps `run` would execute, one syscall per line.
    Plan {
        #[command(flatten)]
        sandbox: SandboxArgs,
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct SandboxArgs {
    /// The writable workspace (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Another writable root (repeatable).
    #[arg(long, value_name = "DIR")]
    bind: Vec<PathBuf>,
    /// A path inside a writable root made read-only again (repeatable).
    #[arg(long, value_name = "PATH")]
    ro: Vec<PathBuf>,
    /// open: the host's network; closed: a private network with only lo
    /// [default: open, or $QWRAP_NETWORK].
    #[arg(long, value_name = "MODE")]
    network: Option<String>,
    /// private: a fresh tmpfs on /tmp; host: the host's $TMPDIR is writable
    /// [default: private, or $QWRAP_TMP].
    #[arg(long, value_name = "MODE")]
    tmp: Option<String>,
    /// Let CMD outlive the process that started qwrap.
    #[arg(long)]
    no_die_with_parent: bool,
    /// Set an environment variable inside (repeatable).
    #[arg(long, num_args = 2, value_names = ["KEY", "VALUE"])]
    setenv: Vec<OsString>,
    /// Remove an environment variable inside (repeatable).
    #[arg(long, value_name = "KEY")]
    unsetenv: Vec<OsString>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

/// A failure before any setup step: the message and the exit status.
struct Fatal(String, u8);

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(code) => code,
        Err(Fatal(msg, code)) => {
            eprintln!("qwrap: {msg}");
            ExitCode::from(code)
        }
    }
}

fn dispatch(cli: Cli) -> Result<ExitCode, Fatal> {
    match cli.command {
        Command::Run(args) => {
            let plan = make_plan(&args)?;
            let trace = std::env::var_os("QWRAP_TRACE").is_some_and(|v| v == "1");
            let err = exec::execute(&plan, exec::Options { trace });
            eprintln!("{err}");
            Ok(ExitCode::from(err.exit_code() as u8))
        }
        Command::Plan { sandbox, json } => {
            let plan = make_plan(&sandbox)?;
            if json {
                println!("{}", plan_json(&plan));
            } else {
                print!("{plan}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn make_plan(args: &SandboxArgs) -> Result<plan::Plan, Fatal> {
    let request = request(args)?;
    let caller = Caller::from_process().map_err(|e| {
        Fatal(
            format!("cannot read the current directory: {e}"),
            EXIT_SETUP as u8,
        )
    })?;
    let policy = policy::resolve(&request, &caller).map_err(|e| Fatal(e.to_string(), EXIT_SETUP as u8))?;
    let facts = host::probe().map_err(|e| Fatal(e, EXIT_USAGE))?;
    Ok(plan::build(&policy, &facts))
}

/// A setting from the command line, else from the environment; an invalid
/// value is an error naming where it came from.
fn setting<T: std::str::FromStr<Err = String>>(
    cli: Option<&str>,
    flag: &str,
    env: &str,
    default: T,
) -> Result<T, Fatal> {
    let (value, source) = match cli {
        Some(v) => (v.to_string(), flag.to_string()),
        None => match std::env::var(env) {
            Ok(v) if !v.is_empty() => (v, format!("${env}")),
            _ => return Ok(default),
        },
    };
    value
        .parse()
        .map_err(|e| Fatal(format!("{source}: {e}"), EXIT_USAGE))
}

fn request(a: &SandboxArgs) -> Result<Request, Fatal> {
    Ok(Request {
        workspace: a.workspace.clone(),
        binds: a.bind.clone(),
        read_only: a.ro.clone(),
        network: setting(
            a.network.as_deref(),
            "--network",
            "QWRAP_NETWORK",
            NetworkMode::Open,
        )?,
        tmp: setting(a.tmp.as_deref(), "--tmp", "QWRAP_TMP", TmpMode::Private)?,
        die_with_parent: !a.no_die_with_parent,
        setenv: a
            .setenv
            .chunks_exact(2)
            .map(|kv| (kv[0].clone(), kv[1].clone()))
            .collect(),
        unsetenv: a.unsetenv.clone(),
        command: a.command.clone(),
    })
}

fn plan_json(plan: &plan::Plan) -> String {
    let steps: Vec<serde_json::Value> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            serde_json::json!({
                "index": i,
                "purpose": s.purpose(),
                "call": s.to_string(),
                "step": s,
            })
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "qwrap_version": qwrap::VERSION,
        "mount_api": plan.mount_api,
        "steps": steps,
    }))
    .expect("plan serialises")
}
