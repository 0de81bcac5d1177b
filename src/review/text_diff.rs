//! A unified diff of two texts, by lines (Myers' algorithm, the shortest
//! edit script), with three lines of context. Written here rather than
//! running `diff` on the host: nothing of the layer is handed to a
//! program.

use std::fmt::Write as _;

/// Past this many differing lines the edit script is not searched: the
/// changed middle is shown as one removal and one addition.
const MAX_EDITS: usize = 2000;
const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same(usize, usize),
    Del(usize),
    Add(usize),
}

/// Lines with their endings, so that a last line without one shows.
fn lines(text: &[u8]) -> Vec<&[u8]> {
    text.split_inclusive(|b| *b == b'\n').collect()
}

/// The edit script from `a` to `b`.
fn script(a: &[&[u8]], b: &[&[u8]]) -> Vec<Op> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let rest = a.len().min(b.len()) - prefix;
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take(rest)
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut ops: Vec<Op> = (0..prefix).map(|i| Op::Same(i, i)).collect();
    match myers(am, bm) {
        Some(mid) => ops.extend(mid.into_iter().map(|op| match op {
            Op::Same(i, j) => Op::Same(i + prefix, j + prefix),
            Op::Del(i) => Op::Del(i + prefix),
            Op::Add(j) => Op::Add(j + prefix),
        })),
        None => {
            ops.extend((0..am.len()).map(|i| Op::Del(i + prefix)));
            ops.extend((0..bm.len()).map(|j| Op::Add(j + prefix)));
        }
    }
    ops.extend((0..suffix).map(|k| Op::Same(a.len() - suffix + k, b.len() - suffix + k)));
    ops
}

/// Myers' O(ND) search, keeping each round's frontier to walk back; None
/// past `MAX_EDITS`.
fn myers(a: &[&[u8]], b: &[&[u8]]) -> Option<Vec<Op>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    let off = max as isize + 1;
    let mut v = vec![0isize; 2 * max + 3];
    // Round d's frontier before it ran, diagonals -d..=d only (memory in
    // the square of the edits, not in their product with the lines).
    let mut trace: Vec<Vec<i32>> = Vec::new();
    let mut found = None;
    'search: for d in 0..=max.min(MAX_EDITS) as isize {
        trace.push(
            v[(off - d) as usize..=(off + d) as usize]
                .iter()
                .map(|x| *x as i32)
                .collect(),
        );
        let mut k = -d;
        while k <= d {
            let i = (k + off) as usize;
            let mut x = if k == -d || (k != d && v[i - 1] < v[i + 1]) {
                v[i + 1]
            } else {
                v[i - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[i] = x;
            if x >= n && y >= m {
                found = Some(d);
                break 'search;
            }
            k += 2;
        }
    }
    found?;
    // Walk back through the frontiers.
    let mut ops = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..trace.len() as isize).rev() {
        let v = &trace[d as usize];
        let at = |k: isize| v[(k + d) as usize] as isize;
        let k = x - y;
        let prev_k = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = at(prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            ops.push(Op::Same(x as usize, y as usize));
        }
        if x == prev_x {
            y -= 1;
            ops.push(Op::Add(y as usize));
        } else {
            x -= 1;
            ops.push(Op::Del(x as usize));
        }
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        ops.push(Op::Same(x as usize, y as usize));
    }
    ops.reverse();
    Some(ops)
}

/// The hunks of a unified diff from `old` to `new` (no file headers);
/// empty when they are equal.
pub fn unified(old: &[u8], new: &[u8]) -> String {
    let (a, b) = (lines(old), lines(new));
    let ops = script(&a, &b);
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| !matches!(o, Op::Same(..)))
        .map(|(i, _)| i)
        .collect();
    let mut out = String::new();
    let mut k = 0;
    while k < changed.len() {
        // A hunk: changes closer than two contexts apart, with context.
        let start = changed[k].saturating_sub(CONTEXT);
        let mut end = changed[k];
        while k + 1 < changed.len() && changed[k + 1] - end <= 2 * CONTEXT {
            k += 1;
            end = changed[k];
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        let (mut a0, mut b0, mut an, mut bn) = (None, None, 0, 0);
        for o in hunk {
            match *o {
                Op::Same(i, j) => {
                    a0.get_or_insert(i);
                    b0.get_or_insert(j);
                    an += 1;
                    bn += 1;
                }
                Op::Del(i) => {
                    a0.get_or_insert(i);
                    an += 1;
                }
                Op::Add(j) => {
                    b0.get_or_insert(j);
                    bn += 1;
                }
            }
        }
        // Where a side has no line in the hunk, it starts after the
        // lines before it.
        let before = |side_a: bool| {
            ops[..start]
                .iter()
                .filter(|o| match o {
                    Op::Same(..) => true,
                    Op::Del(_) => side_a,
                    Op::Add(_) => !side_a,
                })
                .count()
        };
        let a_start = a0.map_or(before(true), |i| i + 1);
        let b_start = b0.map_or(before(false), |j| j + 1);
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            range(a_start, an, a0.is_none()),
            range(b_start, bn, b0.is_none())
        );
        for o in hunk {
            let (mark, line) = match *o {
                Op::Same(i, _) => (' ', a[i]),
                Op::Del(i) => ('-', a[i]),
                Op::Add(j) => ('+', b[j]),
            };
            out.push(mark);
            out.push_str(&String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(line)));
            out.push('\n');
            if !line.ends_with(b"\n") {
                out.push_str("\\ No newline at end of file\n");
            }
        }
        k += 1;
    }
    out
}

/// `START,COUNT` as diff writes it (`START` alone for one line).
fn range(start: usize, count: usize, none: bool) -> String {
    match (count, none) {
        (0, _) | (_, true) => format!("{},0", start),
        (1, _) => format!("{start}"),
        _ => format!("{start},{count}"),
    }
}

/// Whether bytes are text: no NUL in the first 8 KiB, as git judges.
pub fn is_text(data: &[u8]) -> bool {
    !data[..data.len().min(8192)].contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_in_the_middle() {
        let old = b"a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = b"a\nb\nc\nD\ne\nf\ng\nh\ni\n";
        assert_eq!(
            unified(old, new),
            "@@ -1,8 +1,9 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n h\n+i\n"
        );
        assert_eq!(unified(old, old), "");
    }

    #[test]
    fn new_and_emptied_files() {
        assert_eq!(
            unified(b"", b"x\ny"),
            "@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n"
        );
        assert_eq!(unified(b"x\n", b""), "@@ -1 +0,0 @@\n-x\n");
    }

    #[test]
    fn far_apart_changes_make_two_hunks() {
        let old: String = (0..30).map(|i| format!("{i}\n")).collect();
        let new: String = (0..30)
            .map(|i| match i {
                2 => "two\n".to_string(),
                27 => "twenty-seven\n".to_string(),
                _ => format!("{i}\n"),
            })
            .collect();
        let d = unified(old.as_bytes(), new.as_bytes());
        assert_eq!(d.matches("@@ -").count(), 2, "{d}");
        assert!(
            d.contains("-2\n+two\n") && d.contains("-27\n+twenty-seven\n"),
            "{d}"
        );
        assert!(d.starts_with("@@ -1,6 +1,6 @@\n"), "{d}");
    }

    #[test]
    fn the_script_is_the_shortest() {
        let a: Vec<&[u8]> = vec![b"a", b"b", b"c", b"a", b"b", b"b", b"a"];
        let b: Vec<&[u8]> = vec![b"c", b"b", b"a", b"b", b"a", b"c"];
        let ops = myers(&a, &b).unwrap();
        let edits = ops.iter().filter(|o| !matches!(o, Op::Same(..))).count();
        assert_eq!(edits, 5);
    }
}
