//! Nothing outlives the command: a child in a user namespace made inside
//! and a process that hops to a new PID in a tight loop are both gone when
//! qwrap returns (each would write a marker on the host afterwards), with
//! Landlock's signal scope and without it (`--landlock off` stands in for a
//! kernel before 6.12), as root and unprivileged, on both mount APIs. And
//! the command has exactly the children it makes: the warden is none of
//! them, so `strace -f` and a `waitpid(-1)` loop return at once.

mod common;

use common::*;
use std::time::{Duration, Instant};

const HOPPER: &str = r#"
import os, sys, time
end = time.time() + float(sys.argv[2])
while True:
    if os.fork() != 0:
        os._exit(0)
    if time.time() > end:
        open(sys.argv[1], "w").write("survived")
        os._exit(0)
"#;

#[test]
fn a_nested_namespace_and_a_pid_hopper_die_with_the_command() {
    let mut runs = Vec::new();
    for who in Who::all() {
        for api in APIS {
            for landlock in ["best-effort", "off"] {
                runs.push((who, api, landlock));
            }
        }
    }
    // All at once: each run's markers would appear within two seconds.
    let handles: Vec<_> = runs
        .into_iter()
        .map(|(who, api, landlock)| {
            std::thread::spawn(move || {
                let f = Fixture::new(who);
                f.write("ws/hop.py", HOPPER, 0o644);
                let script = "unshare -U sh -c 'sleep 1; echo x > nested' & python3 hop.py hopper 1.2 & sleep 0.3; exit 0";
                let o = f.run_sh(api, &["--landlock", landlock], script);
                ok(&o);
                std::thread::sleep(Duration::from_millis(2500));
                let left: Vec<&str> = ["nested", "hopper"]
                    .into_iter()
                    .filter(|m| f.ws().join(m).exists())
                    .collect();
                assert!(left.is_empty(), "{who:?} {api} {landlock}: {left:?} outlived the command");
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn the_command_has_exactly_the_children_it_makes() {
    let wait_all = "import os\nn = 0\ntry:\n    while True:\n        os.wait(); n += 1\nexcept ChildProcessError:\n    print('reaped', n)";
    for who in Who::all() {
        let f = Fixture::new(who);
        // Listed by the kernel: children of the command.
        let o = f.run_sh("new", &[], "ps -o comm= --ppid $$");
        assert_eq!(ok(&o).trim(), "ps", "{who:?}");
        // A waitpid(-1) loop ends when the command's own children are gone.
        let t = Instant::now();
        let o = f
            .qwrap(&["run", "--", "python3", "-c", wait_all])
            .output()
            .unwrap();
        assert_eq!(ok(&o).trim(), "reaped 0", "{who:?}");
        assert!(t.elapsed() < Duration::from_secs(5), "{who:?}: {:?}", t.elapsed());
        if std::path::Path::new("/usr/bin/strace").exists() {
            let t = Instant::now();
            let mut c = f.qwrap(&["run", "--", "strace", "-f", "-o", "/dev/null", "true"]);
            let mut child = c.spawn().unwrap();
            loop {
                if let Some(st) = child.try_wait().unwrap() {
                    assert!(st.success(), "{who:?}: strace {st:?}");
                    break;
                }
                if t.elapsed() > Duration::from_secs(10) {
                    let _ = child.kill();
                    panic!("{who:?}: strace -f true hangs");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        } else {
            eprintln!("SKIP strace -f: no /usr/bin/strace");
        }
    }
}

/// The caller dies first (kill -9 of the shell that started qwrap): the
/// command dies with its parent, and what it left behind (a double fork,
/// a setsid process) must die too, in every mode. The reaper proved its
/// scope by a process outside that is gone by then (ESRCH) and let them
/// live with --isolation landlock.
#[test]
fn leftovers_die_when_the_caller_dies_first() {
    for who in Who::all() {
        for opts in [&[][..], &["--isolation", "landlock"], &["--landlock", "off"]] {
            let f = Fixture::new(who);
            let inner =
                "(sleep 60 & echo $! > left.pid) ; (setsid sleep 60 & echo $! > setsid.pid); sleep 60";
            // The caller's own parent reaps it at once (`wait`), as an
            // interactive shell does: by the time the command is gone, the
            // caller is no zombie either.
            let outer = format!(
                "sh -c \"{} run {} -- sh -c '{inner}' & wait\" & echo $! > caller.pid; wait",
                qwrap().display(),
                opts.join(" "),
                inner = inner.replace('$', "\\$")
            );
            let mut top = f
                .command("sh")
                .args(["-c", &outer])
                .env_remove("QWRAP_PID")
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let t0 = std::time::Instant::now();
            while !(f.ws().join("left.pid").exists() && f.ws().join("setsid.pid").exists())
                && t0.elapsed().as_secs() < 20
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
            let caller: i32 = std::fs::read_to_string(f.ws().join("caller.pid"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(caller).unwrap(),
                rustix::process::Signal::KILL,
            );
            top.wait().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(3000));
            for name in ["left.pid", "setsid.pid"] {
                let pid = std::fs::read_to_string(f.ws().join(name)).unwrap();
                let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
                let alive = stat.is_ok_and(|s| !s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')));
                assert!(
                    !alive,
                    "{who:?} {opts:?}: {name} {} outlived the caller",
                    pid.trim()
                );
            }
        }
    }
}
