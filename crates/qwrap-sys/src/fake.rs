//! The recording fake behind the executor's calls (unit tests only): while a
//! test records, every call through [`super::kernel`] and the raw calls of
//! this module is written down by name and answered without the kernel, so
//! that a test can hold each Step's printed form to the calls its code makes.
//! Outside tests `takes` is a constant `false` and the checks compile away.

#[cfg(feature = "record")]
use std::cell::RefCell;

#[cfg(feature = "record")]
thread_local! {
    static LOG: RefCell<Option<Vec<&'static str>>> = const { RefCell::new(None) };
    static FAILING: RefCell<Vec<(&'static str, rustix::io::Errno)>> = const { RefCell::new(Vec::new()) };
}

/// Whether the fake answers the call (it is then recorded), and how: `Ok`
/// for success, or the error a test asked for with `fail_next`.
#[cfg(feature = "record")]
pub fn answer(name: &'static str) -> Option<Result<(), rustix::io::Errno>> {
    let on = LOG.with(|l| match l.borrow_mut().as_mut() {
        Some(log) => {
            log.push(name);
            true
        }
        None => false,
    });
    on.then(|| {
        FAILING.with(|f| {
            let mut f = f.borrow_mut();
            match f.iter().position(|(n, _)| *n == name) {
                Some(i) => Err(f.remove(i).1),
                None => Ok(()),
            }
        })
    })
}

#[cfg(not(feature = "record"))]
#[inline(always)]
pub const fn answer(_name: &'static str) -> Option<Result<(), rustix::io::Errno>> {
    None
}

/// True when the call is answered by the fake (it is then recorded), for
/// calls that cannot fail.
#[inline(always)]
pub fn takes(name: &'static str) -> bool {
    answer(name).is_some()
}

/// The next call of that name fails with `errno`, once.
#[cfg(feature = "record")]
pub fn fail_next(name: &'static str, errno: rustix::io::Errno) {
    FAILING.with(|f| f.borrow_mut().push((name, errno)));
}

/// Starts recording on this thread (any earlier record is dropped).
#[cfg(feature = "record")]
pub fn start() {
    LOG.with(|l| *l.borrow_mut() = Some(Vec::new()));
}

/// What was recorded since the last `start` or `take`; recording goes on.
#[cfg(feature = "record")]
pub fn take() -> Vec<&'static str> {
    LOG.with(|l| l.borrow_mut().as_mut().map(std::mem::take).unwrap_or_default())
}

/// Stops recording: calls reach the kernel again.
#[cfg(feature = "record")]
pub fn stop() {
    LOG.with(|l| *l.borrow_mut() = None);
    FAILING.with(|f| f.borrow_mut().clear());
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

/// A `stat` of nothing in particular (all zero).
pub fn stat() -> rustix::fs::Stat {
    // SAFETY: `Stat` is the kernel's `struct stat`, plain integers for which
    // all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
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

/// Answers the enclosing function from the fake when a test records.
macro_rules! faked {
    ($name:literal, $answer:expr) => {
        match $crate::fake::answer($name) {
            None => {}
            Some(Ok(())) => return $answer,
            Some(Err(errno)) => return Err(errno.into()),
        }
    };
}
pub(crate) use faked;
