//! verify's terminal check, on the host side: a pty stands for the caller's
//! terminal, a child of a fresh qwrap takes it as its controlling terminal
//! and goes through the same interposition `run` makes
//! (supervise/terminal.rs), then does what a command may do to its
//! terminal: exclusive mode, another line discipline, raw modes, a window
//! size. The stand-in for the caller's terminal must be as it was.

use super::Check;
use crate::sys;
use rustix::pty::OpenptFlags;
use rustix::termios as t;

const NAME: &str = "terminal";
const TITLE: &str = "the caller's terminal is out of the command's reach (a pty of qwrap's own)";
const EXPECTED: &str = "the caller's terminal as it was: not exclusive, its line discipline and modes";

/// The check: given up by --share-terminal, tried otherwise.
pub(super) fn check(shared: bool) -> Check {
    if shared {
        return Check::fail(
            NAME,
            TITLE,
            EXPECTED,
            "--share-terminal: the command holds the caller's terminal".into(),
        );
    }
    super::attempts::in_fresh_qwrap("--terminal-route", |text| {
        Check::fail(NAME, TITLE, EXPECTED, format!("no result: {text}"))
    })
}

/// The fresh qwrap's half: prints the check as JSON.
pub fn attempt() -> String {
    let check = match tried() {
        Ok(()) => Check::pass(NAME, TITLE),
        Err(got) => Check::fail(NAME, TITLE, EXPECTED, got),
    };
    serde_json::to_string(&check).expect("check serialises")
}

fn tried() -> Result<(), String> {
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY;
    let master = rustix::pty::openpt(flags).map_err(|e| format!("openpt: {e}"))?;
    rustix::pty::grantpt(&master).map_err(|e| format!("grantpt: {e}"))?;
    rustix::pty::unlockpt(&master).map_err(|e| format!("unlockpt: {e}"))?;
    let caller = rustix::pty::ioctl_tiocgptpeer(&master, flags).map_err(|e| format!("TIOCGPTPEER: {e}"))?;
    let before = t::tcgetattr(&caller).map_err(|e| format!("tcgetattr: {e}"))?;
    match sys::fork().map_err(|e| format!("fork: {e}"))? {
        None => {
            let code = i32::from(as_the_command(caller).is_err());
            sys::exit_like(Some(code), None)
        }
        Some(child) => {
            let status = sys::wait_child(child).map_err(|e| format!("wait: {e}"))?;
            if status.exit_status() != Some(0) {
                return Err(format!("the stand-in for the command failed: {status:?}"));
            }
            let mut seen = Vec::new();
            if sys::terminal_exclusive(&caller) != Ok(false) {
                seen.push("exclusive".to_string());
            }
            if sys::terminal_line_discipline(&caller, None) != Ok(0) {
                seen.push("another line discipline".into());
            }
            // Termios has no PartialEq; its Debug form shows every field.
            if format!("{:?}", t::tcgetattr(&caller).ok()) != format!("{:?}", Some(before)) {
                seen.push("its modes changed".into());
            }
            if seen.is_empty() {
                Ok(())
            } else {
                Err(seen.join(", "))
            }
        }
    }
}

/// In the child: the pty as its terminal, then qwrap's own between them,
/// then what a command may do to its terminal, on fd 0 and /dev/tty.
fn as_the_command(caller: rustix::fd::OwnedFd) -> Result<(), ()> {
    // As the caller's shell gives its job the terminal, on all of 0-2.
    crate::supervise::terminal::take(caller, [true; 3]).map_err(drop)?;
    crate::supervise::terminal::interpose().map_err(drop)?;
    let tty = crate::sys::kernel::open("/dev/tty", rustix::fs::OFlags::RDWR, rustix::fs::Mode::empty()).ok();
    for fd in [
        Some(rustix::stdio::stdin()),
        tty.as_ref().map(rustix::fd::AsFd::as_fd),
    ]
    .into_iter()
    .flatten()
    {
        let _ = sys::set_terminal_exclusive(fd);
        let _ = sys::terminal_line_discipline(fd, Some(27));
        if let Ok(mut m) = t::tcgetattr(fd) {
            m.make_raw();
            let _ = t::tcsetattr(fd, t::OptionalActions::Now, &m);
        }
    }
    Ok(())
}
