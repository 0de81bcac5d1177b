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
