//! The agent and editor files at the top of a workspace: what a host tool
//! (an editor opening the folder, direnv on `cd`, an agent started there)
//! reads to choose a program it runs. In the live mode those there when
//! the sandbox starts are read-only inside, as git hooks are; those made
//! inside are named on qwrap's stderr when the command exits. `qwrap
//! review` names them among a layer's changes. `--allow-agent-files`
//! leaves them writable.

use std::path::{Path, PathBuf};

/// Directories at the workspace's top, guarded whole, and what a host tool
/// runs from them.
pub const DIRS: [(&str, &str); 16] = [
    (
        ".claude",
        "Claude Code runs its hooks and MCP servers and reads its commands there",
    ),
    (
        ".qwen",
        "Qwen Code starts its MCP servers and extensions and reads its sandbox setting there",
    ),
    (
        ".vscode",
        "VS Code runs its tasks on folder open and the programs its settings name",
    ),
    (
        ".idea",
        "JetBrains IDEs run its run configurations and external tools",
    ),
    (".codex", "Codex reads its config, MCP servers and hooks there"),
    (
        ".gemini",
        "Gemini CLI starts the MCP servers and tools its settings name",
    ),
    (".cursor", "Cursor starts the MCP servers its settings name"),
    (
        ".zed",
        "Zed runs its tasks and the language servers its settings name",
    ),
    (".continue", "Continue starts the MCP servers its config names"),
    (".windsurf", "Windsurf runs its workflows"),
    (
        ".devcontainer",
        "dev container tools run its create and start commands",
    ),
    (".helix", "Helix starts the language servers its config names"),
    (".opencode", "opencode runs its plugins, commands and MCP servers"),
    (".kiro", "Kiro starts the MCP servers and hooks its settings name"),
    (".roo", "Roo Code starts the MCP servers its config names"),
    (".amazonq", "Amazon Q starts the MCP servers its config names"),
];

/// Files at the workspace's top, and what a host tool does with them.
pub const FILES: [(&str, &str); 14] = [
    (".envrc", "direnv sources it on cd"),
    (".mcp.json", "agents start the MCP servers it names"),
    (
        ".claude/settings.json",
        "Claude Code runs its hooks and MCP servers",
    ),
    (
        ".claude/settings.local.json",
        "Claude Code runs its hooks and MCP servers",
    ),
    (
        ".qwen/settings.json",
        "Qwen Code starts its MCP servers and reads its sandbox setting",
    ),
    (".dir-locals.el", "Emacs evaluates it on opening a file"),
    (".exrc", "vi and Neovim source it with 'exrc'"),
    (".nvim.lua", "Neovim sources it with 'exrc'"),
    (".nvimrc", "Neovim sources it with 'exrc'"),
    (
        ".aider.conf.yml",
        "aider runs the lint and test commands it names",
    ),
    (
        "opencode.json",
        "opencode starts the MCP servers and commands it names",
    ),
    (".dir-locals-2.el", "Emacs evaluates it on opening a file"),
    ("mise.toml", "mise runs its tasks and sources its [env] on cd"),
    (".mise.toml", "mise runs its tasks and sources its [env] on cd"),
];

/// Directories whose every file is an agent's settings, in a review.
const AGENT_DIRS: [(&str, &str); 2] = [
    (
        ".claude",
        "Claude Code reads its settings, hooks and commands there",
    ),
    (".qwen", "Qwen Code reads its settings and commands there"),
];

/// The guarded files at a workspace's top, as found when a sandbox starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// There: made read-only inside.
    pub present: Vec<PathBuf>,
    /// There, but a symlink: a mount cannot hold a name that is a link.
    pub links: Vec<PathBuf>,
    /// Not there: named at exit if the command made them.
    pub absent: Vec<PathBuf>,
}

/// Looks for the guarded files in `workspace` (an lstat each, and a read of
/// `.claude/` where it exists, for every `settings*.json`).
pub fn find(workspace: &Path) -> Found {
    let mut found = Found::default();
    for (name, _) in DIRS.iter().chain(FILES.iter()) {
        found.sort(workspace.join(name));
    }
    // What the `.envrc` there loads: direnv asks again only when `.envrc`
    // itself changes.
    for (dir, text) in envrcs(workspace) {
        let below = |rel: PathBuf| Some(dir.join(rel)).filter(|p| p.starts_with(workspace));
        for p in envrc_loads(&text).into_iter().filter_map(below) {
            found.sort(p);
        }
        let files = envrc_words(&text).into_iter().filter_map(below);
        for p in files.filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())) {
            found.sort(p);
        }
    }
    if let Ok(dir) = std::fs::read_dir(workspace.join(".claude")) {
        for e in dir.flatten() {
            let name = e.file_name();
            let text = name.to_string_lossy();
            let p = e.path();
            if text.starts_with("settings")
                && text.ends_with(".json")
                && !found.present.contains(&p)
                && !found.links.contains(&p)
            {
                if e.file_type().is_ok_and(|t| t.is_symlink()) {
                    found.links.push(p);
                } else {
                    found.present.push(p);
                }
            }
        }
    }
    found
}

impl Found {
    /// A path by what is there now (once).
    fn sort(&mut self, p: PathBuf) {
        if [&self.present, &self.links, &self.absent]
            .iter()
            .any(|v| v.contains(&p))
        {
            return;
        }
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => self.links.push(p),
            Ok(_) => self.present.push(p),
            Err(_) => self.absent.push(p),
        }
    }

    /// The live mode's guard: those there read-only (`read_only`), the
    /// symlinks left out (`dropped`); the missing ones returned, to be
    /// named at exit.
    pub(super) fn guard(
        self,
        read_only: &mut Vec<super::Sourced<super::PathSpec>>,
        dropped: &mut Vec<super::Dropped>,
    ) -> Vec<PathBuf> {
        read_only.extend(
            self.present
                .into_iter()
                .map(|p| super::Sourced::new(super::PathSpec::Literal(p), "agent file")),
        );
        dropped.extend(self.links.into_iter().map(|path| super::Dropped {
            path,
            why:
                "agent file: a symlink, whose name a mount cannot hold (--review keeps it in a layer)".into(),
        }));
        self.absent
    }
}

/// The files an `.envrc` loads by name, relative to its directory:
/// `source_env[_if_exists] F` (F's `.envrc` where F is a directory),
/// `dotenv[_if_exists] [F]` (`.env` without one), `source F`, `. F` (also
/// as `builtin source`, `command .`, `\.`, `source -- F`). A name with a
/// variable but `$PWD`, or one leading out of the directory, is not
/// followed (residual: docs/security.md).
pub fn envrc_loads(text: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    let commands = text.lines().flat_map(|l| l.split([';', '&', '|', '(', '`']));
    for cmd in commands {
        let mut words = cmd
            .split_whitespace()
            .map(super::rc_files::unquoted)
            .skip_while(|w| ["then", "do", "else", "{", "builtin", "command", "!"].contains(&w.as_str()));
        let Some(verb) = words.next() else { continue };
        let arg = words.find(|w| !w.starts_with(['-', '<']));
        let arg = match (verb.as_str(), arg) {
            ("dotenv" | "dotenv_if_exists", None) => ".env".to_string(),
            (
                "source_env" | "source_env_if_exists" | "dotenv" | "dotenv_if_exists" | "source" | ".",
                Some(a),
            ) => a,
            _ => continue,
        };
        let Some(rel) = relative(&arg) else { continue };
        v.push(rel.clone());
        // source_env names a directory or its `.envrc` alike.
        if verb.starts_with("source_env") {
            v.push(rel.join(".envrc"));
        }
    }
    v
}

/// Every word of an `.envrc` that names a path below its directory
/// (`eval "$(cat env/x)"`, a program it runs): the files among them that
/// are there are guarded as what it loads by name.
pub fn envrc_words(text: &str) -> Vec<PathBuf> {
    // Commands that only watch or print what they name (`watch_file
    // package.json` must leave it writable).
    const QUIET: [&str; 6] = [
        "watch_file",
        "watch_dir",
        "log_status",
        "log_error",
        "echo",
        "printf",
    ];
    let mut v: Vec<PathBuf> = Vec::new();
    for cmd in text.lines().flat_map(|l| l.split([';', '&', '|'])) {
        if cmd.split_whitespace().next().is_some_and(|w| QUIET.contains(&w)) {
            continue;
        }
        for w in super::rc_files::path_words(cmd) {
            if let Some(rel) = relative(&w)
                && !v.contains(&rel)
            {
                v.push(rel);
            }
        }
    }
    v
}

/// A word as a path below the `.envrc`'s directory: relative or under
/// `$PWD/`, its `.` and `..` taken lexically without leaving it.
fn relative(word: &str) -> Option<PathBuf> {
    use std::path::Component::{CurDir, Normal, ParentDir};
    let word = word
        .strip_prefix("$PWD/")
        .or_else(|| word.strip_prefix("${PWD}/"))
        .unwrap_or(word);
    if word.contains(['$', '*', '?', '[']) || word.starts_with('/') || word.starts_with('~') {
        return None;
    }
    let mut rel = PathBuf::new();
    for c in Path::new(word).components() {
        match c {
            Normal(n) => rel.push(n),
            CurDir => {}
            ParentDir if rel.pop() => {}
            _ => return None,
        }
    }
    (!rel.as_os_str().is_empty()).then_some(rel)
}

/// The `.envrc`s direnv reads for `workspace`: its own, and the nearest
/// above it where it has none (or what `source_up` reaches): each with its
/// directory.
fn envrcs(workspace: &Path) -> Vec<(PathBuf, String)> {
    workspace
        .ancestors()
        .map(|d| (d.to_path_buf(), d.join(".envrc")))
        .filter(|(_, f)| std::fs::symlink_metadata(f).is_ok_and(|m| m.is_file()))
        .filter_map(|(d, f)| Some((d, super::read_small(&f)?)))
        .collect()
}

/// Why a path (relative to the workspace's top) chooses code a host tool
/// runs later, if it is one of the agent and editor files.
pub fn why(rel: &Path) -> Option<&'static str> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    if let Some((_, why)) = DIRS.iter().chain(AGENT_DIRS.iter()).find(|(d, _)| *d == first) {
        return Some(why);
    }
    FILES
        .iter()
        .find(|(f, _)| Path::new(f) == rel)
        .map(|(_, why)| *why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_an_envrc_loads_by_name() {
        let text = "source_env_if_exists .envrc.local\nsource_env env/dev.sh\ndotenv_if_exists\n\
                    [ -f x ] && . ./tools/env.sh; dotenv \"$HOME/.env\"\nsource ../up\nwatch_file w\n";
        let got: Vec<String> = envrc_loads(text)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            got,
            [
                ".envrc.local",
                ".envrc.local/.envrc",
                "env/dev.sh",
                "env/dev.sh/.envrc",
                ".env",
                "tools/env.sh",
            ]
        );
    }

    #[test]
    fn what_an_envrc_names_however_spelled() {
        let text = "builtin source e2\ncommand . e3\n\\. e4\nsource -- e5\nsource_env \"$PWD/e9\"\n\
                    source ./d/../e12\neval \"$(cat e14)\"\nsource ../../out\nwatch_file package.json\n";
        let loads: Vec<String> = envrc_loads(text)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        for want in ["e2", "e3", "e4", "e5", "e9", "e9/.envrc", "e12"] {
            assert!(loads.contains(&want.to_string()), "{want} in {loads:?}");
        }
        assert!(!loads.iter().any(|l| l.contains("out")), "{loads:?}");
        let words = envrc_words(text);
        assert!(words.contains(&PathBuf::from("e14")), "{words:?}");
        assert!(!words.contains(&PathBuf::from("package.json")), "{words:?}");
    }

    #[test]
    fn present_absent_and_links_are_told_apart() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        std::fs::create_dir_all(ws.join(".vscode")).unwrap();
        std::fs::create_dir_all(ws.join(".claude")).unwrap();
        std::fs::write(ws.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(ws.join(".claude/settings.team.json"), "{}").unwrap();
        std::fs::write(ws.join(".claude/notes.md"), "").unwrap();
        std::os::unix::fs::symlink("elsewhere", ws.join(".envrc")).unwrap();
        let f = find(ws);
        assert!(f.present.contains(&ws.join(".vscode")));
        assert!(f.present.contains(&ws.join(".claude/settings.json")));
        assert!(f.present.contains(&ws.join(".claude/settings.team.json")));
        assert!(!f.present.contains(&ws.join(".claude/notes.md")));
        assert_eq!(f.links, vec![ws.join(".envrc")]);
        assert!(f.absent.contains(&ws.join(".mcp.json")));
        assert!(f.absent.contains(&ws.join(".claude/settings.local.json")));
        assert!(f.present.contains(&ws.join(".claude")));
        assert_eq!(f.present.len() + f.links.len() + f.absent.len(), 31);
    }

    #[test]
    fn reasons() {
        assert!(why(Path::new(".vscode/tasks.json")).is_some());
        assert!(why(Path::new(".claude/commands/x.md")).is_some());
        assert!(why(Path::new(".envrc")).is_some());
        assert!(why(Path::new("src/.envrc")).is_none());
        assert!(why(Path::new("README.md")).is_none());
    }
}
