//! The command line: parse, dispatch, print.

// The C `main` below replaces std's runtime start-up, which every tool call
// would pay for (see `qwrap::sys::init_process`).
#![cfg_attr(not(test), no_main)]
#![deny(unsafe_code)]

// `crate::qwrap` for src/cli.rs, which the build script compiles too, with
// a stand-in module of that name.
use ::qwrap;

mod cli;
mod run_args;

use clap::Parser;
use cli::{Cli, Command, ExecArgs, PolicyArgs, ProbeCli, SandboxArgs, run_command};
use qwrap::commands::{self, EXIT_USAGE, Fatal};
use qwrap::exec;
use qwrap::policy::{CliSettings, Invocation};
use qwrap::verify;
use std::ffi::OsString;

/// Writes a report to stdout. A reader that went away (`qwrap plan | head`)
/// is not an error worth a panic.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// The process entry point. std's `args_os` still works: glibc hands argv to
/// std's initialiser before this runs. `exit` flushes stdout.
#[cfg_attr(not(test), unsafe(no_mangle))]
#[allow(unsafe_code)]
extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    let started = std::time::Instant::now();
    qwrap::sys::init_process();
    // `run` as PID 1 of its namespace: the kernel drops a signal that has
    // no handler, and the plan's StayInit comes after the policy's walks;
    // one sent meanwhile is held and passed on.
    if std::process::id() == 1 && std::env::args_os().nth(1).is_some_and(|a| a == "run") {
        let _ = qwrap::sys::hold_signals();
    }
    std::process::exit(i32::from(qwrap_main(started)))
}

/// The exit status of one qwrap invocation.
type ExitCode = u8;

fn qwrap_main(started: std::time::Instant) -> ExitCode {
    if let Some(args) = bwrap_args() {
        return qwrap::bwrap::main(args).clamp(0, 255) as u8;
    }
    // The internal probe, before the public command line.
    if std::env::args_os().nth(1).is_some_and(|a| a == "__probe") {
        use clap::Parser;
        let args = std::env::args_os().skip(1);
        return probe_cmd(ProbeCli::parse_from(args));
    }
    let cli = parse_cli();
    match dispatch(cli, started) {
        Ok(code) => code,
        Err(Fatal { message: msg, code }) => {
            eprintln!("qwrap: {msg}");
            code
        }
    }
}

/// bubblewrap's arguments, when qwrap runs under any name but its own
/// (`bwrap`, `bwrap.real`, `flatpak-bwrap`, or `/proc/self/exe` from a
/// program that re-executes itself inside the sandbox, as bubblewrap's own
/// tests do), or as `qwrap bwrap ARGS…`. Our own re-execution for the
/// verify probe keeps the native command line.
fn bwrap_args() -> Option<Vec<OsString>> {
    let mut argv = std::env::args_os();
    let name = argv.next()?;
    let ours = qwrap::bwrap::is_qwrap_name(&name);
    let rest: Vec<OsString> = argv.collect();
    match rest.first() {
        Some(sub) if sub == qwrap::verify::PROBE_COMMAND => None,
        _ if !ours => Some(rest),
        Some(sub) if sub == "bwrap" => Some(rest[1..].to_vec()),
        _ => None,
    }
}

/// Parses the command line. `run` is on every tool call's path, so it builds
/// only its own parser, not the whole command tree (a third of start-up).
fn parse_cli() -> Cli {
    use clap::FromArgMatches;
    let mut argv = std::env::args_os();
    let (Some(_), Some(sub)) = (argv.next(), argv.next()) else {
        return Cli::try_parse().unwrap_or_else(|e| exit_with_tip(e, None));
    };
    if sub != "run" {
        return Cli::try_parse().unwrap_or_else(|e| exit_with_tip(e, sub.to_str()));
    }
    let rest: Vec<OsString> = argv.collect();
    if let Some(args) = run_args::parse_run_fast(rest.iter().cloned()) {
        return Cli {
            command: Command::Run(args),
        };
    }
    let parsed = run_command()
        .try_get_matches_from(std::iter::once(OsString::from("qwrap run")).chain(rest))
        .and_then(|m| SandboxArgs::from_arg_matches(&m));
    match parsed {
        Ok(args) => Cli {
            command: Command::Run(args),
        },
        Err(e) => exit_with_tip(e, Some("run")),
    }
}

/// clap's error, and for a command word where an option was expected
/// (`qwrap run true`), the tip that the command goes after `--`.
fn exit_with_tip(e: clap::Error, sub: Option<&str>) -> ! {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let takes_cmd = matches!(sub, Some("run" | "plan"));
    if takes_cmd
        && e.kind() == ErrorKind::UnknownArgument
        && let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg)
        && !arg.starts_with('-')
    {
        let sub = sub.unwrap_or("run");
        eprint!("{}", e.render());
        eprintln!("\ntip: the command goes after `--`: qwrap {sub} [OPTIONS] -- {arg} …");
        std::process::exit(i32::from(EXIT_USAGE));
    }
    // A mistyped command word: the nearest one, as git says it.
    if e.kind() == ErrorKind::InvalidSubcommand
        && let Some(word) = sub
        && let Some(near) = nearest_command(word)
    {
        eprint!("{}", e.render());
        eprintln!("\ntip: did you mean `qwrap {near}`?");
        std::process::exit(i32::from(EXIT_USAGE));
    }
    e.exit()
}

/// The public command nearest `word` (at most two edits away).
fn nearest_command(word: &str) -> Option<String> {
    use clap::CommandFactory;
    let distance = |a: &str, b: &str| {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.iter().enumerate() {
            let mut cur = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                let sub = prev[j] + usize::from(ca != cb);
                cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
            }
            prev = cur;
        }
        prev[b.len()]
    };
    Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .map(|n| (distance(word, &n), n))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

fn dispatch(cli: Cli, started: std::time::Instant) -> Result<ExitCode, Fatal> {
    match cli.command {
        Command::Run(args) => {
            let loaded = commands::load_for_run(&invocation(&args.policy, &args.exec, args.command))?;
            for n in &loaded.notes {
                eprintln!("qwrap: note: {n}");
            }
            let quiet = args.exec.quiet;
            if !quiet {
                for d in loaded.layers.degraded() {
                    eprintln!("qwrap: degraded: {d}");
                }
                if loaded
                    .layers
                    .masked_variables
                    .iter()
                    .any(|v| v == "SSH_AUTH_SOCK")
                {
                    eprintln!(
                        "qwrap: note: SSH_AUTH_SOCK is unset inside (the agent's socket is masked): --ssh-agent passes it"
                    );
                }
            }
            let trace = std::env::var("QWRAP_TRACE").unwrap_or_default();
            let opts = exec::Options {
                trace: trace == "1",
                timing: trace == "time",
            };
            if opts.timing {
                eprintln!(
                    "qwrap: time: prepare (settings, policy, host probe, plan) {:>8.1} µs",
                    started.elapsed().as_secs_f64() * 1e6
                );
            }
            let err = commands::execute(loaded, opts, quiet)?;
            eprintln!("{err}");
            Ok(err.exit_code() as u8)
        }
        Command::Plan { sandbox, json } => {
            let plan = commands::load(&invocation(&sandbox.policy, &sandbox.exec, sandbox.command))?.plan;
            if json {
                outln!("{}", plan.to_json());
            } else if rustix::termios::isatty(rustix::stdio::stdout()) {
                // For a person: long steps wrapped at their calls. For a
                // pipe: one step a line, to grep.
                out!("{}", plan.wrapped(100));
            } else {
                out!("{plan}");
            }
            Ok(0)
        }
        Command::Inspect { policy, json, verify } if verify => {
            report(commands::verify(subject(&policy), json)?)
        }
        Command::Inspect { policy, json, .. } => report(commands::inspect(subject(&policy), json)?),
        Command::Verify { policy, json } => report(commands::verify(subject(&policy), json)?),
        Command::Receipt { policy, json } => report(commands::receipt(subject(&policy), json)?),
        Command::Cache { action } => report(commands::cache(match action {
            cli::CacheAction::List => qwrap::cache_layers::Request::List,
            cli::CacheAction::Clean { workspace, all } => {
                qwrap::cache_layers::Request::Clean { workspace, all }
            }
        })?),
        Command::Review { action } => {
            let (request, workspace) = match action {
                cli::ReviewAction::List => (qwrap::review::Request::List, None),
                cli::ReviewAction::Diff { id, workspace, stat } => {
                    (qwrap::review::Request::Diff { id, stat }, workspace)
                }
                cli::ReviewAction::Apply { id, workspace, yes } => {
                    (qwrap::review::Request::Apply { id, yes }, workspace)
                }
                cli::ReviewAction::Discard { id, workspace } => {
                    (qwrap::review::Request::Discard { id }, workspace)
                }
            };
            report(commands::review(request, workspace, &mut ask)?)
        }
        // `qwrap bwrap …` is taken before clap parses (see bwrap_args).
        Command::Bwrap { args } => Ok(qwrap::bwrap::main(args).clamp(0, 255) as u8),
    }
}

fn invocation(a: &PolicyArgs, x: &ExecArgs, command: Vec<OsString>) -> Invocation {
    let mut cli = CliSettings {
        run: x.switches.clone(),
        ..a.settings.clone()
    };
    cli.allow_socket.extend(ssh_agent(a.ssh_agent));
    Invocation {
        cli,
        workspace: a.workspace.clone(),
        setenv: x
            .setenv
            .chunks_exact(2)
            .map(|kv| (kv[0].clone(), kv[1].clone()))
            .collect(),
        unsetenv: x.unsetenv.clone(),
        keep_fds: x.keep_fd.clone(),
        command,
        quiet: x.quiet,
        denials: x.denials.clone(),
    }
}

/// The policy options of inspect, verify and receipt (the command is the
/// probe, chosen by `commands`).
fn subject(a: &PolicyArgs) -> Invocation {
    invocation(a, &ExecArgs::default(), Vec::new())
}

/// Prints a report command's output and returns its status.
fn report(o: commands::Output) -> Result<ExitCode, Fatal> {
    out!("{}", o.stdout);
    for line in o.stderr {
        eprintln!("{line}");
    }
    Ok(o.code)
}

fn probe_cmd(p: ProbeCli) -> ExitCode {
    if p.noop {
        outln!("[]");
        return 0;
    }
    if p.tiocsti {
        outln!("{}", verify::probe::tiocsti_attempt());
        return 0;
    }
    if p.terminal_route {
        outln!("{}", verify::terminal_check::attempt());
        return 0;
    }
    if let Some(opts) = &p.controlling_terminal_route {
        outln!("{}", verify::terminal_check::controlling_attempt(opts));
        return 0;
    }
    if p.open_tty {
        verify::terminal_check::open_tty();
        return 0;
    }
    if p.nested_remount {
        outln!("{}", verify::probe::nested_remount_attempt());
        return 0;
    }
    let checks = verify::probe::run(&p.args);
    outln!("{}", serde_json::to_string(&checks).expect("checks serialise"));
    0
}

/// `--ssh-agent`: the agent's socket, from SSH_AUTH_SOCK (a note when
/// there is none to pass).
fn ssh_agent(asked: bool) -> Option<std::path::PathBuf> {
    if !asked {
        return None;
    }
    let sock = std::env::var_os("SSH_AUTH_SOCK").filter(|s| !s.is_empty());
    if sock.is_none() {
        eprintln!("qwrap: note: --ssh-agent: SSH_AUTH_SOCK is not set, so there is no agent to pass");
    }
    sock.map(std::path::PathBuf::from)
}

/// Asks the person at the terminal (stdin) to go on, after `text`; no
/// where stdin is not a terminal.
fn ask(text: &str) -> bool {
    eprint!("{text}");
    if !rustix::termios::isatty(rustix::stdio::stdin()) {
        eprintln!(
            "qwrap: review: stdin is not a terminal, so nobody can be asked: --yes applies without asking"
        );
        return false;
    }
    eprint!("Apply them? [y/N] ");
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim(), "y" | "Y" | "yes" | "YES" | "Yes")
}
