//! The worktree canary: in a disposable linked worktree of the workspace's
//! repository, change a tracked file and `git commit` inside a sandbox built
//! from the same settings. It proves both git roots of a linked worktree are
//! granted and enough.

use super::{Check, run_in_sandbox};
use crate::host::HostFacts;
use crate::policy::{self, Caller, Checkout, Invocation, Policy};
use std::path::Path;
use std::process::Command;

const NAME: &str = "worktree-commit";
const TITLE: &str = "worktree commit canary";
const MESSAGE: &str = "qwrap verify canary";

/// Variables that would redirect git away from the worktree under test.
const GIT_REDIRECTS: [&str; 7] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CEILING_DIRECTORIES",
];

/// Host-side git, deaf to the caller's GIT_* redirections.
fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir).env("LC_ALL", "C");
    for k in GIT_REDIRECTS {
        c.env_remove(k);
    }
    c
}

fn run_git(c: &mut Command) -> Result<String, String> {
    match c.output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
        Err(e) => Err(format!("cannot run git: {e}")),
    }
}

pub(super) fn run(inv: &Invocation, caller: &Caller, policy: &Policy, host: &HostFacts) -> Check {
    let Some(top) = policy.git.top.as_deref() else {
        return Check::skip(NAME, TITLE, "no checkout top".into());
    };
    if run_git(git(top).args(["rev-parse", "--verify", "-q", "HEAD"])).is_err() {
        return Check::skip(NAME, TITLE, "the repository has no commit yet".into());
    }
    let base = match ScratchDir::new() {
        Ok(d) => d,
        Err(e) => return Check::fail(NAME, TITLE, "a disposable worktree", format!("temp dir: {e}")),
    };
    let wt = base.0.join("wt");
    if let Err(e) = run_git(
        git(top)
            .args(["worktree", "add", "--detach", "-q"])
            .arg(&wt)
            .arg("HEAD"),
    ) {
        return Check::fail(
            NAME,
            TITLE,
            "a disposable worktree",
            format!("git worktree add: {e}"),
        );
    }
    let result = commit_inside(inv, caller, host, &wt);
    // Remove the worktree whatever happened; the temp dir goes with `base`.
    run_git(git(top).args(["worktree", "remove", "--force"]).arg(&wt)).ok();
    run_git(git(top).args(["worktree", "prune"])).ok();
    result
}

fn commit_inside(inv: &Invocation, caller: &Caller, host: &HostFacts, wt: &Path) -> Check {
    let script = format!(
        "f=$(git ls-files | head -n 1); [ -n \"$f\" ] || f=.qwrap-canary
         echo qwrap-canary >> \"$f\" && git add -- \"$f\" &&
         git -c user.name=qwrap-verify -c user.email=verify@qwrap.invalid -c commit.gpgsign=false \
             commit -q --no-verify -a -m '{MESSAGE}' && git log -1 --format=%s"
    );
    let mut inv = inv.clone();
    inv.workspace = Some(wt.to_path_buf());
    inv.command = vec!["sh".into(), "-c".into(), script.into()];
    inv.unsetenv.extend(GIT_REDIRECTS.iter().map(|k| k.into()));
    let policy = match policy::load(&inv, caller) {
        Ok((p, _)) => p,
        Err(e) => return Check::fail(NAME, TITLE, "a policy for the worktree", e.to_string()),
    };
    if policy.git.checkout != Checkout::LinkedWorktree {
        return Check::fail(
            NAME,
            TITLE,
            "a linked worktree",
            format!(
                "{} ({})",
                policy.git.checkout,
                policy.git.note.clone().unwrap_or_default()
            ),
        );
    }
    let ungranted: Vec<String> = policy
        .git
        .roots
        .iter()
        .filter(|g| !policy.writable_roots.iter().any(|r| g.starts_with(&r.path)))
        .map(|g| g.display().to_string())
        .collect();
    if policy.git.roots.len() != 2 || !ungranted.is_empty() {
        return Check::fail(
            NAME,
            TITLE,
            "both git roots granted",
            format!("not granted: {}", ungranted.join(", ")),
        );
    }
    match run_in_sandbox(&policy, host, inv.command.clone()) {
        // qwrap's own notes at the end (a file the worktree's making left
        // within the start's tick) are not the command's output.
        Ok(out) if out.lines().rfind(|l| !l.starts_with("qwrap: ")) == Some(MESSAGE) => {
            Check::pass(NAME, TITLE)
        }
        Ok(out) => Check::fail(NAME, TITLE, "git commit succeeds", out.trim().to_string()),
        Err(e) => Check::fail(NAME, TITLE, "git commit succeeds", e.to_string()),
    }
}

/// A fresh directory in the host's temp dir, removed on drop.
struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    fn new() -> std::io::Result<Self> {
        use std::time::{SystemTime, UNIX_EPOCH};
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let p = std::env::temp_dir().join(format!("qwrap-canary-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&p)?;
        Ok(ScratchDir(p))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}
