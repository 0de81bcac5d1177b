//! Secrets in shell start-up files: an interactive shell inside reads
//! `~/.bashrc` and friends (they must stay readable), and many export API
//! keys there. Each such file (and what it sources from the home) is shown
//! with the assignments of credential variables replaced by a comment that
//! says qwrap removed them; the rest of the file is unchanged. The same
//! rules as the environment's decide (secrets.rs). `--show FILE` shows the
//! original.

use super::read_small;
use super::secrets::{looks_secret, looks_secret_value};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The start-up files read from the home directory.
const RC_FILES: [&str; 19] = [
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_aliases",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".config/fish/config.fish",
    ".xprofile",
    ".xsessionrc",
    ".xinitrc",
];

/// One start-up file that exists, with its text where it is a small
/// readable file.
#[derive(Debug, Clone)]
pub struct StartUp {
    pub path: PathBuf,
    pub text: Option<String>,
}

/// The start-up files of `home` that exist, and what they source from it
/// (at most 64 looked at), each read once: the listed home shows them,
/// redacted where they assign a credential.
pub fn start_up_files(home: &Path) -> Vec<StartUp> {
    let mut candidates: Vec<PathBuf> = RC_FILES.iter().map(|f| home.join(f)).collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < candidates.len() && candidates.len() < 64 {
        let path = candidates[i].clone();
        i += 1;
        // Most are absent: one lstat each, no open.
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        let text = read_small(&path);
        for s in text.as_deref().map(|t| sourced(t, home)).unwrap_or_default() {
            if !candidates.contains(&s) {
                candidates.push(s);
            }
        }
        found.push(StartUp { path, text });
    }
    found
}

/// One file shown redacted: where, the copy shown over it, what went.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Redacted {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    #[serde(serialize_with = "crate::lossy::path")]
    pub copy: PathBuf,
    /// The variables whose assignments were removed (names, not values).
    pub names: Vec<String>,
    #[serde(skip)]
    pub text: String,
}

/// The start-up files (of each home, as `start_up_files` found them) that
/// assign a credential, redacted; `state`: where the copies are kept (None:
/// no redaction possible, and nothing is claimed).
pub fn redact(files: &[StartUp], show: &[PathBuf], state: Option<&Path>) -> Vec<Redacted> {
    let Some(state) = state else { return Vec::new() };
    let mut out: Vec<Redacted> = Vec::new();
    // What a start-up file sources from the home is read by the shell too.
    for f in files {
        let Some(text) = &f.text else { continue };
        let (redacted, names) = redact_text(text);
        if names.is_empty() {
            continue;
        }
        let real = std::fs::canonicalize(&f.path).unwrap_or(f.path.clone());
        if show.contains(&real) || out.iter().any(|r| r.path == real) {
            continue;
        }
        let name = real
            .file_name()
            .map_or_else(|| "rc".into(), |n| n.to_string_lossy().into_owned());
        let copy = state.join("rc").join(format!(
            "{}-{:016x}",
            name.trim_start_matches('.'),
            fnv(redacted.as_bytes())
        ));
        out.push(Redacted {
            path: real,
            copy,
            names,
            text: redacted,
        });
    }
    out
}

fn fnv(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Files a start-up file sources from the home: `source F`, `. F` (also
/// as `builtin source`, `command .`, `\.`, `source -- F`) with F as
/// `~/…`, `$HOME/…`, `${HOME}/…` or relative to the home, its quotes
/// taken out as the shell takes them (`~/"dots/env"`).
fn sourced(text: &str, home: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    // Each command of a line: `[ -f F ] && . F`, `if …; then source F; fi`.
    let commands = text.lines().flat_map(|l| l.split([';', '&', '|', '(', '`']));
    for cmd in commands {
        let mut words = cmd.split_whitespace().map(unquoted).skip_while(|w| {
            ["then", "do", "else", "{", "builtin", "command", "!", "<"].contains(&w.as_str())
        });
        if !matches!(words.next().as_deref(), Some("source" | ".")) {
            continue;
        }
        let Some(arg) = words.find(|w| !w.starts_with(['-', '<'])) else {
            continue;
        };
        let p = match in_home(&arg, home) {
            Some(p) => p,
            None if !arg.starts_with('/') && !arg.contains('$') => home.join(&arg),
            None => continue,
        };
        if p.starts_with(home) && !p.components().any(|c| c.as_os_str() == "..") {
            v.push(p);
        }
    }
    v
}

/// What the start-up files source by name, there or not (one made
/// later is read by the next shell).
pub fn sourced_paths(files: &[StartUp], home: &Path) -> Vec<PathBuf> {
    files
        .iter()
        .filter_map(|f| f.text.as_deref())
        .flat_map(|t| sourced(t, home))
        .collect()
}

/// A shell word with its quotes taken out and a leading backslash (`\.`).
pub(super) fn unquoted(w: &str) -> String {
    let w: String = w.chars().filter(|c| *c != '"' && *c != '\'').collect();
    // git's `!cmd` aliases name a program the same way.
    let w = w.trim_start_matches('!');
    w.strip_prefix('\\').unwrap_or(w).to_string()
}

/// The words of a text that may name a path, unquoted: split at blanks
/// and at what the shell splits commands, redirections, assignments and
/// `PATH` lists by.
pub(super) fn path_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| l.split([' ', '\t', ';', '&', '|', '(', ')', '`', '<', '>', '=', ':']))
        .map(unquoted)
        .filter(|w| !w.is_empty())
}

/// A word as a path: `~/…`, `$HOME/…`, `${HOME}/…` or absolute.
fn in_home(word: &str, home: &Path) -> Option<PathBuf> {
    let rel = word
        .strip_prefix("~/")
        .or_else(|| word.strip_prefix("$HOME/"))
        .or_else(|| word.strip_prefix("${HOME}/"));
    match rel {
        Some(r) => Some(home.join(r)),
        None if word.starts_with('/') => Some(PathBuf::from(word)),
        None => None,
    }
}

/// Every path the start-up files name that is there, however the shell is
/// told to read it (`builtin source F`, `source <(cat F)`, a `PATH` entry,
/// an alias): as `~/…`, `$HOME/…`, absolute, or relative to the home with
/// a `/`, its `..` taken lexically; and what the files among them in the
/// home name in turn (64 read at most). Host shells source, run or search
/// what they name, so where one lies in a writable root it is guarded.
pub fn named_paths(files: &[StartUp], home: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let texts: Vec<String> = files.iter().filter_map(|f| f.text.clone()).collect();
    let vars = path_variables(&texts, home);
    let mut read = files.len();
    // A directory counts where a line puts it on a search path (`PATH`,
    // `fish_add_path`, vim's `runtimepath`): one an alias `cd`s to is no
    // config.
    let lines = |t: String| t.lines().map(str::to_string).collect::<Vec<_>>();
    let mut texts: Vec<String> = texts.into_iter().flat_map(lines).collect();
    while let Some(line) = texts.pop() {
        let search = line.to_ascii_lowercase().contains("path");
        for w in path_words(&line) {
            let Some(w) = expanded(&w, &vars, home).filter(|w| !w.contains(['*', '?', '[', '$'])) else {
                continue;
            };
            let p = match in_home(&w, home) {
                Some(p) => p,
                None if w.contains('/') => home.join(&w),
                None => continue,
            };
            let p = super::lexical(&p);
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if p == home || out.contains(&p) || (p.is_dir() && !search) {
                continue;
            }
            if read < 64 && p.starts_with(home) && m.is_file() {
                texts.extend(read_small(&p).map(lines).unwrap_or_default());
                read += 1;
            }
            out.push(p);
        }
    }
    out
}

/// The variables the texts set to a path, in order, each as the path it
/// holds: every command of a line (`D=$HOME/dots; . $D/x`, `if …; then
/// D=…; fi`), after `export`, `local`, `readonly`, `declare` or `typeset`
/// and their flags, fish's `set -x D ~/dots`, and `: ${D:=~/dots}`.
fn path_variables(texts: &[String], home: &Path) -> Vec<(String, String)> {
    const LEADS: [&str; 10] = [
        "then", "do", "else", "{", "!", "export", "local", "readonly", "declare", "typeset",
    ];
    let mut vars: Vec<(String, String)> = Vec::new();
    let commands = texts
        .iter()
        .flat_map(|t| t.lines())
        .flat_map(|l| l.split([';', '&', '|', '(', '`']));
    for cmd in commands {
        let mut words = cmd
            .split_whitespace()
            .skip_while(|w| LEADS.contains(w) || w.starts_with('-'));
        let Some(first) = words.next() else { continue };
        let (name, value) = match first {
            "set" => match (words.find(|w| !w.starts_with('-')), words.next()) {
                (Some(n), Some(v)) => (n, v),
                _ => continue,
            },
            ":" => {
                let Some(inner) = words.next().and_then(|w| w.strip_prefix("${")) else {
                    continue;
                };
                let inner = inner.trim_end_matches(['}', '"']);
                let Some((n, v)) = inner.split_once(":=").or_else(|| inner.split_once('=')) else {
                    continue;
                };
                (n, v)
            }
            w => match w.split_once('=') {
                Some((n, v)) => (n, v),
                None => continue,
            },
        };
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if let Some(v) = expanded(&unquoted(value), &vars, home).filter(|v| valid && v.starts_with('/')) {
            vars.push((name.to_string(), v));
        }
    }
    vars
}

/// A word with `~/`, `$HOME` or a variable of `vars` at its start
/// expanded; None where the variable is another.
fn expanded(word: &str, vars: &[(String, String)], home: &Path) -> Option<String> {
    if let Some(rest) = word.strip_prefix("~/") {
        return Some(format!("{}/{rest}", home.display()));
    }
    let Some(rest) = word.strip_prefix('$') else {
        return Some(word.to_string());
    };
    let (name, tail) = match rest.strip_prefix('{') {
        Some(r) => r.split_once('}')?,
        None => {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        }
    };
    let value = match name {
        "HOME" => home.to_string_lossy().into_owned(),
        _ => vars.iter().rev().find(|(n, _)| n == name)?.1.clone(),
    };
    Some(format!("{value}{tail}"))
}

/// The directories whose files the start-up files take by a glob (`for f
/// in ~/dots/bash.d/*.sh; do . "$f"; done`): the one before the first
/// component with a wildcard. A file made there is read by the next shell.
pub fn globbed_dirs(files: &[StartUp], home: &Path) -> Vec<PathBuf> {
    let texts: Vec<String> = files.iter().filter_map(|f| f.text.clone()).collect();
    let vars = path_variables(&texts, home);
    let mut v = Vec::new();
    for word in texts.iter().flat_map(|t| path_words(t)) {
        let Some(word) = expanded(&word, &vars, home) else {
            continue;
        };
        let Some(p) = in_home(&word, home).filter(|_| word.contains(['*', '?', '['])) else {
            continue;
        };
        let open = |c: &std::path::Component| {
            c.as_os_str()
                .as_encoded_bytes()
                .iter()
                .any(|b| b"*?[".contains(b))
        };
        let dir: PathBuf = p.components().take_while(|c| !open(c)).collect();
        let plain = !dir.components().any(|c| c.as_os_str() == "..");
        if plain && dir != home && dir.parent().is_some() && !v.contains(&dir) {
            v.push(dir);
        }
    }
    v
}

/// The text with each credential assignment replaced, and the names.
pub fn redact_text(text: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut names = Vec::new();
    let physical: Vec<&str> = text.split_inclusive('\n').collect();
    let mut i = 0;
    while i < physical.len() {
        // A logical line: lines ending in a backslash go on to the next.
        let mut end = i;
        while end + 1 < physical.len() && physical[end].trim_end_matches('\n').ends_with('\\') {
            end += 1;
        }
        let joined: String = physical[i..=end]
            .iter()
            .map(|l| l.trim_end_matches('\n').trim_end_matches('\\'))
            .collect();
        let line = physical[i];
        let found = secret_names(&joined);
        if found.is_empty() {
            physical[i..=end].iter().for_each(|l| out.push_str(l));
            i = end + 1;
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        for _ in i..=end {
            out.push_str(&format!(
                "{indent}# qwrap removed the assignment of {} here (a credential; qwrap run --show FILE shows it)\n",
                found.join(", ")
            ));
        }
        i = end + 1;
        for n in found {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    (out, names)
}

/// The credentials a line sets or holds, by name: every `NAME=VALUE` in
/// it (several on a line, after `;`, `&&`, `if`, `export`, a tab, in an
/// alias), fish's `set -gx NAME VALUE` and csh's `setenv NAME VALUE`
/// anywhere, and any word that is a credential whatever names it (a
/// token in an alias, a `Bearer` header): the whole line goes.
fn secret_names(line: &str) -> Vec<String> {
    let l = line.trim();
    if l.starts_with('#') || l.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    let words: Vec<&str> = l
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')' | '`'))
        .filter(|w| !w.is_empty())
        .collect();
    let unquote = |w: &str| w.trim_matches(['"', '\'', '{', '}']).to_string();
    for (i, w) in words.iter().enumerate() {
        // `${NAME:=value}`, `${NAME:-value}` set or default it.
        let w = w
            .trim_start_matches(['"', '\'', '$', '{'])
            .replacen(":=", "=", 1)
            .replacen(":-", "=", 1);
        let w = w.as_str();
        if let Some((name, value)) = w.split_once('=')
            && let name = name.trim_end_matches('+')
            && valid(name)
            && (looks_secret(OsStr::new(name)) || looks_secret_value(OsStr::new(&unquote(value))))
        {
            out.push(name.to_string());
            continue;
        }
        // fish's and csh's assignments, bash's `read NAME`, `printf -v NAME`.
        if matches!(
            w,
            "set" | "setenv" | "read" | "printf" | "declare" | "typeset" | "local" | "export"
        ) && let Some(name) = words[i + 1..].iter().find(|n| !n.starts_with('-'))
            && valid(name)
            && looks_secret(OsStr::new(name))
        {
            out.push(name.to_string());
            continue;
        }
        if looks_secret_value(OsStr::new(&unquote(w))) {
            out.push("a credential value".to_string());
        }
    }
    // A client's password on its command line (`mysql -pSECRET`, `curl -u
    // user:SECRET`, `--password SECRET`).
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).map(|n| n.trim_matches(['"', '\'']));
        let password_flag = (w.starts_with("-p") && w.len() > 2 && !w.starts_with("--"))
            || (matches!(*w, "-u" | "--user") && next.is_some_and(|n| n.contains(':')))
            || (matches!(*w, "--password" | "--pass" | "--token" | "--api-key") && next.is_some());
        let client = || {
            l.split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
                .any(|t| CLIENTS.contains(&t))
        };
        if password_flag && client() {
            out.push("a credential value".to_string());
        }
    }
    // A header's value is its words after `Bearer`/`Basic`.
    let lower = l.to_ascii_lowercase();
    if out.is_empty()
        && [
            "bearer ",
            "basic ",
            "authorization:",
            "api-key:",
            "private-token:",
        ]
        .iter()
        .any(|k| lower.contains(k))
        && l.split_whitespace()
            .any(|w| w.trim_matches(['"', '\'']).len() >= 20)
    {
        out.push("a credential value".to_string());
    }
    out.dedup();
    out
}

/// Programs that take a password or token on their command line.
const CLIENTS: &[&str] = &[
    "mysql",
    "mariadb",
    "mysqldump",
    "curl",
    "wget",
    "psql",
    "mongo",
    "mongosh",
    "redis-cli",
    "sshpass",
    "smbclient",
    "ldapsearch",
    "http",
    "docker",
    "podman",
    "helm",
    "gh",
    "glab",
];

fn valid(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_assignments_go_and_the_rest_stays() {
        let text = "# my rc\nexport PATH=$PATH:~/bin\nexport OPENAI_API_KEY=sk-abc\n  GITHUB_TOKEN=\"ghp_x\"\nalias ll='ls -l'\nexport DATABASE_URL=postgres://u:pw@db/app\nset -gx ANTHROPIC_API_KEY xyz\ndeclare -x EDITOR=vim\n";
        let (out, names) = redact_text(text);
        assert_eq!(
            names,
            [
                "OPENAI_API_KEY",
                "GITHUB_TOKEN",
                "DATABASE_URL",
                "ANTHROPIC_API_KEY"
            ]
        );
        assert!(
            !out.contains("sk-abc") && !out.contains("ghp_x") && !out.contains("pw@") && !out.contains("xyz")
        );
        assert!(
            out.contains("export PATH=$PATH:~/bin\n")
                && out.contains("alias ll='ls -l'\n")
                && out.contains("declare -x EDITOR=vim\n")
        );
        assert!(out.contains("  # qwrap removed the assignment of GITHUB_TOKEN here"));
        assert_eq!(out.lines().count(), text.lines().count());
    }

    #[test]
    fn every_shape_of_a_credential_line_goes() {
        let text = "[ -f ~/.k ] && export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx\n\
            A=1 GITHUB_TOKEN=ghp_x B=2\n\
            export\tAWS_SECRET_ACCESS_KEY=abc\n\
            if true; then export STRIPE_KEY=x; fi\n\
            alias gh-api='curl -H \"Authorization: Bearer abcdefghijklmnopqrstuvwxyz\"'\n\
            typeset -gx HF_TOKEN=hf_x\n\
            setenv DB_PASSWORD hunter2\n\
            set -Ux ANTHROPIC_API_KEY xyz\n\
            alias deploy='DEPLOY_URL=https://u:pw@host/x ./deploy'\n\
            export PATH=$PATH:~/bin; alias ll='ls -l'\n";
        let (out, names) = redact_text(text);
        for gone in [
            "sk-abc",
            "ghp_x",
            "=abc",
            "STRIPE_KEY=x",
            "abcdefghijklmnopqrstuvwxyz",
            "hf_x",
            "hunter2",
            "xyz",
            "pw@",
        ] {
            assert!(!out.contains(gone), "{gone}: {out}");
        }
        assert!(
            out.contains("export PATH=$PATH:~/bin; alias ll='ls -l'\n"),
            "{out}"
        );
        assert_eq!(out.lines().count(), text.lines().count());
        assert!(names.contains(&"GITHUB_TOKEN".to_string()), "{names:?}");
    }

    #[test]
    fn clients_passwords_defaults_reads_and_continued_lines_go() {
        let text = "alias db='mysql -uroot -pS3CRETa'\n\
            alias x='curl -u admin:S3CRETb https://h'\n\
            alias y='curl -H \"X-Api-Key: S3CRETc\" https://h'\n\
            export AZURE_OPENAI_API_\\\nKEY=S3CRETd\n\
            export GEMINI_API_KEY+=S3CRETe\n\
            : ${MISTRAL_API_KEY:=S3CRETf}\n\
            read -r GROQ_API_KEY <<< 'S3CRETg'\n\
            printf -v DEEPSEEK_API_KEY '%s' S3CRETh\n\
            export DB_PASS=S3CRETi\n\
            alias ll='ls -l'\n";
        let (out, _) = redact_text(text);
        assert!(!out.contains("S3CRET"), "{out}");
        assert!(out.contains("alias ll='ls -l'\n"), "{out}");
        assert_eq!(out.lines().count(), text.lines().count(), "{out}");
    }

    #[test]
    fn sourced_files_are_followed_within_the_home() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        std::fs::write(
            home.join(".bashrc"),
            format!(
                "source ~/.secrets\n. \"$HOME/.aliases\"\n. /etc/bash_completion\n. {}/.more\n\
                 for f in ~/dots/bash.d/*.sh /etc/profile.d/*; do . \"$f\"; done\n",
                home.display()
            ),
        )
        .unwrap();
        std::fs::write(home.join(".more"), "x=1\n").unwrap();
        let files = start_up_files(home);
        assert!(files.iter().any(|f| f.path == home.join(".more")));
        assert!(!files.iter().any(|f| f.path.starts_with("/etc")));
        let dirs = [home.join("dots/bash.d"), "/etc/profile.d".into()];
        assert_eq!(globbed_dirs(&files, home), dirs);
        std::fs::write(
            home.join(".secrets"),
            "export STRIPE_KEY=sk_live_0123456789abcdefghijkl\n",
        )
        .unwrap();
        std::fs::write(home.join(".aliases"), "alias g=git\n").unwrap();
        let state = home.join("state");
        let r = redact(&start_up_files(home), &[], Some(&state));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].path, std::fs::canonicalize(home.join(".secrets")).unwrap());
        assert_eq!(r[0].names, ["STRIPE_KEY"]);
        // --show takes it out.
        let shown = std::fs::canonicalize(home.join(".secrets")).unwrap();
        assert!(redact(&start_up_files(home), &[shown], Some(&state)).is_empty());
    }
}
