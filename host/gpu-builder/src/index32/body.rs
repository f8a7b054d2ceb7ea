//! Reading a function body for the rewrite: its instructions, and which lines write each
//! register.

use std::collections::HashMap;

use crate::ptx::{code, destinations, is_filler, label, parse_literal, registers};

/// One instruction: predicate guard (`%p` or `!%p`), opcode, operands.
pub(super) struct Inst<'a> {
    pub(super) guard: Option<&'a str>,
    pub(super) opcode: &'a str,
    pub(super) ops: Vec<&'a str>,
}

/// An instruction line (`None` for labels, directives, blocks and anything unusual).
pub(super) fn parse(line: &str) -> Option<Inst<'_>> {
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

/// The function body's instructions and where each register is written.
pub(super) struct Body<'a> {
    pub(super) lines: &'a [String],
    pub(super) insts: Vec<Option<Inst<'a>>>,
    /// Register → the lines that write it (a register also mentioned by a line this module
    /// cannot read counts as written twice).
    pub(super) writes: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Body<'a> {
    pub(super) fn new(lines: &'a [String]) -> Body<'a> {
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
    pub(super) fn single(&self, reg: &str) -> Option<usize> {
        match self.writes.get(reg)?.as_slice() {
            &[i] => self.insts[i]
                .as_ref()
                .filter(|inst| inst.guard.is_none())
                .map(|_| i),
            _ => None,
        }
    }

    /// The registers written, each by its one line, by the lines `pick` accepts.
    pub(super) fn written_once_by(&self, pick: impl Fn(&Inst<'a>) -> bool) -> Vec<&'a str> {
        self.insts
            .iter()
            .enumerate()
            .filter_map(|(i, inst)| {
                let inst = inst.as_ref()?;
                let dest = *inst.ops.first()?;
                (pick(inst) && self.single(dest) == Some(i)).then_some(dest)
            })
            .collect()
    }

    pub(super) fn inst(&self, i: usize) -> &Inst<'a> {
        self.insts[i]
            .as_ref()
            .expect("a written register's line is an instruction")
    }
}

/// A literal operand's value, as an unsigned number of `bits` bits.
pub(super) fn literal(op: &str, bits: u32) -> Option<u128> {
    let v = parse_literal(op)? as u64;
    Some(if bits >= 64 {
        u128::from(v)
    } else {
        u128::from(v & ((1u64 << bits) - 1))
    })
}

/// The width in bits an opcode's type suffix gives (`add.s64` → 64), 64 for `.wide`'s result.
pub(super) fn width(opcode: &str) -> u32 {
    if opcode.contains(".wide") {
        return 64;
    }
    let ty = opcode.rsplit('.').next().unwrap_or_default();
    ty.get(1..).and_then(|b| b.parse().ok()).unwrap_or(64)
}
