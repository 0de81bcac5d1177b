//! The monitor that stays outside the sandbox (bwrap mode's, reporting
//! through --info-fd and --json-status-fd, and `run --pid private`'s
//! stand-in for the command) and exits as the sandbox does, and PID 1
//! inside a new PID namespace.

use crate::plan::Namespaces;
use crate::plan::explain::Explain;
use crate::sys;
use crate::sys::kernel as k;
use rustix::fd::{AsRawFd, OwnedFd};
use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions};

/// What the sandbox side keeps of its monitor.
#[derive(Default)]
pub(crate) struct MonitorLink {
    /// With `join`: where to report the pid that holds the namespaces.
    pub ready: Option<OwnedFd>,
    /// With --json-status-fd: `S` here just before the command starts and
    /// `F` when its execve failed, so that the monitor reports an exit code
    /// only for a command that ran, as bubblewrap does.
    pub started: Option<OwnedFd>,
    announced: bool,
    /// With a report to write: the monitor closes its end once it has read
    /// the namespace ids, which a child that ended at once would not leave.
    go: Option<OwnedFd>,
    /// `run --pid private`: PID 1 writes how the command ended here, and
    /// the monitor ends the same way at once (the leftovers of
    /// --keep-background may keep PID 1 running).
    pub ended: Option<OwnedFd>,
    /// bwrap mode with `QWRAP_EXPLAIN`: where the filter's listener goes.
    pub explain: Option<OwnedFd>,
}

impl MonitorLink {
    /// Just before the command starts (and before the caller's seccomp
    /// filters, which may forbid the write). Best effort: a monitor that
    /// cannot learn it only leaves out exit-code.
    pub fn starting(&mut self) {
        if let (Some(w), false) = (&self.started, self.announced) {
            let _ = k::write(w, b"S");
            self.announced = true;
        }
    }

    /// Whether `starting` will tell the monitor.
    pub fn will_announce(&self) -> bool {
        self.started.is_some() && !self.announced
    }

    /// Waits until the monitor has read what its reports need.
    pub fn wait_for_monitor(&mut self) {
        if let Some(r) = self.go.take() {
            while let Err(Errno::INTR) = k::read(&r, &mut [0u8; 1]) {}
        }
    }

    /// The command's execve failed: it never ran.
    pub fn exec_failed(&mut self) {
        if let Some(w) = self.started.take() {
            let _ = k::write(&w, b"F");
        }
    }
}

/// Forks into new namespaces (or, with `join`, a plain fork whose child
/// joins or makes them itself and reports its pid through the returned pipe
/// when they are ready). Returns in the child; the parent never returns: it
/// reports, waits and exits with the child's status (128 + the signal when
/// it was killed, as bubblewrap does).
pub(crate) fn clone(
    ns: Namespaces,
    info_fd: Option<i32>,
    json_status_fd: Option<i32>,
    die_with_parent: bool,
    join: bool,
    forward_signals: bool,
    explain: Option<&Explain>,
) -> Result<MonitorLink, Errno> {
    let pipe = || k::pipe_cloexec();
    let hearing = explain.map(|_| k::seqpacket_pair()).transpose()?;
    let ready = if join { Some(pipe()?) } else { None };
    let started = if json_status_fd.is_some() {
        Some(pipe()?)
    } else {
        None
    };
    let reports = info_fd.is_some() || json_status_fd.is_some();
    let go = if reports { Some(pipe()?) } else { None };
    let ended = if forward_signals { Some(pipe()?) } else { None };
    let flags = if join { 0 } else { ns.clone_flags() };
    if forward_signals {
        // Before the clone, so that neither side has a moment without the
        // handler: a signal for the command that comes during setup is kept
        // (PID 1 of a new PID namespace would otherwise ignore it) and
        // passed on once the command runs.
        sys::hold_signals()?;
    }
    let Some(child) = sys::clone_fork(flags)? else {
        if die_with_parent {
            k::die_with_parent()?;
        }
        let mut link = MonitorLink {
            ready: ready.map(|(_, w)| w),
            started: started.map(|(_, w)| w),
            announced: false,
            go: go.map(|(r, _)| r),
            ended: ended.map(|(_, w)| w),
            explain: hearing.map(|(_, theirs)| theirs),
        };
        // Joining: the child waits once it has reported its pid instead.
        if !join {
            link.wait_for_monitor();
        }
        return Ok(link);
    };
    let go = go.map(|(_, w)| w);
    let started = started.map(|(r, _)| r);
    let sandbox = match ready {
        None => Some(child),
        Some((r, w)) => {
            drop(w);
            read_pid(&r)
        }
    };
    // Without a report the child failed before its namespaces were ready.
    let Some(sandbox) = sandbox else {
        std::process::exit(wait_for(child))
    };
    // The namespace ids are read only when a report needs them.
    let ids = if reports {
        namespace_ids(sandbox, ns)
    } else {
        Vec::new()
    };
    drop(go);
    if let Some(fd) = info_fd {
        let _ = sys::write_inherited_fd(fd, info_json(sandbox, &ids, true).as_bytes());
        sys::close_inherited_fd(fd);
    }
    if let Some(fd) = json_status_fd {
        let _ = sys::write_inherited_fd(fd, info_json(sandbox, &ids, false).as_bytes());
    }
    if let Some((r, w)) = ended {
        drop(w);
        // Best effort: without it qwrap dies of a signal the command
        // would have got.
        let _ = sys::forward_signals_to(child, true);
        if let Some((code, signal, last)) = read_ended(&r) {
            if last {
                let _ = wait_for(child);
            }
            sys::exit_like(code, signal)
        }
        // PID 1 ended before the command ran (a failed setup).
    }
    if let (Some((ours, theirs)), Some(orders)) = (hearing, explain) {
        drop(theirs);
        hear(&ours, orders.clone(), child);
    }
    let code = wait_for(child);
    // Both bytes are written before the sandbox exits, so they are there by
    // now; a process left holding the pipe must not block us.
    let ran = started.is_some_and(|r| {
        let _ = k::fcntl_setfl(&r, rustix::fs::OFlags::NONBLOCK);
        let mut buf = [0u8; 2];
        matches!(k::read(&r, &mut buf), Ok(1) if buf[0] == b'S')
    });
    if let (Some(fd), true) = (json_status_fd, ran) {
        let _ = sys::write_inherited_fd(fd, format!("{{ \"exit-code\": {code} }}\n").as_bytes());
    }
    std::process::exit(code)
}

/// How long the monitor waits for a judgment before it lets the call go
/// on unjudged: a path on a FUSE mount whose daemon never answers (a
/// command with /dev/fuse can mount one) blocks its lookup.
const JUDGED_IN: std::time::Duration = std::time::Duration::from_millis(200);

/// bwrap mode with `QWRAP_EXPLAIN`: takes the filter's listener and
/// answers each call it hands over as the layers' filter would (its errno,
/// or on: the kernel runs the call and enforces as always), judged first
/// by a thread of its own (a judgment that hangs holds up no call past
/// JUDGED_IN, nor the monitor's end). When the child exits, says each
/// refusal; what it left running is answered on by a detached process,
/// forked first (while the monitor is one thread) and told to take over,
/// so that the monitor exits with the child, as bubblewrap's does. A child
/// that fails before its filter hands nothing over.
fn hear(link: &OwnedFd, orders: Explain, child: i32) {
    use super::explain::Recorder;
    use super::explain_judge::Judge;
    use std::sync::{Arc, Mutex, mpsc};
    let Some(super::handover::Handed::Listener(listener)) = super::handover::receive(link) else {
        return;
    };
    let exited =
        Pid::from_raw(child).and_then(|c| k::pidfd_open(c, rustix::process::PidfdFlags::empty()).ok());
    let judge = Judge::new(orders.clone());
    let take_over = answerer(&listener, &judge);
    let seen = Arc::new(Mutex::new(Recorder::new(
        k::fcntl_dupfd_cloexec(rustix::stdio::stderr(), 3).ok(),
        None,
    )));
    let (ask, asked) = mpsc::sync_channel::<(sys::Notification, Option<i32>)>(1024);
    let (told, judged) = mpsc::channel::<bool>();
    let recorder = Arc::clone(&seen);
    let mut thread_judge = Judge::new(orders);
    let started = std::thread::Builder::new().stack_size(256 * 1024).spawn(move || {
        for (n, errno) in asked {
            let r = match errno {
                Some(e) => Some(thread_judge.filtered(&n, e)),
                None => thread_judge.predict(&n),
            };
            if let (Some(r), Ok(mut s)) = (r, recorder.lock()) {
                s.record(n.pid as i32, r);
            }
            let _ = told.send(false);
        }
        let _ = told.send(true);
    });
    let judging = started.is_ok().then_some(Judging {
        ask,
        judged,
        stuck: false,
    });
    let held = answer(&listener, &judge, judging, exited.as_ref());
    if let Ok(mut s) = seen.lock() {
        s.finish();
    }
    if let Some(w) = take_over.filter(|_| held) {
        let _ = k::write(&w, b"g");
    }
}

/// The detached process that answers what the command leaves running once
/// told to (a byte on the returned pipe; its end closed: it exits).
fn answerer(listener: &OwnedFd, judge: &super::explain_judge::Judge) -> Option<OwnedFd> {
    let (r, w) = k::pipe_cloexec().ok()?;
    let theirs = listener.try_clone().ok()?;
    sys::spawn_detached(move || {
        sys::detach_warden(&[theirs.as_raw_fd(), r.as_raw_fd()]);
        if matches!(k::read(&r, &mut [0u8; 1]), Ok(1)) {
            answer(&theirs, judge, None, None);
        }
        sys::exit_now(0)
    })
    .ok()?;
    Some(w)
}

/// The judging thread's ends: calls to judge, and each judged.
struct Judging {
    ask: std::sync::mpsc::SyncSender<(crate::sys::Notification, Option<i32>)>,
    judged: std::sync::mpsc::Receiver<bool>,
    /// A judgment took longer than JUDGED_IN: none is waited for again.
    stuck: bool,
}

impl Judging {
    /// Hands a call over, and waits for its judgment where its path is
    /// read from the caller's memory (`errno` None), which must be before
    /// the call goes on.
    fn judge(&mut self, n: crate::sys::Notification, errno: Option<i32>) {
        if self.ask.try_send((n, errno)).is_err() || errno.is_some() || self.stuck {
            return;
        }
        if self.judged.recv_timeout(JUDGED_IN).is_err() {
            self.stuck = true;
        }
    }

    /// The last judgments made, a second at most.
    fn end(self) {
        drop(self.ask);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.judged.recv_timeout(left) {
                Ok(false) => {}
                _ => return,
            }
        }
    }
}

/// Answers the listener's calls, each judged by `judging`, until no
/// process holds the filter (false) or `exited` (a pidfd) is readable
/// while some still do (true).
fn answer(
    listener: &OwnedFd,
    judge: &super::explain_judge::Judge,
    mut judging: Option<Judging>,
    exited: Option<&OwnedFd>,
) -> bool {
    use super::explain_judge::Base;
    use rustix::event::{PollFd, PollFlags};
    use rustix::fd::AsFd;
    let held = loop {
        let mut fds = vec![PollFd::new(listener, PollFlags::IN)];
        fds.extend(exited.map(|p| PollFd::new(p, PollFlags::IN)));
        match crate::sys::kernel::poll(&mut fds, None) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => break false,
        }
        let ready = fds[0].revents();
        let child_gone = fds.get(1).is_some_and(|p| !p.revents().is_empty());
        if ready.contains(PollFlags::IN) {
            // ENOENT: the caller went away meanwhile.
            let Ok(n) = sys::notif_recv(listener.as_fd()) else {
                continue;
            };
            let refuse = match judge.base(&n) {
                Base::Errno(errno) => Some(errno),
                Base::Allow | Base::Notify => None,
            };
            if let Some(j) = judging.as_mut() {
                j.judge(n, refuse);
            }
            let _ = sys::notif_send(listener.as_fd(), n.id, refuse);
        } else if ready.intersects(PollFlags::HUP | PollFlags::ERR) {
            break false;
        } else if child_gone {
            break true;
        }
    };
    if let Some(j) = judging {
        j.end();
    }
    held
}

/// How the command ended, as PID 1 wrote it (`c CODE` or `s SIGNAL`, then
/// ` last` when PID 1 exits at once), None when the pipe closed without it.
fn read_ended(r: &OwnedFd) -> Option<(Option<i32>, Option<i32>, bool)> {
    let mut buf = [0u8; 16];
    let n = loop {
        match k::read(r, &mut buf) {
            Err(Errno::INTR) => continue,
            other => break other.ok()?,
        }
    };
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let mut words = text.split_whitespace();
    let (kind, value) = (words.next()?, words.next()?);
    let value: i32 = value.parse().ok()?;
    let last = words.next() == Some("last");
    match kind {
        "c" => Some((Some(value), None, last)),
        "s" => Some((None, Some(value), last)),
        _ => None,
    }
}

/// Tells the monitor which pid holds the sandbox's namespaces.
pub(crate) fn notify(ready: OwnedFd, pid: i32) -> Result<(), Errno> {
    let text = pid.to_string();
    k::write(&ready, text.as_bytes())?;
    Ok(())
}

fn read_pid(r: &OwnedFd) -> Option<i32> {
    let mut buf = [0u8; 32];
    let mut len = 0;
    loop {
        match k::read(r, &mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => {
                len += n;
                if len == buf.len() {
                    break;
                }
            }
            Err(Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
    std::str::from_utf8(&buf[..len]).ok()?.parse().ok()
}

/// Forks into the PID namespace joined (or made: `new_pidns`) just before.
/// Returns in the child; the parent reports the child's pid to the monitor,
/// waits and exits as the child does.
pub(crate) fn fork_into_pidns(
    new_pidns: bool,
    die_with_parent: bool,
    link: &mut MonitorLink,
) -> Result<(), Errno> {
    let ready = link.ready.take();
    if new_pidns {
        sys::unshare_namespaces(rustix::thread::UnshareFlags::NEWPID)?;
    }
    let Some(child) = sys::fork()? else {
        drop(ready);
        if die_with_parent {
            k::die_with_parent()?;
        }
        link.wait_for_monitor();
        return Ok(());
    };
    link.go = None;
    k::not_dumpable()?;
    if let Some(r) = ready {
        notify(r, child)?;
    }
    let status = sys::wait_child(child)?;
    sys::exit_like(status.exit_status(), status.terminating_signal())
}

/// PID 1: forks the command and reaps every process until the command
/// exits, then exits as it did. Returns in the command's process.
/// The caller's seccomp filters bind it too, as in bubblewrap: an
/// unfiltered process beside the command would be a way around them.
pub(crate) fn pid_one(
    die_with_parent: bool,
    filters: &[Vec<libc::sock_filter>],
    forward_signals: bool,
    wait_all: bool,
    ended: Option<OwnedFd>,
) -> Result<(), Errno> {
    let Some(command) = sys::fork()? else {
        drop(ended);
        if forward_signals {
            sys::stop_forwarding();
        }
        if die_with_parent {
            k::die_with_parent()?;
        }
        return Ok(());
    };
    // `run`'s (it forwards signals): the command must not trace PID 1 or
    // take its descriptors (the warden's socket, the pipe to the monitor,
    // the cache lock). bubblewrap's stays dumpable: its callers join its
    // namespaces through /proc/PID/ns, as its own suite does.
    if forward_signals && let Err(e) = k::not_dumpable() {
        eprintln!("qwrap: PID 1: prctl(PR_SET_DUMPABLE, 0): {e}");
        let _ = k::kill_process(Pid::from_raw(command).ok_or(Errno::SRCH)?, Signal::KILL);
        std::process::exit(125);
    }
    if forward_signals && let Err(e) = sys::forward_signals_to(command, true) {
        eprintln!("qwrap: PID 1: pass signals on: rt_sigaction: {e}");
    }
    let command = Pid::from_raw(command).ok_or(Errno::SRCH)?;
    if let Err(e) = sys::apply_filters(filters) {
        eprintln!("bwrap: PID 1: install the caller's seccomp filters: prctl(PR_SET_SECCOMP): {e}");
        let _ = k::kill_process(command, Signal::KILL);
        std::process::exit(1);
    }
    let mut code = None;
    loop {
        match k::wait(WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid == command => {
                let c = exit_code(status.exit_status(), status.terminating_signal());
                if let Some(w) = &ended {
                    let said = match status.terminating_signal() {
                        Some(s) => format!("s {s}"),
                        None => format!("c {c}"),
                    };
                    // `last`: PID 1 exits now, and the monitor waits for
                    // it, so that the caller's wait sees the command's CPU
                    // time (PID 1 reaped it) as a parent's would.
                    let said = if wait_all { said } else { format!("{said} last") };
                    if wait_all {
                        // The monitor goes now; PID 1 stays for what is
                        // left, holding none of the caller's pipes open.
                        let _ = k::outlive_parent();
                        for fd in 0..3 {
                            if let Ok(null) =
                                k::open("/dev/null", rustix::fs::OFlags::RDWR, rustix::fs::Mode::empty())
                            {
                                let _ = sys::dup_onto(null, fd);
                            }
                        }
                    }
                    let _ = k::write(w, said.as_bytes());
                }
                if !wait_all {
                    std::process::exit(c)
                }
                code = Some(c);
            }
            Ok(_) | Err(Errno::INTR) => continue,
            // No child left (--keep-background: the last one is gone).
            Err(Errno::CHILD) if code.is_some() => std::process::exit(code.unwrap_or(1)),
            Err(_) => std::process::exit(1),
        }
    }
}

fn wait_for(child: i32) -> i32 {
    match sys::wait_child(child) {
        Ok(st) => exit_code(st.exit_status(), st.terminating_signal()),
        Err(_) => 1,
    }
}

fn exit_code(code: Option<i32>, signal: Option<i32>) -> i32 {
    match (code, signal) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 1,
    }
}

/// The created namespaces' inode numbers, in bubblewrap's order.
fn namespace_ids(child: i32, ns: Namespaces) -> Vec<(&'static str, u64)> {
    [
        ("cgroup", ns.cgroup),
        ("ipc", ns.ipc),
        ("mnt", true),
        ("net", ns.net),
        ("pid", ns.pid),
        ("uts", ns.uts),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .filter_map(|(name, _)| {
        crate::sys::kernel::statat(
            rustix::fs::CWD,
            format!("/proc/{child}/ns/{name}"),
            rustix::fs::AtFlags::empty(),
        )
        .ok()
        .map(|m| (name, m.st_ino))
    })
    .collect()
}

/// `{"child-pid": N, "<ns>-namespace": ino, …}`: indented for --info-fd, on
/// one line for --json-status-fd, as bubblewrap writes them.
fn info_json(child: i32, ids: &[(&str, u64)], pretty: bool) -> String {
    let mut fields = vec![format!("\"child-pid\": {child}")];
    fields.extend(ids.iter().map(|(n, ino)| format!("\"{n}-namespace\": {ino}")));
    if pretty {
        format!("{{\n    {}\n}}\n", fields.join(",\n    "))
    } else {
        format!("{{ {} }}\n", fields.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_formats_match_bubblewrap() {
        let ids = [("mnt", 4026532177), ("pid", 4026532178)];
        assert_eq!(
            info_json(17353, &ids, true),
            "{\n    \"child-pid\": 17353,\n    \"mnt-namespace\": 4026532177,\n    \"pid-namespace\": 4026532178\n}\n"
        );
        assert_eq!(
            info_json(17353, &ids, false),
            "{ \"child-pid\": 17353, \"mnt-namespace\": 4026532177, \"pid-namespace\": 4026532178 }\n"
        );
    }

    #[test]
    fn exit_codes() {
        assert_eq!(exit_code(Some(7), None), 7);
        assert_eq!(exit_code(None, Some(15)), 143);
    }
}
