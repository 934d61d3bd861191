//! How a failed command is printed: the error chain once, each cause once, without the
//! iceberg crate's `Kind => ` prefixes.
//!
//! Why not anyhow's `{:#}`: several layers embed their source's text in their own (iceberg's
//! `Display` appends `, source: {source}`, `catalog '…' could not be opened: {source}` does the
//! same) and `{:#}` then prints the source again, so every cause appeared two or three times;
//! and iceberg's `Display` starts with its error kind (`Unexpected => …`), which names an enum
//! variant rather than telling the operator anything.

use std::error::Error as StdError;
use std::io::Write;

/// Prints `value` as pretty JSON and a newline, written to stdout as it is serialized: a plan
/// or report listing a million files is not first built as one string.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// The iceberg crate's error kinds as its `Display` writes them.
const ICEBERG_KINDS: [&str; 9] = [
    "Unexpected",
    "DataInvalid",
    "FeatureUnsupported",
    "TableAlreadyExists",
    "TableNotFound",
    "NamespaceAlreadyExists",
    "NamespaceNotFound",
    "PreconditionFailed",
    "CatalogCommitConflicts",
];

/// The whole chain as one line: `outer: cause: root cause`.
pub fn error_chain(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    // The chain is a linked list of the errors' own `source()`s: its length is how many layers
    // the code wrapped, not user data, and it is walked with a loop.
    for e in err.chain() {
        let text = own_text(e);
        if text.is_empty() || parts.iter().any(|p| p.contains(&text)) {
            continue;
        }
        parts.push(text);
    }
    let mut line = parts.join(": ");
    if let Some(hint) = tls_trust_hint(&line) {
        line.push_str("; ");
        line.push_str(hint);
    }
    line
}

/// The fix for an untrusted server certificate, when the error comes from a layer that does not
/// give one itself (the AWS SDK behind the S3 Tables and Glue catalogs, OpenDAL's object I/O).
fn tls_trust_hint(line: &str) -> Option<&'static str> {
    let untrusted = line.contains("UnknownIssuer") || line.contains("unknown issuer");
    let advised = [
        "ssl.cabundle",
        "AWS_CA_BUNDLE",
        "--ca-bundle",
        "SSL_CERT_FILE",
    ]
    .iter()
    .any(|k| line.contains(k));
    (untrusted && !advised).then_some(
        "the server's certificate is signed by a CA this machine does not trust. Give the CA's \
         PEM file: AWS_CA_BUNDLE (or the profile's ca_bundle, or --ca-bundle) for AWS APIs — S3 \
         Tables, Glue, `iceberg-ops s3tables`; SSL_CERT_FILE for S3 object reads and writes; \
         `ssl.cabundle` for a REST catalog",
    )
}

/// One layer's message without the text of its sources (which follow in the chain).
fn own_text(e: &(dyn StdError + 'static)) -> String {
    let mut text = layer_text(e);
    if let Some(src) = e.source() {
        // Cut the source's text where this layer embedded it: its whole `Display` (cleaned as
        // this layer's text was), or just its message.
        for embedded in [
            readable_idents(&strip_kinds(&src.to_string())),
            layer_text(src),
        ] {
            if embedded.is_empty() {
                continue;
            }
            if let Some(at) = text.find(&embedded) {
                // Embedded mid-sentence (`batch 0 failed: {source}; no batch was committed`),
                // the source's text is part of this layer's sentence: keep it there, and the
                // chain skips the source as already said.
                let after = text[at + embedded.len()..].trim_start_matches([')', ' ']);
                if !after.is_empty() {
                    return tidy(&text);
                }
                text.replace_range(at..at + embedded.len(), "");
            }
        }
    }
    tidy(&text)
}

/// A layer's text with iceberg's `Kind => ` prefixes removed; an iceberg error is its message.
fn layer_text(e: &(dyn StdError + 'static)) -> String {
    let text = match e.downcast_ref::<iceberg::Error>() {
        Some(ice) if !ice.message().is_empty() => ice.message().to_string(),
        Some(ice) => ice.kind().into_static().to_string(),
        None => e.to_string(),
    };
    readable_idents(&strip_kinds(&text))
}

/// `TableIdent { namespace: NamespaceIdent(["corpus"]), name: "x" }` (iceberg's catalogs
/// format idents with `{:?}`) as `corpus.x`, and `NamespaceIdent(["a", "b"])` as `a.b`.
pub fn readable_idents(text: &str) -> String {
    const TABLE: &str = "TableIdent { namespace: NamespaceIdent([";
    const NAMESPACE: &str = "NamespaceIdent([";
    let mut out = text.to_string();
    while let Some(at) = out.find(TABLE) {
        let rest = &out[at + TABLE.len()..];
        let Some(ns_end) = rest.find("]), name: \"") else {
            break;
        };
        let after_ns = &rest[ns_end + "]), name: \"".len()..];
        let Some(name_end) = after_ns.find("\" }") else {
            break;
        };
        let readable = format!("{}.{}", dotted(&rest[..ns_end]), &after_ns[..name_end]);
        let end = at + TABLE.len() + ns_end + "]), name: \"".len() + name_end + "\" }".len();
        out.replace_range(at..end, &readable);
    }
    while let Some(at) = out.find(NAMESPACE) {
        let rest = &out[at + NAMESPACE.len()..];
        let Some(ns_end) = rest.find("])") else {
            break;
        };
        let readable = dotted(&rest[..ns_end]);
        let end = at + NAMESPACE.len() + ns_end + "])".len();
        out.replace_range(at..end, &readable);
    }
    out
}

/// `"a", "b"` as `a.b`.
fn dotted(quoted_list: &str) -> String {
    quoted_list
        .split(", ")
        .map(|p| p.trim_matches('"'))
        .collect::<Vec<_>>()
        .join(".")
}

/// Removes `Kind => ` and `Kind, context: { … } => ` wherever an iceberg error was formatted
/// into a message with `{e}`; the context is kept in parentheses after the message.
fn strip_kinds(text: &str) -> String {
    let mut out = text.to_string();
    for kind in ICEBERG_KINDS {
        let plain = format!("{kind} => ");
        while let Some(at) = out.find(&plain) {
            out.replace_range(at..at + plain.len(), "");
        }
        let with_context = format!("{kind}, context: {{ ");
        while let Some(at) = out.find(&with_context) {
            let rest = &out[at + with_context.len()..];
            let Some(end) = rest.find(" } => ") else {
                break;
            };
            let context = rest[..end].to_string();
            let after = at + with_context.len() + end + " } => ".len();
            // `Kind, context: { k: v } => message` becomes `message (k: v)`: the message runs
            // to the next `, source: ` or the end.
            let tail = &out[after..];
            let msg_end = tail.find(", source: ").unwrap_or(tail.len());
            let replaced = format!("{} ({context}){}", &tail[..msg_end], &tail[msg_end..]);
            out.replace_range(at.., &replaced);
        }
    }
    out
}

/// Trims separators left where an embedded source was cut out.
fn tidy(text: &str) -> String {
    let mut t = text.trim().to_string();
    loop {
        let before = t.len();
        for suffix in [", source:", ":", ",", " ()", "()", ";"] {
            if let Some(s) = t.strip_suffix(suffix) {
                t = s.trim_end().to_string();
            }
        }
        if t.len() == before {
            break;
        }
    }
    t.replace(", source: ,", ",").replace("(): ", "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use iceberg::ErrorKind;

    /// Like ops-core's `CatalogOpen`: embeds its source's text and names it as its source.
    #[derive(Debug)]
    struct Open {
        source: Box<iceberg::Error>,
    }

    impl std::fmt::Display for Open {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(
                f,
                "catalog 'prod' (rest) could not be opened: {}",
                self.source
            )
        }
    }

    impl StdError for Open {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(self.source.as_ref())
        }
    }

    #[derive(Debug)]
    struct Tls;

    impl std::fmt::Display for Tls {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("invalid peer certificate: BadSignature")
        }
    }

    impl StdError for Tls {}

    #[test]
    fn each_cause_once_without_kind_prefixes() {
        let ice = iceberg::Error::new(
            ErrorKind::Unexpected,
            "GET https://x/v1/config failed: the TLS handshake failed",
        )
        .with_source(Tls);
        let err = anyhow::Error::new(Open {
            source: Box::new(ice),
        });
        let text = error_chain(&err);
        assert_eq!(
            text,
            "catalog 'prod' (rest) could not be opened: GET https://x/v1/config failed: the TLS \
             handshake failed: invalid peer certificate: BadSignature"
        );
        // anyhow's own rendering repeated the causes: the test is about something real.
        let alt = format!("{err:#}");
        assert!(alt.contains("Unexpected =>"), "{alt}");
        assert!(alt.matches("BadSignature").count() > 1, "{alt}");
    }

    #[test]
    fn context_and_formatted_iceberg_errors_are_readable() {
        let ice = iceberg::Error::new(ErrorKind::DataInvalid, "key 7 repeats")
            .with_context("table", "db.t");
        let err = anyhow::anyhow!("upsert stopped: {ice}");
        assert_eq!(
            error_chain(&err),
            "upsert stopped: key 7 repeats (table: db.t)"
        );
        let err = anyhow::Error::new(iceberg::Error::new(ErrorKind::TableNotFound, ""));
        assert_eq!(error_chain(&err), "TableNotFound");
    }

    #[test]
    fn idents_read_as_the_user_wrote_them() {
        let ident = iceberg::TableIdent::from_strs(["corpus", "x"]).map_err(|e| e.to_string());
        let ns = iceberg::NamespaceIdent::from_strs(["a", "b"]).map_err(|e| e.to_string());
        let (Ok(ident), Ok(ns)) = (ident, ns) else {
            panic!("idents");
        };
        let err = anyhow::Error::new(iceberg::Error::new(
            ErrorKind::TableNotFound,
            format!("No such table: {ident:?}"),
        ))
        .context(format!("namespace {ns:?} is empty"));
        assert_eq!(
            error_chain(&err),
            "namespace a.b is empty: No such table: corpus.x"
        );
    }

    /// Like ops-datamig's `Batch`: the source's text in the middle of the sentence.
    #[derive(Debug)]
    struct Batch;

    impl std::fmt::Display for Batch {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "batch 0 failed: {}; no batch was committed", Tls)
        }
    }

    impl StdError for Batch {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&Tls)
        }
    }

    /// A source embedded mid-sentence stays where its layer put it, once; cutting it out
    /// printed `batch 0 failed: ; no batch was committed: invalid peer certificate: …`.
    #[test]
    fn a_cause_in_the_middle_of_a_sentence_stays_there() {
        let err = anyhow::Error::new(Batch).context("migrate-data");
        assert_eq!(
            error_chain(&err),
            "migrate-data: batch 0 failed: invalid peer certificate: BadSignature; no batch \
             was committed"
        );
    }

    #[test]
    fn context_layers_are_kept() {
        let err = anyhow::Error::new(Tls).context("catalog check prod");
        assert_eq!(
            error_chain(&err),
            "catalog check prod: invalid peer certificate: BadSignature"
        );
    }

    #[test]
    fn an_untrusted_certificate_gets_the_fix_once() {
        let raw = anyhow::anyhow!(
            "Operation failed for hitting aws sdk error: DispatchFailure(... \
             InvalidCertificate(UnknownIssuer) ...)"
        );
        let line = error_chain(&raw);
        assert!(
            line.contains("AWS_CA_BUNDLE") && line.contains("SSL_CERT_FILE"),
            "{line}"
        );
        let advised = anyhow::anyhow!("invalid peer certificate: UnknownIssuer; set ssl.cabundle");
        assert!(!error_chain(&advised).contains("AWS_CA_BUNDLE"));
        assert!(!error_chain(&anyhow::anyhow!("table not found")).contains("CA"));
    }
}
