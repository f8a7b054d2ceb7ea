//! 32-bit index variants: a copy of each kernel entry whose index arithmetic is 32-bit, for the
//! launches small enough to allow it.
//!
//! Why: a Rust kernel indexes in `usize`, so LLVM computes every index and address in 64 bits
//! (`mad.lo.s64`, compares in two halves, five instructions for a row's load address where
//! nvcc's `int` code has two). CUDA C++ gets 32-bit code because `int` overflow is undefined; a
//! Rust kernel cannot assume its indices are small, since a launch may pass a slice of 2^33
//! elements. The launch knows, though. So next to each entry `k` this module appends `k$idx32`
//! (the contract in [`gpu_abi::index32`]): the same code, rewritten under the limits every
//! launch of it keeps (fewer than 2^31 threads, every slice below 2 GiB), and `gpu-host`
//! launches it whenever a launch keeps them. Nothing is refused: other launches run `k`.
//!
//! The rewrite does two things, both exact under those limits:
//! - **Compares in 32 bits.** A value range is computed for every register written once (from
//!   `%tid`/`%ntid`/`%ctaid`/`%nctaid` bounds, `.reqntid`, the thread limit, 32-bit parameters,
//!   the slice lengths' limit, and the arithmetic in between; after a guard `@%p bra` on
//!   `a >= b`, the code up to the next label has `b > a`). A 64-bit compare of two values both
//!   below 2^32 becomes a compare of their low halves.
//! - **Addresses from 32-bit offsets.** A global access whose address is a slice parameter's
//!   base plus a sum of terms (`add.s64`, `mad`) gets a new address: the terms' low 32 bits,
//!   summed in 32 bits (a common scale factored out), sign-extended and added to the base
//!   (`mad.wide.s32`, or `cvt.s64.s32` + `add.s64`). The low half of a sum, product or shift
//!   depends only on the operands' low halves, so the 32-bit offset is the 64-bit one modulo
//!   2^32. Where the access is inside its slice (every executed access is: an index check
//!   passed, or in `checks = "unchecked"` builds it must, as in any build a raw pointer's must),
//!   that offset plus the displacement lies in `[0, 2 GiB - 1 MiB)`, so it is within 2^31 of 0
//!   and the sign extension gives it back exactly. A load that the builder moved above its check
//!   (`gpu_builder::speculate`) may run with a wrapped address when the check then traps: it
//!   reads memory whose value the trap drops, or faults, as the unwrapped address could.
//!
//! The 64-bit code the new lines replace is left in place; ptxas drops what no longer has a
//! use. Entries where nothing changes get no variant. The rewrite runs last, in crates that do
//! not opt out (`[package.metadata.gpu] index32 = false`, or `GPU_KERNEL_INDEX32=0` for a
//! build): the tuned library crates keep their measured code and their code size.

use std::collections::HashMap;

use gpu_abi::ParamKind;
use gpu_abi::index32::{MAX_DISPLACEMENT, MAX_SLICE_BYTES, MAX_THREADS, SUFFIX};

use crate::manifest::Manifest;
use crate::ptx::{code, destinations, is_filler, label, parse_literal, registers};

/// Names this rewrite in the record of what a module's PTX was made from (see
/// [`crate::branches::REVISION`]): change it whenever the rewrite's output changes.
pub const REVISION: &str = "32-bit index variants v1";

/// The prefix of the registers the rewrite declares.
const PREFIX: &str = "%idx32_";

/// The module with a 32-bit index variant appended after each `#[kernel]` entry it changes.
pub fn add_variants(ptx: &str, manifest: &Manifest) -> String {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = entry_name(lines[i]) else {
            out.push(lines[i].to_string());
            i += 1;
            continue;
        };
        let Some(open) = (i..lines.len()).find(|&j| code(lines[j]) == "{") else {
            out.extend(lines[i..].iter().map(|l| l.to_string()));
            break;
        };
        let close = body_end(&lines, open);
        out.extend(lines[i..=close].iter().map(|l| l.to_string()));
        let kernel = manifest
            .kernel(name)
            .filter(|k| k.rust_module.is_some() && !name.contains('$'));
        if let Some(kernel) = kernel {
            let header = &lines[i..open];
            let mut slices = Vec::new();
            let mut ptx_params = kernel.ptx_params.iter();
            for p in &kernel.params {
                match p.kind {
                    ParamKind::Slice | ParamKind::Output => {
                        if let (Some(ptr), Some(len)) = (ptx_params.next(), ptx_params.next()) {
                            slices.push((ptr.name.clone(), len.name.clone()));
                        }
                    }
                    ParamKind::Scalar | ParamKind::Value => {
                        ptx_params.next();
                    }
                }
            }
            let body: Vec<String> = lines[open + 1..close]
                .iter()
                .map(|l| l.to_string())
                .collect();
            if let Some(narrowed) = narrow(&body, &slices, required_block(header)) {
                out.push(String::new());
                for (k, line) in header.iter().enumerate() {
                    out.push(if k == 0 {
                        line.replacen(&format!("{name}("), &format!("{name}{SUFFIX}("), 1)
                    } else {
                        line.to_string()
                    });
                }
                out.push(lines[open].to_string());
                out.extend(narrowed);
                out.push(lines[close].to_string());
            }
        }
        i = close + 1;
    }
    let mut text = out.join("\n");
    if ptx.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The name of the entry a line declares (`.visible .entry k(`).
fn entry_name(line: &str) -> Option<&str> {
    let c = code(line);
    let rest = c.split(".entry ").nth(1)?;
    let name = rest.split('(').next()?.trim();
    (!name.is_empty()).then_some(name)
}

/// The line of the `}` that closes the body opened at `open`.
fn body_end(lines: &[&str], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, line) in lines.iter().enumerate().skip(open) {
        let c = code(line);
        depth += c.matches('{').count();
        depth = depth.saturating_sub(c.matches('}').count());
        if depth == 0 {
            return i;
        }
    }
    lines.len() - 1
}

/// `.reqntid x, y, z` in an entry's header.
fn required_block(header: &[&str]) -> Option<[u64; 3]> {
    let line = header
        .iter()
        .find_map(|l| code(l).strip_prefix(".reqntid"))?;
    let dims: Vec<u64> = line
        .split(',')
        .map(|d| d.trim().parse().ok())
        .collect::<Option<_>>()?;
    let mut block = [1; 3];
    for (slot, d) in block.iter_mut().zip(dims) {
        *slot = d;
    }
    Some(block)
}

/// One instruction: predicate guard (`%p` or `!%p`), opcode, operands.
struct Inst<'a> {
    guard: Option<&'a str>,
    opcode: &'a str,
    ops: Vec<&'a str>,
}

/// An instruction line (`None` for labels, directives, blocks and anything unusual).
fn parse(line: &str) -> Option<Inst<'_>> {
    let c = code(line);
    let body = c.strip_suffix(';')?;
    // One instruction: not a directive, a scope (`{ .reg ...`) or several on a line; braces
    // only around vector operands.
    if body.starts_with(['.', '{'])
        || body.contains(';')
        || body.contains('{') != body.contains('}')
    {
        return None;
    }
    let (guard, rest) = match body.strip_prefix('@') {
        Some(r) => {
            let (g, r) = r.split_once(char::is_whitespace)?;
            (Some(g), r.trim_start())
        }
        None => (None, body),
    };
    let (opcode, rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let mut ops = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (k, ch) in rest.char_indices() {
        match ch {
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                ops.push(rest[start..k].trim());
                start = k + 1;
            }
            _ => {}
        }
    }
    if !rest[start..].trim().is_empty() {
        ops.push(rest[start..].trim());
    }
    Some(Inst { guard, opcode, ops })
}

/// An inclusive range of unsigned values.
type Range = (u128, u128);

const U32_MAX: u128 = u32::MAX as u128;

/// The function body's instructions and where each register is written.
struct Body<'a> {
    lines: &'a [String],
    insts: Vec<Option<Inst<'a>>>,
    /// Register → the lines that write it (a register also mentioned by a line this module
    /// cannot read counts as written twice).
    writes: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Body<'a> {
    fn new(lines: &'a [String]) -> Body<'a> {
        let mut insts = Vec::with_capacity(lines.len());
        let mut writes: HashMap<&'a str, Vec<usize>> = HashMap::new();
        for (i, line) in lines.iter().enumerate() {
            let c = code(line);
            let inst = parse(line);
            if inst.is_some() {
                for r in destinations(line) {
                    writes.entry(r).or_default().push(i);
                }
            } else if !(is_filler(line) || label(line).is_some() || c.starts_with(".reg")) {
                for r in registers(line) {
                    writes.entry(r).or_default().extend([i, i]);
                }
            }
            insts.push(inst);
        }
        Body {
            lines,
            insts,
            writes,
        }
    }

    /// The line that writes `reg`, when exactly one unpredicated line does.
    fn single(&self, reg: &str) -> Option<usize> {
        match self.writes.get(reg)?.as_slice() {
            &[i] => self.insts[i]
                .as_ref()
                .filter(|inst| inst.guard.is_none())
                .map(|_| i),
            _ => None,
        }
    }

    fn inst(&self, i: usize) -> &Inst<'a> {
        self.insts[i]
            .as_ref()
            .expect("a written register's line is an instruction")
    }
}

/// A literal operand's value, as an unsigned number of `bits` bits.
fn literal(op: &str, bits: u32) -> Option<u128> {
    let v = parse_literal(op)? as u64;
    Some(if bits >= 64 {
        u128::from(v)
    } else {
        u128::from(v & ((1u64 << bits) - 1))
    })
}

/// The width in bits an opcode's type suffix gives (`add.s64` → 64), 64 for `.wide`'s result.
fn width(opcode: &str) -> u32 {
    if opcode.contains(".wide") {
        return 64;
    }
    let ty = opcode.rsplit('.').next().unwrap_or_default();
    ty.get(1..).and_then(|b| b.parse().ok()).unwrap_or(64)
}

/// Value ranges of the body's registers under the variant's launch limits.
struct Ranges<'b, 'a> {
    body: &'b Body<'a>,
    /// Length parameters of slices: below [`MAX_SLICE_BYTES`] elements.
    lengths: Vec<&'b str>,
    block: Option<[u64; 3]>,
    memo: HashMap<&'a str, Option<Range>>,
    /// `(from, to, a, b)`: on lines `from < i < to`, `a < b` holds.
    guards: Vec<(usize, usize, &'a str, &'a str)>,
}

impl<'b, 'a> Ranges<'b, 'a> {
    fn new(body: &'b Body<'a>, lengths: Vec<&'b str>, block: Option<[u64; 3]>) -> Self {
        let mut ranges = Ranges {
            body,
            lengths,
            block,
            memo: HashMap::new(),
            guards: Vec::new(),
        };
        ranges.find_guards();
        ranges
    }

    /// Guards `@%p bra` whose fall-through has `a < b`: `%p` is `setp.ge a, b` (or an `or.pred`
    /// of such), or `@!%p` with `setp.lt a, b` (or an `and.pred` of such). The fact holds up to
    /// the next label (which other branches may reach).
    fn find_guards(&mut self) {
        let body = self.body;
        let mut ge: HashMap<&str, Vec<(&str, &str)>> = HashMap::new();
        let mut lt: HashMap<&str, Vec<(&str, &str)>> = HashMap::new();
        for (i, inst) in body.insts.iter().enumerate() {
            let Some(inst) = inst else { continue };
            if inst.guard.is_some()
                || body.single(inst.ops.first().copied().unwrap_or("")) != Some(i)
            {
                continue;
            }
            let unsigned = |t: &str| matches!(t, "u32" | "u64");
            let parts: Vec<&str> = inst.opcode.split('.').collect();
            match parts.as_slice() {
                ["setp", "ge", t] if unsigned(t) && inst.ops.len() == 3 => {
                    ge.insert(inst.ops[0], vec![(inst.ops[1], inst.ops[2])]);
                }
                ["setp", "lt", t] if unsigned(t) && inst.ops.len() == 3 => {
                    lt.insert(inst.ops[0], vec![(inst.ops[1], inst.ops[2])]);
                }
                ["or", "pred"] if inst.ops.len() == 3 => {
                    if let (Some(a), Some(b)) = (ge.get(inst.ops[1]), ge.get(inst.ops[2])) {
                        let both = a.iter().chain(b).copied().collect();
                        ge.insert(inst.ops[0], both);
                    }
                }
                ["and", "pred"] if inst.ops.len() == 3 => {
                    if let (Some(a), Some(b)) = (lt.get(inst.ops[1]), lt.get(inst.ops[2])) {
                        let both = a.iter().chain(b).copied().collect();
                        lt.insert(inst.ops[0], both);
                    }
                }
                _ => {}
            }
        }
        for (i, inst) in body.insts.iter().enumerate() {
            let Some(Inst {
                guard: Some(guard),
                opcode,
                ..
            }) = inst
            else {
                continue;
            };
            if !opcode.starts_with("bra") {
                continue;
            }
            let facts = match guard.strip_prefix('!') {
                Some(p) => lt.get(p),
                None => ge.get(guard),
            };
            let Some(facts) = facts else { continue };
            let end = (i + 1..body.lines.len())
                .find(|&j| label(&body.lines[j]).is_some())
                .unwrap_or(body.lines.len());
            for &(a, b) in facts {
                self.guards.push((i, end, a, b));
            }
        }
    }

    /// The range of `op` read as a `bits`-bit unsigned value at line `at`.
    fn at(&mut self, op: &'a str, bits: u32, at: usize) -> Option<Range> {
        let mut r = self.of(op, bits)?;
        let facts: Vec<&'a str> = self
            .guards
            .iter()
            .filter(|&&(from, to, _, b)| from < at && at < to && b == op)
            .map(|&(_, _, a, _)| a)
            .collect();
        for a in facts {
            if let Some((lo, _)) = self.of(a, bits) {
                r.0 = r.0.max(lo + 1);
            }
        }
        (r.0 <= r.1).then_some(r)
    }

    /// The range of `op` read as a `bits`-bit unsigned value, wherever it is read.
    fn of(&mut self, op: &'a str, bits: u32) -> Option<Range> {
        if let Some(v) = literal(op, bits) {
            return Some((v, v));
        }
        if let Some(r) = self.special(op) {
            return Some(r);
        }
        let full = if bits >= 64 {
            u128::from(u64::MAX)
        } else {
            (1u128 << bits) - 1
        };
        let r = match self.memo.get(op) {
            Some(&r) => r,
            None => {
                self.memo.insert(op, None);
                let r = self.compute(op);
                self.memo.insert(op, r);
                r
            }
        };
        r.filter(|r| r.1 <= full)
    }

    /// Bounds of the special registers under the launch limits.
    fn special(&self, op: &str) -> Option<Range> {
        let (reg, axis) = op.split_once('.')?;
        let axis = ["x", "y", "z"].iter().position(|a| *a == axis)?;
        let (threads_max, hardware_blocks) = (
            [1024, 1024, 64][axis],
            [u32::MAX as u64 >> 1, 65535, 65535][axis],
        );
        let ntid = match self.block {
            Some(b) => (b[axis], b[axis]),
            None => (1, threads_max),
        };
        let blocks = hardware_blocks.min(MAX_THREADS / ntid.0);
        let r = match reg {
            "%tid" => (0, ntid.1 - 1),
            "%ntid" => ntid,
            "%ctaid" => (0, blocks - 1),
            "%nctaid" => (1, blocks),
            _ => return None,
        };
        Some((u128::from(r.0), u128::from(r.1)))
    }

    fn compute(&mut self, reg: &'a str) -> Option<Range> {
        let i = self.body.single(reg)?;
        let inst = self.body.inst(i);
        let (opcode, ops) = (inst.opcode, inst.ops.clone());
        let parts: Vec<&str> = opcode.split('.').collect();
        let bits = width(opcode);
        let bounded = |r: Range| (r.1 < (1u128 << bits)).then_some(r);
        match (parts[0], ops.as_slice()) {
            ("mov", [_, src]) => self.of(src, bits),
            ("ld", [_, addr]) if parts.get(1) == Some(&"param") => {
                let name = addr.trim_matches(['[', ']']);
                if self.lengths.contains(&name) {
                    Some((0, u128::from(MAX_SLICE_BYTES)))
                } else {
                    (bits < 64).then(|| (0, (1u128 << bits) - 1))
                }
            }
            ("cvt", [_, src]) if parts.len() == 3 && parts[1].starts_with('u') => {
                // Zero extension (or a truncation that keeps a small value).
                let from = width(&format!(".{}", parts[2]));
                let r = self
                    .at(src, from, i)
                    .unwrap_or((0, (1u128 << from.min(64)) - 1));
                bounded(r)
            }
            ("add", [_, a, b]) => {
                let ra = self.at(a, bits, i)?;
                if let Some(k) = parse_literal(b).filter(|&k| k < 0 && bits == 64) {
                    let k = u128::from(k.unsigned_abs());
                    return (ra.0 >= k).then(|| (ra.0 - k, ra.1 - k));
                }
                let rb = self.at(b, bits, i)?;
                bounded((ra.0 + rb.0, ra.1 + rb.1))
            }
            ("sub", [_, a, b]) => {
                let (ra, rb) = (self.at(a, bits, i)?, self.at(b, bits, i)?);
                (ra.0 >= rb.1).then(|| (ra.0 - rb.1, ra.1 - rb.0))
            }
            ("mul", [_, a, b]) if parts.get(1).is_some_and(|m| *m == "lo" || *m == "wide") => {
                let from = if parts[1] == "wide" { 32 } else { bits };
                if let Some(r) = self.block_times_size(a, b) {
                    return Some(r);
                }
                let (ra, rb) = (self.at(a, from, i)?, self.at(b, from, i)?);
                bounded((ra.0 * rb.0, ra.1.checked_mul(rb.1)?))
            }
            ("mad", [_, a, b, c]) if parts.get(1).is_some_and(|m| *m == "lo" || *m == "wide") => {
                let from = if parts[1] == "wide" { 32 } else { bits };
                let rc = self.at(c, bits, i)?;
                let rab = match self.block_times_size(a, b) {
                    Some(r) => r,
                    None => {
                        let (ra, rb) = (self.at(a, from, i)?, self.at(b, from, i)?);
                        (ra.0 * rb.0, ra.1.checked_mul(rb.1)?)
                    }
                };
                bounded((rab.0 + rc.0, rab.1 + rc.1))
            }
            ("shl", [_, a, k]) => {
                let k = u32::try_from(parse_literal(k)?)
                    .ok()
                    .filter(|&k| k < bits)?;
                let ra = self.at(a, bits, i)?;
                bounded((ra.0 << k, ra.1 << k))
            }
            ("shr", [_, a, k])
                if opcode.ends_with(".u32")
                    || opcode.ends_with(".u64")
                    || opcode.ends_with(".b32")
                    || opcode.ends_with(".b64") =>
            {
                let k = u32::try_from(parse_literal(k)?)
                    .ok()
                    .filter(|&k| k < bits)?;
                let ra = self.at(a, bits, i)?;
                Some((ra.0 >> k, ra.1 >> k))
            }
            ("and", [_, a, b]) => {
                let his: Vec<u128> = [self.at(a, bits, i), self.at(b, bits, i)]
                    .into_iter()
                    .flatten()
                    .map(|r| r.1)
                    .collect();
                his.into_iter().min().map(|hi| (0, hi))
            }
            ("or", [_, a, b]) => {
                let (ra, rb) = (self.at(a, bits, i)?, self.at(b, bits, i)?);
                let hi = ra.1.max(rb.1);
                let top = (1u128 << (128 - hi.leading_zeros())) - 1;
                Some((ra.0.max(rb.0), top))
            }
            ("min", [_, a, b]) if parts.get(1).is_some_and(|t| t.starts_with('u')) => {
                let his: Vec<u128> = [self.at(a, bits, i), self.at(b, bits, i)]
                    .into_iter()
                    .flatten()
                    .map(|r| r.1)
                    .collect();
                his.into_iter().min().map(|hi| (0, hi))
            }
            ("selp", [_, a, b, _]) => {
                let (ra, rb) = (self.at(a, bits, i)?, self.at(b, bits, i)?);
                Some((ra.0.min(rb.0), ra.1.max(rb.1)))
            }
            _ => None,
        }
    }

    /// `%ctaid.X * %ntid.X` (each directly or through a `mov`): below the thread limit, however
    /// large either may be alone.
    fn block_times_size(&self, a: &str, b: &str) -> Option<Range> {
        let source = |op: &str| -> String {
            match self.body.single(op).map(|i| self.body.inst(i)) {
                Some(inst) if inst.opcode.starts_with("mov.") && inst.ops.len() == 2 => {
                    inst.ops[1].to_string()
                }
                _ => op.to_string(),
            }
        };
        let (a, b) = (source(a), source(b));
        let pair = |x: &str, y: &str| {
            let axis = x.strip_prefix("%ctaid.")?;
            (y.strip_prefix("%ntid.")? == axis).then_some(())
        };
        pair(&a, &b).or_else(|| pair(&b, &a))?;
        Some((0, u128::from(MAX_THREADS)))
    }
}

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

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The body rewritten for the variant, or `None` when nothing changes. `slices`: the PTX names
/// of each slice parameter's pointer and length.
fn narrow(
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
    let raw: Vec<&str> = body
        .insts
        .iter()
        .enumerate()
        .filter_map(|(i, inst)| {
            let inst = inst.as_ref()?;
            let param = inst.ops.get(1)?.trim_matches(['[', ']']);
            (inst.opcode.starts_with("ld.param")
                && pointers.contains(&param)
                && body.single(inst.ops[0]) == Some(i))
            .then(|| inst.ops[0])
        })
        .collect();
    let bases: Vec<&str> = body
        .insts
        .iter()
        .enumerate()
        .filter_map(|(i, inst)| {
            let inst = inst.as_ref()?;
            (inst.opcode == "cvta.to.global.u64"
                && raw.contains(inst.ops.get(1)?)
                && body.single(inst.ops[0]) == Some(i))
            .then(|| inst.ops[0])
        })
        .collect();
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
                    let g = parts.iter().fold(0, |g, &(_, s)| gcd(g, s));
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

/// The machine instructions of each function in a cubin (ELF `.text.<name>` sections, 16
/// bytes an instruction on sm_70 and newer), padding `NOP`s not counted.
pub fn instruction_counts(cubin: &[u8]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    let read = |at: usize, n: usize| -> Option<u64> {
        let bytes = cubin.get(at..at + n)?;
        Some(
            bytes
                .iter()
                .rev()
                .fold(0u64, |v, &b| (v << 8) | u64::from(b)),
        )
    };
    let (Some(shoff), Some(shentsize), Some(shnum), Some(shstrndx)) =
        (read(0x28, 8), read(0x3a, 2), read(0x3c, 2), read(0x3e, 2))
    else {
        return counts;
    };
    if cubin.get(..4) != Some(b"\x7fELF".as_slice()) || cubin.get(4) != Some(&2) {
        return counts;
    }
    let section = |i: u64| -> Option<(u64, u64, u64)> {
        let at = usize::try_from(shoff + i * shentsize).ok()?;
        Some((read(at, 4)?, read(at + 24, 8)?, read(at + 32, 8)?))
    };
    let Some((_, strings, _)) = section(shstrndx) else {
        return counts;
    };
    for i in 0..shnum {
        let Some((name_at, offset, size)) = section(i) else {
            continue;
        };
        let Some(name) = usize::try_from(strings + name_at)
            .ok()
            .and_then(|at| cubin.get(at..))
            .and_then(|rest| rest.split(|&b| b == 0).next())
            .and_then(|n| std::str::from_utf8(n).ok())
        else {
            continue;
        };
        let Some(function) = name.strip_prefix(".text.") else {
            continue;
        };
        let (Ok(offset), Ok(size)) = (usize::try_from(offset), usize::try_from(size)) else {
            continue;
        };
        let Some(text) = cubin.get(offset..offset + size) else {
            continue;
        };
        let n = text
            .chunks_exact(16)
            .filter(|word| u16::from_le_bytes([word[0], word[1]]) & 0xfff != 0x918)
            .count();
        counts.insert(function.to_string(), n);
    }
    counts
}

/// The module without the variants of `kernels` (entries `k$idx32` and the blank line before
/// each).
pub fn remove_variants(ptx: &str, kernels: &[String]) -> String {
    let doomed: Vec<String> = kernels.iter().map(|k| format!("{k}{SUFFIX}")).collect();
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if entry_name(lines[i]).is_some_and(|n| doomed.iter().any(|d| d == n))
            && let Some(open) = (i..lines.len()).find(|&j| code(lines[j]) == "{")
        {
            if out.last().is_some_and(|l| l.trim().is_empty()) {
                out.pop();
            }
            i = body_end(&lines, open) + 1;
            continue;
        }
        out.push(lines[i]);
        i += 1;
    }
    let mut text = out.join("\n");
    if ptx.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The kernels whose variant is not shorter than the kernel in `counts` (a cubin's
/// [`instruction_counts`]), among the `entries` of a module.
pub fn unprofitable(entries: &[String], counts: &HashMap<String, usize>) -> Vec<String> {
    entries
        .iter()
        .filter_map(|e| gpu_abi::index32::kernel_of_variant(e))
        .filter(
            |k| match (counts.get(*k), counts.get(&format!("{k}{SUFFIX}"))) {
                (Some(kernel), Some(variant)) => variant >= kernel,
                _ => true,
            },
        )
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::test_support::instructions;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|l| format!("\t{l}")).collect()
    }

    /// The body narrowed for a kernel whose slice is `k_param_0` (pointer) and `k_param_1`
    /// (length), as instructions.
    fn narrowed(body: &[&str], block: Option<[u64; 3]>) -> Option<Vec<String>> {
        let slices = [("k_param_0".to_string(), "k_param_1".to_string())];
        narrow(&lines(body), &slices, block).map(|out| instructions(&out.join("\n")))
    }

    #[test]
    fn compares_of_values_below_2_32_are_32_bit() {
        let out = narrowed(
            &[
                "mov.u32 %r1, %tid.x;",
                "cvt.u64.u32 %rd1, %r1;",
                "ld.param.b32 %r2, [k_param_2];",
                "cvt.u64.u32 %rd2, %r2;",
                "setp.ge.u64 %p1, %rd1, %rd2;",
                "ld.param.b64 %rd3, [k_param_1];",
                "setp.lt.u64 %p2, %rd1, %rd3;",
                "ld.param.b64 %rd4, [k_param_3];",
                "setp.lt.u64 %p3, %rd1, %rd4;",
            ],
            None,
        )
        .expect("changed");
        assert!(
            out.contains(&"setp.ge.u32 %p1, %r1, %r2;".to_string()),
            "{out:#?}"
        );
        // A slice length is below the variant's limit: its low half stands for it.
        assert!(
            out.contains(&"cvt.u32.u64 %idx32_r0, %rd3;".to_string()),
            "{out:#?}"
        );
        assert!(
            out.contains(&"setp.lt.u32 %p2, %r1, %idx32_r0;".to_string()),
            "{out:#?}"
        );
        // A 64-bit scalar parameter may be anything: that compare stays.
        assert!(
            out.contains(&"setp.lt.u64 %p3, %rd1, %rd4;".to_string()),
            "{out:#?}"
        );
    }

    #[test]
    fn a_global_index_below_the_thread_limit_compares_in_32_bits() {
        // `blockIdx.x * 256 + threadIdx.x` can pass 2^32 in general (2^31 blocks), not in a
        // launch of fewer than 2^31 threads.
        let body = [
            "mov.u32 %r1, %ctaid.x;",
            "mov.u32 %r2, %tid.x;",
            "mul.wide.u32 %rd1, %r1, 256;",
            "cvt.u64.u32 %rd2, %r2;",
            "add.s64 %rd3, %rd1, %rd2;",
            "ld.param.b64 %rd4, [k_param_1];",
            "setp.ge.u64 %p1, %rd3, %rd4;",
        ];
        let out = narrowed(&body, Some([256, 1, 1])).expect("changed");
        assert!(
            out.iter().any(|l| l.starts_with("setp.ge.u32 %p1,")),
            "{out:#?}"
        );
        // Without the block shape, `%ctaid.x * 256` is not known to be small.
        assert_eq!(narrowed(&body, None), None);
    }

    #[test]
    fn global_addresses_come_from_32_bit_offsets() {
        let out = narrowed(
            &[
                "ld.param.b64 %rd1, [k_param_0];",
                "cvta.to.global.u64 %rd2, %rd1;",
                "ld.param.b32 %r1, [k_param_2];",
                "mov.u32 %r2, %tid.x;",
                "mul.wide.u32 %rd3, %r1, %r2;",
                "shl.b64 %rd4, %rd3, 2;",
                "add.s64 %rd5, %rd2, %rd4;",
                "ld.global.f32 %f1, [%rd5+-4];",
                "st.global.f32 [%rd5+8], %f1;",
            ],
            None,
        )
        .expect("changed");
        assert_eq!(
            out,
            [
                ".reg .b32 %idx32_r<1>;",
                ".reg .b64 %idx32_rd<1>;",
                "ld.param.b64 %rd1, [k_param_0];",
                "cvta.to.global.u64 %rd2, %rd1;",
                "ld.param.b32 %r1, [k_param_2];",
                "mov.u32 %r2, %tid.x;",
                "mul.wide.u32 %rd3, %r1, %r2;",
                "mul.lo.s32 %idx32_r0, %r1, %r2;",
                "shl.b64 %rd4, %rd3, 2;",
                "add.s64 %rd5, %rd2, %rd4;",
                "mad.wide.s32 %idx32_rd0, %idx32_r0, 4, %rd2;",
                "ld.global.f32 %f1, [%idx32_rd0+-4];",
                "st.global.f32 [%idx32_rd0+8], %f1;",
            ]
        );
    }

    #[test]
    fn terms_with_different_scales_sum_in_32_bits() {
        // base + 4 * i + 8 * j: the common factor 4 is the scale, j counts twice.
        let out = narrowed(
            &[
                "ld.param.b64 %rd1, [k_param_0];",
                "cvta.to.global.u64 %rd2, %rd1;",
                "mov.u32 %r1, %tid.x;",
                "mov.u32 %r2, %tid.y;",
                "mul.wide.u32 %rd3, %r1, 4;",
                "mul.wide.u32 %rd4, %r2, 8;",
                "add.s64 %rd5, %rd2, %rd3;",
                "add.s64 %rd6, %rd5, %rd4;",
                "ld.global.f32 %f1, [%rd6];",
            ],
            None,
        )
        .expect("changed");
        for line in [
            "mul.lo.s32 %idx32_r0, %r2, 2;",
            "add.s32 %idx32_r1, %r1, %idx32_r0;",
            "mad.wide.s32 %idx32_rd0, %idx32_r1, 4, %rd2;",
            "ld.global.f32 %f1, [%idx32_rd0];",
        ] {
            assert!(out.contains(&line.to_string()), "{line} in {out:#?}");
        }
    }

    #[test]
    fn a_register_written_twice_is_read_where_its_reader_runs() {
        // %rd3 is a loop-carried value: its low half is taken before the line that reads it.
        let out = narrowed(
            &[
                "ld.param.b64 %rd1, [k_param_0];",
                "cvta.to.global.u64 %rd2, %rd1;",
                "mov.u64 %rd3, 0;",
                "$L__BB0_1:",
                "shl.b64 %rd4, %rd3, 2;",
                "add.s64 %rd5, %rd2, %rd4;",
                "ld.global.f32 %f1, [%rd5];",
                "add.s64 %rd3, %rd3, 1;",
                "bra.uni $L__BB0_1;",
            ],
            None,
        )
        .expect("changed");
        let at = |l: &str| {
            out.iter()
                .position(|x| x == l)
                .unwrap_or_else(|| panic!("{l} in {out:#?}"))
        };
        assert!(at("cvt.u32.u64 %idx32_r0, %rd3;") < at("shl.b64 %rd4, %rd3, 2;"));
        assert!(
            at("mad.wide.s32 %idx32_rd0, %idx32_r0, 4, %rd2;") > at("add.s64 %rd5, %rd2, %rd4;")
        );
        assert!(
            out.contains(&"ld.global.f32 %f1, [%idx32_rd0];".to_string()),
            "{out:#?}"
        );
    }

    #[test]
    fn accesses_it_cannot_prove_are_left_alone() {
        let unchanged = |body: &[&str]| assert_eq!(narrowed(body, None), None, "{body:?}");
        // A large displacement.
        unchanged(&[
            "ld.param.b64 %rd1, [k_param_0];",
            "cvta.to.global.u64 %rd2, %rd1;",
            "mov.u32 %r1, %tid.x;",
            "mul.wide.u32 %rd3, %r1, 4;",
            "add.s64 %rd4, %rd2, %rd3;",
            "ld.global.f32 %f1, [%rd4+2097152];",
        ]);
        // A pointer that is not a slice parameter's.
        unchanged(&[
            "ld.param.b64 %rd1, [k_param_2];",
            "cvta.to.global.u64 %rd2, %rd1;",
            "mov.u32 %r1, %tid.x;",
            "mul.wide.u32 %rd3, %r1, 4;",
            "add.s64 %rd4, %rd2, %rd3;",
            "ld.global.f32 %f1, [%rd4];",
        ]);
        // A base written twice (a pointer bumped in a loop).
        unchanged(&[
            "ld.param.b64 %rd1, [k_param_0];",
            "cvta.to.global.u64 %rd2, %rd1;",
            "mov.u32 %r1, %tid.x;",
            "mul.wide.u32 %rd3, %r1, 4;",
            "add.s64 %rd4, %rd2, %rd3;",
            "ld.global.f32 %f1, [%rd4];",
            "add.s64 %rd2, %rd2, 4096;",
        ]);
    }

    #[test]
    fn after_a_guard_the_bound_is_above_the_guarded_value() {
        // `if x >= w { return }` then `x == w - 1`: w >= 1 there, so w - 1 does not wrap.
        let out = narrowed(
            &[
                "mov.u32 %r1, %tid.x;",
                "cvt.u64.u32 %rd1, %r1;",
                "ld.param.b32 %r2, [k_param_2];",
                "cvt.u64.u32 %rd2, %r2;",
                "setp.ge.u64 %p1, %rd1, %rd2;",
                "@%p1 bra $L__BB0_2;",
                "add.s64 %rd3, %rd2, -1;",
                "setp.eq.b64 %p2, %rd1, %rd3;",
                "$L__BB0_2:",
                "add.s64 %rd4, %rd2, -1;",
                "setp.eq.b64 %p3, %rd1, %rd4;",
                "ret;",
            ],
            None,
        )
        .expect("changed");
        assert!(
            out.iter().any(|l| l.starts_with("setp.eq.b32 %p2,")),
            "{out:#?}"
        );
        // After the label other paths arrive, where w may be 0.
        assert!(
            out.contains(&"setp.eq.b64 %p3, %rd1, %rd4;".to_string()),
            "{out:#?}"
        );
    }

    fn manifest(ptx_params: &[&str]) -> Manifest {
        use crate::manifest::{KernelInfo, ParamInfo, PtxParam};
        let param = |name: &str, kind| ParamInfo {
            name: name.to_string(),
            kind,
            ty: "f32".to_string(),
            generic_ty: None,
            uses: Vec::new(),
        };
        Manifest {
            crate_name: "k".to_string(),
            arch: "sm_80".to_string(),
            ptx_version: "8.0".to_string(),
            ptx_file: "k.ptx".to_string(),
            kernels: vec![KernelInfo {
                name: "k".to_string(),
                rust_module: Some("k".to_string()),
                params: vec![param("x", ParamKind::Output), param("w", ParamKind::Scalar)],
                is_unsafe: false,
                generic: None,
                ptx_params: ptx_params
                    .iter()
                    .map(|n| PtxParam {
                        name: n.to_string(),
                        ty: ".u64".to_string(),
                        size: 8,
                        align: 8,
                    })
                    .collect(),
                static_shared_bytes: 0,
                uses_dynamic_shared: false,
            }],
            shared: Vec::new(),
        }
    }

    const MODULE: &str = ".version 8.0\n.target sm_80\n.address_size 64\n\n\
        .visible .entry k(\n\t.param .u64 .ptr .align 1 k_param_0,\n\t.param .u64 k_param_1,\n\t.param .u32 k_param_2\n)\n\
        .reqntid 256, 1, 1\n{\n\t.reg .b64 %rd<6>;\n\
        \tld.param.b64 %rd1, [k_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\
        \tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\
        \tst.global.f32 [%rd4], %f1;\n\tret;\n}\n";

    #[test]
    fn a_variant_follows_its_kernel_and_can_be_removed_again() {
        let with = add_variants(MODULE, &manifest(&["k_param_0", "k_param_1", "k_param_2"]));
        assert!(
            with.starts_with(MODULE.trim_end()),
            "the kernel is unchanged"
        );
        let variant = &with[MODULE.len()..];
        assert!(variant.contains(".visible .entry k$idx32(\n"), "{variant}");
        assert!(variant.contains(".reqntid 256, 1, 1"), "{variant}");
        assert!(
            variant.contains("st.global.f32 [%idx32_rd0], %f1;"),
            "{variant}"
        );
        assert_eq!(remove_variants(&with, &["k".to_string()]), MODULE);
        // An entry the rewrite does not change gets no variant.
        let plain = MODULE.replace("[%rd4]", "[%rd2]");
        assert_eq!(
            add_variants(&plain, &manifest(&["k_param_0", "k_param_1", "k_param_2"])),
            plain
        );
    }

    #[test]
    fn variants_no_shorter_than_their_kernels_go() {
        let entries: Vec<String> = ["a", "a$idx32", "b", "b$idx32", "c"]
            .map(String::from)
            .to_vec();
        let counts: HashMap<String, usize> = [
            ("a", 40),
            ("a$idx32", 36),
            ("b", 40),
            ("b$idx32", 40),
            ("c", 9),
        ]
        .map(|(k, n)| (k.to_string(), n))
        .into();
        assert_eq!(unprofitable(&entries, &counts), ["b"]);
        // Without counts (no cubin), none stays.
        assert_eq!(unprofitable(&entries, &HashMap::new()), ["a", "b"]);
    }

    #[test]
    fn instructions_are_counted_per_function_without_padding() {
        // A minimal ELF64: section 0 null, 1 the section names, 2 `.text.k` with three
        // instructions and two NOPs.
        let names = b"\0.shstrtab\0.text.k\0";
        let mut text = Vec::new();
        for opcode in [0x7986u16, 0x794d, 0x7918, 0x7947, 0x7918] {
            let mut word = [0u8; 16];
            word[..2].copy_from_slice(&opcode.to_le_bytes());
            text.extend(word);
        }
        let (names_at, text_at) = (64usize, 64 + names.len());
        let shoff = text_at + text.len();
        let mut elf = vec![0u8; shoff + 3 * 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        elf[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
        elf[names_at..text_at].copy_from_slice(names);
        elf[text_at..shoff].copy_from_slice(&text);
        for (i, (name, at, size)) in [(1u32, names_at, names.len()), (11, text_at, text.len())]
            .into_iter()
            .enumerate()
        {
            let s = shoff + (i + 1) * 64;
            elf[s..s + 4].copy_from_slice(&name.to_le_bytes());
            elf[s + 24..s + 32].copy_from_slice(&(at as u64).to_le_bytes());
            elf[s + 32..s + 40].copy_from_slice(&(size as u64).to_le_bytes());
        }
        let counts = instruction_counts(&elf);
        assert_eq!(counts.get("k"), Some(&3), "{counts:?}");
        assert_eq!(counts.len(), 1);
        assert!(instruction_counts(b"not an ELF file at all, far too short").is_empty());
    }
}
