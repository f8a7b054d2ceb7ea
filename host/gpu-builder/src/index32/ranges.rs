//! Value ranges of a body's registers under the variant's launch limits.

use std::collections::HashMap;

use gpu_abi::index32::{MAX_SLICE_BYTES, MAX_THREADS};

use super::body::{Body, Inst, literal, width};
use crate::ptx::{label, parse_literal};

/// An inclusive range of unsigned values.
pub(super) type Range = (u128, u128);

pub(super) const U32_MAX: u128 = u32::MAX as u128;

/// Value ranges of the body's registers under the variant's launch limits.
pub(super) struct Ranges<'b, 'a> {
    body: &'b Body<'a>,
    /// Length parameters of slices: below [`MAX_SLICE_BYTES`] elements.
    lengths: Vec<&'b str>,
    block: Option<[u64; 3]>,
    memo: HashMap<&'a str, Option<Range>>,
    /// `(from, to, a, b)`: on lines `from < i < to`, `a < b` holds.
    guards: Vec<(usize, usize, &'a str, &'a str)>,
}

impl<'b, 'a> Ranges<'b, 'a> {
    pub(super) fn new(body: &'b Body<'a>, lengths: Vec<&'b str>, block: Option<[u64; 3]>) -> Self {
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
    pub(super) fn at(&mut self, op: &'a str, bits: u32, at: usize) -> Option<Range> {
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
    pub(super) fn of(&mut self, op: &'a str, bits: u32) -> Option<Range> {
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
            ("cvt", [_, src])
                if parts.len() == 3
                    && parts[1].starts_with('u')
                    && parts[2].starts_with(['u', 'b']) =>
            {
                // A zero extension, or a truncation of a value that fits (of one that may
                // not, nothing is known).
                let (to, from) = (
                    width(&format!(".{}", parts[1])),
                    width(&format!(".{}", parts[2])),
                );
                let r = self
                    .at(src, from, i)
                    .unwrap_or((0, (1u128 << from.min(64)) - 1));
                (r.1 < 1u128 << to).then_some(r)
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
                if opcode == "mul.wide.s32" && !(self.non_negative(a, i) && self.non_negative(b, i))
                {
                    return None;
                }
                if let Some(r) = self.block_times_size(a, b) {
                    return Some(r);
                }
                let (ra, rb) = (self.at(a, from, i)?, self.at(b, from, i)?);
                bounded((ra.0 * rb.0, ra.1.checked_mul(rb.1)?))
            }
            ("mad", [_, a, b, c]) if parts.get(1).is_some_and(|m| *m == "lo" || *m == "wide") => {
                let from = if parts[1] == "wide" { 32 } else { bits };
                if opcode == "mad.wide.s32" && !(self.non_negative(a, i) && self.non_negative(b, i))
                {
                    return None;
                }
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
            // Neither can exceed the smaller known operand.
            ("and", [_, a, b]) => self.below_either(a, b, bits, i),
            ("or", [_, a, b]) => {
                let (ra, rb) = (self.at(a, bits, i)?, self.at(b, bits, i)?);
                let hi = ra.1.max(rb.1);
                let top = (1u128 << (128 - hi.leading_zeros())) - 1;
                Some((ra.0.max(rb.0), top))
            }
            ("min", [_, a, b]) if parts.get(1).is_some_and(|t| t.starts_with('u')) => {
                self.below_either(a, b, bits, i)
            }
            ("selp", [_, a, b, _]) => {
                let (ra, rb) = (self.at(a, bits, i)?, self.at(b, bits, i)?);
                Some((ra.0.min(rb.0), ra.1.max(rb.1)))
            }
            _ => None,
        }
    }

    /// `[0, the smaller upper bound of a and b]` (either known suffices): the range of an
    /// unsigned `and` or `min` of them.
    fn below_either(&mut self, a: &'a str, b: &'a str, bits: u32, at: usize) -> Option<Range> {
        let (ra, rb) = (self.at(a, bits, at), self.at(b, bits, at));
        let hi = match (ra, rb) {
            (Some(x), Some(y)) => x.1.min(y.1),
            (Some(x), None) | (None, Some(x)) => x.1,
            (None, None) => return None,
        };
        Some((0, hi))
    }

    /// Whether the 32-bit operand `op`, read as signed at line `at`, is known not negative.
    fn non_negative(&mut self, op: &'a str, at: usize) -> bool {
        self.at(op, 32, at).is_some_and(|r| r.1 < 1 << 31)
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
