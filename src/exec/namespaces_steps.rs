//! The namespace steps: making and joining namespaces, id maps, the monitor.

use super::*;
use crate::plan::{
    CloneMonitor, ForkIntoPidNamespace, JoinNamespace, NestUserNamespace, SetHostname, Unshare, WriteIdMap,
};

impl Executor {
    pub(super) fn namespace_step(&mut self, step: &Step) -> Result<(), Fail> {
        match step {
            Step::Unshare(Unshare { ns }) => sys::unshare_namespaces(
                rustix::thread::UnshareFlags::from_bits_retain(ns.clone_flags() as u32),
            )?,
            Step::DenySetgroups => match write_proc("/proc/self/setgroups", b"deny") {
                // Kernels before 3.19 have no setgroups file and no need for it.
                Err(Errno::NOENT) => {}
                other => other?,
            },
            Step::WriteIdMap(WriteIdMap { map, inside, outside }) => {
                let file = match map {
                    crate::plan::IdMap::Uid => "/proc/self/uid_map",
                    crate::plan::IdMap::Gid => "/proc/self/gid_map",
                };
                write_proc(file, format!("{inside} {outside} 1").as_bytes())?;
            }
            Step::LoopbackUp => {
                let sock = k::socket_datagram()?;
                sys::interface_up(sock.as_fd(), "lo")?;
            }
            Step::CloneMonitor(CloneMonitor {
                ns,
                info_fd,
                json_status_fd,
                join,
                forward_signals,
                explain,
            }) => {
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
            }
            Step::JoinNamespace(JoinNamespace { fd, pid }) => sys::setns_inherited_fd(*fd, *pid)?,
            Step::ForkIntoPidNamespace(ForkIntoPidNamespace { new_pidns }) => {
                crate::supervise::monitor::fork_into_pidns(
                    *new_pidns,
                    self.die_with_parent,
                    &mut self.monitor,
                )?
            }
            Step::NotifyMonitor => {
                if let Some(r) = self.monitor.ready.take() {
                    crate::supervise::monitor::notify(r, k::getpid().as_raw_nonzero().get())?;
                }
                self.monitor.wait_for_monitor();
            }
            Step::AssertUsernsDisabled => {
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
            Step::SetHostname(SetHostname { name }) => k::sethostname(name.as_bytes())?,
            Step::DisableUserns => {
                let proc = k::open(
                    "/proc",
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                write_at(&proc, "sys/user/max_user_namespaces", b"1")?;
                self.proc = Some(proc);
            }
            Step::NestUserNamespace(NestUserNamespace { uid, gid }) => {
                let proc = self.proc.take().ok_or(Errno::BADF)?;
                sys::unshare_namespaces(rustix::thread::UnshareFlags::NEWUSER)?;
                // setgroups stays denied: a nested namespace inherits it.
                write_at(&proc, "self/uid_map", format!("{uid} {uid} 1").as_bytes())?;
                write_at(&proc, "self/gid_map", format!("{gid} {gid} 1").as_bytes())?;
            }
            _ => return Err(Errno::INVAL.into()),
        }
        Ok(())
    }
}
