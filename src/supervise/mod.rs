//! The processes beside the sandbox, outside it, and what they do: the
//! warden (warden.rs) and its jobs — the trapped calls it decodes (calls,
//! metadata) and explains (explain*), the leftovers it ends (leftovers),
//! the git dirs it keeps in step (git_*) and the git-lfs objects it
//! carries out (lfs_carry), the repositories it looks at when the
//! sandbox ends (planted), the limits it watches
//! (limits), what it says at exit (at_exit), the egress proxy it serves;
//! the reaper inside the sandbox's signal domain (reaper); the monitor and
//! PID 1 of a private PID namespace (monitor); the terminal's relay
//! (terminal). The executor starts the warden and hands it what it needs
//! over one socket (handover.rs: `WardenLink::hand_over`).

mod at_exit;
mod calls;
mod explain;
mod explain_judge;
mod explain_why;
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
pub(crate) mod reaper;
pub mod terminal;
mod trapped;
pub mod warden;
