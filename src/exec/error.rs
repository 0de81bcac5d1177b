//! A failed setup step, reported the same way everywhere:
//! `qwrap: <what failed>: <syscall>(<args>): <errno text>` and a `hint:`.

use crate::errno::errno_text;
use crate::plan::Exec;
use crate::plan::Step;
use std::fmt;

/// Exit status when qwrap itself failed and the command never ran.
pub const EXIT_SETUP: i32 = crate::exit::SETUP as i32;
/// Exit status when the command was found but could not be executed.
pub const EXIT_NOT_EXECUTABLE: i32 = crate::exit::NOT_EXECUTABLE as i32;
/// Exit status when the command was not found.
pub const EXIT_NOT_FOUND: i32 = crate::exit::NOT_FOUND as i32;

/// The step that failed, how, and what may help.
#[derive(Debug, Clone)]
pub struct SetupError {
    pub index: usize,
    pub purpose: String,
    pub call: String,
    pub errno: i32,
    /// The exact call that failed, with its arguments, where the step
    /// makes several.
    pub failed_call: Option<String>,
    /// Extra detail from the executor (e.g. which submount), if any.
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// Whether the failing step was the final `execve` of the command.
    pub at_exec: bool,
}

impl SetupError {
    pub fn new(index: usize, step: &Step, errno: i32) -> Self {
        Self {
            index,
            purpose: step.purpose(),
            call: step.to_string(),
            errno,
            failed_call: None,
            detail: None,
            hint: None,
            at_exec: matches!(step, Step::Exec(Exec { .. })),
        }
    }

    /// 125, or 126/127 when only the final exec failed.
    pub fn exit_code(&self) -> i32 {
        if !self.at_exec {
            EXIT_SETUP
        } else if self.errno == libc::ENOENT {
            EXIT_NOT_FOUND
        } else {
            EXIT_NOT_EXECUTABLE
        }
    }
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "qwrap: {}: {}", self.purpose, self.call)?;
        if let Some(c) = &self.failed_call {
            write!(f, ": failed at {c}")?;
        }
        if let Some(d) = &self.detail {
            write!(f, ": {d}")?;
        }
        write!(f, ": {}", errno_text(self.errno))?;
        if let Some(h) = &self.hint {
            write!(f, "\nhint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SetupError {}
