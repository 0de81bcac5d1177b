//! Installs the seccomp filter, compiled to BPF at build time from the rules
//! in seccomp_filter.rs: terminal injection (`ioctl(TIOCSTI)`,
//! `ioctl(TIOCLINUX)`) and setuid/setgid mode bits fail with EPERM, openat2
//! (whose mode the filter cannot read) with ENOSYS, and, in `run`, calls
//! aimed at another process go to the warden. One program, one seccomp(2).

use super::Fail;
use rustix::io::Errno;
use seccompiler::sock_filter;

// `PROGRAM`, `NOTIFY_PROGRAM` and `NOTIFY_SIGNALS_PROGRAM:
// [(u16, u8, u8, u32); N]`, written by build.rs.
include!(concat!(env!("OUT_DIR"), "/seccomp_bpf.rs"));

/// Installs the filter without the warden's rules (bwrap mode's layers; no
/// no_new_privs needed beyond what the caller set).
pub(super) fn apply() -> Result<(), Fail> {
    let prog: Vec<sock_filter> = PROGRAM
        .iter()
        .map(|&(code, jt, jf, k)| sock_filter { code, jt, jf, k })
        .collect();
    crate::sys::kernel::seccomp_filter(&prog).map_err(|e| {
        let errno = match &e {
            seccompiler::Error::Seccomp(io) => io.raw_os_error().map(Errno::from_raw_os_error),
            _ => None,
        };
        Fail::with(errno.unwrap_or(Errno::INVAL), e.to_string())
    })
}

/// Installs the whole filter, the warden's rules included, and returns its
/// listener.
pub(super) fn notify_listener(signals: bool) -> Result<rustix::fd::OwnedFd, Fail> {
    let program: &[(u16, u8, u8, u32)] = if signals {
        &NOTIFY_SIGNALS_PROGRAM
    } else {
        &NOTIFY_PROGRAM
    };
    crate::sys::seccomp_listener(program)
        .map_err(|e| Fail::with(e, "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)"))
}

/// A caller's program (bubblewrap's `--seccomp FD`, a raw array of
/// `struct sock_filter`) as the kernel takes it; a trailing partial
/// instruction (refused while parsing) is dropped.
pub(super) fn from_bytes(data: &[u8]) -> Vec<libc::sock_filter> {
    data.chunks_exact(8)
        .map(|c| libc::sock_filter {
            code: u16::from_ne_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect()
}

#[cfg(test)]
#[path = "seccomp_filter.rs"]
mod rules;

#[cfg(test)]
mod tests {
    use super::rules::*;

    fn arch() -> Arch {
        Arch::from_target(std::env::consts::ARCH).unwrap()
    }

    #[test]
    fn built_programs_are_the_rules_compiled() {
        let a = arch();
        for (warden, built) in [
            (Warden::None, &super::PROGRAM[..]),
            (Warden::Processes, &super::NOTIFY_PROGRAM[..]),
            (Warden::ProcessesAndSignals, &super::NOTIFY_SIGNALS_PROGRAM[..]),
        ] {
            assert_eq!(compile(a, &rules(a, warden)), built.to_vec());
        }
        assert_eq!(DENIED_IOCTLS[0].0 as u64, libc::TIOCSTI);
        assert_eq!(DENIED_IOCTLS[1].0 as u64, libc::TIOCLINUX);
        assert_eq!(SET_ID_BITS[0].0, libc::S_ISUID);
        assert_eq!(SET_ID_BITS[1].0, libc::S_ISGID);
    }

    /// The program decides as the rules say, run through an interpreter.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn decisions() {
        let eperm = RET_ERRNO | 1;
        let p = &super::NOTIFY_PROGRAM[..];
        let sig = &super::NOTIFY_SIGNALS_PROGRAM[..];
        let x86 = 0xc000_003e;
        let call = |prog: &[Insn], nr: u32, args: [u64; 6]| run(prog, x86, nr, args);
        let a = |v: &[u64]| {
            let mut out = [0u64; 6];
            out[..v.len()].copy_from_slice(v);
            out
        };
        assert_eq!(call(p, 16, a(&[1, 0x5412])), eperm); // TIOCSTI
        assert_eq!(call(p, 16, a(&[1, 0x5413])), RET_ALLOW); // TIOCGWINSZ
        assert_eq!(call(p, 90, a(&[0, 0o4755])), eperm); // chmod setuid
        assert_eq!(call(p, 90, a(&[0, 0o755])), RET_ALLOW);
        assert_eq!(call(p, 91, a(&[3, 0o2775])), eperm); // fchmod setgid
        assert_eq!(call(p, 257, a(&[0, 0, 0o101, 0o4755])), eperm); // openat O_CREAT setuid
        assert_eq!(call(p, 257, a(&[0, 0, 0o1, 0o4755])), RET_ALLOW); // no O_CREAT
        assert_eq!(call(p, 257, a(&[0, 0, 0o101, 0o644])), RET_ALLOW);
        assert_eq!(call(p, 437, a(&[])), RET_ERRNO | 38); // openat2
        assert_eq!(call(p, 302, a(&[0])), RET_ALLOW); // prlimit64 self
        assert_eq!(call(p, 302, a(&[1234])), RET_USER_NOTIF);
        assert_eq!(call(p, 141, a(&[0, 0, 5])), RET_ALLOW); // setpriority self
        assert_eq!(call(p, 141, a(&[0, 99, 5])), RET_USER_NOTIF);
        assert_eq!(call(p, 141, a(&[2, 0, 5])), RET_USER_NOTIF); // PRIO_USER
        assert_eq!(call(p, 251, a(&[1, 0, 0])), RET_ALLOW); // ioprio self
        assert_eq!(call(p, 251, a(&[3, 0, 0])), RET_USER_NOTIF);
        // Signals: the kernel's (Landlock) without the signal variant.
        assert_eq!(call(p, 62, a(&[1, 15])), RET_ALLOW);
        assert_eq!(call(sig, 62, a(&[1, 15])), RET_USER_NOTIF);
        assert_eq!(call(sig, 72, a(&[3, 8, 1])), RET_USER_NOTIF); // F_SETOWN
        assert_eq!(call(sig, 72, a(&[3, 1, 0])), RET_ALLOW); // F_GETFD
        // Another ABI is killed; x32 calls fail with ENOSYS.
        assert_eq!(run(p, 0x4000_0003, 0, a(&[])), RET_KILL_PROCESS);
        assert_eq!(call(p, 0x4000_0000 + 90, a(&[0, 0o4755])), RET_ERRNO | 38);
        // Without the warden, nothing is handed over.
        assert_eq!(call(&super::PROGRAM[..], 302, a(&[1234])), RET_ALLOW);
        assert_eq!(call(&super::PROGRAM[..], 90, a(&[0, 0o4755])), eperm);
    }
}
