//! What ssh reads as the user's own config: `~/.ssh/config` and what its
//! `Include` lines name, followed as ssh follows them. ssh runs a
//! `Match exec`, `ProxyCommand` or `LocalCommand` from any of them, for
//! every ssh the user starts (host git's fetch and push too), so the git
//! guard makes each read-only where it lies in a writable root.

use super::read_small;
use std::fs;
use std::path::{Path, PathBuf};

/// ssh's own bound on nested `Include`s.
const DEPTH: usize = 16;
/// Files read at most: a glob over a large directory is guarded whole, and
/// its files need not all be read for the includes they hold.
const FILES: usize = 256;

/// The paths ssh reads config from for the user with home `home`: each
/// file, there or missing (a file made later is read by the next ssh), and
/// for an `Include` with a wildcard or a variable, the last directory
/// before it (a file made there matches).
pub fn config_paths(home: &Path) -> Vec<PathBuf> {
    let top = home.join(".ssh/config");
    let mut out = vec![top.clone()];
    let mut next = vec![(top, 0)];
    let mut read = 0;
    while let Some((file, depth)) = next.pop() {
        read += 1;
        let Some(text) = read_small(&file) else { continue };
        for arg in text.lines().filter_map(include_args).flatten() {
            for p in expand(&arg, home) {
                if !out.contains(&p) {
                    out.push(p.clone());
                    if depth + 1 < DEPTH && read + next.len() < FILES && p.is_file() {
                        next.push((p, depth + 1));
                    }
                }
            }
        }
    }
    out
}

/// The arguments of an `Include` line (the keyword in any case, then blanks
/// or `=`), split as ssh splits them: by blanks, with quotes.
fn include_args(line: &str) -> Option<Vec<String>> {
    let line = line.trim_start();
    let end = line.find([' ', '\t', '='])?;
    if !line[..end].eq_ignore_ascii_case("include") {
        return None;
    }
    let rest = line[end..].trim_start_matches([' ', '\t']);
    let rest = rest.strip_prefix('=').unwrap_or(rest);
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    for c in rest.chars() {
        match (quote, c) {
            (None, '#') if cur.is_empty() => break,
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ' ' | '\t' | '\r') => {
                if !cur.is_empty() {
                    args.push(std::mem::take(&mut cur));
                }
            }
            (_, c) => cur.push(c),
        }
    }
    if !cur.is_empty() {
        args.push(cur);
    }
    Some(args)
}

/// One argument as paths: `~/…` in the home, relative in `~/.ssh`. With a
/// wildcard, a `%` token or a `$` variable in it, the directory before the
/// first such component, and where only the last has wildcards, each file
/// there it matches (read for its own `Include`s).
fn expand(arg: &str, home: &Path) -> Vec<PathBuf> {
    let p = match arg.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None if arg.starts_with('/') => PathBuf::from(arg),
        None if arg.starts_with('~') => return Vec::new(),
        None => home.join(".ssh").join(arg),
    };
    let open = |s: &str| s.contains(['*', '?', '[', '%', '$']);
    let Some(at) = p
        .components()
        .position(|c| open(&c.as_os_str().to_string_lossy()))
    else {
        return vec![p];
    };
    let dir: PathBuf = p.components().take(at).collect();
    let mut v = vec![dir.clone()];
    let last = p.file_name().map(|n| n.to_string_lossy().into_owned());
    if at + 1 == p.components().count()
        && let Some(pat) = last.filter(|l| !l.contains(['%', '$']))
    {
        let names = fs::read_dir(&dir).into_iter().flatten().flatten();
        let mut hits: Vec<PathBuf> = names
            .filter(|e| glob(pat.as_bytes(), e.file_name().as_encoded_bytes()))
            .map(|e| e.path())
            .take(FILES)
            .collect();
        hits.sort();
        v.extend(hits);
    }
    v
}

/// `name` matched by the glob(7) pattern `pat` (`*`, `?`, `[…]`, `[!…]`);
/// a leading `.` only by a `.` in the pattern.
fn glob(pat: &[u8], name: &[u8]) -> bool {
    if name.first() == Some(&b'.') && pat.first() != Some(&b'.') {
        return false;
    }
    matches(pat, name)
}

fn matches(pat: &[u8], name: &[u8]) -> bool {
    match pat.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| matches(rest, &name[i..])),
        Some((b'?', rest)) => !name.is_empty() && matches(rest, &name[1..]),
        Some((b'[', rest)) if rest.contains(&b']') => {
            let Some((&c, tail)) = name.split_first() else {
                return false;
            };
            let (neg, set) = match rest.first() {
                Some(b'!' | b'^') => (true, &rest[1..]),
                _ => (false, rest),
            };
            // A `]` first in the set is a member.
            let close = 1 + set[1..].iter().position(|&b| b == b']').unwrap_or(set.len() - 1);
            let Some(members) = set.get(..close) else {
                return false;
            };
            let hit = in_set(members, c);
            hit != neg && matches(set.get(close + 1..).unwrap_or_default(), tail)
        }
        Some((&p, rest)) => name.first() == Some(&p) && matches(rest, &name[1..]),
    }
}

/// `c` in a bracket set's members (`a-z` ranges).
fn in_set(members: &[u8], c: u8) -> bool {
    let mut i = 0;
    while i < members.len() {
        if i + 2 < members.len() && members[i + 1] == b'-' {
            if (members[i]..=members[i + 2]).contains(&c) {
                return true;
            }
            i += 3;
        } else {
            if members[i] == c {
                return true;
            }
            i += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_lines_are_split_as_ssh_splits_them() {
        assert_eq!(include_args("Include a b"), Some(vec!["a".into(), "b".into()]));
        assert_eq!(
            include_args("  include=\"x y\" z # c"),
            Some(vec!["x y".into(), "z".into()])
        );
        assert_eq!(
            include_args("INCLUDE\t= ~/d/*.conf"),
            Some(vec!["~/d/*.conf".into()])
        );
        assert_eq!(include_args("IncludeX a"), None);
        assert_eq!(include_args("Host include"), None);
    }

    #[test]
    fn globs_match_as_glob_7_does() {
        assert!(glob(b"*.conf", b"a.conf"));
        assert!(!glob(b"*.conf", b".a.conf"));
        assert!(glob(b".*", b".a"));
        assert!(glob(b"h?st[0-9]", b"host7"));
        assert!(!glob(b"h[!o]st", b"host"));
        assert!(glob(b"[]a]", b"]"));
        assert!(!glob(b"*.conf", b"a.confx"));
    }

    #[test]
    fn includes_are_followed_and_globs_name_their_directory() {
        let home = std::env::temp_dir().join(format!("ssh-config-{}", std::process::id()));
        let d = home.join("dots/ssh.d");
        fs::create_dir_all(&d).unwrap();
        fs::create_dir_all(home.join(".ssh")).unwrap();
        fs::write(
            home.join(".ssh/config"),
            "Host x\n  Include ~/dots/ssh.d/*.conf extra\n",
        )
        .unwrap();
        fs::write(d.join("a.conf"), "Include ~/deeper\n").unwrap();
        fs::write(d.join("b.txt"), "Include ~/never\n").unwrap();
        let got = config_paths(&home);
        for want in [
            ".ssh/config",
            "dots/ssh.d",
            "dots/ssh.d/a.conf",
            ".ssh/extra",
            "deeper",
        ] {
            assert!(got.contains(&home.join(want)), "{want} in {got:?}");
        }
        assert!(!got.contains(&home.join("never")), "{got:?}");
        fs::remove_dir_all(&home).unwrap();
    }
}
