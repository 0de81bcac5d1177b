//! bwrap mode option by option where a plain differential is not enough:
//! errors, --file and --argv0, the fd options, data binds, lock files,
//! --userns-block-fd, joining namespaces, --help and symlink destinations.
//! Against Debian's bubblewrap where it has the feature; as root and as an
//! unprivileged uid.

mod common;

use common::bwrap_diff::*;
use common::*;
use std::path::Path;

#[test]
fn errors_are_bwrap_errors() {
    for who in Who::all() {
        let f = Fixture::new(who);
        for args in [
            &["--frobnicate", "true"][..],
            &["--bind", "/nonexistent/qwrap", "/x", "true"],
            &["--ro-bind", "/", "/", "qwrap-no-such-command"],
        ] {
            let real = f.command("/usr/bin/bwrap").args(args).output().unwrap();
            let ours = f.command(qwrap_bwrap()).args(args).output().unwrap();
            assert_eq!(real.status.code(), Some(1), "{args:?}");
            assert_eq!(ours.status.code(), Some(1), "{args:?}: {}", stderr(&ours));
            assert!(stderr(&ours).starts_with("bwrap: "), "{}", stderr(&ours));
        }
        let o = f
            .command(qwrap_bwrap())
            .args(["--exec-label", "x", "true"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        assert!(
            stderr(&o).contains("--exec-label"),
            "refused by name: {}",
            stderr(&o)
        );
        // Death by a signal is reported as 128 + the signal, as bubblewrap does.
        for prog in [Path::new("/usr/bin/bwrap"), qwrap_bwrap()] {
            let o = f
                .command(prog)
                .args(["--ro-bind", "/", "/", "sh", "-c", "kill -TERM $$"])
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(143), "{prog:?}");
        }
        // `qwrap bwrap ARGS` is the same front end.
        let o = f
            .qwrap(&["bwrap", "--ro-bind", "/", "/", "sh", "-c", "exit 5"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(5));
    }
}

#[test]
fn file_and_argv0() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let data = f.write("data", "from the caller\n", 0o644);
        let script = |prog: &Path| {
            format!(
                "exec '{}' --ro-bind / / --tmpfs /tmp --perms 0640 --file 5 /tmp/f sh -c 'cat /tmp/f; stat -c %a /tmp/f' 5<'{}'",
                prog.display(),
                data.display()
            )
        };
        let real = f
            .command("sh")
            .args(["-c", &script(Path::new("/usr/bin/bwrap"))])
            .output()
            .unwrap();
        let ours = f
            .command("sh")
            .args(["-c", &script(qwrap_bwrap())])
            .output()
            .unwrap();
        assert_eq!(ok(&real), "from the caller\n640\n");
        assert_eq!(ok(&ours), ok(&real), "{who:?}");
        // --argv0 (bubblewrap ≥ 0.9): what the command sees as its name.
        let o = f
            .command(qwrap_bwrap())
            .args([
                "--ro-bind",
                "/",
                "/",
                "--argv0",
                "renamed",
                "/bin/sh",
                "-c",
                "tr '\\0' ' ' < /proc/$$/cmdline",
            ])
            .output()
            .unwrap();
        assert!(ok(&o).starts_with("renamed -c "), "{}", stdout(&o));
    }
}

/// A BPF program that makes mkdir(2) and mkdirat(2) fail with EPERM, as
/// raw sock_filters (written out by hand: the instructions are few).
fn deny_mkdir_program() -> Vec<u8> {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    let eperm = 0x0005_0000 | libc::EPERM as u32;
    let prog: [(u16, u8, u8, u32); 5] = [
        (LD_W_ABS, 0, 0, 0),
        (JEQ_K, 2, 0, libc::SYS_mkdir as u32),
        (JEQ_K, 1, 0, libc::SYS_mkdirat as u32),
        (RET_K, 0, 0, 0x7fff_0000),
        (RET_K, 0, 0, eperm),
    ];
    prog.iter()
        .flat_map(|&(code, jt, jf, k)| {
            let mut b = code.to_ne_bytes().to_vec();
            b.extend([jt, jf]);
            b.extend(k.to_ne_bytes());
            b
        })
        .collect()
}

#[test]
fn fd_options_seccomp_block_bind_fd_mqueue() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let bpf = f.path().join("deny-mkdir.bpf");
        std::fs::write(&bpf, deny_mkdir_program()).unwrap();
        f.mkdir("shown");
        f.write("shown/file", "x", 0o644);
        let cases = [
            (
                format!(
                    "--ro-bind / / --tmpfs /tmp --seccomp 5 sh -c 'mkdir /tmp/d 2>&1; echo rc=$?' 5<'{}'",
                    bpf.display()
                ),
                "Operation not permitted",
            ),
            (
                "--ro-bind / / --block-fd 5 --sync-fd 6 sh -c 'echo unblocked' 5<<EOF 6</dev/null\nx\nEOF"
                    .to_string(),
                "unblocked",
            ),
            (
                format!(
                    "--ro-bind / / --tmpfs /mnt --bind-fd 5 /mnt/fd sh -c 'ls /mnt/fd' 5<'{}'",
                    f.path().join("shown").display()
                ),
                "file",
            ),
            (
                "--ro-bind / / --tmpfs /mnt --unshare-ipc --mqueue /mnt/mq sh -c 'ls -A /mnt/mq | wc -l'"
                    .to_string(),
                "0",
            ),
        ];
        for (args, want) in cases {
            let mut outs = Vec::new();
            for prog in [Path::new("/usr/bin/bwrap"), qwrap_bwrap()] {
                let o = f
                    .command("sh")
                    .args(["-c", &format!("exec '{}' {args}", prog.display())])
                    .output()
                    .unwrap();
                outs.push((stdout(&o), o.status.code(), stderr(&o)));
            }
            assert!(outs[0].0.contains(want), "{who:?} bwrap {args}: {outs:?}");
            assert_eq!(outs[0].0, outs[1].0, "{who:?} {args}: {outs:?}");
            assert_eq!(outs[0].1, outs[1].1, "{who:?} {args}");
        }
        let o = f
            .command(qwrap_bwrap())
            .args(["--level-prefix", "--frobnicate", "true"])
            .output()
            .unwrap();
        assert!(stderr(&o).starts_with("<3>bwrap: "), "{}", stderr(&o));
    }
}

#[test]
fn data_binds_locks_userns_and_cap_add() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let data = f.write("data", "bound data\n", 0o644);
        let lockf = f.write("lockme", "", 0o644);
        let d = data.display();
        let mut cases = vec![
            format!("--ro-bind / / --tmpfs /mnt --perms 0640 --bind-data 5 /mnt/rw --ro-bind-data 6 /mnt/ro sh -c 'cat /mnt/rw /mnt/ro; stat -c %a /mnt/rw; echo more >> /mnt/ro 2>&1 | sed \"s/.*: //\"' 5<'{d}' 6<'{d}'"),
            format!("--ro-bind / / --lock-file '{}' sh -c 'echo locked'", lockf.display()),
            "--ro-bind / / --unshare-user --disable-userns sh -c 'unshare -U true 2>&1 | sed \"s/.*: //\"; echo rc=$?'".to_string(),
        ];
        if who == Who::Root {
            cases.push(
                "--ro-bind / / --cap-drop ALL --cap-add cap_net_raw sh -c 'grep -E \"^Cap(Prm|Eff|Bnd)\" /proc/self/status'"
                    .to_string(),
            );
        }
        for args in cases {
            let mut outs = Vec::new();
            for prog in [Path::new("/usr/bin/bwrap"), qwrap_bwrap()] {
                let o = f
                    .command("sh")
                    .args(["-c", &format!("exec '{}' {args}", prog.display())])
                    .output()
                    .unwrap();
                outs.push((stdout(&o), o.status.code(), stderr(&o)));
            }
            assert_eq!(outs[0].1, Some(0), "{who:?} bwrap itself: {args}: {outs:?}");
            assert_eq!(outs[0].0, outs[1].0, "{who:?} {args}: {outs:?}");
            assert_eq!(outs[0].1, outs[1].1, "{who:?} {args}");
        }
    }
}

#[test]
fn userns_block_fd_lets_the_caller_write_the_maps() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let d = f.path().display().to_string();
        for prog in [Path::new("/usr/bin/bwrap"), qwrap_bwrap()] {
            let script = format!(
                r#"set -e
rm -f '{d}/info' '{d}/block'; mkfifo '{d}/info' '{d}/block'
'{p}' --unshare-user --info-fd 3 --userns-block-fd 4 --ro-bind / / sh -c 'id -u; id -g' 3>'{d}/info' 4<>'{d}/block' &
pid=$(/usr/bin/python3 -c '
import json, sys
text = ""
with open(sys.argv[1]) as f:
    for line in f:
        text += line
        if line.startswith("}}"):
            break
print(json.loads(text)["child-pid"])' '{d}/info')
echo deny > /proc/$pid/setgroups
echo "7 $(id -u) 1" > /proc/$pid/uid_map
echo "9 $(id -g) 1" > /proc/$pid/gid_map
echo go > '{d}/block'
wait $!"#,
                p = prog.display()
            );
            let o = f.command("sh").args(["-c", &script]).output().unwrap();
            assert_eq!(ok(&o), "7\n9\n", "{who:?} {prog:?}: {}", stderr(&o));
        }
    }
}

#[test]
fn joining_existing_namespaces() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let cases = [
            "--userns 3 --ro-bind / / sh -c 'id -u; id -g; tr -s \" \" < /proc/self/uid_map'",
            "--userns 3 --unshare-pid --ro-bind / / --proc /proc sh -c 'echo $$; set -- /proc/[0-9]*; echo $#'",
            "--userns 3 --pidns 4 --ro-bind / / sh -c '[ $$ -lt 20 ] && echo joined-pidns'",
            "--unshare-user --disable-userns --assert-userns-disabled --ro-bind / / sh -c 'echo asserted'",
            "--unshare-user --ro-bind / / --info-fd 5 --userns 3 true",
        ];
        for args in cases {
            let mut outs = Vec::new();
            for prog in [Path::new("/usr/bin/bwrap"), qwrap_bwrap()] {
                // A namespace holder: a new user namespace mapping us to root,
                // with a new PID namespace for its children. Wait until its
                // namespaces and map exist rather than for a fixed time.
                let script = format!(
                    "unshare -U -r -p -f --kill-child sleep 30 >/dev/null 2>&1 & holder=$!
                     until [ \"$(readlink /proc/$holder/ns/user)\" != \"$(readlink /proc/self/ns/user)\" ] && grep -q . /proc/$holder/uid_map; do sleep 0.01; done
                     '{}' {args} 3</proc/$holder/ns/user 4</proc/$holder/ns/pid_for_children 5>/dev/null; rc=$?
                     kill $holder; echo rc=$rc",
                    prog.display()
                );
                let o = f.command("sh").args(["-c", &script]).output().unwrap();
                outs.push((
                    stdout(&o),
                    stderr(&o).lines().filter(|l| l.contains("bwrap:")).count(),
                ));
            }
            assert_eq!(outs[0].0, outs[1].0, "{who:?} {args}: {outs:?}");
        }
    }
}

/// `--help` names the program as it was called, as bubblewrap does (its own
/// suite greps for `usage: $BWRAP`).
#[test]
fn help_names_the_program_as_called() {
    let o = std::process::Command::new(qwrap_bwrap())
        .arg("--help")
        .output()
        .unwrap();
    let first = stdout(&o).lines().next().unwrap_or_default().to_string();
    assert_eq!(
        first,
        format!(
            "usage: {} [OPTIONS...] [--] COMMAND [ARGS...]",
            qwrap_bwrap().display()
        )
    );
    let o = std::process::Command::new(qwrap())
        .args(["bwrap", "--help"])
        .output()
        .unwrap();
    assert!(
        stdout(&o).starts_with(&format!("usage: {} bwrap [OPTIONS...]", qwrap().display())),
        "{}",
        stdout(&o)
    );
}

/// As bubblewrap: a bind's destination may be a symlink `--symlink` made
/// (followed); `--symlink` over the same symlink is a no-op, over another
/// one an error naming what is there.
#[test]
fn symlink_destinations_as_bubblewrap_has_them() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let ws = f.ws();
        let ws = ws.to_str().unwrap();
        let run = |extra: &[&str]| {
            let mut args = vec!["--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind", ws, ws];
            args.extend_from_slice(extra);
            f.command(qwrap_bwrap()).args(&args).output().unwrap()
        };
        let o = run(&[
            "--dir",
            "/tmp/dir",
            "--symlink",
            "dir",
            "/tmp/link",
            "--bind",
            "/etc",
            "/tmp/link",
            "test",
            "-e",
            "/tmp/dir/passwd",
        ]);
        assert!(o.status.success(), "{who:?}: {}", stderr(&o));
        std::os::unix::fs::symlink("/dev/null", f.ws().join("link")).unwrap();
        let link = format!("{ws}/link");
        let o = run(&["--symlink", "/dev/null", &link, "true"]);
        assert!(o.status.success(), "{who:?}: {}", stderr(&o));
        let o = run(&["--symlink", "/dev/zero", &link, "true"]);
        assert_eq!(o.status.code(), Some(1), "{who:?}");
        assert!(
            stderr(&o).contains(&format!(
                "Can't make symlink at /tmp/newroot{link}: existing destination is /dev/null"
            )),
            "{who:?}: {}",
            stderr(&o)
        );
    }
}

/// `--proc` through a symlink in the new root: the entries of /proc that
/// bubblewrap covers read-only (irq and bus, as root) are covered where
/// /proc was mounted, not looked up through the link on the host, where
/// they are missing (and were left writable).
#[test]
fn proc_through_a_symlink_covers_the_same_entries() {
    let script = "awk '$5 ~ \"^/tmp/real/\" { print $5, substr($6, 1, 2) }' /proc/self/mountinfo";
    for who in Who::all() {
        let f = Fixture::new(who);
        let covered = |link: &[&str], at: &str| {
            let mut args = vec!["--ro-bind", "/", "/", "--tmpfs", "/tmp", "--dir", "/tmp/real"];
            args.extend(link);
            args.extend(["--proc", at, "--unshare-pid", "sh", "-c", script]);
            ok(&f.command(qwrap_bwrap()).args(&args).output().unwrap())
        };
        let direct = covered(&[], "/tmp/real");
        if who == Who::Root {
            assert_eq!(direct, "/tmp/real/irq ro\n/tmp/real/bus ro\n");
        }
        for link in ["real", "/tmp/real"] {
            assert_eq!(
                covered(&["--symlink", link, "/tmp/lnk"], "/tmp/lnk"),
                direct,
                "{who:?}: --proc through a symlink to {link}"
            );
        }
    }
}

/// A root caller's capabilities in the ambient set, as bubblewrap leaves
/// them: offered, so that its inheritable ones become ambient; with
/// `--cap-add` all kept ones inheritable and ambient. Against Debian's
/// bubblewrap, as root (only root holds capabilities to keep).
#[test]
fn a_root_callers_ambient_capabilities_are_bubblewraps() {
    if !Who::all().contains(&Who::Root) {
        eprintln!("SKIP a root caller's ambient capabilities: the suite does not run as root");
        return;
    }
    let f = Fixture::new(Who::Root);
    for (inheritable, args) in [
        ("+net_raw", &["--ro-bind", "/", "/"][..]),
        ("+net_raw", &["--ro-bind", "/", "/", "--cap-drop", "CAP_CHOWN"]),
        ("-all", &["--ro-bind", "/", "/", "--cap-add", "CAP_CHOWN"]),
        ("+net_raw", &["--ro-bind", "/", "/", "--unshare-user"]),
        (
            "+net_raw",
            &[
                "--ro-bind",
                "/",
                "/",
                "--unshare-user",
                "--cap-add",
                "CAP_NET_RAW",
            ],
        ),
    ] {
        let caps = |bwrap: &std::path::Path| {
            let o = f
                .command("setpriv")
                .args(["--inh-caps", inheritable, "--"])
                .arg(bwrap)
                .args(args)
                .args(["grep", "^Cap", "/proc/self/status"])
                .output()
                .unwrap();
            ok(&o)
        };
        assert_eq!(
            caps(qwrap_bwrap()),
            caps(std::path::Path::new("/usr/bin/bwrap")),
            "inheritable {inheritable}, {args:?}"
        );
    }
}
