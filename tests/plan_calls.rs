//! The printed plan names the calls the executor makes: `qwrap run` under
//! strace, with QWRAP_TRACE=1 writing each step's printed form in one
//! write(2) before the step runs; every system call a process makes between
//! its step markers must be named in that step's text (allocation, closing
//! and signal bookkeeping aside). The real kernel, not a fake: as root and
//! as an unprivileged uid, on both mount APIs, with the network closed, the
//! minimal view and a home holding hidden paths.

mod common;

use common::bwrap_diff::qwrap_bwrap;
use common::*;
use std::collections::{BTreeMap, BTreeSet};

/// Calls any step may make without naming them: memory, closing
/// descriptors, the trace line itself, signal and thread bookkeeping.
const INCIDENTAL: &[&str] = &[
    "write",
    "brk",
    "mmap",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
    "close",
    "rt_sigprocmask",
    "rt_sigaction",
    "rt_sigreturn",
    "sigaltstack",
    "getpid",
    "gettid",
    "futex",
    "exit",
    "exit_group",
    "set_robust_list",
    "rseq",
    "set_tid_address",
    "arch_prctl",
    "prlimit64",
    "getrandom",
    "restart_syscall",
    "sched_yield",
];

/// A syscall's name as the printed plan spells the call.
fn printed_name(syscall: &str) -> &str {
    match syscall {
        "mkdirat" => "mkdir",
        "symlinkat" => "symlink",
        "mknodat" => "mknod",
        "openat" | "openat2" => "open",
        "umount2" => "umount",
        "clone" | "clone3" | "vfork" => "fork",
        "dup3" => "dup2",
        "capget" => "capset",
        "newfstatat" | "statx" | "fstat" => "stat",
        "execve" => "exec",
        "landlock_create_ruleset" | "landlock_add_rule" | "landlock_restrict_self" => "landlock",
        "fchmodat" | "fchmod" => "chmod",
        "readlinkat" => "readlink",
        "pread64" => "read",
        "pwrite64" => "pwrite",
        "faccessat" | "faccessat2" => "access",
        "wait4" | "waitid" => "wait",
        other => other,
    }
}

/// Per step: its printed text and the calls made while it ran.
type Steps = BTreeMap<usize, (String, BTreeSet<String>)>;

/// Reads an `strace -f -qq -s N` log. A process's calls belong to the step
/// whose marker it wrote last (a child starts in its parent's step); a
/// child's calls count only once it writes a marker itself, so the warden,
/// the monitor and other processes that stay outside the command's line do
/// not; nothing after a successful execve counts.
fn attribute(log: &str) -> Steps {
    let mut steps: Steps = BTreeMap::new();
    let mut current: BTreeMap<u32, usize> = BTreeMap::new();
    let mut pending: BTreeMap<u32, Vec<(usize, String)>> = BTreeMap::new();
    let mut marked: BTreeSet<u32> = BTreeSet::new();
    let mut done: BTreeSet<u32> = BTreeSet::new();
    for line in log.lines() {
        // strace pads short pids: `737   execve(…`.
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        let Ok(pid) = pid.parse::<u32>() else { continue };
        let resumed = rest.starts_with("<... ");
        let name: String = if resumed {
            rest[5..].split(' ').next().unwrap_or("").to_string()
        } else {
            rest.split('(').next().unwrap_or("").to_string()
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        if !resumed
            && name == "write"
            && let Some(m) = rest.split_once("\"qwrap: step ")
        {
            let (index, text) = m.1.split_once(": ").expect("a step marker");
            let index: usize = index.parse().expect("a step number");
            let text = text.split("\\n\"").next().unwrap_or("").replace("\\\"", "\"");
            current.insert(pid, index);
            steps.entry(index).or_insert_with(|| (text, BTreeSet::new()));
            if marked.insert(pid) {
                for (step, call) in pending.remove(&pid).unwrap_or_default() {
                    steps.entry(step).or_default().1.insert(call);
                }
            }
            continue;
        }
        // A debug build checks a descriptor with F_GETFD before closing it.
        if name == "fcntl" && rest.contains(", F_GETFD") {
            continue;
        }
        let returned = rest.rsplit("= ").next().unwrap_or("").trim();
        if matches!(name.as_str(), "clone" | "clone3" | "fork" | "vfork")
            && let (Ok(child), Some(&step)) = (returned.parse::<u32>(), current.get(&pid))
        {
            // The child may have run, and written its own marker, before
            // strace shows the parent's clone return.
            current.entry(child).or_insert(step);
        }
        // Before its first step a process is qwrap starting; after a
        // successful execve it is the command.
        let Some(&step) = current.get(&pid) else { continue };
        if done.contains(&pid) {
            continue;
        }
        if name == "execve" && returned == "0" {
            done.insert(pid);
        }
        if resumed {
            continue;
        }
        if marked.contains(&pid) {
            steps.entry(step).or_default().1.insert(name);
        } else {
            pending.entry(pid).or_default().push((step, name));
        }
    }
    steps
}

/// The calls of each step that its printed text does not name.
fn unnamed(steps: &Steps) -> Vec<String> {
    steps
        .iter()
        .filter_map(|(i, (text, calls))| {
            let missing: Vec<&String> = calls
                .iter()
                .filter(|c| !INCIDENTAL.contains(&c.as_str()))
                .filter(|c| !text.contains(c.as_str()) && !text.contains(printed_name(c)))
                .collect();
            (!missing.is_empty()).then(|| format!("step {i} `{text}` also made {missing:?}"))
        })
        .collect()
}

#[test]
fn every_call_the_executor_makes_is_in_the_printed_step() {
    let strace = std::path::Path::new("/usr/bin/strace");
    assert!(strace.exists(), "strace is not installed (.ci/run installs it)");
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("home/.ssh");
        f.write("home/.ssh/id_ed25519", "key\n", 0o600);
        // Two caches holding files: one overlay of the home serves both.
        for c in [".cache", ".npm"] {
            f.mkdir(&format!("home/{c}"));
            f.write(&format!("home/{c}/held"), "x\n", 0o644);
        }
        // A checkout without a hooks directory (the first run makes it),
        // with a submodule (its config is shown from a copy).
        let git = "git -c user.name=t -c user.email=t@t -c protocol.file.allow=always";
        let setup = format!(
            "set -e; {git} init -q ../libsrc && {git} -C ../libsrc commit -q --allow-empty -m l && \
             {git} init -q && {git} submodule -q add ../libsrc lib && {git} commit -qm sub"
        );
        ok(&f.command("sh").args(["-c", &setup]).output().unwrap());
        std::fs::remove_dir_all(f.ws().join(".git/hooks")).unwrap();
        // The egress log lies outside the writable roots, as it must.
        let egress_log = f.path().join("egress.log").display().to_string();
        // The limits' cgroup steps, where this identity can have a group
        // (root here; the refusal is tests/limits.rs's).
        let limits = ["memory", "pids", "cpu"]
            .iter()
            .all(|c| common::cgroups::offered(who, c).is_ok());
        let limited = [
            "--memory",
            "256M",
            "--max-processes",
            "500",
            "--cpus",
            "1",
            "--time-limit",
            "60s",
        ];
        let mut limited_private = limited.to_vec();
        limited_private.extend(["--pid", "private"]);
        let extra: Vec<(&str, &str, &[&str])> = if limits {
            vec![
                ("limits", "new", &limited[..]),
                ("limits, private pid", "new", &limited_private[..]),
            ]
        } else {
            Vec::new()
        };
        for (name, api, opts) in [
            ("default", "new", &[][..]),
            ("legacy", "legacy", &[][..]),
            ("closed network", "new", &["--network", "closed"][..]),
            ("closed network, legacy", "legacy", &["--network", "closed"][..]),
            ("minimal view", "new", &["--view", "minimal"][..]),
            ("private pid", "new", &["--pid", "private"][..]),
            ("private pid, legacy", "legacy", &["--pid", "private"][..]),
            ("overlaid home", "new", &["--home", "overlay"][..]),
            ("overlaid home, legacy", "legacy", &["--home", "overlay"][..]),
            (
                "proxied network",
                "new",
                &[
                    "--network",
                    "proxied",
                    "--allow-domain",
                    "example.com",
                    "--egress-log",
                    &egress_log,
                ][..],
            ),
        ]
        .into_iter()
        .chain(extra.iter().copied())
        {
            let log = f.path().join("strace.log");
            let o = f
                .command(strace)
                .args(["-f", "-qq", "-s", "8192", "-o"])
                .arg(&log)
                .arg(qwrap())
                .arg("run")
                .args(opts)
                .args(["--", "/bin/true"])
                .env("QWRAP_TRACE", "1")
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            assert!(o.status.success(), "{who:?} {name}: {}", stderr(&o));
            let steps = attribute(&std::fs::read_to_string(&log).unwrap());
            // The harness sees what it must: the namespaces made (by a
            // clone with a PID namespace), the command run.
            let made = |call: &str| steps.values().any(|(_, calls)| calls.contains(call));
            assert!(
                (made("unshare") || made("clone")) && made("execve"),
                "{who:?} {name}: {steps:?}"
            );
            assert!(steps.len() > 40, "{who:?} {name}: {} steps", steps.len());
            if name == "default" {
                assert!(made("mkdir") || made("mkdirat"), "the hooks directory: {steps:?}");
            }
            let gaps = unnamed(&steps);
            assert!(gaps.is_empty(), "{who:?} {name}:\n{}", gaps.join("\n"));
        }
    }
}

#[test]
fn a_call_missing_from_the_text_is_found() {
    let log = "\
10 write(2, \"qwrap: step 0: chdir(\\\"/w\\\")\\n\", 24) = 24
10 chdir(\"/w\") = 0
10 openat(AT_FDCWD, \"/x\", O_RDONLY) = 3
10 write(2, \"qwrap: step 1: fork()\\n\", 22) = 22
10 clone3({flags=0}, 88) = 11
11 getppid() = 10
11 write(2, \"qwrap: step 2: execvp(\\\"/bin/true\\\")\\n\", 36) = 36
11 execve(\"/bin/true\", [\"/bin/true\"], 0x0) = 0
11 openat(AT_FDCWD, \"/etc/ld.so.cache\", O_RDONLY) = 3
";
    let steps = attribute(log);
    assert_eq!(
        unnamed(&steps),
        [
            "step 0 `chdir(\"/w\")` also made [\"openat\"]",
            "step 1 `fork()` also made [\"getppid\"]"
        ]
    );
}

#[test]
fn every_call_of_bwrap_mode_is_in_its_traced_step() {
    let strace = std::path::Path::new("/usr/bin/strace");
    assert!(strace.exists(), "strace is not installed (.ci/run installs it)");
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("lower");
        f.write("data", "x\n", 0o644);
        // A seccomp program of one instruction: SECCOMP_RET_ALLOW.
        let allow = f.path().join("allow.bpf");
        std::fs::write(&allow, [0x06u8, 0, 0, 0, 0x00, 0x00, 0xff, 0x7f]).unwrap();
        let p = |rel: &str| f.path().join(rel).display().to_string();
        // A user namespace held open for --userns to join: ours mapped to root.
        let mut holder = f.command("unshare").args(["-Ur", "sleep", "60"]).spawn().unwrap();
        let userns = format!("/proc/{}/ns/user", holder.id());
        let ours = std::fs::read_link("/proc/self/ns/user").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::fs::read_link(&userns).ok().as_ref() == Some(&ours) && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        for (api, name, args) in [
            (
                "every namespace, /proc, /dev and files",
                "--unshare-all --ro-bind / / --proc /proc --dev /dev --tmpfs /tmp --dir /tmp/d \
                 --symlink d /tmp/l --file 3 /tmp/f --bind-data 4 /tmp/g --chmod 0700 /tmp/d \
                 --mqueue /dev/mqueue --hostname h --remount-ro /tmp --new-session --die-with-parent"
                    .to_string(),
            ),
            (
                "nested user namespace, overlay, PID 1",
                format!(
                    "--unshare-user --disable-userns --uid 0 --cap-add ALL --ro-bind / / \
                     --overlay-src {} --tmp-overlay /mnt --as-pid-1 --unshare-pid --lock-file {} \
                     --assert-userns-disabled",
                    p("lower"),
                    p("data")
                ),
            ),
            (
                "reports",
                "--bind / / --unshare-pid --json-status-fd 5 --info-fd 6 --sync-fd 7".to_string(),
            ),
            (
                "qwrap's layers, the caller's seccomp program, a block fd",
                "--bind / / --add-seccomp-fd 8 --block-fd 9".to_string(),
            ),
            ("joining a user namespace", "--userns 10 --bind / /".to_string()),
            (
                "joining a user namespace, a new PID namespace",
                "--userns 10 --unshare-pid --bind / /".to_string(),
            ),
        ]
        .iter()
        .flat_map(|(name, args)| ["new", "legacy"].map(|api| (api, name, args)))
        {
            let name = format!("{name} ({api} mount API)");
            let log = f.path().join("strace.log");
            let script = format!(
                "QWRAP_BWRAP_LAYERS=1 exec '{}' {args} /bin/true 3<'{data}' 4<'{data}' 5>/dev/null 6>/dev/null \
                 7</dev/null 8<'{allow}' 9<'{data}' 10<'{userns}'",
                qwrap_bwrap().display(),
                data = p("data"),
                allow = allow.display(),
            );
            let o = f
                .command(strace)
                .args(["-f", "-qq", "-s", "8192", "-o"])
                .arg(&log)
                // bash: dash takes only one-digit descriptors in redirections.
                .args(["bash", "-c", &script])
                .env("QWRAP_TRACE", "1")
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            assert!(o.status.success(), "{who:?} {name}: {}", stderr(&o));
            let steps = attribute(&std::fs::read_to_string(&log).unwrap());
            let made = |call: &str| steps.values().any(|(_, calls)| calls.contains(call));
            // Destinations under the new root are resolved in it.
            let in_root = args.contains("--dir");
            assert!(
                made("execve") && (made("openat2") || !in_root),
                "{who:?} {name}: {steps:?}"
            );
            if args.contains("--userns") {
                assert!(made("setns"), "{who:?} {name}: {steps:?}");
            }
            let gaps = unnamed(&steps);
            assert!(gaps.is_empty(), "{who:?} {name}:\n{}", gaps.join("\n"));
        }
        let _ = holder.kill();
        let _ = holder.wait();
    }
}

#[test]
fn a_child_seen_before_its_parents_clone_returns_keeps_its_own_step() {
    // strace pads short pids, and may show a child's first calls before
    // the parent's clone returns.
    let log = "\
710   write(2, \"qwrap: step 0: clone(); the parent waits as the monitor\\n\", 52) = 52
710   clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>
711   write(2, \"qwrap: step 1: openat(\\\"/proc/self/uid_map\\\"); write()\\n\", 50) = 50
711   openat(AT_FDCWD, \"/proc/self/uid_map\", O_WRONLY) = 3
710   <... clone resumed>) = 711
711   openat(AT_FDCWD, \"/proc/self/gid_map\", O_WRONLY) = 3
710   wait4(711, NULL, 0, NULL) = 711
";
    let steps = attribute(log);
    assert!(unnamed(&steps).is_empty(), "{steps:?}");
    assert!(steps[&1].1.contains("openat") && steps[&0].1.contains("wait4"));
}
