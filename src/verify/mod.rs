//! `qwrap verify`: a battery of checks run inside a real sandbox built from the
//! same policy and plan as `run`, plus the linked-worktree commit canary.

mod attempts;
pub(crate) use attempts::create;
mod cache_check;
mod canary;
mod egress_checks;
mod git_check;
mod home_check;
mod leftover_check;
pub mod probe;
mod probe_args;
mod reach;
mod review_check;
pub mod terminal_check;

use crate::exec;
use crate::host::HostFacts;
use crate::plan;
use crate::policy::{Caller, Checkout, Invocation, NetworkMode, Policy};
use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
    Skip,
    /// Failed, and the administrator accepts it (`accept_degraded`).
    Accepted,
    /// The isolation in force does not claim it (`--isolation landlock`).
    #[serde(rename = "not-provided")]
    NotProvided,
}

/// One check: PASS, FAIL with what was expected and what was seen, or SKIP
/// with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// A stable identifier (`outside-write`).
    pub name: String,
    /// What is checked, for people.
    pub title: String,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// What was seen (on failure), or why the check was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub got: Option<String>,
}

/// The battery's result.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Failed checks the policy accepts, by name.
    pub accepted: Vec<String>,
    /// Every check that ran passed, or failed and is accepted.
    pub verified: bool,
    /// `namespaces`, or `landlock`: what the checks were held to.
    pub isolation: &'static str,
}

impl Report {
    /// The report, with the failures named in `accept` marked accepted.
    pub fn new(mut checks: Vec<Check>, accept: &[String]) -> Self {
        for c in &mut checks {
            if c.outcome == Outcome::Fail && accept.contains(&c.name) {
                c.outcome = Outcome::Accepted;
            }
        }
        let count = |o| checks.iter().filter(|c| c.outcome == o).count();
        let (passed, failed, skipped) = (count(Outcome::Pass), count(Outcome::Fail), count(Outcome::Skip));
        let accepted: Vec<String> = checks
            .iter()
            .filter(|c| c.outcome == Outcome::Accepted)
            .map(|c| c.name.clone())
            .collect();
        Report {
            isolation: "namespaces",
            verified: failed == 0 && passed > 0,
            checks,
            passed,
            failed,
            skipped,
            accepted,
        }
    }

    /// The names of the checks that were skipped.
    pub fn skipped_names(&self) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| c.outcome == Outcome::Skip)
            .map(|c| c.name.clone())
            .collect()
    }

    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }
}

/// Why no sandbox ran the probe.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NoSandbox {
    /// The planner refused this policy on this host.
    #[error("qwrap: {0}")]
    Refused(String),
    /// The child for the sandbox could not be made.
    #[error("qwrap: fork: {0}")]
    Fork(String),
    /// Setup failed: the error as the child printed it.
    #[error("{0}")]
    Setup(String),
    #[error("the sandbox was killed by signal {0}")]
    Killed(i32),
    /// The probe ran but printed no result.
    #[error("the in-sandbox probe printed no result: {0}")]
    NoResult(String),
}

/// The hidden subcommand qwrap re-executes itself as inside the sandbox.
pub const PROBE_COMMAND: &str = "__probe";

/// The command that runs qwrap itself inside the sandbox. `/proc/self/exe`
/// still names qwrap's binary at `execve` time, wherever it lives.
pub fn self_command(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["/proc/self/exe".into(), PROBE_COMMAND.into()];
    v.extend(args);
    v
}

/// Runs `policy`'s sandbox in a child with `command` and returns its output;
/// `Err` when the sandbox did not start (the command never ran).
pub fn run_in_sandbox(
    policy: &Policy,
    host: &HostFacts,
    command: Vec<OsString>,
) -> Result<String, NoSandbox> {
    run_in_sandbox_with(policy, host, command, &mut |_| {})
}

/// As `run_in_sandbox`, showing `on_output` the output as it arrives.
pub fn run_in_sandbox_with(
    policy: &Policy,
    host: &HostFacts,
    command: Vec<OsString>,
    on_output: &mut dyn FnMut(&[u8]),
) -> Result<String, NoSandbox> {
    let mut p = policy.clone();
    p.command = command;
    p.env.set.retain(|(k, _)| k != "LC_ALL");
    p.env.set.insert(0, ("LC_ALL".into(), "C".into()));
    let (plan, _) = plan::build(&p, &host.as_captured()).map_err(|r| NoSandbox::Refused(r.message))?;
    let out = review_check::removing_layer(&plan, exec::capture_with(&plan, on_output))
        .map_err(|e| NoSandbox::Fork(e.to_string()))?;
    let text = String::from_utf8_lossy(&out.output).into_owned();
    match out.code {
        Some(c) if c == exec::EXIT_SETUP => Err(NoSandbox::Setup(text.trim_end().to_string())),
        Some(_) => Ok(text),
        None => Err(NoSandbox::Killed(out.signal.unwrap_or(0))),
    }
}

/// Minimal view: a readable host path that the view does not show (nor
/// leads to), for the probe to find missing.
fn outside_the_view(policy: &Policy) -> Option<PathBuf> {
    if policy.settings.view.value != crate::policy::ViewMode::Minimal {
        return None;
    }
    let shown: Vec<&Path> = policy
        .writable_roots
        .iter()
        .map(|r| r.path.as_path())
        .chain(policy.view_entries.iter().map(|e| e.path.as_path()))
        .chain(policy.home.as_deref())
        .collect();
    ["/root", "/srv", "/mnt", "/media", "/boot", "/var/log", "/home"]
        .iter()
        .map(Path::new)
        .find(|p| p.exists() && !shown.iter().any(|s| s.starts_with(p) || p.starts_with(s)))
        .map(Path::to_path_buf)
}

/// A directory outside every writable root, for the outside-write check.
pub fn outside_dir(policy: &Policy) -> PathBuf {
    let inside_root = |p: &Path| policy.writable_roots.iter().any(|r| p.starts_with(&r.path));
    ["/usr/local/bin", "/usr/bin", "/etc", "/var", "/opt", "/"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_dir() && !inside_root(p) && policy.home.as_deref() != Some(p.as_path()))
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// The host's facts the in-sandbox probe compares against.
pub fn probe_args(
    policy: &Policy,
    host: &HostFacts,
    layers: &plan::Layers,
    helpers: &HostHelpers,
) -> probe::ProbeArgs {
    let host_ifs = probe::interfaces(&std::fs::read_to_string("/proc/net/dev").unwrap_or_default());
    probe::ProbeArgs {
        workspace: policy.workspace.clone(),
        outside: outside_dir(policy),
        home: policy.home.clone(),
        host_pidns: std::fs::read_link("/proc/self/ns/pid")
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        closed_network: policy.settings.network.value.private(),
        caches: cache_check::targets(&cache_check::with_home(layers)),
        home_overlaid: layers.home_overlay.is_some(),
        cache_tag: match layers.kind {
            // No overlay without a mount namespace: nothing to tag.
            plan::Isolation::LandlockOnly { .. } => None,
            plan::Isolation::Namespaces => Some(format!(".qwrap-verify-cache-{}", std::process::id())),
        },
        leftover_tag: (!policy.settings.keep_background.value).then(leftover_check::tag),
        review_tag: review_check::tag(layers),
        proxied: policy.settings.network.value == NetworkMode::Proxied,
        proxy_target: helpers.egress_target.map(|port| format!("127.0.0.1:{port}")),
        host_has_nonlo: host_ifs.iter().any(|i| i != "lo"),
        host_pid: helpers.process.as_ref().map(|c| c.id()),
        abstract_name: helpers.abstract_socket.as_ref().map(|(_, n)| n.clone()),
        masked_socket: helpers
            .socket
            .as_ref()
            .map(|(_, path)| path.clone())
            .filter(|p| layers.masked_sockets.contains(p)),
        protected: policy.protected.clone(),
        // With --allow-git-config the guard is off and nothing is claimed.
        git_dirs: policy.git_layouts.iter().map(|g| g.dir.clone()).collect(),
        // A second path to the home is the home_check's to prove, with a
        // canary: without a mount (Landlock alone) it shows the listed
        // files, the same inodes as the home does, by design.
        hidden: policy
            .hidden
            .iter()
            .filter(|h| h.why != crate::policy::secrets::SECOND_PATH)
            .map(|h| h.path.clone())
            .collect(),
        absent: outside_the_view(policy),
        // The unlisted-name check is the listed home's; the whole-home
        // views hide the canary (the second-path check reads it).
        canary: helpers
            .home
            .as_ref()
            .and_then(|h| h.canary.clone())
            .filter(|_| policy.home_listing.is_some()),
        replaced: helpers.home.as_ref().and_then(|h| h.replaced.clone()),
        second_paths: helpers
            .home
            .as_ref()
            .map(|h| h.second_paths())
            .unwrap_or_default(),
        scoped: layers.landlock_scopes.is_applied(),
        private_pid: layers.private_pid,
        landlock_only: layers.kind.landlock_only(),
        write_at: write_at(policy, host, layers),
    }
}

/// `--isolation landlock` where the workspace's top is not writable (it
/// holds a git dir): its first writable directory.
fn write_at(policy: &Policy, host: &HostFacts, layers: &plan::Layers) -> Option<PathBuf> {
    let Some(Ok(lists)) = &host.landlock_only.lists else {
        return None;
    };
    if !layers.kind.landlock_only() || !lists.write.levels.contains(&policy.workspace) {
        return None;
    }
    lists
        .write
        .beneath
        .iter()
        .find(|p| p.parent() == Some(policy.workspace.as_path()) && p.is_dir())
        .cloned()
}

/// Things on the host side for the probe to try to reach: a process of ours,
/// an abstract socket and a pathname socket outside every writable root.
/// Dropping them kills, closes and removes them.
#[derive(Default)]
pub struct HostHelpers {
    process: Option<std::process::Child>,
    abstract_socket: Option<(rustix::fd::OwnedFd, String)>,
    socket: Option<(std::os::unix::net::UnixListener, PathBuf)>,
    socket_dir: Option<PathBuf>,
    /// `--network proxied`: the port of a loopback server that greets.
    egress_target: Option<u16>,
    /// The greeter's process.
    greeter: Option<rustix::process::Pid>,
    /// Files planted in the home: a canary under a name nothing lists,
    /// one the host replaces while the probe runs.
    home: Option<home_check::Planted>,
}

/// A loopback server that writes a greeting to each client, for the
/// egress-listed check: a process of its own (verify forks the probe
/// later, which only a single-threaded process may), killed with verify.
fn greeter() -> Option<(u16, rustix::process::Pid)> {
    let l = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).ok()?;
    let port = l.local_addr().ok()?.port();
    match crate::sys::fork().ok()? {
        Some(pid) => Some((port, rustix::process::Pid::from_raw(pid)?)),
        None => {
            let _ = crate::sys::kernel::die_with_parent();
            for mut c in l.incoming().flatten() {
                let _ = std::io::Write::write_all(&mut c, egress_checks::GREETING);
            }
            std::process::exit(0)
        }
    }
}

impl HostHelpers {
    /// Starts what it can; what cannot be started turns its check into a SKIP.
    pub fn start(policy: &Policy) -> Self {
        let tag = format!("qwrap-verify-{}", std::process::id());
        let mut h = HostHelpers::default();
        h.process = std::process::Command::new("sleep")
            .arg("60")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .ok();
        h.abstract_socket = abstract_listener(&tag).ok().map(|fd| (fd, tag.clone()));
        if policy.settings.network.value == NetworkMode::Proxied
            && let Some((port, pid)) = greeter()
        {
            h.egress_target = Some(port);
            h.greeter = Some(pid);
        }
        if let Some(home) = policy.home.as_deref().filter(|h| h.is_dir()) {
            h.home = Some(home_check::Planted::plant(home, &tag));
        }
        if let Some(dir) = socket_dir(policy, &tag) {
            match std::os::unix::net::UnixListener::bind(dir.join("s")) {
                Ok(l) => h.socket = Some((l, dir.join("s"))),
                Err(_) => {
                    std::fs::remove_dir_all(&dir).ok();
                    return h;
                }
            }
            h.socket_dir = Some(dir);
        }
        h
    }
}

impl Drop for HostHelpers {
    fn drop(&mut self) {
        if let Some(c) = &mut self.process {
            c.kill().ok();
            c.wait().ok();
        }
        if let Some(d) = &self.socket_dir {
            std::fs::remove_dir_all(d).ok();
        }
        if let Some(pid) = self.greeter {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
        }
    }
}

fn abstract_listener(name: &str) -> Result<rustix::fd::OwnedFd, rustix::io::Errno> {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketType};
    let s = rustix::net::socket(AddressFamily::UNIX, SocketType::STREAM, None)?;
    rustix::net::bind(&s, &SocketAddrUnix::new_abstract_name(name.as_bytes())?)?;
    rustix::net::listen(&s, 1)?;
    Ok(s)
}

/// A fresh directory the sandbox sees at the same path, outside every
/// writable root, for a socket that must be masked.
fn socket_dir(policy: &Policy, tag: &str) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(r) = std::env::var_os("XDG_RUNTIME_DIR") {
        candidates.push(r.into());
    }
    candidates.push("/var/tmp".into());
    candidates.push("/tmp".into());
    candidates.into_iter().find_map(|base| {
        let base = std::fs::canonicalize(base).ok()?;
        let hidden = base.starts_with("/dev")
            || (policy.settings.tmp.value == crate::policy::TmpMode::Private && base.starts_with("/tmp"));
        let dir = base.join(tag);
        let in_root = policy.writable_roots.iter().any(|r| dir.starts_with(&r.path));
        if hidden || in_root {
            return None;
        }
        std::fs::create_dir(&dir).ok()?;
        Some(dir)
    })
}

/// Runs the whole battery: the in-sandbox checks, then the worktree canary.
pub fn battery(
    inv: &Invocation,
    caller: &Caller,
    policy: &Policy,
    host: &HostFacts,
) -> Result<Report, NoSandbox> {
    let mut helpers = HostHelpers::start(policy);
    // The inventory must include the test socket made just now, and so must
    // the layers the probe checks against: they come from the plan for this
    // host.
    let mut host = host.clone();
    host.unix_sockets = crate::host::probe_sockets();
    let (_, layers) = plan::build(policy, &host).map_err(|r| NoSandbox::Refused(r.message))?;
    let args = probe_args(policy, &host, &layers, &helpers);
    // The test server is listed for the probe's sandbox alone.
    let mut policy_for_probe = policy.clone();
    // The whole-home views hide the home's canaries: the checks ask
    // whether hidden stays hidden.
    if policy.home_listing.is_none()
        && let Some(h) = &helpers.home
    {
        policy_for_probe.hidden.extend(h.hidden());
    }
    if let Some(port) = helpers.egress_target {
        let rule = format!("127.0.0.1:{port}").parse().expect("a valid rule");
        policy_for_probe
            .allowed_domains
            .push(crate::policy::Sourced::new(rule, "verify"));
    }
    // The git check plants inside, then waits while verify looks at the
    // host's git dirs (the sandbox still running), then goes on.
    let mut seen_on_host: Option<Check> = None;
    let mut home = helpers.home.take();
    let mut on_output = |out: &[u8]| {
        if seen_on_host.is_none() && git_check::planted(out) {
            seen_on_host = Some(git_check::look_on_host(&args.git_dirs, &args.workspace));
        }
        if let Some(h) = &mut home {
            h.replace_if_asked(out, &args.workspace);
        }
    };
    let text = run_in_sandbox_with(
        &policy_for_probe,
        &host,
        self_command(args.to_args()),
        &mut on_output,
    )?;
    drop(helpers);
    let mut checks = parse_probe_output(&text)?;
    git_check::settle(&mut checks, seen_on_host);
    git_check::settle_nested(&mut checks, &text, &args.workspace);
    if let Some(h) = &home {
        h.settle(
            &mut checks,
            &args.workspace,
            policy.settings.home.value == crate::policy::HomeMode::ReadOnly,
        );
    }
    drop(home);
    match (&layers.kind, &args.cache_tag) {
        (plan::Isolation::LandlockOnly { .. }, _) => checks.push(Check::not_provided(
            "cache-isolated",
            "a write to a cache stays off the host",
            "no overlay without a mount namespace: the host's caches are read-only here".into(),
        )),
        (plan::Isolation::Namespaces, Some(tag)) => {
            cache_check::settle(&mut checks, &cache_check::with_home(&layers), tag)
        }
        (plan::Isolation::Namespaces, None) => {}
    }
    if let Some(tag) = &args.leftover_tag {
        leftover_check::settle(&mut checks, tag);
    }
    review_check::settle(&mut checks, &policy.workspace, args.review_tag.as_deref());
    checks.push(home_check::other_names(policy.home.as_deref()));
    checks.push(terminal_check::check(policy.settings.share_terminal.value));
    let st = &policy.settings;
    let modes = [
        format!("--pid={}", st.pid.value),
        format!("--landlock={}", st.landlock.value),
        format!("--isolation={}", st.isolation.value),
    ];
    let mut opts: Vec<&str> = modes.iter().map(String::as_str).collect();
    if st.new_session.value {
        opts.push("--new-session");
    }
    checks.push(terminal_check::controlling(st.share_terminal.value, &opts));
    let no_checkout = "the workspace is not a git checkout".into();
    checks.push(if policy.git.checkout == Checkout::None {
        Check::skip("worktree-commit", "worktree commit canary", no_checkout)
    } else {
        canary::run(inv, caller, policy, &host)
    });
    let accept: Vec<String> = policy
        .settings
        .accept_degraded
        .iter()
        .map(|a| a.value.clone())
        .collect();
    let mut report = Report::new(checks, &accept);
    report.isolation = match layers.kind {
        plan::Isolation::LandlockOnly { .. } => "landlock",
        plan::Isolation::Namespaces => report.isolation,
    };
    Ok(report)
}

/// The probe prints its checks as the last line of its output.
pub fn parse_probe_output(text: &str) -> Result<Vec<Check>, NoSandbox> {
    text.lines()
        .rev()
        .find(|l| l.starts_with('['))
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| NoSandbox::NoResult(text.trim_end().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(o: Outcome) -> Check {
        Check {
            name: "x".into(),
            title: "x".into(),
            outcome: o,
            expected: None,
            got: None,
        }
    }

    #[test]
    fn report_counts() {
        let r = Report::new(vec![c(Outcome::Pass), c(Outcome::Skip), c(Outcome::Pass)], &[]);
        assert!(r.verified && r.passed == 2 && r.skipped == 1 && r.failed == 0);
        assert!(!Report::new(vec![c(Outcome::Pass), c(Outcome::Fail)], &[]).verified);
        // Nothing that ran is not a verification.
        assert!(!Report::new(vec![c(Outcome::Skip)], &[]).verified);
        assert!(!Report::new(vec![], &[]).verified);
        // A failure accepted by name is named, and no longer fails.
        let r = Report::new(vec![c(Outcome::Pass), c(Outcome::Fail)], &["x".into()]);
        assert!(r.verified && r.failed == 0 && r.accepted == ["x"]);
        assert!(!Report::new(vec![c(Outcome::Pass), c(Outcome::Fail)], &["y".into()]).verified);
    }

    #[test]
    fn probe_output_parsing() {
        let line = serde_json::to_string(&vec![c(Outcome::Pass)]).unwrap();
        assert_eq!(parse_probe_output(&format!("noise\n{line}\n")).unwrap().len(), 1);
        assert!(parse_probe_output("qwrap: something failed\n").is_err());
        assert!(parse_probe_output("[not json").is_err());
    }
}
