//! A failed system call as the seam reports it: the call, its arguments as
//! strace would show them, and the kernel's errno. The executor wraps it
//! with the step it belongs to.

use rustix::io::Errno;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysError {
    /// The system call (`landlock_add_rule`, `open_tree`…).
    pub call: &'static str,
    /// Its arguments, or what the call was about (a path); may be empty.
    pub args: String,
    pub errno: Errno,
}

impl SysError {
    pub fn new(call: &'static str, args: impl Into<String>, errno: Errno) -> Self {
        SysError {
            call,
            args: args.into(),
            errno,
        }
    }
}

impl fmt::Display for SysError {
    /// `call(args)`; the errno is the caller's to word.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.call, self.args)
    }
}

impl std::error::Error for SysError {}
