//! The limits, the warden's side (plan/limits.rs decides them). The time
//! limit: SIGTERM to every process of the sandbox when it passes, SIGKILL
//! to each `GRACE_S` seconds later. On cgroup v1 the memory limit's OOM
//! killer takes one process; the warden, told by an eventfd
//! (cgroup.event_control), kills the rest of the group at once, as
//! memory.oom.group has the kernel do on v2. When the sandbox ends it
//! empties the groups (cgroup.kill, or SIGKILL to each pid listed), reads
//! whether a limit was reached, removes them, and says so in one line.

use super::explain::Recorder;
use super::refusal::Refusal;
use crate::plan::limits::{GRACE_S, human_bytes};
use crate::plan::{LimitWatch, Watched};
use crate::sys::kernel as k;
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::process::{Pid, Signal};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The limits of one sandbox, as the warden keeps them.
pub(super) struct Limits {
    watch: LimitWatch,
    /// When the time limit passes (SIGTERM), then when SIGKILL follows.
    term_at: Option<Instant>,
    kill_at: Option<Instant>,
    /// cgroup v1 with a memory limit: the OOM events' eventfd, and the
    /// memory.oom_control it listens to (held while registered).
    oom: Option<(OwnedFd, OwnedFd)>,
    oom_killed: bool,
    /// Where the lines go (a copy of qwrap's stderr).
    say: Option<OwnedFd>,
    /// The reaper, which a signal of the time limit spares: it ends the
    /// sandbox once the command is gone.
    spare: Option<i32>,
    /// `--explain`: a limit reached is a refusal too, recorded here.
    seen: Option<Arc<Mutex<Recorder>>>,
}

impl Limits {
    /// `seen`: with `--explain`, where a limit reached is recorded.
    pub(super) fn new(watch: LimitWatch, say: Option<OwnedFd>, seen: Option<Arc<Mutex<Recorder>>>) -> Self {
        let term_at = watch.time_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
        Limits {
            say: say.filter(|_| watch.say),
            watch,
            term_at,
            kill_at: None,
            oom: None,
            oom_killed: false,
            spare: None,
            seen,
        }
    }

    fn refused(&self, r: Refusal) {
        if let Some(Ok(mut s)) = self.seen.as_deref().map(Mutex::lock) {
            s.record(0, r);
        }
    }

    /// The reaper's pid, which the time limit's signals spare.
    pub(super) fn spare(&mut self, pid: Option<i32>) {
        self.spare = pid;
    }

    /// Once the sandbox's groups exist and hold it: on cgroup v1 with a
    /// memory limit, the OOM events of its memory group.
    pub(super) fn arm(&mut self) {
        let Some(m) = self.watch.memory.as_ref().filter(|_| !self.watch.v2) else {
            return;
        };
        let control = m.group.join("memory.oom_control");
        let events = k::eventfd();
        let oom = k::open(
            &control,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        );
        if let (Ok(e), Ok(o)) = (events, oom) {
            let line = format!("{} {}", e.as_raw_fd(), o.as_raw_fd());
            if k::write_existing(&m.group.join("cgroup.event_control"), line.as_bytes()).is_ok() {
                self.oom = Some((e, o));
            }
        }
    }

    /// The descriptor to poll for OOM events, where there is one.
    pub(super) fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.oom.as_ref().map(|(e, _)| e.as_fd())
    }

    /// How long until the next thing to do (the time limit, its SIGKILL).
    pub(super) fn timeout(&self) -> Option<Duration> {
        let next = self.kill_at.or(self.term_at)?;
        Some(next.saturating_duration_since(Instant::now()))
    }

    /// After a poll: `oom_ready`, the OOM eventfd fired; the time limit
    /// and its SIGKILL when they are due. `others`: signals every process
    /// of the sandbox where it has no group to list them.
    pub(super) fn tend(&mut self, oom_ready: bool, others: &mut dyn FnMut(Signal)) {
        if oom_ready && let Some((e, _)) = &self.oom {
            let _ = k::read(e, &mut [0u8; 8]);
            if !self.oom_killed {
                self.oom_killed = true;
                if let Some(m) = &self.watch.memory {
                    empty(&m.group, false, Duration::from_secs(2));
                }
            }
        }
        let now = Instant::now();
        if self.term_at.is_some_and(|t| t <= now) {
            self.term_at = None;
            self.kill_at = Some(now + Duration::from_secs(GRACE_S));
            if let Some(ms) = self.watch.time_ms {
                self.line(&format!(
                    "qwrap: time limit reached: {}: every process of the sandbox got SIGTERM, and gets SIGKILL {GRACE_S} s later; raise it with --time-limit DURATION\n",
                    duration(ms)
                ));
                self.refused(Refusal::limit(
                    &format!("time {}", duration(ms)),
                    "SIGTERM",
                    None,
                    &format!("the sandbox ran past its wall-clock limit; every process got SIGTERM, SIGKILL {GRACE_S} s later"),
                    Some("--time-limit DURATION (a longer one)".into()),
                ));
            }
            self.signal(Signal::TERM, others);
        } else if self.kill_at.is_some_and(|t| t <= now) {
            self.kill_at = None;
            self.signal(Signal::KILL, others);
        }
    }

    fn signal(&self, sig: Signal, others: &mut dyn FnMut(Signal)) {
        match self.watch.groups.first() {
            Some(g) => {
                for pid in listed(g)
                    .into_iter()
                    .filter(|p| Some(p.as_raw_nonzero().get()) != self.spare)
                {
                    let _ = k::kill_process(pid, sig);
                }
            }
            None => others(sig),
        }
    }

    /// The sandbox is over: every group emptied, what was reached said,
    /// the groups removed.
    pub(super) fn end(&mut self) {
        for g in &self.watch.groups {
            empty(g, self.watch.v2, Duration::from_secs(5));
        }
        let mut lines = String::new();
        if let Some(m) = &self.watch.memory
            && (self.oom_killed || oom_kills(m, self.watch.v2) > 0)
        {
            let peak =
                peak(m, self.watch.v2).map_or_else(String::new, |p| format!(" (peak {})", human_bytes(p)));
            lines.push_str(&format!(
                "qwrap: memory limit reached: the sandbox's {}{peak} were used up, and every process of it was killed together; raise it with --memory SIZE\n",
                human_bytes(m.limit)
            ));
            self.refused(Refusal::limit(
                &format!("memory {}", human_bytes(m.limit)),
                "oom-kill",
                None,
                &format!("the sandbox used up its memory{peak}, and every process of it was killed together"),
                Some("--memory SIZE (a larger one)".into()),
            ));
        }
        if let Some(p) = &self.watch.processes {
            // Counted where the fork failed before Linux 6.13 (the command's
            // group, or one it made beneath), where the limit is since.
            let failed = tree(&p.group)
                .iter()
                .map(|g| counter(&g.join("pids.events"), "max"))
                .max()
                .unwrap_or(0);
            if failed > 0 {
                lines.push_str(&format!(
                    "qwrap: process limit reached: {failed} fork{} failed (EAGAIN) at {} tasks; raise it with --max-processes N\n",
                    if failed == 1 { "" } else { "s" },
                    p.limit
                ));
                self.refused(Refusal::limit(
                    &format!("processes {}", p.limit),
                    "fork",
                    Some(libc::EAGAIN),
                    &format!(
                        "{failed} fork{} failed at the sandbox's task limit",
                        if failed == 1 { "" } else { "s" }
                    ),
                    Some("--max-processes N (a larger one)".into()),
                ));
            }
        }
        for g in &self.watch.groups {
            remove(g);
        }
        self.oom = None;
        if !lines.is_empty() {
            self.line(&lines);
        }
    }

    fn line(&self, text: &str) {
        if let Some(fd) = &self.say {
            let _ = k::write(fd, text.as_bytes());
        }
    }
}

/// A group and every group beneath it (the command's, and any it made in
/// a cgroup namespace of its own), the deepest last.
fn tree(group: &Path) -> Vec<PathBuf> {
    use rustix::fs::{FileType, Mode, OFlags};
    let mut all = vec![group.to_path_buf()];
    let mut i = 0;
    while i < all.len() {
        let dir = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if let Ok(fd) = k::open(&all[i], dir, Mode::empty())
            && let Ok(entries) = k::dir_entries(&fd, GROUPS_MOST)
        {
            let here = all[i].clone();
            all.extend(
                entries
                    .into_iter()
                    .filter(|(_, t)| *t == FileType::Directory)
                    .map(|(name, _)| here.join(name)),
            );
        }
        i += 1;
    }
    all
}

/// The most entries read of one group's directory: a group holds a few
/// dozen files, and the command's own groups beneath it.
const GROUPS_MOST: usize = 100_000;

/// A cgroup file's text (empty where it cannot be read).
fn text(file: &Path) -> String {
    k::read_file(file)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The pids a group and the groups beneath it list.
fn listed(group: &Path) -> Vec<Pid> {
    tree(group)
        .iter()
        .flat_map(|g| {
            text(&g.join("cgroup.procs"))
                .lines()
                .filter_map(|l| Pid::from_raw(l.trim().parse().ok()?))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Kills every process in a group until none is left (or `wait` passes):
/// cgroup.kill where the kernel has it (v2, Linux 5.14), else SIGKILL to
/// each pid listed, pass after pass (a fork under way is cancelled by the
/// pending SIGKILL, so each pass lists the children of the last).
fn empty(group: &Path, v2: bool, wait: Duration) {
    let deadline = Instant::now() + wait;
    let killed = v2 && k::write_existing(&group.join("cgroup.kill"), b"1").is_ok();
    loop {
        let pids = listed(group);
        if pids.is_empty() || Instant::now() >= deadline {
            return;
        }
        if !killed {
            for pid in pids {
                let _ = k::kill_process(pid, Signal::KILL);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// rmdir of the group and every group beneath it, the deepest first,
/// again while the kernel still counts an exiting process in one.
fn remove(group: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    for g in tree(group).iter().rev() {
        while let Err(e) = k::unlinkat(rustix::fs::CWD, g, rustix::fs::AtFlags::REMOVEDIR) {
            if e == rustix::io::Errno::NOENT || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// OOM kills in the memory group: memory.events' `oom_kill` (v2),
/// memory.oom_control's (v1, Linux 4.13).
fn oom_kills(m: &Watched, v2: bool) -> u64 {
    if v2 {
        counter(&m.group.join("memory.events"), "oom_kill")
    } else {
        counter(&m.group.join("memory.oom_control"), "oom_kill")
    }
}

/// The most the group used, where the kernel keeps it (memory.peak: Linux
/// 5.19; v1: with swap where it is accounted).
fn peak(m: &Watched, v2: bool) -> Option<u64> {
    let files: &[&str] = if v2 {
        &["memory.peak"]
    } else {
        &["memory.memsw.max_usage_in_bytes", "memory.max_usage_in_bytes"]
    };
    files
        .iter()
        .find_map(|f| text(&m.group.join(f)).trim().parse().ok())
}

/// `NAME N` from a flat-keyed cgroup file (0 where it is not there).
fn counter(file: &Path, name: &str) -> u64 {
    text(file)
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// 90000 → "90s", 1500 → "1500ms".
fn duration(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fake::{self, Scripted};

    fn watch(time_ms: Option<u64>, memory: bool, v2: bool) -> LimitWatch {
        LimitWatch {
            groups: vec![PathBuf::from("/cg/q")],
            v2,
            memory: memory.then(|| Watched {
                limit: 1 << 20,
                group: PathBuf::from("/cg/q"),
            }),
            processes: None,
            time_ms,
            say: true,
        }
    }

    fn limits(w: LimitWatch) -> Limits {
        Limits::new(w, Some(std::fs::File::open("/dev/null").unwrap().into()), None)
    }

    fn said(calls: &[String]) -> Vec<&String> {
        calls
            .iter()
            .filter(|c| c.starts_with("write(fd, \"qwrap:"))
            .collect()
    }

    #[test]
    fn the_time_limit_signals_every_listed_process_but_the_reaper_and_says_so() {
        let mut l = limits(watch(Some(0), false, true));
        l.spare(Some(34));
        fake::start();
        fake::script(Scripted::Read(b"12\n34\n".to_vec()));
        l.tend(false, &mut |_| panic!("a group lists the processes"));
        let calls = fake::finish();
        let term = Signal::TERM.as_raw();
        assert!(calls.contains(&format!("kill(12, {term})")), "{calls:?}");
        assert!(
            !calls.iter().any(|c| c.starts_with("kill(34")),
            "the reaper is spared: {calls:?}"
        );
        assert_eq!(said(&calls).len(), 1, "{calls:?}");
        assert!(said(&calls)[0].contains("time limit reached: 0s"), "{calls:?}");
        // SIGKILL follows at its time, and only then.
        assert!(l.timeout().is_some_and(|t| t > Duration::from_secs(1)));
        fake::start();
        l.tend(false, &mut |_| panic!("not yet"));
        assert!(fake::finish().iter().all(|c| !c.starts_with("kill(")));
        l.kill_at = Some(Instant::now());
        fake::start();
        fake::script(Scripted::Read(b"12\n".to_vec()));
        l.tend(false, &mut |_| panic!("a group lists the processes"));
        let calls = fake::finish();
        assert!(
            calls.contains(&format!("kill(12, {})", Signal::KILL.as_raw())),
            "{calls:?}"
        );
        assert!(said(&calls).is_empty(), "one line for the limit: {calls:?}");
        assert_eq!(l.timeout(), None);
    }

    #[test]
    fn without_a_group_the_time_limit_signals_through_the_sandbox() {
        let mut w = watch(Some(0), false, true);
        w.groups.clear();
        let mut l = limits(w);
        let mut sent = Vec::new();
        fake::start();
        l.tend(false, &mut |s| sent.push(s));
        fake::finish();
        assert_eq!(sent, [Signal::TERM]);
    }

    #[test]
    fn a_v1_oom_kill_empties_the_group_once_and_the_end_says_the_limit() {
        let mut l = limits(watch(None, true, false));
        l.oom = Some((fake::fd(), fake::fd()));
        fake::start();
        // The eventfd's count, then the group's processes.
        fake::script(Scripted::Read(1u64.to_ne_bytes().to_vec()));
        fake::script(Scripted::Read(b"40\n41\n".to_vec()));
        l.tend(true, &mut |_| panic!("a group lists the processes"));
        let calls = fake::finish();
        let kill = Signal::KILL.as_raw();
        assert!(
            calls.contains(&format!("kill(40, {kill})")) && calls.contains(&format!("kill(41, {kill})")),
            "{calls:?}"
        );
        // The next event finds the group emptied already: nothing is read.
        fake::start();
        l.tend(true, &mut |_| panic!("no signal"));
        let calls = fake::finish();
        assert!(calls.iter().all(|c| !c.contains("cgroup.procs")), "{calls:?}");
        fake::start();
        l.end();
        let calls = fake::finish();
        assert!(
            calls
                .iter()
                .any(|c| c.starts_with("unlinkat(") && c.contains("/cg/q")),
            "{calls:?}"
        );
        assert_eq!(said(&calls).len(), 1, "{calls:?}");
        assert!(said(&calls)[0].contains("memory limit reached"), "{calls:?}");
    }

    #[test]
    fn the_end_says_nothing_where_no_limit_was_reached() {
        let mut l = limits(watch(None, true, true));
        fake::start();
        fake::script(Scripted::Read(b"1\n".to_vec()));
        l.end();
        let calls = fake::finish();
        // cgroup.kill first: the group is emptied by the kernel.
        assert!(calls.iter().any(|c| c.contains("cgroup.kill")), "{calls:?}");
        assert!(said(&calls).is_empty(), "{calls:?}");
    }

    #[test]
    fn counters_and_durations() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("memory.events");
        std::fs::write(&f, "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 1\n").unwrap();
        assert_eq!(counter(&f, "oom_kill"), 1);
        assert_eq!(counter(&f, "max"), 12);
        assert_eq!(counter(&f, "absent"), 0);
        assert_eq!(counter(&dir.path().join("none"), "max"), 0);
        assert_eq!(duration(90_000), "90s");
        assert_eq!(duration(1500), "1500ms");
    }
}
