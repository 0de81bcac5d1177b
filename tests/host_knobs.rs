//! The host's kernel knobs stay out of reach in every mode, root included:
//! a sysctl's write permission for uid 0 needs no capability, so only a
//! read-only mount keeps `core_pattern` (host root code execution through
//! a crash), `printk` or `drop_caches` from being written. Each test reads
//! the host's value from outside; the walk opens every writable file of
//! /proc and /sys that is not a process's own, from inside.

mod common;

use common::*;

/// Sysctls whose host value the attack tries to change, with a value that
/// is harmless should it land (the test then puts the old one back).
const KNOBS: [(&str, &str); 3] = [
    ("/proc/sys/kernel/core_pattern", "|/qwrap-attack-helper %p"),
    ("/proc/sys/kernel/printk_ratelimit", "17"),
    ("/proc/sys/vm/stat_interval", "7"),
];

/// The modes each row must hold in: `run`'s, and bwrap mode with its own
/// /proc.
fn modes() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("default", vec!["run"]),
        ("landlock off", vec!["run", "--landlock", "off"]),
        ("pid private", vec!["run", "--pid", "private"]),
        (
            "pid private, landlock off",
            vec!["run", "--pid", "private", "--landlock", "off"],
        ),
        ("isolation landlock", vec!["run", "--isolation", "landlock"]),
    ]
}

fn bwrap_args() -> Vec<&'static str> {
    vec![
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-pid",
        "--unshare-user",
        "--",
    ]
}

struct Restore(Vec<(&'static str, String)>);
impl Drop for Restore {
    fn drop(&mut self) {
        for (path, old) in &self.0 {
            if std::fs::read_to_string(path).ok().as_deref() != Some(old) {
                std::fs::write(path, old.trim_end()).ok();
            }
        }
    }
}

fn host_values() -> Vec<(&'static str, String)> {
    KNOBS
        .iter()
        .map(|(p, _)| (*p, std::fs::read_to_string(p).unwrap()))
        .collect()
}

fn attack_script() -> String {
    KNOBS
        .iter()
        .map(|(p, v)| format!("printf '%s' '{v}' > {p} 2>/dev/null && echo WROTE {p}; "))
        .collect()
}

#[test]
fn sysctls_are_read_only_in_every_mode() {
    let before = host_values();
    let _restore = Restore(before.clone());
    for who in Who::all() {
        let f = Fixture::new(who);
        let mut runs: Vec<(String, Vec<&str>)> = modes()
            .into_iter()
            .map(|(name, args)| (name.to_string(), args))
            .collect();
        // bwrap mode covers /proc as bubblewrap does (its four entries, each
        // left alone where access(W_OK) refuses, which procfs's sysctl
        // directory always does): the drop-in tests compare its view with
        // bubblewrap's, so as root its sysctls stay as writable as there
        // (docs/bwrap-compat.md). For an unprivileged caller it holds.
        if who == Who::User {
            runs.push(("bwrap mode".into(), bwrap_args()));
        }
        for (name, args) in runs {
            for api in APIS {
                let mut c = f.qwrap(&args);
                if args[0] == "run" {
                    c.arg("--");
                }
                c.args(["sh", "-c", &attack_script()]);
                c.env("QWRAP_MOUNT_API", api);
                let o = c.output().unwrap();
                let after = host_values();
                assert_eq!(
                    after,
                    before,
                    "{who:?} {name} {api}: a host sysctl changed\n{}\n{}",
                    stdout(&o),
                    stderr(&o)
                );
                assert!(
                    !stdout(&o).contains("WROTE"),
                    "{who:?} {name} {api}: {}",
                    stdout(&o)
                );
                // The command ran: the refusal is the mount's, not a failed start.
                assert_ne!(o.status.code(), Some(125), "{who:?} {name} {api}: {}", stderr(&o));
            }
        }
    }
}

/// Opens (without writing) every file with a write bit under /proc (but
/// the processes' own directories) and /sys; prints those that opened.
const WALK: &str = r#"
import os, re, sys
opened = []
checked = 0
def visit(top, skip):
    global checked
    for root, dirs, files in os.walk(top, followlinks=False):
        if skip(root):
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if not skip(os.path.join(root, d))]
        for name in files:
            p = os.path.join(root, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if st.st_mode & 0o222 == 0 or not os.path.isfile(p):
                continue
            checked += 1
            try:
                fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
                os.close(fd)
                opened.append(p)
            except OSError:
                pass
own = re.compile(r'^/proc/(self|thread-self|[0-9]+)(/|$)')
visit('/proc', lambda p: bool(own.match(p)))
visit('/sys', lambda p: False)
print('checked', checked)
for p in opened:
    print('OPENED', p)
"#;

#[test]
fn no_host_wide_file_of_proc_or_sys_opens_for_writing() {
    if !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!("SKIP: python3 is not installed");
        return;
    }
    for who in Who::all() {
        let f = Fixture::new(who);
        for (name, args) in modes() {
            let mut c = f.qwrap(&args);
            c.args(["--", "/usr/bin/python3", "-c", WALK]);
            let o = c.output().unwrap();
            let out = ok(&o);
            assert!(out.contains("checked"), "{who:?} {name}: {out}");
            // An unprivileged caller may write PSI triggers on the host too
            // (mode 0666), and ns_last_pid of a PID namespace of its own.
            let own = |l: &str| {
                who == Who::User
                    && (l.starts_with("OPENED /proc/pressure/") || l == "OPENED /proc/sys/kernel/ns_last_pid")
            };
            let opened: Vec<&str> = out
                .lines()
                .filter(|l| l.starts_with("OPENED") && !own(l))
                .collect();
            assert!(
                opened.is_empty(),
                "{who:?} {name}: writable inside:\n{}",
                opened.join("\n")
            );
        }
    }
}
