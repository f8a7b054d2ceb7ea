//! `printf!` on the simulator: formats the C format string and the `vprintf` argument buffer
//! (laid out as `gpu::print` documents) and writes the line to stdout at once.

use std::string::{String, ToString};

/// Formats like C `printf` and prints; returns the number of arguments consumed, as the
/// driver's `vprintf` does.
///
/// # Safety
/// `args` must be the buffer `printf!` built for `format` (every conversion's argument in
/// order, 4-byte values 4-aligned, 8-byte values 8-aligned); `%s` arguments must point to
/// NUL-terminated strings.
pub(crate) unsafe fn vprintf(format: &str, args: *const u8) -> i32 {
    let mut reader = ArgReader {
        base: args,
        offset: 0,
    };
    // SAFETY: forwarded from the caller.
    let (text, count) = unsafe { format_c(format.trim_end_matches('\0'), &mut reader) };
    std::print!("{text}");
    count
}

struct ArgReader {
    base: *const u8,
    offset: usize,
}

impl ArgReader {
    /// # Safety
    /// The buffer must hold a 4-byte argument at the next 4-aligned offset.
    unsafe fn four(&mut self) -> u32 {
        // SAFETY: the caller's guarantee.
        let v = unsafe { self.base.add(self.offset).cast::<u32>().read_unaligned() };
        self.offset += 4;
        v
    }

    /// # Safety
    /// The buffer must hold an 8-byte argument at the next 8-aligned offset.
    unsafe fn eight(&mut self) -> u64 {
        self.offset = self.offset.next_multiple_of(8);
        // SAFETY: the caller's guarantee.
        let v = unsafe { self.base.add(self.offset).cast::<u64>().read_unaligned() };
        self.offset += 8;
        v
    }
}

#[derive(Default, Clone)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
}

/// # Safety
/// As for [`vprintf`].
unsafe fn format_c(format: &str, args: &mut ArgReader) -> (String, i32) {
    let s = format.as_bytes();
    let mut out = String::new();
    let mut count = 0;
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'%' {
            let next = s[i..]
                .iter()
                .position(|&c| c == b'%')
                .map_or(s.len(), |p| i + p);
            out.push_str(&format[i..next]);
            i = next;
            continue;
        }
        i += 1;
        if i < s.len() && s[i] == b'%' {
            out.push('%');
            i += 1;
            continue;
        }
        let mut spec = Spec::default();
        while i < s.len() {
            match s[i] {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                b'0' => spec.zero = true,
                _ => break,
            }
            i += 1;
        }
        if i < s.len() && s[i] == b'*' {
            // SAFETY: `*` consumes an int argument (the macro checked the layout).
            let w = unsafe { args.four() } as i32;
            count += 1;
            spec.left |= w < 0;
            spec.width = w.unsigned_abs() as usize;
            i += 1;
        }
        while i < s.len() && s[i].is_ascii_digit() {
            spec.width = spec.width * 10 + (s[i] - b'0') as usize;
            i += 1;
        }
        if i < s.len() && s[i] == b'.' {
            i += 1;
            let mut p = 0;
            if i < s.len() && s[i] == b'*' {
                // SAFETY: as for the width.
                let v = unsafe { args.four() } as i32;
                count += 1;
                p = v.max(0) as usize;
                i += 1;
            }
            while i < s.len() && s[i].is_ascii_digit() {
                p = p * 10 + (s[i] - b'0') as usize;
                i += 1;
            }
            spec.precision = Some(p);
        }
        let mut long = false;
        while i < s.len() && matches!(s[i], b'h' | b'l' | b'z' | b'j' | b't') {
            long |= s[i] != b'h';
            i += 1;
        }
        let Some(&conv) = s.get(i) else { break };
        i += 1;
        count += 1;
        // SAFETY (every read below): the macro laid out the argument this conversion expects.
        let body = match conv {
            b'd' | b'i' => {
                let v = if long {
                    unsafe { args.eight() as i64 }
                } else {
                    unsafe { args.four() as i32 as i64 }
                };
                let digits = with_precision(v.unsigned_abs().to_string(), spec.precision);
                signed(&spec, v < 0, digits)
            }
            b'u' | b'x' | b'X' | b'o' => {
                let v = if long {
                    unsafe { args.eight() }
                } else {
                    unsafe { args.four() as u64 }
                };
                let (digits, prefix) = match conv {
                    b'u' => (v.to_string(), ""),
                    b'x' => (
                        std::format!("{v:x}"),
                        if spec.alt && v != 0 { "0x" } else { "" },
                    ),
                    b'X' => (
                        std::format!("{v:X}"),
                        if spec.alt && v != 0 { "0X" } else { "" },
                    ),
                    _ => (std::format!("{v:o}"), if spec.alt { "0" } else { "" }),
                };
                let digits = with_precision(digits, spec.precision);
                pad_number(&spec, prefix, digits)
            }
            b'c' => {
                let v = unsafe { args.four() };
                pad(&spec, char::from_u32(v & 0xff).unwrap_or('?').to_string())
            }
            b'p' => {
                let v = unsafe { args.eight() };
                pad(&spec, std::format!("{v:#x}"))
            }
            b's' => {
                let p = unsafe { args.eight() } as usize as *const core::ffi::c_char;
                let text = if p.is_null() {
                    "(null)".into()
                } else {
                    // SAFETY: `%s` arguments are NUL-terminated strings (the caller's guarantee).
                    unsafe { core::ffi::CStr::from_ptr(p) }
                        .to_string_lossy()
                        .into_owned()
                };
                let text = match spec.precision {
                    Some(p) => text.chars().take(p).collect(),
                    None => text,
                };
                pad(&spec, text)
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                let v = f64::from_bits(unsafe { args.eight() });
                float(&spec, conv, v)
            }
            other => std::format!("%{}", other as char),
        };
        out.push_str(&body);
    }
    (out, count)
}

fn with_precision(digits: String, precision: Option<usize>) -> String {
    match precision {
        Some(0) if digits == "0" => String::new(),
        Some(p) if digits.len() < p => "0".repeat(p - digits.len()) + &digits,
        _ => digits,
    }
}

fn signed(spec: &Spec, negative: bool, digits: String) -> String {
    let sign = if negative {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    pad_number(spec, sign, digits)
}

/// Pads a number: zeros go between the sign/prefix and the digits.
fn pad_number(spec: &Spec, prefix: &str, digits: String) -> String {
    let len = prefix.len() + digits.len();
    if spec.zero && !spec.left && spec.precision.is_none() && len < spec.width {
        std::format!("{prefix}{}{digits}", "0".repeat(spec.width - len))
    } else {
        pad(spec, std::format!("{prefix}{digits}"))
    }
}

fn pad(spec: &Spec, text: String) -> String {
    let n = text.chars().count();
    if n >= spec.width {
        text
    } else if spec.left {
        text + &" ".repeat(spec.width - n)
    } else {
        " ".repeat(spec.width - n) + &text
    }
}

fn float(spec: &Spec, conv: u8, v: f64) -> String {
    let upper = conv.is_ascii_uppercase();
    if !v.is_finite() {
        let t = if v.is_nan() { "nan" } else { "inf" };
        let t = if upper { t.to_uppercase() } else { t.into() };
        return signed(
            &Spec {
                zero: false,
                ..spec.clone()
            },
            v.is_sign_negative() && !v.is_nan(),
            t,
        );
    }
    let p = spec.precision.unwrap_or(6);
    let body = match conv.to_ascii_lowercase() {
        b'f' => std::format!("{:.p$}", v.abs()),
        b'e' | b'a' => exp_form(v.abs(), p),
        _ => {
            // %g: the shorter of %e and %f by C's rule, trailing zeros removed unless '#'.
            let p = p.max(1);
            let x = if v == 0.0 {
                0
            } else {
                v.abs().log10().floor() as i32
            };
            let mut t = if x < -4 || x >= p as i32 {
                exp_form(v.abs(), p - 1)
            } else {
                std::format!("{:.*}", (p as i32 - 1 - x).max(0) as usize, v.abs())
            };
            if !spec.alt {
                t = strip_zeros(&t);
            }
            t
        }
    };
    let body = if upper { body.to_uppercase() } else { body };
    signed(spec, v.is_sign_negative(), body)
}

/// `1.500000e+02`: C's exponent form (sign, at least two digits).
fn exp_form(v: f64, p: usize) -> String {
    let t = std::format!("{v:.p$e}");
    let (mantissa, exp) = t.split_once('e').unwrap_or((&t, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    std::format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

fn strip_zeros(t: &str) -> String {
    let (mantissa, exp) = match t.find('e') {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let mantissa = if mantissa.contains('.') {
        mantissa.trim_end_matches('0').trim_end_matches('.')
    } else {
        mantissa
    };
    std::format!("{mantissa}{exp}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(format: &str, words: &[u64]) -> String {
        let mut r = ArgReader {
            base: words.as_ptr().cast(),
            offset: 0,
        };
        // SAFETY: the test buffers are laid out as each format expects.
        unsafe { format_c(format, &mut r).0 }
    }

    #[test]
    fn c_formats() {
        // Two 4-byte ints share the first word; the double is 8-aligned.
        let words = [(7u64 << 32) | (-42i32 as u32 as u64), 2.5f64.to_bits()];
        assert_eq!(fmt("a=%d b=%u x=%.3f", &words), "a=-42 b=7 x=2.500");
        assert_eq!(
            fmt("[%5d|%-5d|%05d]", &[5 | (5 << 32), 5]),
            "[    5|5    |00005]"
        );
        assert_eq!(fmt("%x %#X %o", &[255 | (255 << 32), 8]), "ff 0XFF 10");
        assert_eq!(fmt("%e", &[1234.5f64.to_bits()]), "1.234500e+03");
        assert_eq!(
            fmt("%g %g", &[0.0001f64.to_bits(), 1e20f64.to_bits()]),
            "0.0001 1e+20"
        );
        assert_eq!(fmt("%lld%%", &[(-5i64) as u64]), "-5%");
        assert_eq!(fmt("%s!", &[c"hi".as_ptr() as u64]), "hi!");
    }
}
