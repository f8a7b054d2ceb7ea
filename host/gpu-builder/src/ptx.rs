//! Reading the PTX that LLVM emitted: entry points and their parameters, module-scope shared
//! memory, which functions reference what, and the `#[kernel]` signature records.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::manifest::{GenericInfo, KernelInfo, Manifest, ParamInfo, PtxParam, SharedVar};

/// Prefix of the statics `#[kernel]` emits to record a kernel's Rust signature.
pub const SIGNATURE_PREFIX: &str = "__gpu_kernel_signature_";

/// A function or entry and the identifiers its body mentions.
#[derive(Debug, Default)]
struct Function {
    is_entry: bool,
    params: Vec<PtxParam>,
    references: BTreeSet<String>,
}

/// Parsed module.
#[derive(Debug, Default)]
pub struct PtxModule {
    pub version: String,
    pub target: String,
    functions: BTreeMap<String, Function>,
    entry_order: Vec<String>,
    shared: Vec<SharedVar>,
    signatures: BTreeMap<String, Signature>,
}

#[derive(Debug, Clone, Deserialize)]
struct Signature {
    name: String,
    module: String,
    params: Vec<ParamInfo>,
    /// `#[kernel(launch_bounds(threads, min_blocks))]`.
    #[serde(default)]
    launch_bounds: Option<(u32, u32)>,
    /// `#[kernel(block(x, y, z))]`: the one block shape (PTX `.reqntid`).
    #[serde(default)]
    block: Option<[u32; 3]>,
    /// `#[kernel(grid_dims(n))]`: at most `n` grid dimensions (a comment the host reads).
    #[serde(default)]
    grid_dims: Option<u32>,
    /// The kernel is an `unsafe fn`.
    #[serde(default, rename = "unsafe")]
    is_unsafe: bool,
    /// The generic kernel this entry is an instance of.
    #[serde(default)]
    generic: Option<GenericInfo>,
}

/// The module text with `#[kernel]` signature records removed (they are build metadata, not
/// device data), and the parsed module.
pub fn parse(ptx: &str) -> Result<(String, PtxModule)> {
    let mut module = PtxModule::default();
    let mut cleaned = String::with_capacity(ptx.len());
    let lines: Vec<&str> = ptx.lines().collect();
    let mut i = 0;
    let mut depth = 0usize;
    let mut current: Option<String> = None;
    while i < lines.len() {
        let line = lines[i];
        let code = strip_comment(line).trim();
        if depth == 0 {
            if let Some(v) = code.strip_prefix(".version") {
                module.version = v.trim().to_string();
            } else if let Some(t) = code.strip_prefix(".target") {
                module.target = t.trim().to_string();
            }
            if code.contains(SIGNATURE_PREFIX) && code.contains(".global") {
                let sig = parse_signature_record(code)?;
                module.signatures.insert(sig.name.clone(), sig);
                i += 1;
                continue;
            }
            if let Some(var) = parse_shared_decl(code) {
                module.shared.push(var);
            }
            if let Some((name, is_entry)) = function_header(code) {
                // Header, then parameter list up to `)`, then either `;` (a prototype) or a body.
                // Collect text from the name on (skipping a return-value list) until the
                // parameter list closes.
                let first = strip_comment(lines[i]);
                let name_at = first.find(name.as_str()).map_or(0, |p| p + name.len());
                let mut header = first[name_at..].to_string();
                header.push('\n');
                let mut j = i;
                while !header.contains(')') && j + 1 < lines.len() {
                    j += 1;
                    header.push_str(strip_comment(lines[j]));
                    header.push('\n');
                }
                let next_code = lines
                    .get(j + 1)
                    .map(|l| strip_comment(l).trim())
                    .unwrap_or("");
                let is_prototype = header.trim_end().ends_with(';')
                    || next_code.starts_with(".noreturn;")
                    || next_code == ";";
                if !is_prototype {
                    let params = if is_entry {
                        parse_params(&header)
                    } else {
                        Vec::new()
                    };
                    if is_entry {
                        module.entry_order.push(name.clone());
                    }
                    module.functions.insert(
                        name.clone(),
                        Function {
                            is_entry,
                            params,
                            references: BTreeSet::new(),
                        },
                    );
                    current = Some(name);
                }
            }
        }
        let opens = code.matches('{').count();
        let closes = code.matches('}').count();
        // Identifiers inside a function body (a body starts with a line opening `{`).
        if let Some(name) = &current
            && (depth > 0 || code.starts_with('{'))
        {
            let function = module.functions.get_mut(name).expect("inserted above");
            function
                .references
                .extend(identifiers(code).map(str::to_string));
        }
        depth = (depth + opens).saturating_sub(closes);
        if depth == 0 && closes > 0 {
            current = None;
        }
        cleaned.push_str(line);
        cleaned.push('\n');
        i += 1;
    }
    if module.version.is_empty() {
        return Err(Error::msg("not a PTX module: no `.version` line"));
    }
    let cleaned = add_launch_bounds(&cleaned, &module)?;
    Ok((cleaned, module))
}

/// Adds each `#[kernel]`'s launch-shape directives after its entry's parameter list:
/// `.maxntid`/`.minnctapersm` for `launch_bounds` (ptxas then limits registers so that the
/// blocks fit on an SM, and the driver refuses larger blocks), `.reqntid` for `block`, and for
/// `grid_dims` a comment the host reads ([`gpu_abi::GRID_DIMS_MARKER`]; PTX has no grid-shape
/// directive).
fn add_launch_bounds(ptx: &str, module: &PtxModule) -> Result<String> {
    let bounded: BTreeMap<&str, String> = module
        .signatures
        .values()
        .filter_map(|s| {
            let mut directives = match (s.launch_bounds, s.block) {
                (Some((threads, blocks)), _) => {
                    format!(".maxntid {threads}, 1, 1\n.minnctapersm {blocks}\n")
                }
                (None, Some([x, y, z])) => format!(".reqntid {x}, {y}, {z}\n"),
                (None, None) => String::new(),
            };
            if let Some(dims) = s.grid_dims {
                directives.push_str(&format!(
                    "{}{dims}))]: a launch must not have more grid dimensions (gpu-host refuses one)\n",
                    gpu_abi::GRID_DIMS_MARKER
                ));
            }
            (!directives.is_empty()).then_some((s.name.as_str(), directives))
        })
        .collect();
    if bounded.is_empty() {
        return Ok(ptx.to_string());
    }
    let mut out = String::with_capacity(ptx.len() + 64 * bounded.len());
    let mut pending: Option<&str> = None;
    let mut placed = 0;
    for line in ptx.lines() {
        let code = strip_comment(line).trim();
        if pending.is_none()
            && let Some((name, true)) = function_header(code)
            && let Some(directives) = bounded.get(name.as_str())
        {
            pending = Some(directives);
        }
        out.push_str(line);
        out.push('\n');
        if let Some(directives) = pending
            && code.contains(')')
        {
            out.push_str(directives);
            pending = None;
            placed += 1;
        }
    }
    if placed != bounded.len() {
        return Err(Error::msg(format!(
            "launch bounds: {} kernel(s) with bounds, {placed} entry header(s) found",
            bounded.len()
        )));
    }
    Ok(out)
}

impl PtxModule {
    pub fn entry_names(&self) -> &[String] {
        &self.entry_order
    }

    /// Builds the manifest; checks every `#[kernel]` record against its PTX entry.
    pub fn manifest(&self, crate_name: &str, arch: &str, ptx_file: &str) -> Result<Manifest> {
        let mut kernels = Vec::new();
        for name in &self.entry_order {
            let function = &self.functions[name];
            let reachable = self.reachable_from(name);
            let mut static_shared_bytes = 0;
            let mut uses_dynamic_shared = false;
            for var in &self.shared {
                if reachable
                    .iter()
                    .any(|f| self.functions[f].references.contains(&var.name))
                {
                    match var.bytes {
                        Some(bytes) => {
                            static_shared_bytes = align_up(static_shared_bytes, var.align) + bytes
                        }
                        None => uses_dynamic_shared = true,
                    }
                }
            }
            let (rust_module, params, is_unsafe, generic) = match self.signatures.get(name) {
                Some(sig) => {
                    let expected: usize = sig.params.iter().map(|p| p.kind.ptx_param_count()).sum();
                    if expected != function.params.len() {
                        return Err(Error::msg(format!(
                            "kernel `{name}`: its #[kernel] record lists {expected} PTX parameters but the PTX entry has {}",
                            function.params.len()
                        )));
                    }
                    (
                        Some(sig.module.clone()),
                        sig.params.clone(),
                        sig.is_unsafe,
                        sig.generic.clone(),
                    )
                }
                None => (None, Vec::new(), false, None),
            };
            kernels.push(KernelInfo {
                name: name.clone(),
                rust_module,
                params,
                is_unsafe,
                generic,
                ptx_params: function.params.clone(),
                static_shared_bytes,
                uses_dynamic_shared,
            });
        }
        Ok(Manifest {
            crate_name: crate_name.to_string(),
            arch: arch.to_string(),
            ptx_version: self.version.clone(),
            ptx_file: ptx_file.to_string(),
            kernels,
            shared: self.shared.clone(),
        })
    }

    /// `name` and every function it calls, transitively.
    fn reachable_from(&self, name: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![name.to_string()];
        while let Some(f) = stack.pop() {
            if !seen.insert(f.clone()) {
                continue;
            }
            if let Some(function) = self.functions.get(&f) {
                stack.extend(
                    function
                        .references
                        .iter()
                        .filter(|r| self.functions.contains_key(*r) && !self.functions[*r].is_entry)
                        .cloned(),
                );
            }
        }
        seen
    }
}

fn align_up(value: u64, align: u64) -> u64 {
    value.div_ceil(align.max(1)) * align.max(1)
}

pub(crate) fn strip_comment(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

/// `(name, is_entry)` for lines like `.visible .entry foo(` or `.func (.param .b32 r) bar(`.
pub(crate) fn function_header(code: &str) -> Option<(String, bool)> {
    let is_entry = code.contains(".entry ");
    if !is_entry && !code.contains(".func") {
        return None;
    }
    let keyword = if is_entry { ".entry" } else { ".func" };
    let mut rest = code[code.find(keyword)? + keyword.len()..].trim_start();
    // A return-value list comes first for functions: `.func (.param .b32 func_retval0) name(`.
    if rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let end = rest
        .find(|c: char| c == '(' || c.is_whitespace() || c == ';')
        .unwrap_or(rest.len());
    let name = &rest[..end];
    (!name.is_empty()).then(|| (name.to_string(), is_entry))
}

/// Parameters from an entry header: `.param .u64 .ptr .align 1 k_param_0,` or
/// `.param .align 4 .b8 k_param_1[12]`.
fn parse_params(header: &str) -> Vec<PtxParam> {
    let open = header.find('(').map_or(0, |i| i + 1);
    let close = header.rfind(')').unwrap_or(header.len());
    header[open..close]
        .split(',')
        .filter_map(|decl| {
            let tokens: Vec<&str> = decl.split_whitespace().collect();
            if tokens.first() != Some(&".param") {
                return None;
            }
            let mut align = None;
            let mut ty = None;
            let mut name = None;
            let mut k = 1;
            while k < tokens.len() {
                match tokens[k] {
                    ".align" => {
                        align = tokens.get(k + 1).and_then(|a| a.parse().ok());
                        k += 1;
                    }
                    ".ptr" | ".global" | ".const" | ".shared" | ".local" => {}
                    t if t.starts_with('.') => ty = Some(t.to_string()),
                    t => name = Some(t.to_string()),
                }
                k += 1;
            }
            let ty = ty?;
            let name = name?;
            let elem_size = scalar_size(&ty);
            let (name, count) = match name.split_once('[') {
                Some((n, len)) => (
                    n.to_string(),
                    len.trim_end_matches(']').parse().unwrap_or(1),
                ),
                None => (name, 1),
            };
            Some(PtxParam {
                name,
                size: elem_size * count,
                align: align.unwrap_or(elem_size),
                ty,
            })
        })
        .collect()
}

fn scalar_size(ty: &str) -> u64 {
    let digits: String = ty.chars().filter(char::is_ascii_digit).collect();
    digits.parse::<u64>().map_or(8, |bits| (bits / 8).max(1))
}

/// `.shared .align 16 .b8 name[1024];` or `.extern .shared .align 16 .b8 name[];`.
fn parse_shared_decl(code: &str) -> Option<SharedVar> {
    let tokens: Vec<&str> = code.trim_end_matches(';').split_whitespace().collect();
    if !tokens.contains(&".shared") {
        return None;
    }
    let is_extern = tokens.contains(&".extern");
    let align = tokens
        .iter()
        .position(|t| *t == ".align")
        .and_then(|i| tokens.get(i + 1))
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let ty = tokens
        .iter()
        .rev()
        .find(|t| t.starts_with('.') && **t != ".shared")
        .copied()
        .unwrap_or(".b8");
    let last = tokens.last()?;
    let (name, count) = match last.split_once('[') {
        Some((n, len)) => (n, len.trim_end_matches(']').parse::<u64>().ok()),
        None => (*last, Some(1)),
    };
    let bytes = if is_extern {
        None
    } else {
        Some(scalar_size(ty) * count.unwrap_or(0))
    };
    Some(SharedVar {
        name: name.to_string(),
        bytes,
        align,
    })
}

fn parse_signature_record(code: &str) -> Result<Signature> {
    let open = code
        .find('{')
        .ok_or_else(|| Error::msg(format!("malformed #[kernel] record: {code}")))?;
    let close = code
        .rfind('}')
        .ok_or_else(|| Error::msg(format!("malformed #[kernel] record: {code}")))?;
    let bytes: Vec<u8> = code[open + 1..close]
        .split(',')
        .map(|b| b.trim().parse::<u8>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::msg(format!("malformed #[kernel] record ({e}): {code}")))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::msg(format!(
            "malformed #[kernel] record ({e}): {}",
            String::from_utf8_lossy(&bytes)
        ))
    })
}

fn identifiers(code: &str) -> impl Iterator<Item = &str> {
    code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%'))
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::ParamKind;

    fn record(json: &str) -> String {
        let bytes: Vec<String> = json.bytes().map(|b| b.to_string()).collect();
        format!(
            ".visible .global .align 1 .b8 {SIGNATURE_PREFIX}k[{}] = {{{}}};",
            json.len(),
            bytes.join(", ")
        )
    }

    /// The sample module with its kernel record replaced by `json`.
    fn sample_with_record(json: &str) -> String {
        sample()
            .lines()
            .map(|l| {
                if l.contains(SIGNATURE_PREFIX) {
                    record(json)
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn sample() -> String {
        let sig = record(
            r#"{"name":"k","module":"demo","params":[{"name":"x","kind":"slice","ty":"f32"},{"name":"p","kind":"value","ty":"Params"}]}"#,
        );
        format!(
            "//\n.version 7.0\n.target sm_80\n.address_size 64\n\n.func helper\n(\n\t.param .b64 helper_param_0\n)\n;\n{sig}\n\
             .shared .align 16 .b8 tile[1024];\n.shared .align 4 .b8 unused[64];\n.extern .shared .align 16 .b8 dyn[];\n\n\
             .visible .entry k(\n\t.param .u64 .ptr .align 1 k_param_0,\n\t.param .u64 k_param_1,\n\t.param .align 4 .b8 k_param_2[12]\n)\n{{\n\
             \t.reg .b32 %r<2>;\n\t{{ // callseq 0, 0\n\tcall.uni helper, (param0);\n\t}}\n\tret;\n}}\n\
             .func helper(\n\t.param .b64 helper_param_0\n)\n{{\n\tmov.u32 %r1, tile;\n\tmov.u32 %r2, dyn;\n\tret;\n}}\n"
        )
    }

    #[test]
    fn entries_params_shared_and_records() {
        let (cleaned, module) = parse(&sample()).unwrap();
        assert!(
            !cleaned.contains(SIGNATURE_PREFIX),
            "records are stripped from the PTX"
        );
        assert_eq!(module.entry_names(), ["k"]);
        let manifest = module.manifest("demo", "sm_80", "demo.ptx").unwrap();
        let k = manifest.kernel("k").unwrap();
        assert_eq!(k.ptx_params.len(), 3);
        assert_eq!(
            k.ptx_params[2],
            PtxParam {
                name: "k_param_2".into(),
                ty: ".b8".into(),
                size: 12,
                align: 4
            }
        );
        assert_eq!(k.params[1].kind, ParamKind::Value);
        assert_eq!(k.rust_module.as_deref(), Some("demo"));
        assert_eq!(
            k.static_shared_bytes, 1024,
            "only `tile` is reachable (through `helper`)"
        );
        assert!(k.uses_dynamic_shared);
        assert_eq!(manifest.ptx_version, "7.0");
    }

    #[test]
    fn launch_bounds_follow_the_parameter_list() {
        let json = r#"{"name":"k","module":"demo","params":[{"name":"x","kind":"slice","ty":"f32"},{"name":"p","kind":"value","ty":"Params"}],"launch_bounds":[256,4]}"#;
        let ptx = sample_with_record(json);
        let (cleaned, _) = parse(&ptx).unwrap();
        assert!(
            cleaned.contains("k_param_2[12]\n)\n.maxntid 256, 1, 1\n.minnctapersm 4\n{"),
            "{cleaned}"
        );
        assert_eq!(cleaned.matches(".maxntid").count(), 1, "not on `helper`");
        let (plain, _) = parse(&sample()).unwrap();
        assert!(!plain.contains(".maxntid"));
    }

    #[test]
    fn an_exact_block_shape_becomes_reqntid() {
        let json = r#"{"name":"k","module":"demo","params":[{"name":"x","kind":"slice","ty":"f32"},{"name":"p","kind":"value","ty":"Params"}],"block":[32,8,1]}"#;
        let ptx = sample_with_record(json);
        let (cleaned, _) = parse(&ptx).unwrap();
        assert!(
            cleaned.contains("k_param_2[12]\n)\n.reqntid 32, 8, 1\n{"),
            "{cleaned}"
        );
        assert!(!cleaned.contains(".maxntid"));
    }

    #[test]
    fn a_grid_dimension_count_becomes_a_comment_the_host_reads() {
        let json = r#"{"name":"k","module":"demo","params":[{"name":"x","kind":"slice","ty":"f32"},{"name":"p","kind":"value","ty":"Params"}],"block":[256,1,1],"grid_dims":1}"#;
        let (cleaned, _) = parse(&sample_with_record(json)).unwrap();
        assert!(
            cleaned.contains(
                "k_param_2[12]\n)\n.reqntid 256, 1, 1\n// #[kernel(grid_dims(1))]: a launch must \
                 not have more grid dimensions (gpu-host refuses one)\n{"
            ),
            "{cleaned}"
        );
        // Alone, without a block shape.
        let json = r#"{"name":"k","module":"demo","params":[{"name":"x","kind":"slice","ty":"f32"},{"name":"p","kind":"value","ty":"Params"}],"grid_dims":2}"#;
        let (cleaned, _) = parse(&sample_with_record(json)).unwrap();
        assert!(
            cleaned.contains("k_param_2[12]\n)\n// #[kernel(grid_dims(2))]"),
            "{cleaned}"
        );
    }

    #[test]
    fn an_unsafe_kernel_is_marked_in_the_manifest() {
        let json = r#"{"name":"k","module":"demo","params":[{"name":"x","kind":"slice","ty":"f32"},{"name":"p","kind":"value","ty":"Params"}],"unsafe":true}"#;
        let ptx = sample_with_record(json);
        let (_, module) = parse(&ptx).unwrap();
        let manifest = module.manifest("demo", "sm_80", "demo.ptx").unwrap();
        assert!(manifest.kernel("k").unwrap().is_unsafe);
        let json = serde_json::to_string(&manifest).unwrap();
        assert!(json.contains("\"unsafe\":true"), "{json}");
        let (_, plain) = parse(&sample()).unwrap();
        let plain = plain.manifest("demo", "sm_80", "demo.ptx").unwrap();
        assert!(!plain.kernel("k").unwrap().is_unsafe);
    }

    #[test]
    fn record_and_entry_disagreeing_is_an_error() {
        let ptx = sample()
            .replace("\t.param .align 4 .b8 k_param_2[12]\n", "")
            .replace("k_param_1,", "k_param_1");
        let (_, module) = parse(&ptx).unwrap();
        let err = module
            .manifest("demo", "sm_80", "demo.ptx")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("kernel `k`") && err.contains("3 PTX parameters"),
            "{err}"
        );
    }
}

/// A line without its comment, trimmed.
pub(crate) fn code(line: &str) -> &str {
    strip_comment(line).trim()
}

/// Whether the line holds no instruction or label (blank, comment, `.loc`): what the PTX
/// rewrites step over.
pub(crate) fn is_filler(line: &str) -> bool {
    let c = code(line);
    c.is_empty() || c.starts_with(".loc")
}

/// The label a line defines.
pub(crate) fn label(line: &str) -> Option<&str> {
    code(line).strip_suffix(':')
}

/// A conditional branch: `(negated, predicate, target)`.
pub(crate) fn conditional_branch(line: &str) -> Option<(bool, &str, &str)> {
    let rest = code(line).strip_prefix('@')?;
    let (negated, rest) = match rest.strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let (pred, rest) = rest.split_once(char::is_whitespace)?;
    Some((negated, pred, unconditional_branch(rest)?))
}

/// The target of an unconditional `bra`/`bra.uni`.
pub(crate) fn unconditional_branch(line: &str) -> Option<&str> {
    let c = code(line);
    let rest = c
        .strip_prefix("bra.uni")
        .or_else(|| c.strip_prefix("bra"))?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    rest.trim().strip_suffix(';').map(str::trim)
}

/// The target of a line's branch, conditional or not.
pub(crate) fn branch_target(line: &str) -> Option<&str> {
    conditional_branch(line)
        .map(|(_, _, target)| target)
        .or_else(|| unconditional_branch(line))
}

/// The register names a line mentions (`%r12`, `%rd3`, `%p1`, ...), each time it mentions them.
pub(crate) fn registers(line: &str) -> impl Iterator<Item = &str> {
    let c = strip_comment(line);
    c.match_indices('%').map(move |(at, _)| {
        let end = c[at + 1..]
            .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '$'))
            .map_or(c.len(), |e| at + 1 + e);
        &c[at..end]
    })
}

/// Opcodes (up to the first `.`) that only compute registers from registers.
pub(crate) const ARITHMETIC: &[&str] = &[
    "add", "sub", "mul", "mad", "mul24", "mad24", "shl", "shr", "and", "or", "xor", "not", "cvt",
    "cvta", "mov", "selp", "setp", "min", "max", "neg", "abs", "cnot", "bfe", "bfi", "prmt", "shf",
    "popc", "clz", "brev", "fma", "rcp", "sqrt", "rsqrt", "lop3", "div", "rem", "ex2", "lg2",
    "sin", "cos", "tanh", "testp", "copysign", "set",
];

/// A single unpredicated instruction: `(opcode, operands)` (`None` for predicated, compound or
/// directive lines).
pub(crate) fn instruction(line: &str) -> Option<(&str, Vec<&str>)> {
    let c = code(line);
    let body = c.strip_suffix(';')?;
    if body.contains([';', '{', '}', '@']) || c.starts_with('.') {
        return None;
    }
    let (opcode, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    Some((opcode, rest.split(',').map(str::trim).collect()))
}

/// The registers a line writes (its first operand, or every register of a `{...}` first
/// operand), for instructions that write one.
pub(crate) fn destinations(line: &str) -> Vec<&str> {
    let c = strip_comment(line).trim();
    let c = match c.strip_prefix('@') {
        Some(rest) => rest.split_once(char::is_whitespace).map_or("", |(_, r)| r),
        None => c,
    };
    let Some((opcode, rest)) = c.split_once(char::is_whitespace) else {
        return Vec::new();
    };
    let base = opcode.split('.').next().unwrap_or_default();
    if matches!(
        base,
        "st" | "bra" | "bar" | "barrier" | "ret" | "exit" | "trap" | "red" | "membar" | "fence"
    ) || opcode.starts_with('.')
    {
        return Vec::new();
    }
    let rest = rest.trim_start();
    let first = if rest.starts_with('{') {
        rest.split('}').next().unwrap_or_default()
    } else {
        rest.split(',').next().unwrap_or_default()
    };
    registers(first).collect()
}

/// The labels whose block is only a trap.
pub(crate) fn trap_labels(body: &[String]) -> HashSet<String> {
    let code_lines: Vec<usize> = (0..body.len()).filter(|&i| !is_filler(&body[i])).collect();
    code_lines
        .windows(2)
        .filter_map(|w| {
            let l = label(&body[w[0]])?;
            let next = code(&body[w[1]]);
            (next == "trap; exit;" || next == "trap;").then(|| l.to_string())
        })
        .collect()
}

/// Whether the line is one unpredicated instruction of register arithmetic ([`ARITHMETIC`], no
/// memory operand).
pub(crate) fn is_arithmetic(line: &str) -> bool {
    instruction(line).is_some_and(|(opcode, _)| {
        ARITHMETIC.contains(&opcode.split('.').next().unwrap_or_default())
            && !code(line).contains('[')
    })
}

/// Whether the line is one unpredicated plain load (not volatile, acquire, relaxed or mmio)
/// whose opcode starts with one of `prefixes` (`"ld.global."`, ...; `"ld."` for any).
pub(crate) fn is_plain_load(line: &str, prefixes: &[&str]) -> bool {
    instruction(line).is_some_and(|(opcode, _)| {
        prefixes.iter().any(|p| opcode.starts_with(p))
            && [".volatile", ".acquire", ".relaxed", ".mmio"]
                .iter()
                .all(|q| !opcode.contains(q))
    })
}

/// The labels some branch of the body targets.
pub(crate) fn branch_targets(body: &[String]) -> HashSet<String> {
    body.iter()
        .filter_map(|l| branch_target(l).map(str::to_string))
        .collect()
}

/// A PTX integer literal (decimal or `0x` hex, optionally negative) as an `i64`.
pub(crate) fn parse_literal(s: &str) -> Option<i64> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(h, 16).ok()? as i64
    } else {
        digits.parse::<u64>().ok()? as i64
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Inserts a register declaration after a function body's last `.reg` line (or first).
pub(crate) fn declare(body: &mut Vec<String>, declaration: String) {
    let at = body
        .iter()
        .rposition(|l| code(l).starts_with(".reg "))
        .map_or(0, |i| i + 1);
    body.insert(at, declaration);
}

/// What the PTX rewrites' unit tests share: a kernel around some lines, and its code lines.
#[cfg(test)]
pub(crate) mod test_support {
    /// A kernel `k` whose body is `lines`.
    pub fn body(lines: &[&str]) -> String {
        let mut s = String::from(".visible .entry k()\n{\n");
        for l in lines {
            s.push_str(l);
            s.push('\n');
        }
        s.push_str("}\n");
        s
    }

    /// The code of every line that has some, with runs of white space made one space.
    pub fn instructions(ptx: &str) -> Vec<String> {
        ptx.lines()
            .map(super::code)
            .filter(|c| !c.is_empty())
            .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    }
}
