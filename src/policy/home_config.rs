//! What host tools read from the home as their own config and that may
//! lie in a writable root (a dotfiles checkout as the workspace, its files
//! linked into the home by hand, by GNU stow or a dotfiles manager): the
//! shell's start-up files and every path they name, ssh's config and its
//! includes, Mercurial's user config and its includes, and the targets of
//! the links in the home's config places. The git guard makes each
//! read-only inside (held aside at the end where missing and made).

use std::fs;
use std::path::{Path, PathBuf};

/// The home's places that hold tools' config, looked through for links
/// (`~/.config/nvim -> ../dots/nvim`), and how deep.
const LINK_PLACES: [(&str, usize); 3] = [(".config", 3), (".local/bin", 1), (".local/share", 2)];
/// Entries looked at for links at most, in all.
const LINKS_MOST: usize = 20_000;

/// The paths to guard for the user with home `home` (config in `xdg`),
/// the command's directory `cwd`: none that is a directory holding `cwd`
/// (that would leave no workspace to write: residual).
pub fn paths(home: &Path, xdg: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    let files = super::rc_files::start_up_files(home);
    let mut v = super::rc_files::globbed_dirs(&files, home);
    v.extend(super::rc_files::named_paths(&files, home));
    v.extend(super::rc_files::sourced_paths(&files, home));
    v.extend(files.into_iter().map(|f| f.path));
    v.extend(super::ssh_config::config_paths(home));
    v.extend(super::hg::user_config(home, xdg));
    v.extend(top_links(home));
    v.extend(nested_links(home, xdg));
    let mut seen = Vec::new();
    v.retain(|p| {
        let keep =
            !seen.contains(p) && fs::canonicalize(p).map_or(true, |t| !(t.is_dir() && cwd.starts_with(&t)));
        seen.push(p.clone());
        keep
    });
    v
}

/// Every dot-named link at the home's top (`~/.bashrc.d -> dotfiles/
/// bashrc.d`, whose files `~/.bashrc` sources by a glob).
fn top_links(home: &Path) -> Vec<PathBuf> {
    fs::read_dir(home)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().as_encoded_bytes().starts_with(b"."))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_symlink()))
        .map(|e| e.path())
        .collect()
}

/// The links in the home's config places (`~/.config/direnv ->
/// ../dots/direnv`: direnv sources its `direnvrc` for every `.envrc`), never
/// through a link, at most [`LINKS_MOST`] entries.
fn nested_links(home: &Path, xdg: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut looked = 0;
    let places = LINK_PLACES.iter().map(|(p, d)| (home.join(p), *d));
    let mut queue: Vec<(PathBuf, usize)> = places.chain(xdg.map(|x| (x.to_path_buf(), 3))).collect();
    while let Some((dir, depth)) = queue.pop() {
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            looked += 1;
            if looked > LINKS_MOST {
                return out;
            }
            match e.file_type() {
                Ok(t) if t.is_symlink() => out.push(e.path()),
                Ok(t) if t.is_dir() && depth > 1 => queue.push((e.path(), depth - 1)),
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_in_the_config_places_and_what_start_up_files_name() {
        let d = tempfile::tempdir().unwrap();
        let (home, ws) = (d.path().join("h"), d.path().join("h/dots"));
        for dir in [
            "dots/nvim",
            "dots/sh",
            "dots/bin",
            ".config/systemd/user",
            ".local/bin",
        ] {
            fs::create_dir_all(home.join(dir)).unwrap();
        }
        for f in ["sh/a", "sh/b", "sh/c", "x.service", "tool"] {
            fs::write(ws.join(f), "").unwrap();
        }
        std::os::unix::fs::symlink(ws.join("nvim"), home.join(".config/nvim")).unwrap();
        std::os::unix::fs::symlink(ws.join("x.service"), home.join(".config/systemd/user/x.service"))
            .unwrap();
        std::os::unix::fs::symlink(ws.join("tool"), home.join(".local/bin/tool")).unwrap();
        fs::write(
            home.join(".bashrc"),
            "builtin source ~/dots/sh/a\n\\. ~/\"dots/sh/b\"\nsource <(cat $HOME/dots/sh/c)\nexport PATH=~/dots/bin:$PATH\ncd ~/dots\n",
        )
        .unwrap();
        let got = paths(&home, None, &ws.join("sub"));
        for want in [
            ".config/nvim",
            ".config/systemd/user/x.service",
            ".local/bin/tool",
            "dots/sh/a",
            "dots/sh/b",
            "dots/sh/c",
            "dots/bin",
        ] {
            assert!(got.contains(&home.join(want)), "{want} in {got:?}");
        }
        // The workspace itself is named (`cd ~/dots`) but not guarded.
        let got = paths(&home, None, &ws);
        assert!(!got.contains(&ws), "{got:?}");
    }
}
