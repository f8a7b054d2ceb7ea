//! Line diffs for comparing two builds of a kernel (`cargo xtask ptx-diff`).
//!
//! A small Myers diff: enough for PTX files of a few thousand lines, and no dependency.

/// One line of an edit script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit<'a> {
    Same(&'a str),
    Removed(&'a str),
    Added(&'a str),
}

/// The shortest edit script turning `old` into `new` (Myers' O((N+M)·D) algorithm).
pub fn diff_lines<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<Edit<'a>> {
    // Common prefix and suffix need no search.
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let a = &old[prefix..old.len() - suffix];
    let b = &new[prefix..new.len() - suffix];
    let mut edits: Vec<Edit<'a>> = old[..prefix].iter().map(|l| Edit::Same(l)).collect();
    edits.extend(myers(a, b));
    edits.extend(old[old.len() - suffix..].iter().map(|l| Edit::Same(l)));
    edits
}

fn myers<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Edit<'a>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    if max == 0 {
        return Vec::new();
    }
    let offset = max as isize;
    let mut v = vec![0isize; 2 * max + 2];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    'search: for d in 0..=max as isize {
        trace.push(v.clone());
        let mut k = -d;
        while k <= d {
            let idx = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[idx - 1] < v[idx + 1]) {
                v[idx + 1]
            } else {
                v[idx - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[idx] = x;
            if x >= n && y >= m {
                break 'search;
            }
            k += 2;
        }
    }
    // Walk the trace back from (n, m).
    let mut edits = Vec::new();
    let (mut x, mut y) = (n, m);
    for (d, v) in trace.iter().enumerate().rev() {
        let d = d as isize;
        let k = x - y;
        let idx = (k + offset) as usize;
        let prev_k = if k == -d || (k != d && v[idx - 1] < v[idx + 1]) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = v[(prev_k + offset) as usize];
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            edits.push(Edit::Same(a[x as usize]));
        }
        if d > 0 {
            if x == prev_x {
                y -= 1;
                edits.push(Edit::Added(b[y as usize]));
            } else {
                x -= 1;
                edits.push(Edit::Removed(a[x as usize]));
            }
        }
    }
    edits.reverse();
    edits
}

/// A unified diff (`---`/`+++` headers, `@@` hunks with `context` lines around each change);
/// empty when the texts are equal.
pub fn unified(old_name: &str, new_name: &str, old: &str, new: &str, context: usize) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let edits = diff_lines(&a, &b);
    if edits.iter().all(|e| matches!(e, Edit::Same(_))) {
        return String::new();
    }
    // Positions (old line, new line) before each edit.
    let mut positions = Vec::with_capacity(edits.len());
    let (mut i, mut j) = (0usize, 0usize);
    for e in &edits {
        positions.push((i, j));
        match e {
            Edit::Same(_) => {
                i += 1;
                j += 1;
            }
            Edit::Removed(_) => i += 1,
            Edit::Added(_) => j += 1,
        }
    }
    let changed: Vec<usize> = edits
        .iter()
        .enumerate()
        .filter(|(_, e)| !matches!(e, Edit::Same(_)))
        .map(|(k, _)| k)
        .collect();
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(context);
        let mut end = changed[k];
        while k < changed.len() && changed[k] <= end + 2 * context + 1 {
            end = changed[k];
            k += 1;
        }
        let end = (end + context + 1).min(edits.len());
        let (oi, nj) = positions[start];
        let old_len = edits[start..end]
            .iter()
            .filter(|e| !matches!(e, Edit::Added(_)))
            .count();
        let new_len = edits[start..end]
            .iter()
            .filter(|e| !matches!(e, Edit::Removed(_)))
            .count();
        out.push_str(&format!(
            "@@ -{},{old_len} +{},{new_len} @@\n",
            oi + usize::from(old_len > 0),
            nj + usize::from(new_len > 0)
        ));
        for e in &edits[start..end] {
            match e {
                Edit::Same(l) => out.push_str(&format!(" {l}\n")),
                Edit::Removed(l) => out.push_str(&format!("-{l}\n")),
                Edit::Added(l) => out.push_str(&format!("+{l}\n")),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply<'a>(edits: &[Edit<'a>]) -> (Vec<&'a str>, Vec<&'a str>) {
        let mut old = Vec::new();
        let mut new = Vec::new();
        for e in edits {
            match *e {
                Edit::Same(l) => {
                    old.push(l);
                    new.push(l);
                }
                Edit::Removed(l) => old.push(l),
                Edit::Added(l) => new.push(l),
            }
        }
        (old, new)
    }

    #[test]
    fn edit_script_reproduces_both_sides_minimally() {
        let a = ["a", "b", "c", "a", "b", "b", "a"];
        let b = ["c", "b", "a", "b", "a", "c"];
        let edits = diff_lines(&a, &b);
        let (old, new) = apply(&edits);
        assert_eq!(old, a);
        assert_eq!(new, b);
        // The classic example has edit distance 5.
        assert_eq!(
            edits.iter().filter(|e| !matches!(e, Edit::Same(_))).count(),
            5
        );
        assert_eq!(diff_lines(&[], &["x"]), [Edit::Added("x")]);
        assert_eq!(diff_lines(&["x"], &[]), [Edit::Removed("x")]);
    }

    #[test]
    fn unified_diff_has_hunks_with_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n";
        let d = unified("old", "new", old, new, 2);
        assert_eq!(
            d,
            "--- old\n+++ new\n@@ -3,5 +3,5 @@\n 3\n 4\n-5\n+five\n 6\n 7\n"
        );
        assert!(unified("a", "b", old, old, 3).is_empty());
    }
}
