//! git's rules for what a host git will trust, applied to what a sandbox
//! wrote in a git dir before the warden copies it to the host (or review
//! applies it), as git vets what a remote sends: ref
//! names by `check-ref-format`'s rules, ref values object names or
//! symbolic refs into `refs/`, reflogs line by line, `packed-refs` entry by
//! entry, the index through index.rs; state files that choose a
//! program (a merge strategy, a todo list's `exec` lines the host's copy
//! did not have) are not carried. A refusal says why.

mod index;
pub mod names;
mod sha1;
pub mod sha256;

pub use index::Vetted;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The objects an index names that the host's does not, each with the
/// type host git takes it for (index.rs).
pub fn index_objects(data: &[u8], host: Option<&[u8]>) -> Vec<(String, &'static str)> {
    index::new_objects(data, host)
}

/// Whether an index hides a change from host `git status` (index.rs).
pub fn index_hides(data: &[u8], sparse: bool) -> bool {
    index::hides(data, sparse)
}

/// The largest commit or tag host git is given: it reads each whole into
/// memory (`git status` its HEAD, `git log` every one), and a compressed
/// object of 13 MB inflated to 3 GB in every host `git status`. A merge's
/// or squash's message, the user's next commit's, is held to it too.
pub const COMMIT_MAX: u64 = 16 << 20;

/// What may reach the host, given the host's current copy of the file.
pub fn vet(rel: &Path, data: &[u8], host: Option<&[u8]>, sparse: bool) -> Result<Vetted, String> {
    let parts: Vec<&[u8]> = rel.iter().map(OsStr::as_bytes).collect();
    let keep = |r: Result<(), String>| r.map(|()| Vetted::Keep);
    if shown_text(&parts) && host != Some(data) {
        plain_text(data)?;
    }
    // A merge's or squash's message is the user's next commit's.
    if matches!(parts.as_slice(), [b"MERGE_MSG" | b"SQUASH_MSG"]) && data.len() as u64 > COMMIT_MAX {
        return Err(format!(
            "it is longer than the {} MiB of a commit qwrap carries (host git commit takes it for the user's message)",
            COMMIT_MAX >> 20
        ));
    }
    // `git am` decodes a mail's encoded words (`=?UTF-8?Q?=1B…?=`) and
    // shows the subject.
    if parts.first() == Some(&&b"rebase-apply"[..]) && host != Some(data) {
        for (charset, word) in encoded_words(data) {
            shown_word(&charset, &word)?;
        }
    }
    match parts.as_slice() {
        [b"refs", b"replace", ..] if host != Some(data) => Err(REPLACE.into()),
        [b"refs", b"notes", ..] if host != Some(data) => Err(NOTES.into()),
        [b"refs", ..] => keep(ref_name(rel).and_then(|()| ref_value(data))),
        [b"logs", b"HEAD"] => keep(reflog(data)),
        [b"logs", ..] => keep(
            rel.strip_prefix("logs")
                .map_err(|_| String::new())
                .and_then(ref_name)
                .and_then(|()| reflog(data)),
        ),
        [b"HEAD"] => keep(ref_value(data).and_then(|()| head_on_a_branch(data))),
        [b"FETCH_HEAD"] => keep(lines(data, |l| oid_prefix(l).map(drop)).and_then(|()| {
            let merged = data.split(|c| *c == b'\n').filter(|l| !l.is_empty() && !contains(l, b"\tnot-for-merge\t"));
            heads_bounded(merged.count())
        })),
        // A notes merge's commit writes the ref it names: only notes.
        [b"NOTES_MERGE_REF"] => keep(ref_value(data).and_then(|()| {
            if data.starts_with(b"ref: refs/notes/") {
                Ok(())
            } else {
                Err("a notes merge names a ref that is no notes ref (git notes merge --commit writes it)".into())
            }
        })),
        // Never empty: an empty MERGE_HEAD left the host "still merging".
        [n] if n.ends_with(b"_HEAD") || *n == b"AUTO_MERGE" => keep(if data.is_empty() {
            Err("it is empty, which git never leaves it".into())
        } else {
            lines(data, |l| is_oid(l).then_some(()))
                .and_then(|()| heads_bounded(data.iter().filter(|c| **c == b'\n').count()))
        }),
        [b"packed-refs"] => packed_refs(data, host.unwrap_or_default()),
        [b"shallow"] => match host {
            None => Err("it would cut the host's history short (git would take the commits it names for roots)".into()),
            // Deepened (lines gone) as a fetch does; a new root would cut
            // the history the host has short (the user's own commits).
            Some(h) => keep(shallow_only_less(data, h)),
        },
        [n] if *n == b"index" || n.starts_with(b"sharedindex.") => index::vet(data, sparse, host),
        [b"sequencer", b"opts"] => keep(no_strategy(data)),
        [b"MERGE_RR"] => keep(merge_rr(data)),
        [b"rebase-merge", b"strategy" | b"strategy_opts"] => {
            Err("it chooses a merge strategy, a program".into())
        }
        [b"rebase-merge" | b"sequencer", b"git-rebase-todo" | b"todo"] => keep(
            exec_lines(data, host)
                .and_then(|()| no_replace_ref(data, host))
                .and_then(|()| todo_revisions(data, host)),
        ),
        // What was done runs no more, but host `git status` resolves it.
        [b"rebase-merge", b"done"] => keep(todo_revisions(data, host)),
        // `git am` walks every number up to `last`.
        [b"rebase-apply", b"next" | b"last"] => keep(small_number(data)),
        [b"rebase-merge", b"update-refs"] => keep(update_refs(data, host)),
        [b"rebase-apply", b"apply-opt"] => keep(apply_opts(data, host)),
        [b"rebase-merge" | b"rebase-apply" | b"sequencer", b"gpg_sign_opt"] => keep(gpg_sign(data, host)),
        [b"rebase-merge" | b"rebase-apply", b"head-name"] => keep(head_name(data, host)),
        // Object ids git passes on as revisions (`git stash apply
        // AUTOSTASH`, `git checkout ONTO`): a `:/regex` or an option there
        // was git's to run.
        [
            b"rebase-merge" | b"rebase-apply",
            b"autostash" | b"onto" | b"orig-head" | b"abort-safety" | b"stopped-sha" | b"amend",
        ]
        | [b"sequencer", b"head" | b"abort-safety"]
        | [b"BISECT_EXPECTED_REV"] => keep(oid_or_empty(data)),
        [b"BISECT_START"] => keep(bisect_start(data)),
        [b"BISECT_TERMS"] => keep(bisect_terms(data)),
        [b"rr-cache", ..] => Err(
            "a rerere resolution: host git would take it in its next merge unasked (the directory alone turns rerere on)"
                .into(),
        ),
        _ => Ok(Vetted::Keep),
    }
}

/// Whether `rel` is vetted (read whole) before it reaches the host; other
/// files are copied as they are, through a fixed buffer.
pub fn vetted(rel: &Path) -> bool {
    let first = rel.iter().next().map(OsStr::as_bytes).unwrap_or_default();
    let single = rel.iter().count() == 1;
    matches!(
        first,
        b"refs" | b"logs" | b"sequencer" | b"rebase-merge" | b"rr-cache"
    ) || first == b"rebase-apply"
        || (single
            && (first.ends_with(b"_HEAD")
                || first.starts_with(b"BISECT_")
                || [&b"MERGE_MSG"[..], b"SQUASH_MSG", b"MERGE_MODE"].contains(&first)
                || [
                    &b"HEAD"[..],
                    b"AUTO_MERGE",
                    b"MERGE_RR",
                    b"NOTES_MERGE_REF",
                    b"packed-refs",
                    b"index",
                    b"shallow",
                ]
                .contains(&first)
                || first.starts_with(b"sharedindex.")))
}

/// The state files whose text host git shows (`git status`'s "started
/// from", "last commands done", `git bisect log`, a merge's message).
fn shown_text(parts: &[&[u8]]) -> bool {
    match parts {
        [n] => {
            n.starts_with(b"BISECT_")
                || [&b"MERGE_MSG"[..], b"SQUASH_MSG", b"MERGE_MODE", b"FETCH_HEAD"].contains(n)
        }
        [d, ..] => [&b"rebase-merge"[..], b"rebase-apply", b"sequencer"].contains(d),
        [] => false,
    }
}

/// Text without the characters a terminal acts on or that hide text (an
/// escape sequence forged a clean `git status` over a modified file):
/// tabs and line ends only, and no byte an 8-bit terminal takes for a C1
/// control where the text is no UTF-8.
fn plain_text(data: &[u8]) -> Result<(), String> {
    let mut control = false;
    for chunk in data.utf8_chunks() {
        let valid = chunk.valid();
        control |= valid.char_indices().any(|(i, c)| {
            let crlf = c == '\r' && valid[i + 1..].starts_with('\n');
            c != '\t' && c != '\n' && !crlf && crate::lossy::unshowable(c)
        });
        control |= chunk.invalid().iter().any(|b| crate::lossy::raw_c1(*b));
    }
    if control {
        Err("it holds characters a terminal would act on, or that hide text, when host git shows it".into())
    } else {
        Ok(())
    }
}

/// An encoded word as `git am` shows it: decoded, then converted from its
/// charset (UTF-7 spells ESC without one byte of it, ISO-8859-8 has the
/// bidirectional marks); only the charsets whose text can be checked here.
fn shown_word(charset: &[u8], word: &[u8]) -> Result<(), String> {
    let acts = || {
        "an encoded word in a mail's headers decodes to characters a terminal would act on (git am shows the subject)"
            .to_string()
    };
    match charset.to_ascii_lowercase().as_slice() {
        b"utf-8" | b"utf8" | b"us-ascii" => plain_text(word).map_err(|_| acts()),
        // Each byte its own code point: C1 at 0x80-0x9f, the soft hyphen at 0xad.
        b"iso-8859-1" | b"latin1" => {
            if word.iter().any(|b| *b >= 0x80 && (*b < 0xa0 || *b == 0xad)) {
                return Err(acts());
            }
            plain_text(word).map_err(|_| acts())
        }
        other => Err(format!(
            "an encoded word in charset {:?}, which git converts before it shows it: only UTF-8, US-ASCII and ISO-8859-1 are looked at",
            String::from_utf8_lossy(other)
        )),
    }
}

/// The charset and text of each RFC 2047 encoded word in `data`
/// (`=?CHARSET?Q?TEXT?=` or `?B?`), decoded; more than git decodes is no
/// harm here.
fn encoded_words(data: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let find = |h: &[u8], n: &[u8]| h.windows(n.len()).position(|w| w == n);
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(i) = find(rest, b"=?") {
        rest = &rest[i + 2..];
        let Some(q) = rest.iter().position(|c| *c == b'?') else {
            break;
        };
        let after = &rest[q + 1..];
        if after.len() < 2 || after[1] != b'?' {
            continue;
        }
        let body = &after[2..];
        let Some(end) = find(body, b"?=") else { break };
        // RFC 2231 lets a language follow the charset: `UTF-8*en`.
        let charset = rest[..q]
            .split(|c| *c == b'*')
            .next()
            .unwrap_or_default()
            .to_vec();
        match after[0].to_ascii_uppercase() {
            b'Q' => out.push((charset, q_decoded(&body[..end]))),
            b'B' => out.push((charset, b_decoded(&body[..end]))),
            _ => {}
        }
        rest = &body[end + 2..];
    }
    out
}

/// RFC 2047's Q encoding: `_` a space, `=XX` a byte.
fn q_decoded(t: &[u8]) -> Vec<u8> {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::new();
    let mut i = 0;
    while i < t.len() {
        match (
            t[i],
            t.get(i + 1).copied().and_then(hex),
            t.get(i + 2).copied().and_then(hex),
        ) {
            (b'=', Some(h), Some(l)) => {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
            (b'_', ..) => out.push(b' '),
            (c, ..) => out.push(c),
        }
        i += 1;
    }
    out
}

/// Base64, the B encoding; what is not of its alphabet is skipped.
fn b_decoded(t: &[u8]) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for v in t.iter().filter_map(|c| value(*c)) {
        acc = acc << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// An object id (or nothing, where git writes none).
fn oid_or_empty(data: &[u8]) -> Result<(), String> {
    let t = data.trim_ascii_end();
    if t.is_empty() || is_oid(t) {
        Ok(())
    } else {
        Err("it is not an object id, which host git would take as a revision".into())
    }
}

/// Where a bisection started: the branch, or the commit of a detached
/// HEAD (`git bisect reset` checks it out).
fn bisect_start(data: &[u8]) -> Result<(), String> {
    let t = data.trim_ascii_end();
    let branch = !t.starts_with(b"-")
        && !t.contains(&b'\n')
        && ref_name(Path::new(OsStr::from_bytes(&[&b"refs/heads/"[..], t].concat()))).is_ok();
    if is_oid(t) || branch {
        Ok(())
    } else {
        Err("it is neither a branch nor an object id, which `git bisect reset` checks out".into())
    }
}

/// The two terms of a bisection, words git accepts for them.
fn bisect_terms(data: &[u8]) -> Result<(), String> {
    let ok = data.trim_ascii_end().split(|c| *c == b'\n').all(|w| {
        !w.is_empty()
            && !w.starts_with(b"-")
            && w.iter().all(|c| c.is_ascii_alphanumeric() || b"-_".contains(c))
    });
    if ok {
        Ok(())
    } else {
        Err("its terms are not words git accepts".into())
    }
}

/// Whether a directory made inside may be made on the host.
pub fn dir_ok(rel: &Path) -> bool {
    let mut parts = rel.iter();
    match parts.next().map(OsStr::as_bytes) {
        Some(b"refs") => ref_name(rel).is_ok(),
        Some(b"logs") => parts.all(|c| component_ok(c.as_bytes())),
        _ => true,
    }
}

/// `check-ref-format`'s rules, for a path below the git dir.
fn ref_name(rel: &Path) -> Result<(), String> {
    let name = rel.as_os_str().as_bytes();
    let ok =
        name.starts_with(b"refs/") && rel.iter().all(|c| component_ok(c.as_bytes())) && !name.ends_with(b".");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "\"{}\" is not a name git gives a ref",
            crate::lossy::shown(rel.as_os_str())
        ))
    }
}

/// A character shown as blank space: Unicode's space separators and the
/// braille blank (ASCII's space git refuses in a ref's name already).
fn blank(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{2800}' | '\u{3000}'
    )
}

fn component_ok(c: &[u8]) -> bool {
    // `git status` prints a branch's name: nothing a terminal acts on or
    // that hides text, in UTF-8 or as raw bytes.
    // Nor a blank that is no ASCII space (`main` followed by U+3000 was
    // listed as a second `main`, and took the user's next commit).
    let acts = c.utf8_chunks().any(|chunk| {
        chunk
            .valid()
            .chars()
            .any(|ch| crate::lossy::unshowable(ch) || blank(ch))
            || chunk.invalid().iter().any(|b| crate::lossy::raw_c1(*b))
    });
    !acts
        && !c.is_empty()
        && !c.starts_with(b".")
        && !c.ends_with(b".lock")
        && !c.windows(2).any(|w| w == b".." || w == b"@{")
        && c != b"@"
        && c.iter()
            .all(|b| *b > 0x20 && *b != 0x7f && !b"~^:?*[\\".contains(b))
}

/// An object name as git writes one (40 or 64 lower-case hex digits).
pub fn is_oid(s: &[u8]) -> bool {
    (s.len() == 40 || s.len() == 64) && s.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// The object name a line starts with, and the rest.
fn oid_prefix(l: &[u8]) -> Option<&[u8]> {
    [64, 40].into_iter().find_map(|n| {
        let (head, rest) = (l.get(..n)?, l.get(n..)?);
        (is_oid(head) && (rest.is_empty() || rest[0] == b' ' || rest[0] == b'\t')).then_some(rest)
    })
}

/// The most commits a `*_HEAD` (or `FETCH_HEAD`'s lines for merging) may
/// name: host git compares each with each to conclude the merge, walking
/// the history below each (30,000 heads held `git commit` for minutes, and
/// so did 1,000 heads of 350 commits each); an octopus merge of more than
/// 16 branches is all but unknown.
const HEADS_MOST: usize = 16;

fn heads_bounded(n: usize) -> Result<(), String> {
    if n > HEADS_MOST {
        return Err(format!(
            "it names {n} commits to merge, more than {HEADS_MOST}: host git compares each with each to conclude the merge"
        ));
    }
    Ok(())
}

/// Whether `hay` holds `needle`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Each line, ended by a newline, passes `f`.
fn lines(data: &[u8], mut f: impl FnMut(&[u8]) -> Option<()>) -> Result<(), String> {
    let Some(body) = data.strip_suffix(b"\n") else {
        return if data.is_empty() {
            Ok(())
        } else {
            Err("its last line is not ended".into())
        };
    };
    for (i, l) in body.split(|c| *c == b'\n').enumerate() {
        if l.contains(&0) || f(l).is_none() {
            return Err(format!("line {} is not one git writes there", i + 1));
        }
    }
    Ok(())
}

/// An object name, or `ref: ` and a ref's name.
fn ref_value(data: &[u8]) -> Result<(), String> {
    let v = data.strip_suffix(b"\n").unwrap_or(data);
    if is_oid(v) {
        return Ok(());
    }
    match v.strip_prefix(b"ref: ") {
        Some(target) => ref_name(Path::new(OsStr::from_bytes(target))),
        None => Err("it holds neither an object name nor a symbolic ref".into()),
    }
}

/// HEAD as git lets it be: an object name (detached) or a branch (`git
/// symbolic-ref` refuses HEAD outside `refs/heads/`: on a tag, the user's
/// next commit moved the tag).
fn head_on_a_branch(data: &[u8]) -> Result<(), String> {
    match data.strip_prefix(b"ref: ") {
        Some(t) if !t.starts_with(b"refs/heads/") => Err("HEAD names a ref that is no branch".into()),
        _ => Ok(()),
    }
}

/// The longest reflog line carried: host git reads a reflog backwards a
/// block at a time, each put before what it holds of the line, so a line
/// costs it the square of its length (one of 128 MB held `git status` on
/// a detached HEAD, `git checkout -` and `git stash pop` past two minutes);
/// git's own lines are a subject's first line long.
pub const REFLOG_LINE_MOST: usize = 64 << 10;

/// `OLD NEW IDENT TIME ZONE\tMESSAGE` lines.
fn reflog(data: &[u8]) -> Result<(), String> {
    // `git reflog`, `git log -g` and `git stash list` print its messages.
    plain_text(data)?;
    if data.split(|c| *c == b'\n').any(|l| l.len() > REFLOG_LINE_MOST) {
        return Err(format!(
            "a line is longer than the {} KiB qwrap carries (host git reads a reflog backwards, at the square of a line's length)",
            REFLOG_LINE_MOST >> 10
        ));
    }
    lines(data, |l| {
        let rest = oid_prefix(l)?.strip_prefix(b" ")?;
        oid_prefix(rest).map(drop)
    })
}

/// A `shallow` that names no root the host's does not.
fn shallow_only_less(data: &[u8], host: &[u8]) -> Result<(), String> {
    let hosts: std::collections::HashSet<&[u8]> = host.split(|c| *c == b'\n').collect();
    match data.split(|c| *c == b'\n').all(|l| hosts.contains(l)) {
        true => Ok(()),
        false => Err("it names a root the host's does not (host git would hide the history below it, the user's own commits too)".into()),
    }
}

/// `# pack-refs with: …`, then `OID NAME` and `^OID` lines.
/// Why a replace ref made or changed inside stays there.
/// Why notes made or changed inside stay there.
const NOTES: &str = "notes made or changed inside: host git log shows them under every commit they name, the user's own too, text the command chose (escape sequences included)";

const REPLACE: &str = "a replace ref makes host git show another object wherever the history names this one (host git status and diff would hide a change in the work tree)";

/// `packed-refs` entry by entry; a replace ref only as the host's copy
/// has it: another is left out (with its peeled line), the rest carried,
/// so that the refs `git pack-refs` moved there still reach the host.
/// The refs a `packed-refs` may name, at most: host git reads them all
/// for `git branch` and a decorated `git log` (4.6 million, under the size
/// bound, held `git log -1 --decorate` 65 s and `git branch` past 4 GB).
/// Twice the host's own, where that is more.
pub const PACKED_MOST: usize = 250_000;

fn packed_refs(data: &[u8], host: &[u8]) -> Result<Vetted, String> {
    let count = |d: &[u8]| {
        d.split(|c| *c == b'\n')
            .filter(|l| !l.is_empty() && l[0] != b'#' && l[0] != b'^')
            .count()
    };
    let most = PACKED_MOST.max(2 * count(host));
    if count(data) > most {
        return Err(format!(
            "it names more than {most} refs (host git reads them all for `git branch` and a decorated `git log`)"
        ));
    }
    lines(data, |l| {
        if l.starts_with(b"# pack-refs with:") {
            return Some(());
        }
        if let Some(peeled) = l.strip_prefix(b"^") {
            return is_oid(peeled).then_some(());
        }
        let name = oid_prefix(l)?.strip_prefix(b" ")?;
        ref_name(Path::new(OsStr::from_bytes(name))).ok()
    })?;
    in_order(data)?;
    let hosts: Vec<&[u8]> = host.split(|c| *c == b'\n').collect();
    // What each of the host's refs peels to: a tag's peeled line is taken
    // on trust by host git (`git describe` named another commit).
    let host_peeled: std::collections::HashSet<(&[u8], &[u8])> = hosts
        .windows(2)
        .filter(|w| w[1].starts_with(b"^"))
        .map(|w| (w[0], w[1]))
        .collect();
    let mut out = Vec::with_capacity(data.len());
    let mut dropping = false;
    let mut unpeeled = false;
    let mut last: &[u8] = b"";
    for l in data.split_inclusive(|c| *c == b'\n') {
        let line = l.strip_suffix(b"\n").unwrap_or(l);
        if !line.starts_with(b"^") {
            let name = oid_prefix(line)
                .and_then(|r| r.strip_prefix(b" "))
                .unwrap_or_default();
            dropping = (name.starts_with(b"refs/replace/") || name.starts_with(b"refs/notes/"))
                && !hosts.contains(&line);
            last = line;
        } else if !dropping && !host_peeled.contains(&(last, line)) {
            // Not the host's: left out, and git peels the ref itself.
            unpeeled = true;
            continue;
        }
        if !dropping {
            out.extend_from_slice(l);
        }
    }
    if unpeeled {
        out = without_peel_traits(&out);
    }
    Ok(if out == data {
        Vetted::Keep
    } else {
        Vetted::Rewritten(out)
    })
}

/// A `packed-refs` whose header no longer says its peeled lines are
/// complete (`peeled`, `fully-peeled`): git then reads a ref's object to
/// peel it where no line says.
fn without_peel_traits(data: &[u8]) -> Vec<u8> {
    let Some(rest) = data.strip_prefix(b"# pack-refs with:") else {
        return data.to_vec();
    };
    let end = rest.iter().position(|c| *c == b'\n').unwrap_or(rest.len());
    let traits: Vec<&[u8]> = rest[..end]
        .split(|c| *c == b' ')
        .filter(|t| !t.is_empty() && *t != b"peeled" && *t != b"fully-peeled")
        .collect();
    let mut out = b"# pack-refs with:".to_vec();
    for t in traits {
        out.push(b' ');
        out.extend_from_slice(t);
    }
    out.push(b' ');
    out.extend_from_slice(&rest[end..]);
    out
}

/// A `packed-refs` as git writes it: the header first, each name once and
/// in byte order. git looks a name up by binary search where the header
/// says `sorted`: lines out of order or twice made host git take a branch
/// of a checkout outside the roots, or the stash, from where the command
/// put it, or find none at all.
fn in_order(data: &[u8]) -> Result<(), String> {
    let mut last: Option<&[u8]> = None;
    for (n, l) in data.split(|c| *c == b'\n').filter(|l| !l.is_empty()).enumerate() {
        if l.starts_with(b"#") {
            if n > 0 {
                return Err("its header is not its first line".into());
            }
            continue;
        }
        if l.starts_with(b"^") {
            if last.is_none() {
                return Err("a peeled line that follows no ref".into());
            }
            continue;
        }
        let name = oid_prefix(l)
            .and_then(|r| r.strip_prefix(b" "))
            .unwrap_or_default();
        if last.is_some_and(|p| p >= name) {
            return Err("its refs are not each once and in order, as git writes them".into());
        }
        last = Some(name);
    }
    Ok(())
}

/// A cherry-pick's or revert's options without a strategy (a program git
/// runs as `git-merge-NAME`).
fn no_strategy(data: &[u8]) -> Result<(), String> {
    // Anywhere: git's config syntax takes `[options] strategy = …` on one
    // line, and quoting or a continuation can split the key.
    let text = String::from_utf8_lossy(data).to_ascii_lowercase();
    if text.contains("strategy") || text.contains("\\\n") {
        return Err("it chooses a merge strategy, a program".into());
    }
    if text.contains("gpg") {
        return Err("it chooses the key host git signs with".into());
    }
    Ok(())
}

/// rerere's record of conflicted paths (`HASH[.N]\tPATH\0`): each path
/// one git accepts in a work tree (rerere reads and writes the file it
/// names: an absolute or `..` path would reach outside the repository).
fn merge_rr(data: &[u8]) -> Result<(), String> {
    let Some(body) = data.strip_suffix(b"\0") else {
        return if data.is_empty() {
            Ok(())
        } else {
            Err("its last record is not ended".into())
        };
    };
    for rec in body.split(|c| *c == 0) {
        let Some(tab) = rec.iter().position(|c| *c == b'\t') else {
            return Err("a record is not one git writes".into());
        };
        let (id, path) = (&rec[..tab], &rec[tab + 1..]);
        let id = id.split(|c| *c == b'.').next().unwrap_or_default();
        if !is_oid(id) || !index::path_ok(path) {
            return Err(format!(
                "it names {:?}, a path outside the work tree",
                String::from_utf8_lossy(path)
            ));
        }
    }
    Ok(())
}

/// A todo list whose `exec` lines were all in the host's copy.
fn exec_lines(data: &[u8], host: Option<&[u8]>) -> Result<(), String> {
    let execs = |d: &[u8]| -> Vec<Vec<u8>> {
        d.split(|c| *c == b'\n')
            .map(|l| l.trim_ascii())
            // The command word ends at any whitespace, as git parses it.
            .filter(|l| {
                let word = l.split(|c| c.is_ascii_whitespace()).next().unwrap_or_default();
                word == b"x" || word == b"exec"
            })
            .map(<[u8]>::to_vec)
            .collect()
    };
    let known = host.map(execs).unwrap_or_default();
    match execs(data).into_iter().find(|e| !known.contains(e)) {
        None => Ok(()),
        Some(e) => Err(format!(
            "it runs a command the host's did not ({:?}): review it before `git rebase --continue`",
            String::from_utf8_lossy(&e)
        )),
    }
}

/// `git am`'s options for `git apply` (shell-quoted words, as git writes
/// them): only those that choose how a patch applies within the work
/// tree. `--build-fake-ancestor=FILE` and `--index-output` write FILE
/// anywhere; `--directory` and `--unsafe-paths` move the paths.
fn apply_opts(data: &[u8], host: Option<&[u8]>) -> Result<(), String> {
    if host == Some(data) {
        return Ok(());
    }
    let words = sq_dequote(data).ok_or("it cannot be read as git writes it")?;
    let ok = |w: &str| {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        w.strip_prefix("-p").is_some_and(digits)
            || w.strip_prefix("-C").is_some_and(digits)
            || w.strip_prefix("--whitespace=")
                .is_some_and(|v| ["nowarn", "warn", "fix", "strip", "error", "error-all"].contains(&v))
            || [
                "--ignore-space-change",
                "--ignore-whitespace",
                "--reject",
                "--quiet",
                "-q",
            ]
            .contains(&w)
            || w.starts_with("--exclude=")
            || w.starts_with("--include=")
    };
    match words.iter().find(|w| !ok(w)) {
        None => Ok(()),
        Some(w) => Err(format!(
            "it gives `git apply` an option git am does not write ({w:?}): review it before `git am --continue`"
        )),
    }
}

/// Shell-quoted words as git's `sq_quote_argv` writes them (`'a' 'b'\''c'`).
fn sq_dequote(data: &[u8]) -> Option<Vec<String>> {
    let text = std::str::from_utf8(data).ok()?.trim_end_matches('\n');
    let (mut words, mut cur, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '\'') => quoted = false,
            (true, c) => cur.push(c),
            (false, '\'') => (quoted, any) = (true, true),
            (false, '\\') => cur.push(chars.next()?),
            (false, ' ') if any => {
                words.push(std::mem::take(&mut cur));
                any = false;
            }
            (false, ' ') => {}
            (false, _) => return None,
        }
    }
    if quoted {
        return None;
    }
    if any {
        words.push(cur);
    }
    Some(words)
}

/// The signing option a rebase or `am` passes on: `-S` and a key id, one
/// word, nothing git would take for another option.
fn gpg_sign(data: &[u8], host: Option<&[u8]>) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let key = text.trim_end_matches('\n').strip_prefix("-S");
    let ok = host == Some(data)
        || data.is_empty()
        || key.is_some_and(|k| !k.starts_with('-') && k.chars().all(|c| c.is_ascii_graphic()));
    if ok {
        Ok(())
    } else {
        Err("it is not a signing key as git writes one".into())
    }
}

/// The branch a rebase or `am` ends on: `detached HEAD` or a branch.
fn head_name(data: &[u8], host: Option<&[u8]>) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let name = text.trim_end_matches('\n');
    let branch = name.starts_with("refs/heads/") && ref_name(Path::new(name)).is_ok();
    if host == Some(data) || name == "detached HEAD" || branch {
        Ok(())
    } else {
        Err(format!("it ends the rebase on {name:?}, not a branch"))
    }
}

/// The revisions of a todo list's lines the host's copy lacked: host git
/// resolves each (`git status` every line of `done` and the todo, to show
/// them), and a `:/regex` or `^{/regex}` there searched every commit
/// message without end. Only object ids (as git writes them, abbreviated)
/// and labels; a line's text after them is its subject.
fn todo_revisions(data: &[u8], host: Option<&[u8]>) -> Result<(), String> {
    // Host `git status` resolves every line: a bound, as on a patch count.
    let count = data.iter().filter(|c| **c == b'\n').count();
    if count > TODO_MAX {
        return Err(format!(
            "it has more than {TODO_MAX} lines, each of which host git status would resolve"
        ));
    }
    // Host git writes the rest of the list again after each line, comments
    // too: lines times bytes is what a `--continue` writes.
    if host != Some(data) && (count as u64).saturating_mul(data.len() as u64) > TODO_WORK {
        return Err(format!(
            "{count} lines of {} bytes: host git would write the rest of it again after each line, {} GiB in all",
            data.len(),
            (count as u64).saturating_mul(data.len() as u64) >> 31
        ));
    }
    let known: Vec<&[u8]> = host
        .map(|h| h.split(|c| *c == b'\n').collect())
        .unwrap_or_default();
    for line in data.split(|c| *c == b'\n') {
        if known.contains(&line) {
            continue;
        }
        let mut words = line
            .split(|c: &u8| c.is_ascii_whitespace())
            .filter(|w| !w.is_empty());
        let Some(command) = words.next() else { continue };
        let args: Vec<&[u8]> = match command {
            c if c.starts_with(b"#") => continue,
            b"x" | b"exec" | b"b" | b"break" | b"noop" => continue,
            b"u" | b"update-ref" => continue,
            // `merge [-C OID] LABEL...`: every parent up to the comment (an
            // octopus names several).
            b"m" | b"merge" => words
                .take_while(|w| !w.starts_with(b"#"))
                .filter(|w| *w != b"-C" && *w != b"-c")
                .collect(),
            // `fixup [-C|-c] OID SUBJECT`: the subject (`fixup! ...`) is text.
            b"f" | b"fixup" => words.filter(|w| *w != b"-C" && *w != b"-c").take(1).collect(),
            _ => words.take(1).collect(),
        };
        if let Some(bad) = args.iter().find(|a| !todo_word(a)) {
            return Err(format!(
                "a line names {:?}, not an object id or a label: host git would resolve it as a revision",
                String::from_utf8_lossy(bad)
            ));
        }
    }
    Ok(())
}

/// The most lines of a todo list or `done`, and the most patches of an
/// `am`: far beyond any rebase, far below what holds host git up.
const TODO_MAX: usize = 100_000;

/// The most a todo list's lines times its bytes: host git writes about
/// half of that as a stopped rebase goes on (8 GiB: a few seconds).
const TODO_WORK: u64 = 1 << 34;

/// A patch number of `git am` (`next`, `last`).
fn small_number(data: &[u8]) -> Result<(), String> {
    let t = data.trim_ascii_end();
    match std::str::from_utf8(t).ok().and_then(|t| t.parse::<usize>().ok()) {
        Some(n) if n <= TODO_MAX => Ok(()),
        _ => Err(format!("it is not a patch number up to {TODO_MAX}")),
    }
}

/// An object id as a todo list gives it (4 to 64 hex digits), or a label
/// (letters, digits, `.`, `_`, `-`, `/`, not first a `-`).
fn todo_word(w: &[u8]) -> bool {
    let hex = (4..=64).contains(&w.len()) && w.iter().all(u8::is_ascii_hexdigit);
    let label = !w.starts_with(b"-")
        && !w.windows(2).any(|p| p == b"..")
        && w.iter().all(|c| c.is_ascii_alphanumeric() || b"._-/".contains(c));
    hex || label
}

/// `update-refs`: each ref a branch (`--update-refs` moves the branches
/// of the rebased commits), each value an object id.
fn update_refs(data: &[u8], host: Option<&[u8]>) -> Result<(), String> {
    if host == Some(data) {
        return Ok(());
    }
    lines(data, |l| {
        let branch = l.starts_with(b"refs/heads/") && ref_name(Path::new(OsStr::from_bytes(l))).is_ok();
        (is_oid(l) || branch).then_some(())
    })
    .map_err(|_| "it moves a ref other than a branch at the rebase's end".to_string())
}

/// A todo or `update-refs` naming a replace ref the host's copy did not:
/// host git's `--continue` would write it, and a replace ref hides an
/// edit wherever the history names the replaced object.
fn no_replace_ref(data: &[u8], host: Option<&[u8]>) -> Result<(), String> {
    let replaces = |d: &[u8]| -> Vec<Vec<u8>> {
        d.split(|c| *c == b'\n')
            .filter(|l| l.windows(13).any(|w| w == b"refs/replace/"))
            .map(|l| l.trim_ascii().to_vec())
            .collect()
    };
    let known = host.map(replaces).unwrap_or_default();
    match replaces(data).into_iter().find(|r| !known.contains(r)) {
        None => Ok(()),
        Some(r) => Err(format!(
            "it writes a replace ref the host's did not ({:?}): {REPLACE}",
            String::from_utf8_lossy(&r)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vb(rel: &str, data: &[u8]) -> Result<Vetted, String> {
        vet(Path::new(rel), data, None, false)
    }

    #[test]
    fn a_notes_merge_names_only_a_notes_ref() {
        assert!(vb("NOTES_MERGE_REF", b"ref: refs/notes/commits\n").is_ok());
        assert!(
            vb(
                "NOTES_MERGE_REF",
                b"ref: refs/replace/0123456789012345678901234567890123456789\n"
            )
            .is_err()
        );
        assert!(vb("NOTES_MERGE_REF", b"ref: refs/heads/main\n").is_err());
    }

    #[test]
    fn an_index_that_hides_a_change_is_told() {
        // An index of one entry, `f`, its assume-unchanged bit set or not.
        let index = |flags: u16| {
            let mut d = b"DIRC".to_vec();
            d.extend(2u32.to_be_bytes());
            d.extend(1u32.to_be_bytes());
            d.extend([0u8; 24]);
            d.extend(0o100644u32.to_be_bytes());
            d.extend([0u8; 12]);
            d.extend([0u8; 20]);
            d.extend((flags | 1).to_be_bytes());
            d.push(b'f');
            while !(d.len() - 12).is_multiple_of(8) {
                d.push(0);
            }
            let sum = sha1::sha1(&d);
            d.extend(sum);
            d
        };
        assert!(!index_hides(&index(0), false));
        assert!(index_hides(&index(0x8000), false));
        assert!(index_hides(b"not an index", false), "what cannot be read hides");
    }

    #[test]
    fn what_hides_text_or_drives_a_terminal_is_refused_in_every_spelling() {
        // Raw 8-bit C1 (CSI) where the text is no UTF-8.
        assert!(vb("rebase-merge/git-rebase-todo", b"pick 0123abc s2 \x9b2J\n").is_err());
        assert!(vb("logs/HEAD", b"x\x9b31m\n").is_err());
        assert!(vb("MERGE_MSG", b"caf\xe9 latin-1\n").is_ok());
        // Bidirectional and invisible marks.
        for mark in [
            "\u{202e}",
            "\u{61c}",
            "\u{ad}",
            "\u{2028}",
            "\u{206f}",
            "\u{e0001}",
        ] {
            assert!(
                v("rebase-merge/done", &format!("pick 0123abc s{mark}x\n")).is_err(),
                "{mark:?}"
            );
            assert!(
                v(&format!("refs/heads/x{mark}y"), &format!("{A}\n")).is_err(),
                "{mark:?}"
            );
        }
        assert!(v("refs/heads/caf\u{e9}", &format!("{A}\n")).is_ok());
        let raw = Path::new(OsStr::from_bytes(b"refs/heads/x\x9b2J"));
        assert!(vet(raw, format!("{A}\n").as_bytes(), None, false).is_err());
        // FETCH_HEAD's descriptions become a merge's message.
        assert!(v("FETCH_HEAD", &format!("{A}\t\tbranch 'x\u{1b}[2J' of y\n")).is_err());
        assert!(v("FETCH_HEAD", &format!("{A}\t\tbranch 'x' of y\n")).is_ok());
        // A mail's encoded words, as `git am` decodes them.
        let mail = |subject: &str| format!("From: A <a@b>\nSubject: {subject}\n\nbody\n");
        assert!(v("rebase-apply/0002", &mail("=?UTF-8?Q?s2=1B]0;T=07=1B[31mRED?=")).is_err());
        assert!(v("rebase-apply/0002", &mail("=?utf-8?b?czIbWzJK?=")).is_err());
        assert!(v("rebase-apply/0002", &mail("=?UTF-8?Q?caf=C3=A9_au_lait?=")).is_ok());
        assert!(v("rebase-apply/0002", &mail("=?UTF-8?Q?=E2=80=AE?=")).is_err());
        assert!(v("rebase-apply/0002", &mail("=?UTF-7?Q?x+ABsAWw-2J?=")).is_err());
        assert!(
            v(
                "rebase-apply/0002",
                &mail("=?ISO-8859-8?Q?invoice=FE=FDgpj.exe?=")
            )
            .is_err()
        );
        assert!(v("rebase-apply/0002", &mail("=?ISO-8859-1?Q?caf=E9?=")).is_ok());
        assert!(v("rebase-apply/0002", &mail("=?ISO-8859-1?Q?x=9B2J?=")).is_err());
    }

    #[test]
    fn a_todo_s_merge_parents_are_all_looked_at_and_a_fixup_s_subject_is_text() {
        let octopus = "merge -C 0123abcd 0123abcd :/(.*)(.*)\\1\\2Z\n";
        assert!(v("rebase-merge/git-rebase-todo", octopus).is_err());
        assert!(
            v(
                "rebase-merge/git-rebase-todo",
                "merge -C 0123abcd one two # Merge\n"
            )
            .is_ok()
        );
        let autosquash =
            "pick 0123abc feat\nfixup 4567def fixup! feat(api): a thing\nfixup -C 89abcde amend! feat\n";
        assert!(v("rebase-merge/git-rebase-todo", autosquash).is_ok());
        assert!(v("rebase-merge/git-rebase-todo", "fixup :/x subject\n").is_err());
    }

    #[test]
    fn a_todo_host_git_would_write_again_without_end_is_refused() {
        let long = format!(
            "{}pick 0123abc s\n",
            format!("#{}\n", "x".repeat(1000)).repeat(5_000)
        );
        assert!(v("rebase-merge/git-rebase-todo", &long).is_err());
        let rebase = "pick 0123abc a subject of usual length for a commit\n".repeat(2000);
        assert!(v("rebase-merge/git-rebase-todo", &rebase).is_ok());
    }

    #[test]
    fn revisions_git_passes_on_are_object_ids_or_branches() {
        let regex = ":/(.*)(.*)(.*)\\1\\2\\3Z\n";
        assert!(v("rebase-merge/autostash", regex).is_err());
        assert!(v("rebase-merge/autostash", "--index\n").is_err());
        assert!(v("rebase-merge/autostash", &format!("{A}\n")).is_ok());
        assert!(v("rebase-apply/onto", "junk\n").is_err());
        assert!(v("BISECT_START", regex).is_err());
        assert!(v("BISECT_START", "--pathspec-from-file=/etc/hostname\n").is_err());
        assert!(v("BISECT_START", "main\n").is_ok());
        assert!(v("BISECT_START", &format!("{A}\n")).is_ok());
        assert!(v("BISECT_TERMS", "bad\ngood\n").is_ok());
        assert!(v("BISECT_TERMS", "--x\ngood\n").is_err());
    }

    #[test]
    fn a_todo_names_object_ids_and_labels_only() {
        let ok = "pick 0123abc Fix: a thing (:/x)\nmerge -C 0123abcd onto # Merge\nreset onto\nlabel branch-point\nfixup -C 89abcdef\n# comment :/x\nexec make\n";
        assert!(
            todo_revisions(ok.as_bytes(), None).is_ok(),
            "{:?}",
            todo_revisions(ok.as_bytes(), None)
        );
        for bad in [
            "pick :/(a*)*(a*)*\\2\\1x\n",
            "reset :/x\n",
            "merge -C 0123abc :/x\n",
            "pick HEAD^{/x}\n",
            "revert --foo\n",
        ] {
            assert!(v("rebase-merge/done", bad).is_err(), "{bad}");
            assert!(v("sequencer/todo", bad).is_err(), "{bad}");
        }
        assert!(v("rebase-merge/update-refs", &format!("refs/heads/x\n{A}\n{A}\n")).is_ok());
        assert!(
            v(
                "rebase-merge/update-refs",
                &format!("refs/notes/commits\n{A}\n{A}\n")
            )
            .is_err()
        );
        assert!(v("sequencer/opts", "[options]\n\tgpg-sign = K\n").is_err());
        let log = format!("{A} {A} a <a@b> 1 +0000\tcommit: \u{1b}]0;x\u{7}\n");
        assert!(v("logs/HEAD", &log).is_err());
        assert!(v("rebase-apply/msg", "x \u{1b}[2J\n").is_err());
        assert!(v("rebase-apply/0001", "From x\nSubject: ok\n").is_ok());
    }

    #[test]
    fn names_and_counts_host_git_shows_or_walks_are_bounded() {
        assert!(v("refs/heads/m\u{9b}1A", A).is_err());
        assert!(v("refs/heads/rlo\u{202e}txt", A).is_err());
        assert!(v("HEAD", "ref: refs/tags/v1\n").is_err());
        let many: String = (0..PACKED_MOST + 1)
            .map(|n| format!("{A} refs/heads/b{n:07}\n"))
            .collect();
        assert!(v("packed-refs", &many).is_err());
        assert!(v("HEAD", "ref: refs/heads/main\n").is_ok());
        for blank in ["\u{a0}", "\u{2002}", "\u{2800}", "\u{3000}"] {
            assert!(v(&format!("refs/heads/main{blank}"), A).is_err(), "{blank:?}");
        }
        assert!(v("refs/heads/zw\u{200b}sp", A).is_err());
        assert!(v("refs/heads/caf\u{e9}", &format!("{A}\n")).is_ok());
        assert!(v("HEAD", "ref: refs/heads/m\u{9b}1A\n").is_err());
        assert!(v("MERGE_HEAD", "").is_err());
        let heads = |n: usize| format!("{A}\n").repeat(n);
        assert!(v("MERGE_HEAD", &heads(HEADS_MOST)).is_ok());
        assert!(v("MERGE_HEAD", &heads(HEADS_MOST + 1)).is_err());
        let fetched = |n: usize, how: &str| format!("{A}\t{how}\tbranch 'x' of y\n").repeat(n);
        assert!(v("FETCH_HEAD", &fetched(HEADS_MOST + 1, "")).is_err());
        assert!(v("FETCH_HEAD", &fetched(5000, "not-for-merge")).is_ok());
        assert!(v("FETCH_HEAD", &fetched(1, "")).is_ok());
        assert!(v("rebase-apply/last", "2147483647\n").is_err());
        assert!(v("rebase-apply/last", "12\n").is_ok());
        let long = "t a\n".repeat(TODO_MAX + 1);
        assert!(v("rebase-merge/done", &long).is_err());
    }

    #[test]
    fn text_host_git_shows_holds_no_escape_sequence() {
        assert!(v("BISECT_LOG", "git bisect start\n# bad: [x] y\n").is_ok());
        assert!(v("BISECT_LOG", "\u{1b}[1A\u{1b}[2Knothing to commit\n").is_err());
        assert!(v("MERGE_MSG", "Merge branch 'x'\r\n\n\tdetail\n").is_ok());
        assert!(v("MERGE_MSG", "a\rb").is_err());
        // The user's next commit's message: a commit's bound.
        assert!(v("SQUASH_MSG", &"a".repeat(COMMIT_MAX as usize + 1)).is_err());
        assert!(v("SQUASH_MSG", &"a".repeat(1000)).is_ok());
        assert!(v("rebase-merge/done", "pick 0123456 \u{9b}2J\n").is_err());
        assert!(v("sequencer/todo", "pick 0123456 x\n").is_ok());
    }

    #[test]
    fn am_and_rebase_options_are_those_git_writes() {
        assert!(v("rebase-apply/apply-opt", "").is_ok());
        assert!(v("rebase-apply/apply-opt", "'-p2' '--whitespace=fix' '-C1'\n").is_ok());
        assert!(
            v(
                "rebase-apply/apply-opt",
                "'--build-fake-ancestor=/home/u/.profile'"
            )
            .is_err()
        );
        assert!(v("rebase-apply/apply-opt", "'--directory=../..'").is_err());
        assert!(v("rebase-apply/apply-opt", "'-p2' '--index-output=/x'").is_err());
        assert!(v("rebase-apply/apply-opt", "'unclosed").is_err());
        assert!(v("rebase-merge/gpg_sign_opt", "-SABCDEF12\n").is_ok());
        assert!(v("rebase-merge/gpg_sign_opt", "--exec=x").is_err());
        assert!(v("rebase-merge/gpg_sign_opt", "-S--exec=x").is_err());
        assert!(v("rebase-merge/head-name", "refs/heads/main\n").is_ok());
        assert!(v("rebase-merge/head-name", "detached HEAD\n").is_ok());
        assert!(
            v(
                "rebase-apply/head-name",
                "refs/replace/0123456789abcdef0123456789abcdef01234567\n"
            )
            .is_err()
        );
        assert_eq!(
            sq_dequote(b"'a b' 'c'\\''d'"),
            Some(vec!["a b".to_string(), "c'd".to_string()])
        );
    }

    #[test]
    fn a_todo_writing_a_replace_ref_and_a_split_index_are_refused() {
        let todo = "pick 0123456 a\nupdate-ref refs/replace/0123456789abcdef0123456789abcdef01234567\n";
        assert!(v("rebase-merge/git-rebase-todo", todo).is_err());
        assert!(
            v(
                "rebase-merge/git-rebase-todo",
                "pick 0123456 a\nupdate-ref refs/heads/x\n"
            )
            .is_ok()
        );
        assert!(v("rebase-merge/update-refs", "refs/replace/x\n").is_err());
        assert!(v("rr-cache/abc/postimage", "x").is_err());
        // An index of no entries whose only extension is `link`.
        let mut idx = b"DIRC\0\0\0\x02\0\0\0\0".to_vec();
        idx.extend_from_slice(b"link\0\0\0\x14");
        idx.extend_from_slice(&[0u8; 20]);
        let sum = super::sha1::sha1(&idx);
        idx.extend_from_slice(&sum);
        let e = vet(Path::new("index"), &idx, None, false).unwrap_err();
        assert!(e.contains("split index"), "{e}");
    }

    fn v(rel: &str, data: &str) -> Result<Vetted, String> {
        vet(Path::new(rel), data.as_bytes(), None, false)
    }

    const A: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn refs_and_logs() {
        assert_eq!(v("refs/heads/main", &format!("{A}\n")), Ok(Vetted::Keep));
        assert_eq!(v("HEAD", "ref: refs/heads/main\n"), Ok(Vetted::Keep));
        assert!(v("HEAD", "ref: ../../etc/passwd\n").is_err());
        assert!(v("refs/heads/main", "garbage\n").is_err());
        assert!(v("refs/heads/..x", &format!("{A}\n")).is_err());
        assert!(v("refs/heads/a b", &format!("{A}\n")).is_err());
        let line = format!("{A} {A} t <t@t> 1700000000 +0000\tcommit: $(touch x)\n");
        assert_eq!(v("logs/HEAD", &line), Ok(Vetted::Keep));
        assert_eq!(v("logs/refs/heads/main", &line), Ok(Vetted::Keep));
        assert!(v("logs/HEAD", "export X=1\n").is_err());
        assert!(v("logs/HEAD", &line[..line.len() - 1]).is_err());
        // A line whose length host git pays for squared.
        let long = format!("{}{}\n", line.trim_end(), "x".repeat(REFLOG_LINE_MOST));
        assert!(v("logs/HEAD", &long).is_err());
        // A tag's peeled line the host lacks is left out, and the header
        // no longer says the peeled lines are complete: host git peels it
        // itself (a forged one made `git describe` name another commit).
        let tagged = format!("# pack-refs with: peeled fully-peeled sorted \n{A} refs/tags/v1\n^{A}\n");
        assert_eq!(
            v("packed-refs", &tagged),
            Ok(Vetted::Rewritten(
                format!("# pack-refs with: sorted \n{A} refs/tags/v1\n").into_bytes()
            ))
        );
        let same = vet(
            Path::new("packed-refs"),
            tagged.as_bytes(),
            Some(tagged.as_bytes()),
            false,
        );
        assert_eq!(same, Ok(Vetted::Keep));
        let other = format!(
            "# pack-refs with: peeled fully-peeled sorted \n{A} refs/tags/v1\n^{}\n",
            "1".repeat(40)
        );
        assert!(matches!(
            vet(
                Path::new("packed-refs"),
                other.as_bytes(),
                Some(tagged.as_bytes()),
                false
            ),
            Ok(Vetted::Rewritten(_))
        ));
        assert!(v("packed-refs", &format!("{A} ../x\n")).is_err());
        // Each name once and in order, the header first.
        let sorted = format!("# pack-refs with: sorted \n{A} refs/heads/a\n{A} refs/heads/b\n");
        assert_eq!(v("packed-refs", &sorted), Ok(Vetted::Keep));
        assert!(v("packed-refs", &format!("{A} refs/heads/b\n{A} refs/heads/a\n")).is_err());
        assert!(v("packed-refs", &format!("{A} refs/heads/a\n{A} refs/heads/a\n")).is_err());
        assert!(
            v(
                "packed-refs",
                &format!("{A} refs/heads/a\n# pack-refs with: sorted\n")
            )
            .is_err()
        );
        assert!(v("packed-refs", &format!("^{A}\n{A} refs/heads/a\n")).is_err());
        assert_eq!(v("ORIG_HEAD", &format!("{A}\n")), Ok(Vetted::Keep));
        assert!(dir_ok(Path::new("refs/heads/feature")));
        assert!(!dir_ok(Path::new("refs/heads/.hidden")));
    }

    /// A replace ref stays inside unless the host has it as it is; in
    /// packed-refs too. `shallow` only where the host's repository is.
    #[test]
    fn replace_refs_and_shallow_stay_inside() {
        let value = format!("{A}\n");
        assert!(v("refs/replace/0123", &value).is_err());
        assert!(v("refs/notes/commits", &value).is_err());
        let same = vet(
            Path::new("refs/replace/0123"),
            value.as_bytes(),
            Some(value.as_bytes()),
            false,
        );
        assert_eq!(same, Ok(Vetted::Keep));
        let packed = format!("{A} refs/heads/main\n{A} refs/replace/{A}\n^{A}\n{A} refs/tags/t\n");
        let others = format!("{A} refs/heads/main\n{A} refs/tags/t\n");
        assert_eq!(
            v("packed-refs", &packed),
            Ok(Vetted::Rewritten(others.into_bytes()))
        );
        let host = packed.clone();
        let kept = vet(
            Path::new("packed-refs"),
            packed.as_bytes(),
            Some(host.as_bytes()),
            false,
        );
        assert_eq!(kept, Ok(Vetted::Keep));
        assert!(v("shallow", &value).is_err());
        // Deepened as a fetch does: carried; a new root: the user's own
        // history hidden below it.
        let (b, c) = ("1".repeat(40), "2".repeat(40));
        let host = format!("{A}\n{b}\n");
        let shallow = |new: &str| vet(Path::new("shallow"), new.as_bytes(), Some(host.as_bytes()), false);
        assert_eq!(shallow(&value), Ok(Vetted::Keep));
        assert_eq!(shallow(""), Ok(Vetted::Keep));
        assert!(shallow(&format!("{A}\n{c}\n")).is_err());
    }

    #[test]
    fn programs_in_state_files() {
        assert!(v("sequencer/opts", "[options]\n\tstrategy = x/run\n").is_err());
        assert!(v("sequencer/opts", "[options] strategy = x/evil\n").is_err());
        assert!(v("rebase-merge/git-rebase-todo", "pick 1234 a\nx\ttouch /tmp/p\n").is_err());
        let oid = "0123456789abcdef0123456789abcdef01234567";
        assert!(v("MERGE_RR", &format!("{oid}\t/root/secret.txt\0")).is_err());
        assert!(v("MERGE_RR", &format!("{oid}.-1\t../x\0")).is_err());
        assert_eq!(v("MERGE_RR", &format!("{oid}\tsrc/a.c\0")), Ok(Vetted::Keep));
        assert_eq!(
            v("sequencer/opts", "[options]\n\tsignoff = true\n"),
            Ok(Vetted::Keep)
        );
        assert!(v("rebase-merge/strategy", "ours\n").is_err());
        let todo = "pick 1234 a\nexec make test\n";
        assert!(v("rebase-merge/git-rebase-todo", todo).is_err());
        let host = b"pick 1234 a\nexec make test\npick 5678 b\n";
        assert_eq!(
            vet(
                Path::new("rebase-merge/git-rebase-todo"),
                todo.as_bytes(),
                Some(host),
                false
            ),
            Ok(Vetted::Keep)
        );
    }
}
