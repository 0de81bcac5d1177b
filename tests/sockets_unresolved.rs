//! A host socket whose binder has left the directory it bound a relative
//! name from: root finds the file by asking the kernel (SIOCUNIXFILE) and
//! masks it; an unprivileged caller cannot find its own socket's file and
//! the sandbox does not start. Alone in its binary: while the socket is
//! unfindable, every sandbox of the same user refuses to start.

mod common;

use common::*;
use std::process::Stdio;

#[test]
fn a_socket_whose_binder_moved_is_masked_or_stops_the_sandbox() {
    // One binder per socket, each staying in (or leaving) its directory.
    let serve = "import os,socket,sys,time\nos.chdir(sys.argv[1])\nif os.path.exists(sys.argv[2]): os.unlink(sys.argv[2])\ns=socket.socket(socket.AF_UNIX); s.bind(sys.argv[2]); s.listen(5)\nos.chdir(os.environ.get('AFTER', '.'))\nprint('ready',flush=True)\ntime.sleep(60)\n";
    let connect = "import os,socket,sys\nfor d,n in zip(sys.argv[1::2],sys.argv[2::2]):\n    os.chdir(d); s=socket.socket(socket.AF_UNIX)\n    try:\n        s.connect(n); print('connected')\n    except OSError as e:\n        print(e.strerror)\n";
    for who in Who::all() {
        for api in APIS {
            let f = Fixture::new(who);
            let mut deep = String::from("sockets");
            while deep.len() < 150 {
                deep.push_str("/dddddddddddddddddddd");
            }
            let long = f.mkdir(&deep);
            let dir = f.mkdir("sockets");
            let cases = [
                (dir.clone(), "rel.sock"),
                (dir.clone(), "sp ace.sock"),
                (dir.clone(), "new\nline.sock"),
                (long, "deep.sock"),
            ];
            let mut args: Vec<std::ffi::OsString> = Vec::new();
            for (d, n) in &cases {
                args.push(d.clone().into());
                args.push(n.into());
            }
            let serve = |after: &str| -> Vec<std::process::Child> {
                cases
                    .iter()
                    .map(|(d, n)| {
                        let mut child = f
                            .command("python3")
                            .args(["-c", serve])
                            .arg(d)
                            .arg(n)
                            .env("AFTER", after)
                            .stdout(Stdio::piped())
                            .spawn()
                            .unwrap();
                        let mut line = String::new();
                        std::io::BufRead::read_line(
                            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
                            &mut line,
                        )
                        .unwrap();
                        assert_eq!(line.trim(), "ready");
                        child
                    })
                    .collect()
            };
            let stop = |children: Vec<std::process::Child>| {
                for mut c in children {
                    c.kill().ok();
                    c.wait().ok();
                }
            };
            let run = || {
                f.qwrap(&["run", "--", "python3", "-c", connect])
                    .args(&args)
                    .env("QWRAP_MOUNT_API", api)
                    .output()
                    .unwrap()
            };
            let children = serve("/");
            let o = run();
            stop(children);
            if who == Who::Root {
                let out = stdout(&o);
                assert_eq!(
                    out.lines().collect::<Vec<_>>(),
                    ["Connection refused"; 4],
                    "{api}: {out} {}",
                    stderr(&o)
                );
            } else {
                assert_eq!(o.status.code(), Some(125), "{who:?} {api}: {}", stdout(&o));
                assert!(stderr(&o).contains("cannot mask host sockets"), "{}", stderr(&o));
                assert!(stdout(&o).is_empty());
            }
        }
    }
}
