//! Installs the seccomp filters, compiled to BPF at build time from the rules
//! in seccomp_filter.rs: terminal injection (`ioctl(TIOCSTI)`,
//! `ioctl(TIOCLINUX)`) and setuid/setgid mode bits fail with EPERM, and
//! openat2, whose mode the filter cannot read, with ENOSYS.

use rustix::io::Errno;
use seccompiler::sock_filter;

// `PROGRAM` and `OPENAT2_PROGRAM: [(u16, u8, u8, u32); N]`, written by build.rs.
include!(concat!(env!("OUT_DIR"), "/seccomp_bpf.rs"));

/// Installs both filters (no_new_privs is already set).
pub(super) fn apply() -> Result<(), (Errno, String)> {
    install(&PROGRAM)?;
    install(&OPENAT2_PROGRAM)
}

/// Installs the warden's filter and returns its listener.
pub(super) fn notify_listener(signals: bool) -> Result<rustix::fd::OwnedFd, (Errno, String)> {
    let program: &[(u16, u8, u8, u32)] = if signals {
        &NOTIFY_SIGNALS_PROGRAM
    } else {
        &NOTIFY_PROGRAM
    };
    crate::sys::seccomp_listener(program).map_err(|e| (e, "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)".into()))
}

fn install(program: &[(u16, u8, u8, u32)]) -> Result<(), (Errno, String)> {
    let prog: Vec<sock_filter> = program
        .iter()
        .map(|&(code, jt, jf, k)| sock_filter { code, jt, jf, k })
        .collect();
    seccompiler::apply_filter(&prog).map_err(|e| {
        let errno = match &e {
            seccompiler::Error::Seccomp(io) => io.raw_os_error().map(Errno::from_raw_os_error),
            _ => None,
        };
        (errno.unwrap_or(Errno::INVAL), e.to_string())
    })
}

/// Installs a filter read from an fd the caller handed over (bubblewrap's
/// `--seccomp FD`): a raw array of `struct sock_filter`.
pub(super) fn apply_from_fd(fd: i32) -> Result<(), (Errno, String)> {
    let data = crate::sys::read_inherited_fd(fd).map_err(|e| {
        (
            Errno::from_io_error(&e).unwrap_or(Errno::IO),
            format!("reading fd {fd}"),
        )
    })?;
    if data.is_empty() || data.len() % 8 != 0 {
        return Err((
            Errno::INVAL,
            format!("fd {fd}: {} bytes is not a BPF program", data.len()),
        ));
    }
    let prog: Vec<sock_filter> = data
        .chunks_exact(8)
        .map(|c| sock_filter {
            code: u16::from_ne_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect();
    seccompiler::apply_filter(&prog).map_err(|e| (Errno::INVAL, e.to_string()))
}

#[cfg(test)]
#[path = "seccomp_filter.rs"]
mod rules;

#[cfg(test)]
mod tests {
    use super::rules;

    #[test]
    fn built_program_matches_the_rules() {
        let arch: seccompiler::TargetArch = std::env::consts::ARCH.try_into().unwrap();
        let prog: seccompiler::BpfProgram = rules::filter(arch).unwrap().try_into().unwrap();
        let built: Vec<(u16, u8, u8, u32)> = prog.iter().map(|f| (f.code, f.jt, f.jf, f.k)).collect();
        assert_eq!(built, super::PROGRAM.to_vec());
        let prog: seccompiler::BpfProgram = rules::openat2_filter(arch).unwrap().try_into().unwrap();
        let built: Vec<(u16, u8, u8, u32)> = prog.iter().map(|f| (f.code, f.jt, f.jf, f.k)).collect();
        assert_eq!(built, super::OPENAT2_PROGRAM.to_vec());
        // The notify programs: the marked trace returns became user
        // notifications, and nothing else changed.
        for (signals, built) in [
            (false, &super::NOTIFY_PROGRAM[..]),
            (true, &super::NOTIFY_SIGNALS_PROGRAM[..]),
        ] {
            let prog: seccompiler::BpfProgram =
                rules::notify_filter(arch, signals).unwrap().try_into().unwrap();
            let marked = rules::SECCOMP_RET_TRACE | rules::NOTIFY_MARK;
            let want: Vec<(u16, u8, u8, u32)> = prog
                .iter()
                .map(|f| {
                    (
                        f.code,
                        f.jt,
                        f.jf,
                        if f.code == 0x06 && f.k == marked {
                            rules::SECCOMP_RET_USER_NOTIF
                        } else {
                            f.k
                        },
                    )
                })
                .collect();
            assert_eq!(want, built.to_vec());
            assert!(built.iter().any(|i| i.3 == rules::SECCOMP_RET_USER_NOTIF));
            assert!(!built.iter().any(|i| i.0 == 0x06 && i.3 == marked));
        }
        assert_eq!(rules::SET_ID_BITS[0].0, libc::S_ISUID as u64);
        assert_eq!(rules::SET_ID_BITS[1].0, libc::S_ISGID as u64);
        assert_eq!(rules::DENIED_IOCTLS[0].0, libc::TIOCSTI);
        assert_eq!(rules::DENIED_IOCTLS[1].0, libc::TIOCLINUX);
    }
}
