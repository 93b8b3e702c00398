//! Table cells shared by the renderers and the sections: user text made safe inside a Markdown
//! table cell ([`cell`]) or a CSV field ([`neutral`]), and a finished CSV writer as text
//! ([`finish`]). Number formatting lives in [`super::fmt`].

use super::fmt::one_line;

/// User text inside a Markdown table cell: no line breaks, no table or HTML syntax, no links
/// (`[x](y)`, `![x](y)` and `[x][y]` lose their brackets to backslash escapes, `<http://..>`
/// its angle brackets to entities, and GitHub's bare `https://`, `www.` and `a@b.c` autolinks
/// are broken up with escapes; every escape renders as the text itself).
pub fn cell(s: &str) -> String {
    one_line(s)
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('`', "\\`")
        .replace('*', "\\*")
        .replace('_', "\\_")
        .replace('[', "\\[")
        .replace(']', "\\]")
        .replace("://", ":\\/\\/")
        .replace("www.", "www\\.")
        .replace('@', "\\@")
}

/// User text made safe for spreadsheets.
pub use abperf_model::escape::spreadsheet as neutral;

/// The bytes of a finished CSV writer as text.
pub fn finish(w: ::csv::Writer<Vec<u8>>) -> anyhow::Result<String> {
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    Ok(String::from_utf8(bytes)?)
}
