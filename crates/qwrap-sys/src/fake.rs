//! The recording fake behind the executor's calls (the `record` feature,
//! for qwrap's unit tests): while a test records, every call through
//! [`super::kernel`], [`super::landlock`] and the raw calls of this crate is
//! written down — its name and, where it has them, its arguments as strace
//! would show them — and answered without the kernel, from what the test
//! scripted: an errno for one call, the bytes the next `read` returns.
//! Without the feature `answer` is a constant `None` and every check
//! compiles away.

use rustix::io::Errno;

/// One call the fake answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub name: &'static str,
    /// Its arguments (empty where the seam does not describe them).
    pub args: String,
}

/// What a test scripts for a later call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scripted {
    /// The next call of this name fails.
    Fail(&'static str, Errno),
    /// The next call of this name whose arguments contain the text fails
    /// (a walk's third `openat`, not its first).
    FailOn(&'static str, &'static str, Errno),
    /// The next call of this name whose arguments contain the text
    /// succeeds, ahead of a failure scripted after it (one side's
    /// `newfstatat` of a name found, the other's not).
    PassOn(&'static str, &'static str),
    /// The next `read` returns these bytes (by default it reads nothing).
    Read(Vec<u8>),
    /// The next `fstat` or `newfstatat` says this `st_mode` (by default 0:
    /// no type at all).
    Mode(u32),
    /// The next `fstat` or `newfstatat` says this mode, size and count of
    /// 512-byte blocks.
    Stat { mode: u32, size: i64, blocks: i64 },
    /// The next directory read lists these names and types (by default
    /// none).
    Entries(Vec<(std::ffi::OsString, rustix::fs::FileType)>),
    /// The next read of inotify's queue says these events: (watch, mask).
    Events(Vec<(i32, u32)>),
}

#[cfg(feature = "record")]
mod state {
    use super::{Call, Scripted};
    use std::cell::RefCell;

    thread_local! {
        pub static LOG: RefCell<Option<Vec<Call>>> = const { RefCell::new(None) };
        pub static SCRIPT: RefCell<Vec<Scripted>> = const { RefCell::new(Vec::new()) };
    }
}

/// Whether the fake answers the call (it is then recorded), and how: `Ok`
/// for success, or the errno a test scripted.
#[inline(always)]
pub fn answer(name: &'static str) -> Option<Result<(), Errno>> {
    answer_about(name, String::new)
}

/// `answer`, recording the call's arguments as `args` describes them
/// (called only while a test records).
#[cfg(feature = "record")]
pub fn answer_about(name: &'static str, args: impl FnOnce() -> String) -> Option<Result<(), Errno>> {
    let on = state::LOG.with(|l| match l.borrow_mut().as_mut() {
        Some(log) => {
            log.push(Call { name, args: args() });
            true
        }
        None => false,
    });
    on.then(|| {
        let args = state::LOG.with(|l| l.borrow().as_ref().and_then(|l| l.last().map(|c| c.args.clone())));
        let args = args.unwrap_or_default();
        state::SCRIPT.with(|s| {
            let mut s = s.borrow_mut();
            let failing = s.iter().position(|a| match a {
                Scripted::Fail(n, _) => *n == name,
                Scripted::FailOn(n, needle, _) | Scripted::PassOn(n, needle) => {
                    *n == name && args.contains(needle)
                }
                _ => false,
            });
            match failing.map(|i| s.remove(i)) {
                Some(Scripted::Fail(_, errno) | Scripted::FailOn(_, _, errno)) => Err(errno),
                _ => Ok(()),
            }
        })
    })
}

#[cfg(not(feature = "record"))]
#[inline(always)]
pub fn answer_about(_name: &'static str, _args: impl FnOnce() -> String) -> Option<Result<(), Errno>> {
    None
}

/// True when the call is answered by the fake (it is then recorded), for
/// calls that cannot fail.
#[inline(always)]
pub fn takes(name: &'static str) -> bool {
    answer(name).is_some()
}

/// What the fake's `read` returns into `buf`: the bytes a test scripted,
/// or nothing (end of file).
pub fn read_into(buf: &mut [u8]) -> usize {
    let data = read_all();
    let n = data.len().min(buf.len());
    buf[..n].copy_from_slice(&data[..n]);
    n
}

/// The bytes a test scripted for the next read (`Scripted::Read`), or
/// none: what a whole-file read of the fake returns.
pub fn read_all() -> Vec<u8> {
    scripted(|a| match a {
        Scripted::Read(d) => Some(d.clone()),
        _ => None,
    })
    .unwrap_or_default()
}

/// The first scripted answer `pick` takes, removed from the script.
fn scripted<T>(pick: impl Fn(&Scripted) -> Option<T>) -> Option<T> {
    #[cfg(feature = "record")]
    {
        state::SCRIPT.with(|s| {
            let mut s = s.borrow_mut();
            let (i, t) = s.iter().enumerate().find_map(|(i, a)| pick(a).map(|t| (i, t)))?;
            s.remove(i);
            Some(t)
        })
    }
    #[cfg(not(feature = "record"))]
    {
        let _ = pick;
        None
    }
}

/// The names and types a test scripted for the next directory read.
pub fn entries() -> Vec<(std::ffi::OsString, rustix::fs::FileType)> {
    scripted(|a| match a {
        Scripted::Entries(e) => Some(e.clone()),
        _ => None,
    })
    .unwrap_or_default()
}

/// The events a test scripted for the next read of inotify's queue.
pub fn events() -> Vec<(i32, u32)> {
    scripted(|a| match a {
        Scripted::Events(e) => Some(e.clone()),
        _ => None,
    })
    .unwrap_or_default()
}

/// Scripts a later answer.
#[cfg(feature = "record")]
pub fn script(what: Scripted) {
    state::SCRIPT.with(|s| s.borrow_mut().push(what));
}

/// The next call of that name fails with `errno`, once.
#[cfg(feature = "record")]
pub fn fail_next(name: &'static str, errno: Errno) {
    script(Scripted::Fail(name, errno));
}

/// Starts recording on this thread (any earlier record is dropped).
#[cfg(feature = "record")]
pub fn start() {
    state::LOG.with(|l| *l.borrow_mut() = Some(Vec::new()));
}

/// The calls recorded since the last `start` or `take_calls`; recording
/// goes on.
#[cfg(feature = "record")]
pub fn take_calls() -> Vec<Call> {
    state::LOG.with(|l| l.borrow_mut().as_mut().map(std::mem::take).unwrap_or_default())
}

/// The names of the calls recorded since the last `start` or `take`.
#[cfg(feature = "record")]
pub fn take() -> Vec<&'static str> {
    take_calls().into_iter().map(|c| c.name).collect()
}

/// The calls recorded, each as `name(args)`, and recording stopped.
#[cfg(feature = "record")]
pub fn finish() -> Vec<String> {
    let calls = take_calls();
    stop();
    calls
        .into_iter()
        .map(|c| format!("{}({})", c.name, c.args))
        .collect()
}

/// Stops recording: calls reach the kernel again; what was scripted and
/// not used is dropped.
#[cfg(feature = "record")]
pub fn stop() {
    state::LOG.with(|l| *l.borrow_mut() = None);
    state::SCRIPT.with(|s| s.borrow_mut().clear());
}

/// A descriptor to answer with: /dev/null, opened past the fake.
#[cfg(feature = "record")]
pub fn fd() -> rustix::fd::OwnedFd {
    std::fs::File::open("/dev/null").expect("/dev/null").into()
}

#[cfg(not(feature = "record"))]
pub fn fd() -> rustix::fd::OwnedFd {
    unreachable!("the fake answers only in unit tests")
}

/// A `stat` of nothing in particular (all zero), but the mode a test
/// scripted.
pub fn stat() -> rustix::fs::Stat {
    // SAFETY: `Stat` is the kernel's `struct stat`, plain integers for which
    // all-zero bytes are a valid value.
    let st: rustix::fs::Stat = unsafe { std::mem::zeroed() };
    #[cfg(feature = "record")]
    let st = with_scripted_mode(st);
    st
}

/// `st` with the mode (and size) a test scripted, if it did.
#[cfg(feature = "record")]
fn with_scripted_mode(mut st: rustix::fs::Stat) -> rustix::fs::Stat {
    state::SCRIPT.with(|s| {
        let mut s = s.borrow_mut();
        let i = s
            .iter()
            .position(|a| matches!(a, Scripted::Mode(_) | Scripted::Stat { .. }));
        match i.map(|i| s.remove(i)) {
            Some(Scripted::Mode(m)) => st.st_mode = m as _,
            Some(Scripted::Stat { mode, size, blocks }) => {
                st.st_mode = mode as _;
                st.st_size = size as _;
                st.st_blocks = blocks as _;
            }
            _ => {}
        }
    });
    st
}

/// A `statvfs` of nothing in particular (all zero).
pub fn statvfs() -> rustix::fs::StatVfs {
    rustix::fs::StatVfs {
        f_bsize: 0,
        f_frsize: 0,
        f_blocks: 0,
        f_bfree: 0,
        f_bavail: 0,
        f_files: 0,
        f_ffree: 0,
        f_favail: 0,
        f_fsid: 0,
        f_flag: rustix::fs::StatVfsMountFlags::empty(),
        f_namemax: 0,
    }
}

/// Answers the enclosing function from the fake when a test records; with
/// `args`, the call's arguments are recorded too.
macro_rules! faked {
    ($name:literal, $answer:expr) => {
        match $crate::fake::answer($name) {
            None => {}
            Some(Ok(())) => return $answer,
            Some(Err(errno)) => return Err(errno.into()),
        }
    };
    ($name:literal, args: $args:expr, $answer:expr) => {
        match $crate::fake::answer_about($name, || $args) {
            None => {}
            Some(Ok(())) => return $answer,
            Some(Err(errno)) => return Err(errno.into()),
        }
    };
}
pub(crate) use faked;
