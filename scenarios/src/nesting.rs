//! A bound on flow-collection nesting (`[`, `{`), checked in one linear pass before the YAML
//! parsers see the text. The YAML deserializer refuses nesting past its own recursion limit,
//! but only after its parser has read the whole stream, and locating that error re-reads
//! the text in time that grows with the square of the depth: a 400 KB file of nested
//! `[1,[1,…]]` took minutes to refuse. Block nesting needs indentation, so the file size
//! bounds it; flow nesting costs one byte a level.

/// Deepest flow-collection nesting accepted: 128 levels, the YAML deserializer's own
/// recursion limit (serde_yaml_ng), so no file it would accept is refused here.
pub const MAX_FLOW_DEPTH: usize = 128;

/// The 1-based line and column (in characters) of the first `[` or `{` that opens a flow
/// collection deeper than [`MAX_FLOW_DEPTH`], if any. Brackets inside quoted scalars and
/// comments are not counted; one inside a plain scalar is (a plain scalar holding 128
/// unclosed brackets is not a scenario).
pub fn too_deep(text: &str) -> Option<(usize, usize)> {
    let (mut depth, mut line, mut col) = (0usize, 1usize, 0usize);
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut prev = '\n';
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        col += 1;
        if c == '\n' {
            line += 1;
            col = 0;
            comment = false;
            prev = c;
            continue;
        }
        match quote {
            _ if comment => {}
            Some('"') if c == '\\' => {
                // An escape: the next character is part of the scalar.
                if chars.next().is_some() {
                    col += 1;
                }
            }
            Some('\'') if c == '\'' && chars.peek() == Some(&'\'') => {
                chars.next();
                col += 1;
            }
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '#' if prev.is_whitespace() => comment = true,
                '"' | '\'' => quote = Some(c),
                '[' | '{' => {
                    depth += 1;
                    if depth > MAX_FLOW_DEPTH {
                        return Some((line, col));
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        prev = c;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bracket_past_the_limit_is_located() {
        let deep = format!("a: 1\nb: {}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(too_deep(&deep), Some((2, "b: ".len() + MAX_FLOW_DEPTH + 1)));
        let ok = format!(
            "b: {}{}",
            "[".repeat(MAX_FLOW_DEPTH),
            "]".repeat(MAX_FLOW_DEPTH)
        );
        assert_eq!(too_deep(&ok), None);
    }

    #[test]
    fn brackets_in_quotes_and_comments_are_not_nesting() {
        let many = "[".repeat(300);
        for text in [
            format!("a: \"{many}\""),
            format!("a: '{many}'"),
            format!("a: 'it''s {many}'"),
            format!("a: \"\\\" {many}\""),
            format!("a: 1 # {many}"),
        ] {
            assert_eq!(too_deep(&text), None, "{text}");
        }
        // Closed levels do not add up.
        assert_eq!(too_deep(&"[1] ".repeat(10_000)), None);
    }
}
