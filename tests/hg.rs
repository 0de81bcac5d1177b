//! Mercurial's repositories below the writable roots (policy/git_guard.rs,
//! supervise/planted.rs): host hg runs the hooks and extensions a
//! repository's `hgrc` names, as host git runs a git dir's. The `hgrc` of
//! one there at the start (and what it `%include`s) is read-only inside;
//! one made inside with a config goes aside at exit, and each made is
//! said. As root and unprivileged, on both mount APIs and under
//! `--isolation landlock`.

mod common;

use common::*;

#[test]
fn hg_config_is_read_only_and_planted_repositories_go_aside() {
    let modes = ["new", "legacy", "landlock"];
    for (who, mode) in Who::all().into_iter().flat_map(|w| modes.map(|m| (w, m))) {
        let f = Fixture::new(who);
        f.mkdir("ws/.hg/store");
        // (Landlock lets nothing new be made at a guarded top.)
        f.mkdir("ws/src");
        f.write("ws/.hg/requires", "store\nrevlogv1\n", 0o644);
        f.write("ws/.hg/hgrc", "[ui]\n%include ../team.hgrc\n", 0o644);
        f.write("ws/team.hgrc", "[ui]\n", 0o644);
        let hooks = "printf '[hooks]\\npre-status = touch m\\n'";
        let script = format!(
            "{hooks} >> .hg/hgrc; {hooks} >> team.hgrc; {hooks} > .hg/hgrc-not-shared; \
             mkdir -p src/sub/.hg src/plain/.hg && {hooks} > src/sub/.hg/hgrc; \
             mv .hg .hg.old && mkdir .hg && {hooks} > .hg/hgrc && echo MOVED; echo ok"
        );
        let o = match mode {
            "landlock" => run_landlock(&f, &[], &script),
            api => f.run_sh(api, &[], &script),
        };
        let what = format!("{who:?} {mode}");
        assert!(stdout(&o).contains("ok"), "{what}: {}", stderr(&o));
        for p in [".hg/hgrc", "team.hgrc", ".hg/hgrc-not-shared", "src/sub/.hg/hgrc"] {
            let text = std::fs::read_to_string(f.ws().join(p)).unwrap_or_default();
            assert!(!text.contains("hooks"), "{what}: {p}: {text}");
        }
        assert!(
            f.ws().join("src/sub/.hg.qwrap-held/hgrc").exists(),
            "{what}: {}",
            stderr(&o)
        );
        assert!(f.ws().join("src/plain/.hg").is_dir(), "{what}");
        let said = format!(
            "qwrap: hg: {}: a Mercurial repository made inside",
            f.ws().join("src/plain/.hg").display()
        );
        assert!(stderr(&o).contains(&said), "{what}: {}", stderr(&o));
    }
}
