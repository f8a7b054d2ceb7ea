//! Removes the clamps LLVM writes around float-to-integer conversions that PTX's `cvt` already
//! does.
//!
//! Rust's `x as u8`, `x as i32`, ... saturate: NaN gives 0, and a value past the integer type's
//! range gives its smallest or largest value (`llvm.fptoui.sat` / `llvm.fptosi.sat`). LLVM's
//! NVPTX backend expands them generically, as for a machine whose conversion does something
//! arbitrary out of range. Where the type's bounds are exact in the float type and `min`/`max`
//! are legal it clamps first, then converts (plus a NaN select when signed):
//!
//! ```text
//!     max.f32          %r17, %r16, 0f00000000;     // NaN -> 0
//!     min.f32          %r18, %r17, 0f437F0000;     // 255.0
//!     cvt.rzi.u16.f32  %rs4, %r18;                 // `as u8`, in a 16-bit register
//! ```
//!
//! and otherwise it converts, then selects the bounds and 0 by comparing the source:
//!
//! ```text
//!     setp.ltu.f32     %p8, %r25, 0fCF000000;      // x < -2^31 or NaN
//!     cvt.rzi.s32.f32  %r31, %r25;
//!     selp.b32         %r32, -2147483648, %r31, %p8;
//!     setp.gt.f32      %p9, %r25, 0f4EFFFFFF;      // largest f32 below 2^31
//!     selp.b32         %r33, 2147483647, %r32, %p9;
//!     setp.nan.f32     %p10, %r25, %r25;
//!     selp.b32         %r306, 0, %r33, %p10;       // `as i32`
//! ```
//!
//! ptxas keeps every one of them (the first is two `FMNMX` before the `F2I`). PTX's `cvt` needs
//! none of the clamps. The PTX ISA, `cvt`, Integer Notes: "For float-to-integer conversions,
//! the result is clamped to the destination range by default; i.e, `.sat` is redundant", and
//! "In float-to-integer conversions, depending upon conversion types, NaN input results in
//! following value: 1. Zero if source is not `.f64` and destination is not `.s64`, `.u64`.
//! 2. Otherwise 1 << (BitWidth(dst) - 1)"; its Notes: with a destination register wider than the
//! type, "the result of conversion is sign-extended to the destination register width for
//! signed integers, and is zero-extended ... for unsigned". So `cvt.rzi.{s,u}W` with `W` the
//! width the bounds saturate to computes Rust's `as` for every input but NaN, and for NaN too
//! when the source is `.f32` and `W` is at most 32:
//!
//! - `.f32` to 8, 16 or 32 bits: the whole sequence becomes one `cvt.rzi.{s,u}W.f32` of the
//!   source (`cvt.rzi.u8.f32 %rs4, %r16;` above: 0 for NaN and below 0, 255 at and above 255,
//!   truncation between, zero-extended into the 16-bit register as the `u16` conversion of the
//!   clamped value was). The result is written where the sequence wrote it, by its last line.
//! - Otherwise (`.f64` source, or 64 bits) the NaN case stays as LLVM wrote it and only the
//!   bounds go: signed, the `setp.nan` + `selp 0` remain around the bare conversion (whatever it
//!   gives for NaN is replaced by 0); unsigned, the clamp form keeps its `max` with 0 (which
//!   maps NaN to 0 before the conversion) and the compare form its `setp.ltu` with 0 and its
//!   `selp 0` (NaN and negatives), dropping the upper bound.
//!
//! Truncating and clamping commute here because the bounds are integers: for an integer `B`,
//! `trunc(min(x, B)) = min(trunc(x), B)`, likewise for `max`; and in the compare form the
//! upper threshold is the largest float not above the bound, so `x >` it exactly when
//! `trunc(x)` exceeds the bound.
//!
//! A sequence is rewritten only when it is exactly one of these: every instruction
//! unpredicated, in one straight run (no label, branch or multi-statement line between its
//! first and last instruction), the constants exactly the integer type's bounds (checked from
//! their bits, for a width of 8, 16, 32 or 64), the conversion `.rzi` without `.ftz`/`.sat`,
//! `min`/`max` without `.ftz`/`.NaN`, each register and predicate it defines and drops used
//! nowhere else in the function (it appears exactly twice: its definition and its one use), and
//! the source not written by any other instruction in between. Anything else, including a
//! clamp to other constants, is left as LLVM wrote it.

use crate::ptx::{code, registers};
use std::collections::{HashMap, HashSet};

/// Names this rewrite in the record of what a module's PTX was made from, so that PTX rewritten
/// by an earlier version of it is rebuilt: change it whenever the rewrite's output changes.
pub const REVISION: &str = "float-to-int clamps v1";

/// The module with the rewrite applied to every function body.
pub fn simplify(ptx: &str) -> String {
    crate::branches::map_bodies(ptx, simplify_body)
}

/// One simple, unpredicated instruction: `opcode a, b, ...;`.
#[derive(Debug)]
struct Inst<'a> {
    opcode: &'a str,
    operands: Vec<&'a str>,
}

/// The line as one unpredicated instruction, or `None` (label, directive, predicated,
/// several statements, braces).
fn instruction(line: &str) -> Option<Inst<'_>> {
    let c = code(line);
    let body = c.strip_suffix(';')?;
    if body.contains([';', '{', '}', '@']) || c.ends_with(':') || c.starts_with('.') {
        return None;
    }
    let (opcode, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let operands = rest.split(',').map(str::trim).filter(|s| !s.is_empty());
    Some(Inst {
        opcode,
        operands: operands.collect(),
    })
}

/// Whether a line ends a straight run of instructions: a label, a branch or other control
/// transfer, a line holding more than one statement or a brace, or a predicated instruction.
fn breaks_run(line: &str) -> bool {
    let c = code(line);
    if c.is_empty() || c.starts_with(".loc") {
        return false;
    }
    if c.ends_with(':') || c.contains(['{', '}', '@']) || c.matches(';').count() > 1 {
        return true;
    }
    let op = c.split(|ch: char| ch.is_whitespace() || ch == ';').next();
    let op = op.unwrap_or("");
    [
        "bra", "ret", "exit", "trap", "call", "brx", "bar", "barrier",
    ]
    .iter()
    .any(|b| op == *b || op.starts_with(&format!("{b}.")))
}

/// A float type and width from an instruction type suffix (`f32`, `f64`).
fn float_bits(ty: &str) -> Option<u32> {
    match ty {
        "f32" => Some(32),
        "f64" => Some(64),
        _ => None,
    }
}

/// The value of a PTX float literal of the given width (`0f3F800000`, `0d3FF0000000000000`).
fn float_literal(s: &str, bits: u32) -> Option<f64> {
    match bits {
        32 => {
            let hex = s.strip_prefix("0f").or_else(|| s.strip_prefix("0F"))?;
            (hex.len() == 8)
                .then(|| u32::from_str_radix(hex, 16).ok())
                .flatten()
                .map(|b| f64::from(f32::from_bits(b)))
        }
        64 => {
            let hex = s.strip_prefix("0d").or_else(|| s.strip_prefix("0D"))?;
            (hex.len() == 16)
                .then(|| u64::from_str_radix(hex, 16).ok())
                .flatten()
                .map(f64::from_bits)
        }
        _ => None,
    }
}

/// The value of a PTX integer literal, as the `bits`-bit pattern it stands for.
fn int_literal(s: &str, bits: u32) -> Option<u64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v: u128 = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u128::from_str_radix(h, 16).ok()?
    } else {
        s.parse().ok()?
    };
    let v = if neg { v.wrapping_neg() } else { v };
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    Some((v as u64) & mask)
}

/// An integer type's bounds as exact values: `(min, max)` of `W` bits.
fn bounds(signed: bool, width: u32) -> (i128, i128) {
    if signed {
        (-(1i128 << (width - 1)), (1i128 << (width - 1)) - 1)
    } else {
        (0, (1i128 << width) - 1)
    }
}

/// Whether a float (an integer value) equals the integer `v` exactly.
fn float_is(f: f64, v: i128) -> bool {
    f.is_finite() && f.trunc() == f && f.abs() < 2f64.powi(100) && f as i128 == v
}

/// Whether `h` is the largest value of the float type (`fbits` wide) that is not above `max`.
fn largest_float_not_above(h: f64, max: i128, fbits: u32) -> bool {
    if !float_is(h, h as i128) || (h as i128) > max {
        return false;
    }
    let next = if fbits == 32 {
        let f = h as f32;
        f64::from(f32::from_bits(if f >= 0.0 {
            f.to_bits() + 1
        } else {
            f.to_bits() - 1
        }))
    } else if h >= 0.0 {
        f64::from_bits(h.to_bits() + 1)
    } else {
        f64::from_bits(h.to_bits() - 1)
    };
    next.is_finite() && next.trunc() == next && (next as i128) > max
}

/// `cvt.rzi.{s,u}N.fT`: `(signed, N, T)`.
fn conversion(opcode: &str) -> Option<(bool, u32, u32)> {
    let rest = opcode.strip_prefix("cvt.rzi.")?;
    let (int, float) = rest.split_once('.')?;
    let fbits = float_bits(float)?;
    let (signed, n) = match int.split_at(1) {
        ("s", n) => (true, n),
        ("u", n) => (false, n),
        _ => return None,
    };
    let n: u32 = n.parse().ok()?;
    [8, 16, 32, 64].contains(&n).then_some((signed, n, fbits))
}

/// The `(signed, width)` whose bounds, as floats, are `lo` and `hi` (the clamp form).
fn clamp_width(lo: f64, hi: f64) -> Option<(bool, u32)> {
    [
        (false, 8),
        (true, 8),
        (false, 16),
        (true, 16),
        (false, 32),
        (true, 32),
    ]
    .into_iter()
    .find(|&(s, w)| {
        let (min, max) = bounds(s, w);
        float_is(lo, min) && float_is(hi, max)
    })
}

/// What the rewrite does to one body's lines.
#[derive(Default)]
struct Edits {
    remove: HashSet<usize>,
    replace: HashMap<usize, String>,
    /// How many 32-bit registers ([`TEMP`]) the new lines use.
    temps: std::cell::Cell<usize>,
}

/// The prefix of the 32-bit registers the rewrite declares (`.reg .b32 %gpu_cvt<N>;`). A body
/// that already mentions it is left alone.
const TEMP: &str = "%gpu_cvt";

impl Edits {
    /// A new 32-bit register.
    fn fresh(&self) -> String {
        let k = self.temps.get();
        self.temps.set(k + 1);
        format!("{TEMP}{k}")
    }
}

/// The body with the rewrite applied (the lines between its braces).
fn simplify_body(body: Vec<String>) -> Vec<String> {
    let mut uses: HashMap<&str, usize> = HashMap::new();
    let mut at: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut scoped: HashSet<&str> = HashSet::new();
    let mut run = vec![0usize; body.len()];
    let mut r = 0;
    let mut depth = 0usize;
    for (i, line) in body.iter().enumerate() {
        for reg in registers(line) {
            *uses.entry(reg).or_default() += 1;
            at.entry(reg).or_default().push(i);
        }
        // Registers declared in a nested scope (inline assembly) may shadow the function's:
        // none mentioned in one takes part.
        let c = code(line);
        let opens = c.matches('{').count();
        let closes = c.matches('}').count();
        if depth > 0 || opens + closes > 0 {
            scoped.extend(registers(line));
        }
        depth = (depth + opens).saturating_sub(closes);
        if breaks_run(line) {
            r += 1;
            run[i] = r;
            r += 1;
        } else {
            run[i] = r;
        }
    }
    let ctx = Ctx {
        body: &body,
        uses,
        at,
        scoped,
        run,
    };
    if body.iter().any(|l| l.contains(TEMP)) {
        return body;
    }
    let mut edits = Edits::default();
    for (i, line) in body.iter().enumerate() {
        if let Some(inst) = instruction(line)
            && conversion(inst.opcode).is_some()
        {
            ctx.clamp_form(i, &inst, &mut edits);
            ctx.compare_form(i, &inst, &mut edits);
        }
    }
    let temps = edits.temps.get();
    let declaration = (temps > 0).then(|| format!("\t.reg .b32 \t{TEMP}<{temps}>;"));
    declaration
        .into_iter()
        .chain(
            body.into_iter()
                .enumerate()
                .filter(|(i, _)| !edits.remove.contains(i))
                .map(|(i, l)| edits.replace.remove(&i).unwrap_or(l)),
        )
        .collect()
}

struct Ctx<'a> {
    body: &'a [String],
    uses: HashMap<&'a str, usize>,
    at: HashMap<&'a str, Vec<usize>>,
    scoped: HashSet<&'a str>,
    run: Vec<usize>,
}

impl<'a> Ctx<'a> {
    /// The other line of a register that appears exactly twice (its definition and one use),
    /// given one of them.
    fn partner(&self, reg: &str, line: usize) -> Option<usize> {
        if self.uses.get(reg) != Some(&2) || self.scoped.contains(reg) || !reg.starts_with('%') {
            return None;
        }
        let lines = self.at.get(reg)?;
        let other = if lines[0] == line { lines[1] } else { lines[0] };
        (other != line).then_some(other)
    }

    /// The instruction on `line` if it is `opcode` and defines `reg` (its first operand).
    fn defines(&self, line: usize, opcode: &str, reg: &str) -> Option<Inst<'a>> {
        let inst = instruction(&self.body[line])?;
        (inst.opcode == opcode && inst.operands.first() == Some(&reg)).then_some(inst)
    }

    /// Whether the lines form one straight run and no other line between them writes `src`.
    fn straight(&self, lines: &[usize], src: &str) -> bool {
        if self.scoped.contains(src) || !src.starts_with('%') {
            return false;
        }
        let (first, last) = (lines.iter().min().unwrap(), lines.iter().max().unwrap());
        if self.run[*first] != self.run[*last] {
            return false;
        }
        (*first..=*last).filter(|l| !lines.contains(l)).all(|l| {
            let c = code(&self.body[l]);
            // The destination is the first operand (a vector destination included).
            let first_operand = c
                .split_once(char::is_whitespace)
                .map_or("", |(_, rest)| rest.split(',').next().unwrap_or(""));
            !registers(first_operand).any(|r| r == src)
        })
    }

    /// `max a, x, LO; min b, a, HI; cvt d, b` [`setp.nan p, x, x; selp r, 0, d, p`].
    fn clamp_form(&self, cvt_line: usize, cvt: &Inst<'a>, edits: &mut Edits) -> Option<()> {
        let (cvt_signed, n, fbits) = conversion(cvt.opcode)?;
        let [d, b] = cvt.operands[..] else {
            return None;
        };
        let fty = format!("f{fbits}");
        let min_line = self.partner(b, cvt_line)?;
        let min = self.defines(min_line, &format!("min.{fty}"), b)?;
        let (a, hi) = constant_operand(&min.operands[1..], fbits)?;
        let max_line = self.partner(a, min_line)?;
        let max = self.defines(max_line, &format!("max.{fty}"), a)?;
        let (x, lo) = constant_operand(&max.operands[1..], fbits)?;
        let (signed, w) = clamp_width(lo, hi)?;
        if w > n || (signed != cvt_signed && (signed || w == n)) {
            return None;
        }
        let nan_to_zero = fbits == 32 && w <= 32;
        let to = |edits: &Edits, dst: &str, src: &str| {
            let t = if signed { 's' } else { 'u' };
            if w == 8 && n == 16 {
                // Through a 32-bit register: converted into the 16-bit one directly, ptxas
                // masks the `F2I.U8`'s result with 0xff again (a `LOP3`) before using it.
                let tmp = edits.fresh();
                format!("\tcvt.rzi.{t}8.{fty} \t{tmp}, {src};\n\tcvt.u16.u32 \t{dst}, {tmp};")
            } else {
                format!("\tcvt.rzi.{t}{w}.{fty} \t{dst}, {src};")
            }
        };
        if !signed {
            let mut lines = vec![max_line, min_line, cvt_line];
            if !self.straight(&lines, x) {
                return None;
            }
            if nan_to_zero {
                lines.retain(|&l| l != cvt_line);
                edits.remove.extend(lines);
                let line = to(edits, d, x);
                edits.replace.insert(cvt_line, line);
            } else {
                // `max` with 0 maps NaN to 0 and stays; the conversion clamps above.
                edits.remove.insert(min_line);
                let line = to(edits, d, a);
                edits.replace.insert(cvt_line, line);
            }
            return Some(());
        }
        // Signed: LLVM selects 0 for a NaN source after the conversion.
        let selp_line = self.partner(d, cvt_line)?;
        let selp = instruction(&self.body[selp_line])?;
        let p = nan_select(&selp, n, d)?;
        let setp_line = self.partner(p, selp_line)?;
        let setp = self.defines(setp_line, &format!("setp.nan.{fty}"), p)?;
        if setp.operands[1..] != [x, x] {
            return None;
        }
        let lines = [max_line, min_line, cvt_line, setp_line, selp_line];
        if !self.straight(&lines, x) {
            return None;
        }
        if nan_to_zero {
            edits
                .remove
                .extend([max_line, min_line, cvt_line, setp_line]);
            let line = to(edits, selp.operands[0], x);
            edits.replace.insert(selp_line, line);
        } else {
            edits.remove.extend([max_line, min_line]);
            let line = to(edits, d, x);
            edits.replace.insert(cvt_line, line);
        }
        Some(())
    }

    /// `setp.ltu p1, x, LO; cvt d, x; selp d1, MIN, d, p1; setp.gt p2, x, HI;
    /// selp d2, MAX, d1, p2` [`setp.nan p3, x, x; selp d3, 0, d2, p3`].
    fn compare_form(&self, cvt_line: usize, cvt: &Inst<'a>, edits: &mut Edits) -> Option<()> {
        let (signed, n, fbits) = conversion(cvt.opcode)?;
        let [d, x] = cvt.operands[..] else {
            return None;
        };
        let fty = format!("f{fbits}");
        let (min, max) = bounds(signed, n);
        let bits = |v: i128| (v as u64) & if n == 64 { u64::MAX } else { (1 << n) - 1 };
        let lower_line = self.partner(d, cvt_line)?;
        let (d1, p1) = bound_select(&self.body[lower_line], n, d, bits(min))?;
        let lower_cmp_line = self.partner(p1, lower_line)?;
        let lower_cmp = self.defines(lower_cmp_line, &format!("setp.ltu.{fty}"), p1)?;
        let upper_line = self.partner(d1, lower_line)?;
        let (d2, p2) = bound_select(&self.body[upper_line], n, d1, bits(max))?;
        let upper_cmp_line = self.partner(p2, upper_line)?;
        let upper_cmp = self.defines(upper_cmp_line, &format!("setp.gt.{fty}"), p2)?;
        let [_, lx, lo] = lower_cmp.operands[..] else {
            return None;
        };
        let [_, ux, hi] = upper_cmp.operands[..] else {
            return None;
        };
        if lx != x || ux != x {
            return None;
        }
        if !float_is(float_literal(lo, fbits)?, min)
            || !largest_float_not_above(float_literal(hi, fbits)?, max, fbits)
        {
            return None;
        }
        let mut lines = vec![
            lower_cmp_line,
            cvt_line,
            lower_line,
            upper_cmp_line,
            upper_line,
        ];
        let mut nan = None;
        if signed {
            let nan_line = self.partner(d2, upper_line)?;
            let selp = instruction(&self.body[nan_line])?;
            let p3 = nan_select(&selp, n, d2)?;
            let setp_line = self.partner(p3, nan_line)?;
            let setp = self.defines(setp_line, &format!("setp.nan.{fty}"), p3)?;
            if setp.operands[1..] != [x, x] {
                return None;
            }
            lines.extend([setp_line, nan_line]);
            nan = Some((setp_line, nan_line, selp.operands[0], p3));
        }
        if !self.straight(&lines, x) {
            return None;
        }
        let last = *lines.iter().max().unwrap();
        let nan_to_zero = fbits == 32 && n <= 32;
        if nan_to_zero {
            let result = nan.map_or(d2, |(_, _, r, _)| r);
            edits.remove.extend(lines.iter().filter(|&&l| l != last));
            edits
                .replace
                .insert(last, format!("\t{} \t{result}, {x};", cvt.opcode));
        } else if let Some((_, nan_line, result, p3)) = nan {
            // Signed: the NaN select stays, on the bare conversion.
            edits
                .remove
                .extend([lower_cmp_line, lower_line, upper_cmp_line, upper_line]);
            edits
                .replace
                .insert(nan_line, format!("\tselp.b{n} \t{result}, 0, {d}, {p3};"));
        } else {
            // Unsigned: `x < 0 or NaN` selects 0 and stays; the conversion clamps above.
            edits.remove.extend([lower_line, upper_cmp_line]);
            edits
                .replace
                .insert(upper_line, format!("\tselp.b{n} \t{d2}, 0, {d}, {p1};"));
        }
        Some(())
    }
}

/// Of a commutative operation's two sources, the register and the float constant.
fn constant_operand<'a>(ops: &[&'a str], fbits: u32) -> Option<(&'a str, f64)> {
    match *ops {
        [r, c] | [c, r] if r.starts_with('%') => Some((r, float_literal(c, fbits)?)),
        _ => None,
    }
}

/// `selp.bN r, 0, src, p`: the predicate.
fn nan_select<'a>(selp: &Inst<'a>, n: u32, src: &str) -> Option<&'a str> {
    if !is_selp(selp.opcode, n) {
        return None;
    }
    match selp.operands[..] {
        [_, zero, s, p] if s == src && int_literal(zero, n) == Some(0) => Some(p),
        _ => None,
    }
}

/// `selp.bN r, BOUND, src, p` on `line`: `(r, p)`.
fn bound_select<'a>(line: &'a str, n: u32, src: &str, bound: u64) -> Option<(&'a str, &'a str)> {
    let selp = instruction(line)?;
    if !is_selp(selp.opcode, n) {
        return None;
    }
    match selp.operands[..] {
        [r, c, s, p] if s == src && int_literal(c, n) == Some(bound) => Some((r, p)),
        _ => None,
    }
}

fn is_selp(opcode: &str, n: u32) -> bool {
    let n = n.max(16);
    ["b", "s", "u"]
        .iter()
        .any(|t| opcode == format!("selp.{t}{n}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::ptx::test_support::body;

    /// The instructions of the kernel's body (no header, no braces).
    fn instructions(ptx: &str) -> Vec<String> {
        crate::ptx::test_support::instructions(ptx)
            .into_iter()
            .filter(|c| c != "{" && c != "}" && !c.starts_with(".visible"))
            .collect()
    }

    fn rewritten(lines: &[&str]) -> Vec<String> {
        instructions(&simplify(&body(lines)))
    }

    const AS_U8: &[&str] = &[
        "\tfma.rn.f32 \t%r16, %r15, 0f3D8F5C29, %r14;",
        "\tmax.f32 \t%r17, %r16, 0f00000000;",
        "\tmin.f32 \t%r18, %r17, 0f437F0000;",
        "\tcvt.rzi.u16.f32 \t%rs4, %r18;",
        "\tst.global.b8 \t[%rd20], %rs4;",
    ];

    #[test]
    fn f32_as_u8_is_one_conversion() {
        assert_eq!(
            rewritten(AS_U8),
            [
                ".reg .b32 %gpu_cvt<1>;",
                "fma.rn.f32 %r16, %r15, 0f3D8F5C29, %r14;",
                "cvt.rzi.u8.f32 %gpu_cvt0, %r16;",
                "cvt.u16.u32 %rs4, %gpu_cvt0;",
                "st.global.b8 [%rd20], %rs4;",
            ]
        );
    }

    #[test]
    fn f32_as_i8_drops_the_clamp_and_the_nan_select() {
        let got = rewritten(&[
            "\tsetp.nan.f32 \t%p1, %r1, %r1;",
            "\tmax.f32 \t%r2, %r1, 0fC3000000;",
            "\tmin.f32 \t%r3, %r2, 0f42FE0000;",
            "\tcvt.rzi.s16.f32 \t%rs1, %r3;",
            "\tselp.b16 \t%rs2, 0, %rs1, %p1;",
            "\tst.global.b8 \t[%rd1], %rs2;",
        ]);
        assert_eq!(
            got,
            [
                ".reg .b32 %gpu_cvt<1>;",
                "cvt.rzi.s8.f32 %gpu_cvt0, %r1;",
                "cvt.u16.u32 %rs2, %gpu_cvt0;",
                "st.global.b8 [%rd1], %rs2;",
            ]
        );
    }

    #[test]
    fn f64_as_i32_keeps_the_nan_select() {
        let got = rewritten(&[
            "\tsetp.nan.f64 \t%p5, %rd70, %rd70;",
            "\tmax.f64 \t%rd71, %rd70, 0dC1E0000000000000;",
            "\tmin.f64 \t%rd72, %rd71, 0d41DFFFFFFFC00000;",
            "\tcvt.rzi.s32.f64 \t%r40, %rd72;",
            "\tselp.b32 \t%r41, 0, %r40, %p5;",
        ]);
        assert_eq!(
            got,
            [
                "setp.nan.f64 %p5, %rd70, %rd70;",
                "cvt.rzi.s32.f64 %r40, %rd70;",
                "selp.b32 %r41, 0, %r40, %p5;",
            ]
        );
    }

    #[test]
    fn f64_as_u32_keeps_the_max_with_zero() {
        let got = rewritten(&[
            "\tmax.f64 \t%rd2, %rd1, 0d0000000000000000;",
            "\tmin.f64 \t%rd3, %rd2, 0d41EFFFFFFFE00000;",
            "\tcvt.rzi.u32.f64 \t%r1, %rd3;",
            "\tmin.u32 \t%r2, %r9, %r1;",
        ]);
        assert_eq!(
            got,
            [
                "max.f64 %rd2, %rd1, 0d0000000000000000;",
                "cvt.rzi.u32.f64 %r1, %rd2;",
                "min.u32 %r2, %r9, %r1;",
            ]
        );
    }

    const AS_I32: &[&str] = &[
        "$L__BB0_45:",
        "\tsetp.ltu.f32 \t%p8, %r25, 0fCF000000;",
        "\tcvt.rzi.s32.f32 \t%r31, %r25;",
        "\tselp.b32 \t%r32, -2147483648, %r31, %p8;",
        "\tsetp.gt.f32 \t%p9, %r25, 0f4EFFFFFF;",
        "\tselp.b32 \t%r33, 2147483647, %r32, %p9;",
        "\tsetp.nan.f32 \t%p10, %r25, %r25;",
        "\tselp.b32 \t%r306, 0, %r33, %p10;",
        "\tmov.b32 \t%r307, %r5;",
    ];

    #[test]
    fn f32_as_i32_is_one_conversion_where_the_result_was_written() {
        assert_eq!(
            rewritten(AS_I32),
            [
                "$L__BB0_45:",
                "cvt.rzi.s32.f32 %r306, %r25;",
                "mov.b32 %r307, %r5;"
            ]
        );
    }

    #[test]
    fn f32_as_u32_is_one_conversion() {
        let got = rewritten(&[
            "\tsetp.ltu.f32 \t%p16, %r44, 0f00000000;",
            "\tcvt.rzi.u32.f32 \t%r45, %r44;",
            "\tselp.b32 \t%r46, 0, %r45, %p16;",
            "\tsetp.gt.f32 \t%p17, %r44, 0f4F7FFFFF;",
            "\tselp.b32 \t%r47, -1, %r46, %p17;",
            "\tmin.u32 \t%r15, %r6, %r47;",
        ]);
        assert_eq!(
            got,
            ["cvt.rzi.u32.f32 %r47, %r44;", "min.u32 %r15, %r6, %r47;"]
        );
    }

    #[test]
    fn f64_as_u64_drops_only_the_upper_bound() {
        let got = rewritten(&[
            "\tsetp.ltu.f64 \t%p15, %rd80, 0d0000000000000000;",
            "\tcvt.rzi.u64.f64 \t%rd81, %rd80;",
            "\tselp.b64 \t%rd82, 0, %rd81, %p15;",
            "\tsetp.gt.f64 \t%p16, %rd80, 0d43EFFFFFFFFFFFFF;",
            "\tselp.b64 \t%rd35, -1, %rd82, %p16;",
        ]);
        assert_eq!(
            got,
            [
                "setp.ltu.f64 %p15, %rd80, 0d0000000000000000;",
                "cvt.rzi.u64.f64 %rd81, %rd80;",
                "selp.b64 %rd35, 0, %rd81, %p15;",
            ]
        );
    }

    #[test]
    fn f64_as_i64_keeps_the_nan_select() {
        let got = rewritten(&[
            "\tsetp.ltu.f64 \t%p1, %rd1, 0dC3E0000000000000;",
            "\tcvt.rzi.s64.f64 \t%rd2, %rd1;",
            "\tselp.b64 \t%rd3, -9223372036854775808, %rd2, %p1;",
            "\tsetp.gt.f64 \t%p2, %rd1, 0d43DFFFFFFFFFFFFF;",
            "\tselp.b64 \t%rd4, 9223372036854775807, %rd3, %p2;",
            "\tsetp.nan.f64 \t%p3, %rd1, %rd1;",
            "\tselp.b64 \t%rd5, 0, %rd4, %p3;",
        ]);
        assert_eq!(
            got,
            [
                "cvt.rzi.s64.f64 %rd2, %rd1;",
                "setp.nan.f64 %p3, %rd1, %rd1;",
                "selp.b64 %rd5, 0, %rd2, %p3;",
            ]
        );
    }

    #[test]
    fn a_clamp_to_other_bounds_is_unchanged() {
        let ptx = body(&[
            "\tmax.f32 \t%r17, %r16, 0f00000000;",
            "\tmin.f32 \t%r18, %r17, 0f42C80000;", // 100.0
            "\tcvt.rzi.u16.f32 \t%rs4, %r18;",
        ]);
        assert_eq!(simplify(&ptx), ptx);
    }

    #[test]
    fn a_signed_clamp_without_its_nan_select_is_unchanged() {
        // NaN gives -128 here (max returns the other operand), not what `cvt.rzi.s8` gives.
        let ptx = body(&[
            "\tmax.f32 \t%r2, %r1, 0fC3000000;",
            "\tmin.f32 \t%r3, %r2, 0f42FE0000;",
            "\tcvt.rzi.s16.f32 \t%rs1, %r3;",
        ]);
        assert_eq!(simplify(&ptx), ptx);
    }

    #[test]
    fn a_clamped_value_used_elsewhere_is_unchanged() {
        let mut lines = AS_U8.to_vec();
        lines.push("\tst.global.f32 \t[%rd21], %r18;");
        let ptx = body(&lines);
        assert_eq!(simplify(&ptx), ptx);
    }

    #[test]
    fn a_source_written_in_between_is_unchanged() {
        let ptx = body(&[
            "\tmax.f32 \t%r17, %r16, 0f00000000;",
            "\tadd.f32 \t%r16, %r16, 0f3F800000;",
            "\tmin.f32 \t%r18, %r17, 0f437F0000;",
            "\tcvt.rzi.u16.f32 \t%rs4, %r18;",
            "\tst.global.f32 \t[%rd21], %r16;",
        ]);
        assert_eq!(simplify(&ptx), ptx);
    }

    #[test]
    fn a_label_or_a_predicated_step_in_between_is_unchanged() {
        let mut labelled = AS_U8.to_vec();
        labelled.insert(2, "$L__BB0_3:");
        let ptx = body(&labelled);
        assert_eq!(simplify(&ptx), ptx);
        let mut predicated = AS_I32.to_vec();
        predicated[4] = "\t@%p1 selp.b32 \t%r33, 2147483647, %r32, %p9;";
        let ptx = body(&predicated);
        assert_eq!(simplify(&ptx), ptx);
    }

    #[test]
    fn an_ftz_clamp_or_a_rounding_conversion_is_unchanged() {
        let mut ftz = AS_U8.to_vec();
        ftz[1] = "\tmax.ftz.f32 \t%r17, %r16, 0f00000000;";
        let ptx = body(&ftz);
        assert_eq!(simplify(&ptx), ptx);
        let mut rni = AS_U8.to_vec();
        rni[3] = "\tcvt.rni.u16.f32 \t%rs4, %r18;";
        let ptx = body(&rni);
        assert_eq!(simplify(&ptx), ptx);
    }

    #[test]
    fn a_wrong_upper_threshold_is_unchanged() {
        let mut lines = AS_I32.to_vec();
        lines[4] = "\tsetp.gt.f32 \t%p9, %r25, 0f4EFFFFFE;";
        let ptx = body(&lines);
        assert_eq!(simplify(&ptx), ptx);
    }

    #[test]
    fn the_bounds_checks() {
        assert!(largest_float_not_above(
            f64::from(f32::from_bits(0x4EFF_FFFF)),
            i128::from(i32::MAX),
            32
        ));
        assert!(!largest_float_not_above(
            f64::from(f32::from_bits(0x4F00_0000)),
            i128::from(i32::MAX),
            32
        ));
        assert!(largest_float_not_above(
            f64::from_bits(0x43EF_FFFF_FFFF_FFFF),
            i128::from(u64::MAX),
            64
        ));
        assert_eq!(clamp_width(0.0, 255.0), Some((false, 8)));
        assert_eq!(clamp_width(-32768.0, 32767.0), Some((true, 16)));
        assert_eq!(clamp_width(0.0, 100.0), None);
        assert_eq!(int_literal("-1", 32), Some(0xFFFF_FFFF));
        assert_eq!(int_literal("-2147483648", 32), Some(0x8000_0000));
    }

    #[test]
    fn a_body_that_uses_the_temporary_name_is_unchanged() {
        let mut lines = AS_U8.to_vec();
        lines.push("\tmov.b32 \t%gpu_cvt0, 0;");
        let ptx = body(&lines);
        assert_eq!(simplify(&ptx), ptx);
    }

    #[test]
    fn registers_of_inline_assembly_scopes_are_left_alone() {
        let mut lines = AS_U8.to_vec();
        lines.insert(0, "\t{ .reg .f32 %r17; mov.f32 %r17, 0f00000000; }");
        let ptx = body(&lines);
        assert_eq!(simplify(&ptx), ptx);
    }

    #[test]
    fn text_outside_function_bodies_is_unchanged() {
        let ptx = ".version 8.0\n.target sm_80\n.global .align 8 .b8 g[8];\n";
        assert_eq!(simplify(ptx), ptx);
    }
}
