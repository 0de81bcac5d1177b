//! The warden's jobs and its one loop. A job names the descriptor it waits
//! on and how long the loop may wait before calling it anyway; after each
//! poll every job is called, in order, with what its descriptor showed,
//! and a job may end the loop (the command's exit, the filter's last
//! holder gone). The git copies (git_sync.rs), the limits (limits.rs), the
//! command's end (here) and the trapped calls (trapped.rs) are jobs.

use super::calls::Sandbox;
use super::git_sync::GitSync;
use super::limits::Limits;
use crate::sys::kernel as k;
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::io::Errno;
use std::time::Duration;

/// What ended the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// The process the warden watches exited (the command, or PID 1 of a
    /// PID namespace of the sandbox's own).
    Command,
    /// No process holds the filter any more: everything inside is gone.
    Calls,
}

/// One job's answer to its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Turn {
    Go,
    End(Ended),
}

/// Something the warden tends while the sandbox lives.
pub(super) trait Job {
    /// The descriptor it waits on (None: none now).
    fn fd(&self) -> Option<BorrowedFd<'_>>;
    /// How long the loop may wait before calling it anyway (None: only
    /// when its descriptor is ready).
    fn timeout(&self) -> Option<Duration> {
        None
    }
    /// Its turn after a poll: `events`, what its descriptor showed (empty
    /// where its time came, or another's descriptor was ready).
    fn ready(&mut self, events: PollFlags) -> Turn;
}

/// Polls the jobs and gives each its turn until one ends the loop: what
/// ended it, or None where poll fails.
pub(super) fn serve(jobs: &mut [&mut dyn Job]) -> Option<Ended> {
    loop {
        let events = poll(jobs)?;
        for (job, events) in jobs.iter_mut().zip(events) {
            if let Turn::End(ended) = job.ready(events) {
                return Some(ended);
            }
        }
    }
}

/// One poll over every job's descriptor, until the soonest timeout: the
/// events each job's descriptor showed.
fn poll(jobs: &[&mut dyn Job]) -> Option<Vec<PollFlags>> {
    let fds: Vec<Option<BorrowedFd<'_>>> = jobs.iter().map(|j| j.fd()).collect();
    let mut polled: Vec<PollFd<'_>> = fds
        .iter()
        .flatten()
        .map(|fd| PollFd::from_borrowed_fd(*fd, PollFlags::IN))
        .collect();
    let timeout = jobs.iter().filter_map(|j| j.timeout()).min();
    match k::poll(&mut polled, timeout) {
        Ok(_) | Err(Errno::INTR) => {}
        Err(_) => return None,
    }
    let mut seen = polled.iter().map(PollFd::revents);
    Some(
        fds.iter()
            .map(|fd| match fd {
                Some(_) => seen.next().unwrap_or(PollFlags::empty()),
                None => PollFlags::empty(),
            })
            .collect(),
    )
}

/// The end of the process a pidfd names.
pub(super) struct Exit<'a>(pub &'a OwnedFd);

impl Job for Exit<'_> {
    fn fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.0.as_fd())
    }

    fn ready(&mut self, events: PollFlags) -> Turn {
        if events.is_empty() {
            Turn::Go
        } else {
            Turn::End(Ended::Command)
        }
    }
}

impl Job for GitSync {
    fn fd(&self) -> Option<BorrowedFd<'_>> {
        Some(GitSync::fd(self))
    }

    fn timeout(&self) -> Option<Duration> {
        self.retry()
    }

    fn ready(&mut self, events: PollFlags) -> Turn {
        self.tend(!events.is_empty());
        Turn::Go
    }
}

/// The limits, and the processes a limit reached is signalled in where no
/// group lists them.
pub(super) struct Limited<'a> {
    pub limits: &'a mut Limits,
    pub sandbox: Option<&'a Sandbox>,
}

impl Job for Limited<'_> {
    fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.limits.fd()
    }

    fn timeout(&self) -> Option<Duration> {
        self.limits.timeout()
    }

    fn ready(&mut self, events: PollFlags) -> Turn {
        let sandbox = self.sandbox;
        self.limits.tend(!events.is_empty(), &mut |sig| {
            if let Some(s) = sandbox {
                s.signal_all(sig);
            }
        });
        Turn::Go
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// A job over a pipe's reading end: counts its turns and what they saw.
    struct Piped {
        read: OwnedFd,
        wait: Option<Duration>,
        turns: Vec<bool>,
        end_after: usize,
    }

    impl Job for Piped {
        fn fd(&self) -> Option<BorrowedFd<'_>> {
            Some(self.read.as_fd())
        }
        fn timeout(&self) -> Option<Duration> {
            self.wait
        }
        fn ready(&mut self, events: PollFlags) -> Turn {
            self.turns.push(events.contains(PollFlags::IN));
            if self.turns.len() >= self.end_after {
                Turn::End(Ended::Calls)
            } else {
                Turn::Go
            }
        }
    }

    fn piped(wait: Option<Duration>, end_after: usize) -> (Piped, std::fs::File) {
        let (read, write) = rustix::pipe::pipe().unwrap();
        let job = Piped {
            read,
            wait,
            turns: Vec::new(),
            end_after,
        };
        (job, std::fs::File::from(write))
    }

    #[test]
    fn each_job_sees_its_own_descriptor_and_the_first_to_end_ends_the_loop() {
        let (mut quiet, _w1) = piped(None, 99);
        let (mut loud, mut w2) = piped(None, 1);
        w2.write_all(b"x").unwrap();
        let ended = serve(&mut [&mut quiet, &mut loud]);
        assert_eq!(ended, Some(Ended::Calls));
        assert_eq!(quiet.turns, [false], "its turn came, its pipe was empty");
        assert_eq!(loud.turns, [true]);
    }

    #[test]
    fn the_soonest_timeout_bounds_the_wait_and_every_job_takes_its_turn() {
        let (mut timed, _w1) = piped(Some(Duration::from_millis(10)), 3);
        let (mut other, _w2) = piped(Some(Duration::from_secs(3600)), 99);
        let start = std::time::Instant::now();
        assert_eq!(serve(&mut [&mut other, &mut timed]), Some(Ended::Calls));
        assert!(start.elapsed() < Duration::from_secs(60));
        assert_eq!(timed.turns, [false, false, false]);
        assert_eq!(other.turns, [false, false, false]);
    }

    #[test]
    fn a_job_without_a_descriptor_still_takes_its_turn() {
        struct Ticker(usize);
        impl Job for Ticker {
            fn fd(&self) -> Option<BorrowedFd<'_>> {
                None
            }
            fn timeout(&self) -> Option<Duration> {
                Some(Duration::from_millis(1))
            }
            fn ready(&mut self, events: PollFlags) -> Turn {
                assert!(events.is_empty());
                self.0 += 1;
                if self.0 == 2 {
                    Turn::End(Ended::Command)
                } else {
                    Turn::Go
                }
            }
        }
        let (mut loud, mut w) = piped(None, 99);
        w.write_all(b"x").unwrap();
        let mut t = Ticker(0);
        assert_eq!(serve(&mut [&mut t, &mut loud]), Some(Ended::Command));
        assert_eq!(loud.turns, [true], "the descriptors line up with their jobs");
    }

    #[test]
    fn a_failed_poll_ends_the_loop_without_a_verdict() {
        crate::sys::fake::start();
        crate::sys::fake::fail_next("poll", Errno::INVAL);
        let (mut job, _w) = piped(None, 99);
        let ended = serve(&mut [&mut job]);
        let calls = crate::sys::fake::take_calls();
        crate::sys::fake::stop();
        assert_eq!(ended, None);
        assert_eq!(calls[0].name, "poll");
        assert_eq!(calls[0].args, "1 fds, None");
        assert!(job.turns.is_empty());
    }

    #[test]
    fn the_watched_process_ending_ends_the_loop() {
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).unwrap();
        let (mut quiet, _w) = piped(None, 99);
        assert_eq!(serve(&mut [&mut quiet, &mut Exit(&pidfd)]), Some(Ended::Command));
        let mut child = child;
        let _ = child.wait();
    }
}
