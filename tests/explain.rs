//! `--explain` and `--denials FILE`: each kind of refusal is said at exit,
//! one line each with the option that would allow it, and written as one
//! JSON object; a command that is refused nothing makes qwrap say nothing;
//! the flag off leaves the plan as it was. Each case as root and as an
//! unprivileged uid. Every refusal here is still the kernel's (or the
//! filter's): the command's own error is checked beside qwrap's line.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Output;

/// `qwrap run --explain --denials FILE [opts] -- sh -c script`: the run,
/// its `qwrap: refused:` lines and the denials file's objects.
fn explained(f: &Fixture, opts: &[&str], script: &str) -> (Output, Vec<String>, Vec<serde_json::Value>) {
    let denials = f.path().join("denials.json");
    let _ = std::fs::remove_file(&denials);
    let mut args = vec!["run", "--explain", "--denials"];
    let d = denials.to_str().unwrap().to_string();
    args.push(&d);
    args.extend_from_slice(opts);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    let o = f.qwrap(&args).env_remove("QWRAP_PID").output().unwrap();
    let lines = stderr(&o)
        .lines()
        .filter(|l| l.starts_with("qwrap: refused:"))
        .map(String::from)
        .collect();
    let objects = std::fs::read_to_string(&denials)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    (o, lines, objects)
}

/// The object about `target` (a path or a call).
fn object<'a>(objects: &'a [serde_json::Value], kind: &str, target: &str) -> &'a serde_json::Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && (o["path"] == target || o["target"] == target))
        .unwrap_or_else(|| panic!("no {kind} object for {target} in {objects:#?}"))
}

#[test]
fn a_write_outside_the_roots_names_the_include_that_would_allow_it() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let out = f.mkdir("out");
        let target = out.join("made");
        let script = format!("touch {0}; mkdir {0}.d; echo went on", target.display());
        let (o, lines, objects) = explained(&f, &[], &script);
        let err = stderr(&o);
        assert!(err.contains("Read-only file system"), "{who:?}: {err}");
        assert!(!target.exists());
        let want = format!(
            "qwrap: refused: write {} (openat: EROFS): outside the writable roots; allow with --include {}",
            target.display(),
            out.display()
        );
        assert!(lines.contains(&want), "{who:?}: {lines:#?}");
        assert!(
            lines.iter().any(|l| l.starts_with(&format!(
                "qwrap: refused: write {}.d (mkdir: EROFS)",
                target.display()
            ))),
            "{who:?}: {lines:#?}"
        );
        let w = object(&objects, "write", target.to_str().unwrap());
        assert_eq!(w["errno"], "EROFS");
        assert_eq!(w["operation"], "openat");
        assert_eq!(w["option"], format!("--include {}", out.display()));
        assert_eq!(w["command"], "touch");
        assert!(w["pid"].as_i64().unwrap() > 0 && w["time"].as_f64().unwrap() > 0.0);
        assert!(
            w["reason"]
                .as_str()
                .unwrap()
                .contains("outside the writable roots")
        );
        // And nothing about the workspace, where the writes go through.
        let (_, lines, _) = explained(&f, &[], "touch in-ws && mkdir d && rm -r in-ws d");
        assert!(lines.is_empty(), "{who:?}: {lines:#?}");
    }
}

#[test]
fn a_read_of_a_hidden_path_names_the_show_that_would_allow_it() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("home/.ssh");
        let key = f.write("home/.ssh/id_ed25519", "PRIVATE KEY\n", 0o600);
        // The listed home (the default): absent, and --show shows it.
        let (o, _, objects) = explained(&f, &[], &format!("cat {}; echo read=$?", key.display()));
        assert!(!stdout(&o).contains("PRIVATE KEY"), "{who:?}");
        let r = object(&objects, "read", key.to_str().unwrap());
        assert_eq!(r["option"], format!("--show {}", key.display()));
        assert_eq!(r["errno"], "ENOENT");
        // The whole home: the hidden set refuses it.
        let (o, lines, objects) = explained(
            &f,
            &["--home", "readonly"],
            &format!("cat {}; echo read=$?", key.display()),
        );
        let out = stdout(&o);
        assert!(!out.contains("PRIVATE KEY"), "{who:?}: {out}");
        let r = object(&objects, "read", key.to_str().unwrap());
        assert_eq!(r["option"], format!("--show {}", key.display()));
        assert_eq!(r["operation"], "openat");
        // Root's sandbox holds no capability: refused alike.
        assert!(out.contains("read=1"), "{who:?}: {out}");
        assert!(stderr(&o).contains("Permission denied"), "{}", stderr(&o));
        assert_eq!(r["errno"], "EACCES");
        assert!(
            lines.iter().any(
                |l| l.starts_with(&format!("qwrap: refused: read {}", key.display()))
                    && l.ends_with(&format!("; allow with --show {}", key.display()))
            ),
            "{who:?}: {lines:#?}"
        );
    }
}

/// Not only opens: a program the view leaves out ("not found"), an access
/// check and a chdir of hidden paths are said, each with its call.
#[test]
fn a_program_a_probe_and_a_chdir_of_hidden_paths_are_said() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("home/bin");
        let tool = f.write("home/bin/mytool", "#!/bin/sh\necho ran\n", 0o755);
        let aws = f.mkdir("home/.aws");
        f.write("home/.aws/credentials", "[default]\n", 0o600);
        let script = format!(
            "{t}; echo exec=$?; [ -r {a}/credentials ] || test -r {a}/credentials; cd {a} 2>/dev/null; echo cd=$?",
            t = tool.display(),
            a = aws.display()
        );
        // The listed home: neither is there; --show lists each.
        let (o, _, objects) = explained(&f, &[], &script);
        let out = stdout(&o);
        assert!(
            out.contains("exec=127") && out.contains("cd=") && !out.contains("ran"),
            "{who:?}: {out}"
        );
        let r = object(&objects, "read", tool.to_str().unwrap());
        assert_eq!(r["operation"], "execve", "{who:?}: {r}");
        assert_eq!(r["option"], format!("--show {}", tool.display()));
        let r = object(&objects, "read", aws.to_str().unwrap());
        assert_eq!(r["operation"], "chdir", "{who:?}: {r}");
        // The whole home: the hidden set refuses the credentials; an access
        // check of them is said.
        let (o, lines, objects) = explained(&f, &["--home", "readonly"], &script);
        assert!(stdout(&o).contains("ran"), "{who:?}: {}", stdout(&o));
        let creds = aws.join("credentials");
        let r = objects
            .iter()
            .find(|o| o["path"] == creds.to_str().unwrap() && o["operation"] != "openat")
            .unwrap_or_else(|| panic!("{who:?}: no probe of {} in {objects:#?}", creds.display()));
        assert!(
            ["access", "faccessat", "faccessat2"].contains(&r["operation"].as_str().unwrap()),
            "{who:?}: {r}"
        );
        assert!(
            lines.iter().any(|l| l.contains(creds.to_str().unwrap())),
            "{who:?}: {lines:#?}"
        );
    }
}

#[test]
fn a_read_outside_the_minimal_view_names_the_expose_that_would_allow_it() {
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("elsewhere");
        let file = f.write("elsewhere/notes", "x\n", 0o644);
        let (o, lines, objects) = explained(&f, &["--view", "minimal"], &format!("cat {}", file.display()));
        assert!(stderr(&o).contains("No such file or directory"), "{}", stderr(&o));
        let r = object(&objects, "read", file.to_str().unwrap());
        assert_eq!(r["errno"], "ENOENT");
        assert_eq!(r["option"], format!("--expose {}", file.display()));
        assert!(
            lines.contains(&format!(
                "qwrap: refused: read {} (openat: ENOENT): a host path the minimal view leaves out; allow with --expose {}",
                file.display(),
                file.display()
            )),
            "{who:?}: {lines:#?}"
        );
    }
}

#[test]
fn a_connect_to_a_masked_socket_names_the_allow_socket_that_would_allow_it() {
    const SERVE: &str = "import socket,sys,time\ns=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(5)\nprint('ready',flush=True)\ntime.sleep(30)\n";
    const CONNECT: &str = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1]); print('connected')\nexcept OSError as e:\n    print(e.strerror)\n";
    for who in Who::all() {
        let f = Fixture::new(who);
        let sock = f.ws().join("agent.sock");
        let mut server = f
            .command("python3")
            .args(["-c", SERVE])
            .arg(&sock)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(server.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "ready");
        let script = format!("python3 -c \"$0\" {}", sock.display());
        let mut c = f.qwrap(&["run", "--explain", "--", "sh", "-c", &script, CONNECT]);
        let o = c.env_remove("QWRAP_PID").output().unwrap();
        server.kill().ok();
        server.wait().ok();
        assert_eq!(stdout(&o).trim(), "Connection refused", "{who:?}: {}", stderr(&o));
        let want = format!(
            "qwrap: refused: socket {0} (connect: ECONNREFUSED): a host socket, masked inside; allow with --allow-socket {0}",
            sock.display()
        );
        assert!(stderr(&o).lines().any(|l| l == want), "{who:?}: {}", stderr(&o));
    }
}

#[test]
fn a_call_the_filter_refuses_is_named_with_what_allows_it_or_that_nothing_does() {
    // keyctl(KEYCTL_GET_KEYRING_ID); ioctl(0, TIOCSTI); a syscall newer
    // than the table.
    let script = "python3 -c 'import ctypes; l=ctypes.CDLL(None, use_errno=True); print(l.syscall(250,0,-3,0), l.ioctl(0, 0x5412, b\"x\"), l.syscall(470))'";
    for who in Who::all() {
        let f = Fixture::new(who);
        let (o, lines, objects) = explained(&f, &[], script);
        assert_eq!(stdout(&o).trim(), "-1 -1 -1", "{who:?}: {}", stderr(&o));
        let k = object(&objects, "call", "keyctl");
        assert_eq!(k["errno"], "EPERM");
        assert_eq!(k["option"], "--share-keyring");
        assert!(
            lines.contains(
                &"qwrap: refused: call keyctl (EPERM): the caller's keyrings are out of reach; allow with --share-keyring"
                    .to_string()
            ),
            "{who:?}: {lines:#?}"
        );
        let t = object(&objects, "call", "ioctl TIOCSTI");
        assert_eq!(t["option"], serde_json::Value::Null);
        assert!(
            lines.iter().any(
                |l| l.starts_with("qwrap: refused: call ioctl TIOCSTI (ioctl: EPERM)")
                    && l.ends_with("; nothing allows it")
            ),
            "{who:?}: {lines:#?}"
        );
        assert_eq!(object(&objects, "call", "syscall 470")["errno"], "ENOSYS");
        // With --share-keyring the call goes on, and nothing is said of it.
        let (o, lines, _) = explained(
            &f,
            &["--share-keyring"],
            "python3 -c 'import ctypes; print(ctypes.CDLL(None).syscall(250,0,-3,0) != -1 or ctypes.get_errno())'",
        );
        assert!(
            !lines.iter().any(|l| l.contains("keyctl")),
            "{who:?}: {lines:#?} {}",
            stderr(&o)
        );
    }
}

#[test]
fn an_egress_refusal_names_the_allow_domain_that_would_allow_it() {
    let script = "python3 -c 'import os,socket; h,p=os.environ[\"HTTPS_PROXY\"].split(\"//\")[1].rstrip(\"/\").split(\":\"); s=socket.create_connection((h,int(p))); s.sendall(b\"CONNECT unlisted.invalid:443 HTTP/1.1\\r\\nHost: unlisted.invalid:443\\r\\n\\r\\n\"); print(s.recv(100).split()[1].decode())'";
    for who in Who::all() {
        let f = Fixture::new(who);
        let (o, lines, objects) = explained(&f, &["--network", "proxied"], script);
        assert_eq!(stdout(&o).trim(), "403", "{who:?}: {}", stderr(&o));
        let e = object(&objects, "egress", "unlisted.invalid:443");
        assert_eq!(e["operation"], "connect");
        assert_eq!(e["option"], "--allow-domain unlisted.invalid");
        assert_eq!(e["errno"], serde_json::Value::Null);
        assert!(
            lines.iter().any(
                |l| l.starts_with("qwrap: refused: egress unlisted.invalid:443 (connect)")
                    && l.ends_with("; allow with --allow-domain unlisted.invalid")
            ),
            "{who:?}: {lines:#?}"
        );
    }
}

#[test]
fn nothing_refused_nothing_said_and_the_lines_are_bounded() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let (o, lines, objects) = explained(
            &f,
            &[],
            "echo hi > f && cat f /etc/hostname >/dev/null && ls / >/dev/null",
        );
        ok(&o);
        assert!(
            lines.is_empty() && objects.is_empty(),
            "{who:?}: {lines:#?} {objects:#?}"
        );
        assert!(!stderr(&o).contains("refused"), "{who:?}: {}", stderr(&o));
        // 30 distinct refusals, each twice: 20 lines, then the count.
        let out = f.mkdir("out");
        let script = format!(
            "for i in $(seq 1 30); do touch {0}/$i {0}/$i; done 2>/dev/null; true",
            out.display()
        );
        let (o, lines, objects) = explained(&f, &[], &script);
        ok(&o);
        assert_eq!(lines.len(), 21, "{who:?}: {lines:#?}");
        assert!(lines[0].contains(", 2 times)"), "{}", lines[0]);
        assert_eq!(
            lines[20],
            "qwrap: refused: and 10 more (--denials FILE lists each)"
        );
        assert_eq!(objects.len(), 60, "each refusal, every time");
    }
}

#[test]
fn the_denials_file_alone_says_nothing_on_stderr() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let denials = f.path().join("d.json");
        let out = f.mkdir("out");
        let o = f
            .qwrap(&["run", "--denials", denials.to_str().unwrap(), "--", "touch"])
            .arg(out.join("x"))
            .env_remove("QWRAP_PID")
            .output()
            .unwrap();
        assert!(!stderr(&o).contains("qwrap: refused"), "{}", stderr(&o));
        let text = std::fs::read_to_string(&denials).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("\"kind\":\"write\""), "{text}");
    }
}

#[test]
fn the_plan_is_unchanged_without_the_flag() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let plan = |args: &[&str], explain: Option<&str>| {
            let mut c = f.qwrap(&["plan"]);
            c.args(args).args(["--", "true"]).env_remove("QWRAP_PID");
            if let Some(v) = explain {
                c.env("QWRAP_EXPLAIN", v);
            }
            ok(&c.output().unwrap())
        };
        let without = plan(&[], None);
        assert_eq!(without, plan(&[], Some("0")));
        assert!(!without.contains("explain"), "{without}");
        let json = plan(&["--json"], None);
        assert!(!json.contains("explain"), "{json}");
        // With it: the warden's and the filter's steps say it; the keyring
        // filter is folded into the one filter.
        let with = plan(&["--explain"], None);
        assert_eq!(with, plan(&[], Some("1")));
        assert!(with.contains("with --explain"), "{with}");
        let steps = |text: &str| -> Vec<serde_json::Value> {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            v["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["step"].clone())
                .collect()
        };
        let (a, b) = (steps(&json), steps(&plan(&["--json", "--explain"], None)));
        let ops =
            |v: &[serde_json::Value]| -> Vec<String> { v.iter().map(|s| s["op"].to_string()).collect() };
        let mut folded = ops(&a);
        folded.retain(|o| o != "\"refuse_keyrings\"");
        assert_eq!(folded, ops(&b), "only the keyring filter's step goes");
        let differ: Vec<String> = b
            .iter()
            .filter(|s| !a.contains(s))
            .map(|s| s["op"].to_string())
            .collect();
        assert_eq!(differ, ["\"start_warden\"", "\"seccomp\""]);
    }
}

#[test]
fn explain_is_refused_where_it_cannot_be_had() {
    let f = Fixture::new(Who::all()[0]);
    let o = f
        .qwrap(&["run", "--explain", "--pid", "private", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--explain: not with --pid private"),
        "{}",
        stderr(&o)
    );
    let o = f
        .qwrap(&["run", "--", "true"])
        .env("QWRAP_EXPLAIN", "maybe")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("$QWRAP_EXPLAIN"), "{}", stderr(&o));
}

#[test]
fn without_namespaces_the_refusals_are_landlocks() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let out = f.mkdir("out");
        let target = out.join("x");
        let (o, lines, _) = explained(
            &f,
            &["--isolation", "landlock"],
            &format!(
                "touch {}; python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>/dev/null",
                target.display()
            ),
        );
        if stderr(&o).contains("Landlock") && !o.status.success() && lines.is_empty() {
            eprintln!("SKIP: {}", stderr(&o));
            continue;
        }
        assert!(
            stderr(&o).contains("Permission denied"),
            "{who:?}: {}",
            stderr(&o)
        );
        assert!(
            lines.contains(&format!(
                "qwrap: refused: write {} (openat: EACCES): outside the writable roots; allow with --include {}",
                target.display(),
                out.display()
            )),
            "{who:?}: {lines:#?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("qwrap: refused: call socket (EPERM)")),
            "{who:?}: {lines:#?}"
        );
        // A new name at the top of a git workspace: no option to name.
        ok(&f.command("git").args(["init", "-q"]).output().unwrap());
        let (_, lines, _) = explained(&f, &["--isolation", "landlock"], "touch new-at-top");
        let top = lines
            .iter()
            .find(|l| l.contains("new-at-top"))
            .unwrap_or_else(|| panic!("{who:?}: {lines:#?}"));
        assert!(
            top.contains("top of a git workspace") && !top.contains("--include"),
            "{who:?}: {top}"
        );
    }
}

/// A signal to a host process: refused by Landlock's signal scope (or,
/// without it, by the warden) and said either way; the host process lives.
#[test]
fn a_signal_to_a_host_process_is_said() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let mut host = f.command("sleep").arg("60").spawn().unwrap();
        let pid = host.id();
        for opts in [&[][..], &["--landlock", "off"]] {
            let (o, lines, objects) =
                explained(&f, opts, &format!("kill -TERM {pid} 2>/dev/null; echo rc=$?"));
            assert!(stdout(&o).contains("rc=1"), "{who:?} {opts:?}: {}", stdout(&o));
            let k = object(&objects, "call", "kill");
            assert_eq!(k["errno"], "EPERM", "{who:?} {opts:?}");
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with("qwrap: refused: call kill (EPERM)")),
                "{who:?} {opts:?}: {lines:#?}"
            );
        }
        assert!(
            host.try_wait().unwrap().is_none(),
            "{who:?}: the host process died"
        );
        host.kill().ok();
        host.wait().ok();
    }
}

/// A limit reached is a refusal too: the time limit as every user, the
/// process limit where a cgroup can be had; each names the option that
/// raises it, and the command's own failure is checked beside it.
#[test]
fn a_limit_reached_names_the_option_that_raises_it() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let (o, lines, objects) = explained(&f, &["--time-limit", "1s"], "sleep 30");
        assert!(
            o.status.signal() == Some(15) || o.status.code() == Some(143),
            "{who:?}: {:?}",
            o.status
        );
        let t = object(&objects, "limit", "time 1s");
        assert_eq!(t["operation"], "SIGTERM", "{who:?}");
        assert_eq!(t["option"], "--time-limit DURATION (a longer one)", "{who:?}");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("qwrap: refused: limit time 1s (SIGTERM): ")
                    && l.ends_with("; allow with --time-limit DURATION (a longer one)")),
            "{who:?}: {lines:#?}"
        );
        if let Err(why) = cgroups::offered(who, "pids") {
            println!("SKIP the process limit's refusal as {who:?}: {why}");
            continue;
        }
        let forks = "i=0; while [ $i -lt 40 ]; do sleep 2 & i=$((i+1)); done; wait";
        let (o, lines, objects) = explained(&f, &["--max-processes", "10"], forks);
        let err = stderr(&o);
        assert!(
            err.lines()
                .any(|l| !l.starts_with("qwrap:") && l.to_lowercase().contains("fork")),
            "{who:?}: the shell's own error: {err}"
        );
        let p = object(&objects, "limit", "processes 10");
        assert_eq!(p["errno"], "EAGAIN", "{who:?}");
        assert!(
            lines.iter().any(
                |l| l.starts_with("qwrap: refused: limit processes 10 (fork: EAGAIN): ")
                    && l.ends_with("; allow with --max-processes N (a larger one)")
            ),
            "{who:?}: {lines:#?}"
        );
    }
}

/// bwrap mode keeps bubblewrap's behaviour: its stderr is bubblewrap's
/// and the command's alone. A caller who sets QWRAP_EXPLAIN is told each
/// refusal, with the layers' filter or without, in a PID namespace of the
/// sandbox's own or not; the monitor still exits with the command, and
/// what it left running goes on being answered.
#[test]
fn bwrap_mode_says_the_refusals_when_asked() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let ws = f.ws();
        let w = ws.to_str().unwrap();
        let script = format!(
            "touch /usr/qwrap-explain-probe; touch {w}/s; chmod u+s {w}/s 2>/dev/null; (sleep 1; touch {w}/late /usr/qwrap-late) >/dev/null 2>&1 & exit 0"
        );
        for (extra, layers) in [(&[][..], "0"), (&["--unshare-pid"][..], "0"), (&[][..], "1")] {
            let mut argv = vec!["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--bind", w, w];
            argv.extend_from_slice(extra);
            argv.extend_from_slice(&["--", "sh", "-c", &script]);
            let _ = std::fs::remove_file(ws.join("late"));
            let _ = std::fs::remove_file(ws.join("s"));
            let plain = f
                .qwrap(&argv)
                .env_remove("QWRAP_EXPLAIN")
                .env("QWRAP_BWRAP_LAYERS", layers)
                .output()
                .unwrap();
            assert_eq!(
                stderr(&plain).lines().filter(|l| l.starts_with("qwrap:")).count(),
                0,
                "{who:?} {extra:?}: {}",
                stderr(&plain)
            );
            let _ = std::fs::remove_file(ws.join("s"));
            let start = std::time::Instant::now();
            let asked = f
                .qwrap(&argv)
                .env("QWRAP_EXPLAIN", "1")
                .env("QWRAP_BWRAP_LAYERS", layers)
                .output()
                .unwrap();
            let err = stderr(&asked);
            assert_eq!(asked.status.code(), Some(0), "{who:?} {extra:?}: {err}");
            assert!(
                err.contains("Read-only file system"),
                "{who:?} {extra:?}: the command's own error: {err}"
            );
            assert!(
                err.lines().any(|l| l.starts_with(
                    "qwrap: refused: write /usr/qwrap-explain-probe (openat: EROFS): a read-only mount of the sandbox's view; allow with --bind SRC /usr"
                )),
                "{who:?} {extra:?}: {err}"
            );
            // The layers' filter refuses a setuid bit: said; without them
            // bubblewrap lets it be.
            let setuid = err.lines().any(|l| {
                l.starts_with("qwrap: refused: call ")
                    && l.contains("chmod")
                    && l.contains("(EPERM): a setuid or setgid bit")
            });
            assert_eq!(setuid, layers == "1", "{who:?} {extra:?}: {err}");
            let mode = std::fs::metadata(ws.join("s")).unwrap().permissions().mode();
            assert_eq!(mode & 0o4000 != 0, layers == "0", "{who:?} {extra:?}: {mode:o}");
            assert!(
                start.elapsed() < std::time::Duration::from_millis(900),
                "{who:?} {extra:?}: the monitor waited for what the command left running"
            );
            // Without a PID namespace of its own, what it left running
            // goes on: its calls are still answered.
            if extra.is_empty() {
                std::thread::sleep(std::time::Duration::from_millis(1500));
                assert!(
                    ws.join("late").exists(),
                    "{who:?} {extra:?}: the leftover's write"
                );
            }
        }
    }
}

/// A bwrap mode sandbox inside another, both asked for the refusals: the
/// kernel allows one listener per filter chain, so the inner one says it
/// hears nothing and runs as bubblewrap would; the outer one, which hears
/// the inner command's calls too, says its refusal.
#[test]
fn a_nested_bwrap_mode_sandbox_leaves_the_refusals_to_the_outer_one() {
    for who in Who::all() {
        let f = Fixture::new(who);
        let bin = qwrap().to_str().unwrap().to_string();
        let o = f
            .qwrap(&[
                "bwrap",
                "--unshare-user",
                "--uid",
                "0",
                "--gid",
                "0",
                "--cap-add",
                "ALL",
                "--ro-bind",
                "/",
                "/",
                "--bind",
                "/proc",
                "/proc",
                "--",
                &bin,
                "bwrap",
                "--unshare-all",
                "--ro-bind",
                "/",
                "/",
                "--bind",
                "/proc",
                "/proc",
                "--",
                "sh",
                "-c",
                "touch /usr/qwrap-nested-probe; echo ran",
            ])
            .env("QWRAP_EXPLAIN", "1")
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(stdout(&o).trim(), "ran", "{who:?}: {err}");
        assert!(
            err.contains("bwrap: QWRAP_EXPLAIN: a filter around this sandbox has a listener already"),
            "{who:?}: {err}"
        );
        assert!(
            err.lines()
                .any(|l| l.starts_with("qwrap: refused: write /usr/qwrap-nested-probe (openat: EROFS)")),
            "{who:?}: {err}"
        );
    }
}

/// A judgment that hangs (a path on a FUSE mount whose daemon never
/// answers, which a bwrap mode command with /dev/fuse can make) holds up
/// neither the call for long nor the monitor's end: qwrap returns as the
/// command ends, long before the daemon's descriptor closes.
#[test]
fn a_judgment_that_hangs_holds_up_neither_the_call_nor_the_end() {
    const HANG: &str = include_str!("helpers/fuse_hang.py");
    if !Path::new("/dev/fuse").exists() {
        println!("SKIP: no /dev/fuse on this host");
        return;
    }
    for who in Who::all() {
        let f = Fixture::new(who);
        let ws = f.ws();
        let w = ws.to_str().unwrap();
        std::fs::write(ws.join("hang.py"), HANG).unwrap();
        let mnt = format!("{w}/m");
        // Files, not pipes: the daemon's holder keeps what it inherited.
        let log = f.path().join("hang.log");
        let file = || std::fs::File::create(&log).unwrap();
        let start = std::time::Instant::now();
        let status = f
            .qwrap(&[
                "bwrap",
                "--ro-bind",
                "/",
                "/",
                "--bind",
                w,
                w,
                "--proc",
                "/proc",
                "--dev-bind",
                "/dev",
                "/dev",
                "--chdir",
                w,
                "--",
                "python3",
                "hang.py",
                &mnt,
                "12",
            ])
            .env("QWRAP_EXPLAIN", "1")
            .stdout(file())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        let took = start.elapsed();
        let out = std::fs::read_to_string(&log).unwrap_or_default();
        if out.contains("failed") {
            println!("SKIP as {who:?}: no FUSE mount in a user namespace here: {out}");
            continue;
        }
        assert!(
            status.success() && out.contains("parent done"),
            "{who:?}: {status:?} {out}"
        );
        assert!(took < std::time::Duration::from_secs(6), "{who:?}: took {took:?}");
    }
}
