//! A pty of qwrap's own between the command and the caller's terminal.
//!
//! The command never holds the caller's terminal. Before the sandbox is set
//! up, qwrap opens a pty and forks: the child starts a session of its own
//! with the pty as its controlling terminal on the descriptors of 0-2 that
//! were the caller's terminal, and goes on to the plan; the parent stays
//! outside and copies bytes both ways. Nothing the command does to its
//! terminal (TIOCSPGRP, TIOCSWINSZ, TIOCEXCL, TIOCSETD, its modes, a
//! background read) reaches the caller's terminal or a process group of the
//! caller's session, while job control, ^C, the window size and full-screen
//! programs work inside as on any terminal. The caller's terminal is left in
//! the modes it had.

use crate::sys::{self, SysError, kernel as k};
use rustix::event::{PollFd, PollFlags};
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::termios::{self as t, LocalModes, OptionalActions, SpecialCodeIndex, Termios};

/// The signals the relay reads from its signalfd.
/// (Every signal whose default would end or stop the relay with the
/// caller's terminal raw, that a process can send.)
const RELAYED: [i32; 19] = [
    libc::SIGCHLD,
    libc::SIGWINCH,
    libc::SIGCONT,
    libc::SIGTSTP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGXCPU,
    libc::SIGXFSZ,
    libc::SIGSYS,
    libc::SIGIO,
    libc::SIGPWR,
    libc::SIGSTKFLT,
];

/// Why no pty could be had: the call that failed and its errno.
pub type NoPty = (&'static str, Errno);

/// Puts a pty of qwrap's own between the command and the caller's terminal,
/// where one of fds 0-2 is a terminal. Returns in the child only (the
/// parent relays and exits as the child does), or where no pty can be
/// opened at all (no devpts), with why: the terminal layer is then
/// reported degraded.
pub fn interpose() -> Result<Option<NoPty>, SysError> {
    let fds = [
        rustix::stdio::stdin(),
        rustix::stdio::stdout(),
        rustix::stdio::stderr(),
    ];
    let on = fds.map(t::isatty);
    let Some(first) = on.iter().position(|&x| x) else {
        return Ok(None);
    };
    let fd = |n: usize| fds[n];
    let fail = |call: &'static str, args: &'static str| move |e: Errno| SysError::new(call, args, e);
    let (master, pty) = match k::open_pty() {
        Ok(pair) => pair,
        Err(why) => return Ok(Some(why)),
    };
    let saved = t::tcgetattr(fd(first)).ok();
    // Raw where the caller types and reads here; in a pipeline (`| less`)
    // the caller's terminal keeps its line editing and echo.
    let raw = on[0] && on[1];
    if let Some(modes) = &saved {
        let mut inner = modes.clone();
        if on[0] && !raw {
            inner.local_modes.remove(LocalModes::ECHO);
        }
        let _ = t::tcsetattr(&pty, OptionalActions::Now, &inner);
    }
    if let Ok(size) = t::tcgetwinsize(fd(first)) {
        let _ = t::tcsetwinsize(&master, size);
    }
    let dup = |n: usize| k::fcntl_dupfd_cloexec(fd(n), 3).map_err(fail("fcntl", "F_DUPFD_CLOEXEC"));
    let input = if on[0] { Some(dup(0)?) } else { None };
    // Written to: the first of 1, 2 and 0 that is the terminal.
    let output = dup([1, 2, 0].into_iter().find(|&n| on[n]).unwrap_or(first))?;
    let signals = sys::signal_fd(&RELAYED).map_err(fail("signalfd", "SIGCHLD, SIGWINCH, …"))?;
    match sys::fork().map_err(fail("clone", "SIGCHLD"))? {
        None => {
            drop((master, signals, input, output));
            sys::unblock_signals(&RELAYED);
            take(pty, on).map(|()| None)
        }
        Some(child) => {
            // The command's parent: nothing of it for the command (its
            // environment, the caller's terminal on its descriptors). The
            // child goes on to the sandbox, so the relay never returns.
            if let Err(e) = k::not_dumpable() {
                eprintln!("qwrap: the terminal's relay: prctl(PR_SET_DUMPABLE, 0): {e}");
                let _ = sys::send_signal(child, libc::SIGKILL);
                sys::exit_like(Some(125), None);
            }
            // Reads of the pty never wait: poll says when there is more.
            let _ = k::fcntl_setfl(&master, rustix::fs::OFlags::NONBLOCK);
            drop(pty);
            Relay {
                child,
                master,
                input,
                output,
                saved,
                raw,
                raw_on: false,
                pty_open: true,
                pending: Vec::new(),
                signals,
            }
            .run()
        }
    }
}

/// In the child: a session of its own, the pty its controlling terminal
/// and on each of fds 0-2 that held the caller's terminal.
pub(crate) fn take(pty: OwnedFd, on: [bool; 3]) -> Result<(), SysError> {
    k::setsid().map_err(|e| SysError::new("setsid", "", e))?;
    crate::sys::kernel::set_controlling_terminal(&pty)
        .map_err(|e| SysError::new("ioctl", "pty, TIOCSCTTY, 0", e))?;
    for n in (0..3).filter(|&n| on[n]) {
        let copy =
            k::fcntl_dupfd_cloexec(&pty, 3).map_err(|e| SysError::new("fcntl", "F_DUPFD_CLOEXEC", e))?;
        sys::dup_onto(copy, n as i32).map_err(|e| SysError::new("dup3", format!("pty, {n}, 0"), e))?;
    }
    Ok(())
}

/// The parent's side: the caller's terminal and the pty's master.
struct Relay {
    child: i32,
    master: OwnedFd,
    /// The caller's terminal, to read (where fd 0 was it).
    input: Option<OwnedFd>,
    /// The caller's terminal, to write (None once it hung up).
    output: OwnedFd,
    /// The caller's terminal's modes at the start, put back at the end.
    saved: Option<Termios>,
    /// Whether the caller's terminal is made raw while the relay has it.
    raw: bool,
    raw_on: bool,
    /// Until every holder of the pty has closed it (then reads fail EIO).
    pty_open: bool,
    /// Typed input the pty has not taken yet.
    pending: Vec<u8>,
    signals: OwnedFd,
}

impl Relay {
    fn run(mut self) -> ! {
        self.foreground_changed();
        let status = loop {
            if let Some(status) = self.step() {
                break status;
            }
        };
        self.drain();
        self.restore();
        // The command's death by a signal is ours too, which a blocked
        // signal would not be.
        sys::unblock_signals(&RELAYED);
        sys::exit_like(status.exit_status(), status.terminating_signal())
    }

    /// One poll and what it found; the child's status once it has ended.
    fn step(&mut self) -> Option<rustix::process::WaitStatus> {
        let reading = self.input.is_some() && self.pending.is_empty() && self.foreground();
        let master_wants = if self.pending.is_empty() {
            PollFlags::IN
        } else {
            PollFlags::IN | PollFlags::OUT
        };
        let master_wants = if self.pty_open {
            master_wants
        } else {
            PollFlags::empty()
        };
        let mut fds = vec![
            PollFd::new(&self.signals, PollFlags::IN),
            PollFd::new(&self.master, master_wants),
        ];
        if let (true, Some(i)) = (reading, &self.input) {
            fds.push(PollFd::new(i, PollFlags::IN));
        }
        if crate::sys::kernel::poll(&mut fds, None).is_err() {
            return None;
        }
        let ready: Vec<PollFlags> = fds.iter().map(|f| f.revents()).collect();
        drop(fds);
        if !ready[1].is_empty() {
            self.copy_out();
            self.pass_typed();
        }
        if ready.get(2).is_some_and(|r| !r.is_empty()) {
            self.take_typed();
        }
        if ready[0].is_empty() {
            return None;
        }
        let mut ended = None;
        while let Some((sig, code)) = sys::next_signal(&self.signals) {
            ended = ended.or(self.on_signal(sig, code));
        }
        ended
    }

    fn on_signal(&mut self, sig: i32, code: i32) -> Option<rustix::process::WaitStatus> {
        match sig {
            libc::SIGCHLD => {
                use rustix::process::WaitOptions;
                let pid = rustix::process::Pid::from_raw(self.child)?;
                return match k::waitpid(Some(pid), WaitOptions::NOHANG | WaitOptions::UNTRACED) {
                    // A command that stopped itself (`kill -STOP $$`,
                    // bash's `suspend`): the caller's shell gets its
                    // terminal back, as for any stopped job.
                    Ok(Some((_, status))) if status.stopped() => {
                        self.stop_here();
                        let _ = sys::send_signal(self.child, libc::SIGCONT);
                        None
                    }
                    Ok(Some((_, status))) => Some(status),
                    _ => None,
                };
            }
            libc::SIGWINCH => self.pass_size(),
            libc::SIGTSTP => self.stop_here(),
            // After a stop: raw again, and the size it may have got since.
            libc::SIGCONT => {
                self.foreground_changed();
                self.pass_size();
            }
            // The terminal's ^C and ^\ (with its line editing kept) go to
            // the pty's foreground job, as the terminal would send them.
            libc::SIGINT | libc::SIGQUIT if code > 0 => match t::tcgetpgrp(&self.master) {
                Ok(group) => {
                    let _ = sys::send_signal(-group.as_raw_nonzero().get(), sig);
                }
                Err(_) => {
                    let _ = sys::send_signal(self.child, sig);
                }
            },
            _ => {
                let _ = sys::send_signal(self.child, sig);
            }
        }
        None
    }

    fn pass_size(&self) {
        if let Ok(size) = t::tcgetwinsize(&self.output) {
            let _ = t::tcsetwinsize(&self.master, size);
        }
    }

    /// Stops the relay as a job stops, the caller's modes put back first;
    /// returns once it is continued.
    fn stop_here(&mut self) {
        self.restore();
        self.raw_on = false;
        let _ = sys::send_signal(k::getpid().as_raw_nonzero().get(), libc::SIGSTOP);
    }

    /// Whether the relay's process group has the caller's terminal (a
    /// terminal that is not the caller's controlling one counts as had).
    fn foreground(&self) -> bool {
        match t::tcgetpgrp(&self.output) {
            Ok(group) => group.as_raw_nonzero().get() == sys::process_group(),
            Err(_) => true,
        }
    }

    /// Raw again once in the foreground (the caller's shell may have put
    /// its own modes back while the relay was stopped).
    fn foreground_changed(&mut self) {
        if !self.raw || !self.foreground() {
            return;
        }
        if let Some(modes) = &self.saved {
            let mut raw = modes.clone();
            raw.make_raw();
            self.raw_on = t::tcsetattr(&self.output, OptionalActions::Drain, &raw).is_ok();
        }
    }

    fn copy_out(&mut self) -> bool {
        let mut buf = [0u8; 65536];
        match k::read(&self.master, &mut buf) {
            Ok(n) if n > 0 => {
                write_all(&self.output, &buf[..n]);
                true
            }
            Err(Errno::INTR | Errno::AGAIN) => false,
            _ => {
                self.pty_open = false;
                false
            }
        }
    }

    fn pass_typed(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        if let Ok(n) = k::write(&self.master, &self.pending) {
            self.pending.drain(..n);
        }
    }

    fn take_typed(&mut self) {
        let Some(input) = &self.input else { return };
        let mut buf = [0u8; 4096];
        match k::read(input, &mut buf) {
            Ok(0) => match &self.saved {
                // The caller's line editing took ^D: the pty's own reader
                // gets its end of file the same way.
                Some(modes) if !self.raw => self.pending.push(modes.special_codes[SpecialCodeIndex::VEOF]),
                _ => self.input = None,
            },
            Ok(n) => self.pending.extend_from_slice(&buf[..n]),
            Err(Errno::INTR | Errno::AGAIN) => {}
            Err(_) => {
                // The caller's terminal hung up: so does the command's.
                self.input = None;
                let _ = sys::send_signal(self.child, libc::SIGHUP);
            }
        }
        self.pass_typed();
    }

    /// What the command wrote before it ended, still in the pty: until the
    /// last holder of the pty closes it or 50 ms pass with nothing new.
    fn drain(&mut self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        let wait = std::time::Duration::from_millis(50);
        while self.pty_open && std::time::Instant::now() < deadline {
            let mut fds = [PollFd::new(&self.master, PollFlags::IN)];
            if !matches!(crate::sys::kernel::poll(&mut fds, Some(wait)), Ok(n) if n > 0) || !self.copy_out() {
                break;
            }
        }
    }

    fn restore(&mut self) {
        if let (true, Some(modes)) = (self.raw_on, &self.saved) {
            let _ = t::tcsetattr(&self.output, OptionalActions::Drain, modes);
        }
    }
}

fn write_all(fd: &OwnedFd, mut data: &[u8]) {
    while !data.is_empty() {
        match k::write(fd, data) {
            Ok(n) if n > 0 => data = &data[n..],
            Err(Errno::INTR | Errno::AGAIN) => continue,
            _ => return,
        }
    }
}
