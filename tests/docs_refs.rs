//! Every `docs/...` path (and `#anchor`) that a source comment or message names exists, and so
//! does every relative link of README.md and docs/*.md: the code cites its specification
//! (docs/statistics.md#welch), and a citation that does not resolve is a bug.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Files under `dir` (recursively) whose name ends with one of `exts`.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, exts, out);
        } else if exts.iter().any(|x| p.to_string_lossy().ends_with(x)) {
            out.push(p);
        }
    }
}

/// GitHub's anchor of a heading: lowercase, characters other than letters, digits, spaces,
/// '-' and '_' dropped, spaces to '-'.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file: heading slugs (a repeated one also as slug-1, slug-2, ...)
/// and explicit `<a id="...">` / `id="..."` targets.
fn anchors(md: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            let s = slug(h.trim_start_matches('#'));
            let mut name = s.clone();
            let mut n = 0;
            while out.contains(&name) {
                n += 1;
                name = format!("{s}-{n}");
            }
            out.insert(name);
        }
        for part in line.split("id=\"").skip(1) {
            if let Some(id) = part.split('"').next() {
                out.insert(id.to_string());
            }
        }
    }
    out
}

/// Whether `target` (a path relative to the repository, maybe with `#anchor`) resolves.
fn resolves(target: &str) -> Result<(), String> {
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let full = root().join(path);
    if !full.exists() {
        return Err(format!("{path} does not exist"));
    }
    if let Some(a) = anchor.filter(|a| !a.is_empty()) {
        let text = std::fs::read_to_string(&full).map_err(|e| format!("{path}: {e}"))?;
        if !anchors(&text).contains(a) {
            return Err(format!("{path} has no heading or id for #{a}"));
        }
    }
    Ok(())
}

/// `docs/...` references in a source text: the path characters after `docs/`, without a
/// trailing '.', ',' or ':' that ends the sentence.
fn docs_references(text: &str) -> Vec<String> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "_-./#".contains(c);
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("docs/") {
        let before = rest[..i].chars().next_back();
        let tail = &rest[i..];
        let end = tail.find(|c: char| !ok(c)).unwrap_or(tail.len());
        let r = tail[..end].trim_end_matches(['.', ',', ':']);
        // `abperf/docs/x` or `xdocs/` are other names; a reference starts the path.
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '/' || c == '_')
            && r.len() > "docs/".len()
        {
            out.push(r.to_string());
        }
        rest = &tail[end.max(1)..];
    }
    out
}

#[test]
fn every_docs_reference_in_the_code_resolves() {
    let mut sources = Vec::new();
    for dir in ["src", "crates", "tests", "benches", "scripts"] {
        files(&root().join(dir), &[".rs", ".sh", ".py"], &mut sources);
    }
    assert!(sources.len() > 100, "found only {} sources", sources.len());
    let mut bad = Vec::new();
    let mut seen = 0;
    // This file's own examples are not citations.
    for f in sources
        .iter()
        .filter(|f| !f.ends_with("tests/docs_refs.rs"))
    {
        let text = std::fs::read_to_string(f).unwrap();
        for r in docs_references(&text) {
            seen += 1;
            if let Err(e) = resolves(&r) {
                bad.push(format!(
                    "{}: {r}: {e}",
                    f.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        seen > 5,
        "only {seen} docs/ references found: is the scan broken?"
    );
    assert!(
        bad.is_empty(),
        "unresolved docs references:\n{}",
        bad.join("\n")
    );
}

/// The relative Markdown links `](target)` of `md` (not http:, mailto: or pure #anchors).
fn relative_links(md: &str) -> Vec<String> {
    md.split("](")
        .skip(1)
        .filter_map(|p| p.split(')').next())
        .map(|t| t.split_whitespace().next().unwrap_or("").to_string())
        .filter(|t| !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:"))
        .collect()
}

#[test]
fn every_relative_link_of_the_readme_and_docs_resolves() {
    let mut pages = vec![root().join("README.md")];
    files(&root().join("docs"), &[".md"], &mut pages);
    let mut bad = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let dir = page.parent().unwrap().strip_prefix(root()).unwrap();
        for link in relative_links(&text) {
            let target = match link.strip_prefix('#') {
                Some(a) => format!("{}#{a}", page.strip_prefix(root()).unwrap().display()),
                None => dir.join(&link).display().to_string(),
            };
            if let Err(e) = resolves(&target) {
                bad.push(format!("{}: {link}: {e}", page.display()));
            }
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn the_scan_finds_what_a_citation_looks_like() {
    assert_eq!(
        docs_references("see docs/statistics.md#welch. And abperf/docs/x, docs/a.md:"),
        ["docs/statistics.md#welch", "docs/a.md"]
    );
    assert_eq!(
        slug(" Welch's t-test (`--test mean`)"),
        "welchs-t-test---test-mean"
    );
    assert!(anchors("# A b\n```\n# not\n```\n## A b\n").contains("a-b-1"));
    assert!(resolves("docs/nonexistent.md").is_err());
}
