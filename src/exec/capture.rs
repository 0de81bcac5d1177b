//! Running a plan in a forked child with its output captured: how inspect
//! and verify observe a real sandbox without becoming one.

use super::{EXIT_SETUP, Options, execute};
use crate::plan::Plan;
use crate::sys::kernel as k;
use crate::sys::wait_child;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// What a sandbox run in a child process printed, and how it ended.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The exit code, or None when killed by a signal.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// stdout and stderr, interleaved as written.
    pub output: Vec<u8>,
}

/// Runs the plan in a forked child (same policy, same steps) with stdin from
/// /dev/null and stdout+stderr captured, and waits for it. Used by inspect and
/// verify, which must observe a real sandbox without becoming one.
pub fn capture(plan: &Plan) -> Result<Captured, Errno> {
    capture_with(plan, &mut |_| {})
}

/// As `capture`, showing `on_output` all the output so far each time more
/// arrives, while the sandbox still runs.
pub fn capture_with(plan: &Plan, on_output: &mut dyn FnMut(&[u8])) -> Result<Captured, Errno> {
    use rustix::pipe::{PipeFlags, pipe_with};
    let (r, w) = pipe_with(PipeFlags::CLOEXEC)?;
    let devnull = k::open("/dev/null", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    // qwrap never starts threads, so the child is an exact copy of a
    // single-threaded process and may allocate, print and run the plan like
    // the parent could. The parent only reads the pipe and waits.
    let Some(pid) = crate::sys::fork()? else {
        let redirected = rustix::stdio::dup2_stdin(&devnull)
            .and_then(|_| rustix::stdio::dup2_stdout(&w))
            .and_then(|_| rustix::stdio::dup2_stderr(&w));
        if redirected.is_err() {
            std::process::exit(EXIT_SETUP);
        }
        let err = execute(plan, Options::default());
        eprintln!("{err}");
        std::process::exit(err.exit_code());
    };
    drop(w);
    let mut output = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match k::read(&r, &mut buf) {
            Ok(0) => break,
            Ok(n) => {
                output.extend_from_slice(&buf[..n]);
                on_output(&output);
            }
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
    let status = wait_child(pid)?;
    Ok(Captured {
        code: status.exit_status(),
        signal: status.terminating_signal(),
        output,
    })
}
