//! The command line: parse, dispatch, print.

// The C `main` below replaces std's runtime start-up, which every tool call
// would pay for (see `qwrap::sys::init_process`).
#![cfg_attr(not(test), no_main)]

use clap::{Args, Parser, Subcommand};
use qwrap::exec::{self, EXIT_SETUP};
use qwrap::host::{self, HostFacts};
use qwrap::plan;
use qwrap::policy::{self, Caller, CliSettings, Invocation, LoadError, Policy};
use qwrap::report::{self, Enforcement, Inspect};
use qwrap::verify::{self, probe::ProbeArgs};
use std::ffi::OsString;
use std::path::PathBuf;

const RUN_ABOUT: &str = "Run CMD in a sandbox: the host read-only, the writable roots writable";

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
    #[command(about = RUN_ABOUT)]
    Run(SandboxArgs),
    /// Print the setup steps `run` would execute, one syscall per line.
    Plan {
        #[command(flatten)]
        sandbox: SandboxArgs,
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Report the sandbox's boundary; Enforcement is full only when a probe
    /// sandbox with this exact policy started.
    #[command(alias = "sandbox")]
    Inspect {
        #[command(flatten)]
        policy: PolicyArgs,
        #[arg(long)]
        json: bool,
        /// Run the verify battery instead (as `qwrap verify`).
        #[arg(long)]
        verify: bool,
    },
    /// Prove the boundary from inside a real sandbox with this policy.
    Verify {
        #[command(flatten)]
        policy: PolicyArgs,
        #[arg(long)]
        json: bool,
    },
    /// Print the filled-in rollout receipt (runs inspect and verify).
    Receipt {
        #[command(flatten)]
        policy: PolicyArgs,
        #[arg(long)]
        json: bool,
    },
    /// The in-sandbox probe that verify re-executes (internal).
    #[command(name = "__probe", hide = true)]
    Probe(ProbeCli),
}

#[derive(Args, Clone, Debug, Default, PartialEq)]
struct PolicyArgs {
    /// The writable workspace (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Another writable root (repeatable); refused inside $HOME unless a
    /// built-in root covers it.
    #[arg(long, alias = "bind", value_name = "DIR")]
    include: Vec<PathBuf>,
    /// A path inside a writable root made read-only again (repeatable).
    #[arg(long, value_name = "PATH")]
    ro: Vec<PathBuf>,
    /// A named set of extra roots (repeatable): e.g. qwen.
    #[arg(long, value_name = "NAME")]
    profile: Vec<String>,
    /// open: the host's network; closed: a private network with only lo
    /// [default: open].
    #[arg(long, value_name = "MODE")]
    network: Option<String>,
    /// private: a fresh tmpfs on /tmp; host: the host's $TMPDIR is writable
    /// [default: private].
    #[arg(long, value_name = "MODE")]
    tmp: Option<String>,
    /// require: fail unless every Landlock layer applies; best-effort: apply
    /// what the kernel offers; off [default: best-effort].
    #[arg(long, value_name = "MODE")]
    landlock: Option<String>,
    /// Leave git hooks and config in writable roots writable.
    #[arg(long)]
    allow_git_config: bool,
    /// Leave this host Unix socket reachable (repeatable).
    #[arg(long, value_name = "PATH")]
    allow_socket: Vec<PathBuf>,
    /// Detach CMD from the controlling terminal.
    #[arg(long)]
    new_session: bool,
    /// Let CMD outlive the process that started qwrap.
    #[arg(long)]
    no_die_with_parent: bool,
    /// Set an environment variable inside (repeatable).
    #[arg(long, num_args = 2, value_names = ["KEY", "VALUE"])]
    setenv: Vec<OsString>,
    /// Remove an environment variable inside (repeatable).
    #[arg(long, value_name = "KEY")]
    unsetenv: Vec<OsString>,
    /// Pass inherited descriptor N (3 and up) to CMD whatever it is
    /// (repeatable); by default only pipes and connected sockets pass.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(3..))]
    keep_fd: Vec<i32>,
}

#[derive(Args, Debug, PartialEq)]
struct SandboxArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

#[derive(Args)]
struct ProbeCli {
    #[arg(long)]
    noop: bool,
    #[arg(long)]
    workspace: Option<PathBuf>,
    #[arg(long)]
    outside: Option<PathBuf>,
    #[arg(long)]
    home: Option<PathBuf>,
    #[arg(long, default_value = "")]
    host_pidns: String,
    #[arg(long)]
    closed_network: bool,
    #[arg(long)]
    host_has_nonlo: bool,
    #[arg(long)]
    host_pid: Option<u32>,
    #[arg(long = "abstract")]
    abstract_name: Option<String>,
    #[arg(long)]
    masked_socket: Option<PathBuf>,
    #[arg(long)]
    protected: Vec<PathBuf>,
    #[arg(long = "git-dir")]
    git_dirs: Vec<PathBuf>,
    #[arg(long)]
    scoped: bool,
    #[arg(long)]
    nested_remount: bool,
    #[arg(long)]
    tiocsti: bool,
}

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

/// A failure before any setup step: the message and the exit status.
struct Fatal(String, u8);

/// The process entry point. std's `args_os` still works: glibc hands argv to
/// std's initialiser before this runs. `exit` flushes stdout.
#[cfg_attr(not(test), unsafe(no_mangle))]
extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    let started = std::time::Instant::now();
    qwrap::sys::init_process();
    std::process::exit(i32::from(qwrap_main(started)))
}

/// The exit status of one qwrap invocation.
type ExitCode = u8;

fn qwrap_main(started: std::time::Instant) -> ExitCode {
    if let Some(args) = bwrap_args() {
        return qwrap::bwrap::main(args).clamp(0, 255) as u8;
    }
    let cli = parse_cli();
    match dispatch(cli, started) {
        Ok(code) => code,
        Err(Fatal(msg, code)) => {
            eprintln!("qwrap: {msg}");
            code
        }
    }
}

/// bubblewrap's arguments, when qwrap runs as `bwrap` (a link of that name)
/// or as `qwrap bwrap ARGS…`.
fn bwrap_args() -> Option<Vec<OsString>> {
    let mut argv = std::env::args_os();
    let name = argv.next()?;
    if std::path::Path::new(&name)
        .file_name()
        .is_some_and(|n| n == "bwrap")
    {
        return Some(argv.collect());
    }
    match argv.next() {
        Some(sub) if sub == "bwrap" => Some(argv.collect()),
        _ => None,
    }
}

/// Parses the command line. `run` is on every tool call's path, so it builds
/// only its own parser, not the whole command tree (a third of start-up).
fn parse_cli() -> Cli {
    use clap::FromArgMatches;
    let mut argv = std::env::args_os();
    let (Some(_), Some(sub)) = (argv.next(), argv.next()) else {
        return Cli::parse();
    };
    if sub != "run" {
        return Cli::parse();
    }
    let rest: Vec<OsString> = argv.collect();
    if let Some(args) = parse_run_fast(rest.iter().cloned()) {
        return Cli {
            command: Command::Run(args),
        };
    }
    let matches = run_command().get_matches_from(std::iter::once(OsString::from("qwrap run")).chain(rest));
    match SandboxArgs::from_arg_matches(&matches) {
        Ok(args) => Cli {
            command: Command::Run(args),
        },
        Err(e) => e.exit(),
    }
}

/// clap's parser for `run` alone.
fn run_command() -> clap::Command {
    SandboxArgs::augment_args(clap::Command::new("run").bin_name("qwrap run")).about(RUN_ABOUT)
}

/// `run`'s arguments in the plain shapes tools write (`--opt VALUE`,
/// `--opt=VALUE`, flags, `--`, CMD), without building a clap parser (~45 µs
/// of every tool call). Anything else (help, a repeated single-valued
/// option, a value that is empty, not UTF-8 or looks like an option, an
/// unknown option, no CMD) returns None, and clap parses it: its errors and
/// help stay the only ones. Unit tests hold the two parsers equal.
fn parse_run_fast(mut argv: impl Iterator<Item = OsString>) -> Option<SandboxArgs> {
    let mut p = PolicyArgs::default();
    loop {
        let arg = argv.next()?;
        if arg == "--" {
            break;
        }
        let arg = arg.into_string().ok()?;
        let (name, mut inline) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(OsString::from(v))),
            None => (arg.as_str(), None),
        };
        let flag = inline.is_none();
        let mut value = || plain_value(inline.take(), &mut argv);
        let text = |v: OsString| v.into_string().ok();
        match name {
            "--workspace" if p.workspace.is_none() => p.workspace = Some(value()?.into()),
            "--include" | "--bind" => p.include.push(value()?.into()),
            "--ro" => p.ro.push(value()?.into()),
            "--profile" => p.profile.push(text(value()?)?),
            "--network" if p.network.is_none() => p.network = Some(text(value()?)?),
            "--tmp" if p.tmp.is_none() => p.tmp = Some(text(value()?)?),
            "--landlock" if p.landlock.is_none() => p.landlock = Some(text(value()?)?),
            "--allow-socket" => p.allow_socket.push(value()?.into()),
            "--unsetenv" => p.unsetenv.push(value()?),
            "--setenv" if flag => {
                let (k, v) = (value()?, value()?);
                p.setenv.extend([k, v]);
            }
            "--allow-git-config" if flag && !p.allow_git_config => p.allow_git_config = true,
            "--new-session" if flag && !p.new_session => p.new_session = true,
            "--no-die-with-parent" if flag && !p.no_die_with_parent => p.no_die_with_parent = true,
            _ => return None,
        }
        // `--opt=VALUE` on an option that took no value is clap's to refuse.
        if inline.is_some() {
            return None;
        }
    }
    let command: Vec<OsString> = argv.collect();
    (!command.is_empty()).then_some(SandboxArgs { policy: p, command })
}

/// An option's value (inline after `=`, else the next argument), when clap
/// would surely take it as one: not empty, not starting with `-`.
fn plain_value(inline: Option<OsString>, argv: &mut impl Iterator<Item = OsString>) -> Option<OsString> {
    let v = match inline {
        Some(v) => v,
        None => argv.next()?,
    };
    (!v.is_empty() && !v.as_encoded_bytes().starts_with(b"-")).then_some(v)
}

fn dispatch(cli: Cli, started: std::time::Instant) -> Result<ExitCode, Fatal> {
    match cli.command {
        Command::Run(args) => {
            let (policy, notes, host) = load(&args.policy, args.command)?;
            for n in notes {
                eprintln!("qwrap: note: {n}");
            }
            let plan = plan::build(&policy, &host);
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
            let err = exec::execute(&plan, opts);
            eprintln!("{err}");
            Ok(err.exit_code() as u8)
        }
        Command::Plan { sandbox, json } => {
            let (policy, _, host) = load(&sandbox.policy, sandbox.command)?;
            let plan = plan::build(&policy, &host);
            if json {
                outln!("{}", plan_json(&plan));
            } else {
                out!("{plan}");
            }
            Ok(0)
        }
        Command::Inspect { policy, json, verify } if verify => verify_cmd(&policy, json),
        Command::Inspect { policy, json, .. } => inspect_cmd(&policy, json),
        Command::Verify { policy, json } => verify_cmd(&policy, json),
        Command::Receipt { policy, json } => receipt_cmd(&policy, json),
        Command::Probe(p) => Ok(probe_cmd(p)),
    }
}

fn invocation(a: &PolicyArgs, command: Vec<OsString>) -> Invocation {
    Invocation {
        cli: CliSettings {
            network: a.network.clone(),
            tmp: a.tmp.clone(),
            landlock: a.landlock.clone(),
            no_die_with_parent: a.no_die_with_parent,
            new_session: a.new_session,
            allow_git_config: a.allow_git_config,
            allow_socket: a.allow_socket.clone(),
            include: a.include.clone(),
            read_only: a.ro.clone(),
            profile: a.profile.clone(),
        },
        workspace: a.workspace.clone(),
        setenv: a
            .setenv
            .chunks_exact(2)
            .map(|kv| (kv[0].clone(), kv[1].clone()))
            .collect(),
        unsetenv: a.unsetenv.clone(),
        keep_fds: a.keep_fd.clone(),
        command,
    }
}

fn caller() -> Result<Caller, Fatal> {
    Caller::from_process().map_err(|e| {
        Fatal(
            format!("cannot read the current directory: {e}"),
            EXIT_SETUP as u8,
        )
    })
}

fn load(a: &PolicyArgs, command: Vec<OsString>) -> Result<(Policy, Vec<String>, HostFacts), Fatal> {
    let caller = caller()?;
    let (policy, notes) = policy::load(&invocation(a, command), &caller).map_err(load_error)?;
    let host = host::probe().map_err(|e| Fatal(e, EXIT_USAGE))?;
    required_layers(&policy, &host).map_err(|m| Fatal(m, EXIT_SETUP as u8))?;
    Ok((policy, notes, host))
}

/// `--landlock require` fails closed when the kernel cannot give it.
fn required_layers(policy: &Policy, host: &HostFacts) -> Result<(), String> {
    match plan::missing_required(policy, &plan::assess(policy, host))
        .or_else(|| plan::unmaskable_sockets(host))
    {
        Some(m) => Err(m),
        None => Ok(()),
    }
}

fn load_error(e: LoadError) -> Fatal {
    match e {
        LoadError::Settings(s) => Fatal(s.to_string(), EXIT_USAGE),
        LoadError::Policy(p) => Fatal(p.to_string(), EXIT_SETUP as u8),
    }
}

/// The policy under test, for inspect, verify and receipt.
struct Subject {
    inv: Invocation,
    caller: Caller,
    policy: Policy,
    notes: Vec<String>,
    host: HostFacts,
}

fn subject(a: &PolicyArgs) -> Result<Subject, Fatal> {
    let inv = invocation(a, verify::self_command(["--noop".into()]));
    let caller = caller()?;
    let (policy, mut notes) = policy::load(&inv, &caller).map_err(load_error)?;
    let host = host::probe().map_err(|e| Fatal(e, EXIT_USAGE))?;
    if host::inside_qwrap() {
        notes.push("Already inside a qwrap sandbox: this report describes a nested sandbox".into());
    }
    Ok(Subject {
        inv,
        caller,
        policy,
        notes,
        host,
    })
}

/// Starts a probe sandbox with the subject's exact policy.
fn enforcement(s: &Subject) -> Enforcement {
    if let Err(m) = required_layers(&s.policy, &s.host) {
        return Enforcement::none(m);
    }
    match verify::run_in_sandbox(&s.policy, &s.host, s.policy.command.clone()) {
        Ok(_) => Enforcement::full(),
        Err(e) => Enforcement::none(e.0),
    }
}

fn inspect_cmd(a: &PolicyArgs, json: bool) -> Result<ExitCode, Fatal> {
    let s = subject(a)?;
    let report = Inspect::new(&s.policy, &s.host, enforcement(&s), s.notes.clone());
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serialises")
        );
    } else {
        out!("{}", report.text());
    }
    Ok(if report.enforcement.is_full() {
        0
    } else {
        EXIT_SETUP as u8
    })
}

fn verify_cmd(a: &PolicyArgs, json: bool) -> Result<ExitCode, Fatal> {
    let s = subject(a)?;
    match verify::battery(&s.inv, &s.caller, &s.policy, &s.host) {
        Ok(r) => {
            if json {
                outln!("{}", serde_json::to_string_pretty(&r).expect("report serialises"));
            } else {
                out!("{}", report::verify_text(&r));
            }
            Ok(if r.verified { 0 } else { 1 })
        }
        Err(e) => {
            if json {
                let v = serde_json::json!({ "verified": false, "error": e.0 });
                outln!("{}", serde_json::to_string_pretty(&v).expect("serialises"));
            }
            eprintln!("{}", e.0);
            eprintln!("qwrap: verify: no sandbox could start; nothing was verified");
            Ok(EXIT_SETUP as u8)
        }
    }
}

fn receipt_cmd(a: &PolicyArgs, json: bool) -> Result<ExitCode, Fatal> {
    let s = subject(a)?;
    let enforcement = enforcement(&s);
    let verified = if enforcement.is_full() {
        verify::battery(&s.inv, &s.caller, &s.policy, &s.host).ok()
    } else {
        None
    };
    let inspect = Inspect::new(&s.policy, &s.host, enforcement, s.notes.clone());
    let r = report::receipt(&s.policy, &inspect, verified.as_ref());
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&r).expect("receipt serialises")
        );
    } else {
        out!("{}", r.text());
    }
    Ok(match (inspect.enforcement.is_full(), r.result.as_str()) {
        (false, _) => EXIT_SETUP as u8,
        (true, "promote") => 0,
        _ => 1,
    })
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
    if p.nested_remount {
        outln!("{}", verify::probe::nested_remount_attempt());
        return 0;
    }
    let args = ProbeArgs {
        workspace: p.workspace.unwrap_or_else(|| PathBuf::from(".")),
        outside: p.outside.unwrap_or_else(|| PathBuf::from("/")),
        home: p.home,
        host_pidns: p.host_pidns,
        closed_network: p.closed_network,
        host_has_nonlo: p.host_has_nonlo,
        host_pid: p.host_pid,
        abstract_name: p.abstract_name,
        masked_socket: p.masked_socket,
        protected: p.protected,
        git_dirs: p.git_dirs,
        scoped: p.scoped,
    };
    let checks = verify::probe::run(&args);
    outln!("{}", serde_json::to_string(&checks).expect("checks serialise"));
    0
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;
    use std::os::unix::ffi::OsStringExt;

    fn clap_run(args: &[OsString]) -> Option<SandboxArgs> {
        let argv = std::iter::once(OsString::from("qwrap run")).chain(args.iter().cloned());
        let m = run_command().try_get_matches_from(argv).ok()?;
        SandboxArgs::from_arg_matches(&m).ok()
    }

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    /// Option shapes, well-formed and not.
    fn pieces() -> Vec<Vec<OsString>> {
        let mut v: Vec<Vec<OsString>> = [
            &["--workspace", "/w"][..],
            &["--workspace=/w"],
            &["--workspace=/x"],
            &["--include", "/a"],
            &["--bind", "/b"],
            &["--include=/c=d"],
            &["--ro", "/r"],
            &["--ro=/r"],
            &["--profile", "qwen"],
            &["--profile=x"],
            &["--network", "closed"],
            &["--network=open"],
            &["--tmp", "host"],
            &["--tmp=private"],
            &["--landlock", "require"],
            &["--landlock=off"],
            &["--allow-git-config"],
            &["--allow-socket", "/s"],
            &["--new-session"],
            &["--no-die-with-parent"],
            &["--setenv", "K", "V"],
            &["--setenv", "K", "a=b"],
            &["--unsetenv", "K"],
            &["--unsetenv=K"],
            &["--workspace"],
            &["--workspace", ""],
            &["--workspace="],
            &["--workspace", "-x"],
            &["--network", "--tmp"],
            &["--new-session=1"],
            &["--allow-git-config=true"],
            &["--bogus"],
            &["--work"],
            &["-h"],
            &["--help"],
            &["--version"],
            &["--setenv", "K"],
            &["--setenv=K", "V"],
            &["--setenv", "-K", "V"],
            &["--"],
            &["cmd"],
        ]
        .iter()
        .map(|p| os(p))
        .collect();
        v.push(vec![OsString::from("--profile"), OsString::from_vec(vec![0xff])]);
        v.push(vec![
            OsString::from("--include"),
            OsString::from_vec(vec![b'/', 0xfe]),
        ]);
        v.push(vec![OsString::from_vec(b"--ro=/\xff".to_vec())]);
        v
    }

    fn tails() -> Vec<Vec<OsString>> {
        [
            &[][..],
            &["--"],
            &["--", "cmd"],
            &["--", "cmd", "--x", "-y"],
            &["--", "--"],
            &["cmd"],
        ]
        .iter()
        .map(|t| os(t))
        .collect()
    }

    fn check(argv: &[OsString]) -> bool {
        let fast = parse_run_fast(argv.iter().cloned());
        if let Some(f) = &fast {
            assert_eq!(Some(f), clap_run(argv).as_ref(), "argv {argv:?}");
        }
        fast.is_some()
    }

    #[test]
    fn fast_parser_agrees_with_clap_on_pairs() {
        let (pieces, tails) = (pieces(), tails());
        let mut fast = 0;
        for a in &pieces {
            for b in &pieces {
                for t in &tails {
                    fast += check(&[a.clone(), b.clone(), t.clone()].concat()) as usize;
                }
            }
        }
        // The parser must actually take the common shapes, or it saves nothing.
        assert!(fast > 1000, "fast path taken {fast} times");
    }

    #[test]
    fn fast_parser_agrees_with_clap_on_longer_lines() {
        let (pieces, tails) = (pieces(), tails());
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..3000 {
            let mut argv = Vec::new();
            for _ in 0..3 + next(4) {
                argv.extend(pieces[next(pieces.len())].clone());
            }
            argv.extend(tails[next(tails.len())].clone());
            check(&argv);
        }
    }

    #[test]
    fn fast_parser_takes_what_tools_write() {
        for line in [
            &["--", "/bin/true"][..],
            &["--workspace", "/w", "--network", "closed", "--", "sh", "-c", "x"],
            &[
                "--profile",
                "qwen",
                "--include=/a",
                "--bind",
                "/b",
                "--ro",
                "/w/r",
                "--",
                "cmd",
            ],
            &[
                "--setenv",
                "K",
                "V",
                "--unsetenv",
                "U",
                "--new-session",
                "--",
                "cmd",
                "--",
                "-x",
            ],
            &[
                "--allow-socket",
                "/s",
                "--allow-git-config",
                "--no-die-with-parent",
                "--",
                "c",
            ],
            &["--tmp=host", "--landlock", "require", "--", "c"],
        ] {
            let argv = os(line);
            assert!(check(&argv), "not taken by the fast parser: {argv:?}");
        }
    }

    #[test]
    fn fast_parser_leaves_errors_and_help_to_clap() {
        for line in [
            &["--help"][..],
            &["--network", "closed", "--network", "open", "--", "c"],
            &["--new-session", "--new-session", "--", "c"],
            &["--workspace", "", "--", "c"],
            &["--workspace", "--", "c"],
            &["--bogus", "--", "c"],
            &["--"],
            &["c"],
        ] {
            assert_eq!(parse_run_fast(os(line).into_iter()), None, "{line:?}");
        }
    }
}
