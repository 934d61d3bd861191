//! `key=value` folder segments of a Hive-style tree, decoded as Hive decodes them.

/// The value Hive writes for a NULL partition value.
pub const HIVE_DEFAULT_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// The `key=value` segments of `relative` (a file's path below the folder it was found in, `/`
/// separated; the file name itself is not a segment), keys and values unescaped. A value of
/// [`HIVE_DEFAULT_PARTITION`] is `None` (NULL).
pub fn segments(relative: &str) -> Vec<(String, Option<String>)> {
    let mut parts: Vec<&str> = relative.split('/').filter(|p| !p.is_empty()).collect();
    parts.pop();
    parts
        .into_iter()
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| {
            let value = (v != HIVE_DEFAULT_PARTITION).then(|| unescape(v));
            (unescape(k), value)
        })
        .collect()
}

/// A path segment unescaped as Hive's `FileUtils.unescapePathName` does: every `%XX` (two hex
/// digits) is the character it encodes, everything else (`+`, spaces) stays literal. Runs of
/// escapes that spell UTF-8 (pyarrow escapes `ü` as `%C3%BC`) decode to that text; Hive
/// itself only escapes ASCII characters, and a run that is no UTF-8 is taken byte by byte as
/// Hive's `(char)` does.
pub fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        // A run of `%XX` escapes.
        let mut run: Vec<u8> = Vec::new();
        while i + 2 < bytes.len() && bytes[i] == b'%' {
            match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    run.push(h * 16 + l);
                    i += 3;
                }
                _ => break,
            }
        }
        if !run.is_empty() {
            match String::from_utf8(run) {
                Ok(text) => out.push_str(&text),
                Err(e) => out.extend(e.into_bytes().into_iter().map(char::from)),
            }
            continue;
        }
        // One literal character (the string is UTF-8: copy it whole).
        let len = utf8_len(bytes[i]);
        out.push_str(&s[i..(i + len).min(s.len())]);
        i += len;
    }
    out
}

/// A partition key or value escaped for a path segment as Hive's `FileUtils.escapePathName`
/// does: control characters (NUL included) and `"#%'*/:=?\\{[]^` (and DEL) as `%XX`, everything else as it
/// is; [`unescape`] reverses it. Non-ASCII characters stay literal, as in Hive.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let escaped = matches!(c, '\u{00}'..='\u{1F}' | '\u{7F}')
            || matches!(
                c,
                '"' | '#' | '%' | '\'' | '*' | '/' | ':' | '=' | '?' | '\\' | '{' | '[' | ']' | '^'
            );
        if escaped {
            out.push_str(&format!("%{:02X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hive_escapes_decode_and_plus_and_space_stay() {
        assert_eq!(unescape("a%2Fb"), "a/b");
        assert_eq!(unescape("50%25"), "50%");
        assert_eq!(unescape("a+b c"), "a+b c");
        assert_eq!(unescape("%C3%BC"), "ü");
        assert_eq!(unescape("ü%3A"), "ü:");
        // Not an escape: too short, or not hex.
        assert_eq!(unescape("%2"), "%2");
        assert_eq!(unescape("%zz"), "%zz");
        // No UTF-8: Hive's one character per escape.
        assert_eq!(unescape("%E9"), "é");
    }

    #[test]
    fn segments_of_a_path_below_its_folder() {
        assert_eq!(
            segments("dt=2024-01-01/region=a%2Fb/part-0.parquet"),
            vec![
                ("dt".to_string(), Some("2024-01-01".to_string())),
                ("region".to_string(), Some("a/b".to_string()))
            ]
        );
        assert_eq!(
            segments("k=__HIVE_DEFAULT_PARTITION__/f.parquet"),
            vec![("k".to_string(), None)]
        );
        // The file name is no segment, nor is a folder without `=`.
        assert!(segments("x=1.parquet").is_empty());
        assert!(segments("batch/f.parquet").is_empty());
    }

    #[test]
    fn escaped_values_are_one_segment_hive_reads_back() {
        assert_eq!(escape("a/b=c%d"), "a%2Fb%3Dc%25d");
        assert_eq!(escape("a b+ü"), "a b+ü");
    }

    proptest::proptest! {
        #[test]
        fn escape_round_trips(s in "\\PC{0,12}|[%/=:a-z]{0,12}") {
            let e = escape(&s);
            proptest::prop_assert!(!e.contains('/') && !e.contains('='));
            proptest::prop_assert_eq!(unescape(&e), s);
        }
    }
}
