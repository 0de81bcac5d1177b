//! The processes beside the sandbox, outside it: the warden (seccomp
//! notifications, the leftovers' end, the locks it holds, the egress proxy's
//! host) and its jobs — the trapped calls it decodes, the leftovers it ends,
//! the git dirs it keeps in step. The executor starts the warden and hands
//! it what it needs over one socket (warden.rs: `Link` and `hand_over_*`).

mod at_exit;
mod calls;
mod explain;
mod explain_judge;
mod explain_why;
mod git_files;
mod git_objects;
mod git_sync;
pub(crate) mod handover;
mod leftovers;
mod limits;
mod metadata;
pub(crate) mod monitor;
mod planted;
pub(crate) mod reaper;
pub mod terminal;
pub mod warden;
