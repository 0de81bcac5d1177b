//! The job that answers the filter's trapped calls: each call goes down a
//! chain of handlers (as crun chains its seccomp-notify plugins), each
//! answering it or passing it on: `--explain`'s judge, the note on a
//! nested user namespace, a file's mode bits and times made here
//! (`--isolation landlock`), and last the question every call ends at,
//! whether it is aimed outside the sandbox.

use super::calls::Sandbox;
use super::explain::Explaining;
use super::explain_judge::Base;
use super::jobs::{Ended, Job, Turn};
use crate::sys::{self, Notification, kernel as k};
use rustix::event::PollFlags;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

/// The trapped calls' job.
pub(super) struct Trapped<'a> {
    pub listener: &'a OwnedFd,
    pub sandbox: &'a Sandbox,
    /// `--explain`, `--denials`: the judge and where refusals are kept.
    pub explaining: Option<&'a mut Explaining>,
    /// Where the note on a nested user namespace goes (said once).
    pub notes: Option<OwnedFd>,
    /// `--isolation landlock`: where mode bits and times may change.
    pub writable: &'a [PathBuf],
}

/// A handler's verdict: the call is answered, or goes on down the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handled {
    Answered,
    Next,
}

type Handler = fn(&mut Trapped<'_>, &Notification) -> Handled;

/// The chain, in order; the last handler answers every call.
const CHAIN: [Handler; 4] = [explained, nested_note, metadata, outside];

impl Job for Trapped<'_> {
    fn fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.listener.as_fd())
    }

    fn ready(&mut self, events: PollFlags) -> Turn {
        if events.contains(PollFlags::IN) {
            if let Ok(n) = sys::notif_recv(self.listener.as_fd()) {
                self.answer(&n);
            }
        } else if events.intersects(PollFlags::HUP | PollFlags::ERR) {
            // No process holds the filter any more: the command and all
            // it started are gone (with --keep-background, the last of the
            // leftovers too).
            return Turn::End(Ended::Calls);
        }
        Turn::Go
    }
}

impl Trapped<'_> {
    /// One trapped call down the chain, until a handler answers it.
    pub(super) fn answer(&mut self, n: &Notification) {
        for handler in CHAIN {
            if handler(self, n) == Handled::Answered {
                return;
            }
        }
    }
}

/// `--explain`: refused by the rules (and the filters folded in) with
/// their errno and said, or let go on as without it (the kernel refuses
/// what it refuses), judged first; the rest goes on down the chain.
fn explained(t: &mut Trapped<'_>, n: &Notification) -> Handled {
    let Some(e) = t.explaining.as_deref_mut() else {
        return Handled::Next;
    };
    match e.judge.base(n) {
        Base::Errno(errno) => {
            e.record(n.pid, e.judge.filtered(n, errno));
            let _ = sys::notif_send(t.listener.as_fd(), n.id, Some(errno));
            Handled::Answered
        }
        Base::Allow => {
            if let Some(r) = e.judge.predict(n) {
                e.record(n.pid, r);
            }
            // A signal Landlock's scope will refuse: said here.
            if e.judge.is_signal(n)
                && let Some(errno) = t.sandbox.refuses(n)
            {
                e.record(n.pid, e.judge.scoped(n, errno));
            }
            let _ = sys::notif_send(t.listener.as_fd(), n.id, None);
            Handled::Answered
        }
        Base::Notify => Handled::Next,
    }
}

/// Said once, when the command makes a user namespace in the shared PID
/// mode.
const NESTED_NOTE: &str = "qwrap: note: the command made a user namespace, which cannot be given its id maps here (/proc is the host's, read-only): nested sandboxes (bwrap, Chromium's sandbox, unshare -r, qwrap) work under `qwrap run --pid private`\n";

/// The note on a nested user namespace; the call itself goes on.
fn nested_note(t: &mut Trapped<'_>, n: &Notification) -> Handled {
    if super::calls::makes_user_namespace(n)
        && let Some(fd) = t.notes.take()
    {
        let _ = k::write(&fd, NESTED_NOTE.as_bytes());
    }
    Handled::Next
}

/// A mode or times call (`--isolation landlock`): made here, or refused,
/// and answered with its result.
fn metadata(t: &mut Trapped<'_>, n: &Notification) -> Handled {
    match super::metadata::handle(n, t.writable) {
        Some(result) => {
            let _ = sys::notif_answer(t.listener.as_fd(), n.id, result.map_err(|e| e.raw_os_error()));
            Handled::Answered
        }
        None => Handled::Next,
    }
}

/// Anything aimed outside (or at what cannot be judged) is refused; the
/// rest goes on if its caller is still the one that asked (the /proc reads
/// took time).
fn outside(t: &mut Trapped<'_>, n: &Notification) -> Handled {
    let refuse = t.sandbox.refuses(n);
    if refuse.is_none() && !sys::notif_id_valid(t.listener.as_fd(), n.id) {
        return Handled::Answered;
    }
    // ENOENT: the caller went away meanwhile.
    let _ = sys::notif_send(t.listener.as_fd(), n.id, refuse);
    if let (Some(errno), Some(e)) = (refuse, &t.explaining) {
        e.record(n.pid, e.judge.outside(n, errno));
    }
    Handled::Answered
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fake;

    /// A kill(2) from this process at `target`.
    fn kill(id: u64, target: i32) -> Notification {
        Notification {
            id,
            pid: std::process::id(),
            nr: libc::SYS_kill as i32,
            args: [target as u32 as u64, libc::SIGTERM as u64, 0, 0, 0, 0],
        }
    }

    /// The calls the chain makes for `n`, the sandbox being this process
    /// and what descends from it; whether the note was taken.
    fn answered(n: &Notification, notes: bool) -> (Vec<String>, bool) {
        let listener: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
        let sandbox = Sandbox::below(std::process::id() as i32);
        let note: Option<OwnedFd> = notes.then(|| std::fs::File::open("/dev/null").unwrap().into());
        let mut t = Trapped {
            listener: &listener,
            sandbox: &sandbox,
            explaining: None,
            notes: note,
            writable: &[],
        };
        fake::start();
        t.answer(n);
        let calls = fake::take_calls();
        fake::stop();
        let said = notes && t.notes.is_none();
        (
            calls.iter().map(|c| format!("{}({})", c.name, c.args)).collect(),
            said,
        )
    }

    #[test]
    fn a_call_aimed_outside_is_refused_with_eperm() {
        let (calls, _) = answered(&kill(7, 1), false);
        assert_eq!(calls, [format!("notif_send(7, -{})", libc::EPERM)]);
    }

    #[test]
    fn a_call_aimed_at_the_sandbox_goes_on_once_its_caller_is_still_there() {
        let me = std::process::id() as i32;
        let (calls, _) = answered(&kill(8, me), false);
        assert_eq!(calls, ["notif_id_valid(8)", "notif_send(8, CONTINUE)"]);
    }

    /// The calls for `n` with /proc's answers scripted: the sandbox is
    /// the processes below `command`.
    fn answered_below(n: &Notification, command: i32, script: &[crate::sys::fake::Scripted]) -> Vec<String> {
        let listener: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
        let sandbox = Sandbox::below(command);
        let mut t = Trapped {
            listener: &listener,
            sandbox: &sandbox,
            explaining: None,
            notes: None,
            writable: &[],
        };
        fake::start();
        for s in script {
            fake::script(s.clone());
        }
        t.answer(n);
        fake::finish()
    }

    #[test]
    fn a_process_is_inside_only_by_its_parents_up_to_the_command() {
        use crate::sys::fake::Scripted;
        // 5000's parent is the command (4000): inside, the call goes on.
        let stat = |pid: i32, parent: i32| {
            Scripted::Read(format!("{pid} (sh) S {parent} {pid} {pid} 0\n").into_bytes())
        };
        let calls = answered_below(&kill(10, 5000), 4000, &[stat(5000, 4000)]);
        assert!(calls.iter().any(|c| c.contains("/proc/5000/stat")), "{calls:?}");
        assert_eq!(
            calls.last().map(String::as_str),
            Some("notif_send(10, CONTINUE)"),
            "{calls:?}"
        );
        // Up two parents to the command: inside.
        let calls = answered_below(&kill(11, 5001), 4000, &[stat(5001, 5000), stat(5000, 4000)]);
        assert_eq!(
            calls.last().map(String::as_str),
            Some("notif_send(11, CONTINUE)"),
            "{calls:?}"
        );
        // Its parents end at PID 1 without the command: outside, refused.
        let calls = answered_below(&kill(12, 5002), 4000, &[stat(5002, 1)]);
        assert_eq!(
            calls.last(),
            Some(&format!("notif_send(12, -{})", libc::EPERM)),
            "{calls:?}"
        );
        // Its /proc entry cannot be read but is there: outside, never in.
        let calls = answered_below(
            &kill(13, 5003),
            4000,
            &[Scripted::FailOn(
                "openat",
                "/proc/5003/stat",
                rustix::io::Errno::ACCESS,
            )],
        );
        assert_eq!(
            calls.last(),
            Some(&format!("notif_send(13, -{})", libc::EPERM)),
            "{calls:?}"
        );
        // Gone: ESRCH, as the kernel would say.
        let calls = answered_below(
            &kill(14, 5004),
            4000,
            &[
                Scripted::FailOn("openat", "/proc/5004/stat", rustix::io::Errno::NOENT),
                Scripted::FailOn("newfstatat", "/proc/5004", rustix::io::Errno::NOENT),
            ],
        );
        assert_eq!(
            calls.last(),
            Some(&format!("notif_send(14, -{})", libc::ESRCH)),
            "{calls:?}"
        );
    }

    #[test]
    fn a_whole_user_s_signal_is_refused() {
        let (calls, _) = answered(&kill(9, -1), false);
        assert_eq!(calls, [format!("notif_send(9, -{})", libc::EPERM)]);
    }

    #[test]
    fn a_nested_user_namespace_is_noted_once_and_goes_on() {
        let n = Notification {
            id: 10,
            pid: std::process::id(),
            nr: libc::SYS_unshare as i32,
            args: [libc::CLONE_NEWUSER as u64, 0, 0, 0, 0, 0],
        };
        let (calls, said) = answered(&n, true);
        assert!(said);
        assert_eq!(calls.len(), 3, "{calls:?}");
        assert!(calls[0].starts_with("write(fd, \"qwrap: note: the command made a user namespace"));
        assert_eq!(calls[1..], ["notif_id_valid(10)", "notif_send(10, CONTINUE)"]);
        let (calls, said) = answered(&n, false);
        assert!(!said);
        assert_eq!(calls, ["notif_id_valid(10)", "notif_send(10, CONTINUE)"]);
    }
}
