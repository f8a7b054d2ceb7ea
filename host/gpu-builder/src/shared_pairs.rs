//! Merges two shared-memory accesses of neighbouring words into one vector access.
//!
//! A bitonic sort's first stage compares `s[2 * t]` with `s[2 * t + 1]`. nvcc's code reads and
//! writes the pair with one 64-bit `LDS.64` / `STS.64`; ours used two 32-bit accesses, and that
//! was the whole of the twin's gap (README, "Writing fast kernels", has the figures). The PTX
//! is the same two `ld.shared.u32` in both, so the difference is ptxas's own proof that the
//! pair is 8-byte aligned: LLVM computes the address as `(base + 4t) + 4t`, sharing `4t` with
//! another access, and ptxas does not see that the sum is a multiple of 8 (it does for
//! `base + 8t`, nvcc's form).
//!
//! The rewrite makes the proof itself and writes the vector access:
//!
//! ```text
//!     ld.shared.u32   %r10, [%r11];           ld.shared.v2.u32  {%r10, %r12}, [%r11];
//!     add.s32         %r13, %r11, 4;    →     add.s32           %r13, %r11, 4;
//!     ld.shared.u32   %r12, [%r13];
//! ```
//!
//! **Addresses.** Every 32-bit register written exactly once in the function is described as a
//! sum of terms with constant coefficients (`mov` of a `.shared` symbol or a constant, `add`,
//! `sub`, `shl` and `mul.lo` by constants, `mad.lo` with a constant factor); anything else it
//! is computed from (a thread index, a loaded value) is a term of its own. Two accesses are
//! neighbours when their addresses differ by exactly the access width, and the pair is aligned
//! when every term of the lower address is a multiple of twice that width: a symbol counts its
//! declared `.align`, any other term only its coefficient. Sums wrap at 2^32 as the registers
//! do, and neither difference nor alignment changes under that. A register written more than
//! once (a loop variable) is never described, so its accesses stay as they are.
//!
//! **Motion.** The two accesses must be in one straight run of code (no label or branch
//! between), unpredicated, plain (`ld.shared`/`st.shared`, not volatile), of the same type of
//! 4 or 8 bytes (`.v2.u32`, `.v2.u64`). A pair of loads becomes one load where the first was;
//! between them only register arithmetic, other loads and layout lines may stand, and the
//! second's destination must not be mentioned there. A pair of stores becomes one store where
//! the second was; between them only register arithmetic and loads from global, constant or
//! parameter memory (which cannot see shared memory), and neither the first store's value nor
//! its address register may be mentioned. So no thread can observe a difference but the number
//! of instructions: the same words are read or written, with the same values, and nothing
//! between the two could see the order.
//!
//! It runs as part of [`crate::branches::reshape`], under its switch; its revision is part of
//! [`crate::branches::REVISION`].

use crate::ptx::{
    code, destinations, instruction, is_arithmetic, is_filler, is_plain_load, label, parse_literal,
    registers,
};
use std::collections::{BTreeMap, HashMap};

/// The module with neighbouring shared accesses merged in every function body.
pub fn merge(ptx: &str) -> String {
    let aligns = symbol_alignments(ptx);
    crate::branches::map_bodies(ptx, |body| merge_body(body, &aligns))
}

/// The declared alignment of each `.shared` variable (`.shared .align 16 .b8 name[4096];`).
fn symbol_alignments(ptx: &str) -> HashMap<String, u64> {
    let mut aligns = HashMap::new();
    for line in ptx.lines() {
        let words: Vec<&str> = code(line).split_whitespace().collect();
        if !words.contains(&".shared") {
            continue;
        }
        let align = words
            .iter()
            .position(|w| *w == ".align")
            .and_then(|at| words.get(at + 1)?.parse::<u64>().ok());
        let name = words
            .last()
            .and_then(|w| w.split(['[', ';']).next())
            .filter(|n| !n.is_empty() && !n.starts_with('.'));
        if let (Some(align), Some(name)) = (align, name) {
            aligns.insert(name.to_string(), align);
        }
    }
    aligns
}

/// A 32-bit value as a sum of terms: symbols and registers (by name) with coefficients, and a
/// constant, all modulo 2^32.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Form {
    terms: BTreeMap<String, u32>,
    constant: u32,
}

impl Form {
    fn constant(c: u32) -> Form {
        Form {
            terms: BTreeMap::new(),
            constant: c,
        }
    }

    fn term(name: &str) -> Form {
        Form {
            terms: BTreeMap::from([(name.to_string(), 1)]),
            constant: 0,
        }
    }

    fn plus(mut self, other: &Form, sign: u32) -> Form {
        for (name, c) in &other.terms {
            let e = self.terms.entry(name.clone()).or_insert(0);
            *e = e.wrapping_add(c.wrapping_mul(sign));
        }
        self.terms.retain(|_, c| *c != 0);
        self.constant = self
            .constant
            .wrapping_add(other.constant.wrapping_mul(sign));
        self
    }

    fn times(mut self, k: u32) -> Form {
        for c in self.terms.values_mut() {
            *c = c.wrapping_mul(k);
        }
        self.terms.retain(|_, c| *c != 0);
        self.constant = self.constant.wrapping_mul(k);
        self
    }

    /// The largest power of two (up to 2^32) that provably divides the value.
    fn alignment(&self, aligns: &HashMap<String, u64>) -> u64 {
        let pow2 = |x: u32| {
            if x == 0 {
                1u64 << 32
            } else {
                1u64 << x.trailing_zeros()
            }
        };
        let mut a = pow2(self.constant);
        for (name, &c) in &self.terms {
            let base = if name.starts_with('%') {
                1
            } else {
                aligns.get(name).copied().unwrap_or(1)
            };
            a = a.min(pow2(c).saturating_mul(base));
        }
        a.min(1 << 32)
    }
}

/// An integer literal as PTX writes it (decimal, `0x` hex, negative, `U` suffix), modulo 2^32.
fn literal(s: &str) -> Option<u32> {
    parse_literal(s.trim_end_matches('U')).map(|v| v as u32)
}

/// Describes the registers of one function body.
struct Forms<'a> {
    body: &'a [String],
    /// The line of each register written exactly once.
    defined_at: HashMap<&'a str, usize>,
    known: HashMap<&'a str, Option<Form>>,
}

impl<'a> Forms<'a> {
    fn new(body: &'a [String]) -> Forms<'a> {
        let mut count: HashMap<&str, (usize, usize)> = HashMap::new();
        for (i, line) in body.iter().enumerate() {
            for d in destinations(line) {
                count.entry(d).or_insert((0, i)).0 += 1;
            }
        }
        let defined_at = count
            .into_iter()
            .filter(|(_, (n, _))| *n == 1)
            .map(|(r, (_, at))| (r, at))
            .collect();
        Forms {
            body,
            defined_at,
            known: HashMap::new(),
        }
    }

    /// An operand: a literal, a symbol, or a register written once.
    fn operand(&mut self, op: &'a str, depth: usize) -> Option<Form> {
        if op.starts_with('%') {
            self.register(op, depth)
        } else if let Some(v) = literal(op) {
            Some(Form::constant(v))
        } else if op
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        {
            Some(Form::term(op))
        } else {
            None
        }
    }

    /// The form of a register written exactly once; itself as a term when its instruction is
    /// not one the description follows.
    fn register(&mut self, r: &'a str, depth: usize) -> Option<Form> {
        if let Some(f) = self.known.get(r) {
            return f.clone();
        }
        let at = *self.defined_at.get(r)?;
        let form = if depth > 64 {
            None
        } else {
            Some(
                self.computed(at, depth + 1)
                    .unwrap_or_else(|| Form::term(r)),
            )
        };
        self.known.insert(r, form.clone());
        form
    }

    /// The form of what line `at` computes, when it is arithmetic the description follows.
    fn computed(&mut self, at: usize, depth: usize) -> Option<Form> {
        let (opcode, ops) = instruction(&self.body[at])?;
        let ty = opcode.rsplit('.').next()?;
        if !matches!(ty, "u32" | "s32" | "b32") || !ops[0].starts_with("%r") {
            return None;
        }
        let base = opcode.split('.').next()?;
        let lo = opcode.contains(".lo.");
        match (base, &ops[1..]) {
            ("mov", [a]) => self.operand(a, depth),
            ("add", [a, b]) => Some(self.operand(a, depth)?.plus(&self.operand(b, depth)?, 1)),
            ("sub", [a, b]) => Some(
                self.operand(a, depth)?
                    .plus(&self.operand(b, depth)?, u32::MAX),
            ),
            ("shl", [a, k]) => {
                let k = literal(k).filter(|k| *k < 32)?;
                Some(self.operand(a, depth)?.times(1 << k))
            }
            ("mul", [a, b]) if lo => {
                let (x, k) = self.scaled(a, b, depth)?;
                Some(x.times(k))
            }
            ("mad", [a, b, c]) if lo => {
                let (x, k) = self.scaled(a, b, depth)?;
                Some(x.times(k).plus(&self.operand(c, depth)?, 1))
            }
            _ => None,
        }
    }

    /// A product with one literal factor: the other factor's form and the literal.
    fn scaled(&mut self, a: &'a str, b: &'a str, depth: usize) -> Option<(Form, u32)> {
        match (literal(a), literal(b)) {
            (_, Some(k)) => Some((self.operand(a, depth)?, k)),
            (Some(k), None) => Some((self.operand(b, depth)?, k)),
            (None, None) => None,
        }
    }
}

/// A plain shared access: `ld.shared.T %v, [addr]` or `st.shared.T [addr], %v`.
#[derive(Clone, Debug)]
struct Access<'a> {
    load: bool,
    /// `u32`, `f64`, ...
    ty: &'a str,
    width: u32,
    value: &'a str,
    address: &'a str,
    offset: u32,
}

fn access(line: &str) -> Option<Access<'_>> {
    let (opcode, ops) = instruction(line)?;
    let (load, ty) = match opcode.strip_prefix("ld.shared.") {
        Some(ty) => (true, ty),
        None => (false, opcode.strip_prefix("st.shared.")?),
    };
    let width = match ty {
        "u32" | "s32" | "b32" | "f32" => 4,
        "u64" | "s64" | "b64" | "f64" => 8,
        _ => return None,
    };
    let [first, second] = ops[..] else {
        return None;
    };
    let (value, place) = if load {
        (first, second)
    } else {
        (second, first)
    };
    if !value.starts_with('%') {
        return None;
    }
    let inside = place.strip_prefix('[')?.strip_suffix(']')?;
    let (address, offset) = match inside.split_once('+') {
        Some((r, k)) => (r.trim(), literal(k.trim())?),
        None => (inside.trim(), 0),
    };
    address.starts_with('%').then_some(Access {
        load,
        ty,
        width,
        value,
        address,
        offset,
    })
}

/// Whether an access may be moved over the line: layout, register arithmetic, or a plain load
/// whose opcode starts with one of `loads`.
fn may_pass(line: &str, loads: &[&str]) -> bool {
    is_filler(line) || is_arithmetic(line) || is_plain_load(line, loads)
}

/// `[%r + k]` as PTX writes it.
fn place(address: &str, offset: u32) -> String {
    match offset as i32 {
        0 => format!("[{address}]"),
        k => format!("[{address}+{k}]"),
    }
}

/// The vector access that does what `a` and then `b` do, when they are neighbours (addresses
/// `form_a`, `form_b`) and the lower one is aligned to both: a load goes where `a` was,
/// addressed through `a`'s register, a store where `b` was.
fn vector_access(
    a: &Access,
    form_a: &Form,
    b: &Access,
    form_b: Form,
    aligns: &HashMap<String, u64>,
) -> Option<String> {
    let d = form_b.plus(form_a, u32::MAX);
    if !d.terms.is_empty() || (d.constant != a.width && d.constant != a.width.wrapping_neg()) {
        return None;
    }
    let a_low = d.constant == a.width;
    let low_form = if a_low {
        form_a.clone()
    } else {
        form_a.clone().plus(&Form::constant(a.width), u32::MAX)
    };
    if low_form.alignment(aligns) < 2 * u64::from(a.width) {
        return None;
    }
    let (low, high) = if a_low { (a, b) } else { (b, a) };
    Some(if a.load {
        let offset = if a_low {
            a.offset
        } else {
            a.offset.wrapping_sub(a.width)
        };
        format!(
            "\tld.shared.v2.{} \t{{{}, {}}}, {};",
            a.ty,
            low.value,
            high.value,
            place(a.address, offset)
        )
    } else {
        format!(
            "\tst.shared.v2.{} \t{}, {{{}, {}}};",
            a.ty,
            place(low.address, low.offset),
            low.value,
            high.value
        )
    })
}

/// The body with each aligned pair of neighbouring shared accesses merged.
fn merge_body(mut body: Vec<String>, aligns: &HashMap<String, u64>) -> Vec<String> {
    // (line, its replacement or `None` to remove it)
    let mut edits: Vec<(usize, Option<String>)> = Vec::new();
    {
        let mut forms = Forms::new(&body);
        let mut used = vec![false; body.len()];
        for i in 0..body.len() {
            if used[i] {
                continue;
            }
            let Some(a) = access(&body[i]) else { continue };
            let Some(form_a) = forms.register(a.address, 0) else {
                continue;
            };
            let form_a = form_a.plus(&Form::constant(a.offset), 1);
            for j in i + 1..body.len() {
                let partner = access(&body[j])
                    .filter(|b| !used[j] && b.load == a.load && b.ty == a.ty && b.value != a.value);
                if let Some(b) = partner {
                    let form_b = forms
                        .register(b.address, 0)
                        .map(|f| f.plus(&Form::constant(b.offset), 1));
                    if let Some(merged) =
                        form_b.and_then(|f| vector_access(&a, &form_a, &b, f, aligns))
                    {
                        used[i] = true;
                        used[j] = true;
                        // A load's partner moves up to `a`: nothing between may mention it.
                        let moves = !a.load
                            || (i + 1..j).all(|k| !registers(&body[k]).any(|r| r == b.value));
                        if moves {
                            let (keep, drop) = if a.load { (i, j) } else { (j, i) };
                            edits.push((keep, Some(merged)));
                            edits.push((drop, None));
                        }
                        break;
                    }
                }
                // Can the pair span this line?
                let line = &body[j];
                let mentions = |r: &str| registers(line).any(|x| x == r);
                let passes = if a.load {
                    may_pass(line, &["ld."])
                } else {
                    may_pass(line, &["ld.global.", "ld.param.", "ld.const."])
                        && !mentions(a.value)
                        && !mentions(a.address)
                };
                if !passes || label(line).is_some() {
                    break;
                }
            }
        }
    }
    edits.sort_by_key(|&(at, _)| std::cmp::Reverse(at));
    for (at, line) in edits {
        match line {
            Some(l) => body[at] = l,
            None => {
                body.remove(at);
            }
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::test_support::instructions;

    /// A kernel `k` with a 4096-byte shared array, whose body is `lines`.
    fn module(lines: &[&str]) -> String {
        let mut s = String::from(".shared .align 16 .b8 tile[4096];\n.visible .entry k()\n{\n");
        for l in lines {
            s.push_str(l);
            s.push('\n');
        }
        s.push_str("}\n");
        s
    }

    /// The bitonic twin's first stage as LLVM wrote it: the address is `(base + 4t) + 4t`.
    const BITONIC: &[&str] = &[
        "\tmov.u32 \t%r3, %tid.x;",
        "\tmov.u32 %r2, tile;",
        "\tshl.b32 \t%r1, %r3, 2;",
        "\tadd.s32 \t%r5, %r2, %r1;",
        "\tbarrier.sync 0;",
        "\tadd.s32 \t%r11, %r5, %r1;",
        "\tld.shared.u32 %r10, [%r11];",
        "\tadd.s32 \t%r13, %r11, 4;",
        "\tld.shared.u32 %r12, [%r13];",
        "\tsetp.gt.u32 \t%p4, %r10, %r12;",
        "\t@!%p4 bra \t$L__BB0_2;",
        "\tst.shared.u32 [%r11], %r12;",
        "\tst.shared.u32 [%r13], %r10;",
        "$L__BB0_2:",
        "\tret;",
    ];

    #[test]
    fn neighbouring_words_at_an_even_index_become_one_access() {
        let got = instructions(&merge(&module(BITONIC)));
        assert_eq!(
            got[8..15],
            [
                "add.s32 %r11, %r5, %r1;",
                "ld.shared.v2.u32 {%r10, %r12}, [%r11];",
                "add.s32 %r13, %r11, 4;",
                "setp.gt.u32 %p4, %r10, %r12;",
                "@!%p4 bra $L__BB0_2;",
                "st.shared.v2.u32 [%r11], {%r12, %r10};",
                "$L__BB0_2:",
            ]
        );
    }

    #[test]
    fn the_higher_word_first_is_addressed_from_its_own_register() {
        let mut lines = BITONIC.to_vec();
        lines.swap(6, 8);
        lines.swap(6, 7); // add %r13; ld [%r13]; ld [%r11]
        let got = instructions(&merge(&module(&lines)));
        assert!(
            got.contains(&"ld.shared.v2.u32 {%r10, %r12}, [%r13+-4];".to_string()),
            "{got:?}"
        );
    }

    #[test]
    fn odd_or_unknown_alignment_and_far_words_are_unchanged() {
        // (base + 4t) + 4: the pair starts at an odd word for even t.
        let mut lines = BITONIC.to_vec();
        lines[5] = "\tadd.s32 \t%r11, %r5, 4;";
        assert_eq!(merge(&module(&lines)), module(&lines));
        // A symbol aligned to 4 only.
        let text = module(BITONIC).replace(".align 16", ".align 4");
        assert_eq!(merge(&text), text);
        // Words 8 bytes apart.
        let mut lines = BITONIC.to_vec();
        lines[7] = "\tadd.s32 \t%r13, %r11, 8;";
        assert_eq!(merge(&module(&lines)), module(&lines));
        // An address register written twice (a loop variable).
        let mut lines = BITONIC.to_vec();
        lines.insert(10, "\tadd.s32 \t%r11, %r11, 64;");
        let got = instructions(&merge(&module(&lines)));
        assert!(!got.iter().any(|l| l.contains(".v2.")), "{got:?}");
    }

    #[test]
    fn memory_effects_between_keep_the_pair_apart() {
        // A store between two loads.
        let mut lines = BITONIC.to_vec();
        lines.insert(7, "\tst.shared.u32 [%r5], %r3;");
        let got = instructions(&merge(&module(&lines)));
        assert!(got.contains(&"ld.shared.u32 %r10, [%r11];".to_string()));
        // A barrier between two stores, and a shared load between two stores.
        for between in ["\tbarrier.sync 0;", "\tld.shared.u32 %r20, [%r5];"] {
            let mut lines = BITONIC.to_vec();
            lines.insert(12, between);
            let got = instructions(&merge(&module(&lines)));
            assert!(
                got.contains(&"st.shared.u32 [%r11], %r12;".to_string()),
                "{between}"
            );
        }
        // The second load's destination used between the two.
        let mut lines = BITONIC.to_vec();
        lines.insert(7, "\tadd.s32 \t%r20, %r12, 1;");
        let got = instructions(&merge(&module(&lines)));
        assert!(got.contains(&"ld.shared.u32 %r10, [%r11];".to_string()));
    }

    #[test]
    fn forms_follow_the_arithmetic() {
        let body: Vec<String> = [
            "\tmov.u32 \t%r1, %tid.x;",
            "\tmov.u32 \t%r2, tile;",
            "\tmad.lo.s32 \t%r3, %r1, 24, %r2;",
            "\tsub.s32 \t%r4, %r3, -8;",
            "\tmul.lo.s32 \t%r5, 3, %r1;",
            "\tshl.b32 \t%r6, %r5, 3;",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let aligns = HashMap::from([("tile".to_string(), 16)]);
        let mut forms = Forms::new(&body);
        let f4 = forms.register("%r4", 0).unwrap();
        assert_eq!(f4.terms.get("%r1"), Some(&24));
        assert_eq!(f4.terms.get("tile"), Some(&1));
        assert_eq!(f4.constant, 8);
        assert_eq!(f4.alignment(&aligns), 8);
        let f6 = forms.register("%r6", 0).unwrap();
        let f3 = forms.register("%r3", 0).unwrap();
        assert_eq!(f3.plus(&f6, u32::MAX), Form::term("tile"));
        assert_eq!(literal("-4"), Some(u32::MAX - 3));
        assert_eq!(literal("0x10"), Some(16));
    }
}
