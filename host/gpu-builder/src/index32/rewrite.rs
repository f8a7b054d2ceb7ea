//! The rewrite of one body: 32-bit compares and addresses (see the [module docs](super)).

use std::collections::HashMap;

use gpu_abi::index32::MAX_DISPLACEMENT;

use super::PREFIX;
use super::body::Body;
use super::ranges::{Range, Ranges, U32_MAX};
use crate::ptx::parse_literal;

/// New lines, placed before or after existing ones.
#[derive(Default)]
struct Edits {
    before: HashMap<usize, Vec<String>>,
    after: HashMap<usize, Vec<String>>,
    replace: HashMap<usize, String>,
    /// 64-bit register → its low half (a 32-bit register or literal).
    lows: HashMap<String, String>,
    b32: usize,
    b64: usize,
}

impl Edits {
    fn r32(&mut self) -> String {
        self.b32 += 1;
        format!("{PREFIX}r{}", self.b32 - 1)
    }
    fn r64(&mut self) -> String {
        self.b64 += 1;
        format!("{PREFIX}rd{}", self.b64 - 1)
    }
    fn emit(&mut self, after: usize, line: String) {
        self.after
            .entry(after)
            .or_default()
            .push(format!("\t{line};"));
    }
}

/// A literal as a 32-bit operand.
fn literal32(op: &str) -> Option<String> {
    let v = parse_literal(op)? as u64 as u32 as i32;
    Some(v.to_string())
}

/// The low 32 bits of the 64-bit operand `op` as line `reader` reads it: a literal, an
/// existing 32-bit register, or a new one computed in 32 bits.
fn low(body: &Body, edits: &mut Edits, op: &str, reader: usize) -> String {
    if let Some(l) = literal32(op) {
        return l;
    }
    let Some(def) = body.single(op) else {
        let n = edits.r32();
        edits
            .before
            .entry(reader)
            .or_default()
            .push(format!("\tcvt.u32.u64 \t{n}, {op};"));
        return n;
    };
    if let Some(l) = edits.lows.get(op) {
        return l.clone();
    }
    let inst = body.inst(def);
    let ops = inst.ops.clone();
    let same_32 = |o: &str| match o {
        "add.s64" | "add.u64" => Some("add.s32"),
        "sub.s64" | "sub.u64" => Some("sub.s32"),
        "mul.lo.s64" | "mul.lo.u64" => Some("mul.lo.s32"),
        "and.b64" => Some("and.b32"),
        "or.b64" => Some("or.b32"),
        "xor.b64" => Some("xor.b32"),
        _ => None,
    };
    let narrowed = match (inst.opcode, ops.as_slice()) {
        ("cvt.u64.u32" | "cvt.s64.s32", [_, src]) if literal32(src).is_none() => {
            Some(src.to_string())
        }
        ("mul.wide.u32" | "mul.wide.s32", [_, a, b]) => {
            let n = edits.r32();
            edits.emit(def, format!("mul.lo.s32 \t{n}, {a}, {b}"));
            Some(n)
        }
        ("mad.wide.u32" | "mad.wide.s32", [_, a, b, c]) => {
            let c = low(body, edits, c, def);
            let n = edits.r32();
            edits.emit(def, format!("mad.lo.s32 \t{n}, {a}, {b}, {c}"));
            Some(n)
        }
        ("mad.lo.s64" | "mad.lo.u64", [_, a, b, c]) => {
            let (a, b, c) = (
                low(body, edits, a, def),
                low(body, edits, b, def),
                low(body, edits, c, def),
            );
            let n = edits.r32();
            edits.emit(def, format!("mad.lo.s32 \t{n}, {a}, {b}, {c}"));
            Some(n)
        }
        ("shl.b64", [_, a, k]) if parse_literal(k).is_some_and(|k| (0..32).contains(&k)) => {
            let a = low(body, edits, a, def);
            let n = edits.r32();
            edits.emit(def, format!("shl.b32 \t{n}, {a}, {k}"));
            Some(n)
        }
        (opcode, [_, a, b]) => same_32(opcode).map(|op32| {
            let (a, b) = (low(body, edits, a, def), low(body, edits, b, def));
            let n = edits.r32();
            edits.emit(def, format!("{op32} \t{n}, {a}, {b}"));
            n
        }),
        _ => None,
    };
    let l = narrowed.unwrap_or_else(|| {
        let n = edits.r32();
        edits.emit(def, format!("cvt.u32.u64 \t{n}, {op}"));
        n
    });
    edits.lows.insert(op.to_string(), l.clone());
    l
}

/// One term of an address: a 64-bit operand, or the product of `mad`'s first two operands.
#[derive(Clone, Copy)]
enum Term<'a> {
    Operand(&'a str),
    Product { wide: bool, a: &'a str, b: &'a str },
}

/// The slice base an address register adds terms to, and the terms with the lines that read
/// them: through single-written `add` and `mad` lines only.
fn decompose<'a>(
    body: &Body<'a>,
    bases: &[&str],
    reg: &'a str,
    depth: usize,
) -> Option<(&'a str, Vec<(Term<'a>, usize)>)> {
    if bases.contains(&reg) {
        return Some((reg, Vec::new()));
    }
    if depth > 16 {
        return None;
    }
    let i = body.single(reg)?;
    let inst = body.inst(i);
    match (inst.opcode, inst.ops.as_slice()) {
        ("add.s64" | "add.u64", &[_, a, b]) => [(a, b), (b, a)].into_iter().find_map(|(x, y)| {
            let (base, mut terms) = decompose(body, bases, x, depth + 1)?;
            terms.push((Term::Operand(y), i));
            Some((base, terms))
        }),
        ("mad.lo.s64" | "mad.lo.u64" | "mad.wide.u32" | "mad.wide.s32", &[_, a, b, c]) => {
            let (base, mut terms) = decompose(body, bases, c, depth + 1)?;
            terms.push((
                Term::Product {
                    wide: inst.opcode.contains("wide"),
                    a,
                    b,
                },
                i,
            ));
            Some((base, terms))
        }
        _ => None,
    }
}

/// A term as `(index, scale)` with term = index × scale: the index's low half (a 32-bit
/// operand) and a constant scale.
fn scaled<'b, 'a>(
    body: &'b Body<'a>,
    ranges: &mut Ranges<'b, 'a>,
    edits: &mut Edits,
    term: Term<'a>,
    reader: usize,
) -> (String, u64) {
    let small_scale = |s: &str| {
        parse_literal(s)
            .and_then(|v| u64::try_from(v).ok())
            .filter(|&v| v > 0 && v < 1 << 31)
    };
    match term {
        Term::Product { wide: true, a, b } => match small_scale(b) {
            Some(s) => (a.to_string(), s),
            None => {
                let n = edits.r32();
                edits.emit(reader, format!("mul.lo.s32 \t{n}, {a}, {b}"));
                (n, 1)
            }
        },
        Term::Product { wide: false, a, b } => {
            if let Some(s) = small_scale(b) {
                return (low(body, edits, a, reader), s);
            }
            if let Some(s) = small_scale(a) {
                return (low(body, edits, b, reader), s);
            }
            let (a, b) = (low(body, edits, a, reader), low(body, edits, b, reader));
            let n = edits.r32();
            edits.emit(reader, format!("mul.lo.s32 \t{n}, {a}, {b}"));
            (n, 1)
        }
        Term::Operand(op) => {
            if let Some(def) = body.single(op) {
                let inst = body.inst(def);
                match (inst.opcode, inst.ops.as_slice()) {
                    ("shl.b64", &[_, a, k])
                        if parse_literal(k).is_some_and(|k| (0..31).contains(&k)) =>
                    {
                        return (low(body, edits, a, def), 1 << parse_literal(k).unwrap_or(0));
                    }
                    ("mul.lo.s64" | "mul.lo.u64", &[_, a, k]) if small_scale(k).is_some() => {
                        return (low(body, edits, a, def), small_scale(k).unwrap_or(1));
                    }
                    ("mul.wide.u32" | "mul.wide.s32", &[_, a, k]) if small_scale(k).is_some() => {
                        // A `.u32` index read as signed must be below 2^31.
                        let signed = inst.opcode.ends_with(".s32")
                            || ranges.of(a, 32).is_some_and(|r| r.1 < 1 << 31);
                        if signed {
                            return (a.to_string(), small_scale(k).unwrap_or(1));
                        }
                    }
                    _ => {}
                }
            }
            (low(body, edits, op, reader), 1)
        }
    }
}

/// The largest power of two dividing every scale (at most 2^30). Only a power of two: the
/// offset over a scale that does not divide 2^64 is not determined by the offset modulo 2^64.
pub(super) fn common_scale(scales: impl Iterator<Item = u64>) -> u64 {
    let zeros = scales.map(u64::trailing_zeros).min().unwrap_or(0).min(30);
    1 << zeros
}

/// The body rewritten for the variant, or `None` when nothing changes. `slices`: the PTX names
/// of each slice parameter's pointer and length.
pub(super) fn narrow(
    lines: &[String],
    slices: &[(String, String)],
    block: Option<[u64; 3]>,
) -> Option<Vec<String>> {
    if lines.iter().any(|l| l.contains(PREFIX)) {
        return None;
    }
    let body = Body::new(lines);
    let lengths: Vec<&str> = slices.iter().map(|(_, len)| len.as_str()).collect();
    let mut ranges = Ranges::new(&body, lengths, block);
    let mut edits = Edits::default();

    // Compares of values below 2^32.
    for (i, inst) in body.insts.iter().enumerate() {
        let Some(inst) = inst else { continue };
        let parts: Vec<&str> = inst.opcode.split('.').collect();
        let ["setp", cmp, ty] = parts.as_slice() else {
            continue;
        };
        if !matches!(*ty, "u64" | "s64" | "b64") || inst.ops.len() != 3 || inst.ops[0].contains('|')
        {
            continue;
        }
        let fits = |r: Option<Range>| r.is_some_and(|r| r.1 <= U32_MAX);
        if !(fits(ranges.at(inst.ops[1], 64, i)) && fits(ranges.at(inst.ops[2], 64, i))) {
            continue;
        }
        let ty32 = if matches!(*cmp, "eq" | "ne") {
            "b32"
        } else if matches!(*cmp, "lt" | "le" | "gt" | "ge") {
            "u32"
        } else {
            continue;
        };
        let (a, b) = (
            low(&body, &mut edits, inst.ops[1], i),
            low(&body, &mut edits, inst.ops[2], i),
        );
        let guard = inst.guard.map(|g| format!("@{g} ")).unwrap_or_default();
        edits.replace.insert(
            i,
            format!("\t{guard}setp.{cmp}.{ty32} \t{}, {a}, {b};", inst.ops[0]),
        );
    }

    // Addresses from 32-bit offsets.
    let pointers: Vec<&str> = slices.iter().map(|(ptr, _)| ptr.as_str()).collect();
    // Slice bases: `cvta.to.global` of a pointer parameter's `ld.param`, each written once.
    let raw = body.written_once_by(|inst| {
        inst.opcode.starts_with("ld.param")
            && inst
                .ops
                .get(1)
                .is_some_and(|p| pointers.contains(&p.trim_matches(['[', ']'])))
    });
    let bases = body.written_once_by(|inst| {
        inst.opcode == "cvta.to.global.u64" && inst.ops.get(1).is_some_and(|r| raw.contains(r))
    });
    let mut addresses: HashMap<&str, Option<String>> = HashMap::new();
    for (i, inst) in body.insts.iter().enumerate() {
        let Some(inst) = inst else { continue };
        let op = inst.opcode;
        let at = if op.starts_with("ld.global") || op.starts_with("atom.global") {
            1
        } else if op.starts_with("st.global") || op.starts_with("red.global") {
            0
        } else {
            continue;
        };
        let Some(addr) = inst
            .ops
            .get(at)
            .and_then(|a| a.strip_prefix('[')?.strip_suffix(']'))
        else {
            continue;
        };
        let (reg, displacement) = match addr.split_once('+') {
            Some((r, d)) => (r.trim(), parse_literal(d.trim()).unwrap_or(i64::MAX)),
            None => (addr.trim(), 0),
        };
        if displacement.unsigned_abs() > MAX_DISPLACEMENT.unsigned_abs()
            || !reg.starts_with('%')
            || bases.contains(&reg)
        {
            continue;
        }
        if !addresses.contains_key(reg) {
            let narrowed = decompose(&body, &bases, reg, 0)
                .filter(|(_, t)| !t.is_empty())
                .map(|(base, terms)| {
                    let def = body
                        .single(reg)
                        .expect("decompose follows single-written registers");
                    let parts: Vec<(String, u64)> = terms
                        .iter()
                        .map(|&(t, reader)| scaled(&body, &mut ranges, &mut edits, t, reader))
                        .collect();
                    let g = common_scale(parts.iter().map(|&(_, s)| s));
                    let mut sum: Option<String> = None;
                    for (index, s) in parts {
                        let mut v = index;
                        if literal32(&v).is_some() || s / g != 1 {
                            let n = edits.r32();
                            match s / g {
                                1 => edits.emit(def, format!("mov.b32 \t{n}, {v}")),
                                k => edits.emit(def, format!("mul.lo.s32 \t{n}, {v}, {k}")),
                            }
                            v = n;
                        }
                        sum = Some(match sum {
                            None => v,
                            Some(acc) => {
                                let n = edits.r32();
                                edits.emit(def, format!("add.s32 \t{n}, {acc}, {v}"));
                                n
                            }
                        });
                    }
                    let sum = sum.expect("at least one term");
                    let address = edits.r64();
                    if g == 1 {
                        let wide = edits.r64();
                        edits.emit(def, format!("cvt.s64.s32 \t{wide}, {sum}"));
                        edits.emit(def, format!("add.s64 \t{address}, {base}, {wide}"));
                    } else {
                        edits.emit(def, format!("mad.wide.s32 \t{address}, {sum}, {g}, {base}"));
                    }
                    address
                });
            addresses.insert(reg, narrowed);
        }
        if let Some(Some(address)) = addresses.get(reg) {
            let line = edits
                .replace
                .get(&i)
                .cloned()
                .unwrap_or_else(|| lines[i].clone());
            edits.replace.insert(
                i,
                line.replacen(&format!("[{reg}"), &format!("[{address}"), 1),
            );
        }
    }

    if edits.replace.is_empty() {
        return None;
    }
    let mut out =
        Vec::with_capacity(lines.len() + edits.after.values().map(Vec::len).sum::<usize>());
    for (i, line) in lines.iter().enumerate() {
        out.extend(edits.before.remove(&i).unwrap_or_default());
        out.push(edits.replace.remove(&i).unwrap_or_else(|| line.clone()));
        out.extend(edits.after.remove(&i).unwrap_or_default());
    }
    let declarations = format!(
        "\t.reg .b32 \t{PREFIX}r<{}>;\n\t.reg .b64 \t{PREFIX}rd<{}>;",
        edits.b32.max(1),
        edits.b64.max(1)
    );
    crate::ptx::declare(&mut out, declarations);
    Some(out)
}
