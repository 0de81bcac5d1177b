//! The namespace steps: making and joining namespaces, id maps, the monitor.

use super::*;
use crate::plan::{
    CloneMonitor, ForkIntoPidNamespace, JoinNamespace, NamespaceStep, NestUserNamespace, SetHostname,
    Unshare, WriteIdMap,
};

impl Executor {
    /// One namespace step: each its own call.
    pub(super) fn namespace_step(&mut self, step: NamespaceStep<'_>) -> Result<(), Fail> {
        match step {
            NamespaceStep::Unshare(s) => self.unshare_step(s)?,
            NamespaceStep::WriteIdMap(s) => self.write_id_map_step(s)?,
            NamespaceStep::CloneMonitor(s) => self.clone_monitor_step(s)?,
            NamespaceStep::JoinNamespace(s) => self.join_namespace_step(s)?,
            NamespaceStep::ForkIntoPidNamespace(s) => self.fork_into_pid_namespace_step(s)?,
            NamespaceStep::SetHostname(s) => self.set_hostname_step(s)?,
            NamespaceStep::NestUserNamespace(s) => self.nest_user_namespace_step(s)?,
            NamespaceStep::DenySetgroups => match write_proc("/proc/self/setgroups", b"deny") {
                // Kernels before 3.19 have no setgroups file and no need for it.
                Err(Errno::NOENT) => {}
                other => other?,
            },
            NamespaceStep::LoopbackUp => {
                let sock = k::socket_datagram()?;
                sys::interface_up(sock.as_fd(), "lo")?;
            }
            NamespaceStep::NotifyMonitor => {
                if let Some(r) = self.monitor.ready.take() {
                    crate::supervise::monitor::notify(r, k::getpid().as_raw_nonzero().get())?;
                }
                self.monitor.wait_for_monitor();
            }
            NamespaceStep::AssertUsernsDisabled => {
                match sys::unshare_namespaces(rustix::thread::UnshareFlags::NEWUSER) {
                    Err(_) => {}
                    Ok(()) => {
                        return Err(Fail::with(
                            Errno::PERM,
                            "creation of new user namespaces was not disabled as requested",
                        ));
                    }
                }
            }
            NamespaceStep::DisableUserns => {
                let proc = k::open(
                    "/proc",
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                write_at(&proc, "sys/user/max_user_namespaces", b"1")?;
                self.proc = Some(proc);
            }
        }
        Ok(())
    }

    fn unshare_step(&mut self, s: &Unshare) -> Result<(), Fail> {
        let Unshare { ns } = s;
        sys::unshare_namespaces(rustix::thread::UnshareFlags::from_bits_retain(
            ns.clone_flags() as u32
        ))?;
        Ok(())
    }

    fn write_id_map_step(&mut self, s: &WriteIdMap) -> Result<(), Fail> {
        let WriteIdMap { map, inside, outside } = s;
        let file = match map {
            crate::plan::IdMap::Uid => "/proc/self/uid_map",
            crate::plan::IdMap::Gid => "/proc/self/gid_map",
        };
        write_proc(file, format!("{inside} {outside} 1").as_bytes())?;
        Ok(())
    }

    fn clone_monitor_step(&mut self, s: &CloneMonitor) -> Result<(), Fail> {
        let CloneMonitor {
            ns,
            info_fd,
            json_status_fd,
            join,
            forward_signals,
            explain,
        } = s;
        self.monitor = crate::supervise::monitor::clone(
            *ns,
            *info_fd,
            *json_status_fd,
            self.die_with_parent,
            *join,
            *forward_signals,
            explain.as_deref(),
        )?;
        // The monitor: in a new PID namespace it has no pid here.
        self.parent = k::getppid();
        Ok(())
    }

    fn join_namespace_step(&mut self, s: &JoinNamespace) -> Result<(), Fail> {
        let JoinNamespace { fd, pid } = s;
        sys::setns_inherited_fd(*fd, *pid)?;
        Ok(())
    }

    fn fork_into_pid_namespace_step(&mut self, s: &ForkIntoPidNamespace) -> Result<(), Fail> {
        let ForkIntoPidNamespace { new_pidns } = s;
        crate::supervise::monitor::fork_into_pidns(*new_pidns, self.die_with_parent, &mut self.monitor)?;
        Ok(())
    }

    fn set_hostname_step(&mut self, s: &SetHostname) -> Result<(), Fail> {
        let SetHostname { name } = s;
        k::sethostname(name.as_bytes())?;
        Ok(())
    }

    fn nest_user_namespace_step(&mut self, s: &NestUserNamespace) -> Result<(), Fail> {
        let NestUserNamespace { uid, gid } = s;
        let proc = self.proc.take().ok_or(Errno::BADF)?;
        sys::unshare_namespaces(rustix::thread::UnshareFlags::NEWUSER)?;
        // setgroups stays denied: a nested namespace inherits it.
        write_at(&proc, "self/uid_map", format!("{uid} {uid} 1").as_bytes())?;
        write_at(&proc, "self/gid_map", format!("{gid} {gid} 1").as_bytes())?;
        Ok(())
    }
}

/// What on this host explains a namespace step's errno, where the step
/// knows.
pub(super) fn hint(step: NamespaceStep<'_>, raw: i32) -> Option<String> {
    use crate::host::diagnose;
    Some(match step {
        NamespaceStep::Unshare(Unshare { ns })
        | NamespaceStep::CloneMonitor(CloneMonitor { ns, join: false, .. })
            if ns.user =>
        {
            diagnose::userns_hint(raw)
        }
        NamespaceStep::DenySetgroups | NamespaceStep::WriteIdMap(_) if raw == libc::ENOENT => {
            "/proc is not mounted here (or not procfs): qwrap needs /proc/self/uid_map".into()
        }
        NamespaceStep::DenySetgroups | NamespaceStep::WriteIdMap(_) if raw == libc::EROFS => {
            if std::env::var_os("SANDBOX").is_some_and(|v| v == "qwrap") {
                "/proc is read-only here, inside a qwrap sandbox (SANDBOX=qwrap) of the shared PID mode: \
                 a nested sandbox cannot write its user namespace's id maps there; start the outer one \
                 with `qwrap run --pid private`, where qwrap (either mode), bwrap and Chromium's sandbox \
                 run nested"
                    .into()
            } else {
                "/proc is read-only here, as inside another sandbox (a container, bubblewrap with the \
                 host's /proc): qwrap cannot write its user namespace's id maps; run it outside that sandbox"
                    .into()
            }
        }
        // Root in a user namespace other than the host's: the kernel maps
        // uid 0 into a nested one only for a creator that had CAP_SETFCAP.
        NamespaceStep::WriteIdMap(WriteIdMap { outside: 0, .. })
            if raw == libc::EPERM && !crate::host::initial_user_namespace() =>
        {
            "uid 0 of a user namespace other than the host's (as root in a sandbox) may map itself into a \
             nested one only if it held CAP_SETFCAP, which a sandbox of root's drops (a file capability \
             written through the nested namespace would hold outside): run the outer sandbox as an \
             ordinary user"
                .into()
        }
        _ => return None,
    })
}
