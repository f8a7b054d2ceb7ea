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
use gpu_abi::index32::SUFFIX;

use crate::branches::body_end;
use crate::manifest::Manifest;
use crate::ptx::code;

mod body;
mod ranges;
mod rewrite;

use rewrite::narrow;

/// Names this rewrite in the record of what a module's PTX was made from (see
/// [`crate::branches::REVISION`]): change it whenever the rewrite's output changes.
pub const REVISION: &str = "32-bit index variants v2";

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

    /// Asserts that the narrowed body `out` holds `line`.
    #[track_caller]
    fn has(out: &[String], line: &str) {
        assert!(out.iter().any(|l| l == line), "{line} in {out:#?}");
    }

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
        has(&out, "setp.ge.u32 %p1, %r1, %r2;");
        // A slice length is below the variant's limit: its low half stands for it.
        has(&out, "cvt.u32.u64 %idx32_r0, %rd3;");
        has(&out, "setp.lt.u32 %p2, %r1, %idx32_r0;");
        // A 64-bit scalar parameter may be anything: that compare stays.
        has(&out, "setp.lt.u64 %p3, %rd1, %rd4;");
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
            has(&out, line);
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
        has(&out, "ld.global.f32 %f1, [%idx32_rd0];");
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
        has(&out, "setp.eq.b64 %p3, %rd1, %rd4;");
    }

    /// The range of `reg` in `body` (no slices, no block shape).
    fn range_of(body: &[&str], reg: &str) -> Option<(u128, u128)> {
        let lines = lines(body);
        let body = body::Body::new(&lines);
        let mut ranges = ranges::Ranges::new(&body, Vec::new(), None);
        ranges.of(reg, 64)
    }

    #[test]
    fn ranges_do_not_survive_truncation_or_signed_products() {
        // 70000 does not fit 16 bits: the truncated value is unknown, and its zero extension
        // is anything below 2^16.
        let body = [
            "mov.u32 %r1, 70000;",
            "cvt.u16.u32 %rs1, %r1;",
            "cvt.u64.u16 %rd1, %rs1;",
            "mov.u32 %r2, 100;",
            "cvt.u16.u32 %rs2, %r2;",
        ];
        assert_eq!(range_of(&body, "%rs1"), None);
        assert_eq!(range_of(&body, "%rd1"), Some((0, 65535)));
        assert_eq!(range_of(&body, "%rs2"), Some((100, 100)));
        // A signed product of a value that may be negative is not the unsigned one.
        let body = [
            "ld.param.b32 %r1, [k_param_2];",
            "mul.wide.s32 %rd1, %r1, 4;",
            "mov.u32 %r2, %tid.x;",
            "mul.wide.s32 %rd2, %r2, 4;",
        ];
        assert_eq!(range_of(&body, "%rd1"), None);
        assert_eq!(range_of(&body, "%rd2"), Some((0, 4092)));
    }

    #[test]
    fn the_common_scale_is_a_power_of_two() {
        assert_eq!(rewrite::common_scale([12, 4].into_iter()), 4);
        assert_eq!(rewrite::common_scale([12].into_iter()), 4);
        assert_eq!(rewrite::common_scale([3, 6].into_iter()), 1);
        assert_eq!(rewrite::common_scale([1 << 31].into_iter()), 1 << 30);
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
