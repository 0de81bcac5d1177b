//! A git index written inside, taken entry by entry before the host's git
//! reads it: every path by git's own rules for paths from a remote (no
//! `.git` component in any spelling git recognises, no `.` or `..`,
//! nothing absolute, no symlinked `.gitmodules`), every mode one git
//! writes. What hides a change from host `git status` is not carried: the
//! assume-unchanged bit, skip-worktree outside a sparse checkout, the
//! fsmonitor and untracked caches; such an index is rewritten without them
//! (with its trailer made again). Its entries stand in git's own order
//! (as `git fsck` holds an index to it), and their number and the bytes of
//! their paths expanded are bounded (host git holds every path in memory,
//! several times over).

use super::sha1::sha1;

/// What may reach the host.
#[derive(Debug, PartialEq, Eq)]
pub enum Vetted {
    Keep,
    /// The same index without what hides changes.
    Rewritten(Vec<u8>),
}

/// Extensions that only speed git up or hide changes: dropped when the
/// index is rewritten (git makes them again).
const DROPPED: [&[u8; 4]; 4] = [b"FSMN", b"UNTR", b"EOIE", b"IEOT"];
/// Extensions that name object ids git takes on trust: the cache-tree
/// (git reuses a directory's cached tree id for the next commit, so a
/// forged one put a planted file into the user's commit while `git
/// status` showed nothing) and the resolve-undo records. Kept only where
/// the host's index holds the same bytes; otherwise dropped (git makes the
/// cache-tree again).
const TRUSTED: [&[u8; 4]; 2] = [b"TREE", b"REUC"];
const ASSUME_VALID: u16 = 0x8000;
const EXTENDED: u16 = 0x4000;
const SKIP_WORKTREE: u16 = 0x4000;
const INTENT_TO_ADD: u16 = 0x2000;
/// The longest path an entry may name, and the longest component: what a
/// Linux file system holds (PATH_MAX, NAME_MAX); git could check out no
/// longer one.
const PATH_MOST: usize = 4095;
const NAME_MOST: usize = 255;
/// The entries an index may hold, and the bytes of their paths in all, or
/// twice the host's index's where that is more: a version 4 index names a
/// shared prefix once, and host git expands each path (an index of 600 KB,
/// 9,000 paths of 62 KB, held `git status` at 2.2 GB).
const ENTRIES_MOST: usize = 2_000_000;
const PATH_BYTES_MOST: usize = 64 << 20;
/// The sum over directories of the square of each one's subdirectories
/// (or twice the host's index's): host git's cache-tree keeps a
/// directory's subtrees sorted by length, then bytes, and inserts each
/// in place, so an index listing a directory's long names before its
/// short ones costs it the square of their number (2 million entries, a
/// million subdirectories of 6 letters then a million of 5, held `git
/// commit` and `git stash` past two minutes); 65,536 subdirectories of
/// one directory cost it under a second.
const FANOUT_MOST: u64 = 1 << 32;

/// Vets an index (`sparse`: the host's checkout is sparse, where
/// skip-worktree is git's own). `host`: the host's index, whose entries'
/// stat data the sandbox's may repeat; an entry whose stat data is new
/// gets it zeroed, so that host git compares the file's content with the
/// entry's object instead of trusting stat data the command chose (stat
/// data of a changed file beside the old object id hid the change).
pub(super) fn vet(data: &[u8], sparse: bool, host: Option<&[u8]>) -> Result<Vetted, String> {
    // Where the host has no index (or none git could read), every stat
    // data is the sandbox's choice: an index removed first, then forged,
    // would otherwise keep it.
    let known = |hash: usize| {
        host.and_then(|h| parse(h, hash, true, None, false).ok())
            .map(|p| p.known)
            .unwrap_or_default()
    };
    match parse(data, 20, sparse, Some(&known(20)), true) {
        Ok(p) => Ok(p.vetted),
        // A SHA-256 repository's index: its object names and trailer are
        // 32 bytes; its rewrite would need SHA-256, so it is only checked.
        Err(e) => match parse(data, 32, sparse, Some(&known(32)), true) {
            Ok(Parsed {
                vetted: Vetted::Keep, ..
            }) => Ok(Vetted::Keep),
            Ok(_) => Err("it hides changes (a SHA-256 index is not rewritten)".into()),
            Err(_) => Err(e),
        },
    }
}

/// The objects an index's entries name that the host's index does not
/// name so, each with the type git takes it for (a file's or a link's
/// blob, a sparse directory's tree; a gitlink's commit lies in another
/// repository): host git writes them into the user's next commit as they
/// are (an entry naming a tree as a file made a commit no clone could
/// check out).
pub(super) fn new_objects(data: &[u8], host: Option<&[u8]>) -> Vec<(String, &'static str)> {
    let content = |d: &[u8]| {
        parse(d, 20, true, None, false)
            .or_else(|_| parse(d, 32, true, None, false))
            .map(|p| p.known.content)
            .ok()
    };
    let Some(new) = content(data) else {
        return Vec::new();
    };
    let old: std::collections::HashSet<Vec<u8>> =
        host.and_then(content).unwrap_or_default().into_values().collect();
    let mut out: Vec<(String, &'static str)> = new
        .into_values()
        .filter(|v| !old.contains(v))
        .filter_map(|v| {
            let mode = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
            let hex: String = v[4..].iter().map(|b| format!("{b:02x}")).collect();
            match mode {
                0o160000 => None,
                0o040000 => Some((hex, "tree")),
                _ => Some((hex, "blob")),
            }
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether an index hides a change from `git status` (an entry marked
/// assume-unchanged, or skip-worktree outside a sparse checkout, or an
/// fsmonitor's record of what is clean); an index git cannot read, too.
pub(super) fn hides(data: &[u8], sparse: bool) -> bool {
    match parse(data, 20, sparse, None, true).or_else(|_| parse(data, 32, sparse, None, true)) {
        Ok(p) => p.hides,
        Err(_) => true,
    }
}

/// An index taken apart: what may reach the host, and what the next one
/// may repeat of it.
struct Parsed {
    vetted: Vetted,
    known: Known,
    /// An entry's bit hides a change (assume-unchanged, or skip-worktree
    /// outside a sparse checkout), or the fsmonitor's extension is there.
    hides: bool,
}

/// Each entry's stat data and object id by name and stage, and the
/// extensions' bytes by signature.
#[derive(Default)]
struct Known {
    stats: std::collections::HashMap<Vec<u8>, Vec<u8>>,
    /// Each entry's mode and object id, by name and stage: what a
    /// cache-tree record stands for.
    content: std::collections::HashMap<Vec<u8>, Vec<u8>>,
    exts: std::collections::HashMap<[u8; 4], Vec<u8>>,
    /// How many entries, and the bytes of their paths; the sum of the
    /// squares of each directory's count of subdirectories.
    entries: usize,
    path_bytes: usize,
    fanout: u64,
}

/// Git's own order of entries, as `git fsck` holds an index to it: by
/// path in byte order, then by stage; a merged entry (stage 0) alone under
/// its path (twice, host `git commit` wrote a tree naming the file twice,
/// one content shown and the other checked out); and no entry below a
/// path another names as a file (git refuses such a tree).
#[derive(Default)]
struct Order {
    /// The paths seen that the last one starts with, the last on top.
    chain: Vec<Vec<u8>>,
    last_stage: u8,
}

impl Order {
    fn next(&mut self, name: &[u8], stage: u8) -> Result<(), String> {
        let shown = || String::from_utf8_lossy(name).into_owned();
        if let Some(last) = self.chain.last() {
            let ordered = match last.as_slice().cmp(name) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Equal => self.last_stage != 0 && stage > self.last_stage,
                std::cmp::Ordering::Greater => false,
            };
            if !ordered {
                return Err(format!(
                    "{}: its entries are out of git's order, or twice",
                    shown()
                ));
            }
        }
        // Sorted, every path between a file and one below it starts with
        // the file's: the chain holds each such file still open.
        while self.chain.last().is_some_and(|top| !name.starts_with(top)) {
            self.chain.pop();
        }
        // Only the longest: one below a shorter file would have been
        // refused already, as below this one.
        if self
            .chain
            .last()
            .is_some_and(|top| name.get(top.len()) == Some(&b'/'))
        {
            return Err(format!("{}: an entry below a path named as a file too", shown()));
        }
        if self.chain.last().map(Vec::as_slice) != Some(name) {
            self.chain.push(name.to_vec());
        }
        self.last_stage = stage;
        Ok(())
    }
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.data.len());
        let end = end.ok_or("it is cut short")?;
        let s = &self.data[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// `bounded`: held to the bounds of entries and path bytes (not the
/// host's own index, which sets them).
fn parse(
    data: &[u8],
    hash: usize,
    sparse: bool,
    host: Option<&Known>,
    bounded: bool,
) -> Result<Parsed, String> {
    if data.len() < 12 + hash || &data[..4] != b"DIRC" {
        return Err("it is not an index".into());
    }
    let body = &data[..data.len() - hash];
    let mut r = Reader { data: body, at: 4 };
    let version = r.u32()?;
    if !(2..=4).contains(&version) {
        return Err(format!("its version {version} is not one git writes"));
    }
    let count = r.u32()? as usize;
    let bounds = |most: usize, host_has: fn(&Known) -> usize| match bounded {
        true => most.max(host.map_or(0, |h| 2 * host_has(h))),
        false => usize::MAX,
    };
    let (entries_most, bytes_most) = (
        bounds(ENTRIES_MOST, |h| h.entries),
        bounds(PATH_BYTES_MOST, |h| h.path_bytes),
    );
    let fanout_most = match bounded {
        true => FANOUT_MOST.max(host.map_or(0, |h| h.fanout.saturating_mul(2))),
        false => u64::MAX,
    };
    if count > entries_most {
        return Err(format!(
            "it holds {count} entries, more than the {entries_most} qwrap carries"
        ));
    }
    let e = entries(&mut r, version, hash, count, sparse, host, bytes_most)?;
    if e.fanout > fanout_most {
        return Err("its directories hold so many subdirectories, in an order host git sorts at the square of their number (git commit, git stash), that qwrap does not carry it".into());
    }
    let entries_end = r.at;
    let x = extensions(&mut r, sparse, host, &e.content)?;
    let known = Known {
        stats: e.stats,
        content: e.content,
        exts: x.exts,
        entries: count,
        path_bytes: e.path_bytes,
        fanout: e.fanout,
    };
    let hides = !e.flips.is_empty() || known.exts.contains_key(b"FSMN");
    let vetted = if e.flips.is_empty() && e.zero.is_empty() && !x.dropped {
        Vetted::Keep
    } else {
        rewritten(data, hash, entries_end, &e.flips, &e.zero, &x.kept)
    };
    Ok(Parsed { vetted, known, hides })
}

/// What the entries hold: each one's stat data and content by key, the
/// bits to clear, the stat data to zero, the bytes of the paths.
struct Entries {
    stats: std::collections::HashMap<Vec<u8>, Vec<u8>>,
    content: std::collections::HashMap<Vec<u8>, Vec<u8>>,
    flips: Vec<(usize, u16)>,
    zero: Vec<usize>,
    path_bytes: usize,
    fanout: u64,
}

/// The entries, each checked, in git's order, their paths' bytes bounded.
fn entries(
    r: &mut Reader<'_>,
    version: u32,
    hash: usize,
    count: usize,
    sparse: bool,
    host: Option<&Known>,
    bytes_most: usize,
) -> Result<Entries, String> {
    let body = r.data;
    let mut order = Order::default();
    let mut prev: Vec<u8> = Vec::new();
    let mut e = Entries {
        stats: std::collections::HashMap::new(),
        content: std::collections::HashMap::new(),
        flips: Vec::new(),
        zero: Vec::new(),
        path_bytes: 0,
        fanout: 0,
    };
    let mut subdirs = Subdirs::default();
    for _ in 0..count {
        let start = r.at;
        let key = entry(r, version, hash, &mut prev, &mut e.flips, sparse)?;
        let (name, stage) = key.split_at(key.len() - 1);
        order.next(name, stage[0] - b'0')?;
        subdirs.next(name);
        e.path_bytes += name.len();
        if e.path_bytes > bytes_most {
            return Err(format!(
                "its paths take more than the {} MiB qwrap carries, expanded",
                bytes_most >> 20
            ));
        }
        let stat = body[start..start + 40 + hash].to_vec();
        // What zeroing clears (the times, the size): nothing to clear, nothing chosen.
        let chosen = stat[..16].iter().chain(&stat[36..40]).any(|b| *b != 0);
        if chosen && host.is_some_and(|h| h.stats.get(&key) != Some(&stat)) {
            e.zero.push(start);
        }
        let mut what = stat[24..28].to_vec();
        what.extend_from_slice(&stat[40..]);
        e.content.insert(key.clone(), what);
        e.stats.insert(key, stat);
    }
    e.fanout = subdirs.fanout();
    Ok(e)
}

/// How many subdirectories each directory holds, counted from paths in
/// byte order (everything below `d/s/` lies together in it: a directory
/// is new where a path leaves the one before), as the sum of the squares
/// of those counts. The directories of the last path stay open, each with
/// its count: one pass, linear in the paths' bytes.
#[derive(Default)]
struct Subdirs {
    last: Vec<u8>,
    open: Vec<u64>,
    sum: u64,
}

impl Subdirs {
    fn next(&mut self, path: &[u8]) {
        if self.open.is_empty() {
            self.open.push(0);
        }
        // The directories the two paths share, by whole components.
        let common = self.last.iter().zip(path).take_while(|(a, b)| a == b).count();
        let shared = path[..common]
            .iter()
            .rposition(|c| *c == b'/')
            .filter(|&i| self.last.get(i) == Some(&b'/'))
            .map_or(0, |i| i + 1);
        let keep = 1 + path[..shared].iter().filter(|c| **c == b'/').count();
        while self.open.len() > keep {
            self.close();
        }
        // Each directory of `path` below the shared ones is new: one more
        // subdirectory of the one above it.
        for _ in path[shared..].iter().filter(|c| **c == b'/') {
            if let Some(n) = self.open.last_mut() {
                *n += 1;
            }
            self.open.push(0);
        }
        self.last = path.to_vec();
    }

    fn close(&mut self) {
        let n = self.open.pop().unwrap_or(0);
        self.sum = self.sum.saturating_add(n.saturating_mul(n));
    }

    fn fanout(mut self) -> u64 {
        while !self.open.is_empty() {
            self.close();
        }
        self.sum
    }
}

/// The extensions: which are kept (their byte ranges), each one's bytes,
/// whether any was dropped.
struct Extensions {
    kept: Vec<(usize, usize)>,
    exts: std::collections::HashMap<[u8; 4], Vec<u8>>,
    dropped: bool,
}

fn extensions(
    r: &mut Reader<'_>,
    sparse: bool,
    host: Option<&Known>,
    content: &std::collections::HashMap<Vec<u8>, Vec<u8>>,
) -> Result<Extensions, String> {
    let mut x = Extensions {
        kept: Vec::new(),
        exts: std::collections::HashMap::new(),
        dropped: false,
    };
    while r.at < r.data.len() {
        let start = r.at;
        let sig: [u8; 4] = r.take(4)?.try_into().unwrap_or_default();
        let size = r.u32()? as usize;
        let ext = r.take(size)?;
        if &sig == b"TREE" {
            tree(ext)?;
        }
        // A split index: its entries lie in a shared part, vetted apart, and
        // this one without it leaves host git no index at all.
        if &sig == b"link" {
            return Err(SPLIT.into());
        }
        // The host's own record stands only for the host's own entries:
        // with one entry's object changed beneath it, git would take the
        // record's word and show nothing (and commit the change unasked).
        let untrusted = TRUSTED.contains(&&sig)
            && host.is_none_or(|h| h.exts.get(&sig).map(Vec::as_slice) != Some(ext) || h.content != *content);
        // An extension git does not write: dropped where git may ignore it
        // (its signature's first letter upper case), refused where git
        // must understand it (lower case: host git would not read the
        // index at all).
        let known_sig = TRUSTED.contains(&&sig) || DROPPED.contains(&&sig) || (&sig == b"sdir" && sparse);
        if !known_sig && sig[0].is_ascii_lowercase() {
            return Err(format!(
                "it has an extension git must understand and does not write ({})",
                String::from_utf8_lossy(&sig)
            ));
        }
        if !known_sig || DROPPED.contains(&&sig) || untrusted {
            x.dropped = true;
        } else {
            x.kept.push((start, r.at));
        }
        x.exts.insert(sig, ext.to_vec());
    }
    Ok(x)
}

/// The index without what hides changes: the bits cleared, the chosen
/// stat data zeroed, the extensions dropped, its trailer made again (a
/// SHA-256 one is not rewritten: an empty answer).
fn rewritten(
    data: &[u8],
    hash: usize,
    entries_end: usize,
    flips: &[(usize, u16)],
    zero: &[usize],
    kept: &[(usize, usize)],
) -> Vetted {
    let body = &data[..data.len() - hash];
    let mut out = body[..entries_end].to_vec();
    for &(at, mask) in flips {
        let v = u16::from_be_bytes([out[at], out[at + 1]]) & !mask;
        out[at..at + 2].copy_from_slice(&v.to_be_bytes());
    }
    // ctime and mtime (16 bytes) and the size (the last 4 of the 40).
    for &at in zero {
        out[at..at + 16].fill(0);
        out[at + 36..at + 40].fill(0);
    }
    for &(s, e) in kept {
        out.extend_from_slice(&body[s..e]);
    }
    if hash != 20 {
        return Vetted::Rewritten(Vec::new());
    }
    // `index.skipHash` leaves the trailer zero: so does the rewrite.
    let trailer = &data[data.len() - hash..];
    let sum = if trailer.iter().all(|b| *b == 0) {
        [0u8; 20]
    } else {
        sha1(&out)
    };
    out.extend_from_slice(&sum);
    Vetted::Rewritten(out)
}

/// One entry: its mode and path checked, the bits that hide a change
/// noted for clearing (offset of the flags word, bits); returns its name
/// and stage, its key among the entries.
fn entry(
    r: &mut Reader<'_>,
    version: u32,
    hash: usize,
    prev: &mut Vec<u8>,
    flips: &mut Vec<(usize, u16)>,
    sparse: bool,
) -> Result<Vec<u8>, String> {
    let start = r.at;
    let stat = r.take(40)?;
    let mode = u32::from_be_bytes([stat[24], stat[25], stat[26], stat[27]]);
    r.take(hash)?;
    let flags_at = r.at;
    let flags = r.u16()?;
    if flags & ASSUME_VALID != 0 {
        flips.push((flags_at, ASSUME_VALID));
    }
    if flags & EXTENDED != 0 {
        if version < 3 {
            return Err("an entry has extended flags in a version 2 index".into());
        }
        let ext_at = r.at;
        let ext = r.u16()?;
        if ext & !(SKIP_WORKTREE | INTENT_TO_ADD) != 0 {
            return Err("an entry has flags git does not write".into());
        }
        if ext & SKIP_WORKTREE != 0 && !sparse {
            flips.push((ext_at, SKIP_WORKTREE));
        }
    }
    let name = if version == 4 {
        let strip = varint(r)?;
        let keep = prev
            .len()
            .checked_sub(strip)
            .ok_or("an entry's name is cut wrongly")?;
        let suffix = nul_terminated(r)?;
        let mut n = prev[..keep].to_vec();
        n.extend_from_slice(suffix);
        n
    } else {
        let len = (flags & 0x0fff) as usize;
        let n = if len < 0x0fff {
            r.take(len)?.to_vec()
        } else {
            up_to_nul(r)?.to_vec()
        };
        // Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
        let size = (r.at - start + 8) & !7;
        let pad = r.take(start + size - r.at)?;
        if n.len() < 0x0fff && pad.iter().any(|b| *b != 0) {
            return Err("an entry's name is not where its length says".into());
        }
        n
    };
    check_entry(&name, mode, sparse)?;
    let mut key = name.clone();
    key.push(b'0' + ((flags >> 12) & 3) as u8);
    *prev = name;
    Ok(key)
}

/// Why a split index is not carried.
const SPLIT: &str = "a split index (its shared part is not carried): `git update-index --no-split-index`";

fn check_entry(name: &[u8], mode: u32, sparse: bool) -> Result<(), String> {
    let shown = || String::from_utf8_lossy(name).into_owned();
    let path = match mode {
        0o100644 | 0o100755 | 0o100664 | 0o120000 | 0o160000 => name,
        // A sparse index's directory entry: only where the host's checkout
        // is sparse (elsewhere it would hide what lies beneath).
        0o040000 if sparse => name
            .strip_suffix(b"/")
            .ok_or_else(|| format!("{}: a directory entry", shown()))?,
        m => return Err(format!("{}: mode {m:o} is not one git writes", shown())),
    };
    // Only a split index leaves an entry's name out (its shared part has it).
    if path.is_empty() {
        return Err(SPLIT.into());
    }
    if path.len() > PATH_MOST || path.split(|c| *c == b'/').any(|c| c.len() > NAME_MOST) {
        return Err(format!(
            "{}…: a path longer than a file system holds",
            String::from_utf8_lossy(&name[..name.len().min(64)])
        ));
    }
    if !path_ok(path) {
        return Err(format!("an entry names {:?}, a path git refuses", shown()));
    }
    if mode == 0o120000 {
        let last = path.rsplit(|c| *c == b'/').next().unwrap_or_default();
        let last = trimmed_lower(last);
        if [&b".gitmodules"[..], b".gitattributes", b".gitignore", b".mailmap"].contains(&last.as_slice()) {
            return Err(format!("{}: a symbolic link git refuses", shown()));
        }
    }
    Ok(())
}

/// git's `verify_path` with its NTFS and HFS protections on.
pub(super) fn path_ok(path: &[u8]) -> bool {
    if path.is_empty() || path.contains(&0) {
        return false;
    }
    path.split(|c| *c == b'/').all(|comp| {
        !comp.is_empty()
            && comp != b"."
            && comp != b".."
            && comp.split(|c| *c == b'\\').all(|part| !dot_git(part))
    })
}

/// Whether a component is `.git` in any spelling git recognises: any case,
/// trailing dots or spaces, an NTFS stream (`.git::$INDEX_ALLOCATION`), the
/// short name `git~1`, or with characters HFS+ ignores.
fn dot_git(comp: &[u8]) -> bool {
    let plain = strip_ignorable(comp);
    let l = trimmed_lower(&plain);
    l == b".git" || l.starts_with(b".git:") || l == b"git~1" || l == b".." || l == b"."
}

fn trimmed_lower(comp: &[u8]) -> Vec<u8> {
    let mut l = comp.to_ascii_lowercase();
    while l.last().is_some_and(|c| *c == b' ' || *c == b'.') && l.len() > 1 && l != b".." {
        l.pop();
    }
    l
}

/// Removes the code points HFS+ ignores in names (U+200C–U+200F,
/// U+202A–U+202E, U+206A–U+206F, U+FEFF), as UTF-8.
fn strip_ignorable(comp: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(comp.len());
    let mut i = 0;
    while i < comp.len() {
        if i + 2 < comp.len() {
            let c = &comp[i..i + 3];
            let ignorable = (c[0] == 0xE2
                && match c[1] {
                    0x80 => (0x8C..=0x8F).contains(&c[2]) || (0xAA..=0xAE).contains(&c[2]),
                    0x81 => (0xAA..=0xAF).contains(&c[2]),
                    _ => false,
                })
                || c == [0xEF, 0xBB, 0xBF];
            if ignorable {
                i += 3;
                continue;
            }
        }
        out.push(comp[i]);
        i += 1;
    }
    out
}

/// The cache tree's names: each a single component git would accept.
fn tree(ext: &[u8]) -> Result<(), String> {
    let mut r = Reader { data: ext, at: 0 };
    while r.at < ext.len() {
        let name = nul_terminated(&mut r)?;
        if !name.is_empty() && (name.contains(&b'/') || !path_ok(name)) {
            return Err(format!(
                "its cache tree names {:?}, a path git refuses",
                String::from_utf8_lossy(name)
            ));
        }
        let rest = &ext[r.at..];
        let nl = rest
            .iter()
            .position(|c| *c == b'\n')
            .ok_or("its cache tree is cut short")?;
        let counts = std::str::from_utf8(&rest[..nl]).map_err(|_| "its cache tree is garbled")?;
        let entries: i64 = counts
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or("its cache tree is garbled")?;
        r.take(nl + 1)?;
        if entries >= 0 {
            // The object name: 20 bytes (a SHA-256 tree is not rewritten,
            // only its names matter here, and they come first).
            r.take(20.min(ext.len() - r.at))?;
        }
    }
    Ok(())
}

fn varint(r: &mut Reader<'_>) -> Result<usize, String> {
    let mut c = r.take(1)?[0];
    let mut v = (c & 127) as usize;
    while c & 128 != 0 {
        c = r.take(1)?[0];
        v = v
            .checked_add(1)
            .and_then(|v| v.checked_mul(128))
            .ok_or("a length overflows")?
            + (c & 127) as usize;
    }
    Ok(v)
}

fn nul_terminated<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], String> {
    let s = up_to_nul(r)?;
    r.take(1)?;
    Ok(s)
}

/// The bytes before the next NUL, which is left unread (a long name of a
/// version 2 or 3 entry: the padding covers its NUL).
fn up_to_nul<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], String> {
    let rest = &r.data[r.at..];
    let n = rest.iter().position(|c| *c == 0).ok_or("a name is cut short")?;
    r.take(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_git_refuses() {
        for bad in [
            &b".git/hooks/post-commit"[..],
            b"../outside",
            b"/etc/passwd",
            b"a//b",
            b"a/./b",
            b"sub/.GIT/config",
            b"sub/.git. /config",
            b".git::$INDEX_ALLOCATION/hooks/x",
            b"GIT~1/hooks/x",
            b"a\\.git\\hooks",
            "\u{200c}.git/hooks/x".as_bytes(),
            ".g\u{feff}it/config".as_bytes(),
            b"a/",
            b"",
        ] {
            assert!(!path_ok(bad), "{:?}", String::from_utf8_lossy(bad));
        }
        for good in [
            &b"src/main.rs"[..],
            b".github/workflows/x.yml",
            b".gitignore",
            b"a/.gitx/b",
            b"..a",
        ] {
            assert!(path_ok(good), "{:?}", String::from_utf8_lossy(good));
        }
    }

    /// A version 2 index of the given entries (mode, flags, name).
    fn index(entries: &[(u32, u16, &[u8])], ext: &[u8]) -> Vec<u8> {
        let mut v = b"DIRC".to_vec();
        v.extend_from_slice(&2u32.to_be_bytes());
        v.extend_from_slice(&(entries.len() as u32).to_be_bytes());
        for (mode, flags, name) in entries {
            let start = v.len();
            let mut stat = [0u8; 40];
            stat[24..28].copy_from_slice(&mode.to_be_bytes());
            v.extend_from_slice(&stat);
            v.extend_from_slice(&[0x11; 20]);
            v.extend_from_slice(&(flags | name.len() as u16).to_be_bytes());
            v.extend_from_slice(name);
            let size = (v.len() - start + 8) & !7;
            v.resize(start + size, 0);
        }
        v.extend_from_slice(ext);
        let sum = sha1(&v);
        v.extend_from_slice(&sum);
        v
    }

    #[test]
    fn entries_stand_in_git_s_order_once_each() {
        let ok = |e: &[(u32, u16, &[u8])]| vet(&index(e, b""), false, None).is_ok();
        let f = 0o100644;
        assert!(ok(&[(f, 0, b"a"), (f, 0, b"a-b"), (f, 0, b"b/c")]));
        // Stages 1 to 3 of a conflict, in order.
        assert!(ok(&[
            (f, 0x1000, b"a"),
            (f, 0x2000, b"a"),
            (f, 0x3000, b"a"),
            (f, 0, b"b")
        ]));
        for (bad, why) in [
            (&[(f, 0, &b"a"[..]), (f, 0, b"a")][..], "twice"),
            (&[(f, 0, b"b"), (f, 0, b"a")], "out of order"),
            (&[(f, 0, b"a"), (f, 0x1000, b"a")], "merged and a stage"),
            (&[(f, 0x2000, b"a"), (f, 0x1000, b"a")], "stages out of order"),
            (&[(f, 0, b"a"), (f, 0, b"a/b")], "a file and below it"),
            (
                &[(f, 0, b"a"), (f, 0, b"a-b"), (f, 0, b"a.c"), (f, 0, b"a/d")],
                "a file and below it, apart",
            ),
            (&[(0o160000, 0, b"sub"), (f, 0, b"sub/x")], "below a gitlink"),
        ] {
            let r = vet(&index(bad, b""), false, None);
            assert!(r.is_err(), "{why}: {r:?}");
            assert!(
                hides(&index(bad, b""), false),
                "{why}: a repository made so is held aside"
            );
        }
    }

    #[test]
    fn paths_no_file_system_holds_and_too_many_are_refused() {
        let f = 0o100644;
        let long = vec![b'p'; 256];
        assert!(vet(&index(&[(f, 0, &long)], b""), false, None).is_err());
        let deep: Vec<u8> = std::iter::repeat_n(&b"abcdefg/"[..], 512)
            .flatten()
            .copied()
            .chain(*b"x")
            .collect();
        assert!(deep.len() > PATH_MOST);
        assert!(vet(&index(&[(f, 0, &deep)], b""), false, None).is_err());
        // 17,000 paths of 4 KB: 68 MiB expanded, in a version 4 index of
        // 1.2 MB (it names the part shared with the entry before once).
        let dirs: Vec<u8> = std::iter::repeat_n(&b"d123456789/"[..], 370)
            .flatten()
            .copied()
            .collect();
        let mut big = b"DIRC".to_vec();
        big.extend_from_slice(&4u32.to_be_bytes());
        big.extend_from_slice(&17_000u32.to_be_bytes());
        for i in 0..17_000 {
            let mut stat = [0u8; 40];
            stat[24..28].copy_from_slice(&f.to_be_bytes());
            big.extend_from_slice(&stat);
            big.extend_from_slice(&[0x11; 20]);
            big.extend_from_slice(&0x0fffu16.to_be_bytes());
            // The first names the whole path; each next strips the 6
            // digits of the one before (a varint of 6) and names its own.
            if i > 0 {
                big.push(6);
            } else {
                big.push(0);
                big.extend_from_slice(&dirs);
                big.push(b'f');
            }
            big.extend_from_slice(format!("{i:06}").as_bytes());
            big.push(0);
        }
        let sum = sha1(&big);
        big.extend_from_slice(&sum);
        assert!(big.len() < 2 << 20);
        let r = vet(&big, false, None);
        assert!(
            r.as_ref().is_err_and(|e| e.contains("MiB")),
            "{:?}",
            r.map(|_| ())
        );
        // Where the host's own index is that large already, it is the host's.
        assert!(vet(&big, false, Some(&big)).is_ok());
    }

    #[test]
    fn entries_vetted_and_hiding_bits_cleared() {
        let clean = index(&[(0o100644, 0, b"Makefile"), (0o100755, 0, b"run.sh")], b"");
        assert_eq!(vet(&clean, false, None), Ok(Vetted::Keep));
        // Stat data the host's index does not hold is the sandbox's choice,
        // and so is all of it where the host has no index (removed first).
        let mut stamped = clean[..clean.len() - 20].to_vec();
        stamped[12 + 8..12 + 12].copy_from_slice(&1_700_000_000u32.to_be_bytes());
        let sum = sha1(&stamped);
        stamped.extend_from_slice(&sum);
        assert_eq!(vet(&stamped, false, Some(&stamped)), Ok(Vetted::Keep));
        assert!(matches!(vet(&stamped, false, None), Ok(Vetted::Rewritten(_))));
        assert!(matches!(
            vet(&stamped, false, Some(&clean)),
            Ok(Vetted::Rewritten(_))
        ));
        let forged = index(&[(0o100755, 0, b".git/hooks/post-commit")], b"");
        assert!(
            vet(&forged, false, None)
                .unwrap_err()
                .contains(".git/hooks/post-commit")
        );
        let odd = index(&[(0o020644, 0, b"dev")], b"");
        assert!(vet(&odd, false, None).is_err());
        let link = index(&[(0o120000, 0, b".gitmodules")], b"");
        assert!(vet(&link, false, None).is_err());
        // assume-unchanged cleared, an fsmonitor extension dropped, the
        // trailer made again; the rewrite is vetted clean.
        let fsmn = b"FSMN\0\0\0\x04abcd";
        let hidden = index(&[(0o100644, ASSUME_VALID, b"Makefile")], fsmn);
        let Ok(Vetted::Rewritten(r)) = vet(&hidden, false, None) else {
            panic!("not rewritten")
        };
        assert_eq!(r, index(&[(0o100644, 0, b"Makefile")], b""));
        assert_eq!(vet(&r, false, None), Ok(Vetted::Keep));
        let cut = &clean[..clean.len() - 30];
        assert!(vet(cut, false, None).is_err());
    }

    #[test]
    fn subdirectories_are_counted_per_directory() {
        let mut s = Subdirs::default();
        for p in ["a/b/c/f", "a/b/d/f", "a/bc/f", "a/x", "e"] {
            s.next(p.as_bytes());
        }
        // The top: a (1); a: b, bc (2); a/b: c, d (2).
        assert_eq!(s.fanout(), 1 + 4 + 4);
    }

    #[test]
    fn a_directory_of_too_many_subdirectories_is_refused() {
        let idx = |n: usize| {
            let names: Vec<Vec<u8>> = (0..n).map(|i| format!("d{i:05}/f").into_bytes()).collect();
            let entries: Vec<(u32, u16, &[u8])> = names.iter().map(|n| (0o100644, 0, n.as_slice())).collect();
            index(&entries, b"")
        };
        let (fine, many) = (idx(60_000), idx(70_000));
        assert!(vet(&fine, false, None).is_ok());
        assert!(vet(&many, false, None).is_err());
        // Where the host's own index holds as many, it is the host's.
        assert!(vet(&many, false, Some(&many)).is_ok());
    }

    #[test]
    fn extensions_git_does_not_write_are_dropped_or_refused() {
        let ext = |sig: &[u8; 4]| [&sig[..], &4u32.to_be_bytes(), b"data"].concat();
        let plain = index(&[(0o100644, 0, b"a")], b"");
        // git may ignore an upper-case one: dropped.
        match vet(&index(&[(0o100644, 0, b"a")], &ext(b"ZZZZ")), false, None) {
            Ok(Vetted::Rewritten(r)) => assert_eq!(r, plain),
            r => panic!("{r:?}"),
        }
        // git must understand a lower-case one: host git would read no index.
        assert!(vet(&index(&[(0o100644, 0, b"a")], &ext(b"abcd")), false, None).is_err());
        assert!(vet(&index(&[(0o100644, 0, b"a")], &ext(b"sdir")), false, None).is_err());
    }

    #[test]
    fn a_cache_tree_naming_dot_git_is_refused() {
        let tree = b"\x001 1\n\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11\x11.git\x001 0\n\x22\x22\x22\x22\x22\x22\x22\x22\x22\x22\x22\x22\x22\x22\x22\x22\x22\x22\x22\x22";
        let mut ext = b"TREE".to_vec();
        ext.extend_from_slice(&(tree.len() as u32).to_be_bytes());
        ext.extend_from_slice(tree);
        let i = index(&[(0o100644, 0, b"a")], &ext);
        assert!(vet(&i, false, None).unwrap_err().contains(".git"));
    }
}
