//! The changes that choose code a host tool runs later: git's hooks and
//! config, the agent and editor files at the workspace's top
//! (policy/agent_files.rs), and build files' new scripts. `diff` names them
//! first; `apply` asks before it writes them.

use super::changes::{Change, Kind, read_at};
use super::{Layer, shown};
use rustix::fd::AsFd;
use std::path::{Component, Path};

/// One change a host tool may run code from, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    pub path: String,
    pub why: String,
}

/// Files at any depth that a build tool runs, by name.
const BUILD_FILES: &[(&str, &str)] = &[
    ("Makefile", "make runs its recipes"),
    ("makefile", "make runs its recipes"),
    ("GNUmakefile", "make runs its recipes"),
    ("build.rs", "cargo runs it before building"),
    ("setup.py", "pip runs it to build and install"),
    ("pyproject.toml", "pip runs its build backend"),
    ("conftest.py", "pytest imports it"),
    ("CMakeLists.txt", "cmake runs it"),
    ("justfile", "just runs its recipes"),
    ("Justfile", "just runs its recipes"),
    (
        ".pre-commit-config.yaml",
        "pre-commit installs and runs its hooks",
    ),
    (".npmrc", "npm takes its script shell and node options"),
    (".yarnrc.yml", "yarn takes its plugins and paths"),
    (".yarnrc", "yarn takes its paths and options"),
    (".envrc", "direnv loads it on entering the directory"),
    (
        "rust-toolchain",
        "rustup runs the toolchain it names (a path names any program)",
    ),
    (
        "rust-toolchain.toml",
        "rustup runs the toolchain it names (a path names any program)",
    ),
    ("sitecustomize.py", "python imports it at start-up"),
    ("usercustomize.py", "python imports it at start-up"),
    ("build.gradle", "gradle runs it"),
    ("build.gradle.kts", "gradle runs it"),
    ("settings.gradle", "gradle runs it"),
    ("settings.gradle.kts", "gradle runs it"),
    ("gradlew", "the gradle wrapper: run as a program"),
    ("pom.xml", "maven runs its plugins"),
    ("Rakefile", "rake runs its tasks"),
    ("meson.build", "meson runs it"),
    ("noxfile.py", "nox runs it"),
    ("lefthook.yml", "lefthook installs and runs its git hooks"),
    (".lefthook.yml", "lefthook installs and runs its git hooks"),
    ("lefthook.yaml", "lefthook installs and runs its git hooks"),
    (".lintstagedrc", "lint-staged runs its commands on commit"),
    (".lintstagedrc.json", "lint-staged runs its commands on commit"),
    (".lintstagedrc.yml", "lint-staged runs its commands on commit"),
    (".pnpmfile.cjs", "pnpm runs its hooks on install"),
    (".pylintrc", "pylint runs its init-hook"),
    ("pylintrc", "pylint runs its init-hook"),
    ("tox.ini", "tox runs its commands"),
    ("pytest.ini", "pytest loads the plugins its addopts name"),
    (
        "setup.cfg",
        "pytest and setuptools take options and plugins from it",
    ),
    ("Gemfile", "bundler evaluates it (Ruby)"),
    ("composer.json", "composer runs its scripts"),
    ("Taskfile.yml", "task runs its commands"),
    ("Taskfile.yaml", "task runs its commands"),
    (".bazelrc", "bazel takes its options and tools"),
    ("BUILD.bazel", "bazel runs its rules"),
    ("WORKSPACE", "bazel runs its rules"),
    ("MODULE.bazel", "bazel runs its rules"),
    (".vimrc", "vim sources it with 'exrc'"),
    (".gitconfig", "git takes it where a config includes it"),
];

/// Names by their ending: configuration that is code.
const BUILD_ENDINGS: &[(&str, &str)] = &[
    (".config.js", "a JavaScript tool loads it (its config is code)"),
    (".config.cjs", "a JavaScript tool loads it (its config is code)"),
    (".config.mjs", "a JavaScript tool loads it (its config is code)"),
    (".config.ts", "a JavaScript tool loads it (its config is code)"),
    (".config.mts", "a JavaScript tool loads it (its config is code)"),
    (".config.cts", "a JavaScript tool loads it (its config is code)"),
    (
        ".code-workspace",
        "VS Code runs its tasks on opening the workspace",
    ),
    (".run.xml", "a JetBrains IDE runs its run configuration"),
];

/// Names by their start, for the dotfiles whose config is code.
const CODE_CONFIGS: &[&str] = &[
    ".eslintrc.",
    ".prettierrc.",
    ".babelrc.",
    ".stylelintrc.",
    ".mocharc.",
];

/// A git dir's names that choose code or another repository.
fn git_why(rel: &Path) -> Option<&'static str> {
    let parts: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
    let last = *parts.last()?;
    if parts.contains(&"hooks") {
        return Some("a git hook: git runs it");
    }
    if parts[0] == "info" {
        return Some(match last {
            "attributes" => "git's attributes: they choose filters and drivers",
            "exclude" => "git's excludes: what they match never shows in git status",
            "grafts" => "git's grafts: history as git shows it",
            _ => "git's info: read by git as its own",
        });
    }
    match parts.as_slice() {
        ["rebase-merge", "strategy" | "strategy_opts"] | ["sequencer", "opts"] => {
            return Some("a merge strategy and its options: a program git runs on --continue");
        }
        ["shallow"] => return Some("git's shallow list: the commits git takes for roots"),
        _ => {}
    }
    // The legacy remotes (`remotes/NAME`, `branches/NAME`), a submodule's
    // too: a URL git fetches from and pushes to where the config names none.
    let legacy = parts.len() >= 2 && matches!(parts[parts.len() - 2], "remotes" | "branches");
    if legacy && !matches!(parts[0], "refs" | "logs") {
        return Some("a remote's definition: where git fetches from and pushes to");
    }
    match last {
        "config" | "config.worktree" => {
            Some("git config: names programs git runs (core.fsmonitor, filters, aliases)")
        }
        "commondir" | "gitdir" => Some("a git pointer: which repository git uses"),
        "alternates" => Some("git's alternates: where it reads objects"),
        _ => None,
    }
}

/// Why a change chooses code a host tool runs later, if it does.
fn why(layer: &Layer, c: &Change) -> Option<String> {
    // A directory is named by what it holds.
    if matches!(c.kind, Kind::Deleted | Kind::Dir { .. }) {
        return None;
    }
    let in_git = if c.tree > 0 {
        Some(c.rel.as_path())
    } else {
        c.rel
            .strip_prefix(".git")
            .ok()
            .filter(|r| !r.as_os_str().is_empty())
    };
    if let Some(rel) = in_git {
        return git_why(rel).map(str::to_string);
    }
    if c.rel == Path::new(".git") && !matches!(c.kind, Kind::Dir { .. }) {
        return Some("a git pointer: which repository git uses".into());
    }
    if let Some(w) = nested_repository(&c.rel) {
        return Some(w);
    }
    let in_hg = c.rel.parent().and_then(Path::file_name) == Some(".hg".as_ref());
    if in_hg
        && c.rel
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| crate::policy::hg::CONFIG.contains(&n))
    {
        return Some("Mercurial's config: host hg runs the hooks and extensions it names".into());
    }
    if let Some(w) = crate::policy::agent_files::why(&c.rel) {
        return Some(w.to_string());
    }
    let name = c.rel.file_name()?.to_str()?;
    let under_node_modules = c
        .rel
        .components()
        .any(|p| p == Component::Normal("node_modules".as_ref()));
    if name == "package.json" && !under_node_modules {
        let scripts = changed_scripts(layer, c)?;
        return Some(format!(
            "npm runs its scripts: new or changed: {}",
            scripts.join(", ")
        ));
    }
    if name.ends_with(".mk") {
        return Some("make includes it".into());
    }
    if c.rel.components().next() == Some(Component::Normal(".husky".as_ref())) {
        return Some("husky installs it as a git hook".into());
    }
    if name.ends_with(".pth") {
        return Some("python runs its import lines at start-up (in site-packages)".into());
    }
    let parent_is = |d: &str| c.rel.parent().and_then(Path::file_name) == Some(d.as_ref());
    if parent_is(".cargo") && (name == "config" || name == "config.toml") {
        return Some("cargo takes its runners, aliases and build settings".into());
    }
    if CODE_CONFIGS.iter().any(|p| name.starts_with(p))
        && [".js", ".cjs", ".mjs", ".ts"].iter().any(|e| name.ends_with(e))
    {
        return Some("a JavaScript tool loads it (its config is code)".into());
    }
    if c.rel.starts_with(".github/workflows") {
        return Some("CI runs it, with the repository's secrets".into());
    }
    if c.rel.parent().and_then(Path::file_name) == Some(".bin".as_ref()) && under_node_modules {
        return Some("npm scripts run it by name".into());
    }
    if name == "Cargo.toml" && cargo_build_changed(layer, c) {
        return Some("cargo runs the build script it names (build =)".into());
    }
    if let Some(w) = bare_repository(layer, c, name) {
        return Some(w);
    }
    BUILD_FILES
        .iter()
        .find(|(n, _)| *n == name)
        .or_else(|| BUILD_ENDINGS.iter().find(|(e, _)| name.ends_with(e)))
        .map(|(_, w)| w.to_string())
}

/// A file of the layer's side and the host's, at `c`.
fn both_sides(layer: &Layer, c: &Change) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let parent = c.rel.parent().unwrap_or(Path::new(""));
    let Some(name) = c.rel.file_name() else {
        return (None, None);
    };
    let read = |root: &Path| {
        let dir = rustix::fs::open(root, super::changes::dir_flags(), rustix::fs::Mode::empty()).ok()?;
        let sub = super::changes::open_below(dir.as_fd(), parent)?;
        read_at(sub.as_fd(), name, 16 << 20)
    };
    let host = layer.info.trees.get(c.tree).and_then(|t| read(t));
    (read(&layer.upper(c.tree)), host)
}

/// Whether a Cargo.toml's `package.build` is new or changed, as cargo
/// reads it (TOML: quoted and dotted keys alike); one that does not parse
/// counts as changed.
fn cargo_build_changed(layer: &Layer, c: &Change) -> bool {
    let build = |b: &Option<Vec<u8>>| -> Result<Option<toml::Value>, ()> {
        let Some(b) = b else { return Ok(None) };
        let text = std::str::from_utf8(b).map_err(drop)?;
        let v: toml::Table = toml::from_str(text).map_err(drop)?;
        Ok(v.get("package").and_then(|p| p.get("build")).cloned())
    };
    let (new, old) = both_sides(layer, c);
    match build(&new) {
        Err(()) => true,
        Ok(None) => false,
        Ok(n) => build(&old).ok().flatten() != n,
    }
}

/// A repository without a `.git` in its path (a bare one, or one whose
/// `core.worktree` names a work tree): its `HEAD` or `config`, in a
/// directory that also holds `objects` on either side (of any kind: git
/// asks only access(X_OK) of it, which an executable file passes).
fn bare_repository(layer: &Layer, c: &Change, name: &str) -> Option<String> {
    if name != "HEAD" && name != "config" {
        return None;
    }
    let parent = c.rel.parent()?;
    let is_repo = |root: &Path| {
        let d = root.join(parent);
        let there = |n: &str| std::fs::symlink_metadata(d.join(n)).is_ok_and(|m| !m.is_dir() || n != "HEAD");
        there("HEAD") && there("objects")
    };
    let host = layer.info.trees.get(c.tree).is_some_and(|t| is_repo(t));
    (is_repo(&layer.upper(c.tree)) || host).then(|| {
        "a repository without .git in its path: host git run there takes its config and hooks".into()
    })
}

/// What host git reads as its own config or hooks for the workspace's
/// repository, outside its git dir (includes, `core.hooksPath`, ignores
/// and attributes files, the caller's own configs), as paths below the
/// workspace.
fn config_reads(layer: &Layer) -> Vec<std::path::PathBuf> {
    let Some(ws) = layer.info.trees.first() else {
        return Vec::new();
    };
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let user = crate::policy::UserGit::of(&|k| std::env::var_os(k), home.as_deref(), ws);
    // The host's config, and the layer's (as apply would leave it).
    let upper = layer.upper(0);
    [
        (ws.as_path(), ws.join(".git")),
        (upper.as_path(), upper.join(".git")),
    ]
    .iter()
    .flat_map(|(top, dir)| {
        crate::policy::config_reads(dir, &user)
            .into_iter()
            .filter_map(move |p| p.strip_prefix(top).ok().map(Path::to_path_buf))
    })
    .collect()
}

/// What other host tools read from the home as their config that lies in
/// the workspace (a dotfiles checkout), as paths below it.
fn host_tool_reads(layer: &Layer) -> Vec<std::path::PathBuf> {
    let Some(ws) = layer.info.trees.first() else {
        return Vec::new();
    };
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let user = crate::policy::UserGit::of(&|k| std::env::var_os(k), home.as_deref(), ws);
    user.host_tool_config(std::slice::from_ref(ws))
        .into_iter()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .filter_map(|p| p.strip_prefix(ws).ok().map(Path::to_path_buf))
        .collect()
}

/// A repository below the workspace's top (`sub/.git`, a directory or a
/// pointer file): host git run there (a prompt, an editor's scan of
/// subfolders) takes its config and hooks.
fn nested_repository(rel: &Path) -> Option<String> {
    let parts: Vec<Component> = rel.components().collect();
    let at = parts
        .iter()
        .skip(1)
        .position(|p| *p == Component::Normal(".git".as_ref()))?
        + 1;
    let inner: std::path::PathBuf = parts[at + 1..].iter().collect();
    if inner.as_os_str().is_empty() {
        return Some("a repository below the top: host git there follows it".into());
    }
    if inner == Path::new("HEAD") {
        return Some("a repository below the top: host git there runs its config and hooks".into());
    }
    git_why(&inner).map(|w| format!("{w} (a repository below the top)"))
}

/// The scripts of a package.json that the layer adds or changes.
fn changed_scripts(layer: &Layer, c: &Change) -> Option<Vec<String>> {
    let (new, old) = both_sides(layer, c);
    // npm strips a byte-order mark; a file read otherwise than npm reads
    // it is named whole (None: it cannot be read as JSON here).
    let scripts = |bytes: Option<Vec<u8>>| -> Option<serde_json::Map<String, serde_json::Value>> {
        let Some(b) = bytes else {
            return Some(serde_json::Map::new());
        };
        let b = b.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&b);
        let v = serde_json::from_slice::<serde_json::Value>(b).ok()?;
        Some(
            v.get("scripts")
                .and_then(|s| s.as_object().cloned())
                .unwrap_or_default(),
        )
    };
    let old = scripts(old).unwrap_or_default();
    let Some(new) = scripts(new) else {
        return Some(vec!["(it cannot be read as JSON here: look at it whole)".into()]);
    };
    let changed: Vec<String> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    (!changed.is_empty()).then_some(changed)
}

/// What the workspace's `.envrc` loads by name, the host's and the
/// layer's (agent_files::envrc_loads).
fn envrc_reads(layer: &Layer) -> Vec<std::path::PathBuf> {
    let Some(ws) = layer.info.trees.first() else {
        return Vec::new();
    };
    [ws.clone(), layer.upper(0)]
        .iter()
        .filter_map(|top| {
            read_at(
                rustix::fs::open(top, super::changes::dir_flags(), rustix::fs::Mode::empty())
                    .ok()?
                    .as_fd(),
                ".envrc".as_ref(),
                1 << 20,
            )
        })
        .flat_map(|b| {
            let text = String::from_utf8_lossy(&b);
            let mut v = crate::policy::agent_files::envrc_loads(&text);
            v.extend(crate::policy::agent_files::envrc_words(&text));
            v
        })
        .collect()
}

/// The flagged changes of a layer, in order.
pub fn flagged(layer: &Layer, changes: &[Change]) -> Vec<Flag> {
    let reads = config_reads(layer);
    let envrc = envrc_reads(layer);
    let home = host_tool_reads(layer);
    changes
        .iter()
        .filter_map(|c| {
            let file = c.tree == 0 && !matches!(c.kind, Kind::Deleted | Kind::Dir { .. });
            let read = file && reads.iter().any(|h| c.rel.starts_with(h));
            let why = if read {
                Some("host git reads it as its own config or hooks (an include, core.hooksPath, an ignores or attributes file)".to_string())
            } else if file && envrc.contains(&c.rel) {
                Some("direnv loads it from .envrc, and asks again only when .envrc changes".to_string())
            } else if file && home.iter().any(|h| c.rel.starts_with(h)) {
                Some("the home names it: host tools read it as their config (a shell's start-up file, a linked config)".to_string())
            } else {
                why(layer, c)
            };
            why.map(|why| Flag {
                path: shown(layer, c.tree, &c.rel),
                why,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_names() {
        assert!(git_why(Path::new("hooks/pre-commit")).is_some());
        assert!(git_why(Path::new("modules/lib/hooks/post-checkout")).is_some());
        assert!(git_why(Path::new("config")).is_some());
        assert!(git_why(Path::new("worktrees/w/config.worktree")).is_some());
        assert!(git_why(Path::new("objects/info/alternates")).is_some());
        assert!(git_why(Path::new("remotes/origin")).is_some());
        assert!(git_why(Path::new("modules/s/branches/origin")).is_some());
        assert!(git_why(Path::new("refs/remotes/origin")).is_none());
        assert!(git_why(Path::new("info/attributes")).is_some());
        assert!(git_why(Path::new("refs/heads/main")).is_none());
        assert!(git_why(Path::new("index")).is_none());
        assert!(git_why(Path::new("objects/ab/cdef")).is_none());
    }

    #[test]
    fn nested_repositories() {
        assert!(nested_repository(Path::new("sub/.git/config")).is_some());
        assert!(nested_repository(Path::new("a/b/.git/hooks/x")).is_some());
        assert!(nested_repository(Path::new("sub/.git")).is_some());
        assert!(nested_repository(Path::new("sub/.git/HEAD")).is_some());
        assert!(nested_repository(Path::new("sub/.git/objects/ab/cd")).is_none());
        assert!(nested_repository(Path::new(".git/config")).is_none());
        assert!(nested_repository(Path::new("sub/x.git/config")).is_none());
    }
}
