//! The git guard's attack helpers (tests/git_guard.rs): the planting
//! script, the pointer files to compare, host git polled while a sandbox
//! runs.

use super::Fixture;
use std::path::{Path, PathBuf};

/// Plants in every git dir the sandbox sees, then waits for host git.
pub fn plant_script(marker: &Path) -> String {
    let m = marker.display();
    format!(
        r#"common=$(git rev-parse --git-common-dir)
mkdir -p /tmp/evil-git && cp -r "$common/objects" "$common/refs" "$common/HEAD" /tmp/evil-git/
cp -r /tmp/evil-git "$PWD/evil-git" 2>/dev/null
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch {m}; false"\n' > "$PWD/evil-git/config"
for d in "$common" "$common"/worktrees/* "$common"/modules/*; do
  [ -d "$d" ] || continue
  echo "$PWD/evil-git" > "$d/commondir"; echo /tmp > "$d/gitdir"
  printf '[extensions]\n\tworktreeConfig = true\n' >> "$d/config"
  printf '[core]\n\tfsmonitor = "touch {m}; false"\n' > "$d/config.worktree"
  mkdir -p "$d/hooks"; printf '#!/bin/sh\ntouch {m}\n' > "$d/hooks/post-checkout"; chmod +x "$d/hooks/post-checkout"
  echo "$PWD/evil-git/objects" > "$d/objects/info/alternates"
  rm -f "$d/ORIG_HEAD"; mkfifo "$d/ORIG_HEAD"
  rm -f "$d/packed-refs"; ln -s /dev/tty "$d/packed-refs"
done
echo planted
sleep 2
rm -rf "$PWD/evil-git"
"#
    )
}

/// What chooses code or another git dir in a host git dir.
pub fn pointers(d: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = [
        "commondir",
        "gitdir",
        "config",
        "config.worktree",
        "hooks/post-checkout",
    ]
    .iter()
    .map(|n| (n.to_string(), std::fs::read(d.join(n)).unwrap_or_default()))
    .collect();
    v.sort();
    v
}

/// Host git (`status`, `log`) in each checkout every 50 ms, each bounded by
/// `timeout 5` so that a hang counts instead of hanging the test.
pub struct HostPoll {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<(usize, usize)>,
}

impl HostPoll {
    pub fn start(f: &Fixture, dirs: &[PathBuf]) -> HostPoll {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut cmds: Vec<std::process::Command> = Vec::new();
        for d in dirs {
            for args in [&["status", "--porcelain"][..], &["log", "-1", "--format=%s"][..]] {
                let mut c = f.command("timeout");
                c.arg("5").arg("git").args(args).current_dir(d);
                cmds.push(c);
            }
        }
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let (mut polls, mut hung) = (0, 0);
            while !s.load(std::sync::atomic::Ordering::SeqCst) {
                for c in &mut cmds {
                    if c.output().is_ok_and(|o| o.status.code() == Some(124)) {
                        hung += 1;
                    }
                    polls += 1;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            (polls, hung)
        });
        HostPoll { stop, thread }
    }

    pub fn stop(self) -> (usize, usize) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.join().unwrap()
    }
}
