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

const CTTY_NAME: &str = "controlling-terminal";
const CTTY_TITLE: &str = "with no terminal on fds 0-2, the caller's controlling terminal is out of reach";

/// The caller's terminal only as the command's controlling one (an agent's
/// pipes on fds 0-2): a real `qwrap run` with the mode's options (`opts`),
/// in a session whose controlling terminal is a stand-in pty, runs qwrap's
/// probe, which opens /dev/tty and sets exclusive mode and a window size
/// there. The stand-in must be as it was.
pub(super) fn controlling(shared: bool, opts: &[&str]) -> Check {
    if shared {
        return Check::fail(
            CTTY_NAME,
            CTTY_TITLE,
            EXPECTED,
            "--share-terminal: the command holds the caller's terminal".into(),
        );
    }
    let mut args = vec!["--controlling-terminal-route"];
    args.extend_from_slice(opts);
    super::attempts::in_fresh_qwrap_with(&args, |text| {
        Check::fail(CTTY_NAME, CTTY_TITLE, EXPECTED, format!("no result: {text}"))
    })
}

/// The fresh qwrap's half: prints the check as JSON.
pub fn controlling_attempt(opts: &[String]) -> String {
    let check = match controlling_tried(opts) {
        Ok(()) => Check::pass(CTTY_NAME, CTTY_TITLE),
        Err(got) => Check::fail(CTTY_NAME, CTTY_TITLE, EXPECTED, got),
    };
    serde_json::to_string(&check).expect("check serialises")
}

fn controlling_tried(opts: &[String]) -> Result<(), String> {
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY;
    let master = rustix::pty::openpt(flags).map_err(|e| format!("openpt: {e}"))?;
    rustix::pty::grantpt(&master).map_err(|e| format!("grantpt: {e}"))?;
    rustix::pty::unlockpt(&master).map_err(|e| format!("unlockpt: {e}"))?;
    let caller = rustix::pty::ioctl_tiocgptpeer(&master, flags).map_err(|e| format!("TIOCGPTPEER: {e}"))?;
    let size = t::Winsize {
        ws_row: 33,
        ws_col: 101,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    t::tcsetwinsize(&caller, size).map_err(|e| format!("TIOCSWINSZ: {e}"))?;
    // By its path: named /proc/self/exe it would take itself for bwrap.
    let exe = std::env::current_exe().map_err(|e| format!("/proc/self/exe: {e}"))?;
    let mut run = std::process::Command::new(exe);
    run.arg("run")
        .args(opts)
        .args(["--", "/proc/self/exe", super::PROBE_COMMAND, "--open-tty"]);
    run.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let ctty = caller.try_clone().map_err(|e| format!("dup: {e}"))?;
    let out = crate::sys::spawn_in_session(run, ctty).map_err(|e| format!("qwrap run: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "qwrap run failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut seen = Vec::new();
    if sys::terminal_exclusive(&caller) != Ok(false) {
        seen.push("exclusive".to_string());
    }
    if t::tcgetwinsize(&caller).ok().map(|w| (w.ws_row, w.ws_col)) != Some((33, 101)) {
        seen.push("its window size changed".into());
    }
    if seen.is_empty() {
        Ok(())
    } else {
        Err(seen.join(", "))
    }
}

/// Inside: what a command may do to a terminal it can open by /dev/tty.
pub fn open_tty() {
    let Ok(tty) = crate::sys::kernel::open("/dev/tty", rustix::fs::OFlags::RDWR, rustix::fs::Mode::empty())
    else {
        return;
    };
    let _ = sys::set_terminal_exclusive(&tty);
    let size = t::Winsize {
        ws_row: 5,
        ws_col: 7,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let _ = t::tcsetwinsize(&tty, size);
}
