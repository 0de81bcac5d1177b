//! `leftovers`: the probe starts a child in a user namespace of its own
//! making and a process that hops to a new PID in a tight loop, both named
//! with a tag (their comm), and exits; verify then looks for the tag in
//! /proc from outside. Any process found outlived the command: FAIL (and
//! verify kills it).

use super::Check;
use std::time::{Duration, Instant};

const N: &str = "leftovers";
const T: &str = "nothing outlives the command (a nested namespace, a PID hopper)";

/// A tag short enough for a comm (15 bytes).
pub(super) fn tag() -> String {
    format!("qwl{}", std::process::id() % 1_000_000_000)
}

/// In the probe: starts both and says it did; verify settles the check.
pub(super) fn start(tag: &str) -> Check {
    let named = |tag: &str| {
        let _ = rustix::thread::set_name(&std::ffi::CString::new(tag).unwrap_or_default());
    };
    // The nested namespace: a child that makes one and waits.
    match crate::sys::fork() {
        Ok(None) => {
            named(tag);
            let _ = crate::sys::unshare_user_mount();
            std::thread::sleep(Duration::from_secs(5));
            crate::sys::exit_now(0);
        }
        Ok(Some(_)) => {}
        Err(e) => return Check::skip(N, T, format!("fork: {e}")),
    }
    // The hopper: forks and lets its parent exit, for five seconds.
    match crate::sys::fork() {
        Ok(None) => {
            named(tag);
            let end = Instant::now() + Duration::from_secs(5);
            while Instant::now() < end {
                match crate::sys::fork() {
                    Ok(None) => continue,
                    _ => crate::sys::exit_now(0),
                }
            }
            crate::sys::exit_now(0);
        }
        Ok(Some(_)) => {}
        Err(e) => return Check::skip(N, T, format!("fork: {e}")),
    }
    Check::skip(N, T, "started; settled from outside".into())
}

/// Outside, once the probe has exited: whether anything carrying the tag is
/// alive a moment later.
pub(super) fn settle(checks: &mut [Check], tag: &str) {
    let Some(c) = checks.iter_mut().find(|c| c.name == N) else {
        return;
    };
    if c.got.as_deref() != Some("started; settled from outside") {
        return;
    }
    let deadline = Instant::now() + Duration::from_millis(300);
    let mut alive = tagged(tag);
    while !alive.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        alive = tagged(tag);
    }
    *c = if alive.is_empty() {
        Check::pass(N, T)
    } else {
        for p in &alive {
            if let Some(pid) = rustix::process::Pid::from_raw(*p) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        Check::fail(
            N,
            T,
            "none alive 300 ms after the command",
            format!("{} alive (pids {alive:?})", alive.len()),
        )
    };
}

/// Live (not zombie) processes whose comm is the tag.
fn tagged(tag: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            stat.contains(&format!("({tag})")) && !stat.contains(") Z")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process carrying the tag fails the check (and is killed); none
    /// passes it.
    #[test]
    fn a_survivor_fails_the_check() {
        let d = tempfile::tempdir().unwrap();
        let t = format!("qwlt{}", std::process::id() % 100_000);
        let bin = d.path().join(&t);
        std::fs::copy("/bin/sleep", &bin).unwrap();
        let mut child = std::process::Command::new(&bin).arg("30").spawn().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let mut checks = vec![Check::skip(N, T, "started; settled from outside".into())];
        settle(&mut checks, &t);
        assert_eq!(checks[0].outcome, super::super::Outcome::Fail, "{:?}", checks[0]);
        let _ = child.wait();
        let mut checks = vec![Check::skip(N, T, "started; settled from outside".into())];
        settle(&mut checks, &t);
        assert_eq!(checks[0].outcome, super::super::Outcome::Pass);
    }
}
