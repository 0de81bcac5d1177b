//! The bubblewrap-compatible front end: when qwrap runs as `bwrap` (or as
//! `qwrap bwrap ARGS…`), bubblewrap's command line becomes a Plan for the
//! same executor. Like bubblewrap it forks: a monitor stays outside and
//! exits as the sandbox does; errors print as `bwrap: …` and exit 1.
//! qwrap's own extra layers stay off unless `QWRAP_BWRAP_LAYERS=1` or
//! `QWRAP_LANDLOCK=require`.

pub mod args;
mod config;
mod error;
mod filesystem;
mod privileges;
mod usage;

use crate::plan::{JoinNamespace, LockFile, NestUserNamespace};
pub use error::LowerError;
use usage::usage;

use crate::exec;
use crate::host::{HostFacts, MountApi};
use crate::plan::{Confinement, Entry, Identity, Join, Namespaces, Plan, SandboxSpec, Shape, Step};
use crate::policy::{EnvRules, LandlockMode};
use args::{Config, EnvOp, Parsed};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The bubblewrap version whose behaviour this mode follows.
pub const BWRAP_VERSION: &str = "0.11.1";

/// Runs bwrap mode with the arguments after the program name; returns the
/// exit status when the command could not be run.
pub fn main(args: Vec<OsString>) -> i32 {
    let level_prefix = args.iter().any(|a| a == "--level-prefix");
    let fail = |msg: &str| {
        eprintln!("{}bwrap: {msg}", if level_prefix { "<3>" } else { "" });
        i32::from(crate::exit::FAILED)
    };
    let config = match args::parse(args) {
        Ok(Parsed::Run(c)) => c,
        Ok(Parsed::Help) => {
            print!("{}", usage(&program_name()));
            return 0;
        }
        Ok(Parsed::Version) => {
            println!("bubblewrap {BWRAP_VERSION} (qwrap {})", crate::VERSION);
            return 0;
        }
        Err(e) => return fail(&e.0),
    };
    let host = match crate::host::probe(&Default::default()) {
        Ok(h) => h,
        Err(e) => return fail(&e.to_string()),
    };
    let caller = crate::policy::Caller::from_process();
    for w in config
        .warnings
        .iter()
        .cloned()
        .chain(explain_note(&caller, &host))
    {
        eprintln!("{}bwrap: {w}", if level_prefix { "<4>" } else { "" });
    }
    let ctx = match Context::new(&caller, &host) {
        Ok(c) => c,
        Err(e) => return fail(&e.to_string()),
    };
    let plan = match lower(&config, &ctx) {
        Ok(p) => p,
        Err(e) => return fail(&e.to_string()),
    };
    if let Some(line) = privileges::degraded(&ctx) {
        eprintln!("{line}");
    }
    let trace = std::env::var("QWRAP_TRACE").is_ok_and(|v| v == "1");
    let err = exec::execute(&plan, exec::Options { trace, timing: false });
    let text = err.to_string();
    let text = text.strip_prefix("qwrap: ").unwrap_or(&text);
    fail(&text.replace("\nhint: ", "\nbwrap: hint: "))
}

/// The kernel that lets a call the monitor heard go on
/// (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
const EXPLAIN_KERNEL: (u32, u32) = (5, 5);

/// bwrap mode keeps bubblewrap's behaviour unless the caller asks for the
/// refusals (`QWRAP_EXPLAIN`).
fn explain_asked(caller: &crate::policy::Caller) -> bool {
    caller.var(crate::policy::ENV_EXPLAIN).is_some_and(|v| {
        matches!(
            v.to_string_lossy().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// Asked for where the kernel cannot have it: said, not left to read
/// silence as "nothing was refused".
fn explain_note(caller: &crate::policy::Caller, host: &HostFacts) -> Option<String> {
    (explain_asked(caller) && host.kernel < EXPLAIN_KERNEL).then(|| {
        format!(
            "QWRAP_EXPLAIN: Linux {}.{} cannot let a call the monitor heard go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE came with Linux 5.5): no refusals are said",
            host.kernel.0, host.kernel.1
        )
    })
}

/// How the caller named this program, as bubblewrap's usage line shows it:
/// its argv[0], or `qwrap bwrap` when run as qwrap's subcommand.
fn program_name() -> String {
    let argv0 = std::env::args_os()
        .next()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bwrap".into());
    if is_qwrap_name(std::ffi::OsStr::new(&argv0)) {
        format!("{argv0} bwrap")
    } else {
        argv0
    }
}

/// Whether a program name (argv[0]) is qwrap's own: any other name runs
/// bwrap mode.
pub fn is_qwrap_name(argv0: &std::ffi::OsStr) -> bool {
    Path::new(argv0)
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().starts_with(b"qwrap"))
}

/// What lowering needs to know about the caller.
#[derive(Debug, Clone)]
pub struct Context {
    pub uid: u32,
    pub gid: u32,
    pub cwd: Option<PathBuf>,
    pub home: Option<PathBuf>,
    /// The terminal on stdout, bound to /dev/console as bubblewrap does.
    pub console: Option<PathBuf>,
    pub landlock_abi: u32,
    /// `QWRAP_BWRAP_LAYERS=1`: Landlock and the TIOCSTI filter too.
    pub layers: bool,
    /// `QWRAP_LANDLOCK`: `require` turns the layers on and fails closed
    /// without them; `off` leaves Landlock out of them.
    pub landlock: LandlockMode,
    /// The host's root is the initramfs (no pivot_root there).
    pub initramfs_root: bool,
    /// The mount API the root is built with (`QWRAP_MOUNT_API` forces it).
    pub mount_api: MountApi,
    /// The caller's permitted capabilities: a sandbox root keeps these and
    /// no more, even in a new user namespace.
    pub caps_permitted: u64,
    /// `QWRAP_EXPLAIN` on a kernel that can have it: the monitor says the
    /// refusals (bubblewrap's behaviour otherwise).
    pub explain: bool,
}

impl Context {
    /// The caller as bubblewrap sees it: `$HOME` as set (never
    /// /etc/passwd), a working directory only where it can be read.
    pub fn new(caller: &crate::policy::Caller, host: &HostFacts) -> Result<Self, LowerError> {
        let landlock = match caller.var(crate::policy::settings::ENV_LANDLOCK) {
            Some(v) => v.to_string_lossy().parse().map_err(|e| LowerError::Setting {
                name: crate::policy::settings::ENV_LANDLOCK,
                value: v.to_os_string(),
                reason: e,
            })?,
            None => LandlockMode::BestEffort,
        };
        let stdout = rustix::stdio::stdout();
        let console = rustix::termios::isatty(stdout)
            .then(|| std::fs::read_link("/proc/self/fd/1").ok())
            .flatten()
            .filter(|p| p.is_absolute());
        Ok(Context {
            uid: caller.uid,
            gid: caller.gid,
            cwd: caller.cwd.clone().ok(),
            home: caller.env.get(std::ffi::OsStr::new("HOME")).map(PathBuf::from),
            console,
            landlock_abi: host.landlock_abi,
            layers: caller.var("QWRAP_BWRAP_LAYERS").is_some_and(|v| v == "1"),
            landlock,
            initramfs_root: crate::host::root_is_initramfs(),
            mount_api: host.mount_api,
            caps_permitted: rustix::thread::capabilities(None)
                .map(|c| c.permitted.bits())
                .unwrap_or(0),
            explain: explain_asked(caller) && host.kernel >= EXPLAIN_KERNEL,
        })
    }
}

/// The environment changes, in order, folded into one set of rules.
fn env_rules(ops: &[EnvOp]) -> EnvRules {
    let mut clear = false;
    let mut state: BTreeMap<OsString, Option<OsString>> = BTreeMap::new();
    for op in ops {
        match op {
            EnvOp::Clear => {
                clear = true;
                state.clear();
            }
            EnvOp::Set(k, v) => {
                state.insert(k.clone(), Some(v.clone()));
            }
            EnvOp::Unset(k) => {
                state.insert(k.clone(), None);
            }
        }
    }
    EnvRules {
        clear,
        unset: state
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.clone())
            .collect(),
        set: state.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect(),
    }
}

/// Turns bubblewrap's options into the sandbox's spec, lowered to the
/// executor's steps by the same function as `run`'s. Pure but for looking
/// at the host's source paths.
pub fn lower(c: &Config, ctx: &Context) -> Result<Plan, LowerError> {
    Ok(crate::plan::lower(spec(c, ctx)?))
}

/// bubblewrap's options as the sandbox's spec.
pub fn spec(c: &Config, ctx: &Context) -> Result<SandboxSpec, LowerError> {
    let root = ctx.uid == 0;
    // With --userns the sandbox joins that user namespace instead of making
    // one, and its maps are the namespace's own.
    let ns = Namespaces {
        user: c.userns_fd.is_none() && (c.unshare_user || c.unshare_user_try || !root),
        pid: c.unshare_pid,
        net: c.unshare_net,
        ipc: c.unshare_ipc,
        uts: c.unshare_uts,
        cgroup: c.unshare_cgroup || c.unshare_cgroup_try,
    };
    if (c.uid.is_some() || c.gid.is_some()) && !ns.user {
        return Err(LowerError::IdsWithoutUserns);
    }
    // Joining needs the namespaces made in order, so the monitor forks
    // plainly and the child reports when it is ready.
    let join = (c.userns_fd.is_some() || c.pidns_fd.is_some()).then_some(Join {
        userns_fd: c.userns_fd,
        pidns_fd: c.pidns_fd,
    });
    let identity = match c.userns_block_fd {
        Some(block_fd) => Identity::CallerMaps { block_fd },
        None if ns.user => Identity::Map {
            uid: (c.uid.unwrap_or(ctx.uid), ctx.uid),
            gid: (c.gid.unwrap_or(ctx.gid), ctx.gid),
        },
        None => Identity::None,
    };
    let (mounts, writable) = filesystem::mount_ops(c, ctx, ns.pid)?;
    let chdir = match &c.chdir {
        Some(d) => vec![d.clone()],
        None => [ctx.cwd.clone(), ctx.home.clone(), Some(PathBuf::from("/"))]
            .into_iter()
            .flatten()
            .collect(),
    };
    let mut inside = Vec::new();
    if let Some(fd) = c.userns2_fd {
        inside.push(Step::JoinNamespace(JoinNamespace { fd, pid: false }));
    }
    for path in &c.lock_files {
        inside.push(Step::LockFile(LockFile { path: path.clone() }));
    }
    let sandbox_uid = if ns.user {
        c.uid.unwrap_or(ctx.uid)
    } else {
        ctx.uid
    };
    if c.disable_userns {
        inside.push(Step::NestUserNamespace(NestUserNamespace {
            uid: sandbox_uid,
            gid: c.gid.unwrap_or(ctx.gid),
        }));
    }
    if c.assert_userns_disabled {
        inside.push(Step::AssertUsernsDisabled);
    }
    let (landlock, filter) = privileges::layers(ctx, writable)?;
    // QWRAP_EXPLAIN: the calls that can be refused go to the monitor
    // through one filter, the layers' refusals folded into it.
    let layers = filter == crate::plan::Filter::Seccomp(crate::plan::filter_rules::Profile::PLAIN);
    let (filter, explain) = if ctx.explain {
        let orders = crate::plan::explain::bwrap_orders(layers, ctx.uid == 0);
        (crate::plan::Filter::Monitor { layers }, Some(Box::new(orders)))
    } else {
        (filter, None)
    };
    let in_userns = ns.user || c.userns_fd.is_some();
    Ok(SandboxSpec {
        host: Vec::new(),
        join_cgroup: None,
        ns,
        entry: Entry::Monitor {
            die_with_parent: c.die_with_parent,
            info_fd: c.info_fd,
            json_status_fd: c.json_status_fd,
            forward_signals: false,
            join,
            explain,
        },
        identity,
        disable_userns: c.disable_userns,
        hostname: c.hostname.clone(),
        egress_port: None,
        inherited: Vec::new(),
        mounts,
        mount_api: ctx.mount_api,
        shape: Shape {
            staged: true,
            ensure_points: true,
            userxattr: in_userns,
        },
        seal_root: false,
        resolve_in_root: true,
        in_root: Vec::new(),
        confinement: Confinement {
            chdir,
            inside,
            capabilities: privileges::capabilities(c, ctx, sandbox_uid, in_userns)?,
            seal: None,
            landlock,
            allow_list: None,
            landlock_only_filter: None,
            reaper: false,
            refuse_keyrings: false,
            filter,
            caller_filters: c.seccomp_programs.clone(),
            // Armed before the monitor's fork.
            die_with_parent: false,
            new_session: c.new_session,
            detach_terminal: false,
            pid_one: (ns.pid && !c.as_pid_1).then(crate::plan::PidOne::default),
            block_fd: c.block_fd,
            argv: c.command.clone(),
            argv0: c.argv0.clone(),
            env: env_rules(&c.env),
        },
    })
}

#[cfg(test)]
#[path = "lower_tests.rs"]
mod tests;
