//! Profiles: named sets of extra writable roots and read-only paths, kept as
//! data in the same TOML form a user writes in their config.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// One profile as written in TOML.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProfileDef {
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub read_only: Vec<String>,
    /// Host sockets to leave reachable.
    #[serde(default)]
    pub allow_socket: Vec<String>,
    /// `private` or `host`, used when no setting chooses one.
    pub tmp: Option<String>,
    /// Paths made unreadable.
    #[serde(default)]
    pub hide: Vec<String>,
    /// Secret-looking variables kept (names, or `*`).
    #[serde(default)]
    pub keep_env: Vec<String>,
    /// Host paths shown read-only in the minimal view.
    #[serde(default)]
    pub expose: Vec<String>,
    /// Cache and state directories: writable inside, overlaid so that
    /// nothing written there reaches the host (see `--cache`).
    #[serde(default)]
    pub cache: Vec<String>,
    /// Files whose presence at the workspace's top applies the profile.
    #[serde(default)]
    pub detect: Vec<String>,
    /// Destinations the proxy allows with `--network proxied`.
    #[serde(default)]
    pub allow_domains: Vec<String>,
}

/// The profiles shipped with qwrap.
pub const SHIPPED: &str = include_str!("../../profiles/shipped.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShippedFile {
    profiles: BTreeMap<String, ProfileDef>,
}

/// Parses the shipped profiles (a test proves they parse).
pub fn shipped() -> BTreeMap<String, ProfileDef> {
    toml::from_str::<ShippedFile>(SHIPPED)
        .map(|f| f.profiles)
        .unwrap_or_default()
}

/// The files whose presence applies a shipped profile, read from the
/// shipped text's `detect = [...]` lines without parsing it all (a run
/// parses the profiles only when one of these files is there).
pub fn shipped_detect_files() -> Vec<&'static str> {
    shipped_lists("detect")
}

/// Every shipped profile's caches (templates, each once), read as the
/// detect files are: those that exist are caches of every sandbox.
pub fn shipped_caches() -> Vec<&'static str> {
    let mut all = shipped_lists("cache");
    let mut seen = std::collections::BTreeSet::new();
    all.retain(|c| seen.insert(*c));
    all
}

/// The items of the shipped text's one-line `KEY = [...]` lists.
fn shipped_lists(key: &str) -> Vec<&'static str> {
    let start = format!("{key} = [");
    SHIPPED
        .lines()
        .filter_map(|l| l.trim().strip_prefix(start.as_str()))
        .filter_map(|l| l.strip_suffix(']'))
        .flat_map(|l| l.split(','))
        .map(|f| f.trim().trim_matches('"'))
        .filter(|f| !f.is_empty())
        .collect()
}

/// Expands `~`, `$VAR`, `${VAR}` and `${VAR:-default}` (the default itself
/// may start with `~`). `Err` names the variable that is unset; an entry with
/// an unset variable and no default is dropped by the caller.
pub fn expand(
    template: &str,
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<PathBuf, String> {
    let mut out: Vec<u8> = Vec::new();
    let mut rest = template;
    if let Some(r) = rest.strip_prefix('~')
        && (r.is_empty() || r.starts_with('/'))
    {
        out.extend(home.ok_or("no home directory")?.as_os_str().as_bytes());
        rest = r;
    }
    while let Some(i) = rest.find('$') {
        out.extend(&rest.as_bytes()[..i]);
        rest = &rest[i + 1..];
        let (name, default, after) = if let Some(r) = rest.strip_prefix('{') {
            let end = r.find('}').ok_or("unclosed ${")?;
            let inner = &r[..end];
            match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d), &r[end + 1..]),
                None => (inner, None, &r[end + 1..]),
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (&rest[..end], None, &rest[end..])
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("bad variable name {name:?}"));
        }
        match (env(name).filter(|v| !v.is_empty()), default) {
            (Some(v), _) => out.extend(v.as_bytes()),
            (None, Some(d)) => out.extend(expand(d, home, env)?.as_os_str().as_bytes()),
            (None, None) => return Err(format!("${name} is not set")),
        }
        rest = after;
    }
    out.extend(rest.as_bytes());
    let path = PathBuf::from(OsString::from_vec(out));
    if !path.is_absolute() {
        return Err(format!("{} is not an absolute path", path.display()));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<OsString> {
        match name {
            "QWEN_HOME" => Some("/q".into()),
            "EMPTY" => Some("".into()),
            _ => None,
        }
    }

    #[test]
    fn expansion() {
        let h = Some(Path::new("/home/u"));
        assert_eq!(expand("~/.npm", h, &env).unwrap(), PathBuf::from("/home/u/.npm"));
        assert_eq!(expand("~", h, &env).unwrap(), PathBuf::from("/home/u"));
        assert_eq!(expand("$QWEN_HOME/x", h, &env).unwrap(), PathBuf::from("/q/x"));
        assert_eq!(expand("${QWEN_HOME}x", h, &env).unwrap(), PathBuf::from("/qx"));
        assert_eq!(
            expand("${NOPE:-~/.qwen}/.env", h, &env).unwrap(),
            PathBuf::from("/home/u/.qwen/.env")
        );
        assert_eq!(expand("${EMPTY:-/d}", h, &env).unwrap(), PathBuf::from("/d"));
        assert!(expand("$NOPE", h, &env).unwrap_err().contains("$NOPE"));
        assert!(expand("~/x", None, &env).is_err());
        assert!(expand("relative", h, &env).is_err());
        assert!(expand("${QWEN_HOME", h, &env).is_err());
        assert!(expand("$", h, &env).is_err());
        assert!(expand("${A-B}", h, &env).is_err());
        // `~user` is not expanded and so is not absolute.
        assert!(expand("~root/x", h, &env).is_err());
    }

    #[test]
    fn the_quick_scan_finds_every_shipped_cache() {
        let mut parsed: Vec<String> = shipped().values().flat_map(|d| d.cache.clone()).collect();
        parsed.sort();
        parsed.dedup();
        let mut scanned: Vec<String> = shipped_caches().into_iter().map(String::from).collect();
        scanned.sort();
        assert_eq!(parsed, scanned);
        assert!(scanned.len() >= 5, "{scanned:?}");
    }

    #[test]
    fn the_quick_scan_finds_every_shipped_detect_file() {
        let mut parsed: Vec<String> = shipped().values().flat_map(|d| d.detect.clone()).collect();
        let mut scanned: Vec<String> = shipped_detect_files().into_iter().map(String::from).collect();
        parsed.sort();
        scanned.sort();
        assert_eq!(parsed, scanned);
        assert!(scanned.contains(&"Cargo.toml".to_string()));
    }

    #[test]
    fn shipped_profiles_parse() {
        let p = shipped();
        let qwen = p.get("qwen").expect("qwen profile");
        assert!(qwen.include.iter().any(|i| i.contains("QWEN_HOME")));
        assert_eq!(qwen.read_only.len(), 5);
        assert!(qwen.read_only.iter().any(|r| r.ends_with("/settings.json")));
        assert_eq!(
            toml::from_str::<ShippedFile>(SHIPPED).unwrap().profiles.len(),
            p.len()
        );
    }
}
