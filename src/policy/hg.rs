//! What Mercurial reads as config: a repository's `.hg/hgrc` (and a
//! share's), the user's `~/.hgrc` and `$XDG_CONFIG_HOME/hg/hgrc`, and what
//! each `%include`s. Host hg runs the hooks and extensions they name (a
//! `pre-status` hook runs for a prompt's or an editor's `hg status`), so the
//! git guard holds them as it holds git's config.

use super::read_small;
use std::path::{Path, PathBuf};

/// The files of a `.hg` host hg reads as the repository's config: its
/// `hgrc`, and a share's `hgrc-not-shared` and `sharedpath` (whose
/// repository's `hgrc` it reads too).
pub const CONFIG: [&str; 3] = ["hgrc", "hgrc-not-shared", "sharedpath"];

/// At most this many config files followed (includes of includes).
const MOST: usize = 64;

/// A repository's config files (`hg`: its `.hg`), there or not, and what
/// they include.
pub fn repo_config(hg: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    followed(CONFIG.iter().map(|f| hg.join(f)).collect(), home)
}

/// The user's config files, there or not, and what they include.
pub fn user_config(home: &Path, xdg: Option<&Path>) -> Vec<PathBuf> {
    let xdg = xdg.map_or_else(|| home.join(".config"), Path::to_path_buf);
    followed(vec![home.join(".hgrc"), xdg.join("hg/hgrc")], Some(home))
}

/// `files` and what they `%include` (with `~` and variables expanded as hg
/// expands them, relative to the including file), and a `sharedpath`'s
/// repository's `hgrc`.
fn followed(mut files: Vec<PathBuf>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut i = 0;
    while i < files.len() && files.len() < MOST {
        let f = files[i].clone();
        i += 1;
        let base = f.parent().map(Path::to_path_buf).unwrap_or_default();
        let text = read_small(&f).unwrap_or_default();
        let mut next: Vec<PathBuf> = text
            .lines()
            .filter_map(|l| l.strip_prefix("%include"))
            .filter_map(|inc| expand(inc.trim(), home))
            .map(|inc| super::lexical(&base.join(inc)))
            .collect();
        if f.file_name().is_some_and(|n| n == "sharedpath") && !text.is_empty() {
            next.push(super::lexical(
                &base.join(text.trim_end_matches('\n')).join("hgrc"),
            ));
        }
        for p in next {
            if !files.contains(&p) {
                files.push(p);
            }
        }
    }
    files
}

/// `~`, `~/…`, `$NAME` and `${NAME}` expanded (from the home and the
/// environment, as hg's `expandpath`); None where one cannot be.
fn expand(v: &str, home: Option<&Path>) -> Option<String> {
    if v.is_empty() {
        return None;
    }
    let v = match v.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{}{rest}", home?.display()),
        Some(_) => return None,
        None => v.to_string(),
    };
    let mut out = String::new();
    let mut rest = v.as_str();
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        let (name, after) = match tail.strip_prefix('{') {
            Some(t) => t.split_once('}')?,
            None => {
                let end = tail
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(tail.len());
                (&tail[..end], &tail[end..])
            }
        };
        match name {
            "HOME" => out.push_str(&home?.to_string_lossy()),
            _ => out.push_str(&std::env::var(name).ok()?),
        }
        rest = after;
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_followed_with_the_home_expanded() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        std::fs::create_dir_all(home.join("r/.hg")).unwrap();
        std::fs::create_dir_all(home.join("dots/hg")).unwrap();
        std::fs::write(
            home.join("r/.hg/hgrc"),
            "[ui]\n%include ../team.rc\n%include ~/dots/hg/a.rc\n%include ${HOME}/dots/hg/b.rc\n%include $HOME/../x/../c.rc\n",
        )
        .unwrap();
        std::fs::write(home.join("dots/hg/a.rc"), "%include d.rc\n").unwrap();
        let got = repo_config(&home.join("r/.hg"), Some(home));
        for want in [
            "r/team.rc",
            "dots/hg/a.rc",
            "dots/hg/b.rc",
            "dots/hg/d.rc",
            "r/.hg/sharedpath",
        ] {
            assert!(got.contains(&home.join(want)), "{want} in {got:?}");
        }
        assert!(
            got.contains(&crate::policy::lexical(&home.join("../c.rc"))),
            "{got:?}"
        );
        std::fs::write(home.join(".hgrc"), "%include ~/dots/hg/u.rc\n").unwrap();
        let user = user_config(home, None);
        assert!(user.contains(&home.join("dots/hg/u.rc")) && user.contains(&home.join(".config/hg/hgrc")));
    }
}
