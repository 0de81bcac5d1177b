//! The differential harness for bwrap mode: one probe of the sandbox's view
//! run under Debian's bubblewrap and under qwrap named `bwrap`.

use super::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// qwrap under the name `bwrap`, where any uid can run it.
pub fn qwrap_bwrap() -> &'static Path {
    static LINK: OnceLock<PathBuf> = OnceLock::new();
    LINK.get_or_init(|| {
        let link = qwrap().parent().unwrap().join("bwrap");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(qwrap(), &link).unwrap();
        link
    })
}

pub fn have_bwrap() -> bool {
    Path::new("/usr/bin/bwrap").exists()
}

/// What the probe prints: a view of the sandbox that two correct
/// implementations agree on, with run-specific numbers left out.
pub fn probe(ws: &Path) -> String {
    let ws = ws.display();
    format!(
        r#"echo "ids $(id -u) $(id -g)"
echo "cwd $(pwd)"
env | grep -v -e '^_=' -e '^SHLVL=' -e '^OLDPWD=' | sort | sed 's/^/env /'
echo "dev $(ls -A /dev 2>/dev/null | tr '\n' ' ')"
for p in / /usr /tmp /var/tmp {ws} /dev /dev/shm; do
  if mkdir "$p/.qwrap-diff.$$" 2>/dev/null; then rmdir "$p/.qwrap-diff.$$"; echo "write $p ok"; else echo "write $p no"; fi
done
grep -E '^(Cap|NoNewPrivs)' /proc/self/status | tr -s '\t' ' ' | sed 's/^/status /'
echo "ifaces $(tail -n +3 /proc/net/dev 2>/dev/null | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ' ')"
echo "hostname $(hostname)"
if [ "$$" -le 2 ]; then echo "pid low"; else echo "pid host"; fi
[ "$(readlink /proc/self/ns/pid)" = "$HOST_PIDNS" ] && echo "pidns host" || echo "pidns new"
echo "mounts $(cut -d' ' -f5 /proc/self/mountinfo 2>/dev/null | sort | tr '\n' ' ')"
exit 3
"#
    )
}

/// Runs `prog ARGS… sh -c PROBE` as the identity under test with fd 3 and 4
/// going to files; returns (stdout, status, info, json-status).
pub fn run(f: &Fixture, prog: &Path, args: &[String], tag: &str) -> (String, Option<i32>, String, String) {
    let info = f.path().join(format!("info-{tag}"));
    let status = f.path().join(format!("status-{tag}"));
    let mut quoted = vec![format!("'{}'", prog.display())];
    quoted.extend(args.iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))));
    let script = format!(
        "exec {} sh -c \"$PROBE\" 3>'{}' 4>'{}'",
        quoted.join(" "),
        info.display(),
        status.display()
    );
    let host_pidns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let o = f
        .command("sh")
        .args(["-c", &script])
        .env("PROBE", probe(&f.ws()))
        .env("HOST_PIDNS", host_pidns)
        .env("QWRAP_DIFF", "1")
        .output()
        .unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (
        format!("{}{}", stdout(&o), stderr(&o)),
        o.status.code(),
        numbers_out(&read(&info)),
        numbers_out(&read(&status)),
    )
}

/// Digits replaced by N: pids and namespace inodes differ run to run.
pub fn numbers_out(s: &str) -> String {
    let mut out = String::new();
    let mut in_num = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_num {
                out.push('N');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(c);
        }
    }
    out
}

pub fn compare(name: &str, args: &[&str]) {
    if !have_bwrap() {
        panic!("bubblewrap is not installed (.ci/run installs it)");
    }
    for who in Who::all() {
        let f = Fixture::new(who);
        f.mkdir("ws/sub");
        f.write("ws/secret", "token\n", 0o600);
        let ws = f.ws().display().to_string();
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                a.replace("WS", &ws)
                    .replace("FIX", &f.path().display().to_string())
            })
            .collect();
        let real = run(&f, Path::new("/usr/bin/bwrap"), &args, "bwrap");
        let ours = run(&f, qwrap_bwrap(), &args, "qwrap");
        assert_eq!(
            real.1,
            Some(3),
            "{name} {who:?}: bubblewrap itself failed: {}",
            real.0
        );
        for (what, a, b) in [
            ("view", &real.0, &ours.0),
            ("--info-fd", &real.2, &ours.2),
            ("--json-status-fd", &real.3, &ours.3),
        ] {
            if a != b {
                let diff: Vec<String> = a
                    .lines()
                    .zip(b.lines())
                    .filter(|(x, y)| x != y)
                    .map(|(x, y)| format!("  bwrap: {x}\n  qwrap: {y}"))
                    .collect();
                panic!(
                    "{name} {who:?}: {what} differs\n{}\n--- bwrap:\n{a}\n--- qwrap:\n{b}",
                    diff.join("\n")
                );
            }
        }
        assert_eq!(real.1, ours.1, "{name} {who:?}: exit status");
    }
}

pub const INFO: [&str; 4] = ["--info-fd", "3", "--json-status-fd", "4"];

pub fn with_info(args: &[&'static str]) -> Vec<&'static str> {
    let mut v = INFO.to_vec();
    v.extend_from_slice(args);
    v
}
