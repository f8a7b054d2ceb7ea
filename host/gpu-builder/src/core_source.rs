//! Where the source of `core` comes from.
//!
//! rustup's `rust-src` component is the normal source. The machines this project targets often
//! cannot download it, but every default install has `rust-docs`, whose rustdoc "source" pages
//! (`share/doc/rust/html/src/core/**.rs.html`) contain the exact text of every file of `core`.
//! We recover the files from those pages: the `<pre class="rust"><code>` block, with line-number
//! anchors and highlighting tags removed and HTML entities decoded, is the original file.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A directory laid out like rust's `library/`: `core/src/lib.rs`, `stdarch/`, `portable-simd/`.
#[derive(Debug, Clone)]
pub struct LibrarySource {
    pub library_dir: PathBuf,
    pub origin: SourceOrigin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceOrigin {
    RustSrcComponent,
    RustDocsPages,
}

impl LibrarySource {
    pub fn core_lib_rs(&self) -> PathBuf {
        self.library_dir.join("core/src/lib.rs")
    }
}

/// Finds `core`'s source: the `rust-src` component when installed, otherwise recovered from the
/// `rust-docs` pages into `scratch_dir`. Errors say what to install when neither exists.
pub fn locate_or_extract(rustc_sysroot: &Path, scratch_dir: &Path) -> Result<LibrarySource> {
    let rust_src = rustc_sysroot.join("lib/rustlib/src/rust/library");
    if rust_src.join("core/src/lib.rs").is_file() {
        return Ok(LibrarySource {
            library_dir: rust_src,
            origin: SourceOrigin::RustSrcComponent,
        });
    }
    let pages = rustc_sysroot.join("share/doc/rust/html/src/core");
    if !pages.join("lib.rs.html").is_file() {
        return Err(Error::msg(format!(
            "cannot find the source of `core` to build it for nvptx64-nvidia-cuda.\n\
             Looked for the rust-src component at {} and the rust-docs source pages at {}.\n\
             Install either one: `rustup component add rust-src` or `rustup component add rust-docs`.",
            rust_src.display(),
            pages.display()
        )));
    }
    let library_dir = scratch_dir.join("library");
    let stamp = scratch_dir.join("library.complete");
    if !stamp.is_file() {
        if library_dir.exists() {
            fs::remove_dir_all(&library_dir).map_err(|e| Error::io(&library_dir, e))?;
        }
        extract_from_docs(&pages, &library_dir)?;
        fs::write(&stamp, b"").map_err(|e| Error::io(&stamp, e))?;
    }
    Ok(LibrarySource {
        library_dir,
        origin: SourceOrigin::RustDocsPages,
    })
}

/// Rebuilds `library/` from the rustdoc source pages under `pages` (`.../html/src/core`).
pub fn extract_from_docs(pages: &Path, library_dir: &Path) -> Result<usize> {
    let mut files = Vec::new();
    collect_pages(pages, &mut files)?;
    let mut written = Vec::new();
    for page in &files {
        let rel = page
            .strip_prefix(pages)
            .expect("page is under the pages root");
        let rel_str = rel.to_string_lossy();
        let rel_rs = rel_str
            .strip_suffix(".html")
            .expect("collected only .rs.html pages");
        // `stdarch` and `portable-simd` are siblings of `core` in rust's tree (lib.rs reaches them
        // with `#[path = "../../stdarch/..."]`); rustdoc shows them under `core/`.
        let dest = if rel_rs.starts_with("stdarch/") || rel_rs.starts_with("portable-simd/") {
            library_dir.join(rel_rs)
        } else {
            library_dir.join("core/src").join(rel_rs)
        };
        let html = fs::read_to_string(page).map_err(|e| Error::io(page, e))?;
        let source = source_from_page(&html).ok_or_else(|| {
            Error::msg(format!(
                "{}: no <pre class=\"rust\"><code> block in this rustdoc page",
                page.display()
            ))
        })?;
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        fs::write(&dest, &source).map_err(|e| Error::io(&dest, e))?;
        written.push((dest, source));
    }
    // Files pulled in by `include_str!` (mostly doc `.md` files) have no source page. Their text
    // only feeds doc attributes, so empty files stand in for them.
    for (file, source) in &written {
        let dir = file.parent().expect("written files have a parent");
        for target in include_str_targets(source) {
            let path = dir.join(target);
            if !path.exists() {
                if let Some(parent) = path.parent() {
                    fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
                }
                fs::write(&path, b"").map_err(|e| Error::io(&path, e))?;
            }
        }
    }
    Ok(written.len())
}

fn collect_pages(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_dir() {
            collect_pages(&path, out)?;
        } else if path.to_string_lossy().ends_with(".rs.html") {
            out.push(path);
        }
    }
    out.sort();
    Ok(())
}

/// The original source text of one rustdoc source page.
pub fn source_from_page(html: &str) -> Option<String> {
    const OPEN: &str = "<pre class=\"rust\"><code>";
    let start = html.find(OPEN)? + OPEN.len();
    let end = start + html[start..].find("</code></pre>")?;
    let code = &html[start..end];
    let mut text = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(lt) = rest.find('<') {
        text.push_str(&rest[..lt]);
        let after = &rest[lt..];
        let gt = after.find('>')?;
        let tag = &after[..=gt];
        rest = &after[gt + 1..];
        // Line-number anchors carry their number as text: `<a href=#12 id=12 data-nosnippet>12</a>`.
        if tag.contains("data-nosnippet") {
            let close = rest.find("</a>")?;
            rest = &rest[close + "</a>".len()..];
        }
    }
    text.push_str(rest);
    let mut decoded = decode_entities(&text);
    if !decoded.ends_with('\n') {
        decoded.push('\n');
    }
    Some(decoded)
}

fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp..];
        let semi = after.find(';').filter(|&i| i <= 10);
        let decoded = semi.and_then(|i| decode_entity(&after[1..i]).map(|c| (c, i)));
        match decoded {
            Some((c, i)) => {
                out.push(c);
                rest = &after[i + 1..];
            }
            None => {
                out.push('&');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn decode_entity(name: &str) -> Option<char> {
    match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some('\u{a0}'),
        _ => {
            let num = name.strip_prefix('#')?;
            let value = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => num.parse().ok()?,
            };
            char::from_u32(value)
        }
    }
}

/// Relative paths that `source` may pass to `include_str!`: direct `include_str!("...")` calls,
/// and, in files that use `include_str!` at all, every `".md"` string literal (core's
/// `ffi/primitives.rs` hands doc file names to a macro that includes them).
fn include_str_targets(source: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    if !source.contains("include_str!(") {
        return targets;
    }
    for (i, _) in source.match_indices(".md\"") {
        let start = source[..i].rfind('"').map_or(0, |q| q + 1);
        let literal = &source[start..i + 3];
        if !literal.is_empty() && !literal.contains(char::is_whitespace) {
            targets.push(literal);
        }
    }
    let mut rest = source;
    while let Some(i) = rest.find("include_str!(\"") {
        rest = &rest[i + "include_str!(\"".len()..];
        if let Some(end) = rest.find('"') {
            let target = &rest[..end];
            if !target.is_empty() && target != "..." && !target.contains('{') {
                targets.push(target);
            }
            rest = &rest[end..];
        }
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_text_is_recovered_exactly() {
        let html = "<html><pre class=\"rust\"><code><a href=#1 id=1 data-nosnippet>1</a>\
            <span class=\"kw\">fn </span>f() -&gt; Vec&lt;u8&gt; { <span class=\"string\">\"a&amp;b&#39;\"</span> }\n\
            <a href=#2 id=2 data-nosnippet>2</a>// x &lt; 1\n</code></pre></html>";
        assert_eq!(
            source_from_page(html).unwrap(),
            "fn f() -> Vec<u8> { \"a&b'\" }\n// x < 1\n"
        );
    }

    #[test]
    fn include_str_targets_are_found() {
        let src = "#[doc = include_str!(\"../docs/a.md\")]\nx!(include_str!(\"...\"));";
        assert_eq!(
            include_str_targets(src),
            vec!["../docs/a.md", "../docs/a.md"]
        );
        let via_macro =
            "macro_rules! m { ($f:literal) => { #[doc = include_str!($f)] } }\nm!(\"c_int.md\");";
        assert_eq!(include_str_targets(via_macro), vec!["c_int.md"]);
    }
}
