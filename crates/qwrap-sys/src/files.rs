//! The executor's calls on names beside kernel.rs's: a second name for a
//! file. Recorded by the fake as strace shows them.

use super::fake::faked;
use rustix::fs::{AtFlags, CWD};
use rustix::io::Errno;
use rustix::path::Arg;

/// A second name for a file, never through a link (no AT_SYMLINK_FOLLOW).
pub fn link<P: Arg, Q: Arg>(from: P, to: Q) -> Result<(), Errno> {
    faked!("linkat", args: format!("{:?}, {:?}", from.to_string_lossy(), to.to_string_lossy()), Ok(()));
    rustix::fs::linkat(CWD, from, CWD, to, AtFlags::empty())
}
