//! The executor: the one module that makes setup syscalls. It runs a Plan's
//! steps in order and stops at the first failure; nothing after a failed step
//! runs, and the command runs only as the last step.

mod caps;
mod capture;
mod command;
mod error;
mod hidden;
mod hints;
mod host_steps;
mod in_root;
mod landlock;
mod mount_point;
mod mounts_steps;
mod namespaces_steps;
mod overlay;
mod process_steps;
mod remount;
mod reroot;
mod seccomp;

#[cfg(test)]
mod fake_samples;
#[cfg(test)]
mod fake_tests;

pub use capture::{Captured, capture, capture_with};
pub use error::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_SETUP, SetupError};

use crate::host::mountinfo;
use crate::plan::Exec;
use crate::plan::{Flags, Plan, Step, View};
use crate::sys;
use crate::sys::kernel as k;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{CWD, Mode, OFlags};
use rustix::io::Errno;
use rustix::mount::{MountFlags, MountPropagationFlags, MoveMountFlags, OpenTreeFlags};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// How the executor reports progress.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Print each step to stderr before running it.
    pub trace: bool,
    /// Print how long each step took, just before the command runs.
    pub timing: bool,
}

/// Runs the plan. On success the process has become the command, so this
/// only ever returns the error that stopped it.
pub fn execute(plan: &Plan, opts: Options) -> SetupError {
    let mut ex = Executor::new(plan.tree_count(), plan.new_root.clone());
    let mut times: Vec<std::time::Duration> = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if opts.trace {
            // One write(2) per step: a syscall trace can cut at it.
            let line = format!("qwrap: step {i}: {step}{}\n", ex.trace_note(step));
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        }
        if opts.timing && matches!(step, Step::Exec(Exec { .. })) {
            print_timing(plan, &times);
        }
        #[cfg(feature = "fault-injection")]
        if let Some(err) = fault::injected(i, step) {
            std::mem::forget(ex.warden.take());
            return err;
        }
        let start = std::time::Instant::now();
        if let Err(fail) = ex.run(step) {
            // The warden learns that the setup failed when its link closes;
            // it then empties and removes the sandbox's cgroups, which this
            // process may have joined: the link closes only as it exits.
            std::mem::forget(ex.warden.take());
            return fail.into_error(i, step);
        }
        times.push(start.elapsed());
    }
    // The last step is always Exec, which either replaced the process or failed.
    SetupError::new(plan.steps.len(), &Step::NoNewPrivs, libc::EINVAL)
}

fn print_timing(plan: &Plan, times: &[std::time::Duration]) {
    let total: std::time::Duration = times.iter().sum();
    for (i, (step, t)) in plan.steps.iter().zip(times).enumerate() {
        eprintln!(
            "qwrap: time: step {i:>3} {:>8.1} µs  {}",
            t.as_secs_f64() * 1e6,
            step.purpose()
        );
    }
    eprintln!("qwrap: time: setup steps {:>8.1} µs", total.as_secs_f64() * 1e6);
}

/// Test builds only (cargo feature `fault-injection`, never in release
/// builds): `QWRAP_FAULT_STEP=K` makes step K fail as if its syscall had
/// returned EIO, so that tests can prove every step fails closed.
#[cfg(feature = "fault-injection")]
mod fault {
    use super::{Fail, SetupError, Step};

    pub(super) fn injected(index: usize, step: &Step) -> Option<SetupError> {
        let k: usize = std::env::var("QWRAP_FAULT_STEP").ok()?.parse().ok()?;
        if k != index {
            return None;
        }
        let mut e = Fail::with(
            rustix::io::Errno::IO,
            "fault injected by QWRAP_FAULT_STEP (test build)",
        )
        .into_error(index, step);
        // The command never ran, even when the failing step is its exec.
        e.at_exec = false;
        Some(e)
    }
}

/// A failed step, before it is dressed as a SetupError: the errno, the
/// exact call that gave it (the seam's SysError) where the step makes
/// several, and a note where the kernel or the executor said more.
struct Fail {
    errno: Errno,
    call: Option<crate::sys::SysError>,
    note: Option<String>,
}

impl From<Errno> for Fail {
    fn from(errno: Errno) -> Self {
        Fail {
            errno,
            call: None,
            note: None,
        }
    }
}

impl From<crate::sys::SysError> for Fail {
    fn from(e: crate::sys::SysError) -> Self {
        Fail {
            errno: e.errno,
            call: Some(e),
            note: None,
        }
    }
}

impl Fail {
    /// The exact call that failed, with its arguments.
    fn call(call: &'static str, args: impl Into<String>, errno: Errno) -> Self {
        crate::sys::SysError::new(call, args, errno).into()
    }

    /// A failure with a note (the kernel's words, what was being read).
    fn with(errno: Errno, note: impl Into<String>) -> Self {
        let note = note.into();
        Fail {
            errno,
            call: None,
            note: (!note.is_empty()).then_some(note),
        }
    }

    fn into_error(self, index: usize, step: &Step) -> SetupError {
        let raw = self.errno.raw_os_error();
        let mut e = SetupError::new(index, step, raw);
        e.failed_call = self.call.map(|c| c.to_string());
        e.detail = self.note;
        e.hint = hints::for_step(step, raw);
        e
    }
}

struct Executor {
    /// Detached mount trees from `open_tree`, by TreeId.
    trees: Vec<Option<OwnedFd>>,
    /// Our parent when setup began, to detect it dying before PDEATHSIG is set.
    parent: Option<rustix::process::Pid>,
    /// Set by DieWithParent: the child of every later fork dies with its
    /// parent too.
    die_with_parent: bool,
    /// The mount table, read once by the first legacy read-only remount.
    mounts: Option<Vec<mountinfo::MountEntry>>,
    /// bwrap mode: what the sandbox tells its monitor.
    monitor: crate::supervise::monitor::MonitorLink,
    /// /proc as the sandbox started, for steps after the root has changed.
    proc: Option<OwnedFd>,
    /// bwrap mode: the new root, inside which destinations are resolved.
    root: Option<in_root::NewRoot>,
    /// The working directory entered, the command's PWD.
    pwd: Option<std::path::PathBuf>,
    /// bwrap mode: the caller's seccomp programs, installed just before execve.
    filters: Vec<Vec<libc::sock_filter>>,
    /// The link to the warden, until the listener is handed over.
    warden: Option<crate::supervise::handover::WardenLink>,
    /// What hidden paths are covered with.
    hidden: Option<hidden::Source>,
    /// Locks the warden holds for the sandbox's life (the cache layer slot).
    held: Vec<OwnedFd>,
}

impl Executor {
    fn new(trees: usize, new_root: Option<std::path::PathBuf>) -> Self {
        Executor {
            trees: (0..trees).map(|_| None).collect(),
            parent: k::getppid(),
            die_with_parent: false,
            mounts: None,
            monitor: crate::supervise::monitor::MonitorLink::default(),
            proc: None,
            root: new_root.map(in_root::NewRoot::new),
            pwd: None,
            filters: Vec::new(),
            warden: None,
            hidden: None,
            held: Vec::new(),
        }
    }

    /// One step, by its family.
    fn run(&mut self, step: &Step) -> Result<(), Fail> {
        match step.view() {
            View::Host(s) => self.host_step(s),
            View::Namespace(s) => self.namespace_step(s),
            View::Mount(s) => self.mount_step(s),
            View::Process(s) => self.process_step(s),
        }
    }

    /// What the trace adds to a step, from what the executor holds: the
    /// calls that resolve paths in the new root, and the caller's seccomp
    /// programs that go in just before execve.
    fn trace_note(&self, step: &Step) -> String {
        let mut note = String::new();
        if let Some(root) = &self.root
            && root.holds_a_path_of(&step.to_string())
        {
            note.push_str(
                " (each path in the new root reached by open(the root, O_PATH) and openat2(RESOLVE_IN_ROOT))",
            );
        }
        if matches!(step, Step::Exec(Exec { .. })) && self.monitor.will_announce() {
            note.push_str(" (first write(status pipe, \"S\") for the monitor's exit-code)");
        }
        if matches!(step, Step::Exec(Exec { .. })) && !self.filters.is_empty() {
            note.push_str(&format!(
                " (first the caller's {} seccomp program(s): prctl(PR_SET_SECCOMP))",
                self.filters.len()
            ));
        }
        note
    }

    /// A destination: inside the new root when the plan has one (bwrap
    /// mode), else as named.
    fn place(&self, path: &std::path::Path, create: bool) -> Result<in_root::Placed, Errno> {
        match &self.root {
            Some(root) => root.place(path, create),
            None => Ok(in_root::Placed::as_named(path)),
        }
    }

    /// Where /proc is: under the old root once the legacy path has pivoted.
    fn proc_dir(&self) -> std::path::PathBuf {
        self.root
            .as_ref()
            .map_or_else(|| "/proc".into(), |r| r.proc().to_path_buf())
    }

    /// Where a tree is kept; a plan naming a tree it did not count is refused.
    fn slot(&mut self, id: usize) -> Result<&mut Option<OwnedFd>, Errno> {
        self.trees.get_mut(id).ok_or(Errno::INVAL)
    }

    fn tree(&self, id: usize) -> Result<&OwnedFd, Errno> {
        self.trees.get(id).and_then(Option::as_ref).ok_or(Errno::BADF)
    }
}

/// Writes a /proc control file in one write(2), as the kernel requires.
fn write_proc(path: &str, data: &[u8]) -> Result<(), Errno> {
    write_at(&rustix::fs::CWD, path, data)
}

fn write_at<Fd: rustix::fd::AsFd, P: rustix::path::Arg>(dir: &Fd, path: P, data: &[u8]) -> Result<(), Errno> {
    let fd = k::openat(dir, path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    let n = k::write(&fd, data)?;
    if n != data.len() {
        return Err(Errno::IO);
    }
    Ok(())
}
