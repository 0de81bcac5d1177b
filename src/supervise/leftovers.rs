//! The leftovers' end, the warden's side: with Landlock's signal scope
//! the reaper (started inside: reaper.rs) kills them and the warden waits
//! for the sandbox to empty; without it, the warden looks at what /proc
//! lists and at every pid given out since, until none of them runs.

use super::calls::{Sandbox, processes, stat_after_comm};
use crate::sys;
use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// How the warden finds the leftovers.
pub(super) enum Emptying {
    /// The reaper in the outer signal domain kills them; the warden waits
    /// for the sandbox to empty (and scans if it does not).
    Scoped,
    /// The warden finds and kills them (scan).
    Scan,
}

impl Emptying {
    /// Kills every leftover.
    pub(super) fn kill_all(&self, sandbox: &Sandbox, listener: &OwnedFd) {
        if !matches!(self, Emptying::Scoped) || !empties(listener, Duration::from_secs(2)) {
            scan(sandbox, listener);
        }
    }
}

/// Whether every holder of the filter is gone within `wait` (every process
/// of the sandbox, a zombie too until it is reaped, holds it, and none can
/// drop it); notifications meanwhile are refused.
fn empties(listener: &OwnedFd, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fds = [PollFd::new(listener, PollFlags::IN)];
        match sys::kernel::poll(&mut fds, Some(left)) {
            Ok(_) if fds[0].revents().intersects(PollFlags::HUP | PollFlags::ERR) => return true,
            Ok(_) if fds[0].revents().contains(PollFlags::IN) => {
                if let Ok(n) = sys::notif_recv(listener.as_fd()) {
                    let _ = sys::notif_send(listener.as_fd(), n.id, Some(libc::EPERM));
                }
            }
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => return false,
        }
        if left.is_zero() {
            return false;
        }
    }
}

/// Kills every process of the sandbox. Steps look at every pid given out
/// since the last `ns_last_pid` read, in the order the kernel gives them
/// out (cyclic); two listings of /proc find the processes that were there
/// before. It ends with a step that finds none alive after the second
/// listing, then waits for those killed to exit. A process made after the
/// first `ns_last_pid` read is looked at after its pid was given out; if
/// it was not visible yet (its fork under way), its parent was alive then
/// and looked at before it (an earlier pid in that order, or a listing),
/// and was killed: a pending SIGKILL cancels the fork (copy_process checks
/// under the task-list lock). One whose fork was under way at that first
/// read either had it cancelled by the first listing's kill of its parent
/// or was visible in the second. So the last step leaves none that can
/// fork, whatever the parent of the sandbox's orphans does with their
/// zombies (a PID 1 that reaps late or never keeps the listener open).
/// Pids given out faster than a step reads them (half of pid_max: one
/// could be given out twice) start it all again. Bursts on the newest pids
/// between them are for speed only.
fn scan(sandbox: &Sandbox, listener: &OwnedFd) {
    let _ahead = Ahead::raise();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut killed = Killed::new();
    'again: while Instant::now() < deadline {
        let Some(mut hunt) = Hunt::start(sandbox, &mut killed) else {
            return;
        };
        let mut listings = 0;
        while Instant::now() < deadline {
            if empties(listener, Duration::ZERO) {
                return;
            }
            match hunt.step() {
                None => continue 'again,
                Some(true) => {}
                Some(false) if listings == 2 => break 'again,
                Some(false) => {
                    listings += 1;
                    hunt.listing();
                }
            }
        }
    }
    while !killed.is_empty() && Instant::now() < deadline && !empties(listener, Duration::from_millis(1)) {
        killed.retain(|&(p, start)| running(p).is_some_and(|r| r.start == start));
    }
}

/// The scanning thread at nice -20 while it scans, where the warden may
/// (root's CAP_SYS_NICE, or an RLIMIT_NICE that allows it), and back after:
/// a process that forks in a loop has as much CPU as the warden where they
/// share it, and on a machine of many cores forty of them outpace one
/// scanning thread at nice 0. Elsewhere the scan runs as it did.
struct Ahead(Option<i32>);

impl Ahead {
    fn raise() -> Ahead {
        let was = sys::kernel::thread_nice().ok();
        Ahead(was.filter(|_| sys::kernel::set_thread_nice(-20).is_ok()))
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        if let Some(nice) = self.0 {
            let _ = sys::kernel::set_thread_nice(nice);
        }
    }
}

/// The pids looked at so far (every one given out after `from` is next)
/// and the processes killed.
struct Hunt<'a> {
    sandbox: &'a Sandbox,
    from: i32,
    pid_max: i32,
    killed: &'a mut Killed,
}

impl<'a> Hunt<'a> {
    fn start(sandbox: &'a Sandbox, killed: &'a mut Killed) -> Option<Hunt<'a>> {
        Some(Hunt {
            sandbox,
            from: read_number("/proc/sys/kernel/ns_last_pid")?,
            pid_max: read_number("/proc/sys/kernel/pid_max").unwrap_or(1 << 22),
            killed,
        })
    }

    /// Looks at every pid given out since the last step, in that order
    /// (with a burst every few): whether one was alive and inside (and is
    /// killed), None when too many were given out to tell (or none can be
    /// read).
    fn step(&mut self) -> Option<bool> {
        let before = self.killed.len();
        self.burst();
        let to = read_number("/proc/sys/kernel/ns_last_pid")?;
        let span = given_since(self.from, to, self.pid_max);
        if span > self.pid_max / 2 {
            return None;
        }
        for i in 0..span {
            self.look(nth_after(self.from, i, self.pid_max));
            self.now_and_then(i);
        }
        self.from = to;
        Some(self.killed.len() > before)
    }

    /// Kills the sandbox's processes that /proc lists, in the order their
    /// pids were given out (a parent before its children, which it could
    /// otherwise see die and act on), with a burst every few.
    fn listing(&mut self) {
        let me = std::process::id() as i32;
        let mut pids: Vec<i32> = processes().filter(|&p| p != me).collect();
        pids.sort_unstable_by_key(|&p| given_since(self.from + 1, p, self.pid_max));
        for (n, p) in pids.into_iter().enumerate() {
            self.look(p);
            self.now_and_then(n as i32);
        }
    }

    /// A burst every 32 pids looked at: a process that forks in a loop
    /// has moved on by the time a step or a listing on a CPU it shares
    /// reaches its pid (a listing is slow where thousands of zombies wait
    /// for a parent that does not reap).
    fn now_and_then(&mut self, n: i32) {
        if n % 32 == 31 {
            self.burst();
        }
    }

    /// Kills the sandbox's processes among the newest pids, again and
    /// again while it finds some: a process that forks and exits in a loop
    /// is among them at every moment, and a few reads reach it before its
    /// next fork does. Once this burst killed one, a look that finds none
    /// takes twice as many pids, up to 256 (the others' newest pids are
    /// older than those just killed); a first look that finds none ends it.
    fn burst(&mut self) {
        let start = self.killed.len();
        let mut width = 8;
        for _ in 0..100_000 {
            let Some(last) = read_number("/proc/sys/kernel/ns_last_pid") else {
                return;
            };
            let before = self.killed.len();
            for d in 0..width {
                self.look(nth_after(last, -d - 1, self.pid_max));
            }
            if self.killed.len() > before {
                width = 8;
            } else if self.killed.len() == start || width >= 256 {
                return;
            } else {
                width *= 2;
            }
        }
    }

    fn look(&mut self, pid: i32) {
        kill_if_inside(self.sandbox, pid, self.killed, 64);
    }
}

/// The processes killed, each by its pid and start time (a pid given out
/// again is another process).
type Killed = HashSet<(i32, u64)>;

/// SIGKILL to `pid` if it runs and is the sandbox's, through a pidfd
/// opened before it is judged (a process that took a freed pid meanwhile
/// is never the one killed); it joins `killed`. Its parent goes first if
/// it is the sandbox's too (a `sh -c 'sleep 9; touch x'` whose sleep died
/// first would touch x), and so on up. A thread's id gets no pidfd: its
/// process is judged by its own pid.
fn kill_if_inside(sandbox: &Sandbox, pid: i32, killed: &mut Killed, depth: u32) {
    let (Some(p), Some(Running { start, parent })) = (rustix::process::Pid::from_raw(pid), running(pid))
    else {
        return;
    };
    if killed.contains(&(pid, start)) {
        return;
    }
    let Ok(fd) = sys::kernel::pidfd_open(p, rustix::process::PidfdFlags::empty()) else {
        return;
    };
    if sandbox.holds(pid) != Some(true) {
        return;
    }
    if depth > 0 && parent > 1 {
        kill_if_inside(sandbox, parent, killed, depth - 1);
    }
    let _ = sys::kernel::pidfd_send_signal(&fd, rustix::process::Signal::KILL);
    killed.insert((pid, start));
}

/// A process that has not exited, or has left threads that run (a zombie
/// leader counts itself among its threads; they die of a SIGKILL sent to
/// it): its start time and parent.
struct Running {
    start: u64,
    parent: i32,
}

/// /proc/PID/stat's state, parent, num_threads and starttime.
fn running(pid: i32) -> Option<Running> {
    let stat = stat_after_comm(pid)?;
    let fields: Vec<&str> = stat.split_whitespace().collect();
    let exited = matches!(fields.first().and_then(|s| s.get(..1)), Some("Z" | "X"));
    let threads: i32 = fields.get(17)?.parse().ok()?;
    if exited && threads < 2 {
        return None;
    }
    Some(Running {
        start: fields.get(19)?.parse().ok()?,
        parent: fields.get(1)?.parse().ok()?,
    })
}

/// How many pids the kernel gave out after `from` up to `to`: it gives
/// them out in a cycle below pid_max (from 300 again after a wrap, which
/// counts the few below as well).
fn given_since(from: i32, to: i32, pid_max: i32) -> i32 {
    (to - from).rem_euclid(pid_max)
}

/// The pid `i + 1` places after `from` in that cycle (before it, for a
/// negative `i`); pid_max itself, which names no process, stands for 0.
fn nth_after(from: i32, i: i32, pid_max: i32) -> i32 {
    (from + i).rem_euclid(pid_max) + 1
}

fn read_number(path: &str) -> Option<i32> {
    String::from_utf8_lossy(&crate::sys::kernel::read_file(std::path::Path::new(path)).ok()?)
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::{Ahead, empties, given_since, nth_after};
    use crate::sys::fake;
    use rustix::fd::OwnedFd;
    use std::time::Duration;

    /// A stand-in for the filter's listener: a pipe's reading end, which
    /// polls HUP once its last writer is gone, as the listener does once no
    /// process holds the filter.
    fn listener(held: bool) -> (OwnedFd, Option<OwnedFd>) {
        let (read, write) = rustix::pipe::pipe().unwrap();
        (read, held.then_some(write))
    }

    #[test]
    fn the_sandbox_is_empty_once_nothing_holds_the_filter() {
        let (gone, _) = listener(false);
        assert!(empties(&gone, Duration::from_secs(5)));
        let (held, _writer) = listener(true);
        let start = std::time::Instant::now();
        assert!(!empties(&held, Duration::from_millis(30)));
        assert!(
            start.elapsed() >= Duration::from_millis(30),
            "it waits as long as it is given"
        );
    }

    #[test]
    fn a_poll_that_fails_is_no_empty_sandbox() {
        let (gone, _) = listener(false);
        fake::start();
        fake::fail_next("poll", rustix::io::Errno::INVAL);
        let empty = empties(&gone, Duration::from_secs(5));
        let calls = fake::take();
        fake::stop();
        assert!(!empty, "fails closed: the scan runs");
        assert_eq!(calls, ["poll"]);
    }

    #[test]
    fn the_scan_runs_ahead_where_it_may_and_returns_after() {
        fake::start();
        drop(Ahead::raise());
        let granted = fake::take();
        fake::fail_next("setpriority", rustix::io::Errno::ACCESS);
        drop(Ahead::raise());
        let refused = fake::take();
        fake::stop();
        assert_eq!(
            granted,
            ["getpriority", "setpriority", "setpriority"],
            "raised, then back"
        );
        assert_eq!(
            refused,
            ["getpriority", "setpriority"],
            "refused: nothing to put back"
        );
    }

    #[test]
    fn pids_are_looked_at_in_the_order_given_out_across_the_wrap() {
        let max = 32768;
        let since: Vec<i32> = (0..given_since(32765, 301, max))
            .map(|i| nth_after(32765, i, max))
            .collect();
        // 32766, 32767, pid_max (none), 1 ..= 301: every pid given out after
        // 32765 up to 301, in the kernel's order.
        assert_eq!(&since[..4], &[32766, 32767, 32768, 1]);
        assert_eq!(since.last(), Some(&301));
        assert_eq!(since.len(), 304);
        assert_eq!(given_since(500, 500, max), 0);
        // The newest: the last pid given out, then back.
        assert_eq!(nth_after(2, -1, max), 2);
        assert_eq!(nth_after(2, -3, max), 32768);
        assert_eq!(nth_after(2, -4, max), 32767);
        // A listing's order: older first, the newest last.
        let mut pids = vec![5, 600, 32000, 301, 700];
        pids.sort_unstable_by_key(|&p| given_since(601, p, max));
        assert_eq!(pids, [700, 32000, 5, 301, 600]);
    }
}
