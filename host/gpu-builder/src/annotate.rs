//! Reading PTX (and SASS) next to the Rust source that produced it.
//!
//! A kernel crate built with line tables (`debug = "line-tables-only"`, see
//! [`crate::compile::CompileOptions::line_tables`]) yields PTX with `.file N "path"` and
//! `.loc N line col` directives. [`Annotator`] turns those into comments holding the source line
//! they point at, so the PTX reads as "this Rust line became these instructions". The same
//! mapping annotates SASS from `nvdisasm -g` (`//## File "path", line N`).
//!
//! LLVM also writes DWARF sections (`.section .debug_*`) and marks the target `, debug`; ptxas
//! 13.0 rejects those sections, so [`strip_debug_sections`] removes them and keeps `.loc`, which
//! `ptxas -lineinfo` accepts.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Component, Path, PathBuf};

/// Removes what ptxas cannot assemble from LLVM's debug-info PTX: the `, debug` target modifier,
/// `.section .debug_*` blocks and the `$L__sec_end` labels between them. `.file`/`.loc` stay.
pub fn strip_debug_sections(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut in_section = false;
    for line in ptx.lines() {
        let code = line.trim();
        if in_section {
            if code == "}" {
                in_section = false;
            }
            continue;
        }
        if code.starts_with(".section") && code.contains(".debug") {
            // One-line form: `.section .debug_macinfo { }`.
            in_section = !(code.contains('{') && code.contains('}'));
            continue;
        }
        if code.starts_with("$L__sec_end") {
            continue;
        }
        if let Some(target) = code.strip_prefix(".target")
            && target.contains("debug")
        {
            let arches: Vec<&str> = target
                .split(',')
                .map(str::trim)
                .filter(|t| *t != "debug" && !t.is_empty())
                .collect();
            out.push_str(&format!(".target {}\n", arches.join(", ")));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Removes line-table directives (`.file`, `.loc`) and the `$L__tmp`/`$L__func_begin` labels
/// LLVM places for them: the PTX as an ordinary build would print it.
pub fn strip_line_info(ptx: &str) -> String {
    ptx.lines()
        .filter(|l| {
            let code = l.trim();
            !(is_directive(code, ".loc")
                || is_directive(code, ".file")
                || code.starts_with("$L__tmp")
                || code.starts_with("$L__func_begin")
                || code.starts_with("$L__func_end"))
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Whether `code` is the directive `name` (`.loc` but not `.local`).
fn is_directive(code: &str, name: &str) -> bool {
    code.strip_prefix(name)
        .is_some_and(|rest| rest.starts_with(char::is_whitespace))
}

/// The `.file` table: file number -> path.
pub fn file_table(ptx: &str) -> BTreeMap<u32, PathBuf> {
    let mut files = BTreeMap::new();
    for line in ptx.lines() {
        let code = line.trim();
        if !is_directive(code, ".file") {
            continue;
        }
        let rest = &code[".file".len()..];
        let rest = rest.trim();
        let Some((number, path)) = rest.split_once(char::is_whitespace) else {
            continue;
        };
        let Ok(number) = number.parse() else { continue };
        // `.file 1 "path"` or `.file 1 "path", timestamp, size`.
        let path = path.trim();
        let Some(path) = path.strip_prefix('"').and_then(|p| p.split('"').next()) else {
            continue;
        };
        files.insert(number, PathBuf::from(path));
    }
    files
}

/// One top-level function of a PTX module (`.entry` kernel or `.func`), as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxFunction {
    pub name: String,
    pub is_entry: bool,
    /// The function's lines, header through closing brace.
    pub text: String,
}

/// The functions defined in a module, in order (prototypes are skipped).
pub fn functions(ptx: &str) -> Vec<PtxFunction> {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let code = code_of(lines[i]);
        let header = code.contains(".entry ") || code.contains(".func ") || code.ends_with(".func");
        if !header || code.starts_with("//") {
            i += 1;
            continue;
        }
        // Gather the header until the body opens or a `;` shows it is a prototype.
        let start = i;
        let mut header_text = String::new();
        let mut j = i;
        let mut body_at = None;
        while j < lines.len() {
            let c = code_of(lines[j]);
            header_text.push_str(c);
            header_text.push(' ');
            if c.starts_with('{') || c.ends_with('{') {
                body_at = Some(j);
                break;
            }
            if c.ends_with(';') {
                break;
            }
            j += 1;
        }
        let Some(body_at) = body_at else {
            i = j + 1;
            continue;
        };
        let mut depth = 0usize;
        let mut end = body_at;
        for (k, line) in lines.iter().enumerate().skip(body_at) {
            let c = code_of(line);
            depth += c.matches('{').count();
            depth = depth.saturating_sub(c.matches('}').count());
            end = k;
            if depth == 0 {
                break;
            }
        }
        let name = function_name(&header_text).unwrap_or_default();
        let is_entry = header_text.contains(".entry ");
        let text = lines[start..=end]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>();
        out.push(PtxFunction {
            name,
            is_entry,
            text,
        });
        i = end + 1;
    }
    out
}

fn code_of(line: &str) -> &str {
    line.split("//").next().unwrap_or("").trim()
}

/// The name in a function header: the identifier before the parameter list, after an optional
/// return-value list `(.param ...)`.
fn function_name(header: &str) -> Option<String> {
    let at = header
        .find(".entry ")
        .map(|p| p + ".entry ".len())
        .or_else(|| header.find(".func").map(|p| p + ".func".len()))?;
    let mut rest = header[at..].trim_start();
    if rest.starts_with('(') {
        let close = rest.find(')')?;
        rest = rest[close + 1..].trim_start();
    }
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.'))
        .collect();
    (!name.is_empty()).then_some(name)
}

/// A kernel's text together with the `.func`s it calls (directly or not), so an un-inlined
/// helper shows up with the kernel that uses it. `None` when no entry has that name.
pub fn kernel_with_callees(ptx: &str, kernel: &str) -> Option<String> {
    let all = functions(ptx);
    let entry = all.iter().find(|f| f.is_entry && f.name == kernel)?;
    let mut included: BTreeSet<&str> = BTreeSet::new();
    let mut order = vec![entry];
    let mut frontier = vec![entry];
    while let Some(f) = frontier.pop() {
        let idents: BTreeSet<&str> = f
            .text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .collect();
        for callee in all.iter().filter(|g| !g.is_entry) {
            if idents.contains(callee.name.as_str()) && included.insert(callee.name.as_str()) {
                order.push(callee);
                frontier.push(callee);
            }
        }
    }
    Some(
        order
            .iter()
            .map(|f| f.text.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// Where a source file comes from, for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A file of the workspace (the kernel crate or the `gpu` library).
    Workspace,
    /// The standard library (`core`, `stdarch`), from the nvptx64 sysroot's source.
    Std,
    /// Anything else (a crates.io dependency, ...).
    External,
}

/// Maps `.loc`/`//## File` references to source text.
#[derive(Debug)]
pub struct Annotator {
    workspace_root: PathBuf,
    /// Hide `core`/`stdarch` lines (show only workspace and dependency sources).
    pub hide_std: bool,
    cache: HashMap<PathBuf, Option<Vec<String>>>,
}

impl Annotator {
    pub fn new(workspace_root: impl Into<PathBuf>) -> Self {
        Annotator {
            workspace_root: workspace_root.into(),
            hide_std: false,
            cache: HashMap::new(),
        }
    }

    /// A short name for a source path: workspace-relative for workspace files, `core/src/...`
    /// or `stdarch/...` for the standard library, `<crate>-<version>/...` for registry crates.
    pub fn display_path(&self, path: &Path) -> (String, Origin) {
        let path = normalize(path);
        if let Some(i) = find_component(&path, "library") {
            let rest: PathBuf = path.components().skip(i + 1).collect();
            return (rest.display().to_string(), Origin::Std);
        }
        if let Ok(rel) = path.strip_prefix(&self.workspace_root) {
            return (rel.display().to_string(), Origin::Workspace);
        }
        // ~/.cargo/registry/src/<index>/<crate>-<version>/...
        if let Some(i) = find_component(&path, "registry") {
            let rest: PathBuf = path.components().skip(i + 3).collect();
            return (rest.display().to_string(), Origin::External);
        }
        (path.display().to_string(), Origin::External)
    }

    /// Line `line` (1-based) of `path`, trimmed; `None` if the file cannot be read.
    pub fn source_line(&mut self, path: &Path, line: u32) -> Option<String> {
        let lines = self
            .cache
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                fs::read_to_string(path)
                    .ok()
                    .map(|t| t.lines().map(str::to_string).collect())
            })
            .as_ref()?;
        let text = lines.get(usize::try_from(line).ok()?.checked_sub(1)?)?;
        Some(text.trim().to_string())
    }

    /// The comment line shown above the instructions of `path:line`, or `None` when hidden.
    fn comment(&mut self, prefix: &str, path: &Path, line: u32) -> Option<String> {
        let (shown, origin) = self.display_path(path);
        if self.hide_std && origin == Origin::Std {
            return None;
        }
        let text = self.source_line(path, line).unwrap_or_default();
        let mut text = text;
        if text.chars().count() > 100 {
            text = text.chars().take(97).collect::<String>() + "...";
        }
        Some(format!("{prefix}{shown}:{line}  {text}"))
    }

    /// `ptx` (a whole module or one kernel's text) with each run of instructions preceded by a
    /// `//> file:line  source` comment. `files` is the module's `.file` table (see
    /// [`file_table`]); `.loc`/`.file` directives and line-table labels are dropped.
    pub fn annotate_ptx(&mut self, ptx: &str, files: &BTreeMap<u32, PathBuf>) -> String {
        let mut out = String::with_capacity(ptx.len() * 2);
        let mut last: Option<(u32, u32)> = None;
        for line in ptx.lines() {
            let code = line.trim();
            if let Some(loc) = code
                .strip_prefix(".loc")
                .filter(|rest| rest.starts_with(char::is_whitespace))
            {
                let mut parts = loc.split_whitespace();
                let file = parts.next().and_then(|f| f.parse::<u32>().ok());
                let row = parts
                    .next()
                    .and_then(|l| l.trim_end_matches(',').parse::<u32>().ok());
                if let (Some(file), Some(row)) = (file, row)
                    && row != 0
                    && last != Some((file, row))
                {
                    last = Some((file, row));
                    if let Some(path) = files.get(&file)
                        && let Some(comment) = self.comment("\t//> ", path, row)
                    {
                        out.push_str(&comment);
                        out.push('\n');
                    }
                }
                continue;
            }
            if is_directive(code, ".file")
                || code.starts_with("$L__tmp")
                || code.starts_with("$L__func_begin")
                || code.starts_with("$L__func_end")
                || code.is_empty()
            {
                continue;
            }
            if code.starts_with('}') && !code.contains("callseq") {
                last = None;
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    /// SASS from `nvdisasm -g` with its `//## File "path", line N` markers replaced by the source
    /// line they name.
    pub fn annotate_sass(&mut self, sass: &str) -> String {
        let mut out = String::with_capacity(sass.len() * 2);
        for line in sass.lines() {
            let code = line.trim();
            if let Some(rest) = code.strip_prefix("//## File \"")
                && let Some((path, rest)) = rest.split_once('"')
            {
                let row = rest
                    .trim_start_matches([',', ' '])
                    .strip_prefix("line ")
                    .and_then(|r| {
                        r.split(|c: char| !c.is_ascii_digit())
                            .next()
                            .and_then(|n| n.parse::<u32>().ok())
                    });
                if let Some(row) = row {
                    if let Some(comment) = self.comment("\t//> ", Path::new(path), row) {
                        out.push_str(&comment);
                        out.push('\n');
                    }
                    continue;
                }
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

/// Resolves `.` and `..` lexically (LLVM writes `core/src/../../stdarch/...`).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn find_component(path: &Path, name: &str) -> Option<usize> {
    path.components()
        .position(|c| c.as_os_str().to_str() == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
.version 7.0
.target sm_80, debug
.address_size 64

.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.local .align 8 .b8 \t__local_depot0[8];
\t.reg .b32 \t%r<3>;
\t.loc\t1 2 0
$L__func_begin0:
\t.loc\t1 2 0
\tld.param.b64 \t%rd1, [k_param_0];
\t.loc\t2 5 3
\tmov.u32 \t%r1, %tid.x;
\t{ // callseq 0, 0
\tcall.uni helper, ();
\t} // callseq 0
\t.loc\t1 3 1
\tret;
}
.func helper()
{
\tret;
}
.extern .func (.param .b32 func_retval0) vprintf
(
\t.param .b64 vprintf_param_0
)
;
\t.file\t1 \"/ws/kernels/k/src/lib.rs\"
\t.file\t2 \"/ws/target/nvptx-sysroot/x/src/library/core/src/../../stdarch/crates/core_arch/src/nvptx/mod.rs\"
$L__sec_end0:
\t.section\t.debug_abbrev
\t{
.b8 1
\t}
\t.section\t.debug_macinfo\t{\t}
";

    #[test]
    fn strips_debug_sections_but_keeps_loc() {
        let s = strip_debug_sections(SAMPLE);
        assert!(s.contains(".target sm_80\n"), "{s}");
        assert!(!s.contains(".section"));
        assert!(!s.contains("$L__sec_end"));
        assert!(!s.contains(".b8 1"));
        assert!(s.contains(".loc\t2 5 3"));
        assert!(s.contains(".file\t1"));
        let raw = strip_line_info(&s);
        assert!(!raw.contains(".loc\t") && !raw.contains(".file") && !raw.contains("$L__func"));
        assert!(raw.contains(".local .align 8"));
    }

    #[test]
    fn finds_functions_and_callees() {
        let fs = functions(SAMPLE);
        let names: Vec<_> = fs.iter().map(|f| (f.name.as_str(), f.is_entry)).collect();
        assert_eq!(names, [("k", true), ("helper", false)]);
        let text = kernel_with_callees(SAMPLE, "k").unwrap();
        assert!(text.contains(".func helper()"));
        assert!(kernel_with_callees(SAMPLE, "helper").is_none());
    }

    #[test]
    fn annotates_loc_with_source_lines() {
        let dir = std::env::temp_dir().join(format!("gpu-annotate-{}", std::process::id()));
        let src = dir.join("kernels/k/src");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("lib.rs"), "// one\nfn k() {\n    x += 1;\n}\n").unwrap();
        let ptx = SAMPLE.replace("/ws", &dir.display().to_string());
        let files = file_table(&ptx);
        assert_eq!(files.len(), 2);
        let mut annotator = Annotator::new(&dir);
        let out = annotator.annotate_ptx(&kernel_with_callees(&ptx, "k").unwrap(), &files);
        assert!(
            out.contains("//> kernels/k/src/lib.rs:2  fn k() {"),
            "{out}"
        );
        assert!(out.contains("//> kernels/k/src/lib.rs:3  x += 1;"), "{out}");
        assert!(
            out.contains("//> stdarch/crates/core_arch/src/nvptx/mod.rs:5"),
            "{out}"
        );
        // The repeated `.loc 1 2 0` gives one comment.
        assert_eq!(out.matches("lib.rs:2 ").count(), 1, "{out}");
        assert!(!out.contains(".loc\t"));
        assert!(out.contains(".local .align 8"), "{out}");
        annotator.hide_std = true;
        let out = annotator.annotate_ptx(&ptx, &files);
        assert!(!out.contains("stdarch"), "{out}");
        let sass = format!(
            "\t//## File \"{}/kernels/k/src/lib.rs\", line 3\n        /*0000*/ IADD3 R1, R1, 1, RZ ;\n",
            dir.display()
        );
        let out = annotator.annotate_sass(&sass);
        assert!(out.contains("//> kernels/k/src/lib.rs:3  x += 1;"), "{out}");
        assert!(out.contains("IADD3"));
        let _ = fs::remove_dir_all(&dir);
    }
}
