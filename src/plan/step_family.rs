//! The four families of steps, by where they act: on the host before
//! anything is unshared, on the namespaces and ids, on the mounts, on the
//! process that becomes the command. The executor runs each family in a
//! module of its own (exec/*_steps.rs); the JSON plan names each step's.

use super::step::Step;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// On the host, before the namespaces: directories, files, the caches'
    /// layers, the warden.
    Host,
    /// Namespaces, id maps, the monitor and the forks into a PID namespace.
    Namespace,
    /// Mounts: the new root, its trees, /dev, /proc, hidden paths.
    Mount,
    /// The process: privileges, Landlock, seccomp, descriptors, the command.
    Process,
}

impl Step {
    pub fn family(&self) -> Family {
        match self {
            Step::CreateHostDir { .. }
            | Step::WriteHostFile { .. }
            | Step::PrepareCaches { .. }
            | Step::PrepareReview { .. }
            | Step::StartWarden { .. }
            | Step::MakeCgroup { .. }
            | Step::MakePrivateDir { .. } => Family::Host,
            Step::MakeMountsSlave
            | Step::CloneTree { .. }
            | Step::SetTreeAttr { .. }
            | Step::MountTmpfs { .. }
            | Step::AttachTree { .. }
            | Step::MakeMountPoint { .. }
            | Step::Symlink { .. }
            | Step::MountDevpts { .. }
            | Step::ClaimPty { .. }
            | Step::SetPathAttr { .. }
            | Step::BindMount { .. }
            | Step::MakeTreePrivate { .. }
            | Step::RemountTree { .. }
            | Step::Remount { .. }
            | Step::PivotRoot { .. }
            | Step::EnterRoot { .. }
            | Step::MakeHiddenSource { .. }
            | Step::AttachHidden { .. }
            | Step::MountProc { .. }
            | Step::MountMqueue { .. }
            | Step::ReadOnlyInPlace { .. }
            | Step::CopyFdToFile { .. }
            | Step::Chmod { .. }
            | Step::MakeOverlay { .. }
            | Step::HomeCaches { .. } => Family::Mount,
            Step::Unshare { .. }
            | Step::DenySetgroups
            | Step::WriteIdMap { .. }
            | Step::LoopbackUp
            | Step::CloneMonitor { .. }
            | Step::JoinNamespace { .. }
            | Step::ForkIntoPidNamespace { .. }
            | Step::NotifyMonitor
            | Step::AssertUsernsDisabled
            | Step::SetHostname { .. }
            | Step::DisableUserns
            | Step::NestUserNamespace { .. } => Family::Namespace,
            Step::ListenEgress { .. }
            | Step::SeccompToMonitor { .. }
            | Step::Chdir { .. }
            | Step::DropCapabilities { .. }
            | Step::NoNewPrivs
            | Step::Landlock { .. }
            | Step::Seccomp(_)
            | Step::StartReaper
            | Step::LandlockAllowList { .. }
            | Step::LandlockOnlyFilter { .. }
            | Step::RefuseKeyrings
            | Step::HandGitDirs { .. }
            | Step::CallerSeccomp { .. }
            | Step::ReopenFd { .. }
            | Step::SealFds { .. }
            | Step::DieWithParent
            | Step::NewSession
            | Step::StayInit
            | Step::DetachTerminal
            | Step::PidOneInit { .. }
            | Step::HandInit
            | Step::LandlockScopes { .. }
            | Step::BlockOnFd { .. }
            | Step::LockFile { .. }
            | Step::JoinCgroup { .. }
            | Step::Exec { .. } => Family::Process,
        }
    }
}
