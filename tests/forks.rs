//! A fork never fails because of qwrap, on either kernel path: with
//! Landlock's signal scope and without it (`--landlock off` takes the path
//! every kernel before 6.12 takes). Shell pipelines by the thousand in
//! dash, bash and busybox sh (each installs a SIGCHLD handler, whose
//! signals arrive while a fork is under way), and `make -j4` of 200
//! targets; each counts its successes into a file the host reads. And a
//! swarm of processes that fork as fast as they can still dies with the
//! command: none writes its marker afterwards.

mod common;

use common::*;
use std::time::Duration;

const MODES: [&[&str]; 2] = [&[], &["--landlock", "off"]];

/// 1,000 pipelines `echo x | cat`; the count of those that ran goes to
/// `done` in the workspace.
const PIPELINES: &str =
    "i=0; while [ $i -lt 1000 ]; do echo x | cat >/dev/null || exit 7; i=$((i+1)); done; echo $i > done";

#[test]
fn shell_pipelines_never_fail_to_fork() {
    for who in Who::all() {
        for opts in MODES {
            for shell in [&["dash"][..], &["bash"], &["busybox", "sh"]] {
                if std::fs::metadata(format!("/bin/{}", shell[0])).is_err() {
                    println!("SKIP {}: not installed", shell[0]);
                    continue;
                }
                let f = Fixture::new(who);
                let mut c = f.qwrap(&["run"]);
                c.args(opts).arg("--").args(shell).args(["-c", PIPELINES]);
                let o = c.output().unwrap();
                let done = std::fs::read_to_string(f.ws().join("done")).unwrap_or_default();
                assert_eq!(
                    done.trim(),
                    "1000",
                    "{who:?} {opts:?} {shell:?}: {:?}\n{}",
                    o.status,
                    stderr(&o)
                );
                ok(&o);
            }
        }
    }
}

#[test]
fn make_j4_builds_every_target() {
    let mut makefile = String::from("all:");
    for i in 0..200 {
        makefile += &format!(" t{i}");
    }
    makefile += "\n\nt%:\n\t@sh -c 'echo $@ | cat > $@.out'\n";
    for who in Who::all() {
        for opts in MODES {
            let f = Fixture::new(who);
            f.write("ws/Makefile", &makefile, 0o644);
            let mut c = f.qwrap(&["run"]);
            c.args(opts).args(["--", "make", "-s", "-j4"]);
            let o = c.output().unwrap();
            ok(&o);
            let built = (0..200)
                .filter(|i| f.ws().join(format!("t{i}.out")).exists())
                .count();
            assert_eq!(built, 200, "{who:?} {opts:?}: {}", stderr(&o));
        }
    }
}

/// Forty processes that each fork and exit in a tight loop, and go on for
/// three seconds after the command has ended (it writes `ended` last),
/// then write a marker: the swarm outpaces a single pass over /proc, and
/// would starve a warden that shares its share of the CPU (where no
/// autogroup gives the warden's session its own, each of the forty has
/// as much CPU as the warden).
const SWARM: &str = r#"
import os, time
for _ in range(40):
    if os.fork() == 0:
        end = None
        while True:
            if os.fork() != 0:
                os._exit(0)
            if end is None and os.path.exists("ended"):
                end = time.time() + 3.0
            if end is not None and time.time() > end:
                open("survived.%d" % os.getpid(), "w").write("x")
                os._exit(0)
"#;

#[test]
fn a_forking_swarm_dies_with_the_command() {
    for who in Who::all() {
        for opts in MODES {
            let f = Fixture::new(who);
            f.write("ws/swarm.py", SWARM, 0o644);
            let mut c = f.qwrap(&["run"]);
            c.args(opts)
                .args(["--", "sh", "-c", "python3 swarm.py; sleep 0.5; touch ended"]);
            ok(&c.output().unwrap());
            std::thread::sleep(Duration::from_millis(4500));
            assert!(
                f.ws().join("ended").exists(),
                "{who:?} {opts:?}: the command did not end as written"
            );
            let left: Vec<String> = listing(&f.ws())
                .into_iter()
                .filter(|n| n.starts_with("survived"))
                .collect();
            assert!(
                left.is_empty(),
                "{who:?} {opts:?}: {} outlived the command",
                left.len()
            );
        }
    }
}
