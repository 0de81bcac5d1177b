//! The one interface between the executor and the warden: what the setup
//! hands over, one descriptor per message on a SOCK_SEQPACKET pair, each
//! with the tag that says what it is. Both sides use this table.

use crate::sys::kernel as k;
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;

/// What the executor hands the warden.
#[derive(Debug)]
pub(crate) enum Handed {
    /// The seccomp listener: the last thing handed over; the warden then
    /// answers the sandbox's trapped calls.
    Listener(OwnedFd),
    /// The egress proxy's listening socket, served from outside.
    Egress(OwnedFd),
    /// One of the sandbox's own git dir levels (in `StartWarden`'s order).
    GitDir(OwnedFd),
    /// The pty whose name shows the caller's terminal, held for the
    /// sandbox's life.
    Terminal(OwnedFd),
    /// A pidfd of PID 1 of the sandbox's own PID namespace: no listener
    /// comes, and the sandbox ends with it.
    Init(OwnedFd),
    /// A pidfd of the reaper, which no trapped call may aim at.
    Reaper(OwnedFd),
}

impl Handed {
    fn tag(&self) -> u8 {
        match self {
            Handed::Listener(_) => b'L',
            Handed::Egress(_) => b'P',
            Handed::GitDir(_) => b'G',
            Handed::Terminal(_) => b'T',
            Handed::Init(_) => b'I',
            Handed::Reaper(_) => b'R',
        }
    }

    fn from_tag(tag: u8, fd: OwnedFd) -> Option<Self> {
        Some(match tag {
            b'L' => Handed::Listener(fd),
            b'P' => Handed::Egress(fd),
            b'G' => Handed::GitDir(fd),
            b'T' => Handed::Terminal(fd),
            b'I' => Handed::Init(fd),
            b'R' => Handed::Reaper(fd),
            _ => return None,
        })
    }

    fn fd(&self) -> &OwnedFd {
        match self {
            Handed::Listener(fd)
            | Handed::Egress(fd)
            | Handed::GitDir(fd)
            | Handed::Terminal(fd)
            | Handed::Init(fd)
            | Handed::Reaper(fd) => fd,
        }
    }
}

/// The warden's answer once every git dir level is handed over and filled.
const GIT_DIRS_FILLED: u8 = b'A';

/// qwrap's side of a started warden.
pub(crate) struct WardenLink {
    pub(super) socket: OwnedFd,
    /// The warden, a process of the caller's outside the sandbox that
    /// outlives it: the reaper's proof that its signals are scoped.
    pub(crate) warden: Option<rustix::process::Pid>,
}

impl WardenLink {
    pub(super) fn new(socket: OwnedFd, warden: rustix::process::Pid) -> WardenLink {
        WardenLink {
            socket,
            warden: Some(warden),
        }
    }

    /// `sendmsg(link, tag, SCM_RIGHTS fd)`.
    pub(crate) fn hand_over(&self, what: Handed) -> Result<(), Errno> {
        hand_to(&self.socket, what)
    }

    /// Waits until the warden has filled the sandbox's own git dir levels.
    pub(crate) fn wait_for_git_dirs(&self) -> Result<(), Errno> {
        let mut b = [0u8; 1];
        match k::read(&self.socket, &mut b)? {
            1 if b[0] == GIT_DIRS_FILLED => Ok(()),
            _ => Err(Errno::PIPE),
        }
    }
}

/// `sendmsg(link, tag, SCM_RIGHTS fd)` on a link of the monitor's.
pub(crate) fn hand_to(link: &OwnedFd, what: Handed) -> Result<(), Errno> {
    k::send_fd(link, what.tag(), what.fd().as_fd())?;
    Ok(())
}

/// The warden's side: tells the executor the git dir levels are filled.
pub(super) fn git_dirs_filled(link: &OwnedFd) {
    let _ = k::write(link, &[GIT_DIRS_FILLED]);
}

/// The next thing handed over; None once the executor's end is closed
/// (qwrap failed before the command ran) or on a message of no known tag.
pub(super) fn receive(link: &OwnedFd) -> Option<Handed> {
    let (tag, fd) = k::recv_fd(link).ok()??;
    Handed::from_tag(tag, fd?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_end_hands_nothing_over() {
        crate::sys::fake::start();
        assert!(receive(&crate::sys::fake::fd()).is_none());
        assert_eq!(crate::sys::fake::finish(), ["recvmsg()"]);
    }

    #[test]
    fn every_kind_arrives_as_itself() {
        let (ours, theirs) = k::seqpacket_pair().unwrap();
        let link = WardenLink {
            socket: ours,
            warden: None,
        };
        let null = || k::open("/dev/null", rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty()).unwrap();
        let sent = [
            Handed::Listener(null()),
            Handed::Egress(null()),
            Handed::GitDir(null()),
            Handed::Terminal(null()),
            Handed::Init(null()),
            Handed::Reaper(null()),
        ];
        let tags: Vec<u8> = sent.iter().map(Handed::tag).collect();
        for h in sent {
            link.hand_over(h).unwrap();
        }
        let got: Vec<u8> = (0..tags.len()).map(|_| receive(&theirs).unwrap().tag()).collect();
        assert_eq!(got, tags);
        git_dirs_filled(&theirs);
        link.wait_for_git_dirs().unwrap();
        drop(link);
        assert!(receive(&theirs).is_none(), "a closed link ends the hand-over");
    }
}
