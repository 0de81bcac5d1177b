//! The rollout receipt: one record per host group to file before promoting
//! the sandbox, with every field filled from what qwrap measured.

use super::{Inspect, kernel};
use crate::plan::Isolation;
use crate::policy::{Checkout, Policy};
use crate::verify::{Outcome, Report};
use serde::Serialize;
use std::fmt::Write as _;

/// The commit qwrap was built from (set by build.rs).
pub const RELEASE_COMMIT: &str = env!("QWRAP_RELEASE_COMMIT");

/// The receipt's fields, in the order they print.
#[derive(Debug, Clone, Serialize)]
pub struct Receipt {
    pub date: String,
    pub host: String,
    pub qwrap_version: String,
    pub qwrap_executable: String,
    pub release_commit: String,
    pub linux_distribution: String,
    pub kernel: String,
    pub checkout: String,
    pub backend_reported: String,
    pub enforcement_reported: String,
    pub network_mode: String,
    /// `--network proxied`: the allow-list.
    pub allowed_domains: Vec<String>,
    pub writable_roots: Vec<String>,
    pub builtin_verify: String,
    pub worktree_commit_canary: String,
    pub outside_write_erofs: String,
    pub required_host_sockets: Vec<String>,
    pub device_or_gui_exceptions: String,
    /// The Landlock ABI the sandbox uses (0: none).
    pub landlock_abi: u32,
    /// Layers best-effort could not apply, with why.
    pub degraded_layers: Vec<String>,
    /// verify checks that could not be made, by name.
    pub skipped_checks: Vec<String>,
    /// Failed checks the policy accepts (`accept_degraded`), by name.
    pub accepted_degradations: Vec<String>,
    /// `shared` or `private` (--pid).
    pub pid_namespace: String,
    /// `namespaces`, or `landlock` (Landlock and seccomp alone).
    pub isolation: String,
    /// `host` (the whole host read-only, less the hidden paths) or
    /// `minimal` (only the system directories, roots and exposed paths).
    pub view: String,
    /// `listed` (the allow-list), `readonly` (the whole home), or
    /// `overlay` (--home) where the overlay is had.
    pub home: String,
    /// `live` (writes reach the workspace as they happen) or `review`
    /// (kept in a layer until `qwrap review apply`).
    pub workspace_mode: String,
    /// `overlay`, `private` or `shared`.
    pub cache_mode: String,
    /// Each cache root and how it is mounted (`PATH: overlay`).
    pub caches: Vec<String>,
    /// The resource limits and what holds them; `none`.
    pub limits: String,
    pub hidden_paths: Vec<String>,
    pub removed_variables: Vec<String>,
    pub result: String,
    pub owner: String,
    /// How many host sockets the sandbox masks (for the text's guidance).
    pub masked_sockets: usize,
}

fn outcome_word(o: Option<Outcome>) -> &'static str {
    match o {
        Some(Outcome::Pass) => "pass",
        Some(Outcome::Fail) => "fail",
        Some(Outcome::Accepted) => "accepted",
        Some(Outcome::Skip) => "not-applicable",
        Some(Outcome::NotProvided) => "not-provided",
        None => "not-run",
    }
}

/// Today's date (UTC) as YYYY-MM-DD, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian date.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `PRETTY_NAME` from os-release(5).
pub fn distribution() -> String {
    let text = std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
        .unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// Fills the receipt. `verify` is None when no sandbox could start.
pub fn receipt(policy: &Policy, inspect: &Inspect, verify: Option<&Report>) -> Receipt {
    let check = |name: &str| verify.and_then(|r| r.check(name)).map(|c| c.outcome);
    let builtin = verify.map(|r| {
        r.checks
            .iter()
            .filter(|c| c.name != "worktree-commit")
            .all(|c| c.outcome != Outcome::Fail)
    });
    let promote = inspect.enforcement.is_full() && verify.is_some_and(|r| r.verified);
    Receipt {
        date: today(),
        host: rustix::system::uname().nodename().to_string_lossy().into_owned(),
        qwrap_version: crate::VERSION.into(),
        qwrap_executable: inspect.backend.executable.clone(),
        release_commit: RELEASE_COMMIT.into(),
        linux_distribution: distribution(),
        kernel: kernel(),
        checkout: match policy.git.checkout {
            Checkout::None => "none".into(),
            c => c.to_string(),
        },
        backend_reported: format!("{} {}", inspect.backend.name, inspect.backend.version),
        enforcement_reported: inspect.enforcement.level.into(),
        network_mode: policy.settings.network.value.to_string(),
        // Only where they mean something: a proxied network.
        allowed_domains: if policy.settings.network.value == crate::policy::NetworkMode::Proxied {
            policy
                .allowed_domains
                .iter()
                .map(|d| d.value.to_string())
                .collect()
        } else {
            Vec::new()
        },
        writable_roots: policy
            .writable_roots
            .iter()
            .map(|r| r.path.display().to_string())
            .collect(),
        builtin_verify: match builtin {
            Some(true) => "pass",
            Some(false) => "fail",
            None => "not-run",
        }
        .into(),
        worktree_commit_canary: outcome_word(check("worktree-commit")).into(),
        outside_write_erofs: outcome_word(check("outside-write")).into(),
        required_host_sockets: inspect
            .layers
            .reachable_sockets
            .iter()
            .filter(|s| policy.allowed_sockets.iter().any(|a| &a.value == *s))
            .map(|s| s.display().to_string())
            .collect(),
        device_or_gui_exceptions: match inspect.layers.kind {
            Isolation::LandlockOnly { .. } => {
                "the host's /dev, writable only: null zero full random urandom tty ptmx; \
                 DISPLAY, WAYLAND_DISPLAY and MIR_SOCKET are removed"
            }
            Isolation::Namespaces => {
                "none: /dev holds only null zero full random urandom tty pts ptmx shm; \
                 DISPLAY, WAYLAND_DISPLAY and MIR_SOCKET are removed"
            }
        }
        .into(),
        landlock_abi: inspect.layers.landlock_abi,
        degraded_layers: inspect.layers.degraded(),
        skipped_checks: verify.map(|r| r.skipped_names()).unwrap_or_default(),
        accepted_degradations: verify.map(|r| r.accepted.clone()).unwrap_or_default(),
        pid_namespace: policy.settings.pid.value.to_string(),
        isolation: match inspect.layers.kind {
            Isolation::LandlockOnly { .. } => "landlock".into(),
            Isolation::Namespaces => "namespaces".into(),
        },
        view: policy.settings.view.value.to_string(),
        home: if inspect.layers.home_overlay.is_some() {
            "overlay".into()
        } else if policy.home_listing.is_some() {
            "listed".into()
        } else {
            "readonly".into()
        },
        workspace_mode: if policy.review.is_some() { "review" } else { "live" }.into(),
        cache_mode: policy.settings.cache.value.to_string(),
        caches: inspect
            .layers
            .caches
            .iter()
            .map(|c| {
                let how = match &c.how {
                    crate::plan::CacheHow::Overlay { .. }
                    | crate::plan::CacheHow::InHome(_)
                    | crate::plan::CacheHow::Bare { .. } => "overlay",
                    crate::plan::CacheHow::Private { .. } => "private",
                    crate::plan::CacheHow::Shared => "shared (written through)",
                };
                format!("{}: {how}", c.path.display())
            })
            .collect(),
        limits: match &inspect.layers.limits {
            crate::plan::LayerState::Applied(what) => what.clone(),
            crate::plan::LayerState::Off(why) if why.starts_with("refused") => why.clone(),
            _ => "none".into(),
        },
        hidden_paths: policy
            .hidden
            .iter()
            .map(|h| h.path.display().to_string())
            .collect(),
        removed_variables: policy
            .removed_variables
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect(),
        // promote: full enforcement, and every check passed or is accepted.
        result: if promote { "promote" } else { "hold" }.into(),
        owner: String::new(),
        masked_sockets: inspect.layers.masked_sockets.len(),
    }
}

impl Receipt {
    /// `key: value` lines, ready to paste.
    pub fn text(&self) -> String {
        let v = serde_json::to_value(self).expect("receipt serialises");
        let mut o = String::new();
        for key in FIELDS {
            let value = match &v[key] {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Array(a) => {
                    a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(", ")
                }
                other => other.to_string(),
            };
            // What to write where the tool cannot know.
            let value = match (key, value.is_empty()) {
                ("owner", true) => "(to fill in: who approves this rollout)".into(),
                (
                    "hidden_paths"
                    | "removed_variables"
                    | "degraded_layers"
                    | "skipped_checks"
                    | "accepted_degradations"
                    | "caches"
                    | "allowed_domains",
                    true,
                ) => "none".into(),
                ("required_host_sockets", true) => format!(
                    "none ({} host sockets masked; keep one the agent needs with --allow-socket PATH)",
                    self.masked_sockets
                ),
                _ => value,
            };
            let _ = writeln!(o, "{key}: {value}");
        }
        o
    }
}

/// Field order, as in the rollout checklist.
const FIELDS: [&str; 34] = [
    "date",
    "host",
    "qwrap_version",
    "qwrap_executable",
    "release_commit",
    "linux_distribution",
    "kernel",
    "checkout",
    "backend_reported",
    "enforcement_reported",
    "network_mode",
    "allowed_domains",
    "writable_roots",
    "builtin_verify",
    "worktree_commit_canary",
    "outside_write_erofs",
    "required_host_sockets",
    "device_or_gui_exceptions",
    "landlock_abi",
    "degraded_layers",
    "skipped_checks",
    "accepted_degradations",
    "pid_namespace",
    "isolation",
    "view",
    "home",
    "workspace_mode",
    "cache_mode",
    "caches",
    "limits",
    "hidden_paths",
    "removed_variables",
    "result",
    "owner",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_786), (2026, 11, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn every_field_is_listed_once() {
        let mut f = FIELDS.to_vec();
        f.sort();
        f.dedup();
        assert_eq!(f.len(), FIELDS.len());
    }

    #[test]
    fn every_field_is_in_the_text() {
        let schema = include_str!("receipt.rs");
        let start = schema.find("pub struct Receipt {").unwrap();
        let body = &schema[start..start + schema[start..].find("\n}").unwrap()];
        let mut fields: Vec<&str> = body
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub ")?.split_once(':').map(|(n, _)| n))
            .filter(|n| !n.contains(' ') && *n != "masked_sockets")
            .collect();
        fields.sort_unstable();
        let mut listed = FIELDS.to_vec();
        listed.sort_unstable();
        assert_eq!(fields, listed, "a field the text receipt leaves out");
    }
}
