//! The home as an allow-list (`--home listed`, the default): inside, the
//! home directory is an empty read-only tmpfs that holds only what a
//! command needs — the entries below, which tools read and which hold no
//! credentials; what the profiles name; `--expose` and `--show`; the shell
//! start-up files and what they source (redacted where they assign a
//! credential); the checkout the workspace lies in — and the writable
//! roots. Every other name is absent, so a new tool's credential file is
//! hidden without anyone listing it, and a file the host replaces during
//! the run is not reached through its old name. Other users' homes are
//! absent too: `/home` is a read-only tmpfs holding only the caller's home
//! and the tops of the writable roots that lie there.

use super::view::{EntryKind, ViewEntry};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The home's entries shown read-only by default (templates, as in
/// profiles), and why each is safe to show.
pub const LISTED: &[(&str, &str)] = &[
    // Shells, editors, terminals.
    ("~/.inputrc", "readline's key bindings"),
    ("~/.editorconfig", "editor settings"),
    ("~/.vimrc", "vim's settings"),
    ("~/.vim", "vim's plugins"),
    ("${XDG_CONFIG_HOME:-~/.config}/nvim", "neovim's settings"),
    ("~/.nanorc", "nano's settings"),
    ("~/.tmux.conf", "tmux's settings"),
    ("${XDG_CONFIG_HOME:-~/.config}/tmux", "tmux's settings"),
    ("~/.screenrc", "screen's settings"),
    ("~/.terminfo", "terminal descriptions"),
    ("~/.dircolors", "ls's colours"),
    ("~/.selected_editor", "the chosen editor"),
    ("~/.fonts", "fonts (browsers)"),
    ("${XDG_DATA_HOME:-~/.local/share}/fonts", "fonts (browsers)"),
    ("${XDG_CONFIG_HOME:-~/.config}/fontconfig", "font settings"),
    // git and ssh: settings, never stores of credentials.
    ("~/.gitconfig", "git's settings (its credential stores stay out)"),
    ("${XDG_CONFIG_HOME:-~/.config}/git/config", "git's settings"),
    ("${XDG_CONFIG_HOME:-~/.config}/git/ignore", "git's ignore rules"),
    ("${XDG_CONFIG_HOME:-~/.config}/git/attributes", "git's attributes"),
    ("~/.ssh/known_hosts", "ssh's known host keys"),
    ("~/.ssh/config", "ssh's settings (no keys)"),
    // Toolchains: their programs and settings, never their credentials.
    ("${CARGO_HOME:-~/.cargo}/bin", "cargo's installed programs"),
    ("${CARGO_HOME:-~/.cargo}/env", "rustup's shell set-up"),
    ("${CARGO_HOME:-~/.cargo}/config.toml", "cargo's settings"),
    ("${CARGO_HOME:-~/.cargo}/config", "cargo's settings (older name)"),
    ("${RUSTUP_HOME:-~/.rustup}", "rustup's toolchains"),
    ("~/.local/bin", "the user's programs"),
    ("${PYTHONUSERBASE:-~/.local}/lib", "Python's user site"),
    ("${XDG_DATA_HOME:-~/.local/share}/pipx", "pipx's environments"),
    ("${XDG_DATA_HOME:-~/.local/share}/uv/python", "uv's Pythons"),
    ("${XDG_DATA_HOME:-~/.local/share}/uv/tools", "uv's tools"),
    ("~/.pyenv", "pyenv's Pythons"),
    ("${NVM_DIR:-~/.nvm}", "nvm's Node.js versions"),
    ("~/.volta", "Volta's tools"),
    ("${XDG_DATA_HOME:-~/.local/share}/fnm", "fnm's Node.js versions"),
    ("${XDG_DATA_HOME:-~/.local/share}/pnpm", "pnpm's programs"),
    ("~/.bun/bin", "bun"),
    ("~/.deno/bin", "deno"),
    ("${GOPATH:-~/go}/bin", "go's installed programs"),
    ("~/sdk", "go's downloaded toolchains"),
    ("~/.sdkman/candidates", "SDKMAN's JDKs and tools"),
    ("~/.m2/repository", "Maven's downloaded artifacts"),
    ("~/.rbenv", "rbenv's Rubies"),
    ("~/.asdf", "asdf's tools"),
    ("~/.tool-versions", "asdf's versions"),
    ("${XDG_DATA_HOME:-~/.local/share}/mise", "mise's tools"),
    ("~/.ghcup", "GHCup's Haskell toolchains"),
    ("~/.dotnet", ".NET's tools"),
    ("~/.nix-profile", "Nix's profile"),
    (
        "${XDG_CONFIG_HOME:-~/.config}/qwrap",
        "qwrap's settings (for a nested sandbox)",
    ),
];

/// A listed home: its entries, its tmpfs's mode, and the directory of
/// homes covered with the tops of the roots shown there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Listing {
    #[serde(serialize_with = "crate::lossy::path")]
    pub home: PathBuf,
    pub entries: Vec<ViewEntry>,
    /// The host home's permission bits, given to its tmpfs.
    pub mode: u32,
    /// `/home` where it holds other users' homes: an empty tmpfs there,
    /// with only the caller's home and `tops` in it.
    #[serde(serialize_with = "crate::lossy::opt_path")]
    pub homes: Option<PathBuf>,
    /// The top directories under `homes` of writable roots that lie there
    /// outside the caller's home, shown read-only from the host.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub tops: Vec<PathBuf>,
}

impl Listing {
    /// Whether `p` exists inside (`roots`: the writable roots).
    pub fn shows(&self, roots: &[super::WritableRoot], p: &Path) -> bool {
        let roots: Vec<PathBuf> = roots.iter().map(|r| r.path.clone()).collect();
        if let Some(h) = &self.homes
            && p.starts_with(h)
            && !p.starts_with(&self.home)
            && !self.home.starts_with(p)
            && !self.tops.iter().any(|t| p.starts_with(t))
        {
            return false;
        }
        shows(&self.home, &self.entries, &roots, p)
    }
}

impl Listing {
    /// The hidden set as the listed home needs it: only what it shows, and
    /// the account's home whole where HOME names another (nothing of it is
    /// listed), unless a root lies in it or /home's cover takes it away.
    pub fn hidden(
        &self,
        hidden: Vec<super::HiddenPath>,
        homes: &[PathBuf],
        roots: &[super::WritableRoot],
    ) -> Vec<super::HiddenPath> {
        let mut kept: Vec<super::HiddenPath> = hidden
            .into_iter()
            .filter(|h| self.shows(roots, &h.path))
            .collect();
        for other in homes.iter().filter(|o| **o != self.home && o.is_dir()) {
            let holds_root = roots.iter().any(|r| r.path.starts_with(other));
            let covered = self.homes.as_ref().is_some_and(|d| other.starts_with(d));
            if !holds_root && !covered && !self.home.starts_with(other) {
                kept.retain(|h| !h.path.starts_with(other));
                kept.push(super::HiddenPath {
                    path: other.clone(),
                    dir: true,
                    why: "the account's home, where HOME names another: nothing of it is listed".into(),
                });
            }
        }
        kept
    }
}

/// Whether a home can be listed: a directory (not `/nonexistent`), and not
/// `/` (an init's or a service's home: the whole host).
pub fn listable(home: &Path) -> bool {
    home.is_dir() && home.parent().is_some()
}

/// The directory of homes to cover for `home`: `/home`, where it exists
/// and is not the home itself or beneath a writable root.
pub fn homes_dir(home: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    let h = Path::new("/home");
    (h.is_dir() && home != h && !roots.iter().any(|r| h.starts_with(r))).then(|| h.to_path_buf())
}

/// The tops under `homes` of the roots that lie there outside `home`.
pub fn tops(homes: &Path, home: &Path, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = roots
        .iter()
        .filter(|r| !r.starts_with(home))
        .filter_map(|r| Some(homes.join(r.strip_prefix(homes).ok()?.components().next()?)))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The listed entries of `home` that exist, the extra ones (profiles,
/// `--expose`, `--show`, start-up files, the checkout: path and why), and
/// for each symlink among them, its target where it lies in the home (a
/// dotfiles checkout): what is shown read-only inside the home's tmpfs.
/// Entries inside a writable root are left to it.
pub fn entries(
    home: &Path,
    env: &dyn Fn(&str) -> Option<OsString>,
    extra: &[(PathBuf, String)],
    roots: &[PathBuf],
) -> Vec<ViewEntry> {
    let listed = LISTED.iter().filter_map(|(t, why)| {
        let p = super::profile::expand(t, Some(home), env).ok()?;
        Some((p, format!("listed: {why}")))
    });
    let mut wanted: Vec<(PathBuf, String)> = listed.chain(extra.iter().cloned()).collect();
    let mut out: Vec<ViewEntry> = Vec::new();
    let mut i = 0;
    while i < wanted.len() && i < 512 {
        let (path, why) = wanted[i].clone();
        i += 1;
        let inside = |p: &Path| p.starts_with(home) && p != home;
        if !inside(&path) || roots.iter().any(|r| path.starts_with(r)) {
            continue;
        }
        if out.iter().any(|e| e.path == path) || super::view::covered(&out, &path) {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let kind = if meta.file_type().is_symlink() {
            let Ok(to) = std::fs::read_link(&path) else {
                continue;
            };
            // Its target is shown too where the home holds it.
            if let Ok(real) = std::fs::canonicalize(&path)
                && inside(&real)
            {
                wanted.push((real, format!("the target of {}", path.display())));
            }
            EntryKind::Link(to)
        } else if meta.is_dir() {
            EntryKind::Dir
        } else {
            EntryKind::File
        };
        // A directory shown whole takes the place of entries beneath it.
        if kind == EntryKind::Dir {
            out.retain(|e| !e.path.starts_with(&path));
        }
        out.push(ViewEntry { path, kind, why });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Whether `p` exists inside a listed home: the home itself, a shown
/// entry (or beneath a shown directory), a writable root, or a directory
/// on the way to one of them.
pub fn shows(home: &Path, entries: &[ViewEntry], roots: &[PathBuf], p: &Path) -> bool {
    if !p.starts_with(home) {
        return true;
    }
    p == home
        || roots.iter().any(|r| p.starts_with(r) || r.starts_with(p))
        || entries.iter().any(|e| {
            e.path.starts_with(p)
                || match e.kind {
                    EntryKind::Dir => p.starts_with(&e.path),
                    _ => p == e.path,
                }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_is_listed_or_named_is_shown() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("h");
        for dir in [".ssh", ".config/git", ".cargo/bin", ".aws", "dotfiles", "ws"] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        for f in [
            ".ssh/known_hosts",
            ".ssh/work.pem",
            ".aws/credentials",
            ".config/git/config",
            "dotfiles/vimrc",
        ] {
            std::fs::write(home.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink("dotfiles/vimrc", home.join(".vimrc")).unwrap();
        let extra = vec![(home.join(".aws"), "--expose".to_string())];
        let e = entries(&home, &|_| None, &extra, &[home.join("ws")]);
        let shown: Vec<String> = e
            .iter()
            .map(|e| e.path.strip_prefix(&home).unwrap().display().to_string())
            .collect();
        assert_eq!(
            shown,
            [
                ".aws",
                ".cargo/bin",
                ".config/git/config",
                ".ssh/known_hosts",
                ".vimrc",
                "dotfiles/vimrc"
            ]
        );
        let roots = [home.join("ws")];
        assert!(shows(&home, &e, &roots, &home.join(".ssh")));
        assert!(shows(&home, &e, &roots, &home.join(".ssh/known_hosts")));
        assert!(!shows(&home, &e, &roots, &home.join(".ssh/work.pem")));
        assert!(shows(&home, &e, &roots, &home.join(".aws/credentials")));
        assert!(shows(&home, &e, &roots, &home.join("ws/a/b")));
        assert!(!shows(&home, &e, &roots, &home.join(".netrc")));
        assert!(shows(&home, &e, &roots, Path::new("/etc/passwd")));
    }
}
