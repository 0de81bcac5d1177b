//! The bubblewrap-compatible front end: when qwrap runs as `bwrap` (or as
//! `qwrap bwrap ARGS…`), bubblewrap's command line becomes a Plan for the
//! same executor. Like bubblewrap it forks: a monitor stays outside and
//! exits as the sandbox does; errors print as `bwrap: …` and exit 1.
//! qwrap's own extra layers stay off unless `QWRAP_BWRAP_LAYERS=1` or
//! `QWRAP_LANDLOCK=require`.

pub mod args;
mod privileges;

use crate::exec;
use crate::host::HostFacts;
use crate::plan::{DEVICES, Flags, IdMap, Namespaces, OverlayUpper, Plan, Role, Step, under};
use crate::policy::{EnvRules, LandlockMode};
use args::{Config, EnvOp, FsOp, Parsed};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The bubblewrap version whose behaviour this mode follows.
pub const BWRAP_VERSION: &str = "0.11.1";

/// Where bwrap mode works before the pivot: a tmpfs over /tmp in the new
/// mount namespace. The new root is a directory in it, so that files made
/// for `--bind-data` can live beside the root rather than in it.
const STAGING: &str = "/tmp";
const NEW_ROOT: &str = "/tmp/newroot";

/// /proc entries bubblewrap makes read-only after mounting /proc.
const PROC_READ_ONLY: [&str; 4] = ["sys", "sysrq-trigger", "irq", "bus"];

/// Runs bwrap mode with the arguments after the program name; returns the
/// exit status when the command could not be run.
pub fn main(args: Vec<OsString>) -> i32 {
    let level_prefix = args.iter().any(|a| a == "--level-prefix");
    let fail = |msg: &str| {
        eprintln!("{}bwrap: {msg}", if level_prefix { "<3>" } else { "" });
        1
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
    for w in &config.warnings {
        eprintln!("{}bwrap: {w}", if level_prefix { "<4>" } else { "" });
    }
    let host = match crate::host::probe() {
        Ok(h) => h,
        Err(e) => return fail(&e),
    };
    let ctx = match Context::from_process(&host) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let plan = match lower(&config, &ctx) {
        Ok(p) => p,
        Err(e) => return fail(&e),
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

/// How the caller named this program, as bubblewrap's usage line shows it:
/// its argv[0], or `qwrap bwrap` when run as qwrap's subcommand.
fn program_name() -> String {
    let argv0 = std::env::args_os()
        .next()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| "bwrap".into());
    let base = Path::new(&argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if base.starts_with("qwrap") {
        format!("{argv0} bwrap")
    } else {
        argv0
    }
}

/// The usage text: callers read it to learn what is supported (Codex looks
/// for `--as-pid-1` and `--perms`, sandbox-runtime for `--disable-userns`).
fn usage(program: &str) -> String {
    format!(
        "usage: {program} [OPTIONS...] [--] COMMAND [ARGS...]\n\n{OPTIONS_HELP}\n\
         qwrap {}: bubblewrap {BWRAP_VERSION}'s command line on qwrap's engine.\n\
         man qwrap-bwrap; every option, supported, refused or differing: /usr/share/doc/qwrap/bwrap-compat.md\n",
        crate::VERSION
    )
}

const OPTIONS_HELP: &str = "    --help                       Print this help
    --version                    Print version
    --args FD                    Parse NUL-separated args from FD
    --argv0 VALUE                Set argv[0] to the value VALUE before running the program
    --level-prefix               Prepend e.g. <3> to diagnostic messages
    --unshare-all                Unshare every namespace we support by default
    --share-net                  Retain the network namespace (can only combine with --unshare-all)
    --unshare-user               Create new user namespace (may be automatically implied if not setuid)
    --unshare-user-try           Create new user namespace if possible else continue by skipping it
    --unshare-ipc                Create new ipc namespace
    --unshare-pid                Create new pid namespace
    --unshare-net                Create new network namespace
    --unshare-uts                Create new uts namespace
    --unshare-cgroup             Create new cgroup namespace
    --unshare-cgroup-try         Create new cgroup namespace if possible else continue by skipping it
    --userns FD                  Use this user namespace (cannot combine with --unshare-user)
    --userns2 FD                 After setup switch to this user namespace, only useful with --userns
    --disable-userns             Disable further use of user namespaces inside sandbox
    --assert-userns-disabled     Fail unless further use of user namespace inside sandbox is disabled
    --pidns FD                   Use this pid namespace (as parent namespace if using --unshare-pid)
    --uid UID                    Custom uid in the sandbox (requires --unshare-user or --userns)
    --gid GID                    Custom gid in the sandbox (requires --unshare-user or --userns)
    --hostname NAME              Custom hostname in the sandbox (requires --unshare-uts)
    --chdir DIR                  Change directory to DIR
    --clearenv                   Unset all environment variables
    --setenv VAR VALUE           Set an environment variable
    --unsetenv VAR               Unset an environment variable
    --lock-file DEST             Take a lock on DEST while sandbox is running
    --sync-fd FD                 Keep this fd open while sandbox is running
    --bind SRC DEST              Bind mount the host path SRC on DEST
    --bind-try SRC DEST          Equal to --bind but ignores non-existent SRC
    --dev-bind SRC DEST          Bind mount the host path SRC on DEST, allowing device access
    --dev-bind-try SRC DEST      Equal to --dev-bind but ignores non-existent SRC
    --ro-bind SRC DEST           Bind mount the host path SRC readonly on DEST
    --ro-bind-try SRC DEST       Equal to --ro-bind but ignores non-existent SRC
    --bind-fd FD DEST            Bind open directory or path fd on DEST
    --ro-bind-fd FD DEST         Bind open directory or path fd read-only on DEST
    --remount-ro DEST            Remount DEST as readonly; does not recursively remount
    --overlay-src SRC            Read files from SRC in the following overlay
    --overlay RWSRC WORKDIR DEST Mount overlayfs on DEST, with all but the last --overlay-src as lower layers, RWSRC as the upper layer and WORKDIR its work directory
    --tmp-overlay DEST           Mount overlayfs on DEST, with all --overlay-src as lower layers and writes going to an invisible tmpfs
    --ro-overlay DEST            Mount overlayfs read-only on DEST, with all --overlay-src as lower layers
    --exec-label LABEL           Exec label for the sandbox (refused: SELinux labels are not supported)
    --file-label LABEL           File label for temporary sandbox content (refused: SELinux labels are not supported)
    --proc DEST                  Mount new procfs on DEST
    --dev DEST                   Mount new dev on DEST
    --tmpfs DEST                 Mount new tmpfs on DEST
    --mqueue DEST                Mount new mqueue on DEST
    --dir DEST                   Create dir at DEST
    --file FD DEST               Copy from FD to destination DEST
    --bind-data FD DEST          Copy from FD to file which is bind-mounted on DEST
    --ro-bind-data FD DEST       Copy from FD to file which is readonly bind-mounted on DEST
    --symlink SRC DEST           Create symlink at DEST with target SRC
    --seccomp FD                 Load and use seccomp rules from FD (not repeatable)
    --add-seccomp-fd FD          Load and use seccomp rules from FD (repeatable)
    --block-fd FD                Block on FD until some data to read is available
    --userns-block-fd FD         Block on FD until the user namespace is ready
    --info-fd FD                 Write information about the running container to FD
    --json-status-fd FD          Write container status to FD as multiple JSON documents
    --new-session                Create a new terminal session
    --die-with-parent            Kills with SIGKILL child process (COMMAND) when bwrap or bwrap's parent dies.
    --as-pid-1                   Do not install a reaper process with PID=1
    --cap-add CAP                Add cap CAP when running as privileged user
    --cap-drop CAP               Drop cap CAP when running as privileged user
    --perms OCTAL                Set permissions of next argument (--bind-data, --file, etc.)
    --size BYTES                 Set size of next argument (only for --tmpfs)
    --chmod OCTAL PATH           Change permissions of PATH (must already exist)
";

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
    /// The caller's permitted capabilities: a sandbox root keeps these and
    /// no more, even in a new user namespace.
    pub caps_permitted: u64,
}

impl Context {
    pub fn from_process(host: &HostFacts) -> Result<Self, String> {
        let landlock = match std::env::var(crate::policy::settings::ENV_LANDLOCK) {
            Ok(v) if !v.is_empty() => v
                .parse()
                .map_err(|e| format!("{}={v:?}: {e}", crate::policy::settings::ENV_LANDLOCK))?,
            _ => LandlockMode::BestEffort,
        };
        let stdout = rustix::stdio::stdout();
        let console = rustix::termios::isatty(stdout)
            .then(|| std::fs::read_link("/proc/self/fd/1").ok())
            .flatten()
            .filter(|p| p.is_absolute());
        Ok(Context {
            uid: host.uid,
            gid: host.gid,
            cwd: std::env::current_dir().ok(),
            home: std::env::var_os("HOME").map(PathBuf::from),
            console,
            landlock_abi: host.landlock_abi,
            layers: std::env::var("QWRAP_BWRAP_LAYERS").is_ok_and(|v| v == "1"),
            landlock,
            initramfs_root: crate::host::root_is_initramfs(),
            caps_permitted: rustix::thread::capabilities(None)
                .map(|c| c.permitted.bits())
                .unwrap_or(0),
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

/// Turns bubblewrap's options into the executor's steps. Pure but for
/// looking at the host's source paths.
pub fn lower(c: &Config, ctx: &Context) -> Result<Plan, String> {
    let ops = resolve_fd_binds(&c.ops)?;
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
        return Err("--uid and --gid require --unshare-user".into());
    }
    // Joining needs the namespaces made in order (setns before unshare), so
    // the monitor forks plainly and the child reports when it is ready.
    let join = c.userns_fd.is_some() || c.pidns_fd.is_some();
    let mut s: Vec<Step> = vec![Step::CloneMonitor {
        ns,
        info_fd: c.info_fd,
        json_status_fd: c.json_status_fd,
        die_with_parent: c.die_with_parent,
        join,
    }];
    if let Some(fd) = c.userns_fd {
        s.push(Step::JoinNamespace { fd, pid: false });
    }
    if join {
        s.push(Step::UnshareNamespaces { ns });
    }
    if let Some(fd) = c.userns_block_fd {
        // The caller reads the child's pid from --info-fd, writes its id
        // maps, then writes to this fd.
        s.push(Step::BlockOnFd { fd });
    } else if ns.user {
        s.push(Step::DenySetgroups);
        s.push(Step::WriteIdMap {
            map: IdMap::Uid,
            inside: c.uid.unwrap_or(ctx.uid),
            outside: ctx.uid,
        });
        s.push(Step::WriteIdMap {
            map: IdMap::Gid,
            inside: c.gid.unwrap_or(ctx.gid),
            outside: ctx.gid,
        });
    }
    if join {
        if let Some(fd) = c.pidns_fd {
            s.push(Step::JoinNamespace { fd, pid: true });
        }
        if ns.pid || c.pidns_fd.is_some() {
            s.push(Step::ForkIntoPidNamespace {
                new_pidns: ns.pid,
                die_with_parent: c.die_with_parent,
            });
        } else {
            s.push(Step::NotifyMonitor);
        }
    }
    if c.disable_userns {
        s.push(Step::DisableUserns);
    }
    if ns.net {
        s.push(Step::LoopbackUp);
    }
    if let Some(h) = &c.hostname {
        s.push(Step::SetHostname { name: h.clone() });
    }
    s.push(Step::MakeMountsSlave);

    // Every host source is cloned before anything is mounted.
    let mut trees = 0usize;
    let clone = |s: &mut Vec<Step>, trees: &mut usize, role: Role, source: &Path, recursive: bool| {
        let tree = *trees;
        *trees += 1;
        s.push(Step::CloneTree {
            tree,
            role,
            source: source.to_path_buf(),
            recursive,
        });
        tree
    };
    let mut op_trees: Vec<Vec<usize>> = Vec::with_capacity(c.ops.len());
    let mut skip: Vec<bool> = Vec::with_capacity(c.ops.len());
    for op in &ops {
        let mut t = Vec::new();
        let mut skipped = false;
        match op {
            FsOp::Bind {
                src,
                readonly,
                devices,
                optional,
                ..
            } => {
                if std::fs::symlink_metadata(src).is_err() {
                    if *optional {
                        skipped = true;
                    } else {
                        return Err(format!(
                            "Can't find source path {}: No such file or directory",
                            src.display()
                        ));
                    }
                } else {
                    let tree = clone(&mut s, &mut trees, Role::WritableRoot, src, true);
                    s.push(Step::SetTreeAttr {
                        tree,
                        set: Flags {
                            rdonly: *readonly,
                            nosuid: true,
                            nodev: !*devices,
                            noexec: false,
                        },
                        private: true,
                    });
                    t.push(tree);
                }
            }
            FsOp::Dev(_) => {
                for d in DEVICES {
                    t.push(clone(
                        &mut s,
                        &mut trees,
                        Role::Device,
                        &Path::new("/dev").join(d),
                        false,
                    ));
                }
                if let Some(console) = &ctx.console {
                    t.push(clone(&mut s, &mut trees, Role::Device, console, false));
                }
            }
            FsOp::Overlay { sources, upper, .. } => {
                // Host paths, resolved as the caller named them.
                let host = |p: &Path| match &ctx.cwd {
                    Some(cwd) if p.is_relative() => cwd.join(p),
                    _ => p.to_path_buf(),
                };
                let upper = match upper {
                    OverlayUpper::Dirs { upper, work } => OverlayUpper::Dirs {
                        upper: host(upper),
                        work: host(work),
                    },
                    other => other.clone(),
                };
                s.push(Step::MakeOverlay {
                    tree: trees,
                    lower: sources.iter().map(|p| host(p)).collect(),
                    upper,
                    userxattr: ns.user || c.userns_fd.is_some(),
                });
                t.push(trees);
                trees += 1;
            }
            FsOp::Proc(_) if !ns.pid => t.push(clone(
                &mut s,
                &mut trees,
                Role::HostRoot,
                Path::new("/proc"),
                true,
            )),
            _ => {}
        }
        op_trees.push(t);
        skip.push(skipped);
    }

    let staging = PathBuf::from(STAGING);
    s.push(Step::MountTmpfs {
        target: staging.clone(),
        flags: Flags::NOSUID_NODEV,
        mode: 0o755,
        size: None,
    });
    let new_root = PathBuf::from(NEW_ROOT);
    s.push(Step::Mkdir {
        path: new_root.clone(),
        mode: 0o755,
    });
    s.push(Step::BindMount {
        role: Role::HostRoot,
        source: new_root.clone(),
        target: new_root.clone(),
        recursive: false,
    });
    let mut data_files = 0usize;
    let mut writable: Vec<PathBuf> = Vec::new();
    for ((op, t), skipped) in ops.iter().zip(&op_trees).zip(&skip) {
        if *skipped {
            continue;
        }
        let at = |p: &Path| under(&new_root, &absolute(p));
        match op {
            FsOp::Bind {
                src, dest, readonly, ..
            } => {
                let target = at(dest);
                if target != new_root {
                    // bubblewrap's modes: a file made to mount on is 0444.
                    let dir = src.is_dir();
                    s.push(Step::EnsureMountPoint {
                        path: target.clone(),
                        dir,
                        mode: if dir { 0o755 } else { 0o444 },
                    });
                }
                s.push(Step::AttachTree {
                    tree: t[0],
                    role: Role::Bind,
                    target,
                });
                if !*readonly {
                    writable.push(absolute(dest));
                }
            }
            // Turned into binds of their paths by resolve_fd_binds.
            FsOp::BindFd { .. } => {}
            FsOp::RemountRo(dest) => s.push(Step::SetPathAttr {
                target: at(dest),
                recursive: false,
                set: Flags {
                    rdonly: true,
                    ..Flags::NONE
                },
                private: false,
            }),
            FsOp::Proc(dest) => {
                let target = at(dest);
                ensure_dir(&mut s, target.clone());
                if ns.pid {
                    s.push(Step::MountProc {
                        target: target.clone(),
                    });
                } else {
                    s.push(Step::AttachTree {
                        tree: t[0],
                        role: Role::HostRoot,
                        target: target.clone(),
                    });
                }
                for sub in PROC_READ_ONLY {
                    s.push(Step::ReadOnlyInPlace {
                        path: target.join(sub),
                    });
                }
            }
            FsOp::Dev(dest) => {
                dev(&mut s, &at(dest), t, ctx.console.is_some());
                writable.push(absolute(dest));
            }
            FsOp::Tmpfs { dest, perms, size } => {
                let target = at(dest);
                ensure_dir(&mut s, target.clone());
                s.push(Step::MountTmpfs {
                    target,
                    flags: Flags::NOSUID_NODEV,
                    mode: perms.unwrap_or(0o755),
                    size: *size,
                });
                writable.push(absolute(dest));
            }
            FsOp::Mqueue(dest) => {
                let target = at(dest);
                ensure_dir(&mut s, target.clone());
                s.push(Step::MountMqueue { target });
            }
            FsOp::Dir { dest, perms } => s.push(Step::EnsureMountPoint {
                path: at(dest),
                dir: true,
                mode: perms.unwrap_or(0o755),
            }),
            FsOp::Symlink { target, link } => {
                let link = at(link);
                if let Some(parent) = link.parent() {
                    ensure_dir(&mut s, parent.to_path_buf());
                }
                s.push(Step::Symlink {
                    target: target.clone(),
                    link,
                });
            }
            FsOp::File { fd, dest, perms } => {
                let path = at(dest);
                if let Some(parent) = path.parent() {
                    ensure_dir(&mut s, parent.to_path_buf());
                }
                s.push(Step::CopyFdToFile {
                    fd: *fd,
                    path,
                    mode: perms.unwrap_or(0o666),
                });
            }
            FsOp::BindData {
                fd,
                dest,
                readonly,
                perms,
            } => {
                let data = staging.join(format!(".bind-data-{data_files}"));
                data_files += 1;
                s.push(Step::CopyFdToFile {
                    fd: *fd,
                    path: data.clone(),
                    mode: perms.unwrap_or(0o600),
                });
                let target = at(dest);
                s.push(Step::EnsureMountPoint {
                    path: target.clone(),
                    dir: false,
                    mode: 0o444,
                });
                s.push(Step::BindMount {
                    role: Role::WritableRoot,
                    source: data,
                    target: target.clone(),
                    recursive: false,
                });
                if *readonly {
                    s.push(Step::Remount {
                        target,
                        flags: Flags {
                            rdonly: true,
                            nosuid: true,
                            nodev: true,
                            noexec: false,
                        },
                    });
                }
            }
            FsOp::Overlay { upper, dest, .. } => {
                let target = at(dest);
                ensure_dir(&mut s, target.clone());
                s.push(Step::AttachTree {
                    tree: t[0],
                    role: Role::Bind,
                    target,
                });
                if *upper != OverlayUpper::ReadOnly {
                    writable.push(absolute(dest));
                }
            }
            FsOp::Chmod { perms, path } => s.push(Step::Chmod {
                path: at(path),
                mode: *perms,
            }),
        }
    }
    s.push(Step::EnterRoot { new_root });
    let candidates = match &c.chdir {
        Some(d) => vec![d.clone()],
        None => [ctx.cwd.clone(), ctx.home.clone(), Some(PathBuf::from("/"))]
            .into_iter()
            .flatten()
            .collect(),
    };
    s.push(Step::ChdirFirst { candidates });
    if let Some(fd) = c.userns2_fd {
        s.push(Step::JoinNamespace { fd, pid: false });
    }
    for path in &c.lock_files {
        s.push(Step::LockFile { path: path.clone() });
    }
    let sandbox_uid = if ns.user {
        c.uid.unwrap_or(ctx.uid)
    } else {
        ctx.uid
    };
    if c.disable_userns {
        s.push(Step::NestUserNamespace {
            uid: sandbox_uid,
            gid: c.gid.unwrap_or(ctx.gid),
        });
    }
    if c.assert_userns_disabled {
        s.push(Step::AssertUsernsDisabled);
    }
    s.extend(privileges::capabilities(
        c,
        ctx,
        sandbox_uid,
        ns.user || c.userns_fd.is_some(),
    )?);
    s.push(Step::NoNewPrivs);
    s.extend(privileges::layers(ctx, writable)?);
    if !c.seccomp_programs.is_empty() {
        s.push(Step::CallerSeccomp {
            programs: c.seccomp_programs.clone(),
        });
    }
    if c.new_session {
        s.push(Step::NewSession {
            die_with_parent: c.die_with_parent,
        });
    }
    if ns.pid && !c.as_pid_1 {
        s.push(Step::PidOneInit {
            die_with_parent: c.die_with_parent,
        });
    }
    if let Some(fd) = c.block_fd {
        s.push(Step::BlockOnFd { fd });
    }
    s.push(Step::Exec {
        argv: c.command.clone(),
        argv0: c.argv0.clone(),
        env: env_rules(&c.env),
    });
    Ok(Plan {
        mount_api: crate::host::MountApi::New,
        new_root: Some(PathBuf::from(NEW_ROOT)),
        steps: s,
    })
}

/// `--bind-fd`/`--ro-bind-fd` as the binds of the paths their fds name: the
/// fd's mount lives in the caller's mount namespace, which a clone made
/// inside the sandbox's cannot reach, but its path can.
fn resolve_fd_binds(ops: &[FsOp]) -> Result<Vec<FsOp>, String> {
    ops.iter()
        .map(|op| match op {
            FsOp::BindFd { fd, dest, readonly } => {
                let src = std::fs::read_link(format!("/proc/self/fd/{fd}"))
                    .ok()
                    .filter(|p| p.is_absolute())
                    .ok_or_else(|| format!("Can't resolve fd {fd}: not an open file or directory"))?;
                Ok(FsOp::Bind {
                    src,
                    dest: dest.clone(),
                    readonly: *readonly,
                    devices: false,
                    optional: false,
                })
            }
            other => Ok(other.clone()),
        })
        .collect()
}

/// A directory (and its parents) made when missing.
fn ensure_dir(s: &mut Vec<Step>, path: PathBuf) {
    s.push(Step::EnsureMountPoint {
        path,
        dir: true,
        mode: 0o755,
    });
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new("/").join(p)
    }
}

/// bubblewrap's /dev: a tmpfs with the host's null zero full random urandom
/// tty bound over empty files, the /proc/self/fd links and `core`, an `shm`
/// directory, a new devpts with `ptmx`, and the caller's terminal as
/// `console` when stdout is one.
fn dev(s: &mut Vec<Step>, dev: &Path, trees: &[usize], console: bool) {
    ensure_dir(s, dev.to_path_buf());
    s.push(Step::MountTmpfs {
        target: dev.to_path_buf(),
        flags: Flags::NOSUID_NODEV,
        mode: 0o755,
        size: None,
    });
    for (i, name) in DEVICES.iter().enumerate() {
        let path = dev.join(name);
        s.push(Step::CreateFile { path: path.clone() });
        s.push(Step::AttachTree {
            tree: trees[i],
            role: Role::Device,
            target: path,
        });
    }
    for (link, target) in [
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("fd", "/proc/self/fd"),
        ("core", "/proc/kcore"),
    ] {
        s.push(Step::Symlink {
            target: target.into(),
            link: dev.join(link),
        });
    }
    for dir in ["shm", "pts"] {
        s.push(Step::Mkdir {
            path: dev.join(dir),
            mode: 0o755,
        });
    }
    s.push(Step::MountDevpts {
        target: dev.join("pts"),
    });
    s.push(Step::Symlink {
        target: "pts/ptmx".into(),
        link: dev.join("ptmx"),
    });
    if console {
        s.push(Step::CreateFile {
            path: dev.join("console"),
        });
        s.push(Step::AttachTree {
            tree: trees[DEVICES.len()],
            role: Role::Device,
            target: dev.join("console"),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_lists_the_options_callers_look_for() {
        let u = usage("bwrap");
        for opt in [
            "--as-pid-1",
            "--perms",
            "--disable-userns",
            "--overlay-src",
            "--add-seccomp-fd",
        ] {
            assert!(u.contains(&format!("    {opt} ")), "{opt}");
        }
    }

    fn ctx(uid: u32) -> Context {
        Context {
            uid,
            gid: uid,
            cwd: Some("/w".into()),
            home: Some("/home/u".into()),
            console: None,
            landlock_abi: 7,
            layers: false,
            landlock: LandlockMode::BestEffort,
            initramfs_root: false,
            caps_permitted: 0,
        }
    }

    fn plan(args: &[&str], uid: u32) -> Plan {
        let c = match args::parse(args.iter().map(OsString::from).collect()).unwrap() {
            Parsed::Run(c) => c,
            other => panic!("{other:?}"),
        };
        lower(&c, &ctx(uid)).unwrap()
    }

    #[test]
    fn env_ops_fold_in_order() {
        let r = env_rules(&[
            EnvOp::Set("A".into(), "1".into()),
            EnvOp::Unset("A".into()),
            EnvOp::Set("B".into(), "2".into()),
        ]);
        assert_eq!(r.unset, vec![OsString::from("A")]);
        assert_eq!(r.set, vec![(OsString::from("B"), OsString::from("2"))]);
        assert!(!r.clear);
        let r = env_rules(&[EnvOp::Set("A".into(), "1".into()), EnvOp::Clear]);
        assert!(r.clear && r.set.is_empty());
    }

    #[test]
    fn root_without_unshare_user_gets_no_user_namespace() {
        let p = plan(&["--ro-bind", "/", "/", "true"], 0);
        assert!(matches!(p.steps[0], Step::CloneMonitor { ns, .. } if !ns.user));
        assert!(!p.steps.contains(&Step::DenySetgroups));
        let p = plan(&["--ro-bind", "/", "/", "true"], 1000);
        assert!(matches!(p.steps[0], Step::CloneMonitor { ns, .. } if ns.user));
        assert!(p.steps.contains(&Step::WriteIdMap {
            map: IdMap::Uid,
            inside: 1000,
            outside: 1000
        }));
        let p = plan(
            &["--unshare-user", "--uid", "0", "--ro-bind", "/", "/", "true"],
            1000,
        );
        assert!(p.steps.contains(&Step::WriteIdMap {
            map: IdMap::Uid,
            inside: 0,
            outside: 1000
        }));
    }

    #[test]
    fn operations_apply_in_argument_order_after_every_clone() {
        let p = plan(
            &[
                "--ro-bind",
                "/",
                "/",
                "--tmpfs",
                "/tmp",
                "--bind",
                "/tmp",
                "/tmp/x",
                "--dev",
                "/dev",
                "true",
            ],
            1000,
        );
        let text = p.to_string();
        let tmpfs = text.find(r#"mount("tmpfs", "/tmp/newroot/tmp""#).unwrap();
        let bind = text
            .find(r#"move_mount(tree1, "", AT_FDCWD, "/tmp/newroot/tmp/x""#)
            .unwrap();
        let dev = text.find(r#"mount("tmpfs", "/tmp/newroot/dev""#).unwrap();
        assert!(tmpfs < bind && bind < dev, "{text}");
        let last_clone = p
            .steps
            .iter()
            .rposition(|s| matches!(s, Step::CloneTree { .. }))
            .unwrap();
        let staging = p
            .steps
            .iter()
            .position(|s| matches!(s, Step::MountTmpfs { target, .. } if target == Path::new(STAGING)))
            .unwrap();
        assert!(last_clone < staging);
    }

    #[test]
    fn pid_namespace_mounts_proc_and_starts_an_init() {
        let p = plan(&["--unshare-pid", "--proc", "/proc", "true"], 1000);
        assert!(p.steps.iter().any(|s| matches!(s, Step::MountProc { .. })));
        assert!(p.steps.contains(&Step::PidOneInit {
            die_with_parent: false
        }));
        let p = plan(&["--unshare-pid", "--as-pid-1", "true"], 1000);
        assert!(!p.steps.iter().any(|s| matches!(s, Step::PidOneInit { .. })));
        // Without a PID namespace /proc is the host's, bound.
        let p = plan(&["--proc", "/proc", "true"], 1000);
        assert!(!p.steps.iter().any(|s| matches!(s, Step::MountProc { .. })));
        assert!(p.to_string().contains(r#"open_tree(AT_FDCWD, "/proc""#));
    }

    #[test]
    fn missing_sources() {
        let c = match args::parse(
            ["--bind", "/nonexistent/qwrap", "/x", "true"]
                .map(OsString::from)
                .to_vec(),
        )
        .unwrap()
        {
            Parsed::Run(c) => c,
            _ => unreachable!(),
        };
        assert!(
            lower(&c, &ctx(1000))
                .unwrap_err()
                .contains("Can't find source path")
        );
        let p = plan(&["--bind-try", "/nonexistent/qwrap", "/x", "true"], 1000);
        assert!(!p.to_string().contains("/nonexistent/qwrap"));
    }

    #[test]
    fn layers_only_when_asked() {
        let p = plan(&["--ro-bind", "/", "/", "true"], 1000);
        assert!(
            !p.steps
                .iter()
                .any(|s| matches!(s, Step::Landlock { .. } | Step::Seccomp))
        );
        let c = match args::parse(["--bind", "/", "/", "true"].map(OsString::from).to_vec()).unwrap() {
            Parsed::Run(c) => c,
            _ => unreachable!(),
        };
        let mut cx = ctx(1000);
        cx.layers = true;
        let p = lower(&c, &cx).unwrap();
        assert!(p.steps.contains(&Step::Seccomp));
        assert!(
            p.steps
                .iter()
                .any(|s| matches!(s, Step::Landlock { scoped: true, .. }))
        );
    }
}
