//! The [`Section`] trait: one part of a report (the comparison details, the two-level analysis,
//! a trace capture's tables, the ceiling advisor, a micro suite, two micro suites compared) that
//! renders itself in each format family it appears in. The format renderers (`text`, `mail`,
//! `markdown`, `csv`, `json`, `html`) decide where a section goes and call it only through this
//! trait; a section never calls a renderer (their shared cell helpers are in [`super::table`]).
//!
//! Every section has a text form. The other methods return `None` where the section has no
//! form of its own in that format: the renderer then leaves it out or shows its text.

use super::Report;

/// One part of a report, rendered in each format family it appears in.
pub trait Section {
    /// What a terminal shows.
    fn text(&self, r: &Report) -> String;

    /// The paragraph of a mailing-list reply (wrapped by the mail renderer).
    fn mail(&self, _r: &Report) -> Option<String> {
        None
    }

    /// GitHub-flavoured Markdown.
    fn markdown(&self, _r: &Report) -> Option<String> {
        None
    }

    /// A CSV document in the section's own table layout.
    fn csv(&self, _r: &Report) -> Option<anyhow::Result<String>> {
        None
    }

    /// The section's value in the JSON document.
    fn json(&self, _r: &Report) -> Option<anyhow::Result<serde_json::Value>> {
        None
    }

    /// A part of the HTML page.
    fn html(&self, _r: &Report) -> Option<String> {
        None
    }
}
