//! Host sockets bound with awkward names, each by a process of its own, for
//! the socket-mask tests.

use super::Fixture;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Child, Output, Stdio};

/// Binds sys.argv[2] from inside sys.argv[1], then moves to $AFTER.
const SERVE: &str = "import os,socket,sys,time\nos.chdir(sys.argv[1])\nif os.path.exists(sys.argv[2]): os.unlink(sys.argv[2])\ns=socket.socket(socket.AF_UNIX); s.bind(sys.argv[2]); s.listen(5)\nos.chdir(os.environ.get('AFTER', '.'))\nprint('ready',flush=True)\ntime.sleep(60)\n";
/// Connects to each (dir, name) pair from inside dir; prints the outcome.
const CONNECT: &str = "import os,socket,sys\nfor d,n in zip(sys.argv[1::2],sys.argv[2::2]):\n    os.chdir(d); s=socket.socket(socket.AF_UNIX)\n    try:\n        s.connect(n); print('connected')\n    except OSError as e:\n        print(e.strerror)\n";

/// Relative names (one from a directory deeper than sun_path can name),
/// one with a space, one with a newline.
pub struct AwkwardSockets {
    pub cases: Vec<(PathBuf, &'static str)>,
}

impl AwkwardSockets {
    pub fn new(f: &Fixture) -> Self {
        let mut deep = String::from("sockets");
        while deep.len() < 150 {
            deep.push_str("/dddddddddddddddddddd");
        }
        let long = f.mkdir(&deep);
        let dir = f.mkdir("sockets");
        AwkwardSockets {
            cases: vec![
                (dir.clone(), "rel.sock"),
                (dir.clone(), "sp ace.sock"),
                (dir, "new\nline.sock"),
                (long, "deep.sock"),
            ],
        }
    }

    /// One binder per socket, as the fixture's identity, moving to `after`
    /// once bound.
    pub fn serve(&self, f: &Fixture, after: &str) -> Vec<Child> {
        self.cases
            .iter()
            .map(|(d, n)| {
                let mut child = f
                    .command("python3")
                    .args(["-c", SERVE])
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
    }

    /// `qwrap run` connecting to each socket, on a mount API.
    pub fn connect_inside(&self, f: &Fixture, api: &str) -> Output {
        let mut args: Vec<OsString> = Vec::new();
        for (d, n) in &self.cases {
            args.push(d.clone().into());
            args.push(n.into());
        }
        f.qwrap(&["run", "--", "python3", "-c", CONNECT])
            .args(&args)
            .env("QWRAP_MOUNT_API", api)
            .output()
            .unwrap()
    }
}

pub fn stop(children: Vec<Child>) {
    for mut c in children {
        c.kill().ok();
        c.wait().ok();
    }
}
