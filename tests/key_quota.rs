//! As many sandboxes as the user starts: inside a session keyring of the
//! caller's (pam_keyinit gives one to every login), 1,000 quick runs one
//! after another and 300 at once all start with the default key quota
//! (`kernel.keys.maxkeys` 200), and so do nested ones; the caller's keys
//! stay out of reach (tests/host_processes.rs).

mod common;

use common::*;

/// Joins a session keyring of its own, then runs `sh -c SCRIPT`.
const IN_SESSION: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
if libc.syscall(250, 1, b"qwrap-quota-test") < 0:
    sys.exit("keyctl join: errno %d" % ctypes.get_errno())
os.execv("/bin/sh", ["sh", "-c", sys.argv[1]] + sys.argv[2:])
"#;

fn in_session(f: &Fixture, script: &str) -> String {
    let o = f
        .command("python3")
        .args(["-c", IN_SESSION, script, "sh"])
        .arg(qwrap())
        .output()
        .unwrap();
    ok(&o)
}

#[test]
fn a_thousand_runs_in_a_row_and_three_hundred_at_once_all_start() {
    let who = *Who::all().last().unwrap();
    let f = Fixture::new(who);
    let sequential = in_session(
        &f,
        r#"q=$1; bad=0; i=0; while [ $i -lt 1000 ]; do "$q" run -- true 2>>errors || bad=$((bad+1)); i=$((i+1)); done; echo "failed $bad""#,
    );
    assert_eq!(
        sequential.trim(),
        "failed 0",
        "{}",
        std::fs::read_to_string(f.ws().join("errors")).unwrap_or_default()
    );
    // Each in a workspace of its own: the test is of the keys, not of the
    // cache layer slots one workspace shares.
    let concurrent = in_session(
        &f,
        r#"q=$1; i=0; while [ $i -lt 300 ]; do mkdir w$i; ( cd w$i && "$q" run -- true 2>>../errors || echo x >> ../failed ) & i=$((i+1)); done; wait; echo "failed $(cat failed 2>/dev/null | wc -l)""#,
    );
    assert_eq!(
        concurrent.trim(),
        "failed 0",
        "{}",
        std::fs::read_to_string(f.ws().join("errors")).unwrap_or_default()
    );
    // A nested sandbox after them starts too.
    let nested = in_session(&f, r#""$1" run --pid private -- "$1" run -- echo nested"#);
    assert!(nested.contains("nested"), "{nested}");
}
