//! The hidden set: the credential stores of a home, by class, that stay
//! unreadable wherever the view shows them (the whole home of `--home
//! readonly` and `overlay`; the writable roots, `~/.cache` among them, in
//! every view), and the stores the caller's variables move elsewhere.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Paths under the home directory hidden by default, and why. A trailing
/// `*` matches names in that directory (`.ssh/id_*`, not `*.pub`).
pub const DEFAULT_HIDDEN: &[(&str, &str)] = &[
    (
        ".ssh/id_*",
        "SSH private keys (public keys, known_hosts and config stay readable)",
    ),
    (".gnupg/private-keys-v1.d", "GnuPG private keys"),
    (".gnupg/secring.gpg", "GnuPG 1 secret keyring"),
    (".aws/credentials", "AWS access keys"),
    (".aws/sso/cache", "AWS SSO session tokens"),
    (".config/gcloud", "Google Cloud credentials and tokens"),
    (".azure", "Azure CLI tokens"),
    (".kube/config", "Kubernetes cluster credentials"),
    (".docker/config.json", "container registry credentials"),
    (".netrc", "passwords for HTTP and FTP hosts (curl, git)"),
    (".git-credentials", "git's stored passwords and tokens"),
    (".config/gh/hosts.yml", "GitHub CLI tokens"),
    (".npmrc", "npm registry tokens"),
    (".pypirc", "PyPI upload tokens"),
    (".cargo/credentials.toml", "crates.io token"),
    (".cargo/credentials", "crates.io token (older name)"),
    (".password-store", "pass(1) password store"),
    (".local/share/keyrings", "GNOME keyring"),
    (".mozilla", "Firefox profiles: cookies and saved passwords"),
    (
        ".config/google-chrome",
        "Chrome profiles: cookies and saved passwords",
    ),
    (
        ".config/chromium",
        "Chromium profiles: cookies and saved passwords",
    ),
    // What the whole-home view (`--home readonly`, `overlay`) hides beside
    // those, by class; the listed home shows none of it anyway, but a
    // cache root (`~/.cache`) is shown whole in every view.
    (".cache/huggingface/token", "Hugging Face token"),
    (".ssh/*.pem", "SSH and TLS private keys"),
    (".ssh/*_key", "SSH private keys"),
    (".config/git/credentials", "git's stored passwords and tokens"),
    (".yarnrc", "yarn registry tokens"),
    (".yarnrc.yml", "yarn registry tokens"),
    (".config/pip", "pip's index URLs with tokens"),
    (".pip", "pip's index URLs with tokens"),
    (".gem/credentials", "RubyGems API key"),
    (".m2/settings.xml", "Maven repository passwords"),
    (".m2/settings-security.xml", "Maven master password"),
    (".gradle/gradle.properties", "Gradle repository credentials"),
    (".nuget", "NuGet API keys"),
    (".config/NuGet", "NuGet API keys"),
    (".config/composer/auth.json", "Composer tokens"),
    (".composer/auth.json", "Composer tokens"),
    (".bundle/config", "Bundler source credentials"),
    (".config/pypoetry/auth.toml", "Poetry repository credentials"),
    (".docker", "container registry credentials and TLS keys"),
    (".config/containers/auth.json", "container registry credentials"),
    (".kube", "Kubernetes cluster credentials"),
    (".minikube", "minikube's client keys"),
    (".config/hub", "hub's GitHub token"),
    (".config/glab-cli", "GitLab CLI tokens"),
    (".config/gh", "GitHub CLI tokens"),
    (".aws", "AWS keys, STS caches and SSO tokens"),
    (".oci", "Oracle Cloud keys"),
    (".config/doctl", "DigitalOcean tokens"),
    (".config/hcloud", "Hetzner Cloud tokens"),
    (".terraform.d/credentials.tfrc.json", "Terraform Cloud tokens"),
    (".vault-token", "Vault token"),
    (".pulumi/credentials.json", "Pulumi tokens"),
    (".config/op", "1Password CLI sessions"),
    (".config/Bitwarden CLI", "Bitwarden vault"),
    (".claude/.credentials.json", "Claude Code's credentials"),
    (".claude.json", "Claude Code's account and keys"),
    (".codex/auth.json", "Codex's credentials"),
    (".qwen/oauth_creds.json", "Qwen Code's credentials"),
    (".gemini/oauth_creds.json", "Gemini CLI's credentials"),
    (".config/github-copilot", "Copilot's tokens"),
    (".aider.conf.yml", "aider's API keys"),
    (".huggingface/token", "Hugging Face token"),
    (".kaggle", "Kaggle API key"),
    (".databrickscfg", "Databricks tokens"),
    (".snowsql", "Snowflake passwords"),
    (".config/configstore", "Firebase and other CLIs' tokens"),
    (".local/share/com.vercel.cli", "Vercel tokens"),
    (".config/stripe", "Stripe keys"),
    (".cloudflared", "Cloudflare tunnel credentials"),
    (".config/ngrok", "ngrok token"),
    (".ngrok2", "ngrok token"),
    (".fly", "Fly.io tokens"),
    (".env", "a dotenv file of secrets"),
    (".env.local", "a dotenv file of secrets"),
    (".*_history", "shell and REPL histories (typed passwords, tokens)"),
    (".lesshst", "less's search history"),
    (".pgpass", "PostgreSQL passwords"),
    (".my.cnf", "MySQL passwords"),
    (".config/rclone", "rclone's remotes' keys"),
    (".s3cfg", "S3 keys"),
    (".boto", "Google Cloud Storage and S3 keys"),
    (".wgetrc", "wget's passwords"),
    (".curlrc", "curl's passwords"),
    (
        ".config/BraveSoftware",
        "Brave profiles: cookies and saved passwords",
    ),
    (".thunderbird", "Thunderbird profiles: saved passwords"),
    (".config/fish/fish_variables", "fish's universal variables"),
    (".config/environment.d", "the session's environment"),
    (".pam_environment", "the session's environment"),
    (".*.bak", "backup copies"),
    (
        ".local/state/qwrap/caches",
        "every workspace's cache and home layers: what their sandboxes wrote, logins included",
    ),
    (
        ".local/state/qwrap/reviews",
        "every workspace's review layers: what their sandboxes wrote, pending review",
    ),
];

/// Credential stores a variable moves (a colon list names several), and
/// what of each is hidden.
const MOVED_STORES: &[(&str, &str, &str)] = &[
    ("XDG_CONFIG_HOME", "gh", "GitHub CLI tokens"),
    ("XDG_CONFIG_HOME", "gcloud", "Google Cloud credentials and tokens"),
    (
        "XDG_CONFIG_HOME",
        "git/credentials",
        "git's stored passwords and tokens",
    ),
    (
        "XDG_CONFIG_HOME",
        "containers/auth.json",
        "container registry credentials",
    ),
    ("XDG_CONFIG_HOME", "op", "1Password CLI sessions"),
    ("XDG_CONFIG_HOME", "rclone", "rclone's remotes' keys"),
    ("GNUPGHOME", "private-keys-v1.d", "GnuPG private keys"),
    ("GNUPGHOME", "secring.gpg", "GnuPG 1 secret keyring"),
    ("CARGO_HOME", "credentials.toml", "crates.io token"),
    ("CARGO_HOME", "credentials", "crates.io token (older name)"),
    ("DOCKER_CONFIG", "", "container registry credentials and TLS keys"),
    ("KUBECONFIG", "", "Kubernetes cluster credentials"),
    ("AWS_SHARED_CREDENTIALS_FILE", "", "AWS access keys"),
    ("AWS_CONFIG_FILE", "", "AWS settings and SSO sessions"),
    ("PASSWORD_STORE_DIR", "", "pass(1) password store"),
    ("GH_CONFIG_DIR", "", "GitHub CLI tokens"),
    (
        "GOOGLE_APPLICATION_CREDENTIALS",
        "",
        "a Google Cloud service account key",
    ),
    ("NPM_CONFIG_USERCONFIG", "", "npm registry tokens"),
    ("PIP_CONFIG_FILE", "", "pip's index URLs with tokens"),
    ("CLOUDSDK_CONFIG", "", "Google Cloud credentials and tokens"),
    ("AZURE_CONFIG_DIR", "", "Azure CLI tokens"),
    ("CODEX_HOME", "auth.json", "Codex's credentials"),
    (
        "CLAUDE_CONFIG_DIR",
        ".credentials.json",
        "Claude Code's credentials",
    ),
    ("HF_HOME", "token", "Hugging Face token"),
    ("HF_TOKEN_PATH", "", "Hugging Face token"),
    ("NETRC", "", "passwords for HTTP and FTP hosts (curl, git)"),
    ("HISTFILE", "", "the shell's history (typed passwords, tokens)"),
    (
        "VAULT_CONFIG_PATH",
        "",
        "HashiCorp Vault's settings and token helper",
    ),
    ("TF_CLI_CONFIG_FILE", "", "Terraform registry tokens"),
    ("OCI_CLI_CONFIG_FILE", "", "Oracle Cloud API keys"),
    ("BW_CONFIG_DIR", "", "Bitwarden CLI sessions"),
];

/// The stores the caller's variables moved, that exist.
pub(super) fn moved_stores(env: &dyn Fn(&str) -> Option<OsString>) -> Vec<(PathBuf, &'static str)> {
    let mut out = Vec::new();
    for &(var, rel, why) in MOVED_STORES {
        let Some(v) = env(var) else { continue };
        for part in std::env::split_paths(&v).filter(|p| p.is_absolute()) {
            let p = if rel.is_empty() { part } else { part.join(rel) };
            if std::fs::symlink_metadata(&p).is_ok() {
                out.push((p, why));
            }
        }
    }
    out
}

/// The default hidden set for a home directory: the entries that exist,
/// with their reasons.
pub fn default_hidden(home: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut out = Vec::new();
    // One listing of the home directory says which entries can exist at
    // all (start-up: one getdents instead of a stat per entry).
    let Ok(top) = std::fs::read_dir(home) else {
        return out;
    };
    let top: Vec<std::ffi::OsString> = top.flatten().map(|e| e.file_name()).collect();
    for &(rel, why) in DEFAULT_HIDDEN {
        let first = rel.split('/').next().unwrap_or(rel);
        if !first.contains('*') && !top.iter().any(|t| t == first) {
            continue;
        }
        // A `*` in the last name: any text there (never a `.pub` key).
        match rel.rsplit_once('/').map_or(rel, |(_, n)| n).split_once('*') {
            Some((stem, tail)) => {
                let dir = match rel.rsplit_once('/') {
                    Some((d, _)) => home.join(d),
                    None => home.to_path_buf(),
                };
                // The home's own names are listed already.
                let names: Vec<std::ffi::OsString> = if dir == home {
                    top.clone()
                } else {
                    let Ok(entries) = std::fs::read_dir(&dir) else {
                        continue;
                    };
                    entries.flatten().map(|e| e.file_name()).collect()
                };
                let mut found: Vec<PathBuf> = names
                    .iter()
                    .filter(|n| {
                        let n = n.to_string_lossy();
                        n.len() >= stem.len() + tail.len()
                            && n.starts_with(stem)
                            && n.ends_with(tail)
                            && !n.ends_with(".pub")
                    })
                    .map(|n| dir.join(n))
                    .collect();
                found.sort();
                out.extend(found.into_iter().map(|p| (p, why)));
            }
            None => {
                let p = home.join(rel);
                if std::fs::symlink_metadata(&p).is_ok() {
                    out.push((p, why));
                }
            }
        }
    }
    out
}

/// A credential file of the home's classes that has other names (hard
/// links): no mount or Landlock rule on this name reaches them, so each is
/// readable wherever the view shows it. Found by its link count; where the
/// other names are, only a walk of the filesystem could say.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OtherNames {
    #[serde(serialize_with = "crate::lossy::path")]
    pub path: PathBuf,
    /// How many names besides this one.
    pub others: u64,
}

/// The credential files of `home` (the default set's, and the stores the
/// caller's variables move) that have other names: each file, and the
/// files directly in each directory (the first 256), never through a link.
pub fn other_names(home: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<OtherNames> {
    use std::os::unix::fs::MetadataExt;
    let linked = |p: &Path| {
        std::fs::symlink_metadata(p)
            .ok()
            .filter(|m| m.is_file() && m.nlink() > 1)
            .map(|m| OtherNames {
                path: p.to_path_buf(),
                others: m.nlink() - 1,
            })
    };
    let mut out = Vec::new();
    for (p, _) in default_hidden(home).into_iter().chain(moved_stores(env)) {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => {
                let Ok(entries) = std::fs::read_dir(&p) else {
                    continue;
                };
                out.extend(entries.flatten().take(256).filter_map(|e| linked(&e.path())));
            }
            _ => out.extend(linked(&p)),
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}
