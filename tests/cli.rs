//! The command line as a new user meets it: usage errors that say what to
//! do, help that names everything, a masked SSH agent that is not left
//! half-set, and a terminal that `tty` can name. As root and unprivileged.

mod common;

use common::*;
use std::os::unix::net::UnixListener;

#[test]
fn usage_errors_say_what_to_do() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for sub in ["run", "plan"] {
            let o = f.qwrap(&[sub, "true"]).output().unwrap();
            assert_eq!(o.status.code(), Some(2), "{sub}");
            assert!(
                stderr(&o).contains(&format!(
                    "tip: the command goes after `--`: qwrap {sub} [OPTIONS] -- true"
                )),
                "{}",
                stderr(&o)
            );
        }
        // Run-only options mean nothing to verify, receipt and inspect.
        for sub in ["verify", "receipt", "inspect"] {
            for opt in [
                &["--setenv", "A", "B"][..],
                &["--new-session"],
                &["--keep-fd", "3"],
            ] {
                let o = f.qwrap(&[sub]).args(opt).output().unwrap();
                assert_eq!(o.status.code(), Some(2), "{sub} {opt:?}: {}", stderr(&o));
            }
        }
    }
}

#[test]
fn help_names_every_mode_and_variable() {
    let f = Fixture::new(Who::all()[0]);
    let top = stdout(&f.qwrap(&["--help"]).output().unwrap());
    for word in [
        "bwrap",
        "alias: sandbox",
        "cd into your project first",
        "man qwrap-bwrap",
    ] {
        assert!(top.contains(word), "{word} not in:\n{top}");
    }
    for sub in ["run", "plan", "inspect", "verify", "receipt"] {
        let h = stdout(&f.qwrap(&[sub, "--help"]).output().unwrap());
        for word in ["QWRAP_NETWORK", "QWRAP_MOUNT_API", "man 5 qwrap.toml"] {
            assert!(h.contains(word), "{sub}: {word} not in:\n{h}");
        }
    }
    let h = stdout(&f.qwrap(&["inspect", "--help"]).output().unwrap());
    assert!(h.contains("Print the report as JSON"), "{h}");
}

#[test]
fn a_masked_ssh_agent_is_unset_inside() {
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let dir = f.mkdir("agent");
            let sock = dir.join("agent.sock");
            let _l = UnixListener::bind(&sock).unwrap();
            if rustix::process::getuid().is_root() {
                let (u, g) = who.ids();
                std::os::unix::fs::chown(&sock, Some(u), Some(g)).unwrap();
            }
            let run = |extra: &[&str]| {
                let o = f
                    .qwrap(&["run"])
                    .args(extra)
                    .args(["--", "sh", "-c", "echo \"[${SSH_AUTH_SOCK-unset}]\""])
                    .env("SSH_AUTH_SOCK", &sock)
                    .env("QWRAP_MOUNT_API", api)
                    .output()
                    .unwrap();
                ok(&o).trim().to_string()
            };
            assert_eq!(run(&[]), "[unset]", "{who:?} {api}");
            assert_eq!(
                run(&["--allow-socket", sock.to_str().unwrap()]),
                format!("[{}]", sock.display()),
                "{who:?} {api}"
            );
            let o = f
                .qwrap(&["inspect"])
                .env("SSH_AUTH_SOCK", &sock)
                .output()
                .unwrap();
            assert!(
                stdout(&o).contains("$SSH_AUTH_SOCK names a masked host socket"),
                "{}",
                stdout(&o)
            );
        }
    }
}

/// Under a real pty: `tty` names the command's terminal as it is named
/// outside (a pty of a number other ptys sit below): qwrap's own pty, or
/// with --share-terminal the caller's; the terminal works, and a pty made
/// inside gets a name of the sandbox's own devpts.
#[test]
fn tty_names_the_callers_terminal() {
    let py = "import os,pty,sys\nheld=[os.openpty() for _ in range(3)]\npid,fd=pty.fork()\nif pid==0:\n    os.execvp(sys.argv[1],sys.argv[1:])\nout=b''\nwhile True:\n    try:\n        d=os.read(fd,4096)\n    except OSError:\n        break\n    if not d: break\n    out+=d\nos.waitpid(pid,0)\nsys.stdout.write(out.decode(errors='replace'))\n";
    let inner = "import os;m,s=os.openpty();print(os.ttyname(s))";
    for who in Who::all() {
        for (api, share) in [("new", false), ("legacy", false), ("new", true)] {
            let f = Fixture::new(who);
            let script = format!(
                "echo outside $(tty); {} run {} -- sh -c 'echo inside $(tty); ls -l $(tty) | cut -c1; test -t 1 && echo is-a-tty; echo inner $(python3 -c \"{inner}\")'",
                qwrap().display(),
                if share { "--share-terminal" } else { "" }
            );
            let o = f
                .command("python3")
                .args(["-c", py, "sh", "-c", &script])
                .env("QWRAP_MOUNT_API", api)
                .output()
                .unwrap();
            let out = stdout(&o);
            let name = |tag: &str| {
                out.lines()
                    .find_map(|l| l.trim().strip_prefix(tag).map(str::to_string))
                    .unwrap_or_default()
            };
            let outside = name("outside ");
            assert!(
                outside.starts_with("/dev/pts/") && outside != "/dev/pts/0",
                "{who:?} {api}: {out}"
            );
            let inside = name("inside ");
            if share {
                assert_eq!(inside, outside, "{who:?} {api}: {out}");
            } else {
                assert!(
                    inside.starts_with("/dev/pts/") && inside != outside,
                    "{who:?} {api}: {out}"
                );
            }
            assert!(
                out.lines().any(|l| l.trim() == "c"),
                "{who:?} {api}: the name is no terminal: {out}"
            );
            // The sandbox's own devpts hands out its lowest free number.
            assert_eq!(name("inner "), "/dev/pts/0", "{who:?} {api}: {out}");
            assert!(out.contains("is-a-tty"), "{who:?} {api}: {out}");
            assert!(!out.contains("not a tty"), "{who:?} {api}: {out}");
        }
    }
}
