//! The house's rules, checked on the source: each module imports only what
//! docs/boundary.md's module table allows (the table is read from there, so
//! the doc and the code cannot disagree), the allowed imports make no
//! circle, no source file is over 500 lines, and `unsafe` code lives only in
//! the qwrap-sys crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// module -> the modules it may import (None: every module).
fn table() -> BTreeMap<String, Option<BTreeSet<String>>> {
    let doc = std::fs::read_to_string(Path::new(ROOT).join("docs/boundary.md")).unwrap();
    let start = doc
        .find("<!-- modules: begin -->")
        .expect("the table's begin marker");
    let end = doc.find("<!-- modules: end -->").expect("the table's end marker");
    let ticked = |cell: &str| -> BTreeSet<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(|w| w.to_string())
            .collect()
    };
    let mut map = BTreeMap::new();
    for row in doc[start..end].lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (modules, imports) = (cells[1], cells[3]);
        let allowed = (imports != "every module").then(|| ticked(imports));
        for m in ticked(modules) {
            map.insert(m, allowed.clone());
        }
    }
    assert!(
        map.len() > 10,
        "the module table was not found in docs/boundary.md"
    );
    map
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top module a file of src/ belongs to.
fn module_of(file: &Path) -> String {
    let rel = file.strip_prefix(Path::new(ROOT).join("src")).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The lines of code (comments left out).
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

#[test]
fn every_module_imports_only_what_the_map_allows() {
    let table = table();
    let mut files = Vec::new();
    rust_files(&Path::new(ROOT).join("src"), &mut files);
    let mut problems = Vec::new();
    for f in &files {
        let module = module_of(f);
        if module == "lib" {
            continue;
        }
        let Some(allowed) = table.get(&module) else {
            problems.push(format!(
                "{}: module `{module}` has no row in docs/boundary.md",
                f.display()
            ));
            continue;
        };
        let Some(allowed) = allowed else { continue };
        let text = std::fs::read_to_string(f).unwrap();
        for line in code_lines(&text) {
            for part in line.split("crate::").skip(1) {
                let used: String = part
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let known = table.contains_key(&used);
                if known && used != module && !allowed.contains(&used) {
                    problems.push(format!(
                        "{}: `{module}` imports `{used}`: {}",
                        f.display(),
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_allowed_imports_make_no_circle() {
    let table = table();
    // Depth-first search for a back edge.
    fn visit(
        m: &str,
        table: &BTreeMap<String, Option<BTreeSet<String>>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut circle = path[i..].to_vec();
            circle.push(m.to_string());
            return Some(circle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        if let Some(Some(next)) = table.get(m) {
            for n in next {
                if let Some(c) = visit(n, table, path, done) {
                    return Some(c);
                }
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for m in table.keys() {
        if let Some(circle) = visit(m, &table, &mut Vec::new(), &mut done) {
            panic!("the module table allows a circle: {}", circle.join(" -> "));
        }
    }
}

/// Functions that were longer than the cap when it replaced the cap on a
/// file's lines, each with its length then: none may grow, and each goes
/// from this list when it is split into its phases.
const LONG_FUNCTIONS: &[(&str, usize)] = &[];

/// Each function's length (its `fn` line to the brace that closes it at the
/// same indentation, as rustfmt lays it out), with its file and name.
fn functions(file: &Path) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let Some(at) = t.find("fn ") else { continue };
        let head = &t[..at];
        let is_fn = head
            .split_whitespace()
            .all(|w| w.starts_with("pub") || matches!(w, "const" | "async" | "unsafe" | "extern"));
        if !is_fn || t.ends_with(';') {
            continue;
        }
        let indent = &l[..l.len() - t.len()];
        let name: String = t[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let end = lines[i + 1..]
            .iter()
            .position(|m| m.starts_with(indent) && m[indent.len()..].starts_with('}'))
            .map_or(1, |n| n + 2);
        out.push((format!("{}:{name}", file.display()), end));
    }
    out
}

/// Files are split by concept, never by size; a function is held to 120
/// lines, so that each does one thing the reader can see at once.
#[test]
fn no_function_is_over_120_lines() {
    let mut files = Vec::new();
    for dir in ["src", "crates", "fuzz/fuzz_targets"] {
        let d = Path::new(ROOT).join(dir);
        if d.is_dir() {
            rust_files(&d, &mut files);
        }
    }
    files.retain(|f| !f.components().any(|c| c.as_os_str() == "target"));
    assert!(files.len() > 100, "found only {} files", files.len());
    let root = format!("{ROOT}/");
    let mut long = Vec::new();
    for f in &files {
        for (name, n) in functions(f) {
            let name = name.trim_start_matches(&root).to_string();
            let cap = LONG_FUNCTIONS
                .iter()
                .find(|(k, _)| *k == name)
                .map_or(120, |(_, c)| *c);
            if n > cap {
                long.push(format!("{name}: {n} lines (at most {cap})"));
            }
        }
    }
    assert!(long.is_empty(), "{}", long.join("\n"));
}

#[test]
fn unsafe_code_lives_only_in_qwrap_sys() {
    let lib = std::fs::read_to_string(Path::new(ROOT).join("src/lib.rs")).unwrap();
    assert!(
        lib.contains("#![forbid(unsafe_code)]"),
        "the library must forbid unsafe code"
    );
    let mut files = Vec::new();
    rust_files(&Path::new(ROOT).join("src"), &mut files);
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            // The binary's entry point: `main` exported unmangled (an unsafe
            // attribute, no unsafe code), the binary's one allowance.
            let entry = f.ends_with("src/main.rs") && code.contains("unsafe(no_mangle)");
            if code.contains("unsafe ") || code.contains("unsafe{") || (code.contains("unsafe(") && !entry) {
                found.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "unsafe outside qwrap-sys:\n{}",
        found.join("\n")
    );
}
