//! Counting a kernel's PTX instructions, to show what each compiler emitted.

/// Instructions in the body of entry `name` in `ptx` (labels, directives, declarations, braces
/// and comments excluded); `None` when the PTX has no such entry. Functions the entry calls
/// are not counted.
pub fn entry_instructions(ptx: &str, name: &str) -> Option<usize> {
    let mut lines = ptx.lines();
    lines.find(|l| {
        let l = l.trim_start();
        (l.starts_with(".visible .entry") || l.starts_with(".entry"))
            && l.split(|c: char| c == '(' || c.is_whitespace())
                .any(|w| w == name)
    })?;
    let mut depth = 0i32;
    let mut started = false;
    let mut count = 0;
    for line in lines {
        let l = line.split("//").next().unwrap_or("").trim();
        if l.starts_with('{') {
            depth += 1;
            started = true;
            continue;
        }
        if l.starts_with('}') {
            depth -= 1;
            if started && depth == 0 {
                return Some(count);
            }
            continue;
        }
        if !started || l.is_empty() || l.ends_with(':') || l.starts_with('.') || l.starts_with(')')
        {
            continue;
        }
        count += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_only_the_named_entry() {
        let ptx = ".visible .entry a(\n.param .u64 p\n)\n{\n.reg .b32 %r<2>;\nmov.u32 %r1, 1;\n$L: \n@%p bra $L;\nret;\n}\n.visible .entry b()\n{\nret;\n}\n";
        assert_eq!(super::entry_instructions(ptx, "a"), Some(3));
        assert_eq!(super::entry_instructions(ptx, "b"), Some(1));
        assert_eq!(super::entry_instructions(ptx, "c"), None);
    }
}
