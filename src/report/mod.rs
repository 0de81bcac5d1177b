//! What `inspect`, `verify` and `receipt` print: the data, as text for people
//! and as JSON for tools (schemas in docs/reports.md).

mod receipt;
mod summary;
mod verify_text;

pub use receipt::{Receipt, receipt};
pub use summary::boundary;
use summary::{cache_text, landlock_only_root};
pub use verify_text::verify_text;

use crate::host::HostFacts;
use crate::plan::{Isolation, Layers};
use crate::policy::{Dropped, GitInfo, NetworkMode, Policy, ReadOnlyPath, TmpMode, WritableRoot};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Debug, Clone, Serialize)]
pub struct Backend {
    pub name: &'static str,
    pub version: &'static str,
    pub executable: String,
}

impl Backend {
    pub fn this() -> Self {
        Backend {
            name: "qwrap",
            version: crate::VERSION,
            executable: std::env::current_exe()
                .and_then(std::fs::canonicalize)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "unknown".into()),
        }
    }
}

/// `full` only when a probe sandbox with this exact policy started.
#[derive(Debug, Clone, Serialize)]
pub struct Enforcement {
    pub level: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Enforcement {
    pub fn full() -> Self {
        Enforcement {
            level: "full",
            reason: None,
        }
    }
    pub fn none(reason: String) -> Self {
        Enforcement {
            level: "none",
            reason: Some(reason),
        }
    }
    pub fn is_full(&self) -> bool {
        self.level == "full"
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SettingLine {
    pub name: &'static str,
    pub value: String,
    pub source: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct MountApiLine {
    pub api: crate::host::MountApi,
    pub reason: &'static str,
}

/// The `qwrap inspect` report.
#[derive(Debug, Clone, Serialize)]
pub struct Inspect {
    pub backend: Backend,
    pub enforcement: Enforcement,
    pub boundary: String,
    pub layers: Layers,
    pub network: NetworkMode,
    /// `--network proxied`: the destinations the proxy connects to.
    pub allowed_domains: Vec<crate::policy::Sourced<crate::egress::Rule>>,
    #[serde(serialize_with = "crate::lossy::path")]
    pub target_dir: PathBuf,
    pub writable_roots: Vec<WritableRoot>,
    pub read_only: Vec<ReadOnlyPath>,
    pub dropped: Vec<Dropped>,
    pub git: GitInfo,
    pub temp: TmpMode,
    pub mount_api: MountApiLine,
    pub kernel: String,
    pub settings: Vec<SettingLine>,
    #[serde(serialize_with = "crate::lossy::paths")]
    pub config_files: Vec<PathBuf>,
    pub view: crate::policy::ViewMode,
    /// Minimal view: the host paths shown.
    pub view_entries: Vec<crate::policy::view::ViewEntry>,
    /// The listed home (`--home listed`): what of it is shown, and why.
    pub home_listing: Option<crate::policy::home_view::Listing>,
    /// Paths unreadable inside, and why.
    pub hidden: Vec<crate::policy::HiddenPath>,
    /// Default hidden entries taken out with `--show`.
    #[serde(serialize_with = "crate::lossy::paths")]
    pub shown: Vec<PathBuf>,
    /// Credential files of the home with other names (hard links), which
    /// stay readable wherever the view shows those names.
    pub other_names: Vec<crate::policy::hidden_set::OtherNames>,
    /// Names of the caller's variables removed from the command's
    /// environment (never their values).
    #[serde(serialize_with = "crate::lossy::os_strings")]
    pub removed_variables: Vec<std::ffi::OsString>,
    /// Shell start-up files shown without their credential assignments
    /// (the names removed, never the values).
    pub redacted_rc: Vec<crate::policy::rc_files::Redacted>,
    /// The size of the private /tmp and /dev/shm, each, in bytes (null:
    /// the kernel's default, half of the memory).
    pub tmpfs_size: Option<u64>,
    /// What bounds the cache layer: nothing but `qwrap cache clean`.
    pub cache_layer: String,
    pub notes: Vec<String>,
}

/// The cache layer's note: it has no budget.
pub const CACHE_LAYER_NOTE: &str = "no size budget: what the caches and an overlaid home write inside stays in the workspace's layer on the host (under ~/.local/state/qwrap/caches) until `qwrap cache clean`; `qwrap cache list` shows each layer's size";

/// The running kernel's release.
pub fn kernel() -> String {
    rustix::system::uname().release().to_string_lossy().into_owned()
}

/// Credential files with other names: a heading and a line each (none
/// when there are none).
fn other_names_text(o: &mut String, list: &[crate::policy::hidden_set::OtherNames]) {
    if !list.is_empty() {
        let _ = writeln!(
            o,
            "Credential files with other names (hard links: no mask or rule on this name reaches them; each is readable wherever the view shows it):"
        );
    }
    for l in list {
        let _ = writeln!(
            o,
            "  {}  [{} other name(s): find / -xdev -samefile '{}']",
            l.path.display(),
            l.others,
            l.path.display()
        );
    }
}

impl Inspect {
    pub fn new(
        policy: &Policy,
        host: &HostFacts,
        layers: &crate::plan::Layers,
        enforcement: Enforcement,
        notes: Vec<String>,
    ) -> Self {
        let s = &policy.settings;
        let line = |name: &'static str, value: String, source: &String| SettingLine {
            name,
            value,
            source: source.clone(),
        };
        let mut settings = vec![
            line("network", s.network.value.to_string(), &s.network.source),
            line("pid", s.pid.value.to_string(), &s.pid.source),
            line("tmp", s.tmp.value.to_string(), &s.tmp.source),
            line(
                "die_with_parent",
                s.die_with_parent.value.to_string(),
                &s.die_with_parent.source,
            ),
            line("landlock", s.landlock.value.to_string(), &s.landlock.source),
            line(
                "new_session",
                s.new_session.value.to_string(),
                &s.new_session.source,
            ),
            line(
                "allow_git_config",
                s.allow_git_config.value.to_string(),
                &s.allow_git_config.source,
            ),
            line("cache", s.cache.value.to_string(), &s.cache.source),
            line("home", s.home.value.to_string(), &s.home.source),
            line("review", s.review.value.to_string(), &s.review.source),
            line(
                "allow_agent_files",
                s.allow_agent_files.value.to_string(),
                &s.allow_agent_files.source,
            ),
            line("isolation", s.isolation.value.to_string(), &s.isolation.source),
            line("tmpfs_size", s.tmpfs_size.value.to_string(), &s.tmpfs_size.source),
            line("memory", s.memory.value.to_string(), &s.memory.source),
            line(
                "max_processes",
                s.max_processes.value.to_string(),
                &s.max_processes.source,
            ),
            line("cpus", s.cpus.value.to_string(), &s.cpus.source),
            line("time_limit", s.time_limit.value.to_string(), &s.time_limit.source),
        ];
        settings.extend(s.allow_socket.iter().map(|i| SettingLine {
            name: "allow_socket",
            value: spec_text(&i.value),
            source: i.source.clone(),
        }));
        settings.extend(policy.profiles.iter().map(|p| SettingLine {
            name: "profile",
            value: p.value.clone(),
            source: p.source.clone(),
        }));
        settings.extend(s.include.iter().map(|i| SettingLine {
            name: "include",
            value: spec_text(&i.value),
            source: i.source.clone(),
        }));
        settings.extend(s.read_only.iter().map(|i| SettingLine {
            name: "read_only",
            value: spec_text(&i.value),
            source: i.source.clone(),
        }));
        let layers = layers.clone();
        let mut notes = notes;
        for v in &layers.masked_variables {
            notes.push(format!(
                "${v} names a masked host socket: it is unset inside; --allow-socket \"${v}\" keeps the socket and the variable"
            ));
        }
        Inspect {
            backend: Backend::this(),
            enforcement,
            boundary: boundary(&layers),
            layers,
            network: policy.settings.network.value,
            allowed_domains: policy.allowed_domains.clone(),
            target_dir: policy.workspace.clone(),
            writable_roots: policy.writable_roots.clone(),
            read_only: policy.read_only.to_vec(),
            dropped: policy.dropped.clone(),
            git: policy.git.clone(),
            temp: policy.settings.tmp.value,
            mount_api: MountApiLine {
                api: host.mount_api,
                reason: host.mount_api_reason,
            },
            kernel: kernel(),
            settings,
            config_files: s.config_files.clone(),
            view: policy.settings.view.value,
            view_entries: policy.view_entries.clone(),
            home_listing: policy.home_listing.clone(),
            hidden: policy.hidden.clone(),
            shown: policy.shown.clone(),
            other_names: policy
                .home
                .as_deref()
                .map(|h| crate::policy::hidden_set::other_names(h, &|k| std::env::var_os(k)))
                .unwrap_or_default(),
            removed_variables: policy.removed_variables.clone(),
            redacted_rc: policy.redacted_rc.clone(),
            tmpfs_size: s.tmpfs_size.value.bytes(host.mem_total),
            cache_layer: CACHE_LAYER_NOTE.into(),
            notes,
        }
    }

    /// The layers beyond the mount view, as `Layers:` names them.
    fn layer_list(&self) -> [(&'static str, &crate::plan::LayerState); 13] {
        let l = &self.layers;
        [
            ("isolation", &l.isolation),
            ("landlock filesystem", &l.landlock_filesystem),
            ("landlock scopes", &l.landlock_scopes),
            ("host processes", &l.processes),
            ("seccomp", &l.seccomp),
            ("protected git paths", &l.protected_paths),
            ("host socket masks", &l.socket_masks),
            ("caches", &l.cache_isolation),
            ("home", &l.home),
            ("workspace", &l.workspace),
            ("terminal", &l.terminal),
            ("egress", &l.egress),
            ("limits", &l.limits),
        ]
    }

    pub fn text(&self) -> String {
        let mut o = String::new();
        self.head_text(&mut o);
        self.roots_text(&mut o);
        self.host_text(&mut o);
        self.view_text(&mut o);
        self.secrets_text(&mut o);
        self.tail_text(&mut o);
        o
    }

    /// The backend, how fully it enforces, the boundary, the network.
    fn head_text(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "Backend: {} {} ({})",
            self.backend.name, self.backend.version, self.backend.executable
        );
        match &self.enforcement.reason {
            None => {
                let _ = writeln!(o, "Enforcement: {}", self.enforcement.level);
            }
            Some(r) => {
                let _ = writeln!(o, "Enforcement: {} ({})", self.enforcement.level, first_line(r));
            }
        }
        let _ = writeln!(o, "Boundary: {}", self.boundary);
        if self.network == NetworkMode::Proxied {
            let list: Vec<String> = self
                .allowed_domains
                .iter()
                .map(|d| format!("{} [from {}]", d.value, d.source))
                .collect();
            let list = if list.is_empty() {
                "nothing".to_string()
            } else {
                list.join(", ")
            };
            let _ = writeln!(o, "Network: proxied (only through the proxy, to: {list})");
        } else {
            let _ = writeln!(o, "Network: {}", self.network);
        }
    }

    /// The writable roots, what is read-only inside them, what was left out, git.
    fn roots_text(&self, o: &mut String) {
        let _ = writeln!(o, "Target dir: {}", self.target_dir.display());
        let _ = writeln!(o, "Writable roots:");
        for r in &self.writable_roots {
            let how = self
                .layers
                .caches
                .iter()
                .find(|c| c.path == r.path)
                .map(cache_text)
                .unwrap_or_else(|| landlock_only_root(&self.layers, r));
            let _ = writeln!(
                o,
                "  {}  [{}, from {}{how}]",
                r.path.display(),
                r.reason,
                r.source
            );
        }
        let _ = writeln!(o, "Read-only inside a writable root:");
        if self.read_only.is_empty() {
            let _ = writeln!(o, "  (none)");
        }
        for r in &self.read_only {
            let _ = writeln!(
                o,
                "  {}  [in {}, from {}]",
                r.path.display(),
                r.within.display(),
                r.source
            );
        }
        if !self.dropped.is_empty() {
            let _ = writeln!(o, "Left out:");
            for d in &self.dropped {
                let _ = writeln!(o, "  {}  [{}]", d.path.display(), d.why);
            }
        }
        let roots: Vec<String> = self.git.roots.iter().map(|r| r.display().to_string()).collect();
        let _ = write!(o, "Git metadata: {}", self.git.checkout);
        if !roots.is_empty() {
            let _ = write!(o, " ({})", roots.join(", "));
        }
        if let Some(n) = &self.git.note {
            let _ = write!(o, " [{n}]");
        }
        o.push('\n');
    }

    /// The temp dir, the mount API, the layers, sizes and host sockets.
    fn host_text(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "Temp: {}",
            match (self.temp, &self.layers.kind) {
                (TmpMode::Private, Isolation::Namespaces) => "private (a fresh tmpfs on /tmp)",
                (TmpMode::Private, Isolation::LandlockOnly { .. }) => {
                    "private (the command's own new directory in /tmp, its TMPDIR)"
                }
                (TmpMode::Host, _) => "host (the host's temp directory is a writable root)",
            }
        );
        let unused = match self.layers.kind {
            Isolation::LandlockOnly { .. } => "; unused: no mount",
            Isolation::Namespaces => "",
        };
        let _ = writeln!(
            o,
            "Mount API: {} ({}{unused})",
            self.mount_api.api, self.mount_api.reason
        );
        let l = &self.layers;
        let _ = writeln!(o, "Layers:");
        for (name, state) in self.layer_list() {
            let _ = writeln!(o, "  {name}: {state}");
        }
        let _ = writeln!(
            o,
            "Sizes: /tmp and /dev/shm {}; the cache layer: {}",
            match (self.tmpfs_size, &self.layers.kind) {
                (_, Isolation::LandlockOnly { .. }) =>
                    "not the sandbox's own (no mount without namespaces)".to_string(),
                (Some(b), Isolation::Namespaces) => format!("{} each", crate::plan::limits::human_bytes(b)),
                (None, Isolation::Namespaces) => "the kernel's default each (half of the memory)".to_string(),
            },
            self.cache_layer
        );
        let _ = writeln!(o, "Host Unix sockets:");
        if l.masked_sockets.is_empty() && l.reachable_sockets.is_empty() {
            let _ = writeln!(o, "  (none)");
        }
        for p in &l.masked_sockets {
            // A live socket in a writable root: masked now, but one bound
            // there while the sandbox runs would not be (security.md).
            match self.writable_roots.iter().find(|r| p.starts_with(&r.path)) {
                Some(r) => {
                    let _ = writeln!(
                        o,
                        "  {}  [masked; in the writable root {}]",
                        p.display(),
                        r.path.display()
                    );
                }
                None => {
                    let _ = writeln!(o, "  {}  [masked]", p.display());
                }
            }
        }
        for p in &l.reachable_sockets {
            let _ = writeln!(o, "  {}  [reachable]", p.display());
        }
    }

    /// What the command sees of the host and the home.
    fn view_text(&self, o: &mut String) {
        match self.view {
            crate::policy::ViewMode::Host => {
                let _ = writeln!(o, "View: host (the whole host, read-only)");
                if let Some(l) = &self.home_listing {
                    let _ = writeln!(
                        o,
                        "Home: listed (only these of {} exist inside, read-only, beside the writable roots; every other name is absent{})",
                        l.home.display(),
                        match &l.homes {
                            Some(h) => format!(", and of {} only the home and the roots' tops", h.display()),
                            None => String::new(),
                        }
                    );
                    if l.entries.is_empty() {
                        let _ = writeln!(o, "  (none)");
                    }
                    for e in &l.entries {
                        let _ = writeln!(o, "  {}  [{}]", e.path.display(), e.why);
                    }
                }
            }
            crate::policy::ViewMode::Minimal => {
                let mut top: Vec<String> = self
                    .view_entries
                    .iter()
                    .map(|e| e.path.as_path())
                    .chain(self.writable_roots.iter().map(|r| r.path.as_path()))
                    .chain([std::path::Path::new("/dev"), std::path::Path::new("/tmp")])
                    .filter_map(|p| p.components().nth(1))
                    .map(|c| format!("/{}", c.as_os_str().to_string_lossy()))
                    .collect();
                top.sort();
                top.dedup();
                let _ = writeln!(o, "View: minimal (only these exist at /: {})", top.join(" "));
                for e in &self.view_entries {
                    let _ = writeln!(o, "  {}  [{}]", e.path.display(), e.why);
                }
            }
        }
    }

    /// What stays unreadable or is taken out: hidden paths, variables, start-up files.
    fn secrets_text(&self, o: &mut String) {
        let _ = writeln!(o, "Hidden (unreadable inside: EACCES):");
        if self.hidden.is_empty() {
            let _ = writeln!(o, "  (none)");
        }
        for h in &self.hidden {
            let _ = writeln!(o, "  {}  [{}]", h.path.display(), h.why);
        }
        for p in &self.shown {
            let _ = writeln!(o, "  {}  [shown: taken out with --show]", p.display());
        }
        other_names_text(o, &self.other_names);
        let names: Vec<String> = self
            .removed_variables
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        let _ = writeln!(
            o,
            "Removed variables: {}",
            if names.is_empty() {
                "(none)".into()
            } else {
                names.join(" ")
            }
        );
        let _ = writeln!(
            o,
            "{}",
            match self.layers.kind {
                Isolation::LandlockOnly { .. } => {
                    "Shell start-up files hidden (no redacted copy without a mount; they assign credentials):"
                }
                Isolation::Namespaces => "Shell start-up files redacted (credential assignments removed):",
            }
        );
        if self.redacted_rc.is_empty() {
            let _ = writeln!(o, "  (none)");
        }
        for r in &self.redacted_rc {
            let _ = writeln!(
                o,
                "  {}: {}  [--show {} shows it]",
                r.path.display(),
                r.names.join(" "),
                r.path.display()
            );
        }
    }

    /// The kernel, the settings and their sources, the notes.
    fn tail_text(&self, o: &mut String) {
        let _ = writeln!(o, "Kernel: Linux {}", self.kernel);
        let _ = writeln!(o, "Settings:");
        for s in &self.settings {
            let _ = writeln!(o, "  {} = {}  [from {}]", s.name, s.value, s.source);
        }
        for c in &self.config_files {
            let _ = writeln!(o, "  config file: {}", c.display());
        }
        for n in &self.notes {
            let _ = writeln!(o, "Note: {n}");
        }
        if let Some(r) = &self.enforcement.reason
            && r.contains('\n')
        {
            let _ = writeln!(o, "\n{r}");
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

fn spec_text(s: &crate::policy::PathSpec) -> String {
    match s {
        crate::policy::PathSpec::Literal(p) => p.display().to_string(),
        crate::policy::PathSpec::Template(t) => t.clone(),
    }
}
