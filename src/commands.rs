//! The subcommands behind the command line, each one function from an
//! invocation to what it prints and its exit status: loading the policy and
//! the host for `run` and `plan`, and the reports of `inspect`, `verify` and
//! `receipt`. main.rs parses and prints.

use crate::cache_layers;
use crate::host::{self, HostFacts};
use crate::plan::{self, Layers, Plan};
use crate::plan::{PrepareCaches, PrepareReview};
use crate::policy::{self, Caller, Invocation, LoadError, Policy};
use crate::report::{self, Enforcement, Inspect};
use crate::verify;

/// Exit status for usage errors (as clap uses).
pub const EXIT_USAGE: u8 = crate::exit::USAGE;

/// A failure before any setup step: the message and the exit status.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Fatal {
    pub message: String,
    pub code: u8,
}

impl Fatal {
    fn new(message: impl Into<String>, code: u8) -> Self {
        Fatal {
            message: message.into(),
            code,
        }
    }
}

// Which error exits how, in one place (the statuses: exit.rs).

/// A setting or config file is wrong: a usage error; a policy that cannot
/// hold on this host: the sandbox is refused.
impl From<LoadError> for Fatal {
    fn from(e: LoadError) -> Self {
        match e {
            LoadError::Settings(s) => Fatal::new(s.to_string(), crate::exit::USAGE),
            LoadError::Policy(p) => Fatal::new(p.to_string(), crate::exit::SETUP),
        }
    }
}

/// The host could not be probed (e.g. a cache request it cannot serve).
impl From<host::ProbeError> for Fatal {
    fn from(e: host::ProbeError) -> Self {
        Fatal::new(e.to_string(), crate::exit::USAGE)
    }
}

/// `--landlock require` cannot hold, or a socket cannot be masked.
impl From<Box<plan::Refused>> for Fatal {
    fn from(r: Box<plan::Refused>) -> Self {
        Fatal::new(r.message, crate::exit::SETUP)
    }
}

/// What a report command prints and how it exits.
#[derive(Debug, Default)]
pub struct Output {
    pub stdout: String,
    pub stderr: Vec<String>,
    pub code: u8,
}

/// What `run` and `plan` start from.
pub struct Loaded {
    pub plan: Plan,
    /// The layers as assessed on this host (for the degraded lines).
    pub layers: Layers,
    /// The policy's notes.
    pub notes: Vec<String>,
    /// What the plan was made from, to make it again (`execute`).
    policy: Policy,
    pty: Pty,
}

/// The plan for `run` and `plan`, its layers and the policy's notes;
/// `--landlock require` and unmaskable sockets fail closed here (exit 125).
pub fn load(inv: &Invocation) -> Result<Loaded, Fatal> {
    let (policy, notes) = policy::load(inv, &Caller::from_process())?;
    plan_for(policy, notes, Pty::Ask)
}

/// Whether a pty of qwrap's own can be had: `run` tried, the others ask.
#[derive(Clone)]
enum Pty {
    Tried(Option<String>),
    Ask,
}

/// `run`'s plan: as `load`, after a pty of qwrap's own is put between the
/// command and the caller's terminal (supervise/terminal.rs), so that the
/// host's facts and the plan see the pty on fds 0-2.
pub fn load_for_run(inv: &Invocation) -> Result<Loaded, Fatal> {
    let (policy, notes) = policy::load(inv, &Caller::from_process())?;
    let mut no_pty = None;
    if !policy.settings.share_terminal.value {
        no_pty = crate::supervise::terminal::interpose().map_err(|e| {
            Fatal::new(
                format!(
                    "a pty of qwrap's own for the command: {e}: {}; --share-terminal gives it the caller's terminal instead",
                    crate::errno::errno_text(e.errno.raw_os_error())
                ),
                crate::exit::SETUP,
            )
        })?;
    }
    plan_for(policy, notes, Pty::Tried(no_pty.map(host::no_pty_text)))
}

fn plan_for(policy: Policy, mut notes: Vec<String>, pty: Pty) -> Result<Loaded, Fatal> {
    // A cache that cannot be reached, or a root the user named that is
    // not there, is said on every run, not only in inspect.
    notes.extend(
        policy
            .dropped
            .iter()
            .filter(|d| d.why.contains("cannot be reached") || d.why.starts_with("--include"))
            .map(|d| format!("{}: {} (left out)", d.path.display(), d.why)),
    );
    // Repositories the walk did not reach are not guarded: said each run.
    notes.extend(policy.repos.note.iter().map(|n| format!("git: {n}")));
    // The user's own (a profile's list applies whenever it is proxied).
    if policy.settings.network.value != policy::NetworkMode::Proxied
        && let Some(d) = policy
            .allowed_domains
            .iter()
            .find(|d| !d.source.starts_with("profile"))
    {
        notes.push(format!(
            "--allow-domain {} (from {}) applies to --network proxied only; the network here is {}",
            d.value, d.source, policy.settings.network.value
        ));
    }
    let host = probe_host(&policy, pty.clone())?;
    let (plan, layers) = plan::build(&policy, &host)?;
    Ok(Loaded {
        plan,
        layers,
        notes,
        policy,
        pty,
    })
}

/// Runs `run`'s plan. Where another sandbox of the workspace took the cache
/// layer slot between the probe and its lock (the first step, before
/// anything is unshared or started), the host is probed and the plan made
/// again: the next free slot, or private caches that the degraded line
/// names. Returns only where the command did not start.
pub fn execute(
    mut loaded: Loaded,
    opts: crate::exec::Options,
    quiet: bool,
) -> Result<crate::exec::SetupError, Fatal> {
    // Each retry follows a sandbox that won a slot: at most one per slot
    // and sandbox started meanwhile, so a bound is only a guard.
    for _ in 0..1000 {
        let err = crate::exec::execute(&loaded.plan, opts);
        // Or another run of the workspace took the review layer's id.
        let taken = match loaded.plan.steps.get(err.index) {
            Some(plan::Step::PrepareCaches(PrepareCaches { lock: Some(_), .. })) => {
                err.errno == libc::EWOULDBLOCK
            }
            Some(plan::Step::PrepareReview(PrepareReview { .. })) => {
                err.errno == libc::EEXIST || err.errno == libc::EWOULDBLOCK
            }
            _ => false,
        };
        if !taken {
            return Ok(err);
        }
        let host = probe_host(&loaded.policy, loaded.pty.clone())?;
        (loaded.plan, loaded.layers) = plan::build(&loaded.policy, &host)?;
        if let plan::LayerState::Degraded(why) = &loaded.layers.cache_isolation
            && !quiet
        {
            eprintln!("qwrap: degraded: caches: {why}");
        }
    }
    Ok(crate::exec::execute(&loaded.plan, opts))
}

/// The host's facts for a policy: with `isolation = "auto"` whether
/// namespaces work here, and for a Landlock-only sandbox the listings its
/// rules are made of.
fn probe_host(policy: &Policy, pty: Pty) -> Result<HostFacts, Fatal> {
    let mut host = host::probe(&policy.cache_request())?;
    if let Some(r) = &policy.review {
        host.review = Some(host::review::probe(&r.set, &r.trees));
    }
    host.no_pty = match pty {
        Pty::Tried(why) => why,
        Pty::Ask if plan::own_terminal(policy, &host) => host::pty_refused(),
        Pty::Ask => None,
    };
    // A limit that needs a cgroup: where the caller may make one.
    if policy.settings.memory.value.0.is_some()
        || policy.settings.max_processes.value.0.is_some()
        || policy.settings.cpus.value.0.is_some()
    {
        host.cgroups = Some(host::cgroups::probe());
    }
    // The plan decides the isolation; the host's probe is finished for it.
    let auto = policy.settings.isolation.value == policy::IsolationMode::Auto;
    host::landlock_only::finish(&mut host, auto, |host| {
        plan::Isolation::decide(policy, host)
            .landlock_only()
            .then(|| plan::landlock_mode::request(policy, host))
    });
    Ok(host)
}

/// The policy under test, for inspect, verify and receipt, with its layers
/// and why its sandbox cannot start, if it cannot.
struct Subject {
    inv: Invocation,
    caller: Caller,
    policy: Policy,
    notes: Vec<String>,
    host: HostFacts,
    layers: Layers,
    refused: Option<String>,
    /// The cache layer slots not there before: the probe sandbox's, taken
    /// away after the report (a report leaves no layer behind).
    made: Option<(std::path::PathBuf, Vec<usize>)>,
}

impl Drop for Subject {
    fn drop(&mut self) {
        if let Some((set, slots)) = self.made.take() {
            cache_layers::clean_slots(&set, slots);
        }
    }
}

/// `inv` with the probe as its command.
fn subject(mut inv: Invocation) -> Result<Subject, Fatal> {
    inv.command = verify::self_command(["--noop".into()]);
    let caller = Caller::from_process();
    let (policy, mut notes) = policy::load(&inv, &caller)?;
    let host = probe_host(&policy, Pty::Ask)?;
    let policy_set = policy.cache_set.clone();
    if host::inside_qwrap(&plan::dev_entries()) {
        notes.push("Already inside a qwrap sandbox: this report describes a nested sandbox".into());
    }
    let (layers, refused) = match plan::build(&policy, &host) {
        Ok((_, layers)) => (layers, None),
        Err(r) => (r.layers, Some(r.message)),
    };
    Ok(Subject {
        inv,
        caller,
        policy,
        notes,
        host,
        layers,
        refused,
        made: policy_set.map(|set| {
            let slots = cache_layers::missing_slots(&set);
            (set, slots)
        }),
    })
}

/// Starts a probe sandbox with the subject's exact policy.
fn enforcement(s: &Subject) -> Enforcement {
    if let Some(m) = &s.refused {
        return Enforcement::none(m.clone());
    }
    match verify::run_in_sandbox(&s.policy, &s.host, s.policy.command.clone()) {
        Ok(_) => Enforcement::full(),
        Err(e) => Enforcement::none(e.to_string()),
    }
}

fn pretty<T: serde::Serialize>(v: &T) -> String {
    format!(
        "{}\n",
        serde_json::to_string_pretty(v).expect("reports serialise")
    )
}

/// `qwrap inspect`: exit 0 when the sandbox starts with every layer.
pub fn inspect(inv: Invocation, json: bool) -> Result<Output, Fatal> {
    let s = subject(inv)?;
    let report = Inspect::new(&s.policy, &s.host, &s.layers, enforcement(&s), s.notes.clone());
    Ok(Output {
        stdout: if json { pretty(&report) } else { report.text() },
        stderr: Vec::new(),
        code: if report.enforcement.is_full() {
            0
        } else {
            crate::exit::SETUP
        },
    })
}

/// `qwrap verify`: exit 0 when every check passed, 1 when one failed, 125
/// when no sandbox could start.
pub fn verify(inv: Invocation, json: bool) -> Result<Output, Fatal> {
    let s = subject(inv)?;
    // --landlock require fails closed here exactly as in `run`.
    if let Some(m) = &s.refused {
        return Err(Fatal::new(m.clone(), crate::exit::SETUP));
    }
    Ok(match verify::battery(&s.inv, &s.caller, &s.policy, &s.host) {
        Ok(r) => Output {
            stdout: if json { pretty(&r) } else { report::verify_text(&r) },
            stderr: Vec::new(),
            code: if r.verified { 0 } else { crate::exit::FAILED },
        },
        Err(e) => Output {
            stdout: if json {
                pretty(&serde_json::json!({ "verified": false, "error": e.to_string() }))
            } else {
                String::new()
            },
            stderr: vec![
                e.to_string(),
                "qwrap: verify: no sandbox could start; nothing was verified".into(),
            ],
            code: crate::exit::SETUP,
        },
    })
}

/// `qwrap receipt`: exit 0 for "promote", 1 otherwise, 125 when no sandbox
/// could start.
pub fn receipt(inv: Invocation, json: bool) -> Result<Output, Fatal> {
    let s = subject(inv)?;
    let enforcement = enforcement(&s);
    let mut stderr = Vec::new();
    let verified = if enforcement.is_full() {
        // Not run (the receipt says so), and why, for the administrator.
        verify::battery(&s.inv, &s.caller, &s.policy, &s.host)
            .map_err(|e| stderr.push(format!("qwrap: receipt: the built-in verify could not run: {e}")))
            .ok()
    } else {
        None
    };
    let inspect = Inspect::new(&s.policy, &s.host, &s.layers, enforcement, s.notes.clone());
    let r = report::receipt(&s.policy, &inspect, verified.as_ref());
    Ok(Output {
        stdout: if json { pretty(&r) } else { r.text() },
        stderr,
        code: match (inspect.enforcement.is_full(), r.result.as_str()) {
            (false, _) => crate::exit::SETUP,
            (true, "promote") => 0,
            _ => crate::exit::FAILED,
        },
    })
}

/// `qwrap cache list` and `qwrap cache clean`.
pub fn cache(request: cache_layers::Request) -> Result<Output, Fatal> {
    let caller = Caller::from_process();
    let base = cache_layers::base(caller.home.as_deref(), caller.var("XDG_STATE_HOME"))
        .ok_or_else(|| Fatal::new("no home directory: no cache layers", EXIT_USAGE))?;
    let mut out = Output::default();
    match request {
        cache_layers::Request::List => out.stdout = cache_layers::list(&base),
        cache_layers::Request::Clean { workspace, all } => {
            let sets: Vec<std::path::PathBuf> = if all {
                std::fs::read_dir(&base)
                    .map(|d| d.flatten().map(|e| e.path()).collect())
                    .unwrap_or_default()
            } else {
                let ws = match workspace {
                    Some(w) => w,
                    None => caller
                        .cwd()
                        .map_err(|e| Fatal::new(e.to_string(), crate::exit::SETUP))?
                        .to_path_buf(),
                };
                let ws = std::fs::canonicalize(&ws)
                    .map_err(|e| Fatal::new(format!("workspace {}: {e}", ws.display()), EXIT_USAGE))?;
                vec![base.join(policy::layer_set_name(&ws))]
            };
            let (said, failed) = cache_layers::clean(&sets);
            for line in said {
                out.stdout.push_str(&line);
                out.stdout.push('\n');
            }
            // A layer that stays is said, and the exit says so too.
            if failed {
                out.code = 1;
            }
        }
    }
    Ok(out)
}

/// `qwrap review`: the layers of the workspace (the current directory, or
/// `--workspace`); `confirm` asks the person at the terminal (apply).
pub fn review(
    request: crate::review::Request,
    workspace: Option<std::path::PathBuf>,
    confirm: &mut dyn FnMut(&str) -> bool,
) -> Result<Output, Fatal> {
    let caller = Caller::from_process();
    let base = crate::review::base(caller.home.as_deref(), caller.var("XDG_STATE_HOME"))
        .ok_or_else(|| Fatal::new("no home directory: no review layers", EXIT_USAGE))?;
    let ws = match workspace {
        Some(w) => w,
        None => caller
            .cwd()
            .map_err(|e| Fatal::new(e.to_string(), crate::exit::SETUP))?
            .to_path_buf(),
    };
    let ws = std::fs::canonicalize(&ws)
        .map_err(|e| Fatal::new(format!("workspace {}: {e}", ws.display()), EXIT_USAGE))?;
    // A file the command made unreadable to itself is still its owner's.
    let _ = crate::host::review::as_owner();
    // What the command wrote is shown, never obeyed, by the terminal.
    let mut asked = |text: &str| confirm(&crate::review::visible(text, true));
    let said = crate::review::run(&base, &ws, request, &mut asked);
    Ok(Output {
        stdout: crate::review::visible(&said.stdout, true),
        stderr: said
            .stderr
            .iter()
            .map(|l| crate::review::visible(l, true))
            .collect(),
        code: said.code,
    })
}
