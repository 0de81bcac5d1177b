//! How a Step reads: the syscalls `qwrap plan` prints for it, one line
//! each (tests/plan_calls.rs holds them to a trace, exec/fake_tests.rs to
//! the executor's code). The namespaces' steps read here; the host's, the
//! mounts', the process's and the Landlock-only mode's in their modules.

use super::step::{IdMap, Step};
use super::step_args::q;
use std::fmt;

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::ListenEgress { port } => write!(
                f,
                "socket(AF_INET, SOCK_STREAM); setsockopt(SO_REUSEADDR); bind(127.0.0.1:{port}); listen(); sendmsg(<warden>, SCM_RIGHTS): the warden serves it from outside"
            ),
            Step::WriteHostFile { .. }
            | Step::CreateHostDir { .. }
            | Step::PrepareCaches { .. }
            | Step::PrepareReview { .. }
            | Step::MakeCgroup { .. }
            | Step::JoinCgroup { .. }
            | Step::StartWarden { .. } => super::step_text_host::write(self, f),
            Step::Unshare { ns } => write!(f, "unshare({})", ns.names()),
            Step::DenySetgroups => write!(f, "openat(\"/proc/self/setgroups\", O_WRONLY); write(\"deny\")"),
            Step::WriteIdMap { map, inside, outside } => {
                let file = if *map == IdMap::Uid { "uid_map" } else { "gid_map" };
                write!(
                    f,
                    "openat(\"/proc/self/{file}\", O_WRONLY); write(\"{inside} {outside} 1\")"
                )
            }
            Step::LoopbackUp => write!(
                f,
                "ioctl(socket(AF_INET, SOCK_DGRAM), SIOCSIFFLAGS, {{\"lo\", IFF_UP}})"
            ),
            Step::Chdir { candidates } if candidates.len() == 1 => write!(f, "chdir({})", q(&candidates[0])),
            Step::DropCapabilities {
                keep,
                bounding,
                ambient,
            } => super::step_text_process::capabilities(keep, *bounding, *ambient, f),
            Step::Chdir { candidates } => {
                let c: Vec<String> = candidates.iter().map(|p| q(p)).collect();
                write!(f, "chdir(the first of {})", c.join(", "))
            }
            Step::DieWithParent
            | Step::NewSession
            | Step::StayInit
            | Step::DetachTerminal
            | Step::CloneMonitor { .. }
            | Step::JoinNamespace { .. }
            | Step::ForkIntoPidNamespace { .. }
            | Step::NotifyMonitor
            | Step::AssertUsernsDisabled
            | Step::SetHostname { .. }
            | Step::CallerSeccomp { .. }
            | Step::PidOneInit { .. }
            | Step::HandInit
            | Step::LandlockScopes { .. }
            | Step::BlockOnFd { .. }
            | Step::LockFile { .. }
            | Step::DisableUserns
            | Step::NestUserNamespace { .. } => super::step_text_process::write(self, f),
            Step::MakePrivateDir { .. }
            | Step::LandlockAllowList { .. }
            | Step::LandlockOnlyFilter { .. } => super::step_text_landlock::write(self, f),
            Step::Exec { argv, env, .. } => super::step_text_process::exec(argv, env, f),
            Step::MakeMountsSlave
            | Step::CloneTree { .. }
            | Step::SetTreeAttr { .. }
            | Step::MountTmpfs { .. }
            | Step::AttachTree { .. }
            | Step::MakeMountPoint { .. }
            | Step::Symlink { .. }
            | Step::BindMount { .. }
            | Step::PivotRoot { .. }
            | Step::EnterRoot { .. } => super::step_text_mount::tree(self, f),
            Step::SetPathAttr { .. }
            | Step::MakeTreePrivate { .. }
            | Step::RemountTree { .. }
            | Step::Remount { .. } => super::step_text_mount::attributes(self, f),
            Step::ClaimPty { .. }
            | Step::MountDevpts { .. }
            | Step::MakeHiddenSource { .. }
            | Step::AttachHidden { .. }
            | Step::MountProc { .. }
            | Step::MountMqueue { .. }
            | Step::ReadOnlyInPlace { .. }
            | Step::CopyFdToFile { .. }
            | Step::Chmod { .. }
            | Step::MakeOverlay { .. }
            | Step::HomeCaches { .. } => super::step_text_mount::filesystems(self, f),

            Step::RefuseKeyrings
            | Step::SeccompToMonitor { .. }
            | Step::NoNewPrivs
            | Step::Landlock { .. }
            | Step::HandGitDirs { .. }
            | Step::StartReaper
            | Step::Seccomp(_)
            | Step::ReopenFd { .. }
            | Step::SealFds { .. } => super::step_text_process::confinement(self, f),
        }
    }
}
