//! `--name value` options of the example programs.

use std::str::FromStr;

/// The value after `--name` on the command line, parsed, or `None` when the option is absent.
/// Errors name the option and the bad value.
pub fn option<T: FromStr>(name: &str) -> Result<Option<T>, String> {
    let flag = format!("--{name}");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(at) = args.iter().position(|a| *a == flag) else {
        return Ok(None);
    };
    let value = args
        .get(at + 1)
        .ok_or_else(|| format!("{flag} needs a value"))?;
    value
        .parse()
        .map(Some)
        .map_err(|_| format!("{flag} {value:?}: not a valid value"))
}

/// Whether `--name` is on the command line.
pub fn flag(name: &str) -> bool {
    let flag = format!("--{name}");
    std::env::args().skip(1).any(|a| a == flag)
}

/// Refuses options other than `known` (each `--name` followed by a value unless it is in
/// `flags`), so a typo is an error rather than a silently ignored setting.
pub fn check(known: &[&str], flags: &[&str]) -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let name = args[i].strip_prefix("--").unwrap_or("");
        if flags.contains(&name) {
            i += 1;
        } else if known.contains(&name) {
            i += 2;
        } else {
            let all: Vec<String> = known
                .iter()
                .chain(flags)
                .map(|k| format!("--{k}"))
                .collect();
            return Err(format!(
                "unknown argument {:?}; the options are {}",
                args[i],
                all.join(" ")
            ));
        }
    }
    Ok(())
}
