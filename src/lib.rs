//! qwrap: confine a command behind a read-only view of the host, with
//! writable roots, a minimal /dev and an optional private network, by calling
//! the kernel directly.
//!
//! The library's surface is [`sandbox::Sandbox`]: a builder over what `qwrap run`
//! takes, with its plan, its reports (`inspect`, `verify`) and the run
//! (examples/plan.rs). The modules below it are public for the `qwrap`
//! binary and its tests; they are no stable interface.
//!
//! Policy → Plan → execute: [`policy`] resolves what the user asked for,
//! [`plan`] turns it into ordered setup steps (pure), and [`exec`] makes the
//! syscalls; [`supervise`] holds the processes beside the sandbox (the
//! warden and its jobs). `unsafe` lives only in [`sys`], the workspace's
//! qwrap-sys crate; here it is forbidden.

#![forbid(unsafe_code)]

pub mod bwrap;
pub mod cache_layers;
pub mod commands;
pub mod egress;
pub mod errno;
pub mod exec;
pub mod exit;
mod git_receive;
mod git_rules;
pub mod host;
mod lossy;
pub mod plan;
pub mod policy;
pub mod report;
pub mod review;
pub mod sandbox;
pub mod supervise;
/// The raw system calls and the kernel seam, a crate of their own: the
/// only place `unsafe` is allowed.
pub use qwrap_sys as sys;
pub mod verify;

/// The version, as built.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
