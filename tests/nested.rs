//! `--pid private`: the command in a PID namespace of its own, with its own
//! /proc, so that sandboxes nested inside it (unshare -r, Debian's bwrap,
//! qwrap in both modes, Chromium's own sandbox) can give their user
//! namespaces id maps; host processes invisible and unnamed; signals and the
//! exit status relayed by qwrap outside; leftovers gone with the
//! namespace's PID 1. And the shared mode, which cannot, names the way out.
//! As root and unprivileged, on both mount APIs; every check looks at the
//! host side (the files made, the host process alive).

mod common;

use common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> Option<&'static str> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

#[test]
fn nested_sandboxes_run_under_a_private_pid_namespace() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let ws = f.ws();
            let home = f.home();
            let q = qwrap().display().to_string();
            let script = format!(
                "unshare -Ur sh -c 'id -u; touch {w}/from-unshare'; echo unshare=$?
                 bwrap --ro-bind / / --dev /dev --bind {w} {w} sh -c 'touch {w}/from-bwrap; touch {h}/from-bwrap 2>/dev/null || true'; echo bwrap=$?
                 {q} run -- touch {w}/from-qwrap-shared; echo qwrap-shared=$?
                 {q} run --pid private -- touch {w}/from-qwrap-private; echo qwrap-private=$?",
                w = ws.display(),
                h = home.display(),
            );
            let o = f.run_sh(api, &["--pid", "private"], &script);
            let out = ok(&o);
            let err = stderr(&o);
            let made = |name: &str| ws.join(name).exists();
            // Nothing nested reaches the home on the host, in any case.
            assert!(!home.join("from-bwrap").exists(), "{who:?} {api}");
            match who {
                Who::User => {
                    for name in ["unshare", "bwrap", "qwrap-shared", "qwrap-private"] {
                        assert!(
                            out.contains(&format!("{name}=0")),
                            "{who:?} {api} {name}: {out}\n{err}"
                        );
                        assert!(
                            made(&format!("from-{name}")),
                            "{who:?} {api} {name}: {out}\n{err}"
                        );
                    }
                }
                // The kernel maps uid 0 into a nested user namespace only for
                // a creator that held CAP_SETFCAP, which root's sandbox drops.
                Who::Root => {
                    for name in ["unshare", "bwrap", "qwrap-shared", "qwrap-private"] {
                        assert!(
                            !made(&format!("from-{name}")),
                            "{who:?} {api} {name}: {out}\n{err}"
                        );
                    }
                    assert!(err.contains("CAP_SETFCAP"), "{who:?} {api}: {err}");
                }
            }
        }
    }
}

#[test]
fn chromium_keeps_its_own_sandbox_under_a_private_pid_namespace() {
    let Some(browser) = chromium() else {
        eprintln!("SKIP: Chromium is not installed");
        return;
    };
    // Chromium refuses root without --no-sandbox: only the unprivileged user.
    for who in Who::all().into_iter().filter(|w| *w == Who::User) {
        for api in APIS {
            let f = Fixture::new(who);
            f.write(
                "ws/page.html",
                "<p id=x>static</p><script>document.getElementById('x').textContent='js-ran'</script>",
                0o644,
            );
            let page = f.ws().join("page.html");
            let script = format!(
                "timeout 120 {browser} --headless --disable-gpu --dump-dom file://{}",
                page.display()
            );
            let o = f.run_sh(api, &["--pid", "private"], &script);
            let out = stdout(&o);
            assert!(out.contains("js-ran"), "{who:?} {api}: {out}\n{}", stderr(&o));
            assert!(!stderr(&o).contains("No usable sandbox"), "{}", stderr(&o));
            // The same in the shared mode: Chromium's sandbox cannot start.
            let o = f.run_sh(api, &[], &script);
            assert!(!stdout(&o).contains("js-ran"), "{who:?} {api}: {}", stdout(&o));
        }
    }
}

#[test]
fn the_shared_mode_names_the_private_one() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let o = f.run_sh("new", &[], "unshare -Ur true; exit 0");
        assert!(
            stderr(&o).contains("qwrap run --pid private"),
            "{who:?}: {}",
            stderr(&o)
        );
        // Said once, and not with --quiet.
        let o = f.run_sh("new", &[], "unshare -Ur true; unshare -Ur true; exit 0");
        assert_eq!(stderr(&o).matches("--pid private").count(), 1, "{}", stderr(&o));
        let o = f.run_sh("new", &["--quiet"], "unshare -Ur true; exit 0");
        assert!(!stderr(&o).contains("--pid private"), "{}", stderr(&o));
        // A nested qwrap in the shared mode fails and says how to nest.
        let o = f.run_sh("new", &[], &format!("{} run -- true", qwrap().display()));
        assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
        assert!(stderr(&o).contains("--pid private"), "{}", stderr(&o));
    }
}

#[test]
fn host_processes_are_invisible_and_survive() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let mut host = f
                .command("sleep")
                .arg("300")
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            let pid = host.id();
            let script = format!(
                "ls /proc | grep -c '^[0-9]'; kill -KILL {pid} 2>/dev/null; echo kill=$?; \
                 test -e /proc/{pid}/cmdline && echo seen; true"
            );
            let o = f.run_sh(api, &["--pid", "private"], &script);
            let out = ok(&o);
            let count: u32 = out.lines().next().unwrap_or("99").trim().parse().unwrap_or(99);
            // sh, PID 1, ls, grep: the sandbox's own few.
            assert!(count < 8, "{who:?} {api}: {out}");
            assert!(!out.contains("kill=0") || pid < 8, "{who:?} {api}: {out}");
            assert!(!out.contains("seen") || pid < 8, "{who:?} {api}: {out}");
            assert!(
                host.try_wait().unwrap().is_none(),
                "{who:?} {api}: the host process died"
            );
            host.kill().ok();
            host.wait().ok();
        }
    }
}

#[test]
fn signals_and_the_exit_status_pass_through_qwrap() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let ws = f.ws();
        use std::os::unix::process::ExitStatusExt;
        // qwrap ends as the command did: the same code, or the same signal.
        let o = f.run_sh("new", &["--pid", "private"], "exit 3");
        assert_eq!(o.status.code(), Some(3), "{who:?}: {}", stderr(&o));
        let o = f.run_sh("new", &["--pid", "private"], "kill -TERM $$");
        assert_eq!(o.status.signal(), Some(15), "{who:?}: {}", stderr(&o));
        // A TERM sent to qwrap (as an agent's timeout does) reaches the
        // command, which runs its trap: the marker on the host proves it.
        let script = format!(
            "trap 'echo term > {}/got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done",
            ws.display()
        );
        let mut c = f.qwrap(&["run", "--pid", "private", "--", "sh", "-c", &script]);
        let mut child = c.stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(7), "{who:?}");
        assert!(ws.join("got-term").exists(), "{who:?}");
        // A TERM sent while the sandbox is still being set up is not lost:
        // the command gets it when it starts (or qwrap dies of it first).
        for _ in 0..5 {
            let script = format!("sleep 1; touch {}/finished", ws.display());
            let mut c = f.qwrap(&["run", "--pid", "private", "--", "sh", "-c", &script]);
            let child = c.spawn().unwrap();
            Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status()
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.signal(), Some(15), "{who:?}: {:?}", out.status);
            assert!(
                !ws.join("finished").exists(),
                "{who:?}: the command ran to its end"
            );
        }
    }
}

#[test]
fn leftovers_end_with_pid_one_unless_kept() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let ws = f.ws();
        // A background writer that would leave a marker after qwrap exits.
        let script = format!("(sleep 1; touch {}/late) >/dev/null 2>&1 & exit 0", ws.display());
        let o = f.run_sh("new", &["--pid", "private"], &script);
        ok(&o);
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            !ws.join("late").exists(),
            "{who:?}: a leftover outlived the sandbox"
        );
        // --keep-background: qwrap ends with the command, PID 1 stays for
        // what it left, which finishes its work on the host.
        let started = Instant::now();
        let o = f.run_sh("new", &["--pid", "private", "--keep-background"], &script);
        ok(&o);
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "{who:?}: qwrap waited"
        );
        assert!(!ws.join("late").exists(), "{who:?}");
        let t0 = Instant::now();
        while !ws.join("late").exists() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(ws.join("late").exists(), "{who:?}: the leftover did not finish");
    }
}

#[test]
fn inherited_files_stay_read_only_without_landlock_file_rules() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let victim = f.write("victim.txt", "host data\n", 0o666);
            let script = "cat >/dev/null; echo tampered >> /proc/self/fd/0; echo tampered >> /proc/self/fd/3; test -e /proc/self/fd/3 && echo fd3-there";
            let mut c = f.qwrap(&[
                "run",
                "--pid",
                "private",
                "--keep-fd",
                "3",
                "--",
                "sh",
                "-c",
                script,
            ]);
            c.env("QWRAP_MOUNT_API", api);
            c.stdin(std::fs::File::open(&victim).unwrap());
            // SAFETY: dup2 in the child before exec, async-signal-safe: fd 3
            // a second descriptor of the same read-only open.
            unsafe {
                use std::os::unix::process::CommandExt;
                c.pre_exec(|| match libc::dup2(0, 3) {
                    -1 => Err(std::io::Error::last_os_error()),
                    _ => Ok(()),
                });
            }
            let o = c.output().unwrap();
            assert!(ok(&o).contains("fd3-there"), "{who:?} {api}: {}", stderr(&o));
            assert_eq!(
                std::fs::read_to_string(&victim).unwrap(),
                "host data\n",
                "{who:?} {api}: {}",
                stderr(&o)
            );
            // A file handed over for writing is written, as the caller meant.
            let log = f.write("log.txt", "", 0o666);
            let mut c = f.qwrap(&["run", "--pid", "private", "--", "sh", "-c", "echo line"]);
            c.env("QWRAP_MOUNT_API", api);
            c.stdout(std::fs::OpenOptions::new().append(true).open(&log).unwrap());
            ok(&c.output().unwrap());
            assert_eq!(std::fs::read_to_string(&log).unwrap(), "line\n");
        }
    }
}
