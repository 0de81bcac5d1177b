//! The home's canaries, beyond the one under an unlisted name: a file the
//! host replaces by rename while the probe runs (the mask of a hidden file
//! is a mount on a dentry that a rename detaches), and the canary seen
//! through each second path the host's mounts give the home. verify plants
//! both in the home before the probe's plan is made; in the whole-home
//! views they join the probe's hidden set, so each check asks what that
//! view claims: hidden stays hidden.

use super::Check;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const REPLACED: &str = "home-replaced";
const REPLACED_T: &str = "a home file the host replaces during the run cannot be read";
const SECOND: &str = "home-second-path";
const SECOND_T: &str = "the home's files cannot be read through a second path to the home";
/// The line the probe prints when verify should replace the file.
const REPLACE_NOW: &str = "qwrap-probe: replace the home file now\n";
/// What verify leaves in the workspace once it has replaced it.
const REPLACED_MARK: &str = ".qwrap-verify-home-replaced";
/// Why the whole-home views give the replacement row up.
pub const WHOLE_GIVES_UP: &str = "--home readonly shows the host's home whole: a hidden file is masked by a mount on it, which a rename on the host detaches, so a file the host renames into its place is readable; the listed home (the default) and --home overlay (whose mask lies on the overlay's own file) hold";
/// What the replacement holds.
const CONTENT: &str = "qwrap verify canary\n";

/// On the host: the files planted in the home.
#[derive(Debug, Default)]
pub(super) struct Planted {
    /// Under a name nothing lists (and hidden in the whole-home views).
    pub canary: Option<PathBuf>,
    /// Replaced by rename while the probe waits.
    pub replaced: Option<PathBuf>,
    /// Whether verify did replace it.
    pub done: bool,
}

impl Planted {
    /// Plants both in `home` (what cannot be planted gives a SKIP).
    pub(super) fn plant(home: &Path, tag: &str) -> Self {
        let plant = |name: String| {
            let p = home.join(name);
            std::fs::write(&p, CONTENT).is_ok().then_some(p)
        };
        Planted {
            canary: plant(format!(".{tag}-canary")),
            replaced: plant(format!(".{tag}-replaced")),
            done: false,
        }
    }

    /// The hidden entries a whole-home view adds for them.
    pub(super) fn hidden(&self) -> Vec<crate::policy::HiddenPath> {
        [&self.canary, &self.replaced]
            .into_iter()
            .flatten()
            .map(|p| crate::policy::HiddenPath {
                path: p.clone(),
                dir: false,
                why: "verify's canary".into(),
            })
            .collect()
    }

    /// The canary at each second path the host's mounts give it.
    pub(super) fn second_paths(&self) -> Vec<PathBuf> {
        self.canary
            .as_deref()
            .map(|c| crate::host::second_paths(&[c]))
            .unwrap_or_default()
    }

    /// Outside, when the probe asks: a new file renamed over the planted
    /// one, as an editor or a credential helper saves; then the probe is
    /// told to read.
    pub(super) fn replace_if_asked(&mut self, output: &[u8], workspace: &Path) {
        let asked = output
            .windows(REPLACE_NOW.len())
            .any(|w| w == REPLACE_NOW.as_bytes());
        let Some(p) = self.replaced.as_ref().filter(|_| asked && !self.done) else {
            return;
        };
        let new = p.with_extension("new");
        self.done = std::fs::write(&new, CONTENT).is_ok() && std::fs::rename(&new, p).is_ok();
        let _ = std::fs::remove_file(&new);
        let _ = std::fs::write(workspace.join(REPLACED_MARK), "");
    }

    /// After the run: the replacement check stands only where verify did
    /// replace the file. `--home readonly` gives that row up (`whole`: its mask
    /// is a mount on the host's file, which the rename detached), so what
    /// was read there is said as not provided.
    pub(super) fn settle(&self, checks: &mut [Check], workspace: &Path, whole: bool) {
        let _ = std::fs::remove_file(workspace.join(REPLACED_MARK));
        for c in checks.iter_mut().filter(|c| c.name == REPLACED) {
            if self.replaced.is_some() && !self.done {
                *c = Check::fail(
                    REPLACED,
                    REPLACED_T,
                    "verify replaced it",
                    "the probe never asked".into(),
                );
            } else if whole && c.outcome == super::Outcome::Fail {
                *c = Check::not_provided(
                    REPLACED,
                    REPLACED_T,
                    format!("{WHOLE_GIVES_UP} ({})", c.got.clone().unwrap_or_default()),
                );
            }
        }
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        for p in [&self.canary, &self.replaced].into_iter().flatten() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Inside: asks verify to replace `path`, waits for its word (5 s at
/// most), then reads it.
pub(super) fn replaced(path: Option<&Path>, workspace: &Path) -> Check {
    let Some(path) = path else {
        return Check::skip(REPLACED, REPLACED_T, "no home file could be planted".into());
    };
    let mut out = std::io::stdout();
    let _ = out.write_all(REPLACE_NOW.as_bytes());
    let _ = out.flush();
    let mark = workspace.join(REPLACED_MARK);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !mark.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    unreadable(REPLACED, REPLACED_T, &[path.to_path_buf()])
}

/// Inside: the canary through each second path to the home.
pub(super) fn second_paths(paths: &[PathBuf]) -> Check {
    if paths.is_empty() {
        return Check::skip(
            SECOND,
            SECOND_T,
            "no host mount shows the home at a second path".into(),
        );
    }
    unreadable(SECOND, SECOND_T, paths)
}

/// On the host: the home's credential files have no other names (hard
/// links), which no mask or rule on their own name reaches.
pub(super) fn other_names(home: Option<&Path>) -> Check {
    const N: &str = "home-other-names";
    const T: &str = "the home's credential files have no other name (a hard link)";
    let Some(home) = home else {
        return Check::skip(N, T, "no home directory".into());
    };
    let found = crate::policy::hidden_set::other_names(home, &|k| std::env::var_os(k));
    if found.is_empty() {
        return Check::pass(N, T);
    }
    let list: Vec<String> = found
        .iter()
        .map(|l| format!("{} ({} other)", l.path.display(), l.others))
        .collect();
    Check::not_provided(
        N,
        T,
        format!(
            "{}: each other name is readable wherever the view shows it; `find / -xdev -samefile FILE` finds them",
            list.join(", ")
        ),
    )
}

fn unreadable(name: &str, title: &str, paths: &[PathBuf]) -> Check {
    let mut how = Vec::new();
    for p in paths {
        match std::fs::read(p) {
            Ok(c) if c.is_empty() => how.push(format!("{}: empty", p.display())),
            Ok(_) => {
                return Check::fail(
                    name,
                    title,
                    "ENOENT, EACCES or an empty mask",
                    format!("{} was read", p.display()),
                );
            }
            Err(e) => how.push(format!("{}: {e}", p.display())),
        }
    }
    Check::pass(name, &format!("{title} ({})", how.join("; ")))
}
