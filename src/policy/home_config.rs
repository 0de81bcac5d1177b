//! What host tools read from the home as their own config and that may
//! lie in a writable root (a dotfiles checkout as the workspace, its files
//! linked into the home by hand, by GNU stow or a dotfiles manager): the
//! shell's start-up files and every path they name, ssh's config and its
//! includes, Mercurial's user config and its includes, and the targets of
//! the links in the home's config places. The git guard makes each
//! read-only inside (held aside at the end where missing and made).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The home's places that hold tools' config, looked through for links
/// (`~/.config/nvim -> ../dots/nvim`), one level each: a whole tree would
/// cost a millisecond a few thousand entries at every start. Below the
/// config directory, the places whose files run by themselves (at login,
/// in every fish) are listed too (GNU stow links a file there where the
/// directory was there before it).
const LINK_PLACES: [&str; 9] = [
    ".local/bin",
    ".local/share",
    ".local/share/applications",
    ".vim",
    ".vim/plugin",
    ".vim/autoload",
    ".vim/ftplugin",
    ".ssh",
    ".cargo",
];
const CONFIG_PLACES: [&str; 14] = [
    "",
    "systemd/user",
    "autostart",
    "environment.d",
    "fish/conf.d",
    "fish/functions",
    "direnv/lib",
    "nvim",
    "nvim/lua",
    "nvim/plugin",
    "tmux",
    "git",
    "hg",
    "pip",
];
/// Settings files whose text names programs and files the tool runs or
/// sources (`core.fsmonitor = ~/dots/bin/x`, vim's `source`, tmux's
/// `source-file`, a cargo `rustc-wrapper`): what they name is guarded as
/// what start-up files name.
const SETTINGS: [&str; 8] = [
    ".gitconfig",
    ".vimrc",
    ".tmux.conf",
    ".inputrc",
    ".screenrc",
    ".npmrc",
    ".cargo/config.toml",
    ".cargo/config",
];
/// Cargo's settings in its home (`$CARGO_HOME`, else `~/.cargo`).
const CARGO_SETTINGS: [&str; 2] = ["config.toml", "config"];
const CONFIG_SETTINGS: [&str; 5] = [
    "git/config",
    "nvim/init.vim",
    "nvim/init.lua",
    "tmux/tmux.conf",
    "hg/hgrc",
];
/// Entries looked at for links at most, in all.
const LINKS_MOST: usize = 5_000;

/// The paths to guard for the user with home `home` (config in `xdg`):
/// those that lie in one of the writable `roots`, but none that is a
/// directory holding one (the workspace read-only whole would leave no
/// sandbox to work in: residual).
pub fn paths(home: &Path, places: &Places, roots: &[PathBuf]) -> Vec<PathBuf> {
    let xdg = places.xdg;
    // `~/.config`, and `$XDG_CONFIG_HOME` where it is elsewhere: the user's
    // terminals may not all have it set.
    let config = xdg.map_or_else(|| home.join(".config"), Path::to_path_buf);
    let mut configs = vec![home.join(".config")];
    if config != configs[0] {
        configs.push(config.clone());
    }
    let cargo = places
        .cargo
        .map_or_else(|| home.join(".cargo"), Path::to_path_buf);
    let files = super::rc_files::start_up_files(home);
    let mut v = super::rc_files::globbed_dirs(&files, home);
    v.extend(super::rc_files::named_paths(&files, home));
    v.extend(super::rc_files::sourced_paths(&files, home));
    v.extend(files.into_iter().map(|f| f.path));
    let ssh = super::ssh_config::config_paths(home);
    let hg = super::hg::user_config(home, xdg);
    // What settings name: programs, sourced files, search paths (ssh's
    // config and hg's with their includes; each file read once).
    let named = SETTINGS.iter().map(|f| home.join(f));
    let in_config = configs
        .iter()
        .flat_map(|c| CONFIG_SETTINGS.iter().map(|f| c.join(f)));
    let in_cargo = CARGO_SETTINGS.map(|f| cargo.join(f));
    let mut settings: Vec<PathBuf> = Vec::new();
    for p in named
        .chain(in_config)
        .chain(in_cargo)
        .chain(ssh.iter().chain(&hg).cloned())
    {
        if !settings.contains(&p) {
            settings.push(p);
        }
    }
    let settings: Vec<super::rc_files::StartUp> = settings
        .into_iter()
        .map(|path| super::rc_files::StartUp {
            text: super::read_small(&path),
            path,
        })
        .filter(|f| f.text.is_some())
        .collect();
    v.extend(super::rc_files::named_paths(&settings, home));
    v.extend(ssh);
    v.extend(hg);
    let links = top_links(home).into_iter().chain(nested_links(home, &configs));
    v.extend(links.map(|l| dangling_target(&l).unwrap_or(l)));
    // The config directory itself, and cargo's settings, where the
    // environment puts them in a writable root (`XDG_CONFIG_HOME=~/dots/
    // xdg`): every file there is a tool's config.
    v.push(config);
    v.extend(CARGO_SETTINGS.map(|f| cargo.join(f)));
    // Only those that really lie in a root (the rest are read-only anyway:
    // each looked at once here, not again by the guard).
    let mut seen = Vec::new();
    v.retain(|p| {
        if seen.contains(p) {
            return false;
        }
        seen.push(p.clone());
        let real = fs::canonicalize(p).unwrap_or_else(|_| super::toolchains::canonical_prefix(p));
        let holds_root = real.is_dir() && roots.iter().any(|r| r.starts_with(&real));
        // A file with a second name may have it in a root (the guard looks).
        let linked = fs::symlink_metadata(&real).is_ok_and(|m| m.is_file() && m.nlink() > 1);
        (roots.iter().any(|r| real.starts_with(r)) || linked) && !holds_root
    });
    v
}

/// Where the environment moves the home's config places.
#[derive(Default)]
pub struct Places<'a> {
    /// `$XDG_CONFIG_HOME` (else `~/.config`).
    pub xdg: Option<&'a Path>,
    /// `$CARGO_HOME` (else `~/.cargo`).
    pub cargo: Option<&'a Path>,
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
fn nested_links(home: &Path, configs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut looked = 0;
    let places = LINK_PLACES.iter().map(|p| home.join(p));
    let config_places = configs
        .iter()
        .flat_map(|c| CONFIG_PLACES.iter().map(move |p| c.join(p)));
    for dir in places.chain(config_places) {
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            looked += 1;
            if looked > LINKS_MOST {
                return out;
            }
            if e.file_type().is_ok_and(|t| t.is_symlink()) {
                out.push(e.path());
            }
        }
    }
    out
}

/// Where a link that leads nowhere yet would lead (`~/.bash_login ->
/// dots/bash_login`, the target ignored or removed in the checkout): a
/// file made there is the home's; None for a link that leads somewhere.
fn dangling_target(link: &Path) -> Option<PathBuf> {
    if fs::metadata(link).is_ok() {
        return None;
    }
    let to = fs::read_link(link).ok()?;
    Some(super::lexical(&link.parent()?.join(to)))
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
        for f in ["sh/a", "sh/b", "sh/c", "sh/off", "x.service", "tool"] {
            fs::write(ws.join(f), "").unwrap();
        }
        std::os::unix::fs::symlink(ws.join("nvim"), home.join(".config/nvim")).unwrap();
        std::os::unix::fs::symlink(ws.join("x.service"), home.join(".config/systemd/user/x.service"))
            .unwrap();
        std::os::unix::fs::symlink(ws.join("tool"), home.join(".local/bin/tool")).unwrap();
        fs::write(
            home.join(".bashrc"),
            "builtin source ~/dots/sh/a\n\\. ~/\"dots/sh/b\"\nsource <(cat $HOME/dots/sh/c)\nexport PATH=~/dots/bin:$PATH\ncd ~/dots\nalias n='cd ~/dots/nvim'\n# . ~/dots/sh/off\n",
        )
        .unwrap();
        let got = paths(&home, &Places::default(), std::slice::from_ref(&ws));
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
        // Not a directory an alias goes to, nor what a comment names.
        assert!(!got.contains(&ws.join("nvim")), "{got:?}");
        assert!(!got.contains(&ws.join("sh/off")), "{got:?}");
        // The environment's config places within the workspace: whole.
        fs::create_dir_all(ws.join("xdg/tmux")).unwrap();
        let (xdg, cargo) = (ws.join("xdg"), ws.join("cargoh"));
        let places = Places {
            xdg: Some(&xdg),
            cargo: Some(&cargo),
        };
        let moved = paths(&home, &places, std::slice::from_ref(&ws));
        assert!(
            moved.contains(&xdg) && moved.contains(&cargo.join("config.toml")),
            "{moved:?}"
        );
        // The workspace itself is named (`cd ~/dots`) but not guarded.
        let got = paths(&home, &Places::default(), std::slice::from_ref(&ws));
        assert!(!got.contains(&ws), "{got:?}");
    }

    #[test]
    fn variables_settings_deeper_places_and_links_leading_nowhere_yet() {
        let d = tempfile::tempdir().unwrap();
        let (home, ws) = (d.path().join("h"), d.path().join("h/dots"));
        for dir in ["dots/bash.d", "dots/bin2", "dots/bin", "dots/vim2", ".vim/plugin"] {
            fs::create_dir_all(home.join(dir)).unwrap();
        }
        for f in [
            "pyrc",
            "bin/fsmon",
            "vim2/x.vim",
            "plug.vim",
            "c1",
            "c2",
            "c3",
            "c4",
        ] {
            fs::write(ws.join(f), "").unwrap();
        }
        fs::write(
            home.join(".bashrc"),
            "DOT=\"$HOME/dots\"\nfor f in \"$DOT\"/bash.d/*.sh; do . \"$f\"; done\nexport PATH=\"$DOT/bin2:$PATH\"\nexport PYTHONSTARTUP=$DOT/pyrc\n\
             X1=$HOME/dots; . $X1/c1\ndeclare -r X2=$HOME/dots\n: ${X3:=$HOME/dots}\nif true; then X4=$HOME/dots; fi\n. $X2/c2; . \"$X3/c3\"; . $X4/c4\n",
        )
        .unwrap();
        fs::write(
            home.join(".gitconfig"),
            "[core]\n\tfsmonitor = ~/dots/bin/fsmon\n",
        )
        .unwrap();
        fs::write(home.join(".vimrc"), "source ~/dots/vim2/x.vim\n").unwrap();
        std::os::unix::fs::symlink(ws.join("plug.vim"), home.join(".vim/plugin/evil.vim")).unwrap();
        std::os::unix::fs::symlink("dots/bash_login", home.join(".bash_login")).unwrap();
        let got = paths(&home, &Places::default(), std::slice::from_ref(&ws));
        for want in [
            "dots/bash.d",
            "dots/bin2",
            "dots/pyrc",
            "dots/bin/fsmon",
            "dots/vim2/x.vim",
            ".vim/plugin/evil.vim",
            "dots/bash_login",
            "dots/c1",
            "dots/c2",
            "dots/c3",
            "dots/c4",
        ] {
            assert!(got.contains(&home.join(want)), "{want} in {got:?}");
        }
    }
}
