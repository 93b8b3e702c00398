//! User text made harmless before it reaches a terminal: control characters (escape sequences,
//! carriage returns, newlines inside a name, C1 controls, bidirectional overrides) become visible
//! escapes, so a name can neither rewrite the screen nor hide what follows it. And user text made
//! harmless for a spreadsheet that opens a CSV export, and back when the export is imported.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal raw.
fn is_hostile(c: char) -> bool {
    c.is_control()
        // Bidirectional embeddings, overrides and isolates: they reorder what is shown.
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// `s` with every control character written as an escape (`\n`, `\t`, `\r`, `\e`, `\x07`,
/// `\u{202e}`); text without any is returned as is.
pub fn control(s: &str) -> Cow<'_, str> {
    escaped(s, |_| false)
}

/// A message for a person (every line abperf writes to stderr goes through this): like
/// [`control`], but the newlines and tabs a message is laid out with stay. Escape sequences,
/// bells, carriage returns and bidirectional overrides from a command, a name or a stored
/// string are written as escapes, so nothing can retitle, clear or rewrite the terminal.
pub fn message(s: &str) -> Cow<'_, str> {
    escaped(s, |c| c == '\n' || c == '\t')
}

fn escaped(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_hostile(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            c if keep(c) || !is_hostile(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// At most `max` characters of `s` (with "..." when cut) and control characters escaped: for
/// quoting input in an error message.
pub fn shorten(s: &str, max: usize) -> String {
    let cut: String = s.chars().take(max).collect();
    let tail = if s.chars().count() > max { "..." } else { "" };
    format!("{}{tail}", control(&cut))
}

/// What makes a spreadsheet read a cell as a formula when it starts the cell.
const FORMULA_LEADS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Whether a spreadsheet would read `s` as a formula once the `'`s it starts with are taken off
/// (a text of its own that starts with `'=` must keep its quote through a round trip).
fn formula_behind_quotes(s: &str) -> bool {
    s.trim_start_matches('\'').starts_with(FORMULA_LEADS)
}

/// User text made safe for spreadsheets: a leading formula character (also behind `'`s of the
/// text's own) is escaped with one more `'`, which a spreadsheet shows as text.
pub fn spreadsheet(s: &str) -> String {
    if formula_behind_quotes(s) {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

/// [`spreadsheet`] undone: the `'` it added taken off.
pub fn spreadsheet_undone(s: &str) -> &str {
    match s.strip_prefix('\'') {
        Some(rest) if formula_behind_quotes(rest) => rest,
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreadsheet_guard_round_trips() {
        for text in [
            "=1+1", "-3", "@SUM(A1)", "\tx", "plain", "'=kept", "''+x", "", "'", "'a",
        ] {
            assert_eq!(spreadsheet_undone(&spreadsheet(text)), text);
        }
        assert_eq!(spreadsheet("=1+1"), "'=1+1");
        assert_eq!(spreadsheet("a=b"), "a=b");
        assert_eq!(spreadsheet("'=kept"), "''=kept");
    }

    #[test]
    fn escapes_what_a_terminal_would_obey() {
        assert!(matches!(control("plain name"), Cow::Borrowed(_)));
        assert_eq!(control("a\u{1b}[2Jb\nc\td\re"), "a\\e[2Jb\\nc\\td\\re");
        assert_eq!(control("x\u{7}\u{9b}y"), "x\\x07\\x9by");
        assert_eq!(control("evil\u{202e}txt"), "evil\\u{202e}txt");
        assert_eq!(shorten("abcdef", 3), "abc...");
        assert_eq!(shorten("a\nb", 10), "a\\nb");
        assert_eq!(message("a\u{1b}]0;t\u{7}\n\tb\r"), "a\\e]0;t\\x07\n\tb\\r");
        assert!(matches!(message("two\nlines"), Cow::Borrowed(_)));
    }
}
