//! The plan as JSON, for `qwrap plan --json` (docs/plan-json.md).

use super::Plan;

impl Plan {
    /// The plan as `qwrap plan --json` prints it (docs/plan-json.md).
    pub fn to_json(&self) -> String {
        let steps: Vec<serde_json::Value> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                serde_json::json!({
                    "index": i,
                    "family": s.family(),
                    "purpose": s.purpose(),
                    "call": s.to_string(),
                    "step": s,
                })
            })
            .collect();
        serde_json::to_string_pretty(&serde_json::json!({
            "qwrap_version": crate::VERSION,
            "mount_api": self.mount_api,
            "steps": steps,
        }))
        .expect("plan serialises")
    }
}
