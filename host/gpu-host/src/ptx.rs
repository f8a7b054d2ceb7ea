//! Just enough PTX reading to find entry points and their parameter sizes.
//!
//! `load_ptx_file` needs the kernel names without a manifest, and knowing each entry's parameter
//! sizes lets a launch catch a mismatched argument list (wrong count, a `u32` where the kernel
//! takes a `u64`) before the driver reads garbage. Only the `.entry NAME(...)` headers are read.

/// Removes `//` and `/* */` comments, keeping line structure, so commented-out entries are
/// not found. PTX has no string literals that could contain comment markers.
///
/// One linear pass: LLVM's PTX carries a `//` comment on most basic blocks, and modules of
/// megabytes are common, so anything that rescans the rest of the text per comment is far too
/// slow (a 3.8 MB module took 15 s that way).
fn strip_comments(ptx: &str) -> String {
    let bytes = ptx.as_bytes();
    let mut out = String::with_capacity(ptx.len());
    let (mut i, mut copied_from) = (0, 0);
    while i + 1 < bytes.len() {
        match (bytes[i], bytes[i + 1]) {
            (b'/', b'/') => {
                out.push_str(&ptx[copied_from..i]);
                i = memchr_newline(bytes, i);
                copied_from = i;
            }
            (b'/', b'*') => {
                out.push_str(&ptx[copied_from..i]);
                let body_end = ptx[i + 2..].find("*/").map_or(bytes.len(), |e| i + 2 + e);
                // Keep newlines so nothing joins across lines.
                out.extend(ptx[i..body_end].chars().filter(|&c| c == '\n'));
                i = (body_end + 2).min(bytes.len());
                copied_from = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&ptx[copied_from.min(bytes.len())..]);
    out
}

/// Index of the next `\n` at or after `from`, or the end.
fn memchr_newline(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |p| from + p)
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%' || c == '.'
}

/// One `.entry` header: the name and the raw text between its parentheses (if it has them).
struct EntryHeader<'a> {
    name: &'a str,
    params: Option<&'a str>,
    /// The performance directives between the parameter list and the body (`.reqntid`, ...).
    directives: &'a str,
}

fn entry_headers(ptx: &str) -> Vec<EntryHeader<'_>> {
    let mut out = Vec::new();
    let mut search = 0;
    while let Some(pos) = ptx[search..].find(".entry") {
        let start = search + pos;
        search = start + ".entry".len();
        // `.entry` must be a whole directive: preceded by whitespace (or the start) and
        // followed by whitespace.
        let before_ok = ptx[..start]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        let after = &ptx[search..];
        if !before_ok || !after.starts_with(char::is_whitespace) {
            continue;
        }
        let after = after.trim_start();
        let name_len = after
            .find(|c: char| !is_ident_char(c))
            .unwrap_or(after.len());
        if name_len == 0 {
            continue;
        }
        let name = &after[..name_len];
        let tail = after[name_len..].trim_start();
        let (params, rest) = match tail.strip_prefix('(') {
            Some(inner) => match inner.find(')') {
                Some(close) => (Some(&inner[..close]), &inner[close + 1..]),
                None => (None, ""),
            },
            None => (None, tail),
        };
        let directives = &rest[..rest.find(['{', ';']).unwrap_or(rest.len())];
        out.push(EntryHeader {
            name,
            params,
            directives,
        });
    }
    out
}

/// The names of all kernels (`.entry` directives) in `ptx`, in order of appearance.
pub fn entry_names(ptx: &str) -> Vec<String> {
    let text = strip_comments(ptx);
    entry_headers(&text)
        .into_iter()
        .map(|h| h.name.to_string())
        .collect()
}

/// Size in bytes of a PTX fundamental type, or `None` for types a kernel parameter list read
/// here does not expect (e.g. `.texref`), in which case the signature is left unchecked.
fn type_size(ty: &str) -> Option<usize> {
    Some(match ty {
        ".b8" | ".u8" | ".s8" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

/// Size in bytes of one parameter declaration such as `.param .u64 .ptr .align 1 k_param_0` or
/// `.param .align 16 .b8 k_param_2[24]`.
fn param_size(decl: &str) -> Option<usize> {
    let mut tokens = decl.split_whitespace().peekable();
    if tokens.next()? != ".param" {
        return None;
    }
    let mut elem = None;
    let mut rest = String::new();
    while let Some(tok) = tokens.next() {
        match tok {
            ".align" => {
                tokens.next()?;
            }
            ".ptr" | ".global" | ".shared" | ".const" | ".local" => {}
            t if t.starts_with('.') => {
                if elem.is_some() {
                    return None;
                }
                elem = Some(type_size(t)?);
            }
            t => rest.push_str(t),
        }
    }
    let elem = elem?;
    // `rest` is the name, possibly with an array length: `k_param_2[24]`.
    match rest.find('[') {
        None => Some(elem),
        Some(open) => {
            let count = rest[open + 1..].strip_suffix(']')?.trim();
            let count: usize = count.parse().ok()?;
            elem.checked_mul(count)
        }
    }
}

/// The parameter sizes of kernel `name`, or `None` if its header is missing or not understood.
pub fn entry_param_sizes(ptx: &str, name: &str) -> Option<Vec<usize>> {
    let text = strip_comments(ptx);
    let header = entry_headers(&text).into_iter().find(|h| h.name == name)?;
    let params = header.params?;
    if params.trim().is_empty() {
        return Some(Vec::new());
    }
    params.split(',').map(param_size).collect()
}

/// The block shape every kernel of `ptx` requires (its `.reqntid x[, y[, z]]`), by name, for
/// the kernels that declare one (`#[kernel(block(...))]`).
pub fn required_block_shapes(ptx: &str) -> std::collections::HashMap<String, [u32; 3]> {
    let text = strip_comments(ptx);
    entry_headers(&text)
        .into_iter()
        .filter_map(|h| {
            let at = h.directives.find(".reqntid")?;
            let rest = &h.directives[at + ".reqntid".len()..];
            let end = rest.find('.').unwrap_or(rest.len());
            let dims: Vec<u32> = rest[..end]
                .split(',')
                .map(|d| d.trim().parse().ok())
                .collect::<Option<_>>()?;
            let mut shape = [1u32; 3];
            if dims.is_empty() || dims.len() > 3 {
                return None;
            }
            shape[..dims.len()].copy_from_slice(&dims);
            Some((h.name.to_string(), shape))
        })
        .collect()
}

/// The most grid dimensions each kernel of `ptx` allows (1 or 2), by name, for the kernels that
/// declare it (`#[kernel(grid_dims(N))]`, found by [`gpu_abi::GRID_DIMS_MARKER`] in the entry's header).
pub fn required_grid_dims(ptx: &str) -> std::collections::HashMap<String, u32> {
    use gpu_abi::GRID_DIMS_MARKER;
    if !ptx.contains(GRID_DIMS_MARKER) {
        return Default::default();
    }
    // Comments kept: the marker is one. LLVM writes none inside an entry's header otherwise.
    entry_headers(ptx)
        .into_iter()
        .filter_map(|h| {
            let at = h.directives.find(GRID_DIMS_MARKER)?;
            let rest = &h.directives[at + GRID_DIMS_MARKER.len()..];
            let dims: u32 = rest[..rest.find(')')?].trim().parse().ok()?;
            (1..=2).contains(&dims).then(|| (h.name.to_string(), dims))
        })
        .collect()
}

/// The parameter sizes of every kernel in `ptx`, by name, reading the text once (for loading a
/// module with many kernels).
pub fn all_entry_param_sizes(ptx: &str) -> std::collections::HashMap<String, Option<Vec<usize>>> {
    let text = strip_comments(ptx);
    entry_headers(&text)
        .into_iter()
        .map(|h| {
            let sizes = h.params.and_then(|params| {
                if params.trim().is_empty() {
                    Some(Vec::new())
                } else {
                    params.split(',').map(param_size).collect()
                }
            });
            (h.name.to_string(), sizes)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = r#"
//
// Generated by LLVM NVPTX Back-End
//

.version 7.8
.target sm_90
.address_size 64

	// .globl	vector_add
.func _RNvNtCs1peUGmbrgHn_4core9panicking18panic_bounds_check
(
	.param .b64 _RNvNtCs1peUGmbrgHn_4core9panicking18panic_bounds_check_param_0
)
.noreturn;
.visible .global .align 1 .b8 __gpu_kernel_signature_vector_add[3] = {123, 34, 110};

.visible .entry vector_add(
	.param .u64 .ptr .align 1 vector_add_param_0,
	.param .u64 vector_add_param_1,
	.param .u64 .ptr .align 1 vector_add_param_2,
	.param .u64 vector_add_param_3,
	.param .u64 .ptr .align 1 vector_add_param_4,
	.param .u64 vector_add_param_5
)
{
	ret;
}
// .entry commented_out(
/* .visible .entry also_commented(
   .param .u32 x) */
.visible .entry scaled(.param .f32 scaled_param_0, .param .align 16 .b8 scaled_param_1[24], .param .u8 scaled_param_2)
{
	ret;
}
.entry no_params()
{
	ret;
}
"#;

    #[test]
    fn finds_entry_names_and_skips_comments_and_funcs() {
        assert_eq!(entry_names(SEED), ["vector_add", "scaled", "no_params"]);
    }

    #[test]
    fn reads_required_block_shapes() {
        let ptx = ".visible .entry a(\n.param .u64 a_param_0\n)\n.reqntid 32, 8, 1\n{\nret;\n}\n\
                   .visible .entry b()\n.maxntid 256, 1, 1\n{\nret;\n}\n\
                   .visible .entry c()\n.reqntid 128\n{\nret;\n}\n";
        let shapes = required_block_shapes(ptx);
        assert_eq!(shapes.get("a"), Some(&[32, 8, 1]));
        assert_eq!(shapes.get("b"), None);
        assert_eq!(shapes.get("c"), Some(&[128, 1, 1]));
    }

    #[test]
    fn reads_required_grid_dims() {
        let ptx = ".visible .entry a(\n.param .u64 a_param_0\n)\n.reqntid 256, 1, 1\n\
                   // #[kernel(grid_dims(1))]: launches with gridDim.y or gridDim.z above 1 trap\n\
                   {\nret;\n}\n\
                   .visible .entry b()\n.reqntid 16, 16, 1\n{\n// #[kernel(grid_dims(1))]\nret;\n}\n\
                   .visible .entry c()\n// #[kernel(grid_dims(2))]\n{\nret;\n}\n";
        let dims = required_grid_dims(ptx);
        assert_eq!(dims.get("a"), Some(&1));
        // Only the header counts, not a comment in the body.
        assert_eq!(dims.get("b"), None);
        assert_eq!(dims.get("c"), Some(&2));
        assert!(required_grid_dims(SEED).is_empty());
    }

    #[test]
    fn reads_param_sizes() {
        assert_eq!(
            entry_param_sizes(SEED, "vector_add"),
            Some(vec![8, 8, 8, 8, 8, 8])
        );
        assert_eq!(entry_param_sizes(SEED, "scaled"), Some(vec![4, 24, 1]));
        assert_eq!(entry_param_sizes(SEED, "no_params"), Some(vec![]));
        assert_eq!(entry_param_sizes(SEED, "missing"), None);
        assert_eq!(entry_param_sizes(SEED, "commented_out"), None);
    }

    #[test]
    fn unknown_param_types_leave_the_signature_unchecked() {
        let ptx = ".entry k(.param .texref k_param_0)\n{\n}\n";
        assert_eq!(entry_names(ptx), ["k"]);
        assert_eq!(entry_param_sizes(ptx, "k"), None);
    }

    #[test]
    fn nvcc_style_mangled_names() {
        let ptx = ".visible .entry _Z6kernelPfi(\n.param .u64 _Z6kernelPfi_param_0,\n\
                   .param .u32 _Z6kernelPfi_param_1\n)\n{\n}\n";
        assert_eq!(entry_names(ptx), ["_Z6kernelPfi"]);
        assert_eq!(entry_param_sizes(ptx, "_Z6kernelPfi"), Some(vec![8, 4]));
    }
}
