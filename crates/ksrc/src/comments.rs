//! C comments removed the way the C preprocessor removes them, every line break kept: two
//! sources whose [`code`] is equal differ only in comments that cannot move code (same tokens on
//! the same lines and columns, so `__LINE__` in WARN/BUG tables and any debug information agree).
//!
//! The lexer follows GCC's (libcpp) for `-std=gnu11` C and `assembler-with-cpp`: backslash-newline
//! (also with blanks between them) splices lines first, so it continues a `//` comment, a string
//! or a code line; `"..."` and `'...'` literals run to their closing quote or the end of the line
//! and hide comment markers; `#include <...>` names hide them too. A comment is replaced by one
//! marker byte and its line breaks, when only blanks follow it on the line where it ends; a comment
//! followed by code on that line is kept verbatim (its length sets the code's column). Code is
//! kept byte for byte, blanks included. Anything the lexer is not sure of gives None (the caller
//! then builds): an unterminated block comment, a raw string literal (`R"(...)"`, which GCC
//! accepts in gnu11 C), a comment inside a `#include` line before its `<`.

/// How `//` is read: C (a comment) or, for assembler sources, both ways (see [`code_asm`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum LineComments {
    Yes,
    No,
}

const MARK: u8 = 0x01;

/// The code of a C source with its comments replaced (see the module's doc); None when unsure.
pub fn code(src: &[u8]) -> Option<Vec<u8>> {
    strip(src, LineComments::Yes)
}

/// The code of an assembler source (`.S`, run through cpp as assembler-with-cpp): both
/// readings of `//` (a comment, or not), concatenated, so that equal results mean equal code
/// whichever reading the preprocessor takes.
pub fn code_asm(src: &[u8]) -> Option<Vec<u8>> {
    let mut out = strip(src, LineComments::Yes)?;
    out.extend_from_slice(b"\0\0");
    out.extend(strip(src, LineComments::No)?);
    Some(out)
}

fn is_blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\x0b' | b'\x0c' | b'\r')
}

/// The length of a line splice at `i` (a backslash, optional blanks, a newline), or 0.
fn splice(src: &[u8], i: usize) -> usize {
    if src.get(i) != Some(&b'\\') {
        return 0;
    }
    let mut j = i + 1;
    while j < src.len() && is_blank(src[j]) && src[j] != b'\n' {
        j += 1;
    }
    if src.get(j) == Some(&b'\n') {
        j + 1 - i
    } else {
        0
    }
}

/// Whether the physical line after `i` holds only blanks (splices count as code).
fn rest_blank(src: &[u8], i: usize) -> bool {
    src[i..]
        .iter()
        .take_while(|&&c| c != b'\n')
        .all(|&c| is_blank(c))
}

/// The code already emitted on the current logical line (splices joined), without blanks: what
/// a preprocessor directive has said so far.
fn directive_so_far(out: &[u8]) -> Vec<u8> {
    let mut start = out.len();
    while let Some(p) = out[..start].iter().rposition(|&c| c == b'\n') {
        let before = out[..p].iter().rposition(|&c| !is_blank(c));
        if before.is_some_and(|b| out[b] == b'\\') {
            start = before.unwrap_or(0);
        } else {
            start = p + 1;
            break;
        }
    }
    if !out[..start].contains(&b'\n') {
        start = 0;
    }
    out[start..]
        .iter()
        .copied()
        .filter(|c| !is_blank(*c) && !matches!(c, b'\\' | b'\n'))
        .collect()
}

fn strip(src: &[u8], line_comments: LineComments) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(src.len());
    let mut i = 0;
    while i < src.len() {
        let n = splice(src, i);
        if n > 0 {
            out.extend_from_slice(&src[i..i + n]);
            i += n;
            continue;
        }
        let c = src[i];
        let next = next_char(src, i + 1);
        match c {
            b'/' if next.map(|(c, _)| c) == Some(b'*') => {
                let end = block_end(src, next?.1 + 1)?;
                comment(&mut out, src, i, end);
                i = end;
            }
            b'/' if line_comments == LineComments::Yes && next.map(|(c, _)| c) == Some(b'/') => {
                let end = line_end(src, i);
                comment(&mut out, src, i, end);
                i = end;
            }
            b'"' | b'\'' => {
                if c == b'"' && raw_prefix(&out) {
                    return None;
                }
                let end = literal_end(src, i, c);
                out.extend_from_slice(&src[i..end]);
                i = end;
            }
            b'<' if is_include(&directive_so_far(&out))? => {
                let end = literal_end(src, i, b'>');
                out.extend_from_slice(&src[i..end]);
                i = end;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// The next character after `i` with splices skipped: (it, its index).
fn next_char(src: &[u8], mut i: usize) -> Option<(u8, usize)> {
    loop {
        let n = splice(src, i);
        if n == 0 {
            return src.get(i).map(|&c| (c, i));
        }
        i += n;
    }
}

/// The index after the `*/` that closes a block comment whose body starts at `i`.
fn block_end(src: &[u8], mut i: usize) -> Option<usize> {
    while i < src.len() {
        if src[i] == b'*'
            && let Some((b'/', j)) = next_char(src, i + 1)
        {
            return Some(j + 1);
        }
        i += 1;
    }
    None
}

/// The index of the newline that ends a `//` comment at `i` (splices continue it).
fn line_end(src: &[u8], mut i: usize) -> usize {
    while i < src.len() && src[i] != b'\n' {
        let n = splice(src, i);
        i += n.max(1);
    }
    i
}

/// The index after a literal opened at `i` by `open`, closed by `close` (`'`, `"`, or `>` for a
/// header name): at the closing character or before the end of the line (unterminated).
fn literal_end(src: &[u8], i: usize, close: u8) -> usize {
    let mut j = i + 1;
    while j < src.len() {
        let n = splice(src, j);
        if n > 0 {
            j += n;
            continue;
        }
        match src[j] {
            b'\n' => return j,
            b'\\' if close != b'>' => {
                j += 1;
                // The escaped character, unless it starts a splice (the loop takes it).
                if j < src.len() && splice(src, j) == 0 && src[j] != b'\n' {
                    j += 1;
                }
            }
            c if c == close => return j + 1,
            _ => j += 1,
        }
    }
    j
}

/// Whether the code before a `"` ends in a raw string prefix (R, LR, uR, UR, u8R) that is a
/// whole token.
fn raw_prefix(out: &[u8]) -> bool {
    let ident = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
    let start = out.iter().rposition(|c| !ident(c)).map_or(0, |p| p + 1);
    matches!(&out[start..], b"R" | b"LR" | b"uR" | b"UR" | b"u8R")
}

/// Whether a `<` after `so_far` (the directive's code so far) opens a header name: Some(true)
/// after `#include`, `#include_next` or `#import`; None (unsure) when a comment came between.
fn is_include(so_far: &[u8]) -> Option<bool> {
    if so_far.first() != Some(&b'#') {
        return Some(false);
    }
    let words: &[&[u8]] = &[b"#include", b"#include_next", b"#import"];
    if words.contains(&so_far) {
        return Some(true);
    }
    // A comment between `#` and the directive's name hides it: unsure only when the line could
    // be an include.
    let commented = so_far.contains(&MARK) || so_far.contains(&b'/');
    let named = |w: &[u8]| so_far.windows(w.len()).any(|x| x == w);
    if commented && (named(b"include") || named(b"import")) {
        return None;
    }
    Some(false)
}

/// Emit the comment `src[start..end]`: verbatim when code follows it on its last line, else a
/// marker and its line breaks.
fn comment(out: &mut Vec<u8>, src: &[u8], start: usize, end: usize) {
    if !rest_blank(src, end) {
        out.extend_from_slice(&src[start..end]);
        return;
    }
    out.push(MARK);
    out.extend(src[start..end].iter().filter(|&&c| c == b'\n'));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &str, b: &str) -> bool {
        code(a.as_bytes()).unwrap() == code(b.as_bytes()).unwrap()
    }

    #[test]
    fn reworded_comments_are_equal_and_code_is_kept() {
        assert!(same(
            "int x; /* one */\n// two\nint y;\n",
            "int x; /* uno, longer */\n// deux\nint y;\n"
        ));
        assert_eq!(
            code(b"a = 1; /* c */\nb; // d\n").unwrap(),
            b"a = 1; \x01\nb; \x01\n"
        );
        assert!(!same("int x;\n", "int y;\n"));
    }

    #[test]
    fn a_comment_in_a_string_or_a_character_is_code() {
        assert!(!same(
            "char *s = \"/* a */\";\n",
            "char *s = \"/* b */\";\n"
        ));
        assert!(!same("char *s = \"// a\";\n", "char *s = \"// b\";\n"));
        // An escaped quote does not end the string; a quote character does not open one.
        assert!(!same("s = \"\\\" /* a */\";\n", "s = \"\\\" /* b */\";\n"));
        assert!(same("c = '\"'; /* a */\n", "c = '\"'; /* b */\n"));
        assert!(!same("c = '/*'; x; /**/\n", "c = '/*'; y; /**/\n"));
        // An unterminated literal runs to the end of its line, as in cpp.
        assert!(!same("# don't /* a */\n", "# don't /* b */\n"));
    }

    #[test]
    fn a_block_comment_over_lines_keeps_its_line_breaks() {
        assert!(same(
            "/*\n * first\n * second\n */\nint x;\n",
            "/*\n * eins\n * zwei\n */\nint x;\n"
        ));
        // One line fewer moves every line after it (__LINE__): different.
        assert!(!same(
            "/* first\n * second */\nint x;\n",
            "/* first second */\nint x;\n"
        ));
        // A comment that takes a line break away joins two lines of code.
        assert!(!same("int x;\nint y;\n", "int x; /*\n*/ int y;\n"));
        assert!(!same(
            "int x; /* a */\nint y;\n",
            "int x; /* a \n*/ int y;\n"
        ));
    }

    #[test]
    fn code_after_a_comment_on_its_line_keeps_the_comment_as_it_is() {
        // The comment's length sets the column of what follows it.
        assert!(!same("f(/* a */ 1);\n", "f(/* ab */ 1);\n"));
        assert!(same("f(/* a */ 1);\n", "f(/* a */ 1);\n"));
        // Blanks in code lines are code.
        assert!(!same("int  x; /* a */\n", "int x; /* a */\n"));
        // A comment is not nothing: it ends a backslash-blank splice.
        assert!(!same("#define A 1 \\ /* a */\nB\n", "#define A 1 \\ \nB\n"));
    }

    #[test]
    fn a_line_comment_ending_in_a_backslash_goes_on_to_the_next_line() {
        // The next line belongs to the comment: changing it changes nothing.
        assert!(same(
            "// a \\\nint x;\nint z;\n",
            "// a \\\nint y;\nint z;\n"
        ));
        // Without the backslash it is code.
        assert!(!same("// a\nint x;\nint z;\n", "// a\nint y;\nint z;\n"));
        // A backslash and blanks before the line break splice too (GCC).
        assert!(same("// a \\  \nint x;\n", "// b \\  \nint y;\n"));
        // A splice inside `*/` still closes the comment.
        assert!(same("/* a *\\\n/ int x;\n", "/* a *\\\n/ int x;\n"));
        assert!(!same("/* a *\\\n/ int x;\n", "/* a *\\\n/ int y;\n"));
    }

    #[test]
    fn what_the_lexer_is_unsure_of_is_none() {
        assert!(code(b"int x; /* never closed\n").is_none());
        assert!(code(b"const char *s = R\"(/* x */)\";\n").is_none());
        assert!(code(b"# /* c */ include <a//b.h>\n").is_none());
        assert!(code(b"char *s = \"R\";\nint Rx = 1;\n").is_some());
    }

    #[test]
    fn include_names_hide_comment_markers() {
        assert!(!same("#include <a//b.h>\n", "#include <a//c.h>\n"));
        assert!(!same(
            "# include_next <a/*b.h>\n",
            "# include_next <a/*c.h>\n"
        ));
        assert!(same("#if A < B /* x */\n", "#if A < B /* y */\n"));
        assert!(code(b"#define D(a, b) ((a) / (b) < 1) /* c */\n").is_some());
    }

    #[test]
    fn assembler_sources_are_compared_with_both_readings_of_double_slash() {
        let a = b"mov %eax, %ebx // a /*\nnop */\n";
        let b = b"mov %eax, %ebx // a /*\nret */\n";
        // As C the `/*` is inside the line comment, so the second line is code either way.
        assert_ne!(code(a), code(b));
        assert_ne!(code_asm(a), code_asm(b));
        assert_eq!(
            code_asm(b"nop /* a */\n").unwrap(),
            code_asm(b"nop /* bb */\n").unwrap()
        );
        // `//` that may not be a comment: its text is compared too.
        assert_ne!(code_asm(b"nop // a\n"), code_asm(b"nop // b\n"));
    }
}
