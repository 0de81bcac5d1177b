//! The processes beside the sandbox, outside it, and what they do: the
//! warden (warden.rs), which serves its jobs in one loop (jobs.rs): the
//! trapped calls, answered down a chain of handlers (trapped.rs; decoded in
//! calls.rs, made in metadata.rs, judged and said with --explain in
//! explain*), the git dirs kept in step (git_*), the limits (limits.rs)
//! and the command's end; once it has ended, the leftovers (leftovers.rs),
//! the git-lfs objects carried out (lfs_carry), the repositories looked at
//! (planted.rs) and what is said at exit (at_exit.rs); the egress proxy it
//! serves from a thread. Beside it: the reaper inside the sandbox's signal
//! domain (reaper.rs), the monitor and PID 1 of a private PID namespace
//! (monitor.rs), the terminal's relay (terminal.rs). The executor starts
//! the warden and hands it what it needs over one socket (handover.rs:
//! `WardenLink::hand_over`).

mod at_exit;
mod calls;
mod explain;
mod explain_judge;
mod explain_why;
mod git_checkouts;
mod git_dir_risks;
mod git_files;
mod git_objects;
mod git_sync;
pub(crate) mod handover;
mod jobs;
mod leftovers;
mod lfs_carry;
mod limits;
mod metadata;
pub(crate) mod monitor;
mod planted;
mod planted_links;
pub(crate) mod reaper;
mod refusal;
pub mod terminal;
mod trapped;
pub mod warden;
