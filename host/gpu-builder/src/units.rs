//! Splitting a PTX module into **code units**: the smallest pieces that can be loaded on their
//! own, normally one kernel each.
//!
//! Why: the driver JIT-compiles a whole PTX module when it is loaded, so a module of 116 kernels
//! costs every one of them before the first launch. A unit holds one entry point and only what
//! it needs: the functions it calls (transitively) and the module-scope variables those
//! reference. The host loads a unit when one of its kernels is first used, and ptxas assembles
//! each unit separately (in parallel, and only the units whose text changed).
//!
//! Entry points share a unit when they reference the same module-scope *state*: a `.global`
//! variable a kernel could write and another read (a Rust `static`). Duplicating such a variable
//! into two units would give each its own copy. Not state, and so copied into every unit that
//! uses it:
//! - variables LLVM generated (names with `$`: string literals, panic locations, switch tables),
//!   which Rust never writes;
//! - `.shared` and `.const` variables (per block, or read-only);
//! - the `gpu` crate's panic record pointer and claim flag, which are per module by design (the
//!   host points each loaded module's record at the device's record, as it does for every
//!   kernel crate's module).

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{Error, Result};
use crate::ptx::{function_header, strip_comment};

/// One loadable piece of a module: the entry points it defines and its PTX text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeUnit {
    /// Entry points, in module order.
    pub kernels: Vec<String>,
    /// A complete PTX module (header, declarations, definitions).
    pub ptx: String,
}

/// Module-scope variables that are per module by design (see the module docs).
const PER_MODULE_STATE: &[&str] = &["__gpu_panic_record", "PANIC_CLAIM"];

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum ItemKind {
    /// `.version`, `.target`, `.address_size`: in every unit.
    Header,
    /// A `.func`/`.entry` declaration without a body.
    Prototype,
    Function {
        is_entry: bool,
    },
    Variable {
        /// A `.global` variable that is module state (see the module docs).
        state: bool,
    },
    /// Anything else at module scope (e.g. `.file`): kept in every unit.
    Other,
}

#[derive(Debug)]
struct Item {
    kind: ItemKind,
    name: Option<String>,
    text: String,
    /// Identifiers the item mentions (bodies, initializers), its own name excluded.
    references: BTreeSet<String>,
}

/// Splits `ptx` (a module as written by the builder) into code units, one per entry point except
/// where entry points share module state. Units are in the module's entry order.
pub fn split(ptx: &str) -> Result<Vec<CodeUnit>> {
    let items = items(ptx)?;
    let by_name: BTreeMap<&str, usize> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| !matches!(item.kind, ItemKind::Prototype))
        .filter_map(|(i, item)| Some((item.name.as_deref()?, i)))
        .collect();
    let entries: Vec<usize> = (0..items.len())
        .filter(|&i| matches!(items[i].kind, ItemKind::Function { is_entry: true }))
        .collect();

    // Every item an entry needs: functions it calls and variables it (or they) reference,
    // through variable initializers too (`generic(other)`).
    let closure = |entry: usize| -> BTreeSet<usize> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![entry];
        while let Some(i) = stack.pop() {
            if !seen.insert(i) {
                continue;
            }
            for name in &items[i].references {
                if let Some(&j) = by_name.get(name.as_str())
                    && !matches!(items[j].kind, ItemKind::Function { is_entry: true })
                {
                    stack.push(j);
                }
            }
        }
        seen
    };
    let needs: Vec<BTreeSet<usize>> = entries.iter().map(|&e| closure(e)).collect();

    // Entries that share a state variable end up in one unit (union-find over entry indices).
    let mut parent: Vec<usize> = (0..entries.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut owner: BTreeMap<usize, usize> = BTreeMap::new();
    for (e, need) in needs.iter().enumerate() {
        for &i in need {
            if matches!(items[i].kind, ItemKind::Variable { state: true }) {
                match owner.get(&i) {
                    Some(&first) => {
                        let (a, b) = (root(&mut parent, first), root(&mut parent, e));
                        parent[b.max(a)] = a.min(b);
                    }
                    None => {
                        owner.insert(i, e);
                    }
                }
            }
        }
    }
    // A kernel's 32-bit index variant (`crate::index32`) loads with the kernel: a launch picks
    // one of the two, and the first launch should not wait for a second load.
    let entry_name = |e: usize| items[entries[e]].name.as_deref().unwrap_or_default();
    for e in 0..entries.len() {
        if let Some(kernel) = gpu_abi::index32::kernel_of_variant(entry_name(e))
            && let Some(k) = (0..entries.len()).find(|&k| entry_name(k) == kernel)
        {
            let (a, b) = (root(&mut parent, k), root(&mut parent, e));
            parent[b.max(a)] = a.min(b);
        }
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for e in 0..entries.len() {
        let r = root(&mut parent, e);
        groups.entry(r).or_default().push(e);
    }

    let mut units = Vec::with_capacity(groups.len());
    for members in groups.values() {
        let mut included: BTreeSet<usize> = BTreeSet::new();
        for &e in members {
            included.extend(&needs[e]);
        }
        let defined: BTreeSet<&str> = included
            .iter()
            .filter_map(|&i| items[i].name.as_deref())
            .collect();
        let mut text = String::new();
        for (i, item) in items.iter().enumerate() {
            let keep = match item.kind {
                ItemKind::Header | ItemKind::Other => true,
                ItemKind::Prototype => item
                    .name
                    .as_deref()
                    .is_some_and(|n| defined.contains(n) || !by_name.contains_key(n)),
                ItemKind::Function { .. } | ItemKind::Variable { .. } => included.contains(&i),
            };
            if keep {
                text.push_str(&item.text);
                text.push('\n');
            }
        }
        // LLVM numbers constants and block labels across the module (`anon_$_<hash>_$_17`,
        // `$L__BB90_3`), so one kernel more or less renames those of every other. Numbered per
        // unit instead, a unit's text changes only when its own code does, and only its SASS
        // is rebuilt.
        let mut renames = BTreeMap::new();
        for &i in &included {
            if let (ItemKind::Variable { .. }, Some(name)) = (items[i].kind, &items[i].name)
                && name.contains('$')
            {
                renames.insert(name.as_str(), format!("__unit_data_{}", renames.len()));
            }
        }
        let text = rename(&text, &renames);
        units.push(CodeUnit {
            kernels: members
                .iter()
                .map(|&e| items[entries[e]].name.clone().expect("entries have names"))
                .collect(),
            ptx: text,
        });
    }
    Ok(units)
}

/// `text` with every identifier that is a key of `renames` replaced by its value, and block
/// labels (`$L__BB<function>_<block>`) and stack arrays (`__local_depot<function>`) numbered
/// from 0 in order of appearance.
fn rename(text: &str, renames: &BTreeMap<&str, String>) -> String {
    let mut labels: BTreeMap<&str, usize> = BTreeMap::new();
    let mut depots: BTreeMap<&str, usize> = BTreeMap::new();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(is_ident) {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let end = tail.find(|c: char| !is_ident(c)).unwrap_or(tail.len());
        let ident = &tail[..end];
        if let Some(new) = renames.get(ident) {
            out.push_str(new);
        } else if let Some((function, block)) = ident
            .strip_prefix("$L__BB")
            .and_then(|label| label.split_once('_'))
        {
            // Block labels carry the function's number in the module: renumbered per unit.
            let next = labels.len();
            let number = *labels.entry(function).or_insert(next);
            out.push_str(&format!("$L__BB{number}_{block}"));
        } else if let Some(function) = ident
            .strip_prefix("__local_depot")
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            // So does each function's stack array.
            let next = depots.len();
            let number = *depots.entry(function).or_insert(next);
            out.push_str(&format!("__local_depot{number}"));
        } else {
            out.push_str(ident);
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The module-scope items of `ptx`, in order. Comments and blank lines between items are
/// dropped.
fn items(ptx: &str) -> Result<Vec<Item>> {
    let mut items = Vec::new();
    let mut text = String::new();
    let mut code = String::new();
    let mut depth = 0usize;
    let mut has_body = false;
    for line in ptx.lines() {
        let stripped = strip_comment(line).trim();
        if depth == 0 && text.is_empty() && stripped.is_empty() {
            continue;
        }
        // Comments are dropped: LLVM's (`// callseq 1368`) count across the module, and would
        // make a unit's text change when other kernels do. The builder's grid-shape comment is
        // kept: the host reads it.
        let kept = if line.contains('"') || line.starts_with(gpu_abi::GRID_DIMS_MARKER) {
            line
        } else {
            strip_comment(line).trim_end()
        };
        if !kept.trim().is_empty() {
            text.push_str(kept);
            text.push('\n');
        }
        code.push_str(stripped);
        code.push('\n');
        let opens = stripped.matches('{').count();
        let closes = stripped.matches('}').count();
        has_body |= opens > 0 && is_function(&code);
        depth = (depth + opens)
            .checked_sub(closes)
            .ok_or_else(|| Error::msg(format!("unbalanced `}}` in PTX at `{stripped}`")))?;
        let ended = depth == 0 && ((has_body && closes > 0) || stripped.ends_with(';'));
        // A `.version`-style directive is one line without a terminator.
        let directive = depth == 0 && text.lines().count() == 1 && is_header(stripped);
        if ended || directive {
            items.push(classify(std::mem::take(&mut text), &code, has_body));
            code.clear();
            has_body = false;
        }
    }
    if !text.trim().is_empty() {
        return Err(Error::msg(format!(
            "PTX ends inside a declaration: `{}`",
            text.lines().next().unwrap_or("").trim()
        )));
    }
    Ok(items)
}

fn is_header(code: &str) -> bool {
    [".version", ".target", ".address_size"]
        .iter()
        .any(|d| code.starts_with(d))
}

fn is_function(code: &str) -> bool {
    code.contains(".entry") || code.contains(".func")
}

fn classify(text: String, code: &str, has_body: bool) -> Item {
    let first = code.lines().next().unwrap_or("");
    let (kind, name) = if is_header(first) {
        (ItemKind::Header, None)
    } else if is_function(first) {
        let name = function_header(code).map(|(name, _)| name);
        let kind = if has_body {
            ItemKind::Function {
                is_entry: first.contains(".entry"),
            }
        } else {
            ItemKind::Prototype
        };
        (kind, name)
    } else if let Some(name) = variable_name(code) {
        let state = first.split_whitespace().any(|t| t == ".global")
            && !name.contains('$')
            && !PER_MODULE_STATE.iter().any(|s| name.ends_with(s));
        (ItemKind::Variable { state }, Some(name))
    } else {
        (ItemKind::Other, None)
    };
    let references = identifiers(code)
        .filter(|id| Some(*id) != name.as_deref())
        .map(str::to_string)
        .collect();
    Item {
        kind,
        name,
        text: text.trim_end().to_string(),
        references,
    }
}

/// The name in `.global .align 8 .u64 name[3] = {...};` or `.extern .shared .b8 name[];`.
fn variable_name(code: &str) -> Option<String> {
    let first = code.lines().next()?;
    if ![".global", ".shared", ".const", ".local"]
        .iter()
        .any(|s| first.split_whitespace().any(|t| t == *s))
    {
        return None;
    }
    let declaration = code.split(['=', ';']).next()?;
    let declaration = declaration.split('[').next()?;
    declaration
        .split_whitespace()
        .last()
        .filter(|n| !n.starts_with('.'))
        .map(str::to_string)
}

fn identifiers(code: &str) -> impl Iterator<Item = &str> {
    code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .filter(|t| !t.is_empty() && !t.starts_with(|c: char| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = "\
//
// Generated by LLVM NVPTX Back-End
//

.version 8.0
.target sm_90
.address_size 64

\t// .globl\tfirst
.func helper_fail
(
\t.param .b64 helper_fail_param_0
)
.noreturn;
.global .align 1 .b8 anon_$_1[3] = {102, 111, 111};
.global .align 8 .u64 anon_$_2[2] = {generic(anon_$_1), 3};
.global .align 4 .b8 _RNvCs1_5state7COUNTER[4];
.global .align 4 .b8 _RNvNtCsX_3gpu5panic11PANIC_CLAIM[4];
.visible .global .align 8 .b8 __gpu_panic_record[8];
.shared .align 16 .b8 tile[1024];
.extern .shared .align 16 .b8 dynamic_smem[];

.visible .entry first(
\t.param .u64 first_param_0
)
.maxntid 256, 1, 1
{
\tmov.b64 \t%rd1, anon_$_2;
\t@%p1 bra $L__BB7_2;
$L__BB7_2:
\tld.global.u32 %r1, [_RNvCs1_5state7COUNTER];
\tcall.uni helper_fail, (%rd1);
\tld.global.u64 %rd2, [__gpu_panic_record];
}
\t// .globl\tsecond
.visible .entry second()
{
\tst.shared.u32 [tile], 1;
\tret;
}
.visible .entry third()
{
\tatom.global.add.u32 %r1, [_RNvCs1_5state7COUNTER], 1;
\tld.global.u32 %r2, [_RNvNtCsX_3gpu5panic11PANIC_CLAIM];
}
.visible .entry fourth()
{
\tst.shared.u32 [dynamic_smem], 1;
\tld.global.u64 %rd2, [__gpu_panic_record];
}
.func helper_fail(
\t.param .b64 helper_fail_param_0
)
.noreturn
{
\tld.global.u32 %r2, [_RNvNtCsX_3gpu5panic11PANIC_CLAIM];
\ttrap;
}
";

    #[test]
    fn one_unit_per_kernel_except_shared_state() {
        let units = split(MODULE).unwrap();
        let kernels: Vec<_> = units.iter().map(|u| u.kernels.clone()).collect();
        // `first` and `third` both use COUNTER (module state): one unit.
        assert_eq!(
            kernels,
            [vec!["first", "third"], vec!["second"], vec!["fourth"]]
        );

        let first = &units[0].ptx;
        for wanted in [
            ".version 8.0",
            ".target sm_90",
            ".address_size 64",
            "COUNTER[4]",
            "PANIC_CLAIM[4]",
            "__gpu_panic_record[8]",
            ".noreturn;",
            ".entry first(",
            ".entry third()",
            "trap;",
        ] {
            assert!(first.contains(wanted), "unit 0 lacks {wanted}:\n{first}");
        }
        assert!(
            !first.contains("tile") && !first.contains("second"),
            "{first}"
        );
        // The prototype comes before its use, the definition after.
        assert!(first.find(".noreturn;").unwrap() < first.find(".entry first").unwrap());

        let second = &units[1].ptx;
        assert!(second.contains("tile[1024]") && second.contains(".entry second()"));
        for absent in [
            "helper_fail",
            "anon_$",
            "COUNTER",
            "__gpu_panic_record",
            "first",
        ] {
            assert!(!second.contains(absent), "unit 1 has {absent}:\n{second}");
        }
        assert!(second.starts_with(".version 8.0\n.target sm_90\n.address_size 64\n"));

        // LLVM's numbered constants are renamed per unit.
        assert!(first.contains("__unit_data_0") && first.contains("generic(__unit_data_"));
        assert!(!first.contains("anon_$"), "{first}");
        assert!(first.contains("bra $L__BB0_2;\n$L__BB0_2:"), "{first}");

        let fourth = &units[2].ptx;
        assert!(fourth.contains("dynamic_smem[]") && fourth.contains("__gpu_panic_record[8]"));
        assert!(!fourth.contains("PANIC_CLAIM") && !fourth.contains("tile"));
    }

    #[test]
    fn the_grid_shape_comment_stays_other_comments_go() {
        let ptx = ".version 7.0\n.target sm_80\n.address_size 64\n\
                   .visible .entry k()\n.reqntid 256, 1, 1\n\
                   // #[kernel(grid_dims(1))]: a launch must not have more grid dimensions\n\
                   {\n\t// callseq 12\n\tret;\n}\n";
        let units = split(ptx).unwrap();
        assert_eq!(units.len(), 1);
        assert!(
            units[0]
                .ptx
                .contains(".reqntid 256, 1, 1\n// #[kernel(grid_dims(1))]"),
            "{}",
            units[0].ptx
        );
        assert!(!units[0].ptx.contains("callseq"), "{}", units[0].ptx);
    }

    #[test]
    fn a_module_without_entries_has_no_units_and_bad_text_is_an_error() {
        assert!(split(".version 7.0\n.target sm_80\n").unwrap().is_empty());
        assert!(split(".version 7.0\n.visible .entry k()\n{\n").is_err());
        assert!(split(".version 7.0\n}\n").is_err());
    }
}
